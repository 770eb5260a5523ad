"""Models for tests/test_check.py, built with a family's keras module (the
keras package or tf.keras) and saved by the test."""

import numpy

STEPS, VOCABULARY = 6, 20

# A user's module of custom objects (written into the test's directory):
# a layer with two outputs and one mask, the case the affected releases
# cannot rebuild; a layer with a config of its own and an activation, known
# by name only to those given them (as keras-bert's); get_custom_objects as
# keras-bert has it.
CUSTOM_OBJECTS_MODULE = u'''
{import_keras}


def gelu(x):
    """keras-bert's activation (its tanh approximation)."""
    return 0.5 * x * (1.0 + keras.backend.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


class Scale(keras.layers.Layer):
    """Multiplies by its own `factor`; passes the mask on."""

    def __init__(self, factor=2.0, **kwargs):
        super(Scale, self).__init__(**kwargs)
        self.supports_masking = True
        self.factor = factor

    def call(self, inputs):
        return inputs * self.factor

    def get_config(self):
        config = super(Scale, self).get_config()
        config["factor"] = self.factor
        return config


class SplitOutputs(keras.layers.Layer):
    """Two outputs, one mask: Layer's default compute_mask."""

    def __init__(self, **kwargs):
        super(SplitOutputs, self).__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        return [inputs, inputs * 2.0]

    def compute_output_shape(self, input_shape):
        return [input_shape, input_shape]


def get_custom_objects():
    return {{"SplitOutputs": SplitOutputs, "Scale": Scale, "gelu": gelu}}


NOT_A_DICT = 3
'''
IMPORT_KERAS = {"keras": "import keras", "tf.keras": "from tensorflow import keras"}


def tokens(keras, name=None):
    return keras.layers.Input(shape=(STEPS,), dtype="int32", name=name)


def embedded(keras, x):
    return keras.layers.Embedding(VOCABULARY, 4, mask_zero=True)(x)


def multi_output_masking(keras, split_outputs):
    """Embedding(mask_zero) -> the user's two-output layer -> an LSTM each."""
    x = tokens(keras)
    first, second = split_outputs()(embedded(keras, x))
    return keras.models.Model(x, [keras.layers.LSTM(3)(first), keras.layers.LSTM(3)(second)])


def seq2seq(keras, num_tokens=5, latent_dim=8):
    """The training model of Keras's examples/lstm_seq2seq.py, small: the
    encoder's states are the decoder's initial_state."""
    encoder_inputs = keras.layers.Input(shape=(None, num_tokens))
    _, state_h, state_c = keras.layers.LSTM(latent_dim, return_state=True)(encoder_inputs)
    decoder_inputs = keras.layers.Input(shape=(None, num_tokens))
    decoder_outputs, _, _ = keras.layers.LSTM(latent_dim, return_sequences=True,
                                              return_state=True)(
        decoder_inputs, initial_state=[state_h, state_c])
    decoder_outputs = keras.layers.Dense(num_tokens, activation="softmax")(decoder_outputs)
    return keras.models.Model([encoder_inputs, decoder_inputs], decoder_outputs)


def nested_masked(keras):
    """A model fed a masked tensor, nested in another: 2.2.5 - 2.3.1 clone
    it without its mask."""
    inner_input = keras.layers.Input(shape=(STEPS, 4))
    inner = keras.models.Model(
        inner_input, keras.layers.LSTM(3, return_sequences=True)(inner_input), name="inner")
    x = tokens(keras)
    return keras.models.Model(x, keras.layers.LSTM(2)(inner(embedded(keras, x))))


def nested_model_with_its_own_mask(keras):
    """A model whose output carries the mask of its own Embedding, nested
    before an LSTM: tf.keras 1.11 - 1.13 drop that mask when the model is
    called on new tensors, as loading does."""
    x = tokens(keras)
    inner = keras.models.Model(
        x, keras.layers.LSTM(3, return_sequences=True)(embedded(keras, x)), name="inner")
    y = tokens(keras)
    return keras.models.Model(y, keras.layers.LSTM(2)(inner(y)))


def shared_masked_encoder(keras):
    """A masked encoder called on two inputs (a siamese network); its LSTM
    is called with training=False, a node with call arguments."""
    x = tokens(keras)
    encoder = keras.models.Model(
        x, keras.layers.LSTM(3)(embedded(keras, x), training=False), name="encoder")
    first, second = tokens(keras, "first"), tokens(keras, "second")
    return keras.models.Model([first, second], [encoder(first), encoder(second)])


def masked_gru_state(keras, module):
    """Masking -> the user's layer -> GRU(return_state=True), the last state
    into a Dense with the user's activation: a layer with two outputs fed a
    mask, in a model whose clones need the user's objects by name."""
    x = keras.layers.Input(shape=(STEPS, 3))
    scaled = module.Scale(0.5)(keras.layers.Masking()(x))
    _, state = keras.layers.GRU(4, return_state=True, name="gru")(scaled)
    return keras.models.Model(x, keras.layers.Dense(2, activation=module.gelu)(state))


def plain(keras):
    x = keras.layers.Input(shape=(4,))
    return keras.models.Model(x, keras.layers.Dense(2)(keras.layers.Dense(3)(x)))


def conv_batch_norm(keras):
    """Conv2D -> BatchNormalization: keras 2.2.4's multi_gpu_model cannot
    relocate it on TensorFlow 1.15 (tensorflow#30728), fix or no fix."""
    x = keras.layers.Input(shape=(8, 8, 3))
    y = keras.layers.BatchNormalization()(keras.layers.Conv2D(4, 3, padding="same")(x))
    return keras.models.Model(x, keras.layers.GlobalAveragePooling2D()(
        keras.layers.Activation("relu")(y)))


def vgg16(keras):
    """keras.applications' model with the fewest layers (19 without its
    top, which needs 224 x 224 inputs); 48 x 48 is its smallest input."""
    return keras.applications.VGG16(input_shape=(48, 48, 3), weights=None, include_top=False,
                                    pooling="avg")


def randomized(model, seed=0):
    """Weights far from their initial ones: a wrong mask shows."""
    random = numpy.random.RandomState(seed)
    model.set_weights([random.normal(size=weights.shape) for weights in model.get_weights()])
    return model


def word_level_encoder(keras, latent_dim=8):
    """The encoder of Keras's word-level seq2seq (the lstm_seq2seq example's
    note): token ids in a float32 `Input(shape=(None,))`, the default dtype,
    into an Embedding; its LSTM's states are the output."""
    tokens_in = keras.layers.Input(shape=(None,))
    embedded_tokens = keras.layers.Embedding(VOCABULARY, latent_dim)(tokens_in)
    _, state_h, state_c = keras.layers.LSTM(latent_dim, return_state=True)(embedded_tokens)
    return keras.models.Model(tokens_in, [state_h, state_c])


def word_level_decoder(keras, latent_dim=8):
    """Its decoder for inference: float32 token ids through a Dropout (which
    passes them on) into an Embedding, the LSTM called with initial_state
    from two more inputs."""
    tokens_in = keras.layers.Input(shape=(None,))
    states = [keras.layers.Input(shape=(latent_dim,)) for _ in range(2)]
    embedded_tokens = keras.layers.Embedding(VOCABULARY, latent_dim)(
        keras.layers.Dropout(0.5)(tokens_in))
    outputs, state_h, state_c = keras.layers.LSTM(latent_dim, return_sequences=True,
                                                  return_state=True)(
        embedded_tokens, initial_state=states)
    outputs = keras.layers.Dense(VOCABULARY, activation="softmax")(outputs)
    return keras.models.Model([tokens_in] + states, [outputs, state_h, state_c])


def cannot_predict(keras):
    """A model that no made input fits: its Embedding says 7 time steps
    (input_length), which its Dense's weights are sized for, while its
    input's length is unknown until it runs (made inputs have 8)."""
    x = keras.layers.Input(shape=(None,))
    embedded_tokens = keras.layers.Embedding(VOCABULARY, 2, input_length=7)(x)
    return keras.models.Model(x, keras.layers.Dense(2)(keras.layers.Flatten()(embedded_tokens)))
