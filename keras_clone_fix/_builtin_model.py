"""The self-check's model: one the affected releases break.

Where a layer can have several outputs with one mask (keras from 2.0.7):
Embedding(mask_zero) -> a masking layer with two outputs -> one LSTM each.
Elsewhere (keras before 2.0.7, tf.keras): a masked encoder whose LSTM is
called with training=False, so its node keeps a dict of call arguments that
the affected releases write each call's mask into.
"""

from keras_clone_fix._affected import api_version

STEPS, VOCABULARY = 5, 10


def build(keras):
    if "tensorflow" not in keras.__name__ and api_version(keras) >= (2, 0, 7):
        return two_output_model(keras)
    return masked_encoder(keras)


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
