"""Models for the clone tests, built with the installed multi-backend Keras 2.x."""

import keras
import numpy
from keras import backend as K

VERSION = tuple(int(part) for part in keras.__version__.split(".")[:3])
# Which cases the unpatched release fails to clone (measured, see README).
LAMBDA_BROKEN = (2, 0, 7) <= VERSION < (2, 2, 5)
MASKING_BROKEN = (2, 0, 7) <= VERSION < (2, 4, 0)

STEPS, VOCABULARY = 6, 20


class SplitOutputs(keras.layers.Layer):
    """`count` outputs: (sum of the inputs) * 1, * 2, ...

    mask_rule says what compute_mask returns:
    "none": no masking, Layer's default (None);
    "pass": supports_masking with Layer's default, one mask for all outputs
            (a layer with several inputs passes its first input's mask);
    "list": an explicit list, the incoming mask for the first output, None after.
    """

    def __init__(self, count=2, mask_rule="pass", **kwargs):
        super(SplitOutputs, self).__init__(**kwargs)
        self.count, self.mask_rule = count, mask_rule
        self.supports_masking = mask_rule != "none"

    def call(self, inputs, mask=None):
        total = sum(inputs[1:], inputs[0]) if isinstance(inputs, list) else inputs
        return [total * float(factor) for factor in range(1, self.count + 1)]

    def compute_output_shape(self, input_shape):
        shape = input_shape[0] if isinstance(input_shape, list) else input_shape
        return [shape] * self.count

    def compute_mask(self, inputs, mask=None):
        first = mask[0] if isinstance(mask, list) else mask
        if self.mask_rule == "list":
            return [first] + [None] * (self.count - 1)
        if self.mask_rule == "pass" and isinstance(mask, list):
            return first
        return super(SplitOutputs, self).compute_mask(inputs, mask)

    def get_config(self):
        config = super(SplitOutputs, self).get_config()
        config.update(count=self.count, mask_rule=self.mask_rule)
        return config


keras.utils.generic_utils.get_custom_objects()["SplitOutputs"] = SplitOutputs


def tokens(name=None):
    return keras.layers.Input(shape=(STEPS,), dtype="int32", name=name)


def features(name=None):
    return keras.layers.Input(shape=(STEPS, 3), name=name)


def embedded(inputs, mask_zero=True):
    return keras.layers.Embedding(VOCABULARY, 3, mask_zero=mask_zero)(inputs)


def lstm(x):
    return keras.layers.LSTM(2)(x)


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
    """Layer by layer, by name: the order of model.layers (and so of
    get_weights()) may differ in a clone among layers of equal depth."""
    for layer in model.layers:
        clone.get_layer(layer.name).set_weights(layer.get_weights())


def assert_same_predictions(model, clone, inputs, clone_feeds=None):
    copy_weights(model, clone)
    expected, got = predict(model, inputs), predict(clone, inputs, clone_feeds)
    assert len(got) == len(expected)
    for want, have in zip(expected, got):
        numpy.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-6)
