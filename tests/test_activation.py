"""patch / unpatch / status, and activation by `import keras_clone_fix`."""

import functools
import importlib
import json
import sys
import threading
import types
import warnings

import pytest

import keras_clone_fix
from keras_clone_fix import FAMILIES, _activation
from keras_clone_fix._affected import Target, target_name, targets_for
import other_tools
from conftest import (
    AFFECTED, CLONE_AFFECTED, KERAS, RELEASE_TARGETS, affected_only, installed, probe, run_python)
from test_rules import Layer, Node, step_like_keras

try:
    from importlib import reload
except ImportError:  # Python 2
    from imp import reload

pytestmark = pytest.mark.activation


def test_import_is_lazy(python_without_pth):
    report, _ = probe("fix-only", python=python_without_pth)
    assert report["after_fix_import"] == []
    assert report["status"]["reason"] == "waiting for `import keras` or `import tensorflow`"


UNRELATED_IMPORTS = """
import keras_clone_fix
print(keras_clone_fix.status().reason)
import json, xml.dom.minidom, logging.handlers  # the standard library, submodules
from email.mime import text
import pytest, wrapt  # site-packages
import keras_clone_fix._affected  # a submodule of the watcher's own package
for missing in ("no_such_module", "json.no_such_submodule", "keras_no_such_module"):
    try:
        __import__(missing)
    except ImportError:
        print("ImportError for " + missing)
print(keras_clone_fix.status().reason)
"""


def test_unrelated_imports_work_while_waiting_for_keras(python_without_pth):
    """Python 2 asks every sys.meta_path finder through find_module, Python
    3 through find_spec: the watcher must answer both for any name."""
    finished = run_python(["-c", UNRELATED_IMPORTS], python=python_without_pth)
    assert (finished.stdout, finished.stderr) == (
        "waiting for `import keras` or `import tensorflow`\n"
        "ImportError for no_such_module\n"
        "ImportError for json.no_such_submodule\n"
        "ImportError for keras_no_such_module\n"
        "waiting for `import keras` or `import tensorflow`\n", "")


@affected_only
def test_import_before_keras_patches_on_import_keras(python_without_pth):
    report, _ = probe("fix-before-keras", python=python_without_pth)
    assert report["clone"] == "ok"
    assert report["status"]["activated_by"] == "import keras_clone_fix"


@affected_only
def test_import_after_keras_fixes_clone_model_bound_earlier(python_without_pth):
    report, _ = probe("fix-after-keras", python=python_without_pth)
    assert report["clone"] == "ok"
    assert report["status"]["patched"] is True


patched_here = pytest.mark.skipif(not AFFECTED, reason="needs an affected Keras, 2.0.0 - 2.3.1")


def current_objects():
    """{target name: the object at that target now}, for every target of the
    imported families (keras, and tf.keras where TensorFlow is affected)."""
    return {name: spine[0][1] for name, spine in _activation._installed(FAMILIES).items()}


def keras_names(objects):
    return sorted(name for name in objects if name.startswith("keras."))


def assert_wrapped(originals):
    for name, wrapper in current_objects().items():
        assert wrapper is not originals[name] and wrapper.__wrapped__ is originals[name], name


@patched_here
def test_patch_is_idempotent_and_wraps_every_target(restore_fix_state):
    keras_clone_fix.unpatch()
    originals = current_objects()
    # run_internal_graph, from_config, get_config, Sequential's get_config and
    # from_config, and the graph walk; both clone routines from 2.0.7
    expected = 6 + 2 * CLONE_AFFECTED
    assert len(keras_names(originals)) == expected
    status = keras_clone_fix.patch()
    assert status.patched and status.targets == {name: True for name in originals}
    wrappers = current_objects()
    assert keras_clone_fix.patch().patched
    assert current_objects() == wrappers
    assert_wrapped(originals)


@patched_here
def test_unpatch_puts_back_the_exact_originals(restore_fix_state):
    keras_clone_fix.unpatch()
    originals = current_objects()
    keras_clone_fix.patch()
    status = keras_clone_fix.unpatch()
    assert current_objects() == originals
    assert (status.patched, status.reason) == (False, "unpatched by keras_clone_fix.unpatch()")
    assert status.targets == {name: False for name in originals}


@patched_here
def test_patch_and_unpatch_racing_from_many_threads(restore_fix_state):
    keras_clone_fix.unpatch()
    originals = current_objects()
    start = threading.Event()  # all together, once all are started

    def toggle(index):
        start.wait()
        for _ in range(50):
            (keras_clone_fix.patch if index % 2 else keras_clone_fix.unpatch)()

    threads = [threading.Thread(target=toggle, args=(index,)) for index in range(16)]
    for thread in threads:
        thread.start()
    start.set()
    for thread in threads:
        thread.join()
    keras_clone_fix.patch()
    assert_wrapped(originals)
    keras_clone_fix.unpatch()
    assert current_objects() == originals


@affected_only
def test_patch_unpatch_cycles_keep_the_originals(restore_fix_state):
    import keras.models
    from clone_probe import clone_two_output_model
    keras_clone_fix.unpatch()
    originals = current_objects()
    for _ in range(3):
        assert keras_clone_fix.patch().patched
        assert_wrapped(originals)
        assert clone_two_output_model(keras.models.clone_model) == "ok"
        keras_clone_fix.unpatch()
        assert current_objects() == originals
        assert clone_two_output_model(keras.models.clone_model).startswith("AssertionError")


@patched_here
def test_reloading_the_package_keeps_one_wrapper(restore_fix_state):
    keras_clone_fix.patch()
    wrappers = current_objects()
    reload(keras_clone_fix)
    assert current_objects() == wrappers and keras_clone_fix.status().patched


@affected_only
def test_a_target_that_cannot_be_patched_leaves_the_others_patched(restore_fix_state, monkeypatch):
    from test_rules import decorated
    keras_clone_fix.unpatch()
    target = next(target for target in targets_for("keras", keras_clone_fix.status().keras_version)
                  if target.routine() == "run_internal_graph")
    call = target_name(target)
    owner, name, original = _activation._resolve(target)
    monkeypatch.setattr(owner, name, decorated(original))
    with pytest.raises(_activation.PatchError) as raised:  # the class before any reload
        keras_clone_fix.patch()
    assert "cannot patch {} it is a closure".format(call) in str(raised.value)
    status = keras_clone_fix.status()
    assert status.patched is False
    assert status.targets == dict(dict.fromkeys(status.targets, True), **{call: False})
    assert status.reason == str(raised.value)


@patched_here
def test_unrecognised_version_is_skipped_unless_forced(restore_fix_state, monkeypatch):
    import keras
    keras_clone_fix.unpatch()
    custom = keras.__version__ + "-custom"  # a fork: its targets are the release's
    monkeypatch.setattr(keras, "__version__", custom)
    status = keras_clone_fix.patch()
    assert not status.patched and "{!r} is not a release".format(custom) in status.reason
    assert keras_clone_fix.patch(force=True).patched


@patched_here
def test_forcing_a_version_that_names_no_release_says_not_patched(restore_fix_state, monkeypatch):
    """'custom' starts with no release, so it has no targets: forced, the
    reason must not say "patched" (status().patched is False for it)."""
    import keras
    keras_clone_fix.unpatch()
    monkeypatch.setattr(keras, "__version__", "custom")
    status = keras_clone_fix.patch(force=True)
    assert not any(name.startswith("keras.") for name in status.targets), status.targets
    assert ("keras version 'custom' is not a release this package recognises; forced; "
            "no release to take the targets of; not patched") in status.reason, status.reason


# A fork's keras: the installed release, its version changed before the fix
# sees it; then the way in named by argv[1]. Prints the status as JSON.
CUSTOM_KERAS_THEN = """
import json, sys
import keras
keras.__version__ += "-custom"
import keras_clone_fix
how = sys.argv[1]
status = (keras_clone_fix.status() if how == "import" else
          keras_clone_fix.patch(force=False) if how == "patch(force=False)" else
          keras_clone_fix.patch())
print(json.dumps(status.as_dict()))
"""


def custom_keras_then(how, env, python):
    finished = run_python(["-c", CUSTOM_KERAS_THEN, how], env=env, python=python)
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout.splitlines()[-1])


ADVICE = "(set KERAS_CLONE_FIX_FORCE=1 to patch it anyway)"


@patched_here
@pytest.mark.parametrize("how, switch", [
    ("import", None),           # automatic: the import of the package, after keras's
    ("patch()", "0"),           # explicit: works with the automatic ways off
])
def test_force_variable_is_read_by_every_way_in(how, switch, python_without_pth):
    forced = custom_keras_then(how, {"KERAS_CLONE_FIX": switch, "KERAS_CLONE_FIX_FORCE": "1"},
                               python_without_pth)
    assert forced["patched"] and "-custom' is not a release" in forced["reason"], forced
    assert "forced" in forced["reason"] and ADVICE not in forced["reason"]
    unforced = custom_keras_then(how, {"KERAS_CLONE_FIX": switch}, python_without_pth)
    assert not unforced["patched"] and ADVICE in unforced["reason"], unforced


@patched_here
def test_force_false_overrides_the_variable_and_gives_no_advice_to_set_it(python_without_pth):
    status = custom_keras_then("patch(force=False)",
                               {"KERAS_CLONE_FIX": "0", "KERAS_CLONE_FIX_FORCE": "1"},
                               python_without_pth)
    assert not status["patched"] and ADVICE not in status["reason"], status
    assert "force=False overrides KERAS_CLONE_FIX_FORCE=1" in status["reason"]


@pytest.mark.skipif(KERAS is not None or installed("tensorflow"),
                    reason="needs an environment without keras and tensorflow")
def test_patch_without_keras_says_so(restore_fix_state):
    status = keras_clone_fix.patch()
    assert (status.patched, status.keras_version) == (False, None)
    assert status.reason.startswith("keras cannot be imported")


class Network(Node):
    """Stands in for a keras class with a method to patch: the node is self."""
    step = step_like_keras


def test_wraps_functions_and_methods_with_the_installed_wrapt(monkeypatch):
    """The wrapt calls themselves, on wrapt 1.x and 2.x alike (keras-free envs too)."""
    import wrapt

    module = types.ModuleType("stand_in_for_keras")
    module.step_like_keras, module.Network = step_like_keras, Network
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for attribute, original, call in [
            ("step_like_keras", step_like_keras, lambda: functools.partial(module.step_like_keras, Node())),
            ("Network.step", step_like_keras, lambda: Network().step),
            ("Network.step", step_like_keras, lambda: functools.partial(Network.step, Network()))]:
        target = Target("keras", module.__name__, attribute, None, None, ["OneMaskPerOutput"],
                        "test")
        monkeypatch.setattr(Network, "step", step_like_keras)
        _activation._wrap(target)
        wrapper = _activation._resolve(target)[2]
        assert wrapper.__wrapped__ is original and _activation.is_fixed(wrapper)
        assert isinstance(wrapper, wrapt.FunctionWrapper)
        assert call()(Layer("m", outputs=3), "m")[1:] == (["m", "m", "m"], 3)


def test_takes_the_fix_out_from_under_another_wrapt_wrapper_with_the_installed_wrapt(
        monkeypatch):
    """Ours goes in under another tool's wrapt proxy, and comes out from
    under it, leaving it working: functions and methods, on wrapt 1.x and
    2.x alike (keras-free envs too)."""
    module = types.ModuleType("stand_in_for_keras")
    module.step_like_keras, module.Network = step_like_keras, Network
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for attribute, call in [
            ("step_like_keras", lambda: functools.partial(module.step_like_keras, Node())),
            ("Network.step", lambda: Network().step)]:
        monkeypatch.setattr(Network, "step", step_like_keras)
        target = Target("keras", module.__name__, attribute, None, None, ["OneMaskPerOutput"],
                        "test")
        other_tools.wrap_with_wrapt(target.module, attribute, "theirs")
        for fixed in (True, False, True):
            if fixed:
                _activation._wrap(target)
            else:
                assert _activation._take_out(target) is None
            assert [link[:2] for link in chain_at(target)] == (
                [("wrapt", "theirs")] + [("ours", "")] * fixed + [("keras", "")])
            del other_tools.RAN[:]
            fixed_result = (["m", "m", "m"], 3)
            assert (call()(Layer("m", outputs=3), "m")[1:] == fixed_result) is fixed
            assert other_tools.RAN == ["theirs"]


def test_the_walk_of_a_chain_is_bounded_and_cycle_safe():
    def holds_itself():
        return holds_itself()

    class Endless(object):  # a mock-like object: every `__wrapped__` is a new one
        def __call__(self):
            pass

        @property
        def __wrapped__(self):
            return Endless()

    assert [link[1] for link in _activation._links(holds_itself)] == [holds_itself]
    assert len(list(_activation._links(Endless()))) == _activation.MAX_LINKS


# Another tool's patches of a target: wrappers, calling what was there, and a replacement.
WRAPPERS = {
    "wrapt": other_tools.wrap_with_wrapt,
    "functools.wraps": other_tools.wrap_in_closure,
    "closure": functools.partial(other_tools.wrap_in_closure, keep_wrapped=False),
}
OTHERS = dict(WRAPPERS, replacement=other_tools.replace)
CLOSURES = ["functools.wraps", "closure"]
# The targets whose fix activation_driver's behaviours can show running:
# tf.keras's shows calls on new tensors, from_config and get_config only, not
# its clone routines (TF 1.4 - 1.12) nor Layer._set_mask_metadata (TF 1.11 - 1.13).
EVERY_TARGET = [target for family in FAMILIES for target in RELEASE_TARGETS[family]
                if family == "keras" or target.routine() in (
                    "run_internal_graph", "from_config", "get_config")]
# ids as a list: pytest before 7 calls an ids function even on an empty set (keras-free envs).
every_target = pytest.mark.parametrize("target", EVERY_TARGET,
                                       ids=[target_name(target) for target in EVERY_TARGET])


def chain_at(target):
    return other_tools.chain(other_tools.at(target.module, target.attribute))


def kinds_at(target):
    return [kind for kind, _, _ in chain_at(target)]


def fix_runs(target):
    """Whether calling the target runs the fix: the family's model that
    every affected release breaks (activation_driver's) works."""
    from activation_driver import BEHAVIOURS
    behaviour_of = {"clone_functional_model": "clone", "from_config": "from_config",
                    "get_config": "get_config", "clone_sequential_model": "sequential_clone",
                    "init": "walk", "map_graph_network": "walk",
                    "Sequential.get_config": "sequential_config",
                    "Sequential.from_config": "sequential_from_config"}
    routine = behaviour_of.get(target.attribute, behaviour_of.get(target.routine(), "call"))
    del other_tools.RAN[:]
    return BEHAVIOURS[target.family](sys.modules[target.family])[routine] == "ok"


def install(wrapper, target, label="theirs"):
    OTHERS[wrapper](target.module, target.attribute, label)


def fix_warnings(action):
    """action()'s result, and the KerasCloneFixWarnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = action()
    return result, [str(warning.message) for warning in caught
                    if issubclass(warning.category, _activation.KerasCloneFixWarning)]


def keras_original(target):
    keras_clone_fix.unpatch()
    return other_tools.at(target.module, target.attribute)


@every_target
@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
def test_status_finds_the_fix_under_another_tools_wrapper(target, wrapper, restore_fix_state):
    original = keras_original(target)
    keras_clone_fix.patch()
    install(wrapper, target)
    status = keras_clone_fix.status()
    assert status.targets[target_name(target)] is True and status.patched
    assert fix_runs(target) and "theirs" in other_tools.RAN
    assert keras_clone_fix.patch().patched
    assert kinds_at(target) == ["wrapt" if wrapper == "wrapt" else "closure", "ours", "keras"]
    assert chain_at(target)[-1][2] is original


@every_target
def test_unpatch_takes_the_fix_out_from_under_wrapt_wrappers(target, restore_fix_state):
    original = keras_original(target)
    keras_clone_fix.patch()
    install("wrapt", target, "inner")
    install("wrapt", target, "outer")
    status, warned = fix_warnings(keras_clone_fix.unpatch)
    assert (status.targets[target_name(target)], warned) == (False, [])
    assert [link[:2] for link in chain_at(target)] == [("wrapt", "outer"), ("wrapt", "inner"),
                                                       ("keras", "")]
    assert chain_at(target)[-1][2] is original
    assert not fix_runs(target) and other_tools.RAN[:2] == ["outer", "inner"]
    # And back in, where it was.
    assert keras_clone_fix.patch().targets[target_name(target)]
    assert kinds_at(target) == ["wrapt", "wrapt", "ours", "keras"]
    assert fix_runs(target) and other_tools.RAN[:2] == ["outer", "inner"]


@every_target
@pytest.mark.parametrize("wrapper", CLOSURES)
def test_unpatch_leaves_the_fix_held_in_another_tools_closure(target, wrapper, restore_fix_state):
    keras_original(target)
    keras_clone_fix.patch()
    install(wrapper, target)
    status, warned = fix_warnings(keras_clone_fix.unpatch)
    name = target_name(target)
    assert len(warned) == 1
    assert "{} stays patched: the fix is held inside the function".format(name) in warned[0]
    assert "other_tools.py:" in warned[0]  # where their wrapper is defined
    assert status.targets == dict(dict.fromkeys(status.targets, False), **{name: True})
    assert "{} stays patched".format(name) in status.reason
    assert fix_runs(target) and "theirs" in other_tools.RAN
    assert "stays patched" not in keras_clone_fix.patch().reason
    assert kinds_at(target) == ["closure", "ours", "keras"]  # not patched twice


@every_target
def test_a_replacement_is_not_patched(target, restore_fix_state):
    keras_clone_fix.unpatch()
    keras_clone_fix.patch()
    install("replacement", target)
    assert keras_clone_fix.status().targets[target_name(target)] is False
    assert not fix_runs(target) and "theirs" in other_tools.RAN
    with pytest.raises(_activation.PatchError) as raised:
        keras_clone_fix.patch()
    # What a decorator made is looked into for the def: a replacement has none.
    assert "cannot patch {} {}".format(target_name(target), "expected what @" if target.decorator
                                       else "rule") in str(raised.value)
    assert (kinds_at(target), fix_warnings(keras_clone_fix.unpatch)[1]) == (["replacement"], [])


@every_target
@pytest.mark.parametrize("wrapper", sorted(OTHERS))
def test_patch_over_another_tools_wrapper(target, wrapper, restore_fix_state):
    """Under a wrapt proxy ours goes in, their wrapper still running; another
    tool's closure or replacement is not Keras's function: refused (as before)."""
    original = keras_original(target)
    install(wrapper, target)
    before = kinds_at(target)
    if wrapper == "wrapt":
        assert keras_clone_fix.patch().patched
        assert kinds_at(target) == ["wrapt", "ours", "keras"]
        assert fix_runs(target) and other_tools.RAN[0] == "theirs"
        keras_clone_fix.unpatch()
        assert chain_at(target)[-1][2] is original
    else:
        with pytest.raises(_activation.PatchError):
            keras_clone_fix.patch()
        assert not keras_clone_fix.status().targets[target_name(target)]
        assert not fix_runs(target) and other_tools.RAN[0] == "theirs"
    assert kinds_at(target) == before


@every_target
def test_fixture_restores_what_other_wrappers_held(target, restore_fix_state):
    keras_original(target)
    keras_clone_fix.patch()
    install("wrapt", target, "inner")
    install("closure", target, "outer")
    patched = [function for _, _, function in chain_at(target)]
    with _activation.restoring():
        keras_clone_fix.unpatch()  # out from under "inner", inside "outer"
        assert kinds_at(target) == ["closure", "wrapt", "keras"]
    assert [function for _, _, function in chain_at(target)] == patched
    keras_clone_fix.unpatch()
    unpatched = [function for _, _, function in chain_at(target)]
    with _activation.restoring():
        with pytest.raises(_activation.PatchError):  # the closure is on top
            keras_clone_fix.patch()
        owner, name = other_tools.owner_of(target.module, target.attribute)
        setattr(owner, name, patched[1])  # their closure gone: patch goes under "inner"
        assert keras_clone_fix.patch().targets[target_name(target)]
    assert [function for _, _, function in chain_at(target)] == unpatched


def unaffected_frontends():
    """keras >= 2.4 / Keras 3 and tf_keras, where installed."""
    if AFFECTED:
        return []
    return [name for name in ("keras", "tf_keras") if installed(name)]


@pytest.mark.parametrize("frontend", unaffected_frontends())
def test_unaffected_keras_is_untouched_and_clones(frontend):
    import numpy
    from keras_clone_fix._builtin_model import two_output_model
    status = keras_clone_fix.status()
    assert not status.patched and "not patched" in status.reason
    keras = importlib.import_module(frontend)
    model = two_output_model(keras)
    clone = keras.models.clone_model(model)
    clone.set_weights(model.get_weights())
    padded = numpy.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0]])
    for expected, got in zip(model.predict(padded, verbose=0), clone.predict(padded, verbose=0)):
        assert numpy.allclose(expected, got)
