"""Models holding a nested model with a custom layer that the user
registered nowhere (issue 58): no custom_objects, no CustomObjectScope, no
registration. The clone routines make a nested model (in a wrapper too)
from its config, whose from_config finds each layer's class by name:
`Unknown layer: Twice` unpatched on every release the fix patches, and a
TypeError on tf_keras 2.21 (not patched: `Cannot deserialize object of type
`Twice`` for a class of a script's `__main__`, `'str' object is not
callable` for one its module does not name). Built with any Keras 2
family's module (keras, tf.keras, tf_keras)."""

import importlib

import numpy
import pytest

from conftest import fix_in_mode
from keras_clone_fix import _check

STEPS, BATCH = 4, 3
# What the releases that are not patched raise for such a clone: keras 2.7 on
# (Unknown layer), tf_keras (a class of __main__; of a module that does not name
# it, the class's name instead of the layer or cell).
REFUSALS = ("Unknown layer", "Cannot deserialize object of type", "'str' object is not callable",
            "should have a `call` method")


def twice_class(keras):
    """`Twice()(x)` is `x * 2`: a layer of the user's script, made anew on
    each call, so no registry of the family can know it."""
    class Twice(keras.layers.Layer):
        def call(self, inputs):
            return inputs * 2.0

        def compute_output_shape(self, input_shape):
            return input_shape

    assert "Twice" not in getattr(keras.utils, "get_custom_objects", dict)()
    return Twice


def inner_model(keras, name="inner"):
    """Model(i, Twice()(Dense(2)(i))): the issue's nested model."""
    L = keras.layers
    i = L.Input(shape=(3,))
    return keras.models.Model(i, twice_class(keras)(name="twice")(L.Dense(2, name="h")(i)),
                              name=name)


def nested(keras):
    """The issue's model: Model(x, Dense(1)(inner(x)))."""
    x = keras.layers.Input(shape=(3,))
    return keras.models.Model(x, keras.layers.Dense(1, name="top")(inner_model(keras)(x)))


def frozen(keras):
    """The same with the inner model frozen."""
    inner = inner_model(keras)
    inner.trainable = False
    x = keras.layers.Input(shape=(3,))
    return keras.models.Model(x, keras.layers.Dense(1, name="top")(inner(x)))


def two_deep(keras):
    """The inner model inside a middle one, inside the model."""
    x = keras.layers.Input(shape=(3,))
    middle = keras.models.Model(x, inner_model(keras)(x), name="middle")
    y = keras.layers.Input(shape=(3,))
    return keras.models.Model(y, keras.layers.Dense(1, name="top")(middle(y)))


def in_a_wrapper(keras):
    """TimeDistributed(inner) over STEPS steps: the wrapper's config makes
    the inner model from its own."""
    L = keras.layers
    x = L.Input(shape=(STEPS, 3))
    return keras.models.Model(x, L.Dense(1, name="top")(
        L.TimeDistributed(inner_model(keras), name="wrapper")(x)))


def in_a_sequential(keras):
    """Sequential([inner, Dense(1)]): the Sequential clone routine."""
    return keras.models.Sequential([inner_model(keras), keras.layers.Dense(1, name="top")])


def cell_class(keras):
    """A recurrent cell of the user's script: state + inputs W."""
    class Cell(keras.layers.Layer):
        def __init__(self, units=2, **kwargs):
            super(Cell, self).__init__(**kwargs)
            self.units = self.state_size = units

        def build(self, input_shape):
            self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], self.units),
                                          initializer="uniform")
            self.built = True

        def call(self, inputs, states):
            output = states[0] + keras.backend.dot(inputs, self.kernel)
            return output, [output]

        def get_config(self):
            config = super(Cell, self).get_config()
            config["units"] = self.units
            return config

    return Cell


def cell_in_a_nested_model(keras):
    """Model(x, Dense(1)(inner(x))), inner an RNN of a custom cell: the
    RNN's config makes the cell by name."""
    L = keras.layers
    if not hasattr(L, "RNN"):
        pytest.skip("{} has no RNN layer of a cell".format(_check.release_name(keras)))
    i = L.Input(shape=(STEPS, 3))
    inner = keras.models.Model(i, L.RNN(cell_class(keras)(2), name="rnn")(i), name="inner")
    x = L.Input(shape=(STEPS, 3))
    return keras.models.Model(x, L.Dense(1, name="top")(inner(x)))


BUILDS = [nested, frozen, two_deep, in_a_wrapper, in_a_sequential, cell_in_a_nested_model]


def inputs_of(model):
    shape = (BATCH,) + tuple(int(size) for size in model.input_shape[1:])
    return numpy.random.RandomState(0).normal(size=shape).astype("float32")


def mask_of_class(keras):
    """`MaskOf()(tokens)` is `tokens > 0`: a mask-making custom layer,
    registered nowhere."""
    class MaskOf(keras.layers.Layer):
        def call(self, inputs):
            return keras.backend.greater(inputs, 0)

        def compute_output_shape(self, input_shape):
            return input_shape

    assert "MaskOf" not in getattr(keras.utils, "get_custom_objects", dict)()
    return MaskOf


def unmade_class(keras):
    """A custom layer whose from_config cannot take its own get_config: its
    config leaves out `factor`, which __init__ requires."""
    class Scaled(keras.layers.Layer):
        def __init__(self, factor, **kwargs):
            super(Scaled, self).__init__(**kwargs)
            self.factor = factor

        def call(self, inputs):
            return inputs * self.factor

        def compute_output_shape(self, input_shape):
            return input_shape

        def get_config(self):
            return super(Scaled, self).get_config()

    return Scaled


def model_of_an_unmade_layer(keras):
    L = keras.layers
    i = L.Input(shape=(3,))
    inner = keras.models.Model(i, unmade_class(keras)(2.0, name="scaled")(i), name="inner")
    x = L.Input(shape=(3,))
    return keras.models.Model(x, L.Dense(1)(inner(x)))


def error_of(make):
    """'<class name>: <message>' of what make() raises; None where it does not."""
    try:
        make()
    except Exception as error:
        return "{}: {}".format(type(error).__name__, error)
    return None


def skip_where_not_patched(keras, clone):
    """On a release the fix leaves alone (tf_keras, keras 2.7 on), the
    clone() of such a model raises: the test skips, saying with what."""
    refused = error_of(clone)
    assert refused is not None and any(said in refused for said in REFUSALS), refused
    pytest.skip("{} (not patched) raises too: {}".format(keras.__name__, refused[:100]))


def assert_copies_are_the_model(keras, model, copies):
    """Each copy (copy, the model that predicts with it, or None: the copy
    itself) has the model's layers by name and class, new weights and the
    model's trainable weights, and predicts what the model predicts once
    given its weights: exactly, where the copy predicts itself."""
    data = inputs_of(model)
    expected = model.predict(data)

    def described(each):
        return [(path, type(layer)) for path, layer in _check.all_layers(keras, each)], [
            tuple(keras.backend.int_shape(weight)) for weight in each.trainable_weights]

    originals = set(id(weight) for weight in model.weights)
    for copy, predicting in copies:
        assert described(copy) == described(model)
        assert not originals & set(id(weight) for weight in copy.weights)
        if predicting is None:
            numpy.testing.assert_array_equal(copy.predict(data), expected)
        else:  # each replica computes half the batch: rounded otherwise (2.4e-07, keras 2.3.1)
            numpy.testing.assert_allclose(predicting.predict(data), expected, rtol=1e-6,
                                          atol=1e-6)


def cloned(model, clone_model):
    clone = clone_model(model)
    clone.set_weights(model.get_weights())
    return clone


def assert_unmade_layer_raises_what_the_release_raises(keras, clone_model):
    """The clone of model_of_an_unmade_layer raises what the release raises,
    unpatched, given the class by name: TypeError (`factor` missing)."""
    model = model_of_an_unmade_layer(keras)
    got = error_of(lambda: clone_model(model))
    scaled = type(model.get_layer("inner").get_layer("scaled"))
    # The keras package 2.5 - 2.6 exports its API from keras.api._v2.keras.
    scope = getattr(keras.utils, "custom_object_scope", None) or importlib.import_module(
        keras.__name__ + ".utils.generic_utils").custom_object_scope
    with fix_in_mode("unpatched"), scope({"Scaled": scaled}):
        want = error_of(lambda: clone_model(model))
    assert want is not None and want.startswith("TypeError")
    assert got == want


def assert_a_clone_function_is_applied_as_given(keras, clone_model):
    """clone_model(model, clone_function=...): the user's function, which
    makes the nested model from its config, meets the release's own error,
    with the fix as without it."""
    model = nested(keras)
    copied = []

    def from_its_config(layer):
        copied.append(layer.name)
        return layer.__class__.from_config(layer.get_config())

    def clone():
        return error_of(lambda: clone_model(model, clone_function=from_its_config))

    got = clone()
    with fix_in_mode("unpatched"):
        want = clone()
    assert got == want and "Twice" in got and copied[-1] == "inner"
