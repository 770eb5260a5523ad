"""The fix of run_internal_graph on real Keras: a model called on new tensors.

Keras runs it whenever a model is used as a layer: nested in another model,
`model.compute_mask` on a new tensor, `TimeDistributed(model)` and every
replica of `multi_gpu_model`. Each case runs patched and unpatched; where
the release breaks it, unpatched is a strict xfail.
"""

import collections
import sys

import pytest

import keras_clone_fix
from conftest import expect_upstream_failure, skip_module_unless_affected

skip_module_unless_affected(clones=False)

import keras  # noqa: E402
import numpy  # noqa: E402
from keras import backend as K  # noqa: E402
from keras.layers import Lambda  # noqa: E402
from models import (  # noqa: E402
    AFFECTED, CLONES, LAMBDA_CALL_BROKEN, MASK_RECORDED_IN_ARGUMENTS, MULTI_OUTPUT_BUILDS,
    SplitOutputs, assert_close, assert_predicts_like,
    assert_same_predictions, call_on_new_inputs, copy_weights, data_for, embedded, embedding_lstm,
    embedding_lstm_called_with_keywords, features, lstm, padded_tokens, predict, tokens,
    two_inputs_concatenated)

Model = keras.models.Model
pytestmark = pytest.mark.usefixtures("fresh_graph")
# Keras raises a plain Exception ("Layers should have equal number of output
# tensors and output masks") from 2.1.6 on, AssertionError ("Could not
# compute output") before.
SINGLE_MASK_FAILURE = Exception
multi_output_builds = pytest.mark.skipif(
    not MULTI_OUTPUT_BUILDS, reason="keras before 2.0.7 cannot build a multi-output layer's "
    "masks (IndexError in Layer.__call__), patched or not")


def split_with_one_mask(name="inner", steps=None):
    """Embedding(mask_zero) -> a two-output layer passing its one mask -> LSTMs."""
    x = tokens() if steps is None else keras.layers.Input(shape=(steps,), dtype="int32")
    outputs = [lstm(y) for y in SplitOutputs(2)(embedded(x))]
    return Model(x, keras.layers.concatenate(outputs), name=name)


def two_output_lambda(name="inner"):
    x = features()
    pair = Lambda(lambda x: [x + 1, x * 2], output_shape=lambda s: [s, s])(x)
    return Model(x, keras.layers.add(pair), name=name)


@multi_output_builds
@pytest.mark.parametrize("build, broken", [
    (split_with_one_mask, AFFECTED),
    (two_output_lambda, LAMBDA_CALL_BROKEN),
])
def test_nested_model_builds_predicts_and_clones(request, clone_mode, build, broken):
    expect_upstream_failure(request, clone_mode, broken, "keras " + keras.__version__,
                            raises=SINGLE_MASK_FAILURE)
    inner = build()
    outer = call_on_new_inputs(inner)
    data = data_for(inner)
    assert_predicts_like(inner, outer, data)
    if CLONES:
        assert_same_predictions(outer, keras.models.clone_model(outer), data)


def in_keras_graph(function):
    """`function` run in Keras's own graph, as layer calls are: with
    TensorFlow 2 (eager by default) Keras 2.3 needs K.symbolic for that."""
    return getattr(K, "symbolic", lambda function: function)(function)


@multi_output_builds
def test_compute_mask_on_a_new_tensor(request, clone_mode):
    expect_upstream_failure(request, clone_mode, AFFECTED, "keras " + keras.__version__,
                            raises=SINGLE_MASK_FAILURE)
    x = tokens()
    sequences = [keras.layers.LSTM(2, return_sequences=True)(y)
                 for y in SplitOutputs(2)(embedded(x))]
    model = Model(x, sequences)
    new_input = tokens("new")
    masks = in_keras_graph(model.compute_mask)(new_input, None)
    data = data_for(model)
    for mask in K.function([new_input], masks)(data):
        numpy.testing.assert_array_equal(mask, data[0] != 0)


@multi_output_builds
def test_time_distributed_model(request, clone_mode):
    expect_upstream_failure(request, clone_mode, AFFECTED, "keras " + keras.__version__,
                            raises=SINGLE_MASK_FAILURE)
    inner = split_with_one_mask(steps=4)
    sequence = keras.layers.Input(shape=(3, 4), dtype="int32")
    outer = Model(sequence, keras.layers.TimeDistributed(inner)(sequence))
    data = numpy.stack([padded_tokens(seed)[:, :4] for seed in range(3)], axis=1)
    got = outer.predict(data)
    for step in range(3):
        assert_close(predict(inner, data[:, step]), [got[:, step]])


class Scale(keras.layers.Layer):
    """inputs * scale: `scale`, a keyword argument, is not one of the call's inputs."""

    def call(self, inputs, scale=None):
        return inputs * scale

    def compute_output_shape(self, input_shape):
        return input_shape


def test_keyword_tensor_of_a_layer_nothing_else_takes(request, clone_mode):
    """Scale()(h, scale=Dense(4)(x)): the model's walk left the scaler out,
    so the model called on new tensors fed the original's input (keras
    2.0.0 - 2.3.1: `You must feed a value for placeholder tensor`); with
    the fix the scaler is one of the model's layers, its weights with it."""
    expect_upstream_failure(request, clone_mode, AFFECTED, "keras " + keras.__version__,
                            raises=Exception)  # InvalidArgumentError
    x = features()
    scaled = Scale()(keras.layers.Dense(4)(x), scale=keras.layers.Dense(4, name="scaler")(x))
    model = Model(x, keras.layers.Dense(1)(scaled))
    assert "scaler" in [layer.name for layer in model.layers]
    assert_predicts_like(model, call_on_new_inputs(model), data_for(model))


def test_shared_model_called_twice_uses_each_calls_own_mask(request, clone_mode):
    """A masked model called on two inputs, as the two sides of a siamese
    network: unpatched, the second call used the mask that the first wrote
    into the original's node arguments."""
    expect_upstream_failure(request, clone_mode, AFFECTED, "keras " + keras.__version__,
                            raises=Exception)  # 2.0.0 - 2.0.2: InvalidArgumentError, a placeholder
    encoder = embedding_lstm_called_with_keywords()
    first, second = tokens("first"), tokens("second")
    siamese = Model([first, second], [encoder(first), encoder(second)])
    data = [padded_tokens(0), padded_tokens(1)]
    assert_close(predict(encoder, data[:1]) + predict(encoder, data[1:]), predict(siamese, data))


def on_two_gpus(monkeypatch):
    """Put multi_gpu_model on the CPU: Keras sees two GPUs, and their
    operations go on the CPU (TensorFlow 1.x: the session of
    conftest.session_config that each test gets places them softly). False,
    changing nothing, where there is no multi_gpu_model (Theano; Keras
    before 2.0.9)."""
    if K.backend() != "tensorflow" or not hasattr(keras.utils, "multi_gpu_model"):
        return False
    import tensorflow
    # keras.utils.training_utils to 2.1.2, multi_gpu_utils after
    utils = sys.modules[keras.utils.multi_gpu_model.__module__]
    monkeypatch.setattr(utils, "_get_available_devices", lambda: ["/cpu:0", "/gpu:0", "/gpu:1"])
    if not tensorflow.__version__.startswith("1."):  # TensorFlow 2 has no sessions
        tensorflow.config.set_soft_device_placement(True)
    return True


@pytest.fixture
def two_gpus(monkeypatch):
    """multi_gpu_model on the CPU (on_two_gpus)."""
    if not on_two_gpus(monkeypatch):
        pytest.skip("multi_gpu_model needs TensorFlow and Keras >= 2.0.9")


@pytest.mark.usefixtures("two_gpus")
@pytest.mark.parametrize("cpu_relocation", [False, True], ids=["replicas", "relocated"])
@pytest.mark.parametrize("build, broken", [
    (embedding_lstm, "relocated"),
    (embedding_lstm_called_with_keywords, "always"),
    (split_with_one_mask, "always"),
])
def test_multi_gpu_model_predicts_like_the_model(request, clone_mode, cpu_relocation, build,
                                                 broken):
    """Replicas each on their own half of the batch, with their own masks;
    with cpu_relocation the model is cloned first."""
    expect_upstream_failure(
        request, clone_mode, broken == "always" or cpu_relocation, "keras " + keras.__version__,
        raises=Exception)  # AssertionError, InvalidArgumentError or Keras's own Exception
    model = build()
    parallel = keras.utils.multi_gpu_model(model, gpus=2, cpu_relocation=cpu_relocation)
    replica, = [layer for layer in parallel.layers if isinstance(layer, Model)]
    copy_weights(model, replica)
    assert_predicts_like(model, parallel, data_for(model))


def nested_embedding_lstm():
    inner = embedding_lstm()
    x = tokens()
    return Model(x, keras.layers.Dense(2)(inner(x)))


UNCHANGED = [embedding_lstm, embedding_lstm_called_with_keywords, two_inputs_concatenated,
             nested_embedding_lstm]


def graph_operations():
    """How many operations of each type the TensorFlow graph has (empty on
    other backends)."""
    if K.backend() != "tensorflow":
        return collections.Counter()
    from tensorflow.compat import v1 as tf
    return collections.Counter(operation.type for operation in tf.get_default_graph().get_operations())


def called_once_on_new_inputs(build, fix):
    """In a new graph, after fix(): the operations a call of a built model
    on new Inputs adds, and what the calling model predicts."""
    if hasattr(K, "clear_session"):
        K.clear_session()
    fix()
    model = build()
    random = numpy.random.RandomState(0)
    model.set_weights([random.normal(size=weights.shape) for weights in model.get_weights()])
    before = graph_operations()
    outer = call_on_new_inputs(model)
    return graph_operations() - before, predict(outer, data_for(model))


@pytest.mark.skipif(MASK_RECORDED_IN_ARGUMENTS, reason="unpatched, keras 2.0.0 - 2.0.2 cannot "
                    "call these masked models on new tensors at all (the shared-model test)")
@pytest.mark.parametrize("build", UNCHANGED, ids=[case.__name__ for case in UNCHANGED])
def test_without_multi_output_layers_calls_build_the_same_graph(restore_fix_state, build):
    """Models without multi-output layers, called once on new tensors: the
    same operations and predictions patched and unpatched."""
    (unpatched_ops, unpatched), (patched_ops, patched) = [
        called_once_on_new_inputs(build, fix)
        for fix in (keras_clone_fix.unpatch, keras_clone_fix.patch)]
    assert patched_ops == unpatched_ops
    assert_close(unpatched, patched)
