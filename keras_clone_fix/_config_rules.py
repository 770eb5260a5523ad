"""The rules on a model's config: a frozen model written and read as
frozen, a Lambda's mask and a call's tensor arguments written and read,
a layer's calls made in their order, and a SavedModel folder loaded from its
config (with the custom objects load_model is given)."""

import ast

from keras_clone_fix._rewrite import (
    STATEMENT_LISTS, Rule, call_node, helper_name, is_attribute, located, name_of, nodes_in,
    unlocated_copy)
from keras_clone_fix._runtime import (
    lambda_mask_read, lambda_masks_written, layer_calls_in_order, load_model_custom_objects_scope,
    saved_model_from_config, tensor_arguments_read, tensor_arguments_written, trainable_read,
    trainable_written)


class _ModelReturned(Rule):
    """The def's own last statement, `return <value>` where `returns(value)`
    holds (not a return of a function nested in it) -> `return <helper>(<self.given>...,
    <value>)`."""

    given = ()  # the names of the def that the helper is given before the value

    def returns(self, value):
        raise NotImplementedError

    def visit_FunctionDef(self, node):
        last = node.body[-1]
        if isinstance(last, ast.Return) and last.value is not None and self.returns(last.value):
            given = [ast.Name(id=name, ctx=ast.Load()) for name in self.given]
            last.value = located(call_node(helper_name(self.helpers[0]), *(given + [last.value])),
                                 last.value)
            self.rewritten(last)
        return node


class TrainableWrittenInConfig(_ModelReturned):
    """A model's `get_config`: `return copy.deepcopy(config)` ->
    `return trainable_written(self, copy.deepcopy(config))`; a Sequential
    model's own `get_config` returns its `config` as it is from keras 2.2.3
    and tensorflow 1.11 (a dict of its name and layers; a list of its layers
    before): `return config` -> `return trainable_written(self, config)`.

    A model's config has no `trainable` on Keras 2.0.0 - 2.3.1 and tf.keras
    of TensorFlow 1.4 - 1.13 (Container's, Network's get_config), and
    setting a model's `trainable` leaves its layers' flags as they were: a
    frozen nested model came back trainable from `Model.from_config`,
    `model_from_json` and `load_model`, its weights listed among the
    trainable ones (4 for 2). The config of a frozen model says
    `"trainable": false`, a key the releases' `from_config` does not read
    (a file saved with it loads as before where the fix is not installed);
    the config of any other model stays what the release writes.
    TrainableReadFromConfig reads it back. A frozen Sequential model nested
    in another came back trainable too, with or without the rest of the fix
    (keras 2.0.0 - 2.3.1, tensorflow 1.4 - 1.13: 4 trainable weights for 2):
    its own `get_config` writes the configs of its layers, which say
    `"trainable": false` with the fix. TensorFlow 1.14's `trainable` setter
    sets the flag of every layer inside, whose configs carry it.
    """

    helpers = (trainable_written,)
    given = ("self",)

    def returns(self, value):
        return _is_models_config(value)


def _is_models_config(value):
    """`config` or `copy.deepcopy(config)`, what a model's get_config returns."""
    if isinstance(value, ast.Call) and is_attribute(value.func, "copy", "deepcopy"):
        value = value.args[0] if len(value.args) == 1 else None
    return name_of(value) == "config"


class LambdaMaskWritten(_ModelReturned):
    """A model's `get_config`, after TrainableWrittenInConfig: `return
    trainable_written(self, <config>)` -> `return lambda_masks_written(self,
    trainable_written(self, <config>))`.

    `Lambda.get_config` leaves out the `mask` of `Lambda(fn, mask=...)` on
    Keras 2.0.0 - 2.3.1 and tf.keras of TensorFlow 1.4 - 1.13: the model
    made from its config, its JSON or its file computed without it, and the
    layers after the Lambda counted the padding. The model's config writes
    each Lambda's mask function beside the Lambda's config, in a key the
    releases' `from_config` does not read: such a file loads as before where
    the fix is not installed. LambdaMaskRead reads it back. TensorFlow 1.14
    writes the mask into the Lambda's own config (keys its earlier releases
    refuse).
    """

    helpers = (lambda_masks_written,)
    given = ("self",)

    def returns(self, value):
        return (isinstance(value, ast.Call) and name_of(value.func) == helper_name(
            trainable_written).id and _is_models_config(value.args[-1]))


class LambdaMaskRead(Rule):
    """A model's `from_config` (a Sequential's too): `layer =
    deserialize(<entry>, custom_objects=...)` -> `layer =
    lambda_mask_read(<entry>, deserialize(...), <custom_objects>)`.

    The layer made from its entry of the config gets the mask function that
    LambdaMaskWritten wrote there before the model calls it.
    """

    helpers = (lambda_mask_read,)

    def visit_Assign(self, node):
        value = node.value
        if (name_of(node.targets[0]) == "layer" and isinstance(value, ast.Call) and value.args
                and _deserializes(value.func)):
            given = [unlocated_copy(keyword.value) for keyword in value.keywords
                     if keyword.arg == "custom_objects"]
            node.value = located(call_node(helper_name(lambda_mask_read),
                                           unlocated_copy(value.args[0]), value, *given), value)
            return self.rewritten(node)
        return node


def _deserializes(function):
    return name_of(function) == "deserialize_layer" or (
        isinstance(function, ast.Attribute) and function.attr == "deserialize")


class TrainableReadFromConfig(_ModelReturned):
    """A model's `from_config`: `return cls(...)` ->
    `return trainable_read(config, cls(...))`.

    The model made from a config that says `"trainable": false`
    (TrainableWrittenInConfig) is frozen, as the model that wrote it was:
    Keras 2.0.0 - 2.3.1 and tf.keras of TensorFlow 1.4 - 1.13 read no
    `trainable` of a model. A config written without the fix has none:
    such a file cannot tell that its nested model was frozen.
    """

    helpers = (trainable_read,)
    given = ("config",)

    def returns(self, value):
        return isinstance(value, ast.Call) and name_of(value.func) == "cls"


class LayerCallsKeptInOrder(Rule):
    """`for node_data in unprocessed_nodes.pop(layer): process_node(layer,
    node_data)` -> `layer_calls_in_order(unprocessed_nodes, layer,
    process_node)`.

    A model's `from_config` (Keras 2.0.7 - 2.2.4, tf.keras of TensorFlow
    1.4 - 1.15; TensorFlow 2.0 - 2.1's `reconstruct_from_config`, which
    their `from_config` and `clone_model` both call) queues each layer's
    calls and makes them layer by layer. A
    call whose inputs were not made yet went back to the queue while the
    layer's later calls were made: the rebuilt layer's nodes came in another
    order, and the calls that name them by index took the wrong ones
    (keras-team/keras#11159). A nested model of shared layers then came
    back from a clone, or a saved file, computing something else, silently.
    On TensorFlow 2.0 - 2.1 the routine also counts the calls it made to map
    the config's node indices, so every clone was wired that way too.
    Keras 2.2.5 stops at the first call that must wait, and so does the fix.
    """

    helpers = (layer_calls_in_order,)

    def visit_For(self, node):
        self.generic_visit(node)
        queued, body = node.iter, node.body
        if (isinstance(queued, ast.Call) and is_attribute(queued.func, "unprocessed_nodes", "pop")
                and len(queued.args) == 1 and not node.orelse and len(body) == 1
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Call)
                and name_of(body[0].value.func) == "process_node"):
            call = call_node(helper_name(layer_calls_in_order),
                             ast.Name(id="unprocessed_nodes", ctx=ast.Load()),
                             unlocated_copy(queued.args[0]),
                             ast.Name(id="process_node", ctx=ast.Load()))
            return located(self.rewritten(ast.Expr(value=call)), node)
        return node


class TensorArgumentsWritten(_ModelReturned):
    """A model's `get_config`, after TrainableWrittenInConfig and
    LambdaMaskWritten where its target has them: `return <config>` ->
    `return tensor_arguments_written(self, node_conversion_map, <config>)`.

    Keras 2.0.0 - 2.3.1 and tf.keras of TensorFlow 1.4 - 1.14 leave out of
    the config every argument of a layer call when JSON cannot hold one,
    with a warning: a tensor argument (`Attend()(x, attention_mask=w)`,
    `LSTM(2)(x, mask=m)`) is not there, and `Model.from_config`,
    `model_from_json` and `load_model` make the call without it
    (`ValueError`, or other numbers with no error: tf.keras 1.13). Their
    `from_config` passes a call's arguments to the layer as the config has
    them, so no form of those arguments brings a tensor back. The model's
    config writes them in the layer's entry, each tensor as TensorFlow 1.15
    and tf_keras write it, `[layer name, node index, tensor index]`, in a key
    the releases' `from_config` does not read: such a file loads as before
    where the fix is not installed. TensorArgumentsRead reads them back. A
    tensor that no layer of the model makes (a backend constant) has no such
    name: the config is refused in one line (ArgumentNotInConfig).
    """

    helpers = (tensor_arguments_written,)
    given = ("self", "node_conversion_map")

    def returns(self, value):
        written = (helper_name(trainable_written).id, helper_name(lambda_masks_written).id)
        return _is_models_config(value) or (
            isinstance(value, ast.Call) and name_of(value.func) in written)


def _calls_layer_with_kwargs(statement):
    """Whether `statement` holds `layer(<inputs>, **kwargs)`, the call a
    model's from_config makes of each layer."""
    for node in nodes_in(statement):
        if isinstance(node, ast.Call) and name_of(node.func) == "layer":
            starred = [keyword.value for keyword in node.keywords if keyword.arg is None]
            starred += [node.kwargs] if getattr(node, "kwargs", None) else []  # Python 2
            if any(name_of(value) == "kwargs" for value in starred):
                return True
    return False


def _waits_for_a_node(statement):
    """`if len(<layer's nodes>) <= inbound_node_index: <wait>`, where a model's
    from_config puts back a call whose input is not made yet."""
    test = getattr(statement, "test", None)
    return (isinstance(statement, ast.If) and isinstance(test, ast.Compare)
            and len(test.ops) == 1 and isinstance(test.ops[0], ast.LtE)
            and name_of(test.comparators[0]) == "inbound_node_index")


class TensorArgumentsRead(Rule):
    """A model's `from_config`, where it makes a layer call: before the
    statement that calls `layer(..., **kwargs)`, `kwargs =
    tensor_arguments_read(config, layer, kwargs, created_layers)` and, where
    it is None, what the routine does for an input not made yet (`if
    len(inbound_layer._inbound_nodes) <= inbound_node_index: <wait>`: the
    call goes back to the queue, or LookupError from keras 2.2.5). Keras
    2.0.0 - 2.0.6 make each layer's calls as they make the layer, and wait
    for nothing: there the helper is given `True` and raises, as they do for
    an input not made yet (`Missing layer`).

    The call gets the arguments TensorArgumentsWritten kept for it, each
    tensor made from the layer, node and tensor it names, and waits until
    that tensor is made, as for its inputs.
    """

    helpers = (tensor_arguments_read,)

    def visit_FunctionDef(self, node):
        waits = [statement for statement in nodes_in(node) if _waits_for_a_node(statement)]
        for owner in nodes_in(node):  # outermost first
            for field in STATEMENT_LISTS:
                statements = getattr(owner, field, None)
                for index, statement in enumerate(statements or ()):
                    if isinstance(statement, ast.If) and _calls_layer_with_kwargs(statement):
                        statements[index:index + 1] = self._read(statement, waits) + [statement]
                        return node
        return node

    def _read(self, statement, waits):
        if not waits:
            read, = unlocated_copy(ast.parse(
                "kwargs = f(config, layer, kwargs, created_layers, True)\n").body)
            read.value.func = helper_name(tensor_arguments_read)
            return [located(self.rewritten(read), statement)]
        read, wait = unlocated_copy(ast.parse(
            "kwargs = f(config, layer, kwargs, created_layers)\n"
            "if kwargs is None:\n    pass\n").body)
        read.value.func = helper_name(tensor_arguments_read)
        wait.body = unlocated_copy(waits[0].body)
        return [located(self.rewritten(read), statement), located(wait, statement)]


class SavedModelLoadedFromConfig(Rule):
    """The SavedModel loader's `load(path, compile, ...)` starts with `model
    = saved_model_from_config(path, compile, saving_utils)` and
    `if model is not None: return model`.

    TensorFlow 2.0 - 2.4 load a Keras model saved as a SavedModel folder
    from the functions traced when it was saved, not from its config, which
    the folder holds too: a masked model loaded without its masks (2.0 -
    2.1: other numbers, or `load_model` raises), a model holding a
    functional model did not load (2.1: NotImplementedError), a frozen
    model inside another loaded trainable (2.2 - 2.4). The model is made
    from its config as a model file's is, given the folder's weights, each
    found by its path and its layer's name or the load refused in one line
    (SavedModelWeightsMissing), and compiled as the release compiles it. A
    folder without a Keras model's config (a subclassed model, a custom
    layer without get_config) loads as before.
    """

    helpers = (saved_model_from_config,)

    def visit_FunctionDef(self, node):
        rebuilt = ast.parse("model = {}(path, compile, saving_utils)\n"
                            "if model is not None:\n    return model\n".format(
                                helper_name(saved_model_from_config).id)).body
        node.body[:0] = [located(statement, node.body[0]) for statement in rebuilt]
        self.rewritten(node)
        return node


class CustomObjectsInScope(Rule):
    """The SavedModel loader's `load(path, compile, ...)`: its body, the
    fix's loading (SavedModelLoadedFromConfig) first, runs under `with
    load_model_custom_objects_scope(saving_utils):`, the custom_objects of
    the load_model call that runs it.

    TensorFlow 2.0 - 2.1's `load_model(folder, custom_objects=...)` gives
    `load` no custom objects (2.2 runs it in their CustomObjectScope): the
    model's config could not be made of a custom layer given so, and the
    folder loaded as the release loads it (a model holding a functional
    model: NotImplementedError). Every public name of load_model is the
    save module's function itself, bound in several modules: `load`, which
    it calls by its module's attribute, is where the fix reaches them all.
    """

    helpers = (load_model_custom_objects_scope,)

    def visit_FunctionDef(self, node):
        scoped, = ast.parse("with {}(saving_utils):\n    pass\n".format(
            helper_name(load_model_custom_objects_scope).id)).body
        scoped.body = node.body
        node.body = [located(scoped, node.body[0])]
        self.rewritten(node)
        return node
