"""tf.keras of TensorFlow 1.x (not the `keras` package): models called on
new tensors and cloned. Runs where TensorFlow 1.4 - 1.15 is installed (all
patched; 1.15 for its clone routine and from_config only). Each case runs
patched and unpatched;
where the release has the bug (BROKEN, as measured), unpatched is a strict
xfail.
"""

import importlib
import json

import pytest

import keras_clone_fix
from conftest import (
    expect_upstream_failure, installed, run_pytest, run_python, run_python_once)
from keras_clone_fix import _check
from keras_clone_fix._affected import target_name, targets_for

if not installed("tensorflow"):
    pytest.skip("needs TensorFlow", allow_module_level=True)

import numpy  # noqa: E402
import tensorflow  # noqa: E402

import nested_custom_models  # noqa: E402

TF = tuple(int(part) for part in tensorflow.__version__.split(".")[:2])
if not (1, 4) <= TF < (2, 0):
    pytest.skip("needs tf.keras of TensorFlow 1.4 - 1.15", allow_module_level=True)

keras = tensorflow.keras
# 1.15 copies the call arguments itself: its calling routine is not patched.
CALLING_ROUTINE_PATCHED = TF < (1, 15)
# The self-check's check that its built-in model fails unpatched: the
# masked encoder called twice, on 1.15 the nested cycle cloned.
SHOWN_BY = "called_twice" if CALLING_ROUTINE_PATCHED else "clone"
# Which releases each case fails on unpatched: measured on 1.4, 1.5, 1.8,
# 1.10, 1.12, 1.13, 1.14 and 1.15 (a bound between those is where the code
# changed). 1.4's RNN takes initial_state from its arguments only.
BROKEN = {
    "shared model": TF < (1, 15),
    "two-output model nested": TF < (1, 9),  # 1.9 expands a None mask
    "two-output model cloned": TF < (1, 11),  # 1.11's clone routine keeps no masks
    "seq2seq nested": (1, 5) <= TF < (1, 11),
    "seq2seq cloned": (1, 5) <= TF < (1, 13),
    "masked clone cloned": TF < (1, 10),
    # Measured on 1.4, 1.5, 1.10, 1.12, 1.13, 1.14 and 1.15 (nested right on
    # 1.15; cloned: Graph disconnected there).
    "tensor keyword nested": TF < (1, 15),
    "tensor keyword cloned": True,
    # 1.11 - 1.13 call each layer's `call` on the states as inputs; 1.14
    # calls the layer on them and passes initial_state again.
    "bidirectional seq2seq nested": (1, 10) <= TF < (1, 11) or TF == (1, 14),
    "bidirectional seq2seq cloned": (1, 10) <= TF < (1, 15),
    # Unknown layer: the clone makes a nested model from its config (1.14, 1.15).
    "custom layer in a nested model cloned": True,
}
# Bidirectional with initial_state: TensorFlow 1.4 and 1.5 cannot build it,
# fix or no fix ('list' object has no attribute 'get_shape'); 1.6 - 1.9 not measured.
BIDIRECTIONAL_STATES = TF >= (1, 10)
# The tensors of the original graph passed back: TensorFlow refuses to run
# (1.15's clone routine: the clone's Model refuses them, Graph disconnected).
FAILURES = (AssertionError, tensorflow.errors.InvalidArgumentError, ValueError)
STEPS = 6


@pytest.fixture(autouse=True)
def fresh_graph():
    yield
    keras.backend.clear_session()


def clone_model(model):
    """tf.keras's clone_model, exported from 1.11; model_to_estimator's
    before, where it lives in tf.keras's models module."""
    for module in ("tensorflow.python.keras._impl.keras.models", "tensorflow.python.keras.models"):
        try:
            clone_model = importlib.import_module(module).clone_model
        except (ImportError, AttributeError):  # 1.5's keras.models exports no clone_model
            continue
        clone = clone_model(model)
        clone.set_weights(model.get_weights())
        return clone
    raise AssertionError("no clone_model in TensorFlow " + tensorflow.__version__)


def expect(request, clone_mode, case):
    expect_upstream_failure(request, clone_mode, BROKEN[case],
                            "{} on tensorflow {}".format(case, tensorflow.__version__),
                            raises=FAILURES)


def assert_same_predictions(got, want):
    for got_one, want_one in zip(got if isinstance(got, list) else [got],
                                 want if isinstance(want, list) else [want]):
        numpy.testing.assert_allclose(got_one, want_one, rtol=1e-5, atol=1e-6)


def tokens():
    return keras.layers.Input(shape=(STEPS,), dtype="int32")


def masked_encoder():
    """Embedding(mask_zero) -> LSTM called with training=False: its node
    keeps a dict of call arguments, which the rebuild wrote each call's mask into."""
    x = tokens()
    embedded = keras.layers.Embedding(20, 4, mask_zero=True)(x)
    return keras.models.Model(x, keras.layers.LSTM(3)(embedded, training=False))


def padded_tokens(seed):
    """Token ids, rows zero-padded at the end by different lengths."""
    random = numpy.random.RandomState(seed)
    rows = random.randint(1, 20, size=(4, STEPS))
    for row, length in zip(rows, random.randint(1, STEPS, size=4)):
        row[length:] = 0
    return rows


def two_output_model():
    """A Lambda with two outputs and no mask: compute_mask returns one None."""
    x = keras.layers.Input(shape=(3,))
    return keras.models.Model(x, keras.layers.Lambda(lambda t: [t, 2 * t])(x))


def seq2seq():
    """The encoder's states are the decoder's initial_state."""
    source, target = keras.layers.Input(shape=(STEPS, 3)), keras.layers.Input(shape=(STEPS, 3))
    _, state_h, state_c = keras.layers.LSTM(4, return_state=True)(source)
    decoded = keras.layers.LSTM(4)(target, initial_state=[state_h, state_c])
    return keras.models.Model([source, target], decoded)


def sequences():
    random = numpy.random.RandomState(2)
    return [random.rand(2, STEPS, 3), random.rand(2, STEPS, 3)]


class Attend(keras.layers.Layer):
    """A custom layer called with a tensor keyword argument."""

    def call(self, inputs, attention_mask=None):
        return inputs * attention_mask

    def compute_output_shape(self, input_shape):
        return input_shape


def attending():
    """`Attend()(x, attention_mask=w)`, `w` an input of the model."""
    x, w = keras.layers.Input(shape=(3,)), keras.layers.Input(shape=(3,))
    return keras.models.Model([x, w], Attend()(x, attention_mask=w))


def bidirectional_seq2seq():
    """The four states of a Bidirectional encoder are its decoder's initial_state."""
    source, target = keras.layers.Input(shape=(STEPS, 3)), keras.layers.Input(shape=(STEPS, 3))
    states = keras.layers.Bidirectional(keras.layers.LSTM(4, return_state=True))(source)[1:]
    decoder = keras.layers.Bidirectional(keras.layers.LSTM(4, return_sequences=True))
    return keras.models.Model([source, target], decoder(target, initial_state=states))


def nested(model):
    """`model` called on new inputs, in a new model."""
    inputs = [keras.layers.Input(shape=tuple(int(size) for size in tensor.shape[1:]))
              for tensor in model.inputs]
    return keras.models.Model(inputs, model(inputs))


def test_shared_masked_model_called_twice_uses_each_calls_own_mask(request, clone_mode):
    """The two sides of a siamese network: unpatched, the second call used
    the first call's mask, silently."""
    expect(request, clone_mode, "shared model")
    encoder = masked_encoder()
    first, second = tokens(), tokens()
    siamese = keras.models.Model([first, second], [encoder(first), encoder(second)])
    data = [padded_tokens(0), padded_tokens(1)]
    assert_same_predictions(siamese.predict(data),
                            [encoder.predict(data[0]), encoder.predict(data[1])])


def test_two_output_model_nested(request, clone_mode):
    """Unpatched before 1.9: Could not compute output."""
    expect(request, clone_mode, "two-output model nested")
    inner = two_output_model()
    x = keras.layers.Input(shape=(3,))
    outer = keras.models.Model(x, inner(x))
    data = numpy.arange(6.0).reshape(2, 3)
    assert_same_predictions(outer.predict(data), inner.predict(data))


def test_two_output_model_cloned(request, clone_mode):
    """Unpatched before 1.11: Could not compute output."""
    expect(request, clone_mode, "two-output model cloned")
    model = two_output_model()
    data = numpy.arange(6.0).reshape(2, 3)
    assert_same_predictions(clone_model(model).predict(data), model.predict(data))


def test_seq2seq_nested(request, clone_mode):
    """Unpatched on 1.5 - 1.10: You must feed a value for placeholder tensor."""
    expect(request, clone_mode, "seq2seq nested")
    model = seq2seq()
    source, target = keras.layers.Input(shape=(STEPS, 3)), keras.layers.Input(shape=(STEPS, 3))
    outer = keras.models.Model([source, target], model([source, target]))
    data = sequences()
    assert_same_predictions(outer.predict(data), model.predict(data))


def test_seq2seq_cloned(request, clone_mode):
    """Unpatched on 1.5 - 1.12: an AssertionError in the RNN's _standardize_args
    (tensorflow#21614, met through model_to_estimator)."""
    expect(request, clone_mode, "seq2seq cloned")
    model = seq2seq()
    data = sequences()
    assert_same_predictions(clone_model(model).predict(data), model.predict(data))


def test_seq2seq_through_model_to_estimator(request, clone_mode, tmp_path):
    """How TensorFlow 1.x users meet the clone routine: the estimator's
    model_fn clones the model (tensorflow#21614)."""
    expect(request, clone_mode, "seq2seq cloned")
    model = seq2seq()
    model.compile("sgd", "mse")
    data = [part.astype("float32") for part in sequences()]
    expected = model.predict(data)  # the weights the estimator starts from are the session's
    estimator = keras.estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    features = tensorflow.estimator.inputs.numpy_input_fn(
        dict(zip(model.input_names, data)), batch_size=len(data[0]), shuffle=False)
    predicted = [list(prediction.values())[0] for prediction in estimator.predict(features)]
    assert_same_predictions(numpy.array(predicted), expected)


def test_nested_custom_layer_through_model_to_estimator(request, clone_mode, tmp_path):
    """model_to_estimator of a model holding a model with a custom layer
    registered nowhere (tensorflow#18756): the estimator's model_fn clones
    it, and predicts what the model predicts."""
    expect(request, clone_mode, "custom layer in a nested model cloned")
    model = nested_custom_models.nested(keras)
    model.compile("sgd", "mse")
    data = nested_custom_models.inputs_of(model)
    expected = model.predict(data)
    estimator = keras.estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    features = tensorflow.estimator.inputs.numpy_input_fn(
        {model.input_names[0]: data}, batch_size=len(data), shuffle=False)
    predicted = [list(prediction.values())[0] for prediction in estimator.predict(features)]
    assert_same_predictions(numpy.array(predicted), expected)


def test_masked_clone_cloned_again(request, clone_mode):
    """Unpatched before 1.10, the clone's nodes kept the masks of the graph
    it was cloned from: You must feed a value for placeholder tensor."""
    expect(request, clone_mode, "masked clone cloned")
    encoder = masked_encoder()
    clone = clone_model(encoder)
    data = padded_tokens(3)
    assert_same_predictions([clone.predict(data), clone_model(clone).predict(data)],
                            [encoder.predict(data)] * 2)


REBUILT = pytest.mark.parametrize("rebuilt, how", [(nested, "nested"), (clone_model, "cloned")],
                                  ids=["nested", "cloned"])


@REBUILT
def test_tensor_keyword_argument(request, clone_mode, rebuilt, how):
    """The new call computes from its own `w`; unpatched it passes the
    original's: You must feed a value for placeholder tensor."""
    expect(request, clone_mode, "tensor keyword " + how)
    model = attending()
    # check's engine names it (the calling routine and the clone's are patched
    # for it; on 1.15 the clone's only).
    checks = ["clone", "clone_of_clone", "nested", "called_twice", "multi_gpu",
              "original_unchanged"] if CALLING_ROUTINE_PATCHED else [
        "clone", "clone_of_clone", "multi_gpu", "original_unchanged"]
    # Up to 1.14 the model's config leaves it out (with the fix, it keeps it aside).
    assert [(what, found) for _, what, found in _check.risks(keras, model)] == [
        ("called with tensor arguments: attention_mask", checks)] + ([
            ("called with tensor arguments that a model's config leaves out: attention_mask",
             ["load", "from_config"])] if CALLING_ROUTINE_PATCHED else [])
    random = numpy.random.RandomState(4)
    data = [random.rand(2, 3), random.rand(2, 3)]
    assert_same_predictions(rebuilt(model).predict(data), model.predict(data))


@pytest.mark.skipif(not BIDIRECTIONAL_STATES, reason="TensorFlow " + tensorflow.__version__ +
                    " cannot build Bidirectional with initial_state, fix or no fix")
@REBUILT
def test_bidirectional_seq2seq(request, clone_mode, rebuilt, how):
    """Unpatched: an AssertionError in the RNN's _standardize_args (the
    states given as inputs and as initial_state), or the original's states."""
    expect(request, clone_mode, "bidirectional seq2seq " + how)
    model = bidirectional_seq2seq()
    data = sequences()
    assert_same_predictions(rebuilt(model).predict(data), model.predict(data))


def test_status_names_what_is_patched_in_both_families(restore_fix_state):
    """Where the keras package is installed too, one patch() patches both."""
    status = keras_clone_fix.patch()
    names = [target_name(target) for target in targets_for("tensorflow", tensorflow.__version__)]
    keras_names = [target_name(target) for target in targets_for("keras", status.keras_version)]
    assert status.tensorflow_version == tensorflow.__version__
    assert status.targets == dict.fromkeys(names + keras_names, True) and names
    assert ("tensorflow {}".format(tensorflow.__version__)) in status.reason
    assert keras_clone_fix.unpatch().targets == dict.fromkeys(status.targets, False)


def test_import_tensorflow_is_patched_at_interpreter_start():
    finished = run_python(["-c", "import json, tensorflow, keras_clone_fix; "
                                 "print(json.dumps(keras_clone_fix.status().as_dict()))"])
    status = json.loads(finished.stdout.splitlines()[-1])
    tf_targets = {name: fixed for name, fixed in status["targets"].items()
                  if name.startswith("tensorflow.")}
    names = [target_name(target) for target in targets_for("tensorflow", tensorflow.__version__)]
    assert tf_targets == dict.fromkeys(names, True) and names
    assert status["activated_by"] == ".pth at interpreter start"


def self_check(env=None):
    """The exit status, the JSON report, and its tf.keras section (None if not checked)."""
    finished = run_python_once(["-m", "keras_clone_fix", "--json"], env=env)
    report = json.loads(finished.stdout)
    sections = [made for made in report["models"] if made["family"] == "tf.keras"]
    return finished.returncode, report, sections[0] if sections else None


def test_self_check_proves_tf_keras():
    code, report, made = self_check()
    assert code == 0 and report["result"] == "ok"
    assert made["tensorflow"] == tensorflow.__version__ and made["ok"] is True
    assert made["checks"][SHOWN_BY]["patched"]["result"] == "ok"


def test_self_check_fails_with_the_fix_switched_off():
    code, report, made = self_check(env={"KERAS_CLONE_FIX": "0"})
    assert code == 1 and report["result"] == "FAILED" and made["ok"] is False
    assert made["checks"][SHOWN_BY]["unpatched"]["result"] == "wrong"


USES_THE_FIXTURE = u"""
import tensorflow

import keras_clone_fix
from keras_clone_fix import _builtin_model, _side


def builtin_model_works():
    tensorflow.keras.backend.clear_session()
    side, _ = _side.run_checks("tf.keras", _builtin_model.build)
    return side["checks"]["SHOWN_BY"]["result"] == "ok"


def test_before():
    assert not keras_clone_fix.status().patched and not builtin_model_works()


def test_with_the_fixture(keras_clone_fix):
    assert keras_clone_fix.patched and builtin_model_works()


def test_after():
    assert not keras_clone_fix.status().patched and not builtin_model_works()
"""


def test_pytest_fixture_patches_tf_keras_only_inside_its_test(tmp_path):
    finished = run_pytest(tmp_path, USES_THE_FIXTURE.replace("SHOWN_BY", SHOWN_BY),
                          env={"KERAS_CLONE_FIX": "0"})
    assert "3 passed" in finished.stdout, finished.stdout + finished.stderr
