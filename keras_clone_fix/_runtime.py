"""What the fixed twins and their build share: the helpers that fixed code
calls at run time (by name, HELPERS), and the error of a function the rules
cannot fix. Imported by both the build (_build and the rules) and the warm path (_fix),
and importing neither: no module of the package imports one that imports it.
"""

import json
import sys
from copy import copy as shallow_copy


class UnsupportedFunction(Exception):
    """The installed function is not one the rules know how to correct."""


def one_mask_per_output(mask, output_tensors):
    """The masks `Layer.__call__` records for the outputs (Keras 2.0.7 -
    2.3.1): a mask that is not a list or tuple is repeated once per output;
    of a list of more masks than outputs, output i has mask i (a layer of
    one output on several masked inputs: the first); other lists and
    tuples are kept."""
    if not isinstance(mask, (list, tuple)):
        return [mask] * len(output_tensors) if len(output_tensors) > 1 else mask
    if isinstance(mask, list) and len(mask) > len(output_tensors):
        return mask[:len(output_tensors)]
    return mask


def _nodes_of(layer):
    # Keras 2.0.x names the list inbound_nodes, 2.1 and later _inbound_nodes.
    nodes = getattr(layer, "_inbound_nodes", None)
    return layer.inbound_nodes if nodes is None else nodes


def making_node(tensor):
    """The node (the layer call) that made a Keras tensor."""
    layer, node_index = tensor._keras_history[:2]
    return _nodes_of(layer)[node_index]


def recorded_output_masks(output_tensors):
    """The masks `Layer.__call__` recorded for these outputs of a layer call
    (what the next layer call will use): on the node it added (Keras), or
    on each tensor as `_keras_mask` (tf.keras, whose nodes keep no masks)."""
    masks = []
    for tensor in output_tensors:
        node = making_node(tensor)
        if hasattr(node, "output_masks"):
            masks.append(node.output_masks[tensor._keras_history[2]])
        else:
            masks.append(getattr(tensor, "_keras_mask", None))
    return masks


def mask_through_input_layer(layer, inputs, mask):
    """`layer.compute_mask(inputs, mask)`, except that an InputLayer passes
    the mask it is given on, as InputLayer does from Keras 2.2.3 and tf.keras
    1.13 (`supports_masking = True`)."""
    if is_input_layer(layer):
        return mask
    return layer.compute_mask(inputs, mask)


def is_input_layer(layer):
    """An InputLayer, known by its class or by a base of that name: tf.keras
    1.4 - 1.6's InputLayer is tf.layers' InputLayer with Keras's Layer mixed in."""
    return any(cls.__name__ == "InputLayer" for cls in type(layer).__mro__)


def keras_masks(outputs):
    """The `_keras_mask` each output tensor carries (None where it has none):
    a list for a list or tuple of outputs."""
    if isinstance(outputs, (list, tuple)):
        return [getattr(output, "_keras_mask", None) for output in outputs]
    return getattr(outputs, "_keras_mask", None)


def masks_paired(outputs, masks):
    """`masks` as TensorFlow 1.14 and tf_keras pair them with `outputs`: in
    order, a lone output taking the first of a list and a list of outputs
    a lone mask as its first's."""
    if masks is None:
        return None
    listed = list(masks) if isinstance(masks, (list, tuple)) else [masks]
    if isinstance(outputs, (list, tuple)):
        return listed
    return listed[0] if listed else None


def masks_on_copies(returned, copies):
    """Each copy `Layer.__call__` made of an output that is one of the
    layer's inputs carries the mask it set on that output."""
    for output, copy in zip(returned, copies):
        if copy is not output and hasattr(output, "_keras_mask"):
            copy._keras_mask = output._keras_mask


def computes_masks(layer):
    """Whether a layer computes its output masks: its `supports_masking`
    says so, or its class has a compute_mask of its own (as tf_keras
    decides). tf.keras's Bidirectional of TensorFlow 1.11 - 1.13 sets the
    flag before `Layer.__init__` resets it to False, and its compute_mask
    is what `Layer.__call__` uses."""
    if layer.supports_masking:
        return True
    owner = next((cls for cls in type(layer).__mro__ if "compute_mask" in vars(cls)), None)
    return owner is not None and owner.__name__ != "Layer"


def _flat(value):
    """A nest of lists and tuples, flat."""
    if isinstance(value, (list, tuple)):
        return [item for part in value for item in _flat(part)]
    return [value]


def propagated_mask_popped(kwargs, inputs):
    """Pops `kwargs['mask']` where it is the masks the inputs carry, which
    `Layer.__call__` put there itself (tf.keras): a mask the caller gave
    (`LSTM(2)(x, mask=m)`, `mask=None` on a masked tensor) stays, to be
    recorded among the call's arguments."""
    if "mask" not in kwargs:
        return
    given, carried = _flat(kwargs["mask"]), _flat(keras_masks(_flat(inputs)))
    if len(given) == len(carried) and all(g is c for g, c in zip(given, carried)):
        del kwargs["mask"]


def without_propagated_mask(arguments, node):
    """`arguments` without a `mask` that is exactly the masks the node's
    input tensors carried: the one `Layer.__call__` propagated and recorded
    (Keras 2.0.0 - 2.0.2). A mask the user passed otherwise stays."""
    mask = arguments.get("mask")
    recorded = recorded_output_masks(_flat(node.input_tensors))  # tf.keras 1.14: nested
    propagated = recorded if isinstance(mask, list) else recorded[:1]
    masks = mask if isinstance(mask, list) else [mask]
    if (len(masks) == len(propagated) and any(m is not None for m in masks)
            and all(m is p for m, p in zip(masks, propagated))):
        arguments = dict(arguments)
        del arguments["mask"]
    return arguments


def _is_keras_tensor(value):
    return hasattr(value, "_keras_history")


def tensors_mapped(arguments, tensor_map, key):
    """`arguments` (a layer call's keyword arguments) with every Keras tensor
    that `tensor_map` holds, at any depth of lists, tuples and dicts,
    replaced by its counterpart there: the tensor of a (tensor, mask) pair.
    `key` gives a tensor's key in the map, as the routine itself keys it.
    Tensors the map does not hold (from outside the model) stay."""
    def mapped(value):
        if isinstance(value, list):
            return [mapped(item) for item in value]
        if isinstance(value, tuple):
            return tuple(mapped(item) for item in value)
        if isinstance(value, dict):
            return dict((name, mapped(item)) for name, item in value.items())
        if _is_keras_tensor(value):
            found = key(value)
            if found in tensor_map:
                counterpart = tensor_map[found]
                return counterpart[0] if isinstance(counterpart, tuple) else counterpart
        return value
    return mapped(arguments)


def _items_in(value):
    """What a call argument holds, at any depth of lists, tuples and dicts."""
    if isinstance(value, (list, tuple)):
        return [found for item in value for found in _items_in(item)]
    if isinstance(value, dict):
        return [found for item in value.values() for found in _items_in(item)]
    return [value]


def tensors_in(value):
    """The Keras tensors in a call argument, at any depth."""
    return [item for item in _items_in(value) if _is_keras_tensor(item)]


def arguments_not_in_inputs(kwargs, node):
    """`kwargs` without the arguments whose tensors, as `node` recorded
    them, are all among the node's input tensors: those reach the layer as
    inputs already."""
    inputs = [id(tensor) for tensor in tensors_in(node.input_tensors)]  # tf.keras 1.14: nested
    recorded = node.arguments or {}
    kept = {}
    for name, value in kwargs.items():
        tensors = tensors_in(recorded.get(name))
        if not (tensors and all(id(tensor) in inputs for tensor in tensors)):
            kept[name] = value
    return kept


class ArgumentNotInConfig(NotImplementedError):
    """A model's config cannot name a tensor argument of one of its layer
    calls: what Keras raises for a model without a config (a subclassed one)
    is what the callers that can do without one (the JSON asset of tf.keras
    1.12 - 1.14's SavedModel export) expect."""


def _arguments_not_made_again(node):
    """A layer call's recorded arguments but those the call makes again from
    its inputs: an argument whose tensors are all inputs of the call (an
    RNN's initial_state or constants), and the mask Keras 2.0.0 - 2.0.2
    record as propagated (the call propagates it again)."""
    kept = arguments_not_in_inputs(node.arguments or {}, node)
    return without_propagated_mask(kept, node) if "mask" in kept else kept


def arguments_left_out(node):
    """The names of a layer call's recorded arguments that the release's
    model config leaves out and its layer calls cannot make again: those
    holding a tensor (json.dumps refuses it) that is not among the call's
    inputs, a Keras tensor or a backend one (K.constant(...)); not
    K.learning_phase(), what a layer takes by default; nor what the call
    makes again (_arguments_not_made_again)."""
    kept = _arguments_not_made_again(node)
    return sorted(name for name, value in kept.items() if any(
        _is_keras_tensor(item) or _is_backend_tensor_left_out(item)
        for item in _items_in(value)))


# Where a model's config keeps the call arguments its release leaves out: in
# the layer's entry, a list with one item per call of `inbound_nodes` (None
# for a call the release writes whole), a key the releases' from_config ignores.
CALL_ARGUMENTS_KEY = "call_arguments"


def _node_key(layer_name, node_index):
    """A node's key in a model's config routines (node_conversion_map), as
    every release writes it."""
    return layer_name + "_ib-" + str(node_index)


def _is_json(value):
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _is_backend_tensor_left_out(value):
    """A backend tensor that a model's config leaves out and a layer does not
    take by default: a TensorFlow tensor or variable (its op and dtype), an
    eager one (keras 2.3.1's K.constant on TensorFlow 2), or a Theano one
    (its owner and type), but K.learning_phase() (by the name every backend
    gives it: keras_learning_phase, and learning_phase for keras 2.3.1 on
    TensorFlow 2)."""
    is_tensor = (hasattr(value, "op") and hasattr(value, "dtype")) or (
        hasattr(value, "owner") and hasattr(value, "type")) or any(
        cls.__name__ == "_EagerTensorBase" for cls in type(value).__mro__)
    name = str(getattr(value, "name", None) or "").rpartition("/")[2]
    return is_tensor and not name.startswith(("keras_learning_phase", "learning_phase"))


def _arguments_written(layer, node, node_conversion_map):
    """The arguments of a layer call that the release's config leaves out
    (json.dumps refuses one of them; those whose tensors are all inputs of
    the call come back with them), each Keras tensor written as [layer name,
    node index, tensor index] of the call of the model that makes it, as
    tf_keras writes it. Raises ArgumentNotInConfig, in one line, for a
    tensor that no call of the model makes, which a config cannot name: a
    Keras tensor from outside the model, a backend tensor (K.constant(...)).
    K.learning_phase(), what a layer takes by default, the mask Keras 2.0.0
    - 2.0.2 record as propagated, and a value that is no tensor and no JSON
    (a numpy array) stay left out, as the release leaves them."""
    def refused(name):
        return ArgumentNotInConfig(
            "layer {!r} is called with the tensor argument {}, which no layer of the model "
            "makes, so the model's config cannot name it: make it an input of the model or the "
            "output of one of its layers (a Lambda returning a constant), or save the weights "
            "with save_weights and build the model in code (keras-clone-fix)".format(
                layer.name, name))

    def written(value, name):
        if isinstance(value, (list, tuple)):
            return [written(item, name) for item in value]
        if isinstance(value, dict):
            return dict((key, written(item, name)) for key, item in value.items())
        if _is_keras_tensor(value):
            maker, node_index, tensor_index = value._keras_history[:3]
            key = _node_key(maker.name, node_index)
            if key not in node_conversion_map:
                raise refused(name)
            return [maker.name, node_conversion_map[key], tensor_index]
        if _is_backend_tensor_left_out(value):
            raise refused(name)
        return value
    arguments = {}
    for name, value in _arguments_not_made_again(node).items():
        value = written(value, name)
        if _is_json(value):
            arguments[name] = value
    return arguments


def tensor_arguments_written(model, node_conversion_map, config):
    """A model's config (a copy) with the call arguments that it leaves out
    written in their layer's entry (CALL_ARGUMENTS_KEY: _arguments_written
    of each call the config keeps, in the order of its `inbound_nodes`):
    Keras 2.x and tf.keras before TensorFlow 1.15 leave out every argument
    of a call when JSON cannot hold one, with a warning, and a model made
    from the config computed without them. `node_conversion_map`, the
    routine's own, says which calls the config keeps and at which index.
    The releases' from_config ignores the key: a file saved with the fix
    loads as before where the fix is not installed."""
    layers = dict((layer.name, layer) for layer in model.layers)
    for entry in _layer_entries(config):
        layer = layers.get(entry.get("name"))
        written, written_any = [], False
        for index, node in enumerate(_nodes_of(layer) if layer is not None else ()):
            if _node_key(layer.name, index) not in node_conversion_map or not node.inbound_layers:
                continue
            arguments = None
            if node.arguments and not _is_json(node.arguments):
                arguments = _arguments_written(layer, node, node_conversion_map) or None
            written.append(arguments)
            written_any = written_any or arguments is not None
        if written_any:
            entry[CALL_ARGUMENTS_KEY] = written
    return config


def _is_model(layer):
    """A model (a Container, a Network): its first node is its own, from
    its inputs to its outputs, which a model's config does not count."""
    return any(cls.__name__ in ("Container", "Network") for cls in type(layer).__mro__)


def tensor_arguments_read(config, layer, kwargs, created_layers, at_once=False):
    """`kwargs`, the arguments of the call of `layer` a model's from_config
    makes next, with those tensor_arguments_written kept for it in the
    layer's entry of `config`, each [layer name, node index, tensor index]
    made the tensor it names; None where a tensor it names is not made yet
    (the call waits, as for its inputs), or, `at_once` (keras 2.0.0 - 2.0.6,
    whose routine waits for nothing), ValueError, as it raises for an input.
    The routine makes a layer's calls in their order (LayerCallsKeptInOrder,
    and the releases from keras 2.2.5): the next is the one after those the
    layer has."""
    entries = _layer_entries(config)
    entry = next((entry for entry in entries if entry.get("name") == layer.name), None)
    kept = entry.get(CALL_ARGUMENTS_KEY) if entry is not None else None
    index = len(_nodes_of(layer)) - (1 if _is_model(layer) else 0)
    if not isinstance(kept, list) or not 0 <= index < len(kept) or not kept[index]:
        return kwargs
    names = set(entry.get("name") for entry in entries)

    def read(value):
        if (isinstance(value, list) and len(value) == 3 and value[0] in names
                and all(isinstance(item, int) for item in value[1:])):
            made = created_layers.get(value[0])
            nodes = _nodes_of(made) if made is not None else ()
            if value[1] >= len(nodes):
                raise LookupError(value[0])
            return _flat(nodes[value[1]].output_tensors)[value[2]]
        if isinstance(value, list):
            return [read(item) for item in value]
        if isinstance(value, dict):
            return dict((key, read(item)) for key, item in value.items())
        return value
    try:
        read_arguments = read(kept[index])
    except LookupError as missing:
        if at_once:
            raise ValueError("Missing layer: {}".format(missing.args[0]))
        return None
    return dict(kwargs or {}, **read_arguments)


def is_lambda(layer):
    """A Lambda layer, or a subclass of one: known by a base of that name."""
    return any(cls.__name__ == "Lambda" for cls in type(layer).__mro__)


def _with_layers_inside(layer, new_layer):
    """[(layer, new_layer)] and, where they are models, each layer inside
    the original with its copy inside the new one (by name), and where they
    are wrappers (TimeDistributed, Bidirectional), the layer each wraps, at
    any depth: the nested model's or wrapper's `from_config` made those from
    their configs too."""
    pairs = [(layer, new_layer)]
    copies = dict((copy.name, copy) for copy in getattr(new_layer, "layers", ()))
    for inner in getattr(layer, "layers", ()):
        if inner.name in copies:
            pairs.extend(_with_layers_inside(inner, copies[inner.name]))
    wrapped, copy = getattr(layer, "layer", None), getattr(new_layer, "layer", None)
    if wrapped is not None and copy is not None:
        pairs.extend(_with_layers_inside(wrapped, copy))
    return pairs


def lambda_mask_kept(layer, new_layer):
    """`new_layer`, the clone routine's copy of `layer` made from its config,
    with the original's `mask` on each Lambda that has one, itself or inside
    it (set as `Lambda.__init__` sets it): `Lambda.get_config` leaves the
    mask out before tf.keras 1.14 and on every Keras 2.x. The configs stay
    as they are, so a file saved from the clone is what Keras itself writes."""
    for original, copy in _with_layers_inside(layer, new_layer):
        mask = getattr(original, "mask", None)
        if mask is not None and is_lambda(original) and getattr(copy, "mask", None) is None:
            copy.mask = mask
            copy.supports_masking = True
    return new_layer


# Where a Lambda's mask function is written in a model's config: in the
# layer's entry beside its config, a key the releases' from_config ignores.
LAMBDA_MASK_KEY = "lambda_mask"
# What of a Lambda's config says its function (TensorFlow 1.x adds its module).
FUNCTION_KEYS = ("function", "function_type", "module")


def _layer_entries(config):
    """The entries of the layers a model's config lists (a Sequential's
    config is that list itself before keras 2.2.3 and TensorFlow 1.11)."""
    entries = config if isinstance(config, list) else (
        config.get("layers") if isinstance(config, dict) else None)
    return [entry for entry in entries or () if isinstance(entry, dict)]


def lambda_masks_written(model, config):
    """A model's config (a copy) with the mask function of each Lambda of the
    model written in its entry (LAMBDA_MASK_KEY), as Lambda.get_config
    writes its function: Keras 2.x and tf.keras before TensorFlow 1.14 leave
    the mask out of a Lambda's config, and a model made from the config
    computed without it. The releases' from_config ignores the key: a file
    saved with the fix loads as before where the fix is not installed."""
    masked = dict((layer.name, layer) for layer in model.layers
                  if is_lambda(layer) and callable(getattr(layer, "mask", None)))
    for entry in _layer_entries(config) if masked else ():
        name = entry.get("name", (entry.get("config") or {}).get("name"))
        if name in masked:
            mask_as_function = shallow_copy(masked[name])  # shallow: no new layer, no name taken
            mask_as_function.function = masked[name].mask
            written = mask_as_function.get_config()
            entry[LAMBDA_MASK_KEY] = dict((key, written[key]) for key in FUNCTION_KEYS
                                          if key in written)
    return config


def lambda_mask_read(entry, layer, custom_objects=None):
    """`layer`, made from its entry of a model's config, with the mask
    function lambda_masks_written wrote there, read as Lambda.from_config
    reads its function (set as `Lambda.__init__` sets a mask)."""
    written = entry.get(LAMBDA_MASK_KEY) if isinstance(entry, dict) else None
    if written and is_lambda(layer) and getattr(layer, "mask", None) is None:
        read = type(layer).from_config(dict(layer.get_config(), **written), custom_objects)
        layer.mask = read.function
        layer.supports_masking = True
    return layer


def trainable_kept(layer, new_layer):
    """`new_layer`, the clone routine's copy of `layer` made from its config,
    with the original's `trainable`, and so for each model inside it: a
    model's `get_config` leaves it out (Keras 2.x, tf.keras 1.4 - 1.13), so a
    frozen nested model came back trainable, and a frozen model inside a
    nested one too, its weights then listed among the trainable ones
    (`set_weights` put them into other layers); so did a frozen model in a
    wrapper (`TimeDistributed(inner)`) where the wrapper leaves the flag of
    the layer it wraps as it was (keras 2.0.7 - 2.1.3, tf.keras 1.4 - 1.6;
    later ones set it to the wrapper's own when wrapping). Only the flags
    are set, as the user set them on the original."""
    for original, copy in _with_layers_inside(layer, new_layer):
        trainable = getattr(original, "trainable", True)
        if getattr(copy, "trainable", True) != trainable:
            copy.trainable = trainable
    return new_layer


def cloned_where_config_refused(layer, from_config, clone_model):
    """`from_config()`: the clone routine's copy of `layer`, made from its
    config; where that config refuses a tensor argument of a call inside
    the layer (ArgumentNotInConfig: a model holding it, at any depth), the
    model cloned by `clone_model`, the release's own clone routine, instead:
    new weights as from_config gives, the same names, and the calls with
    their arguments. A layer that is not a model (a wrapper holding one),
    or a model whose clone would be of another class, stays refused."""
    try:
        return from_config()
    except ArgumentNotInConfig as refusal:
        if getattr(layer, "layers", None) is None:
            raise refusal
        copy = clone_model(layer)
        if type(copy) is not type(layer):
            raise refusal
        return copy


# Where a layer holds layers that its config writes and its from_config makes
# again by class name: a wrapper's (TimeDistributed), Bidirectional's two, an
# RNN's cell; a model's `layers` and StackedRNNCells' `cells` list them.
LAYER_ATTRIBUTES, LAYER_LISTS = ("layer", "forward_layer", "backward_layer", "cell"), (
    "layers", "cells")


def _layers_held(layer):
    held = [getattr(layer, name, None) for name in LAYER_ATTRIBUTES]
    for name in LAYER_LISTS:
        held.extend(getattr(layer, name, None) or ())
    return [inner for inner in held
            if hasattr(inner, "get_config") and not isinstance(inner, type)]


def live_classes(layer, registered_name=None):
    """{class name: class} of every layer inside `layer`, at any depth
    (_layers_held), under the names a config writes a class with: its
    `__name__`, and `registered_name(cls)` where the release has one
    (tf.keras 2.2+: 'Package>Name' for a registered class). A name that two
    different classes share is left out: the release's lookup decides."""
    classes, shared, seen, walk = {}, set(), set(), [layer]
    while walk:
        for inner in _layers_held(walk.pop()):
            if id(inner) in seen:
                continue
            seen.add(id(inner))
            walk.append(inner)
            cls = type(inner)
            for name in set([cls.__name__, registered_name(cls) if registered_name else None]):
                if name is None:
                    continue
                if classes.setdefault(name, cls) is not cls:
                    shared.add(name)
    return dict((name, cls) for name, cls in classes.items() if name not in shared)


def made_with_live_classes(layer, make, module):
    """`make()`, the clone routine's copy of `layer` from its config, inside
    a custom-object scope of the release (CustomObjectScope of the
    `utils.generic_utils` beside `module`, the routine's) that names the
    class of each layer inside `layer` (live_classes): a nested model's
    from_config finds its layers' classes by name, and a custom class the
    user never registered raised `Unknown layer` (keras 2.x, tf.keras
    1.4 - 2.5). A layer holding no layers is made as before."""
    if not _layers_held(layer):
        return make()
    import importlib
    generic_utils = importlib.import_module(module.rpartition(".")[0] + ".utils.generic_utils")
    with generic_utils.CustomObjectScope(
            live_classes(layer, getattr(generic_utils, "get_registered_name", None))):
        return make()


def given_input_layer(given, original_layer, otherwise=None):
    """The input layer of a tensor given for a model input whose layer is
    `original_layer`: the given tensor's own (an `Input`, or the wrapper the
    routine made for a backend tensor) where that is an input layer too;
    else `otherwise` (a given tensor of another layer keeps the release's
    own handling)."""
    given_layer = getattr(given, "_keras_history", (None,))[0]
    return given_layer if isinstance(given_layer, type(original_layer)) else otherwise


def _layers_frozen(config):
    """Sets `"trainable": false` in the config of each layer that a model's
    or wrapper's config holds, at any depth: where the layer's config has
    the key already (its from_config takes it; an InputLayer's does not),
    and in a model's config (which its from_config does not read)."""
    entries = config if isinstance(config, list) else []  # a Sequential's, keras < 2.2
    if isinstance(config, dict):
        entries = list(config.get("layers") or [])
        if isinstance(config.get("layer"), dict):  # TimeDistributed, Bidirectional
            entries.append(config["layer"])
    for entry in entries:
        inner = entry.get("config") if isinstance(entry, dict) else None
        if isinstance(inner, dict) and ("trainable" in inner or "layers" in inner):
            inner["trainable"] = False
        _layers_frozen(inner)


def trainable_written(model, config):
    """A model's config (a copy), frozen where the model is: `"trainable":
    false` in its own config, which the releases' from_config does not read
    (trainable_read does), and in each layer's inside it, which every
    release reads: a file saved from a frozen model loads with its weights
    frozen, in their order, where the fix is not installed too. A model's
    `get_config` leaves its trainable out on Keras 2.x and tf.keras 1.4 -
    1.13, and setting it leaves the layers' own flags as they were. A
    Sequential model's config is the list of its layers' before keras 2.2.3
    and tensorflow 1.11: their configs alone say it."""
    if not getattr(model, "trainable", True):
        if isinstance(config, dict):
            config["trainable"] = False
        _layers_frozen(config)
    return config


def trainable_read(config, model):
    """`model`, made from `config`, frozen where the config says
    `"trainable": false` (trainable_written)."""
    if config.get("trainable", True) is False:
        model.trainable = False
    return model


def given_input_layers_mapped(layer_map, inputs, input_tensors):
    """Maps each of the model's input layers that `layer_map` lacks to the
    input layer of the tensor given for it (given_input_layer), where it has
    one: the routine then takes it for the clone's input layer instead of
    calling a copy of the original's on it, which no saved file can rebuild."""
    for original, given in zip(inputs, input_tensors):
        original_layer = original._keras_history[0]
        taken = given_input_layer(given, original_layer)
        if original_layer not in layer_map and taken is not None:
            layer_map[original_layer] = taken


def layer_calls_in_order(unprocessed_nodes, layer, process_node):
    """Makes a layer's queued calls of a model config in their order, up to
    the first whose inputs are not made yet: that one goes back to the
    queue (process_node queues it under `layer` again), and the calls after
    it follow it there, so the rebuilt layer's nodes keep their indices."""
    queued = unprocessed_nodes.pop(layer)
    for index, node_data in enumerate(queued):
        process_node(layer, node_data)
        if layer in unprocessed_nodes:
            unprocessed_nodes[layer].extend(queued[index + 1:])
            return


def _depths(nodes_by_depth):
    return dict((node, depth) for depth, nodes in nodes_by_depth.items() for node in nodes)


def _producers(node, tensors, depths):
    """The nodes among `depths` (the model's) that made these tensors of a
    call `node`, but the node itself (an input layer's node takes the tensor
    it makes)."""
    producers = (making_node(tensor) for tensor in tensors_in(tensors))
    return [producer for producer in producers if producer is not node and producer in depths]


def arguments_made_later(nodes_by_depth):
    """The nodes of a model (its `_nodes_by_depth`) whose call arguments
    hold a tensor that another of its nodes makes at the same depth or
    after: a depth counts a call's inputs, not its keyword arguments. A
    model input is there from the start (tf.keras 1.14 puts an input that
    only a keyword argument takes at depth 0). Deepest first, as the
    routines visit them. Each routine call asks: a node without arguments
    costs no function call."""
    later, depths = [], None
    for depth in sorted(nodes_by_depth, reverse=True):
        for node in nodes_by_depth[depth]:
            arguments = getattr(node, "arguments", None)  # Keras 3 has none there
            if not arguments or not isinstance(arguments, dict):
                continue
            if depths is None:
                depths = _depths(nodes_by_depth)
            if any(depths[producer] <= depth and not is_input_layer(producer.outbound_layer)
                   for producer in _producers(node, arguments, depths)):
                later.append(node)
    return later


def nodes_by_depth_in_call_order(nodes_by_depth):
    """A model's `_nodes_by_depth` itself, unless a node's call arguments
    hold a tensor that the model makes at the node's depth or after
    (arguments_made_later); then a new dict in which each node is deeper
    than every node taking what it makes, as inputs or as arguments, and as
    deep as Keras put it. Each depth lists its nodes in the order the
    routines visited them."""
    if not arguments_made_later(nodes_by_depth):
        return nodes_by_depth
    depths = _depths(nodes_by_depth)
    producers = dict((node, _producers(node, [node.input_tensors, node.arguments], depths))
                     for node in depths)
    takers_left = dict((node, 0) for node in depths)
    for node in depths:
        for producer in producers[node]:
            takers_left[producer] += 1
    # Each node after all that take from it (Kahn's order): its depth is
    # final by then. Keras tensors make no cycles.
    ready = [node for node in depths if not takers_left[node]]
    while ready:
        node = ready.pop()
        for producer in producers[node]:
            depths[producer] = max(depths[producer], depths[node] + 1)
            takers_left[producer] -= 1
            if not takers_left[producer]:
                ready.append(producer)
    in_call_order = {}
    for depth in sorted(nodes_by_depth, reverse=True):
        for node in nodes_by_depth[depth]:
            in_call_order.setdefault(depths[node], []).append(node)
    return in_call_order


def _computable(node, given, known):
    """Whether the model computes a node from the tensors `given` (its
    inputs' ids): an input layer's node where its tensor is given, another
    where every tensor it takes is computable (`known` holds the nodes
    decided, the walked ones true)."""
    if node not in known:
        known[node] = False  # Keras tensors make no cycles; this ends a walk that meets one
        made = [making_node(tensor) for tensor in tensors_in(node.input_tensors)]
        made = [producer for producer in made if producer is not node]
        known[node] = (all(_computable(producer, given, known) for producer in made)
                       if made else any(id(tensor) in given
                                        for tensor in tensors_in(node.output_tensors)))
    return known[node]


def argument_tensors_to_walk(nodes, nodes_depths, inputs):
    """The tensors in the call arguments of the walked nodes (`nodes`, the
    walk's list, which grows as the caller walks each tensor yielded) that
    a node the walk has not met makes, where the model computes that node
    from its `inputs`: a model input that only an argument takes too, which
    tf.keras 1.14 gives a depth without walking it (its config then skipped
    it, and get_config raised). A tensor from outside the model stays
    outside, as the release keeps it. A node without call arguments costs
    one attribute read."""
    index, known, given, walked = 0, None, None, set()
    while index < len(nodes):
        arguments = getattr(nodes[index], "arguments", None)
        index += 1
        if not arguments or not isinstance(arguments, dict):
            continue
        for tensor in tensors_in(arguments):
            producer = making_node(tensor)
            if producer in nodes_depths:
                if len(walked) < len(nodes):  # the list grew since
                    walked.update(nodes)
                if producer in walked:
                    continue
            if known is None:
                known = dict((node, True) for node in nodes_depths)
                given = set(id(tensor) for tensor in tensors_in(inputs))
            if _computable(producer, given, known):
                yield tensor


def walked_argument_makers_placed(nodes, nodes_depths, layers_depths):
    """Gives the nodes the walk added after the depths were set (those of
    argument_tensors_to_walk: the end of `nodes`, each after the nodes
    making its inputs) a depth one less than the shallowest node making
    their inputs (an input layer's: the deepest), and a layer first met
    there the depth of its deepest such node. The depths Keras set stay as
    they were, so the layers it listed keep their order, and their weights
    theirs; a call before its argument's maker is ordered by
    nodes_by_depth_in_call_order. (A model input the walk added keeps the
    depth tf.keras 1.14 gave it.)"""
    added = [node for node in nodes if node not in nodes_depths]
    if not added:
        return
    deepest = max(nodes_depths.values())
    new_layers = set()
    for node in added:
        made = [nodes_depths[producer] for producer in
                (making_node(tensor) for tensor in tensors_in(node.input_tensors))
                if producer is not node]
        depth = min(made) - 1 if made else deepest
        nodes_depths[node] = depth
        layer = node.outbound_layer
        if layer not in layers_depths:
            new_layers.add(layer)
            layers_depths[layer] = depth
        elif layer in new_layers:
            layers_depths[layer] = max(layers_depths[layer], depth)


def argument_tensors_mapped(nodes_depths, layers_depths, inputs):
    """argument_tensors_to_walk for the walk of Keras 2.0.0 - 2.0.3, which
    sets the depths as it goes (`build_map_of_graph`, a node's the deepest
    it is met at): the caller maps each tensor yielded from depth 0. After
    the last, the nodes and layers met before get their depths back, and
    the nodes this walk added are placed by walked_argument_makers_placed,
    each after the nodes making its inputs (met deeper in this walk)."""
    nodes_before, layers_before = dict(nodes_depths), dict(layers_depths)
    walked = list(nodes_depths)
    for tensor in argument_tensors_to_walk(walked, nodes_depths, inputs):
        yield tensor
        known = set(walked)
        walked.extend(node for node in nodes_depths if node not in known)
    added = sorted((node for node in nodes_depths if node not in nodes_before),
                   key=lambda node: -nodes_depths[node])
    if added:
        nodes_depths.clear()
        nodes_depths.update(nodes_before)
        layers_depths.clear()
        layers_depths.update(layers_before)
        walked_argument_makers_placed(list(nodes_before) + added, nodes_depths, layers_depths)


class SavedModelWeightsMissing(ValueError):
    """The model made from a SavedModel's config cannot be given every one
    of its weights from the SavedModel's checkpoint."""


# The SavedModel object kinds of a Keras model, whose metadata holds its config
# (_model_file reads them too, without TensorFlow).
KERAS_MODEL_IDENTIFIERS = ("_tf_keras_network", "_tf_keras_model", "_tf_keras_sequential")
SAVED_MODEL_FILE = "saved_model.pb"  # a SavedModel folder's graph, with its objects


# How a model tracks its layers: "layer-3", "layer_with_weights-1".
MODEL_LAYER_EDGES = ("layer-", "layer_with_weights-")


def _children(node):
    return dict((child.local_name, child.node_id) for child in node.children)


def _metadata(node):
    """A SavedModel object's Keras metadata (JSON), {} for another object."""
    text = node.user_object.metadata if node.WhichOneof("kind") == "user_object" else ""
    return json.loads(text) if text else {}


def _dependencies_matched(tracked, kept_children, saved_graph, saved_children):
    """[(dependency, edge)] of `tracked` for the checkpoint's edges out of
    its saved counterpart: by the edge's name, but for a model's layers
    (MODEL_LAYER_EDGES), each matched by the name of the layer the saved
    edge leads to. A model made from its config may list its layers in
    another order: the config writes a call's second tensor as a keyword
    argument, and from TensorFlow 2.3 a model's walk takes a call's tensors
    in the order of its arguments, keyword ones by name (`Attend()(q,
    Dense(2)(v), attention_mask=m)`: the dense layer before m's in the
    model, after it in the model made from its config). An RNN's cell,
    which is no layer edge, is named anew."""
    layers = {}
    for edge in kept_children:
        if edge.startswith(MODEL_LAYER_EDGES):
            layer = tracked._lookup_dependency(edge)
            if layer is not None:
                layers[getattr(layer, "name", None)] = layer
    matched = []
    for edge in kept_children:
        if edge not in saved_children:
            continue
        if edge.startswith(MODEL_LAYER_EDGES):
            dependency = layers.get(_metadata(saved_graph.nodes[saved_children[edge]]).get("name"))
        else:
            dependency = tracked._lookup_dependency(edge)
        if dependency is not None:
            matched.append((dependency, edge))
    return matched


def saved_model_weight_values(model, saved_graph, checkpoint_graph, reader):
    """[(weight, value)] for every weight of `model`, made from a
    SavedModel's config, from the SavedModel's checkpoint (`reader`): each
    weight reached by the path the model's own tracking gives it
    (layer_with_weights-0/cell/kernel) in the checkpoint's object graph,
    each of a model's layers on the way the one of its name in the
    SavedModel's object graph (`saved_graph`), and each value of the
    weight's shape. Raises SavedModelWeightsMissing, naming the weights,
    where one is not reached so: the model would compute with weights of
    its own."""
    weights = dict((id(weight), weight) for weight in model.weights)
    values, seen, walk = {}, set(), [(model, 0, 0)]
    while walk:
        tracked, saved, kept = walk.pop()
        if id(tracked) in seen:
            continue
        seen.add(id(tracked))
        if id(tracked) in weights:
            keys = [attribute.checkpoint_key for attribute
                    in checkpoint_graph.nodes[kept].attributes
                    if attribute.name == "VARIABLE_VALUE"]
            value = reader.get_tensor(keys[0]) if keys else None
            if value is not None and tuple(value.shape) == tuple(tracked.shape):
                values[id(tracked)] = value
            continue
        tracked._maybe_initialize_trackable()  # a model that tracked nothing yet
        kept_children = _children(checkpoint_graph.nodes[kept])
        saved_children = _children(saved_graph.nodes[saved])
        for dependency, edge in _dependencies_matched(tracked, kept_children, saved_graph,
                                                      saved_children):
            walk.append((dependency, saved_children[edge], kept_children[edge]))
    missing = [weight.name for weight in model.weights if id(weight) not in values]
    if missing:
        raise SavedModelWeightsMissing(
            "the model made from this SavedModel's config does not find {} of its {} weights "
            "in the SavedModel ({}): not loaded, as no model with other weights is returned "
            "(keras-clone-fix)".format(len(missing), len(weights), ", ".join(missing)))
    return [(weight, values[id(weight)]) for weight in model.weights]


def saved_model_from_config(path, compile, saving_utils):
    """The Keras model a SavedModel folder holds, made from its config as
    a model file's is (the release's model_from_config, and so the fix's
    from_config), given the SavedModel's weights (saved_model_weight_values)
    and compiled from its training config as the release compiles a loaded
    one. None where the folder holds no Keras model with a config (a
    subclassed model, a custom layer without get_config; a folder of
    saved_model.pbtxt) or the release cannot make the model from it (a
    custom layer not given in custom_objects): the release's loader revives
    it from its traced functions, as it does without the fix. TensorFlow
    2.0 - 2.4's loader revives a model with a config from those functions
    too: a masked model's masks lost (2.0 - 2.1: other numbers, or no
    load), a model holding a functional model not loaded (2.1), a frozen
    model in another loaded trainable (2.2 - 2.4)."""
    import importlib
    import os

    from tensorflow.core.protobuf import saved_model_pb2, trackable_object_graph_pb2
    from tensorflow.python.training import checkpoint_utils

    if not os.path.isfile(os.path.join(path, SAVED_MODEL_FILE)):
        return None
    with open(os.path.join(path, SAVED_MODEL_FILE), "rb") as stream:
        saved_model = saved_model_pb2.SavedModel.FromString(stream.read())
    saved_graph = saved_model.meta_graphs[0].object_graph_def
    root = saved_graph.nodes[0]
    if (root.WhichOneof("kind") != "user_object"
            or root.user_object.identifier not in KERAS_MODEL_IDENTIFIERS):
        return None
    # The release's own modules, beside its saving_utils (tensorflow_core's on
    # 2.0 - 2.1, the keras package's from 2.6): from 2.2 its decoding reads
    # tuples and shapes, written as objects; 2.0 - 2.1 write plain JSON.
    saving = saving_utils.__name__.rpartition(".")[0]
    try:
        decode = importlib.import_module(saving + ".saved_model.json_utils").decode
    except ImportError:
        decode = json.loads
    metadata = decode(root.user_object.metadata)
    if not metadata.get("config"):
        return None
    model_from_config = importlib.import_module(saving + ".model_config").model_from_config
    backend = importlib.import_module(saving.rpartition(".")[0] + ".backend")
    try:
        model = model_from_config({"class_name": metadata["class_name"],
                                   "config": metadata["config"]})
    except (ValueError, TypeError):
        return None  # a layer the release makes no config of (custom, not given): as before
    if metadata.get("trainable") is False:
        model.trainable = False
    reader = checkpoint_utils.load_checkpoint(os.path.join(path, "variables", "variables"))
    checkpoint_graph = trackable_object_graph_pb2.TrackableObjectGraph.FromString(
        reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    backend.batch_set_value(
        saved_model_weight_values(model, saved_graph, checkpoint_graph, reader))
    training_config = metadata.get("training_config")
    if compile and training_config is not None:
        model.compile(**saving_utils.compile_args_from_training_config(training_config))
        if hasattr(saving_utils, "try_build_compiled_arguments"):  # as 2.4's loader does
            saving_utils.try_build_compiled_arguments(model)
    return model


def load_model_custom_objects_scope(saving_utils):
    """A CustomObjectScope of the custom_objects given to the load_model call
    that runs this SavedModel load, as TensorFlow 2.2's load_model makes one
    around it: 2.0 - 2.1's gives them to an .h5 file's load only, so the
    model's config could not be made of a custom layer given so. They are
    in that call's frame alone: every public name of load_model
    (tf.keras.models', tf.compat.v1.keras.models', ...) is the save module's
    function itself, bound in several modules, and a patch of one name
    misses the others. An empty scope where no load_model runs this load."""
    import importlib

    saving = saving_utils.__name__.rpartition(".")[0]
    save = vars(importlib.import_module(saving + ".save"))
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "load_model"
                                     and frame.f_globals is save):
        frame = frame.f_back
    custom_objects = frame.f_locals.get("custom_objects") if frame is not None else None
    del frame  # a frame held is a reference cycle
    generic_utils = importlib.import_module(saving.rpartition(".")[0] + ".utils.generic_utils")
    return generic_utils.CustomObjectScope(custom_objects or {})


# What the fixed code may call, by name.
HELPERS = dict((helper.__name__, helper) for helper in (
    one_mask_per_output, recorded_output_masks, without_propagated_mask, tensors_mapped,
    arguments_not_in_inputs, mask_through_input_layer, keras_masks, lambda_mask_kept,
    trainable_kept, trainable_written, trainable_read, given_input_layer,
    given_input_layers_mapped, layer_calls_in_order, nodes_by_depth_in_call_order, computes_masks,
    propagated_mask_popped, tensor_arguments_written, tensor_arguments_read,
    argument_tensors_to_walk,
    walked_argument_makers_placed, cloned_where_config_refused, masks_paired,
    made_with_live_classes,
    lambda_masks_written, lambda_mask_read, masks_on_copies, argument_tensors_mapped,
    saved_model_from_config,
    load_model_custom_objects_scope))
