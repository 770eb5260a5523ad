"""A model-based test of activation: random sequences of events, each in a
fresh interpreter (import order matters), checked against a model after
every step.

Events: importing a family, patch(), unpatch(), the pytest fixture's enter
and exit, KERAS_CLONE_FIX_FORCE on and off, importlib.reload of the clone
routine's module and of the package, and another tool patching a target:
wrapping it (a wrapt wrapper, a functools.wraps closure) or replacing it
with its own function; the switch KERAS_CLONE_FIX decides how each
interpreter starts. The model keeps, for each target, the chain of what
runs there (ours, other tools' wrappers, Keras's function). After every
step: that chain is what the driver reads there independently; status()
says patched exactly where ours is in it, and why where unpatch() left it
inside a closure; clone_model and calls on new tensors work exactly where
patched (keras; with tf.keras, a call on new tensors leaves the original's
node arguments as they were exactly where patched), and every other tool's
patch in a chain they call runs; patch() raises exactly where ours cannot
go in; unpatch() warns exactly where ours stays; and a fixture's exit put
back the very objects that were there at its enter.

ACTIVATION_SEQUENCES (default 6; each sequence a fresh interpreter) and
ACTIVATION_STEPS (default 10) bound it;
`nox -s activation-model` runs 300. Hypothesis draws the simplest sequences
first, so a short run's are mostly a few events each (the session's summary
counts them): the long run is the one that reaches the long sequences.
"""

import collections
import copy
import json
import os
import subprocess
import sys
import tempfile
import time

import pytest
from hypothesis import HealthCheck, settings, strategies
from hypothesis.stateful import (
    RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test)

from conftest import RELEASE_TARGETS, STARTED, TESTS
from keras_clone_fix import FAMILIES
from keras_clone_fix._affected import target_name

SEQUENCES = int(os.environ.get("ACTIVATION_SEQUENCES", "6"))
STEPS = int(os.environ.get("ACTIVATION_STEPS", "10"))
RAN = collections.Counter()  # sequences, and steps of each event: the terminal summary
pytestmark = pytest.mark.activation


class Driver(object):
    """activation_driver.py in a fresh interpreter: one event in, one report out."""

    def __init__(self, switch, targets, behaviours):
        env = {k: v for k, v in os.environ.items() if not k.startswith("KERAS_CLONE_FIX")}
        env["KERAS_CLONE_FIX"] = "1" if switch else "0"
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.started = time.time()
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
        STARTED["interpreters"] += 1
        STARTED["seconds"] += time.time() - self.started


def patch_in(chain):
    """What patching a target does to its chain (from the top: "ours",
    "keras", "wrapt:LABEL", "closure:LABEL", "replacement:LABEL"): ours goes
    in around Keras's function, under the wrapt proxies on top; refused
    (False) over another tool's closure or replacement."""
    if "ours" in chain:
        return True
    under = next(index for index, link in enumerate(chain) if not link.startswith("wrapt:"))
    if chain[under] != "keras":
        return False
    chain.insert(under, "ours")
    return True


def held_in_a_closure(chain):
    """Whether ours is in the chain, held by another tool's closure."""
    return "ours" in chain[1:] and chain[chain.index("ours") - 1].startswith("closure:")


def take_out(chain):
    """What unpatching a target does to its chain: ours comes out from
    under wrapt proxies, and stays inside a closure."""
    if "ours" in chain and not held_in_a_closure(chain):
        chain.remove("ours")


# The targets that walk a model's graph (every model built runs one): keras
# 2.0.4 - 2.1.6's Container.__init__, _map_graph_network, tf.layers' __init__.
WALKS = ("__init__", "_map_graph_network")


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
        self.chains = {}     # target name -> what should run there (patch_in), from the top
        self.imported = set()
        self.scopes = []     # (model state, chains' ids) at each open fixture's enter
        self.labels = 0      # other tools' patches made
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
        """Send the event; expect(families imported by it) updates the
        model; returns what patch() raised."""
        RAN[" ".join(event.split()[:2]) if event.startswith("other ") else event] += 1
        report = self.driver.send(event)
        arrived = set(report["imported"]) - self.imported
        self.imported |= arrived
        for name in self.names(arrived):
            self.chains[name] = ["keras"]
        raises = expect(arrived)
        assert (report["raised"] is not None) == bool(raises), (event, report["raised"])
        self.check(report)
        self.report = report
        return report

    def check(self, report):
        status = report["status"]
        expected = {name: self.chains[name] for name in self.names(self.imported)}
        assert {name: [kind + (":" + label if label else "") for kind, label, _ in
                       report["chains"][name]] for name in expected} == expected
        assert status["targets"] == {name: "ours" in chain for name, chain in expected.items()}
        assert status["patched"] == (bool(expected) and all(status["targets"].values()))
        assert status["activated_by"] == self.activated_by
        for name, chain in expected.items():  # and why, where unpatch() could not
            stays = not self.active and held_in_a_closure(chain)
            assert ("{} stays patched".format(name) in status["reason"]) == stays, status
        assert report["waiting"] == (self.active and set(FAMILIES) != self.imported)
        ran = set()
        for family, behaviour in report["behaviour"].items():
            for action, routine in (("clone", "_clone_functional_model"),
                                    ("call", "run_internal_graph"),
                                    ("from_config", ("Network.from_config",
                                                     "Container.from_config")),
                                    ("get_config", ("Network.get_config",
                                                    "Container.get_config")),
                                    ("sequential_config", "Sequential.get_config"),
                                    ("sequential_from_config", "Sequential.from_config"),
                                    ("sequential_clone", "_clone_sequential_model"),
                                    ("walk", WALKS)):
                chains = [self.chains[name] for name in self.names([family])
                          if name.endswith(routine)]
                if behaviour.get(action) is not None and chains:
                    assert (behaviour[action] == "ok") == ("ours" in chains[0]), (
                        family, action, report)
                    ran.update(link.split(":")[1] for link in chains[0] if ":" in link)
            # Every layer call of the behaviour runs Layer._set_mask_metadata (TF 1.11 - 1.13),
            # and every model it builds the walk of its graph: so every other tool's patch there.
            for name in self.names([family]):
                if name.endswith(("_set_mask_metadata",) + WALKS):
                    ran.update(link.split(":")[1] for link in self.chains[name] if ":" in link)
        assert set(report["ran"]) == ran  # every other tool's patch there still runs

    def patch_all(self):
        """Patch every imported target; the names of those refused."""
        return [name for name in self.names(self.imported) if not patch_in(self.chains[name])]

    def patched_on_arrival(self, arrived):
        if self.active:
            for name in self.names(arrived):
                patch_in(self.chains[name])

    @rule(family=strategies.sampled_from(FAMILIES))
    def import_family(self, family):
        self.step("import " + family, self.patched_on_arrival)

    def patch_as(self, source, event):
        def expect(arrived):
            self.activated_by = source
            return self.patch_all()
        self.step(event, expect)

    @rule()
    def patch(self):
        self.patch_as("keras_clone_fix.patch()", "patch")

    @rule()
    def unpatch(self):
        def expect(arrived):
            self.activated_by = None
            for chain in self.chains.values():
                take_out(chain)
        report = self.step("unpatch", expect)
        stays = [name for name, chain in self.chains.items() if held_in_a_closure(chain)]
        assert len(report["warned"]) == (1 if stays else 0), report["warned"]
        assert all(name + " stays patched" in report["warned"][0] for name in stays)

    @rule()
    def enter_fixture(self):
        self.scopes.append(((self.activated_by, copy.deepcopy(self.chains), set(self.imported)),
                            self.report["chains"]))
        self.patch_as("pytest fixture keras_clone_fix", "enter fixture")

    @precondition(lambda self: self.scopes)
    @rule()
    def exit_fixture(self):
        (activated_by, chains, imported), ids = self.scopes.pop()

        def expect(arrived):
            self.activated_by = activated_by
            for name in self.names(self.imported):
                if name in chains:
                    self.chains[name] = chains[name]
                elif self.active:  # waiting for it then: patched, where it can be
                    patch_in(self.chains[name])
                else:
                    take_out(self.chains[name])
        self.step("exit fixture", expect)
        for name in self.names(imported):  # the very objects, back at their targets
            assert self.report["chains"][name] == ids[name], name

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
                    self.chains[name] = ["keras"]
        self.step("reload keras.models", expect)

    @rule()
    def reload_package(self):
        def expect(arrived):
            # Importing the package again: active already, it only says so;
            # otherwise it activates, unless switched off (a refusal warns).
            if self.active:
                self.activated_by = "import keras_clone_fix"
            elif self.switch:
                self.activated_by = "import keras_clone_fix"
                self.patch_all()
        self.step("reload keras_clone_fix", expect)

    def other_tool(self, kind, index):
        """Another tool patches the index'th target imported (modulo)."""
        targets = [t for family in FAMILIES if family in self.imported for t in self.targets[family]]
        target = targets[index % len(targets)]
        self.labels += 1
        label = "{}{}".format(kind[0], self.labels)

        def expect(arrived):
            chain = self.chains[target_name(target)]
            chain[:] = [kind + ":" + label] + (chain if kind != "replacement" else [])
        self.step(" ".join(["other", kind, label, target.module, target.attribute]), expect)

    # One rule each: the other tools' events are three of the rules Hypothesis draws from.
    @precondition(lambda self: self.names(self.imported))
    @rule(index=strategies.integers(min_value=0, max_value=7))
    def wrap_with_wrapt(self, index):
        self.other_tool("wrapt", index)

    @precondition(lambda self: self.names(self.imported))
    @rule(index=strategies.integers(min_value=0, max_value=7))
    def wrap_in_a_closure(self, index):
        """functools.wraps: a closure, with `__wrapped__` on Python 3."""
        self.other_tool("closure", index)

    @precondition(lambda self: self.names(self.imported))
    @rule(index=strategies.integers(min_value=0, max_value=7))
    def replace_with_their_own(self, index):
        self.other_tool("replacement", index)


def test_activation_follows_its_model():
    run_state_machine_as_test(ActivationModel, settings=settings(
        max_examples=SEQUENCES, stateful_step_count=STEPS, deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]))
