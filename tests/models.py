"""Models for the clone tests, built with the installed multi-backend Keras 2.x."""

import keras
import numpy
import pytest
from keras import backend as K

from custom_layers import STEPS, VOCABULARY, custom_layers

VERSION = tuple(int(part) for part in keras.__version__.split(".")[:3])
AFFECTED = (2, 0, 0) <= VERSION < (2, 4, 0)
CLONES = VERSION >= (2, 0, 7)  # clone_model exists
# Layer.__call__ before 2.0.7 records one mask for all outputs of a layer:
# the next layer cannot read its second output's mask (IndexError), fix or
# no fix, so such models cannot be built there.
MULTI_OUTPUT_BUILDS = VERSION >= (2, 0, 7)
# Layer.__call__ of 2.0.0 - 2.0.2 records the propagated mask in the node's
# call arguments: unpatched, a masked model cannot be called on new tensors.
MASK_RECORDED_IN_ARGUMENTS = (2, 0, 0) <= VERSION < (2, 0, 3)
# What the unpatched release gets wrong (measured, see README).
LAMBDA_BROKEN = (2, 0, 7) <= VERSION < (2, 2, 5)   # clone: a two-output layer without masks
MASKING_BROKEN = AFFECTED                          # clone: a two-output layer with masking
NESTED_MASK_BROKEN = (2, 2, 5) <= VERSION < (2, 4, 0)  # clone: masks of nested models lost
LAMBDA_CALL_BROKEN = (2, 0, 0) <= VERSION < (2, 1, 6)  # call on new tensors: the same
# RNN.__call__ records initial_state and constants (tensors of the model's
# graph) in the node's arguments and makes them node inputs too (2.0.9, the
# RNN rewrite, to 2.2.4; 2.2.5 pops them; 2.0.7-2.0.8 record only
# non-Keras-tensor states): clone_model passes them twice (AssertionError in
# _standardize_args). Measured on 2.1.6 and 2.2.4 (broken), 2.3.1 (not).
STATE_ARGUMENTS_RECORDED = (2, 0, 9) <= VERSION < (2, 2, 5)
# Calling such a model on new tensors ran RNN.call with the recorded states,
# the original graph's; from 2.2.3 RNN.call takes them from its list of
# inputs. Measured on 2.1.6 (broken), 2.2.4 (not).
STATE_ARGUMENTS_CALL_BROKEN = (2, 0, 9) <= VERSION < (2, 2, 3)
# RNN cells whose call takes constants (the RNN rewrite, 2.0.9); RNN.call
# takes constants from its arguments up to 2.2.4, so calling on new
# tensors is broken as long as they are recorded.
HAS_RNN_CONSTANTS = VERSION >= (2, 0, 9)
# Bidirectional(...)(x, initial_state=...) (read in the sources: 2.1.3).
BIDIRECTIONAL_TAKES_STATES = VERSION >= (2, 1, 3)
# Bidirectional.__call__ makes initial_state node inputs (as RNN.__call__)
# from 2.1.4; 2.1.3's keeps them in the call arguments only, so a model's
# routines need not compute them before the layer (read in the sources).
BIDIRECTIONAL_STATES_ARE_INPUTS = VERSION >= (2, 1, 4)
# ConvLSTM2D called with initial_state cannot be built (keras#9761).
CONV_LSTM_STATE_UNBUILDABLE = (2, 1, 5) <= VERSION < (2, 4, 0)
# Keras before 2.2 refuses a masked tensor at a model's input layer ("Layer
# input_1 does not support masking"): as clone_model's input_tensors fix or
# no fix, and unpatched when a model is called on one (up to 2.2.2; fixed by
# InputLayerPassesMask, test_model_boundary.py). The tests that build such a
# model on both sides start at 2.2.
NESTS_ON_MASKED_TENSORS = VERSION >= (2, 2, 0)
# InputLayer supports masking from 2.2.3: before, unpatched, a masked tensor
# passed into a model raises TypeError (fixed by InputLayerPassesMask).
INPUT_REFUSES_MASK = VERSION < (2, 2, 3)

LAYERS = custom_layers(keras)
SplitOutputs, Attend, ConstantsCell = (LAYERS[name] for name in (
    "SplitOutputs", "Attend", "ConstantsCell"))


def tokens(name=None):
    return keras.layers.Input(shape=(STEPS,), dtype="int32", name=name)


def features(name=None):
    return keras.layers.Input(shape=(STEPS, 3), name=name)


def embedded(inputs, mask_zero=True):
    return keras.layers.Embedding(VOCABULARY, 3, mask_zero=mask_zero)(inputs)


def lstm(x, **arguments):
    return keras.layers.LSTM(2)(x, **arguments)


def embedding_lstm():
    return keras.models.Model(*_embedding_lstm())


def embedding_lstm_called_with_keywords():
    """Its LSTM node keeps a dict of call arguments, which the unpatched
    releases write masks into: when cloning, and when calling the model on
    new tensors (every later call then uses that mask)."""
    return keras.models.Model(*_embedding_lstm(training=False))


def _embedding_lstm(**arguments):
    x = tokens()
    return x, lstm(embedded(x), **arguments)


def two_inputs_concatenated():
    a, b = features("a"), features("b")
    return keras.models.Model([a, b], lstm(keras.layers.concatenate([a, b])))


def padded_tokens(seed=0, batch=4):
    """Token ids, each row zero-padded at the end: masks change the result."""
    random = numpy.random.RandomState(seed)
    rows = random.randint(1, VOCABULARY, size=(batch, STEPS))
    for row, length in zip(rows, random.randint(1, STEPS, size=batch)):
        row[length:] = 0
    return rows


def random_features(seed=0, batch=4):
    return numpy.random.RandomState(seed).normal(size=(batch, STEPS, 3)).astype("float32")


def data_for(model, seed=0):
    """Inputs for every input of `model`: token ids for (batch, steps)."""
    return [padded_tokens(seed + index) if len(K.int_shape(x)) == 2
            else random_features(seed + index) for index, x in enumerate(model.inputs)]


def predict(model, inputs, feeds=None):
    """model's outputs, as a list; `feeds` are the tensors to feed `inputs`
    to when the model is built on backend tensors instead of Keras Inputs."""
    if feeds is not None:
        return K.function(feeds, model.outputs)(inputs)
    outputs = model.predict(inputs)
    return outputs if isinstance(outputs, list) else [outputs]


def copy_weights(model, clone):
    """Layer by layer, by name: these tests compare what the rebuilds
    compute, and leave the order of get_weights() to test_faithful_clones."""
    for layer in model.layers:
        if layer.weights:  # not the input layers: a clone on given tensors has those
            clone.get_layer(layer.name).set_weights(layer.get_weights())




def missing_input_error():
    """What the backend raises when a graph needs an input nobody feeds."""
    if K.backend() == "theano":
        import theano
        return theano.gof.fg.MissingInputError
    import tensorflow
    return tensorflow.errors.InvalidArgumentError


def assert_close(expected, got):
    assert len(got) == len(expected)
    for want, have in zip(expected, got):
        numpy.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-6)


def assert_same_predictions(model, clone, inputs, clone_feeds=None):
    """Weights copied from model to clone, both predict the same."""
    copy_weights(model, clone)
    assert_close(predict(model, inputs), predict(clone, inputs, clone_feeds))


def assert_predicts_like(model, other, inputs):
    """`other` (built on model's layers, or given its weights) predicts what model does."""
    assert_close(predict(model, inputs), predict(other, inputs))


def call_on_new_inputs(model):
    """A model that calls `model` on new Inputs: what nesting does."""
    inputs = [keras.layers.Input(batch_shape=K.int_shape(x), dtype=K.dtype(x))
              for x in model.inputs]
    return keras.models.Model(inputs, model(inputs if len(inputs) > 1 else inputs[0]))


def model_nodes(model):
    """Every node of `model` (its layer calls)."""
    by_depth = getattr(model, "_nodes_by_depth", None) or model.nodes_by_depth  # 2.0-2.1: public
    return [node for nodes in by_depth.values() for node in nodes]


def node_arguments(model):
    """(node, a copy of its call arguments) for every node of `model`."""
    return [(node, dict(node.arguments or {})) for node in model_nodes(model)]


def returns_state():
    """Skip a test whose model needs LSTM(return_state=True): from keras 2.0.5."""
    if VERSION < (2, 0, 5):
        pytest.skip("LSTM(return_state=True) exists from keras 2.0.5")


def seq2seq(units=5):
    """Keras's examples/lstm_seq2seq.py: the encoder's last states start the decoder."""
    returns_state()
    encoder_inputs = keras.layers.Input(shape=(None, 3), name="encoder_inputs")
    decoder_inputs = keras.layers.Input(shape=(None, 4), name="decoder_inputs")
    _, state_h, state_c = keras.layers.LSTM(units, return_state=True)(encoder_inputs)
    decoded = keras.layers.LSTM(units, return_sequences=True)(
        decoder_inputs, initial_state=[state_h, state_c])
    outputs = keras.layers.Dense(4, activation="softmax")(decoded)
    return keras.models.Model([encoder_inputs, decoder_inputs], outputs)


def seq2seq_data(seed=0, batch=4):
    random = numpy.random.RandomState(seed)
    return [random.normal(size=(batch, STEPS, 3)).astype("float32"),
            random.normal(size=(batch, STEPS + 1, 4)).astype("float32")]


def called_twice(model):
    """`model` called on two sets of new Inputs: a model of both sets of
    inputs, with the outputs of the first call, then of the second."""
    first, second = [[keras.layers.Input(batch_shape=K.int_shape(x), dtype=K.dtype(x))
                      for x in model.inputs] for _ in range(2)]
    outputs = [model(inputs if len(inputs) > 1 else inputs[0]) for inputs in (first, second)]
    return keras.models.Model(first + second, [y for output in outputs
                                                for y in (output if isinstance(output, list)
                                                          else [output])])
