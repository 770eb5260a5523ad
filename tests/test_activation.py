"""patch / unpatch / status, and activation by `import keras_clone_fix`."""

import importlib
import threading

import pytest

import keras_clone_fix
from keras_clone_fix import _activation
from conftest import AFFECTED, affected_only, installed, keras_free_only, probe, run_python

try:
    from importlib import reload
except ImportError:  # Python 2
    from imp import reload

TARGET = "_clone_functional_model"


def test_import_is_lazy(python_without_pth):
    report, _ = probe("fix-only", python=python_without_pth)
    assert report["after_fix_import"] == []
    assert report["status"]["reason"] == "waiting for `import keras`"


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
        "waiting for `import keras`\n"
        "ImportError for no_such_module\n"
        "ImportError for json.no_such_submodule\n"
        "ImportError for keras_no_such_module\n"
        "waiting for `import keras`\n", "")


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


@affected_only
def test_patch_is_idempotent_and_wraps_the_original(restore_fix_state):
    import keras.models
    keras_clone_fix.unpatch()
    original = getattr(keras.models, TARGET)
    assert keras_clone_fix.patch().patched
    wrapper = getattr(keras.models, TARGET)
    assert keras_clone_fix.patch().patched
    assert getattr(keras.models, TARGET) is wrapper
    assert wrapper.__wrapped__ is original


@affected_only
def test_unpatch_puts_back_the_exact_original(restore_fix_state):
    import keras.models
    keras_clone_fix.unpatch()
    original = getattr(keras.models, TARGET)
    keras_clone_fix.patch()
    status = keras_clone_fix.unpatch()
    assert getattr(keras.models, TARGET) is original
    assert (status.patched, status.reason) == (False, "unpatched by keras_clone_fix.unpatch()")


@affected_only
def test_patch_and_unpatch_racing_from_many_threads(restore_fix_state):
    import keras.models
    keras_clone_fix.unpatch()
    original = getattr(keras.models, TARGET)
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
    assert getattr(keras.models, TARGET).__wrapped__ is original
    keras_clone_fix.unpatch()
    assert getattr(keras.models, TARGET) is original


@affected_only
def test_patch_unpatch_cycles_keep_the_original(restore_fix_state):
    import keras.models
    from clone_probe import clone_two_output_model
    keras_clone_fix.unpatch()
    original = getattr(keras.models, TARGET)
    for _ in range(3):
        assert keras_clone_fix.patch().patched
        assert getattr(keras.models, TARGET).__wrapped__ is original
        assert clone_two_output_model(keras.models.clone_model) == "ok"
        keras_clone_fix.unpatch()
        assert getattr(keras.models, TARGET) is original
        assert clone_two_output_model(keras.models.clone_model).startswith("AssertionError")


@affected_only
def test_reloading_the_package_keeps_one_wrapper(restore_fix_state):
    import keras.models
    keras_clone_fix.patch()
    wrapper = getattr(keras.models, TARGET)
    reload(keras_clone_fix)
    assert getattr(keras.models, TARGET) is wrapper and keras_clone_fix.status().patched


@affected_only
def test_unrecognised_version_is_skipped_unless_forced(restore_fix_state, monkeypatch):
    import keras
    keras_clone_fix.unpatch()
    monkeypatch.setattr(keras, "__version__", "2.2.4-custom")
    status = keras_clone_fix.patch()
    assert not status.patched and "'2.2.4-custom' is not a release" in status.reason
    assert keras_clone_fix.patch(force=True).patched


@keras_free_only
def test_patch_without_keras_says_so(restore_fix_state):
    status = keras_clone_fix.patch()
    assert (status.patched, status.keras_version) == (False, None)
    assert status.reason.startswith("keras cannot be imported")


def test_wraps_with_the_installed_wrapt():
    """The wrapt call itself, on wrapt 1.x and 2.x alike (keras-free envs too)."""
    import types

    import wrapt
    from test_fix_source import Layer, clone_like

    module = types.ModuleType("stand_in_for_keras_models")
    module._clone_functional_model = clone_like
    original, wrapper = _activation._wrap(module)
    assert original is clone_like and module._clone_functional_model is wrapper
    assert isinstance(wrapper, wrapt.FunctionWrapper) and wrapper.__wrapped__ is clone_like
    assert wrapper(Layer("m"), 2) == [("out", "m")] * 2


def unaffected_frontends():
    """keras >= 2.4 / Keras 3 and tf_keras, where installed."""
    if AFFECTED:
        return []
    return [name for name in ("keras", "tf_keras") if installed(name)]


@pytest.mark.parametrize("frontend", unaffected_frontends())
def test_unaffected_keras_is_untouched_and_clones(frontend):
    from keras_clone_fix._cli import check_clone
    status = keras_clone_fix.status()
    assert not status.patched and "not patched" in status.reason
    works, detail = check_clone(importlib.import_module(frontend))
    assert works, detail
