"""A model-based test of activation: random sequences of events, each in a
fresh interpreter (import order matters), checked against a model after
every step.

Events: importing a family, patch(), unpatch(), the pytest fixture's enter
and exit, KERAS_CLONE_FIX_FORCE on and off, importlib.reload of the clone
routine's module and of the package; the switch KERAS_CLONE_FIX decides how
each interpreter starts. After every step: status() says what is installed
at each target (read independently by the driver), that is what the model
expects, clone_model and calls on new tensors work exactly where patched
(keras; with tf.keras, a call on new tensors leaves the original's node
arguments as they were exactly where patched), and a fixture's exit put back the very objects that were there at its enter.

ACTIVATION_SEQUENCES (default 30, about 40 seconds with TensorFlow) and
ACTIVATION_STEPS (default 10) bound it; `nox -s activation-model` runs 300.
Hypothesis makes its first sequences of the simplest events (about one in
ten of the first hundred), so fewer than 30 would test little.
"""

import collections
import json
import os
import subprocess
import sys
import tempfile

from hypothesis import HealthCheck, settings, strategies
from hypothesis.stateful import (
    RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test)

from conftest import RELEASE_TARGETS, TESTS
from keras_clone_fix import FAMILIES
from keras_clone_fix._affected import target_name

SEQUENCES = int(os.environ.get("ACTIVATION_SEQUENCES", "30"))
STEPS = int(os.environ.get("ACTIVATION_STEPS", "10"))
RAN = collections.Counter()  # sequences, and steps of each event: the terminal summary




class Driver(object):
    """activation_driver.py in a fresh interpreter: one event in, one report out."""

    def __init__(self, switch, targets, behaviours):
        env = {k: v for k, v in os.environ.items() if not k.startswith("KERAS_CLONE_FIX")}
        env["KERAS_CLONE_FIX"] = "1" if switch else "0"
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(
            [sys.executable, "-u", "activation_driver.py"], cwd=TESTS, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
            universal_newlines=True)
        self._write(json.dumps([[[t.module, t.attribute] for t in targets], behaviours]))

    def _write(self, line):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def send(self, event):
        self._write(event)
        line = self.process.stdout.readline()
        if not line:
            self.stderr.seek(0)
            raise AssertionError("the driver died at {!r}:\n{}".format(event, self.stderr.read()))
        report = json.loads(line)
        assert "error" not in report, report.get("error")
        return report

    def close(self):
        self.process.stdin.close()
        self.process.wait()
        self.stderr.close()


class ActivationModel(RuleBasedStateMachine):
    targets = RELEASE_TARGETS
    # The families whose behaviour shows whether the fix runs: every
    # affected release (those with targets) breaks the driver's models.
    behaviours = [family for family in FAMILIES if RELEASE_TARGETS[family]]

    def __init__(self):
        super(ActivationModel, self).__init__()
        self.driver = None

    @initialize(switch=strategies.booleans())
    def start(self, switch):
        RAN["sequences"] += 1
        self.switch = switch
        self.activated_by = ".pth at interpreter start" if switch else None
        self.fixed = {}      # target name -> whether our wrapper should be there
        self.imported = set()
        self.scopes = []     # (model state, objects) at each open fixture's enter
        every_target = [t for targets in self.targets.values() for t in targets]
        self.driver = Driver(switch, every_target, self.behaviours)
        self.step("force off", lambda arrived: None)

    def teardown(self):
        if self.driver is not None:
            self.driver.close()

    @property
    def active(self):
        return self.activated_by is not None

    def names(self, families):
        return [target_name(t) for family in families for t in self.targets[family]]

    def step(self, event, expect):
        """Send the event; expect(families imported by it) updates the model."""
        RAN[event] += 1
        report = self.driver.send(event)
        arrived = set(report["imported"]) - self.imported
        self.imported |= arrived
        expect(arrived)
        self.check(report)
        self.report = report

    def check(self, report):
        status, objects = report["status"], report["objects"]
        expected = {name: self.fixed[name] for name in self.names(self.imported)}
        assert {name: objects[name]["fixed"] for name in expected} == expected
        assert status["targets"] == expected
        assert status["patched"] == (bool(expected) and all(expected.values()))
        assert status["activated_by"] == self.activated_by
        assert report["waiting"] == (self.active and set(FAMILIES) != self.imported)
        for family, behaviour in report["behaviour"].items():
            for action, routine in (("clone", "_clone_functional_model"),
                                    ("call", "run_internal_graph")):
                fixed = [self.fixed[name] for name in self.names([family])
                         if name.endswith(routine)]
                if behaviour.get(action) is not None and fixed:
                    assert (behaviour[action] == "ok") == fixed[0], (family, action, report)

    def patched_on_arrival(self, arrived):
        for name in self.names(arrived):
            self.fixed[name] = self.active

    @rule(family=strategies.sampled_from(FAMILIES))
    def import_family(self, family):
        self.step("import " + family, self.patched_on_arrival)

    def patch_as(self, source, event):
        def expect(arrived):
            self.activated_by = source
            for name in self.names(self.imported):
                self.fixed[name] = True
        self.step(event, expect)

    @rule()
    def patch(self):
        self.patch_as("keras_clone_fix.patch()", "patch")

    @rule()
    def unpatch(self):
        def expect(arrived):
            self.activated_by = None
            self.fixed = dict.fromkeys(self.fixed, False)
        self.step("unpatch", expect)

    @rule()
    def enter_fixture(self):
        self.scopes.append(((self.activated_by, dict(self.fixed), set(self.imported)),
                            self.report["objects"]))
        self.patch_as("pytest fixture keras_clone_fix", "enter fixture")

    @precondition(lambda self: self.scopes)
    @rule()
    def exit_fixture(self):
        (activated_by, fixed, imported), objects = self.scopes.pop()

        def expect(arrived):
            self.activated_by = activated_by
            for name in self.names(self.imported):
                self.fixed[name] = fixed[name] if name in fixed else self.active
        self.step("exit fixture", expect)
        for name in self.names(imported):  # the very objects, back at their targets
            assert self.report["objects"][name]["id"] == objects[name]["id"], name

    @rule(event=strategies.sampled_from(["force on", "force off"]))
    def force(self, event):
        # Every installed version is a release the guard knows: no change.
        self.step(event, lambda arrived: None)

    @precondition(lambda self: "keras" in self.imported)
    @rule()
    def reload_clone_module(self):
        def expect(arrived):  # the module's own function again
            for name in self.names(["keras"]):
                if name.startswith("keras.models."):
                    self.fixed[name] = False
        self.step("reload keras.models", expect)

    @rule()
    def reload_package(self):
        def expect(arrived):
            # Importing the package again: active already, it only says so;
            # otherwise it activates, unless switched off.
            if self.active:
                self.activated_by = "import keras_clone_fix"
            elif self.switch:
                self.activated_by = "import keras_clone_fix"
                self.fixed.update(dict.fromkeys(self.names(self.imported), True))
        self.step("reload keras_clone_fix", expect)


def test_activation_follows_its_model():
    run_state_machine_as_test(ActivationModel, settings=settings(
        max_examples=SEQUENCES, stateful_step_count=STEPS, deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]))
