"""tf.keras of TensorFlow 2 and the keras package 2.4 - 2.15 (a front for
tf.keras on 2.4; on 2.5, keras-nightly, which TensorFlow 2.5 installs, a
copy of it; tf.keras itself from 2.6): a model made from its config, and a
clone on given input tensors. Runs where TensorFlow 2.0 - 2.15 is
installed (with the keras package 2.4 - 2.15 beside it, both families), and
on tf_keras 2.21, the reference, which must pass unpatched.

Each case runs patched and unpatched; where the release has the bug
(BROKEN, as measured), unpatched is a strict xfail. TensorFlow 2 runs
eagerly: every case runs again in a new interpreter with eager execution
off (test_every_case_holds_in_graph_mode).
"""

import importlib
import json
import os

import pytest

from conftest import (
    GRAPH_MODE, expect_upstream_failure, fix_in_mode, installed, run_pytest, run_python,
    run_python_once, tf2_families)
from keras_clone_fix import _check
from keras_clone_fix._affected import fronted_family, target_name, targets_for

FAMILIES = tf2_families(keras_package=True)
if not FAMILIES:
    pytest.skip("needs tf.keras of TensorFlow 2.0 - 2.15, or tf_keras", allow_module_level=True)

import numpy  # noqa: E402 (only where keras is, after the skip)

import nested_custom_models  # noqa: E402
from keras_clone_fix._builtin_model import calls_in_a_cycle  # noqa: E402

# Which releases each case fails on unpatched, measured on TensorFlow 2.0.4,
# 2.1.4, 2.2.3, 2.3.4 (tf.keras and keras 2.4.3), 2.4.4, 2.5.3, 2.6.5 (keras
# 2.6.0) and right on 2.7.4 (keras 2.7.0) and tf_keras 2.21; a bound between
# those is where the code changed.
BROKEN = {
    "calls out of order": lambda release: (2, 0) <= release < (2, 7),
    "clone on given inputs": lambda release: (2, 0) <= release < (2, 7),
    # Unknown layer: Twice. Keras 2.7 on and tf_keras raise too (not patched).
    "custom layer in a nested model": lambda release: (2, 0) <= release < (2, 7),
}
BATCH = 4


def patched_here(keras):
    """The targets patched where this family's release runs."""
    return [target_name(target) for target in targets_for(*_check.release_of(keras))]


@pytest.fixture(params=[pytest.param((family, mode), id="{} {}".format(family[0], mode),
                                     marks=[pytest.mark.unpatched] if mode == "unpatched" else [])
                        for family in FAMILIES
                        for mode in (("patched", "unpatched") if patched_here(family[1])
                                     else ("unpatched",))])
def family(request):
    """(keras module, release, mode): the fix on, then off, where the
    release is patched; off only elsewhere (2.7 on, the reference)."""
    (_, keras, release), mode = request.param
    with fix_in_mode(mode):
        yield keras, release, mode
    keras.backend.clear_session()


def expect(request, family, case, raises=AssertionError):
    keras, release, mode = family
    expect_upstream_failure(request, mode, release is not None and BROKEN[case](release),
                            "{} on {}".format(case, _check.release_name(keras)), raises)


def cycle(keras, nested):
    """Two layers each called on the other's output: flat, or inside a
    nested model (calls_in_a_cycle)."""
    if nested:
        return calls_in_a_cycle(keras)
    L = keras.layers
    x = L.Input(shape=(3,))
    s, d = L.Dense(3, name="s"), L.Dense(3, name="d")
    first = s(x)
    again = s(d(first))
    return keras.models.Model(x, L.add([s(first), d(again)]))


def from_config(keras, model, path):
    return keras.models.Model.from_config(model.get_config())


def from_json(keras, model, path):
    return keras.models.model_from_json(model.to_json())


def cloned(keras, model, path):
    return keras.models.clone_model(model)


def saved_and_loaded(keras, model, path):
    model.save(path)
    return keras.models.load_model(path)


REBUILDS = [from_config, from_json, cloned, saved_and_loaded]


@pytest.mark.parametrize("nested", [False, True], ids=["flat", "nested"])
@pytest.mark.parametrize("rebuild", REBUILDS, ids=[rebuild.__name__ for rebuild in REBUILDS])
def test_layer_calls_keep_their_order(request, family, rebuild, nested, tmp_path):
    """The model rebuilt from its config predicts what the model predicts."""
    expect(request, family, "calls out of order")
    keras = family[0]
    model = cycle(keras, nested)
    rebuilt = rebuild(keras, model, str(tmp_path / "model.h5"))
    rebuilt.set_weights(model.get_weights())
    data = numpy.random.RandomState(0).normal(size=(BATCH, 3))
    numpy.testing.assert_allclose(rebuilt.predict(data), model.predict(data), rtol=1e-6, atol=1e-6)


def test_clone_on_given_inputs(request, family, tmp_path):
    """clone_model(model, input_tensors=[Input(...)]) is built on the given
    Input: a model from it to the clone's output predicts what the model
    predicts, and so does that model saved and loaded."""
    expect(request, family, "clone on given inputs", raises=ValueError)  # Graph disconnected
    keras = family[0]
    L = keras.layers
    x = L.Input(shape=(3,))
    model = keras.models.Model(x, L.Dense(2)(L.Dense(4, activation="relu")(x)))
    given = L.Input(shape=(3,), name="given")
    clone = keras.models.clone_model(model, input_tensors=[given])
    clone.set_weights(model.get_weights())
    rebuilt = keras.models.Model(given, clone.output)
    path = str(tmp_path / "clone.h5")
    rebuilt.save(path)
    data = numpy.random.RandomState(0).normal(size=(BATCH, 3))
    for made in (rebuilt, keras.models.load_model(path)):
        numpy.testing.assert_allclose(made.predict(data), model.predict(data),
                                      rtol=1e-6, atol=1e-6)


@pytest.mark.skipif(not installed("tensorflow_estimator"),
                    reason="needs tensorflow_estimator (TensorFlow 2.0 - 2.15)")
def test_model_to_estimator_predicts_what_the_model_predicts(request, family, tmp_path):
    """tf.keras's model_to_estimator clones the model in the estimator's
    model_fn: its predictions are the model's, for a nested model of a
    layer's calls in a cycle (each of the model's layers made once in
    TensorFlow's graph: the models made before it are not used after)."""
    keras = family[0]
    skip_where_the_estimator_refuses(keras)
    expect(request, family, "calls out of order")
    assert_the_estimator_predicts_what_the_model_predicts(
        calls_in_a_cycle(keras), numpy.random.RandomState(0).normal(size=(BATCH, 3)).astype(
            "float32"), tmp_path)


def skip_where_the_estimator_refuses(keras):
    if keras.__name__ == "keras" and _check.api_version(keras)[:2] == (2, 5):
        pytest.skip("TensorFlow 2.5's model_to_estimator clones with tf.keras, which refuses the "
                    "keras package 2.5's models (a copy of tf.keras), fix or no fix (measured)")


def assert_the_estimator_predicts_what_the_model_predicts(model, data, tmp_path):
    """model_to_estimator of `model` (compiled here: it refuses a model not
    compiled), whose model_fn clones it, predicts on `data` what it does."""
    tensorflow = importlib.import_module("tensorflow")
    model.compile("sgd", "mse")
    expected = model.predict(data)
    estimator = tensorflow.keras.estimator.model_to_estimator(keras_model=model,
                                                              model_dir=str(tmp_path))
    given = tensorflow.compat.v1.estimator.inputs.numpy_input_fn({model.input_names[0]: data},
                                                                 shuffle=False)
    got = [row[model.output_names[0]] for row in estimator.predict(given)]
    numpy.testing.assert_allclose(numpy.array(got), expected, rtol=1e-6, atol=1e-6)

def patched_where_broken(family, build, clone):
    """A model of `build`, on a release the fix patches; on another (keras
    2.7 on, tf_keras), whose clone() of such a model raises too, a skip."""
    keras, release, mode = family
    model = build(keras)
    if release is None or not BROKEN["custom layer in a nested model"](release):
        nested_custom_models.skip_where_not_patched(keras, lambda: clone(model))
    return model


@pytest.mark.parametrize("build", nested_custom_models.BUILDS,
                         ids=[build.__name__ for build in nested_custom_models.BUILDS])
def test_a_nested_model_is_cloned_with_its_layers_own_classes(request, family, build):
    """clone_model of a model holding a model with a custom layer registered
    nowhere, and the clone's clone: new weights, the same layers by name and
    class, the same trainable weights, exactly the model's predictions
    (tests/test_faithful_clones.py's test of the same name, on TensorFlow 2)."""
    keras = family[0]
    model = patched_where_broken(family, build, keras.models.clone_model)
    expect(request, family, "custom layer in a nested model", raises=ValueError)
    clone = nested_custom_models.cloned(model, keras.models.clone_model)
    nested_custom_models.assert_copies_are_the_model(keras, model, [
        (clone, None), (nested_custom_models.cloned(clone, keras.models.clone_model), None)])


def test_a_layer_its_config_cannot_make_raises_what_the_release_raises(request, family):
    keras = family[0]
    patched_where_broken(family, nested_custom_models.nested, keras.models.clone_model)
    expect(request, family, "custom layer in a nested model")
    nested_custom_models.assert_unmade_layer_raises_what_the_release_raises(
        keras, keras.models.clone_model)


def test_a_clone_function_is_applied_as_the_release_applies_it(family):
    keras = family[0]
    patched_where_broken(family, nested_custom_models.nested, keras.models.clone_model)
    nested_custom_models.assert_a_clone_function_is_applied_as_given(
        keras, keras.models.clone_model)


@pytest.mark.skipif(not installed("tensorflow_estimator"),
                    reason="needs tensorflow_estimator (TensorFlow 2.0 - 2.15)")
def test_model_to_estimator_of_a_nested_custom_layer(request, family, tmp_path):
    """model_to_estimator of a model holding a model with a custom layer
    registered nowhere (tensorflow#18756): the estimator's model_fn clones
    it, and predicts what the model predicts."""
    keras = family[0]
    skip_where_the_estimator_refuses(keras)
    release = family[1]
    if release is None or not BROKEN["custom layer in a nested model"](release):
        pytest.skip("not patched: its clone raises too "
                    "(test_a_nested_model_is_cloned_with_its_layers_own_classes)")
    expect(request, family, "custom layer in a nested model", raises=ValueError)
    model = nested_custom_models.nested(keras)
    assert_the_estimator_predicts_what_the_model_predicts(
        model, nested_custom_models.inputs_of(model), tmp_path)


@pytest.mark.skipif(bool(os.environ.get(GRAPH_MODE)), reason="runs the graph mode itself")
def test_every_case_holds_in_graph_mode(tmp_path):
    """This module's cases, in a new interpreter with eager execution off:
    the same outcomes (strict xfails unpatched where BROKEN)."""
    here = os.path.dirname(os.path.abspath(__file__))
    finished = run_python(["-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "not activation",
                           "--rootdir", here, os.path.abspath(__file__), "-k",
                           "test_layer_calls_keep_their_order or test_clone_on_given_inputs"],
                          env={GRAPH_MODE: "1", "PYTEST_ADDOPTS": None}, cwd=here)
    summary = finished.stdout.strip().splitlines()[-1]
    assert finished.returncode == 0 and " failed" not in summary, finished.stdout + finished.stderr


# --- check on this release's own files ---------------------------------------

CHECKED = [family for family in FAMILIES if family[2] is not None]


def masked_average(keras):
    """Masking, then a layer whose call takes the mask: what TensorFlow 2.0 -
    2.1's SavedModel loader computes without the mask (tensorflow#38620)."""
    L = keras.layers
    x = L.Input(shape=(5, 2))
    return keras.models.Model(x, L.Dense(1)(L.GlobalAveragePooling1D(name="average")(
        L.Masking()(x))))


def saved_masks_lost(release):
    """Whether masked_average loads from a SavedModel folder without its mask,
    without the fix: measured on TensorFlow 2.0.4 (0.908 off) and 2.1.4;
    right from 2.2."""
    return release < (2, 2)


def saved_cycle_load(release):
    """The load of the nested cycle from a SavedModel folder without the fix,
    as measured: TensorFlow 2.0's loader revives the calls traced when it was
    saved (2.0.4: right); 2.1's cannot load a model holding a functional
    model (tensorflow#33870: an error); 2.2 - 2.6 make it from its config
    (2.3.4: 8.4 off)."""
    return "ok" if release < (2, 1) else "error" if release < (2, 2) else "wrong"


@pytest.mark.parametrize("name, keras, release", CHECKED, ids=[name for name, _, _ in CHECKED])
def test_check_names_the_risk_and_shows_the_load_wrong(name, keras, release, tmp_path):
    """`check` of models saved by this release as .h5 and as a SavedModel
    folder (one run checks the four), with the fix every check ok, exit 0:
    a model of calls in a cycle, its layer named at risk and, without the
    fix, the load wrong where the release is BROKEN (as a folder: as its
    SavedModel loader gets it, saved_cycle_load; "not affected" only where it
    is not); a masked model, at risk only as a folder (the SavedModel
    loader's risk, endangering its load alone) where that loader loses
    masks, and its load wrong there without the fix."""
    paths = []
    for made in (calls_in_a_cycle, masked_average):
        model = made(keras)
        for path in (str(tmp_path / (made.__name__ + ".h5")), str(tmp_path / made.__name__)):
            model.save(path)
            paths.append(path)
    keras.backend.clear_session()
    finished = run_python(["-m", "keras_clone_fix", "check", "--json"] + paths + (
        ["--tf-keras"] if name == "tf.keras" else ["--keras"]))
    report = json.loads(finished.stdout)
    assert finished.returncode == 0 and report["ok"] is True, finished.stdout + finished.stderr
    made = report["models"]
    assert [(each["model"], each["weights"]) for each in made] == [
        (path, "a SavedModel folder, weights from it" if index % 2 else
         "weights from the model file") for index, path in enumerate(paths)]
    for each in made:
        assert all(got["patched"]["result"] in ("ok", "unavailable")
                   for got in each["checks"].values())
    for each, unpatched_load in zip(made, ("wrong", saved_cycle_load(release))):
        checks = each["checks"]
        if not BROKEN["calls out of order"](release):
            assert each["affected"] is False or "unpatched" not in checks["load"]
            continue
        assert each["affected"] is True and "not affected" not in each["reason"]
        assert [at for at in each["risks"] if at["layer"] == "cycle/s"], each["risks"]
        assert checks["load"]["unpatched"]["result"] == unpatched_load, (
            each["model"], checks["load"])
    from_file, from_folder = made[2:]
    assert from_file["risks"] == []
    if not saved_masks_lost(release):
        assert from_folder["risks"] == []
        return
    assert [(at["layer"], at["checks"]) for at in from_folder["risks"]] == [("average", ["load"])]
    assert from_folder["checks"]["load"]["unpatched"]["result"] == "wrong"


def test_check_refuses_a_saved_model_whose_lambda_holds_code(tmp_path):
    """Read before anything from the folder runs: a Lambda's code (in the
    Keras metadata, a tuple written as {"class_name": "__tuple__"}) is named,
    exit 2, unless --no-safe-mode."""
    keras = FAMILIES[0][1]
    path = str(tmp_path / "lambda")
    keras.models.Sequential([keras.layers.Lambda(lambda x: x * 2.0, input_shape=(3,),
                                                 name="doubled")]).save(path)
    keras.backend.clear_session()
    finished = run_python(["-m", "keras_clone_fix", "check", path])
    assert finished.returncode == 2 and finished.stderr == (
        "python -m keras_clone_fix check: {}: not loaded, as its Lambda layer doubled holds "
        "Python code that loading would run; give --no-safe-mode if you trust the file\n".format(
            path)), finished.stderr


def test_check_refuses_a_saved_model_that_keras_did_not_write(tmp_path):
    """A SavedModel of a tf.Module: one line saying what it is, exit 2."""
    tensorflow = importlib.import_module("tensorflow")
    path = str(tmp_path / "module")
    tensorflow.saved_model.save(tensorflow.Module(), path)
    finished = run_python(["-m", "keras_clone_fix", "check", path])
    assert finished.returncode == 2 and finished.stderr == (
        "python -m keras_clone_fix check: {} is a SavedModel but not of a Keras model (written "
        "by tf.saved_model.save, not model.save()?): load_model cannot make a Keras model of "
        "it\n".format(path)), finished.stderr


# --- activation: the .pth at interpreter start, import, the pytest fixture --

PATCHED_HERE = patched_here(FAMILIES[0][1])
needs_a_patched_release = pytest.mark.skipif(not PATCHED_HERE, reason="nothing patched here")


@pytest.mark.activation
@needs_a_patched_release
def test_tf_keras_is_patched_at_interpreter_start():
    """`import tensorflow` and a use of tf.keras, nothing else: the installed
    .pth patches what tf.keras runs (from 2.6, the keras package it imports)."""
    finished = run_python(["-c", "import json, tensorflow; tensorflow.keras.models; "
                                 "import keras_clone_fix; "
                                 "print(json.dumps(keras_clone_fix.status().as_dict()))"])
    status = json.loads(finished.stdout.splitlines()[-1])
    assert status["activated_by"] == ".pth at interpreter start"
    assert {name: status["targets"].get(name) for name in PATCHED_HERE} == dict.fromkeys(
        PATCHED_HERE, True), status


@pytest.mark.activation
@pytest.mark.skipif(not installed("tensorflow") or fronted_family(
    "tensorflow", importlib.import_module("tensorflow").__version__) != "keras",
    reason="needs TensorFlow 2.6 - 2.15, whose tf.keras is the keras package")
def test_status_waits_for_the_keras_package_that_tf_keras_imports_when_used():
    """Right after `from tensorflow import keras`, which imports the keras
    package only when first used, status() says the fix waits for it (as
    before any import), not that TensorFlow is not patched; once used, the
    keras package's release decides."""
    finished = run_python(["-c", "import json, sys, keras_clone_fix; "
                                 "from tensorflow import keras; "
                                 "before = keras_clone_fix.status(), 'keras' in sys.modules; "
                                 "keras.models; after = keras_clone_fix.status(); "
                                 "print(json.dumps([before[0].as_dict(), before[1], "
                                 "after.as_dict()]))"])
    before, imported, after = json.loads(finished.stdout.splitlines()[-1])
    assert not imported and before["patched"] is False and before["reason"].endswith(
        "its tf.keras is the keras package; waiting for `import keras`"), before
    assert after["patched"] is bool(PATCHED_HERE) and "waiting" not in after["reason"] and \
        after["reason"].startswith("keras " + after["keras_version"]), after


@pytest.mark.activation
@needs_a_patched_release
def test_import_keras_clone_fix_patches():
    """With the .pth switched off: `import keras_clone_fix` then patch()."""
    finished = run_python(["-c", "import json, tensorflow, keras_clone_fix; "
                                 "tensorflow.keras.models; "
                                 "print(json.dumps(keras_clone_fix.patch().as_dict()))"],
                          env={"KERAS_CLONE_FIX": "0"})
    status = json.loads(finished.stdout.splitlines()[-1])
    assert status["patched"] and set(PATCHED_HERE) <= set(status["targets"]), status


USES_THE_FIXTURE = u"""
import numpy
import tensorflow

import keras_clone_fix
from keras_clone_fix._builtin_model import calls_in_a_cycle


def cycle_loads_right():
    keras = tensorflow.keras
    model = calls_in_a_cycle(keras)
    rebuilt = keras.models.Model.from_config(model.get_config())
    rebuilt.set_weights(model.get_weights())
    data = numpy.ones((2, 3))
    return numpy.allclose(rebuilt.predict(data), model.predict(data), atol=1e-6)


def test_before():
    assert not keras_clone_fix.status().patched and not cycle_loads_right()


def test_with_the_fixture(keras_clone_fix):
    assert keras_clone_fix.patched and cycle_loads_right()


def test_after():
    assert not keras_clone_fix.status().patched and not cycle_loads_right()
"""


@pytest.mark.activation
@pytest.mark.skipif(not (FAMILIES[0][2] and BROKEN["calls out of order"](FAMILIES[0][2])),
                    reason="needs a release that makes a layer's calls out of order")
def test_pytest_fixture_patches_only_inside_its_test(tmp_path):
    # The session's PYTEST_ADDOPTS names this file: not the user's run's.
    finished = run_pytest(tmp_path, USES_THE_FIXTURE,
                          env={"KERAS_CLONE_FIX": "0", "PYTEST_ADDOPTS": None})
    assert "3 passed" in finished.stdout, finished.stdout + finished.stderr


@pytest.mark.skipif(not PATCHED_HERE, reason="nothing patched here")
@pytest.mark.parametrize("fix", ["on", "off"])
def test_self_check_shows_the_release_wrong_and_the_fix_right(fix):
    """The self-check's built-in model here (_builtin_model: the calls in a
    cycle, nested): every check ok with the fix, exit 0; without it a check
    wrong, exit 1."""
    finished = run_python_once(["-m", "keras_clone_fix", "--json"],
                               env={"KERAS_CLONE_FIX": "0"} if fix == "off" else None)
    report = json.loads(finished.stdout)
    if fix == "on":
        assert finished.returncode == 0 and report["result"] == "ok", finished.stdout
        return
    results = [check["unpatched"]["result"] for made in report["models"]
               for check in made["checks"].values() if "unpatched" in check]
    assert finished.returncode == 1 and "wrong" in results, finished.stdout
