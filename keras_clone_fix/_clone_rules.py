"""The rules on what a clone routine's copy of a model keeps from the
original: what a layer's config leaves out, nested models, and the input
layers of given input tensors."""

import ast

from keras_clone_fix._rewrite import (
    Rule, call_node, helper_name, is_attribute, located, name_of, nodes_in, unlocated_copy)
from keras_clone_fix._runtime import (
    cloned_where_config_refused, given_input_layer, given_input_layers_mapped, lambda_mask_kept,
    made_with_live_classes, trainable_kept)


def _makes_from_config(value):
    return any(isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
               and call.func.attr == "from_config" for call in nodes_in(value))


def _deferred(value):
    """`lambda: <value>`: a helper makes the copy, when it decides to."""
    made = unlocated_copy(ast.parse("lambda: None", mode="eval").body)
    made.body = value
    return made


class _KeptInTheClone(Rule):
    """`new_layer = <... .from_config(...) ...>` -> `new_layer = <helper>(layer, <the same>)`
    (the functional clone routine), and `return layer.__class__.from_config(...)` ->
    `return <helper>(layer, <the same>)` (the Sequential one's `clone(layer)`):
    the clone routine's copy of a layer, made from the layer's config, gets
    back what the config leaves out (the rule's one helper says what).
    Applied after each other, the second wraps the first."""

    def _arguments(self, value):
        """The helper's arguments: the layer, and its copy made from its config."""
        return [ast.Name(id="layer", ctx=ast.Load()), value]

    def _kept(self, node):
        node.value = located(call_node(helper_name(self.helpers[0]), *self._arguments(node.value)),
                             node.value)
        return self.rewritten(node)

    def visit_Assign(self, node):
        if name_of(node.targets[0]) == "new_layer" and _makes_from_config(node.value):
            return self._kept(node)
        return node

    def visit_Return(self, node):
        if node.value is not None and _makes_from_config(node.value) and any(
                name_of(name) == "layer" for name in nodes_in(node.value)):
            return self._kept(node)
        return node


class LambdaMaskKept(_KeptInTheClone):
    """`new_layer = layer.__class__.from_config(layer.get_config())` ->
    `new_layer = lambda_mask_kept(layer, <the same>)`.

    `Lambda.get_config` leaves out the `mask` given to `Lambda(fn,
    mask=...)` on Keras 2.0.7 - 2.3.1 (every release with clone_model) and
    tf.keras of TensorFlow 1.4 - 1.13; TensorFlow 1.14 writes it into the
    config (`mask`, `mask_type`, `mask_module`). The clone's Lambda had no
    mask, and the layers after it counted the padding, silently; so did
    the clone of a Sequential model, whose routine makes each layer in
    `clone(layer)` (`return` instead of `new_layer =`). The clone
    gets the original's mask object; the config, and so a saved file, stays
    what the release writes.
    """

    helpers = (lambda_mask_kept,)


class TrainableKept(_KeptInTheClone):
    """`new_layer = layer.__class__.from_config(layer.get_config())` ->
    `new_layer = trainable_kept(layer, <the same>)`.

    A model's `get_config` (Container's, Network's) has no `trainable` on
    Keras 2.0.7 - 2.3.1 and tf.keras of TensorFlow 1.4 - 1.13, and setting a
    model's `trainable` leaves its layers' own flags as they were: a frozen
    nested model came back trainable in the clone, and training the clone
    trained it (keras-team/keras#11022); a Sequential model's clone (its
    `clone(layer)`) too. TensorFlow 1.14's `trainable` setter sets the flag
    of every layer inside, whose configs then carry it.
    The clone gets the original's flag; the config stays as it is.
    """

    helpers = (trainable_kept,)


class NestedModelArgumentsKept(_KeptInTheClone):
    """`new_layer = layer.__class__.from_config(layer.get_config())` ->
    `new_layer = cloned_where_config_refused(layer, lambda: <the same>,
    clone_model)`; the same in the `return` of the Sequential routine's
    `clone(layer)` and of tf.keras 1.14's `_clone_layer` (clone_model's
    default clone_function). Applied before the other rules of the family,
    which wrap what it makes.

    The clone routines of Keras 2.0.7 - 2.3.1 and tf.keras of TensorFlow
    1.4 - 1.14 make every layer from its config, a nested model too, and a
    model's config there leaves out a call's tensor arguments: a model
    holding one whose layer takes a tensor argument (`inner([h, w])`,
    `Attend()(a, attention_mask=w)` inside; `LSTM(2)(x, mask=m)`) came back
    from the clone computing without it (`ValueError: None values not
    supported.`, or other numbers). TensorFlow 1.15 and tf_keras write the
    tensor into the config, and the copy made from it keeps it; so does the
    fix (TensorArgumentsWritten and TensorArgumentsRead, which alone make
    those clones right), but for a tensor that no layer of the nested model
    makes (`attention_mask=K.constant(...)`), whose config it refuses
    (ArgumentNotInConfig). Such a model, and only such, is cloned by the
    release's own clone routine (clone_model, fixed), its calls made with
    their arguments; the lambda keeps the config from being written first.
    """

    helpers = (cloned_where_config_refused,)

    def _arguments(self, value):
        return [ast.Name(id="layer", ctx=ast.Load()), _deferred(value),
                ast.Name(id="clone_model", ctx=ast.Load())]


class NestedLayerClassesKept(_KeptInTheClone):
    """`new_layer = layer.__class__.from_config(layer.get_config())` ->
    `new_layer = made_with_live_classes(layer, lambda: <the same>,
    __name__)`; the same in the `return` of the Sequential routine's
    `clone(layer)` and of `_clone_layer` (clone_model's default
    clone_function, tf.keras 1.14 - 2.5 and keras 2.5 - 2.6, which
    clone_model reads when called). Applied first: the copy is made inside
    what the other rules of the family wrap around it.

    A nested model (a wrapper, an RNN) is made from its config, and its
    from_config finds the class of each layer inside by name: a custom
    layer the user never registered raised `Unknown layer: Twice` (Keras
    2.x; tf.keras: `Unknown layer`; tensorflow#18756, model_to_estimator),
    though the clone holds the live layers. The copy is made in a
    custom-object scope of the release naming each of their classes
    (`__name__` is the routine's module, beside which the release's scope
    is): the same classes, fresh weights as before. Keras 3 clones a
    nested model from its live layers (clone_model(recursive=True)).
    """

    helpers = (made_with_live_classes,)

    def _arguments(self, value):
        return [ast.Name(id="layer", ctx=ast.Load()), _deferred(value),
                ast.Name(id="__name__", ctx=ast.Load())]


class GivenInputLayersKept(Rule):
    """After `for x, y in zip(model.inputs, input_tensors): ...`, add
    `given_input_layers_mapped(layer_map, model.inputs, input_tensors)`.

    Given `input_tensors`, every clone routine (Keras 2.0.7 - 2.3.1, tf.keras
    of TensorFlow 1.4 - 1.15) left the model's input layers out of its layer
    map: the loop over the nodes then made a copy of each from its config
    and called it on the given tensor. The clone predicted right, but held an
    input layer called on another, and a file saved from it did not load
    (`Graph disconnected`, keras-team/keras#11857). Each original input layer
    is mapped to the given tensor's input layer, as the routine maps it to the
    new `Input` it makes when none is given.
    """

    helpers = (given_input_layers_mapped,)

    def visit_For(self, node):
        self.generic_visit(node)
        given = node.iter
        if (isinstance(given, ast.Call) and name_of(given.func) == "zip" and len(given.args) == 2
                and is_attribute(given.args[0], "model", "inputs")
                and name_of(given.args[1]) == "input_tensors"):
            call = call_node(helper_name(given_input_layers_mapped),
                             ast.Name(id="layer_map", ctx=ast.Load()),
                             unlocated_copy(given.args[0]),
                             ast.Name(id="input_tensors", ctx=ast.Load()))
            return [node, located(self.rewritten(ast.Expr(value=call)), node)]
        return node


class GivenInputLayersTaken(Rule):
    """`new_input_layers[original_input_layer] = original_input_layer` ->
    `new_input_layers[original_input_layer] = given_input_layer(input_tensor,
    original_input_layer, original_input_layer)`.

    Given `input_tensors` that are Keras tensors, the clone routine of
    tf.keras 2.0 - 2.5 and keras 2.6 maps each of the model's input layers to
    itself (GivenInputLayersKept's releases left it out of the map): the
    clone is built on the original model's inputs, not on the given ones,
    and `Model(given, clone.output)` raises `Graph disconnected`. Keras 2.7
    maps it to the given tensor's layer, and so does the fix, where that is
    an input layer (a tensor of another layer keeps the release's handling).
    """

    helpers = (given_input_layer,)

    def visit_Assign(self, node):
        target, value = node.targets[0], node.value
        if (len(node.targets) == 1 and isinstance(target, ast.Subscript)
                and name_of(target.value) == "new_input_layers"
                and name_of(getattr(target.slice, "value", target.slice)) == "original_input_layer"
                and name_of(value) == "original_input_layer"):
            node.value = located(call_node(helper_name(given_input_layer),
                                           ast.Name(id="input_tensor", ctx=ast.Load()),
                                           ast.Name(id="original_input_layer", ctx=ast.Load()),
                                           ast.Name(id="original_input_layer", ctx=ast.Load())),
                                 value)
            return self.rewritten(node)
        return node
