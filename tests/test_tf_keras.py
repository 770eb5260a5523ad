"""tf.keras of TensorFlow 1.x (not the `keras` package): a model called on
new tensors. Runs where TensorFlow 1.12 - 1.14 (patched) or 1.15 (correct,
left alone) is installed. Each case runs patched and unpatched; where the
release has the bug, unpatched is a strict xfail.
"""

import json

import pytest

import keras_clone_fix
from conftest import expect_upstream_failure, installed, run_python
from keras_clone_fix._affected import target_name, targets_for

if not installed("tensorflow"):
    pytest.skip("needs TensorFlow", allow_module_level=True)

import numpy  # noqa: E402
import tensorflow  # noqa: E402

TF = tuple(int(part) for part in tensorflow.__version__.split(".")[:2])
if not (1, 12) <= TF < (2, 0):
    pytest.skip("needs tf.keras of TensorFlow 1.12 - 1.15", allow_module_level=True)

keras = tensorflow.keras
PATCHED_HERE = TF < (1, 15)  # 1.15 copies the call arguments itself
STEPS = 6


@pytest.fixture(autouse=True)
def fresh_graph():
    yield
    keras.backend.clear_session()


def tokens():
    return keras.layers.Input(shape=(STEPS,), dtype="int32")


def masked_encoder():
    """Embedding(mask_zero) -> LSTM called with training=False: its node
    keeps a dict of call arguments, which 1.12 - 1.14 write each call's mask into."""
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


def test_shared_masked_model_called_twice_uses_each_calls_own_mask(request, clone_mode):
    """The two sides of a siamese network: unpatched, 1.12 - 1.14's second call
    used the first call's mask, silently."""
    expect_upstream_failure(request, clone_mode, PATCHED_HERE, "tensorflow " + tensorflow.__version__)
    encoder = masked_encoder()
    first, second = tokens(), tokens()
    siamese = keras.models.Model([first, second], [encoder(first), encoder(second)])
    data = [padded_tokens(0), padded_tokens(1)]
    expected = [encoder.predict(data[0]), encoder.predict(data[1])]
    for want, got in zip(expected, siamese.predict(data)):
        numpy.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_status_names_what_is_patched(restore_fix_state):
    status = keras_clone_fix.patch()
    names = [target_name(target) for target in targets_for("tensorflow", tensorflow.__version__)]
    assert status.tensorflow_version == tensorflow.__version__
    assert {name: status.targets[name] for name in names} == dict.fromkeys(names, True)
    assert bool(names) is PATCHED_HERE
    assert ("tensorflow {}".format(tensorflow.__version__)) in status.reason
    assert keras_clone_fix.unpatch().targets == dict.fromkeys(status.targets, False)


def test_import_tensorflow_is_patched_at_interpreter_start():
    finished = run_python(["-c", "import json, tensorflow, keras_clone_fix; "
                                 "print(json.dumps(keras_clone_fix.status().as_dict()))"])
    status = json.loads(finished.stdout.splitlines()[-1])
    tf_targets = {name: fixed for name, fixed in status["targets"].items()
                  if name.startswith("tensorflow.")}
    assert tf_targets == ({"tensorflow.python.keras.engine.network.Network._run_internal_graph":
                           True} if PATCHED_HERE else {})
    assert status["activated_by"] == ".pth at interpreter start"
