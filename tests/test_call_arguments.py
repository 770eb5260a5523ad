"""Call arguments that hold tensors (issue 12): RNN initial_state and
constants, a custom layer's tensor argument. Both rebuild routines passed
the node's recorded arguments (tensors of the original graph) back as they
were. Each case runs patched and unpatched; where the release breaks it,
unpatched is a strict xfail.
"""

import pytest

from conftest import expect_upstream_failure, skip_module_unless_affected

skip_module_unless_affected(clones=False)

import keras  # noqa: E402
import numpy  # noqa: E402
from keras import backend as K  # noqa: E402
from models import (  # noqa: E402
    AFFECTED, CLONES, BIDIRECTIONAL_TAKES_STATES, CONV_LSTM_STATE_UNBUILDABLE, HAS_RNN_CONSTANTS,
    STATE_ARGUMENTS_CALL_BROKEN, STATE_ARGUMENTS_RECORDED, STEPS, ConstantsCell, assert_close,
    called_twice, copy_weights, embedded, node_arguments, padded_tokens, predict, returns_state,
    seq2seq, seq2seq_data, tokens)
from test_call_on_new_tensors import two_gpus  # noqa: E402,F401 (a fixture)

Model = keras.models.Model
Input = keras.layers.Input
pytestmark = pytest.mark.usefixtures("fresh_graph")
VERSION = "keras " + keras.__version__
# Unpatched: clone_model raises AssertionError in _standardize_args; a model
# called on new tensors needs the original's inputs fed.


def call_failure():
    if K.backend() == "theano":
        import theano
        return theano.gof.fg.MissingInputError
    import tensorflow
    return tensorflow.errors.InvalidArgumentError


def cloned(model):
    if not CLONES:
        pytest.skip("clone_model exists from keras 2.0.7")
    clone = keras.models.clone_model(model)
    copy_weights(model, clone)
    return clone


def called_on_new_inputs(model):
    inputs = [Input(batch_shape=K.int_shape(x), dtype=K.dtype(x)) for x in model.inputs]
    return Model(inputs, model(inputs if len(inputs) > 1 else inputs[0]))


def test_seq2seq_clone(request, clone_mode):
    expect_upstream_failure(request, clone_mode, STATE_ARGUMENTS_RECORDED, VERSION)
    model, data = seq2seq(), seq2seq_data()
    assert_close(predict(model, data), predict(cloned(model), data))


def test_seq2seq_clone_of_the_clone(request, clone_mode):
    expect_upstream_failure(request, clone_mode, STATE_ARGUMENTS_RECORDED, VERSION)
    model, data = seq2seq(), seq2seq_data()
    assert_close(predict(model, data), predict(cloned(cloned(model)), data))


def test_seq2seq_nested(request, clone_mode):
    expect_upstream_failure(request, clone_mode, STATE_ARGUMENTS_CALL_BROKEN, VERSION,
                            raises=call_failure())
    model, data = seq2seq(), seq2seq_data()
    assert_close(predict(model, data), predict(called_on_new_inputs(model), data))


def test_seq2seq_called_twice_on_different_inputs(request, clone_mode):
    expect_upstream_failure(request, clone_mode, STATE_ARGUMENTS_CALL_BROKEN, VERSION,
                            raises=call_failure())
    model = seq2seq()
    first, second = seq2seq_data(0), seq2seq_data(1)
    assert_close(predict(model, first) + predict(model, second),
                 predict(called_twice(model), first + second))


def test_seq2seq_nested_then_cloned(request, clone_mode):
    """The clone makes the nested model anew from its config: only the call breaks."""
    expect_upstream_failure(request, clone_mode, STATE_ARGUMENTS_CALL_BROKEN, VERSION,
                            raises=call_failure())
    model, data = seq2seq(), seq2seq_data()
    assert_close(predict(model, data), predict(cloned(called_on_new_inputs(model)), data))


@pytest.mark.usefixtures("two_gpus")
@pytest.mark.parametrize("cpu_relocation", [False, True], ids=["replicas", "relocated"])
def test_seq2seq_multi_gpu_model(request, clone_mode, cpu_relocation):
    """Each replica on its half of the batch; with cpu_relocation the model is cloned first."""
    broken = STATE_ARGUMENTS_RECORDED if cpu_relocation else STATE_ARGUMENTS_CALL_BROKEN
    expect_upstream_failure(request, clone_mode, broken, VERSION,
                            raises=(AssertionError, call_failure()))
    model, data = seq2seq(), seq2seq_data()
    parallel = keras.utils.multi_gpu_model(model, gpus=2, cpu_relocation=cpu_relocation)
    replica, = [layer for layer in parallel.layers if isinstance(layer, Model)]
    copy_weights(model, replica)
    assert_close(predict(model, data), predict(parallel, data))


def test_seq2seq_original_node_arguments_unchanged(request, clone_mode):
    """Unpatched, both routines write `mask` into the decoder node's
    arguments where RNN.__call__ records any (2.1 - 2.2.4; the clone refuses
    first there)."""
    expect_upstream_failure(request, clone_mode, STATE_ARGUMENTS_RECORDED, VERSION)
    model = seq2seq()
    arguments = node_arguments(model)
    assert any(recorded.get("initial_state") for _, recorded in arguments) \
        == STATE_ARGUMENTS_RECORDED
    called_on_new_inputs(model)
    if CLONES:
        keras.models.clone_model(model)
    assert node_arguments(model) == arguments


def bidirectional_with_initial_state():
    encoder_inputs, decoder_inputs = Input(shape=(None, 3)), Input(shape=(None, 4))
    states = []
    for _ in range(2):  # forward and backward
        states += keras.layers.LSTM(5, return_state=True)(encoder_inputs)[1:]
    decoded = keras.layers.Bidirectional(keras.layers.LSTM(5, return_sequences=True))(
        decoder_inputs, initial_state=states)
    return Model([encoder_inputs, decoder_inputs], decoded)


def rnn_with_constants():
    sequence, context = Input(shape=(None, 3)), Input(shape=(2,))
    constant = keras.layers.Dense(4)(context)
    outputs = keras.layers.RNN(ConstantsCell())(sequence, constants=constant)
    return Model([sequence, context], outputs)


def constants_data(seed=0, batch=4):
    random = numpy.random.RandomState(seed)
    return [random.normal(size=(batch, STEPS, 3)), random.normal(size=(batch, 2))]


def bidirectional_data(seed=0):
    return seq2seq_data(seed)


@pytest.mark.parametrize("use", [cloned, called_on_new_inputs], ids=["clone", "call"])
@pytest.mark.parametrize("build, data", [
    (bidirectional_with_initial_state, bidirectional_data),
    (rnn_with_constants, constants_data),
], ids=["bidirectional", "constants"])
def test_recurrent_state_and_constants_arguments(request, clone_mode, use, build, data):
    if build is rnn_with_constants and not HAS_RNN_CONSTANTS:
        pytest.skip("RNN constants arrived in Keras 2.0.9")
    if build is bidirectional_with_initial_state and not BIDIRECTIONAL_TAKES_STATES:
        pytest.skip("Bidirectional takes initial_state from Keras 2.1.3")
    if use is cloned or build is rnn_with_constants:  # RNN.call takes states from its inputs
        broken = STATE_ARGUMENTS_RECORDED             # from 2.2, constants from the arguments
    else:
        broken = STATE_ARGUMENTS_CALL_BROKEN
    expect_upstream_failure(request, clone_mode, broken, VERSION,
                            raises=(AssertionError, call_failure()))
    model, inputs = build(), data()
    assert_close(predict(model, inputs), predict(use(model), inputs))


@pytest.mark.skipif(CONV_LSTM_STATE_UNBUILDABLE,
                    reason="ConvLSTM2D called with initial_state cannot be built (keras#9761)")
@pytest.mark.parametrize("use", [cloned, called_on_new_inputs], ids=["clone", "call"])
def test_conv_lstm_with_initial_state(request, clone_mode, use):
    broken = STATE_ARGUMENTS_RECORDED if use is cloned else STATE_ARGUMENTS_CALL_BROKEN
    expect_upstream_failure(request, clone_mode, broken, VERSION,
                            raises=(AssertionError, call_failure()))
    frames, state = Input(shape=(2, 5, 5, 1)), Input(shape=(5, 5, 2))
    outputs = keras.layers.ConvLSTM2D(2, 3, padding="same")(frames, initial_state=[state, state])
    model = Model([frames, state], outputs)
    random = numpy.random.RandomState(0)
    inputs = [random.normal(size=(2, 2, 5, 5, 1)), random.normal(size=(2, 5, 5, 2))]
    assert_close(predict(model, inputs), predict(use(model), inputs))


class Shifted(keras.layers.Layer):
    """inputs + shift: `shift` a tensor keyword argument."""

    def call(self, inputs, shift=None):
        return inputs + shift


keras.utils.generic_utils.get_custom_objects()["Shifted"] = Shifted


@pytest.mark.parametrize("made_later", [False, True], ids=["an input", "made later"])
@pytest.mark.parametrize("use", [cloned, called_on_new_inputs], ids=["clone", "call"])
def test_custom_layer_with_a_tensor_keyword_argument(request, clone_mode, use, made_later):
    """Every affected release passes the original graph's tensor; made
    later: `shift = Dense(3)(s)`, an output too, which Keras's depths put
    after the call taking it."""
    expect_upstream_failure(request, clone_mode, AFFECTED, VERSION, raises=call_failure())
    x, s = Input(shape=(3,)), Input(shape=(3,))
    shift = keras.layers.Dense(3)(s) if made_later else s
    outputs = keras.layers.Dense(2)(keras.layers.Dense(2)(Shifted()(x, shift=shift)))
    model = Model([x, s], [outputs, shift] if made_later else outputs)
    random = numpy.random.RandomState(0)
    inputs = [random.normal(size=(4, 3)), random.normal(size=(4, 3))]
    assert_close(predict(model, inputs), predict(use(model), inputs))


def masked_shared_encoder():
    """One masked encoder model, called on two token inputs; the second
    call's states start the decoder."""
    returns_state()
    source = tokens("source")
    _, state_h, state_c = keras.layers.LSTM(3, return_state=True)(embedded(source))
    encoder = Model(source, [state_h, state_c], name="encoder")
    first, second = tokens("first"), tokens("second")
    encoded_first = keras.layers.concatenate(encoder(first))
    decoded = keras.layers.LSTM(3)(embedded(first), initial_state=encoder(second))
    return Model([first, second], keras.layers.concatenate([encoded_first, decoded]))


@pytest.mark.parametrize("use", [cloned, called_on_new_inputs], ids=["clone", "call"])
def test_masked_shared_encoder_called_twice(request, clone_mode, use):
    broken = STATE_ARGUMENTS_RECORDED if use is cloned else STATE_ARGUMENTS_CALL_BROKEN
    expect_upstream_failure(request, clone_mode, broken, VERSION,
                            raises=(AssertionError, call_failure()))
    model = masked_shared_encoder()
    inputs = [padded_tokens(0), padded_tokens(1)]
    assert_close(predict(model, inputs), predict(use(model), inputs))
