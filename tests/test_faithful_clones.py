"""A clone is the model: what the layer configs leave out still reaches it.

- `Lambda(fn, mask=mask_fn)`: `Lambda.get_config` has no mask on keras
  2.0.7 - 2.3.1 and tf.keras of TensorFlow 1.4 - 1.13, so the clone's
  Lambda had none and the LSTM after it counted the padding (LambdaMaskKept).
- A frozen nested model: a model's `get_config` has no `trainable` there,
  so the clone's copy was trainable and training the clone trained it
  (keras-team/keras#11022; TrainableKept).

Runs on each family installed here at a release with clone_model: keras
2.0.7 - 2.3.1 and tf.keras of TensorFlow 1.4 - 1.14, patched and unpatched
(unpatched, a strict xfail where the release has the bug), and, unpatched,
on tf_keras (the maintained Keras 2: the reference, which must pass).
"""

import importlib

import pytest

from conftest import expect_upstream_failure, installed, version_of
from keras_clone_fix import _activation

import keras_clone_fix


def _families():
    """(id, keras module, the bugs its release has, whether it is patched)
    of each family installed here at a release these tests run on."""
    found = []
    if installed("keras"):
        keras = importlib.import_module("keras")
        version = version_of(keras)
        # Not on Theano: it compiles each LSTM model for minutes (as in
        # test_model_boundary); the rules are the same there.
        if (2, 0, 7) <= version < (2, 4, 0) and keras.backend.backend() != "theano":
            found.append(("keras " + keras.__version__, keras, True, True))
    if installed("tensorflow"):
        tensorflow = importlib.import_module("tensorflow")
        version = version_of(tensorflow)[:2]
        if (1, 4) <= version < (1, 15):
            # 1.14 writes a Lambda's mask into its config and sets a model's
            # trainable on the layers inside: not patched for these, correct.
            found.append(("tf.keras " + tensorflow.__version__, tensorflow.keras,
                          version < (1, 14), True))
    if installed("tf_keras"):
        tf_keras = importlib.import_module("tf_keras")
        found.append(("tf_keras " + tf_keras.__version__, tf_keras, False, False))
    return found


FAMILIES = _families()
if not FAMILIES:
    pytest.skip("needs keras 2.0.7 - 2.3.1 (not on Theano), tf.keras of TensorFlow 1.4 - 1.14 "
                "or tf_keras", allow_module_level=True)

import numpy  # noqa: E402 (only where keras is, after the skip)

from keras_clone_fix import _check  # noqa: E402

STEPS, VOCABULARY, BATCH = 5, 12, 4
MODES = [(family, mode) for family in FAMILIES
         for mode in (("patched", "unpatched") if family[3] else ("unpatched",))]


@pytest.fixture(params=MODES, ids=["{} {}".format(family[0], mode) for family, mode in MODES])
def family(request):
    """(keras module, whether the release has the bugs, mode): the fix on,
    then off, where the release is patched; off only on the reference."""
    (_, keras, broken, _), mode = request.param
    with _activation.restoring():
        if mode == "patched":
            assert keras_clone_fix.patch().patched
        else:
            assert not keras_clone_fix.unpatch().patched
        yield keras, broken, mode
    if hasattr(keras.backend, "clear_session"):
        keras.backend.clear_session()


def expect(request, family, why):
    keras, broken, mode = family
    expect_upstream_failure(request, mode, broken,
                            "{} on {}".format(why, _check.release_name(keras)))


def padded(seed):
    """Token ids, each row zero-padded at the end by a different length."""
    random = numpy.random.RandomState(seed)
    rows = random.randint(1, VOCABULARY, size=(BATCH, STEPS))
    for row, length in zip(rows, [1, 2, STEPS - 1, STEPS]):
        row[length:] = 0
    return rows


def cloned(keras, model):
    clone = _check.find_clone_model(keras)(model)
    clone.set_weights(model.get_weights())
    return clone


def lambda_with_a_mask(keras):
    """Embedding(mask_zero) -> Lambda(fn, mask=pass it on) -> LSTM."""
    L = keras.layers
    tokens = L.Input(shape=(STEPS,), dtype="int32")
    doubled = L.Lambda(lambda x: x * 2.0, mask=lambda x, mask: mask, name="doubled")(
        L.Embedding(VOCABULARY, 3, mask_zero=True)(tokens))
    return keras.models.Model(tokens, L.LSTM(2)(doubled))


def frozen_nested_model(keras):
    L = keras.layers
    i = L.Input(shape=(3,))
    base = keras.models.Model(i, L.Dense(4)(i), name="base")
    base.trainable = False
    j = L.Input(shape=(3,))
    return keras.models.Model(j, L.Dense(1)(base(j)))


def test_lambda_mask_is_kept_in_the_clone(request, family):
    """Embedding(mask_zero) -> Lambda(fn, mask=pass it on) -> LSTM: the
    clone's LSTM must skip the padding as the model's does."""
    expect(request, family, "the clone's Lambda has no mask")
    keras = family[0]
    model = lambda_with_a_mask(keras)
    data = padded(0)
    numpy.testing.assert_allclose(cloned(keras, model).predict(data), model.predict(data),
                                  rtol=1e-6, atol=1e-7)


def test_frozen_nested_model_stays_frozen_in_the_clone(request, family):
    """`base.trainable = False; Model(j, Dense(1)(base(j)))`: the clone has
    the model's 2 trainable weights, and training it leaves the base as it was."""
    expect(request, family, "the clone's nested model is trainable")
    keras = family[0]
    model = frozen_nested_model(keras)
    clone = cloned(keras, model)
    assert len(model.trainable_weights) == 2
    assert len(clone.trainable_weights) == len(model.trainable_weights)
    clone_base, = [layer for layer in clone.layers if isinstance(layer, keras.models.Model)]
    before = clone_base.get_weights()
    clone.compile("sgd", "mse")
    random = numpy.random.RandomState(1)
    clone.fit(random.normal(size=(8, 3)), random.normal(size=(8, 1)), epochs=2, verbose=0)
    for after, was in zip(clone_base.get_weights(), before):
        numpy.testing.assert_array_equal(after, was)


@pytest.mark.parametrize("build, path, what, wrong", [
    (lambda_with_a_mask, "doubled", "a Lambda with a mask (its config has none)",
     "largest absolute difference"),
    (frozen_nested_model, "base", "a frozen nested model (trainable = False)",
     "4 trainable weights instead of 2"),
], ids=["lambda mask", "frozen nested model"])
def test_check_names_the_risk_and_its_clone_check_sees_it(family, build, path, what, wrong):
    """`check`'s engine, in this interpreter: the layer is named at risk where
    the release has the bug, and the clone check fails unpatched only there."""
    keras, broken, mode = family
    model = build(keras)
    named = [(at, found) for at, found, checks in _check.risks(keras, model) if "clone" in checks]
    assert ((path, what) in named) is broken
    inputs = _check.make_inputs(keras, model, BATCH, STEPS, seed=0)
    got = _check.Checks(keras, model, inputs, inputs).check_clone()
    if broken and mode == "unpatched":
        assert got["result"] == _check.WRONG and got["detail"].startswith(wrong), got
    else:
        assert got == _check.result(_check.OK), got
