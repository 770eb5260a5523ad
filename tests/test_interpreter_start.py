"""Activation at interpreter start: the installed keras_clone_fix.pth, in fresh interpreters."""

import json
import os
import shutil
import sys

import pytest

from conftest import (
    RELEASE_TARGETS, SITE_PACKAGES, affected_only, installed, probe, run_python, warnings_in)

PTH = os.path.join(SITE_PACKAGES, "keras_clone_fix.pth")
pytestmark = pytest.mark.activation


def test_pth_is_installed_beside_the_package():
    with open(PTH) as pth:
        lines = pth.read().splitlines()
    assert len(lines) == 1 and lines[0].startswith("import ")


def test_start_imports_nothing_heavy():
    report, finished = probe("no-keras")
    assert report["at_start"] == []
    assert report["status_at_start"]["activated_by"] == ".pth at interpreter start"
    assert finished.stderr == ""


def test_pth_left_behind_without_the_package_is_harmless(tmp_path):
    shutil.copy(PTH, str(tmp_path))
    # As if uninstalled: importing it fails. (Not python -S: a Python 2
    # virtualenv finds not even its standard library without `site`.)
    program = ("import site, sys; sys.modules['keras_clone_fix'] = None; "
               "site.addsitedir({!r}); print('alive')".format(str(tmp_path)))
    finished = run_python(["-c", program], cwd=str(tmp_path))
    assert (finished.returncode, finished.stdout, finished.stderr) == (0, "alive\n", "")


@pytest.mark.skipif(sys.version_info[0] < 3, reason="Python 2 has no -I")
def test_isolated_mode_still_runs_the_pth():
    finished = run_python(
        ["-I", "-c", "import sys; print(sys.modules['keras_clone_fix'].status().activated_by)"])
    assert finished.stdout == ".pth at interpreter start\n"


def test_python_S_means_no_activation():
    # Nothing but sys: a Python 2 virtualenv finds no standard library without `site`.
    finished = run_python(["-S", "-c", "import sys; print('keras_clone_fix' in sys.modules)"])
    assert (finished.stdout, finished.stderr) == ("False\n", "")


def test_bad_switch_value_warns_once_and_activates():
    report, finished = probe("no-keras", env={"KERAS_CLONE_FIX": "maybe"})
    assert len(warnings_in(finished.stderr)) == 1 and "'maybe'" in finished.stderr
    assert report["status"]["reason"] == "waiting for `import keras` or `import tensorflow`"


@affected_only
def test_without_the_fix_clone_fails(python_without_pth):
    report, _ = probe(python=python_without_pth)
    assert report["clone"].startswith("AssertionError: Could not compute output")
    assert report["status"] is None


@affected_only
def test_pth_alone_fixes_a_program_that_never_mentions_it():
    report, finished = probe()
    assert report["clone"] == "ok"
    assert report["status"]["patched"] is True
    assert report["status"]["activated_by"] == ".pth at interpreter start"
    assert warnings_in(finished.stderr) == []


@affected_only
def test_switch_off_leaves_the_bug():
    for value in ("0", "false", "OFF", "no"):
        report, _ = probe(env={"KERAS_CLONE_FIX": value})
        assert report["clone"].startswith("AssertionError: Could not compute output"), value
        assert report["status"]["patched"] is False


BUG_IN_ACTIVATION = """
import runpy
import warnings
import keras_clone_fix
import keras_clone_fix.{module}
warnings.simplefilter("{action}", keras_clone_fix.KerasCloneFixWarning)
def broken(*args):
    raise RuntimeError("simulated bug in {module}.{function}")
keras_clone_fix.{module}.{function} = broken
runpy.run_path("clone_probe.py", run_name="__main__")
"""


@affected_only
@pytest.mark.parametrize("module, function, action", [
    ("_fix", "build_fixed", "default"),
    ("_affected", "is_affected", "default"),
    ("_fix", "build_fixed", "error"),  # warnings as errors: still no exception
])
def test_bug_in_activation_leaves_keras_working_and_warns_once(module, function, action):
    program = BUG_IN_ACTIVATION.format(module=module, function=function, action=action)
    finished = run_python(["-c", program])
    report = json.loads(finished.stdout.splitlines()[-1][len("PROBE "):])
    assert report["clone"].startswith("AssertionError: Could not compute output")
    assert report["status"]["patched"] is False
    assert "simulated bug in " + module in report["status"]["reason"]
    assert len(warnings_in(finished.stderr)) == 1


def test_broken_keras_fails_to_import_as_it_would_without_us(tmp_path):
    (tmp_path / "keras").mkdir()
    (tmp_path / "keras" / "__init__.py").write_text(u"raise ImportError('simulated broken keras')\n")
    program = ("import keras_clone_fix\n"
               "try:\n    import keras\nexcept ImportError as error:\n    print('ImportError: {}'.format(error))\n"
               "print(keras_clone_fix.status().reason)\n")
    finished = run_python(["-c", program], env={"PYTHONPATH": str(tmp_path)})
    assert finished.stdout == ("ImportError: simulated broken keras\n"
                               "waiting for `import keras` or `import tensorflow`\n")
    assert finished.stderr == ""


@affected_only
@pytest.mark.skipif(installed("tensorflow"),
                    reason="TensorFlow itself needs wrapt")
def test_missing_wrapt_leaves_keras_working_and_warns_once(tmp_path):
    (tmp_path / "wrapt.py").write_text(u"raise ImportError('simulated: wrapt is missing')\n")
    report, finished = probe(env={"PYTHONPATH": str(tmp_path)})
    assert report["clone"].startswith("AssertionError: Could not compute output")
    assert "simulated: wrapt is missing" in report["status"]["reason"]
    assert len(warnings_in(finished.stderr)) == 1


TARGET_NOT_PATCHABLE = """
import json
import keras
try:
    from keras.engine.network import Network as Owner
except ImportError:  # Keras < 2.2
    from keras.engine.topology import Container as Owner
original = vars(Owner)["run_internal_graph"]
def run_internal_graph(*args, **kwargs):  # made by -c: it has no source to rewrite
    return original(*args, **kwargs)
Owner.run_internal_graph = run_internal_graph
import keras_clone_fix
from clone_probe import clone_two_output_model
status = keras_clone_fix.status()
print(json.dumps([status.patched, sorted(fixed for name, fixed in status.targets.items()
                                         if name.startswith("keras.")),
                  clone_two_output_model(keras.models.clone_model)]))
"""


@affected_only
def test_a_target_that_cannot_be_patched_warns_once_and_the_others_work(python_without_pth):
    finished = run_python(["-c", TARGET_NOT_PATCHABLE], python=python_without_pth)
    others = len(RELEASE_TARGETS["keras"]) - 1
    assert json.loads(finished.stdout.splitlines()[-1]) == [False, [False] + [True] * others, "ok"]
    (warning,) = warnings_in(finished.stderr)
    assert "run_internal_graph its source is not available" in warning
    assert warning.endswith("; those run unpatched")
