"""tf.keras of TensorFlow 2 (its own `tensorflow.keras`, not the keras
package): a model rebuilt from its config keeps each layer's calls in their
order. Two layers each called on the other's output (`first = s(x); again =
s(d(first)); add([s(first), d(again)])`), flat and nested, made by
`Model.from_config`, `model_from_json`, a save and load, and `clone_model`
(which rebuilds every model from its config from TensorFlow 2.0), in eager
mode (TensorFlow 2's default) and in graph mode. Runs wherever TensorFlow
2.0 - 2.15 is installed, patched and unpatched (where the release makes the
calls out of order, as measured, unpatched is a strict xfail), and on
tf_keras (the maintained Keras 2, TensorFlow 2.16+), the reference,
unpatched. The releases' own processes: activation at interpreter start and
the self-check.
"""

import importlib
import json

import pytest

from conftest import MODES, expect_upstream_failure, installed, run_python, run_python_once
from keras_clone_fix._affected import target_name, targets_for

if not installed("tensorflow"):
    pytest.skip("needs TensorFlow", allow_module_level=True)

import numpy  # noqa: E402
import tensorflow  # noqa: E402

TF = tuple(int(part) for part in tensorflow.__version__.split(".")[:2])
if (2, 0) <= TF < (2, 16):
    keras = tensorflow.keras
elif TF >= (2, 16) and installed("tf_keras"):  # tf.keras is Keras 3 there
    keras = importlib.import_module("tf_keras")
else:
    pytest.skip("needs tf.keras of TensorFlow 2.0 - 2.15, or tf_keras", allow_module_level=True)

# Measured on 2.0.4 and 2.1.4 (docs/releases.md); issue 44 measured 2.2 - 2.6
# wrong too, and 2.7 keeps the order (its loop stops at the first call that waits).
CALLS_OUT_OF_ORDER = keras is tensorflow.keras and TF < (2, 7)
# The reference, and the releases that compute right, run unpatched only.
CLONE_MODES = MODES if CALLS_OUT_OF_ORDER else MODES[1:]
BATCH = 4


@pytest.fixture(params=["eager", "graph"])
def mode(request):
    """TensorFlow 2's default, eager execution; and a graph of TensorFlow 1's kind."""
    if request.param == "eager":
        yield request.param
    else:
        with tensorflow.Graph().as_default():
            yield request.param
    keras.backend.clear_session()


def calls_in_a_cycle(nested):
    """s(x), d(s(x)), s(d(s(x))), s(s(x)), d(s(d(s(x)))): the config lists s
    before d, so s's third call is ready before its second. Nested: that
    model called in another."""
    L = keras.layers
    x = L.Input(shape=(3,))
    s, d = L.Dense(3, name="s"), L.Dense(3, name="d")
    first = s(x)
    again = s(d(first))
    cycle = keras.models.Model(x, L.add([s(first), d(again)]), name="cycle")
    if not nested:
        return cycle
    y = L.Input(shape=(3,))
    return keras.models.Model(y, L.Dense(1)(cycle(y)))


def with_weights(rebuilt, model):
    rebuilt.set_weights(model.get_weights())
    return rebuilt


REBUILDS = {
    "from_config": lambda model, path: with_weights(
        keras.models.Model.from_config(model.get_config()), model),
    "model_from_json": lambda model, path: with_weights(
        keras.models.model_from_json(model.to_json()), model),
    "saved and loaded": lambda model, path: (model.save(path), keras.models.load_model(path))[1],
    "clone_model": lambda model, path: with_weights(keras.models.clone_model(model), model),
}


@pytest.mark.parametrize("rebuild", sorted(REBUILDS))
@pytest.mark.parametrize("nested", [False, True], ids=["flat", "nested"])
@pytest.mark.parametrize("clone_mode", CLONE_MODES, indirect=True)
def test_layer_calls_keep_their_order(request, clone_mode, mode, rebuild, nested, tmp_path):
    """The rebuilt model predicts what the model predicts; unpatched, the
    release wires the calls after the one that waited to the wrong ones,
    silently."""
    expect_upstream_failure(request, clone_mode, CALLS_OUT_OF_ORDER,
                            "a layer's calls made out of order on tensorflow {}".format(
                                tensorflow.__version__))
    model = calls_in_a_cycle(nested)
    model.set_weights([numpy.random.RandomState(1).normal(size=weights.shape)
                       for weights in model.get_weights()])
    data = numpy.random.RandomState(0).normal(size=(BATCH, 3))
    rebuilt = REBUILDS[rebuild](model, str(tmp_path / "model.h5"))
    numpy.testing.assert_allclose(rebuilt.predict(data), model.predict(data),
                                  rtol=1e-5, atol=1e-6)


def patched_names():
    return [target_name(target) for target in targets_for("tensorflow", tensorflow.__version__)]


@pytest.mark.skipif(not CALLS_OUT_OF_ORDER, reason="nothing to patch")
def test_import_tensorflow_is_patched_at_interpreter_start():
    """The installed .pth patches tf.keras once `import tensorflow` runs."""
    finished = run_python(["-c", "import json, tensorflow, keras_clone_fix; "
                                 "print(json.dumps(keras_clone_fix.status().as_dict()))"])
    status = json.loads(finished.stdout.splitlines()[-1])
    tf_targets = dict((name, fixed) for name, fixed in status["targets"].items()
                      if name.startswith("tensorflow."))
    assert tf_targets == dict.fromkeys(patched_names(), True) and tf_targets
    assert status["activated_by"] == ".pth at interpreter start"


def self_check(env=None):
    """The exit status, the JSON report, and its tf.keras section."""
    finished = run_python_once(["-m", "keras_clone_fix", "--json"], env=env)
    report = json.loads(finished.stdout)
    (made,) = [made for made in report["models"] if made["family"] == "tf.keras"]
    return finished.returncode, report, made


@pytest.mark.skipif(not CALLS_OUT_OF_ORDER, reason="nothing to patch")
@pytest.mark.parametrize("fix", ["on", "off"])
def test_self_check_proves_tf_keras(fix):
    """Its built-in model here: the cycle, nested, whose clone is wrong
    without the fix."""
    code, report, made = self_check(env={"KERAS_CLONE_FIX": "0"} if fix == "off" else None)
    assert made["tensorflow"] == tensorflow.__version__
    if fix == "on":
        assert code == 0 and report["result"] == "ok" and made["ok"] is True
        assert made["checks"]["clone"]["patched"]["result"] == "ok"
    else:
        assert code == 1 and report["result"] == "FAILED" and made["ok"] is False
        assert made["checks"]["clone"]["unpatched"]["result"] == "wrong"
