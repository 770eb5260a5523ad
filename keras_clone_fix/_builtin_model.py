"""The self-check's model: one the affected releases break.

Where a layer can have several outputs with one mask (keras 2.0.7 - 2.3.1):
Embedding(mask_zero) -> a masking layer with two outputs -> one LSTM each.
Where a model called on new tensors is patched (keras before 2.0.7, tf.keras
of TensorFlow 1.4 - 1.14): a masked encoder whose LSTM is called with
training=False, so its node keeps a dict of call arguments that the affected
releases write each call's mask into. Later releases (tf.keras of TensorFlow
1.15 - 2.5, keras 2.5 - 2.6) copy them, but make a layer's calls out of order
from a config: there, a nested model of two layers each called on the
other's output.
"""

import sys

from keras_clone_fix._affected import api_version, targets_for

STEPS, VOCABULARY = 5, 10


def build(keras):
    family = "tensorflow" if "tensorflow" in keras.__name__ else "keras"
    if family == "keras" and (2, 0, 7) <= api_version(keras) < (2, 4, 0):
        return two_output_model(keras)
    targets = targets_for(family, sys.modules[family].__version__)
    if any(target.routine() == "run_internal_graph" for target in targets):
        return masked_encoder(keras)
    return calls_in_a_cycle(keras)


def two_output_model(keras):
    class TwoOutputs(keras.layers.Layer):
        """Keeps Layer's default compute_mask: one mask for both outputs."""

        def __init__(self, **kwargs):
            super(TwoOutputs, self).__init__(**kwargs)
            self.supports_masking = True

        def call(self, inputs, mask=None):
            return [inputs, inputs * 2.0]

        def compute_output_shape(self, input_shape):
            return [input_shape, input_shape]

    tokens = keras.layers.Input(shape=(STEPS,), dtype="int32")
    embedded = keras.layers.Embedding(VOCABULARY, 3, mask_zero=True)(tokens)
    first, second = TwoOutputs()(embedded)
    outputs = [keras.layers.LSTM(2)(first), keras.layers.LSTM(2)(second)]
    return keras.models.Model(tokens, outputs)


def masked_encoder(keras):
    tokens = keras.layers.Input(shape=(STEPS,), dtype="int32")
    embedded = keras.layers.Embedding(VOCABULARY, 3, mask_zero=True)(tokens)
    return keras.models.Model(tokens, keras.layers.LSTM(2)(embedded, training=False))


def calls_in_a_cycle(keras):
    """Inside a nested model, two layers each called on the other's output:
    s(x), d(s(x)), s(d(s(x))), s(s(x)), d(s(d(s(x)))). The config lists s
    before d, so its third call is ready before its second."""
    L = keras.layers
    x = L.Input(shape=(3,))
    s, d = L.Dense(3, name="s"), L.Dense(3, name="d")
    first = s(x)
    again = s(d(first))
    inner = keras.models.Model(x, L.add([s(first), d(again)]), name="cycle")
    y = L.Input(shape=(3,))
    return keras.models.Model(y, L.Dense(1)(inner(y)))
