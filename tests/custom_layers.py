"""The tests' custom layers, made on any Keras 2 family's Layer (keras,
tf.keras, tf_keras): `custom_layers(keras)` makes them once for each module.
tests/models.py binds them for multi-backend Keras, tests/random_models.py
for the family it draws a model with."""

# Time steps and token ids of the tests' models.
STEPS, VOCABULARY = 6, 20
_MADE = {}


def custom_layers(keras):
    """{name: class} of SplitOutputs, Attend and ConstantsCell on `keras`,
    registered by name there (a config or file of them loads, and so does
    a model holding them, which clone_model makes from its config)."""
    if keras.__name__ not in _MADE:
        _MADE[keras.__name__] = _make(keras)
        keras.utils.get_custom_objects().update(_MADE[keras.__name__])
    return _MADE[keras.__name__]


def _make(keras):
    K = keras.backend

    class SplitOutputs(keras.layers.Layer):
        """`count` outputs: (sum of the inputs) * 1, * 2, ...

        mask_rule says what compute_mask returns:
        "none": no masking, Layer's default (None);
        "pass": supports_masking with Layer's default, one mask for all outputs
                (a layer with several inputs passes its first input's mask);
        "list": an explicit list, the incoming mask for the first output, None after;
        "inputs": supports_masking with Layer's default, the masks as they come:
                for several inputs their list, output i taking mask i (a lone
                output the first, as bert4keras's conditional LayerNormalization).
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

    class Attend(keras.layers.Layer):
        """inputs * attention_mask: a custom layer called with a tensor keyword
        argument, `Attend()(x, attention_mask=w)`, which Keras 2.x records in the
        node's arguments only (not as an input). Passes the mask of `inputs` on."""

        def __init__(self, **kwargs):
            super(Attend, self).__init__(**kwargs)
            self.supports_masking = True

        def call(self, inputs, attention_mask=None):
            return inputs * attention_mask

        def compute_output_shape(self, input_shape):
            return input_shape

    class ConstantsCell(keras.layers.Layer):
        """A cell whose call takes constants: state + inputs W + constants V."""

        def __init__(self, units=3, **kwargs):
            super(ConstantsCell, self).__init__(**kwargs)
            self.units = self.state_size = units

        def build(self, input_shape):
            # keras and tf.keras 1.x: [the step's shape, the constants' shape];
            # tf_keras the step's alone (the constants then have `units` features).
            if input_shape[0] is None:
                step_size, constant_size = input_shape[-1], self.units
            else:
                step_size, constant_size = input_shape[0][-1], input_shape[-1][-1]
            self.kernel = self.add_weight(name="kernel", shape=(step_size, self.units),
                                          initializer="uniform")
            self.constant_kernel = self.add_weight(name="constant_kernel",
                                                   shape=(constant_size, self.units),
                                                   initializer="uniform")
            self.built = True

        def call(self, inputs, states, constants):
            output = states[0] + K.dot(inputs, self.kernel) + K.dot(constants[0],
                                                                    self.constant_kernel)
            return output, [output]

        def get_config(self):
            config = super(ConstantsCell, self).get_config()
            config["units"] = self.units
            return config

    return {"SplitOutputs": SplitOutputs, "Attend": Attend, "ConstantsCell": ConstantsCell}
