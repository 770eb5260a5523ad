"""The check engine: how a model's rebuilds compare with the model itself.

Given a family's keras module (`keras`, or `tensorflow.keras`) and a built
model, it makes inputs from the model's own input shapes and dtypes, names
what in the model puts it at risk of the rebuild bugs, and runs the checks
(from_config, clone, clone_of_clone, nested, called_twice, multi_gpu), each
comparing predictions with the model's own on the same inputs (and a
rebuilt model's count of trainable weights with the model's); `load` is that the
model predicts (`check` compares those predictions with the side's that
loaded it with the fix); `original_unchanged` says which checks changed
the call arguments recorded in the original's nodes. Those are put back after each
check, so that no check computes with what an earlier one left. It runs in
the interpreter whose fix state is being checked: a side of `check`, or the
self-check's own.

A check's result is a dict: {"result": "ok" | "wrong" | "error" |
"unavailable", "detail": str}.
"""

import collections
import importlib
import inspect
import os
import sys
import traceback

from keras_clone_fix._affected import (
    ARGUMENT_MADE_LATER, ARGUMENT_MAKER_LEFT_OUT, ARGUMENT_NOT_IN_CONFIG, CALLS_OUT_OF_ORDER,
    FROZEN_NESTED, INPUT_RETURNED, LAMBDA_MASK, MASK_FLAG_DENIED, MASKED_CALL, MULTI_OUTPUT_MASK,
    NESTED_ARGUMENT_NOT_IN_CONFIG, NESTED_MASKED, NESTED_OUTPUT_MASKS, SHARED_MODEL, STATE_INPUTS,
    SURPLUS_MASKS, TENSOR_ARGUMENTS, UNTAKEN_INPUT, api_version, deciding_release,
    endangered_checks, imported_version, keras_version, package_of, targets_for)
from keras_clone_fix._runtime import (
    arguments_left_out, arguments_made_later, computes_masks, is_input_layer, is_lambda, making_node,
    tensors_in)

OK, WRONG, ERROR, UNAVAILABLE = "ok", "wrong", "error", "unavailable"
FAILED = (WRONG, ERROR)
CHECKS = ("load", "from_config", "clone", "clone_of_clone", "nested", "called_twice",
          "multi_gpu", "original_unchanged")
# float32 models rebuilt from the same weights compute the same operations:
# a difference above this is a different computation, not rounding.
RTOL, ATOL = 1e-4, 1e-5


def result(outcome, detail=""):
    return {"result": outcome, "detail": detail}


def release_name(keras):
    """"keras 2.2.4", "tf.keras 2.2.4-tf" (tf.keras's own version; where
    none says it, "tf.keras of tensorflow 1.8.0"), or "tf_keras 2.21.0" (the
    package tf.keras is on TensorFlow 2.16+)."""
    package = package_of(keras)
    version = keras_version(keras)
    if version is None and package == "tensorflow":
        return "tf.keras of tensorflow " + sys.modules["tensorflow"].__version__
    return "{} {}".format("tf.keras" if package == "tensorflow" else package, version)


def error_result(error):
    """The error's type and first line; where it has no message (a bare
    assert), where it was raised. Call it in the `except` block."""
    lines = str(error).strip().splitlines()
    if lines:
        return result(ERROR, "{}: {}".format(type(error).__name__, lines[0]))
    filename, line, function, _ = traceback.extract_tb(sys.exc_info()[2])[-1]
    return result(ERROR, "{} in {} ({}:{})".format(
        type(error).__name__, function, os.path.basename(filename), line))


# --- the model's parts, across releases -------------------------------------

def inbound_nodes(layer):
    """Keras 2.1.3 renamed inbound_nodes to _inbound_nodes."""
    nodes = getattr(layer, "_inbound_nodes", None)
    return nodes if nodes is not None else getattr(layer, "inbound_nodes", [])


def as_list(value):
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def is_model(keras, layer):
    return isinstance(layer, keras.models.Model)


def is_rnn(layer):
    """Recurrent layers: RNN from keras 2.0.9 and TensorFlow 1.5, Recurrent
    before (it has no `cell`, and tf.keras 1.4 does not export it)."""
    return any(cls.__name__ in ("RNN", "Recurrent") for cls in type(layer).__mro__)


def all_layers(keras, model, prefix=""):
    """(path, layer) of every layer, nested models' layers too ("outer/inner")."""
    for layer in model.layers:
        path = prefix + layer.name
        yield path, layer
        if is_model(keras, layer):
            for pair in all_layers(keras, layer, path + "/"):
                yield pair


def node_masks(node, kind):
    """A node's input or output masks: recorded on the node by keras, on the
    tensors (`_keras_mask`) by tf.keras."""
    masks = getattr(node, kind + "_masks", None)
    if masks is not None:
        return as_list(masks)
    return [getattr(tensor, "_keras_mask", None) for tensor in as_list(
        getattr(node, kind + "_tensors", None))]


# Keras 3's tensors hold their shape (a tuple, None for unknown sizes) and
# dtype name themselves; its keras.backend has no int_shape and dtype, and
# tf.keras of TensorFlow 2.16+ (Keras 3) has Keras 2's, which fail on them.
KERAS_3 = (3, 0, 0)
# keras 2.5 (keras-nightly) - 2.15 carries tf.keras's code: its API
# (keras.utils.CustomObjectScope, ...) is keras.api._v2.keras (tf.keras from
# TensorFlow 2.6), not the package's own modules, and it runs eagerly.
KERAS_AS_TF_KERAS = (2, 5, 0)


def int_shape(keras, tensor):
    """A symbolic tensor's shape, None for unknown sizes."""
    if api_version(keras) >= KERAS_3:
        return tuple(tensor.shape)
    return keras.backend.int_shape(tensor)


def dtype(keras, tensor):
    """A symbolic tensor's dtype name ("float32")."""
    if api_version(keras) >= KERAS_3:
        return str(tensor.dtype)
    return keras.backend.dtype(tensor)


def call_arguments(node):
    """The call arguments a node records, as the dict Keras 2 keeps; {} for
    none, and for Keras 3, whose nodes hold an object of their own there
    (and copy it: nothing to snapshot)."""
    arguments = getattr(node, "arguments", None)
    return arguments if isinstance(arguments, dict) else {}


def is_tensor(value):
    return hasattr(value, "_keras_history") or type(value).__name__ in (
        "Tensor", "EagerTensor", "TensorVariable", "Variable", "RefVariable")


def tensor_arguments(node):
    return sorted(name for name, value in call_arguments(node).items()
                  if any(is_tensor(item) for item in as_list(value)))


def parameters(function):
    """The names of a function's parameters."""
    try:
        return list(inspect.signature(function).parameters)
    except AttributeError:  # Python 2
        return inspect.getargspec(function).args


def release_of(keras):
    """(family, version) of a keras module, as _affected's tables know them:
    ("keras", keras's version), ("tensorflow", TensorFlow's) for tf.keras;
    tf_keras and Keras 3 are families of their own there, without targets."""
    package = package_of(keras)
    if package == "tensorflow":
        import tensorflow
        return package, tensorflow.__version__
    # keras 2.4 runs tf.keras's routines: TensorFlow's release decides.
    return deciding_release(package, keras_version(keras), imported_version)


def _inbound_calls(node_data):
    """(layer name, node index) of each input of a call in a model config:
    [name, node index, tensor index(, arguments)] items, nested in lists or
    dicts (tf.keras 1.14; tf_keras 2 and Keras 3 files: `keras_history`)."""
    if isinstance(node_data, dict):
        node_data = list(node_data.values())
    if isinstance(node_data, (list, tuple)):
        if (len(node_data) in (3, 4) and isinstance(node_data[0], (str, type(u"")))
                and all(isinstance(index, int) for index in node_data[1:3])):
            yield node_data[0], node_data[1]
        else:
            for item in node_data:
                for call in _inbound_calls(item):
                    yield call


def layers_called_out_of_order(config):
    """The names of the layers whose calls `from_config` of keras 2.0.7 -
    2.2.4 and tf.keras 1.4 - 1.14 makes in another order than a model's
    config records: its queue replayed on the config. It makes each layer's
    calls in turn and puts one that must wait for another layer's call
    back at the end of the layer's queue (keras-team/keras#11159)."""
    layers = config.get("layers") if isinstance(config, dict) else None
    if not layers or any("inbound_nodes" not in layer for layer in layers):
        return []  # a Sequential: made by its own from_config
    made = {}  # layer name -> calls made; an input layer or a model has one of its own
    queued = collections.OrderedDict()  # layer name -> [(index in the config, its inputs)]
    for layer in layers:
        inside = layer.get("config")
        made[layer["name"]] = int(layer.get("class_name") == "InputLayer" or isinstance(
            inside, list) or (isinstance(inside, dict) and "layers" in inside))
        queued[layer["name"]] = [(index, list(_inbound_calls(node)))
                                 for index, node in enumerate(layer["inbound_nodes"])]
    order = dict((name, []) for name in queued)
    progress = True
    while progress:
        progress = False
        for name, calls in queued.items():
            queued[name] = []
            for index, inputs in calls:
                if all(made.get(inbound, 0) > node for inbound, node in inputs):
                    made[name] += 1
                    order[name].append(index)
                    progress = True
                else:
                    queued[name].append((index, inputs))
    return [name for name in queued if order[name] != sorted(order[name])]


def is_sequential(layer):
    return any(cls.__name__ == "Sequential" for cls in type(layer).__mro__)


def returns_an_input(node):
    """Whether a call's output is the copy `Layer.__call__` makes of an
    input the layer returned unchanged (tf.keras: an Identity of it)."""
    inputs = as_list(node.input_tensors)
    for output in as_list(node.output_tensors):
        try:
            op = output.op
            if op.type == "Identity" and any(op.inputs[0] is x for x in inputs):
                return True
        except Exception:  # Theano's and Keras 3's tensors have no such op
            pass
    return False


def masks_denied(keras, sequential, prefix, fed):
    """The risks of the layers of a Sequential model (`fed` masks, or
    making them) whose own compute_mask their supports_masking denies: the
    Sequential's own loop asks the flag."""
    return [(prefix + layer.name, MASK_FLAG_DENIED, "a layer of a Sequential model whose "
             "supports_masking is False but which computes masks (Bidirectional)", True)
            for layer in sequential.layers
            if not getattr(layer, "supports_masking", True) and computes_masks(layer) and (
                fed or any(mask is not None for node in inbound_nodes(layer)
                           for mask in node_masks(node, "input")))]


def argument_makers_left_out(model):
    """The layers of the calls whose outputs only call arguments of a
    model's calls take (`Scale()(h, scale=Dense(4)(x))`): the calls that
    the walk from the model's outputs through their inputs does not reach,
    as keras 2.0.6 - 2.3.1 and tf.keras 1.4 - 1.14 walk a model. A model
    input so taken is another risk (UNTAKEN_INPUT)."""
    reached = set()
    walk = [making_node(tensor) for tensor in tensors_in(as_list(model.outputs))]
    while walk:
        node = walk.pop()
        if node not in reached:
            reached.add(node)
            walk += [making_node(tensor) for tensor in tensors_in(node.input_tensors)]
    left_out = []
    for node in reached:
        for tensor in tensors_in(call_arguments(node)):
            made_by = making_node(tensor)
            layer = made_by.outbound_layer
            if made_by not in reached and not is_input_layer(layer) and layer not in left_out:
                left_out.append(layer)
    return left_out


def model_risks(keras, model):
    """[(layer path, risk (_affected's names), what in the layer meets it,
    whether it runs when a model nested in another is called)], in the
    model's layer order, whatever the release; then, for the model and each
    nested model, its inputs that no layer takes, the layers whose outputs
    only keyword arguments take, the calls whose tensor arguments its depths
    make later, and the layers whose calls its config makes out of order."""
    found = []
    for path, layer in all_layers(keras, model):
        nodes = inbound_nodes(layer)
        nested = "/" in path or is_model(keras, layer)
        masked_inputs = any(mask is not None for node in nodes
                            for mask in node_masks(node, "input"))
        for node in nodes:
            outputs = as_list(node.output_tensors)
            masked = [mask for mask in node_masks(node, "output") if mask is not None]
            if len(outputs) > 1 and (masked or masked_inputs):
                found.append((path, MULTI_OUTPUT_MASK, "a layer with {} outputs {}".format(
                    len(outputs), "carrying masks" if masked else "fed a mask"), nested))
                break
        # keras records every mask compute_mask gives; the first goes with a lone output.
        for node in nodes:
            masks, outputs = node_masks(node, "output"), as_list(node.output_tensors)
            if len(masks) > len(outputs):
                found.append((path, SURPLUS_MASKS, "a layer with more masks than outputs ({} "
                              "for {})".format(len(masks), len(outputs)), nested))
                break
        if is_model(keras, layer):
            if masked_inputs:
                found.append((path, NESTED_MASKED, "a nested model fed masked tensors", nested))
            if any(mask is not None for node in nodes[1:]  # its own node is first
                   for mask in node_masks(node, "output")):
                found.append((path, NESTED_OUTPUT_MASKS, "a nested model whose outputs carry "
                              "masks", nested))
            if len(nodes) > 2:  # its first node is its own, from its inputs to its outputs
                found.append((path, SHARED_MODEL, "a model shared by {} calls".format(
                    len(nodes) - 1), nested))
            if not getattr(layer, "trainable", True):
                found.append((path, FROZEN_NESTED, "a frozen nested model (trainable = False)",
                              nested))
            left_out = sorted(set(name for _, inside in all_layers(keras, layer)
                                  for node in inbound_nodes(inside) if tensor_arguments(node)
                                  for name in arguments_left_out(node)))
            if left_out:
                found.append((path, NESTED_ARGUMENT_NOT_IN_CONFIG, "a nested model whose config "
                              "leaves out tensor arguments of calls inside it (the clone makes "
                              "it from its config): " + ", ".join(left_out), nested))
        elif masked_inputs and "mask" in parameters(layer.call):
            found.append((path, MASKED_CALL, "called on a masked tensor (the mask goes into its "
                          "call arguments)", nested))
        # Whether a mask reaches it cannot be told after the call: tf.keras 1.11 -
        # 1.13 write None over the input's own mask there.
        if not is_model(keras, layer) and computes_masks(layer) and any(
                returns_an_input(node) for node in nodes):
            found.append((path, INPUT_RETURNED, "returns its input tensor unchanged (a mask on "
                          "it is lost)", nested))
        if is_sequential(layer):
            found += masks_denied(keras, layer, path + "/", masked_inputs)
        wrapped = getattr(layer, "layer", None)  # TimeDistributed, Bidirectional
        if is_model(keras, wrapped) and not wrapped.trainable:
            # keras 2.0.7 - 2.1.3 and tf.keras 1.4 - 1.6 keep it when wrapping
            found.append((path, FROZEN_NESTED, "a frozen model in a wrapper (trainable = False)",
                          True))
        if getattr(layer, "mask", None) is not None and is_lambda(layer):
            found.append((path, LAMBDA_MASK, "a Lambda with a mask (its config has none)",
                          nested))
        arguments = sorted(set(name for node in nodes for name in tensor_arguments(node)))
        if arguments:
            found.append((path, TENSOR_ARGUMENTS, "called with tensor arguments: " + ", ".join(
                arguments), nested))
            left_out = sorted(set(name for node in nodes for name in arguments_left_out(node)))
            if left_out:
                found.append((path, ARGUMENT_NOT_IN_CONFIG, "called with tensor arguments that "
                              "a model's config leaves out: " + ", ".join(left_out), nested))
        elif is_rnn(layer) and any(len(as_list(node.input_tensors)) > 1 for node in nodes):
            # keras 2.2.5 and tf.keras make an RNN's initial_state and constants inputs
            found.append((path, STATE_INPUTS, "an RNN called with initial_state or constants",
                          nested))
    if is_sequential(model):
        found += [(path, risk, what, False)
                  for path, risk, what, _ in masks_denied(keras, model, "", False)]
    models = [("", model)] + [(path + "/", layer) for path, layer in all_layers(keras, model)
                              if is_model(keras, layer)]
    for prefix, each in models:
        # Keras 2.0.x names it nodes_by_depth.
        by_depth = getattr(each, "_nodes_by_depth", None) or getattr(each, "nodes_by_depth", {})
        # What a call takes as arguments, but a mask: the release records none.
        arguments = [id(tensor) for layer in each.layers for node in inbound_nodes(layer)
                     for name, value in call_arguments(node).items() if name != "mask"
                     for tensor in tensors_in(value)]
        # An input without a Keras history has no layer to name: a model that TensorFlow
        # 2.0 - 2.1's SavedModel loader revived from its traced functions (without the fix).
        for tensor in as_list(getattr(each, "inputs", None)):
            if hasattr(tensor, "_keras_history") and id(tensor) not in arguments and not any(
                    True for _ in calls_on(each, tensor)):
                found.append((prefix + tensor._keras_history[0].name, UNTAKEN_INPUT,
                              "a model input that no layer takes as input (a mask= "
                              "argument, which the call's recorded arguments leave out)",
                              bool(prefix)))
        for layer in argument_makers_left_out(each):
            found.append((prefix + layer.name, ARGUMENT_MAKER_LEFT_OUT, "a layer whose output "
                          "only keyword arguments take (the model's walk leaves it out)",
                          bool(prefix)))
        for node in arguments_made_later(by_depth):
            found.append((prefix + node.outbound_layer.name, ARGUMENT_MADE_LATER,
                          "called with a tensor argument that the model's depths make after "
                          "the call", bool(prefix)))
        try:
            config = each.get_config()
        except Exception:  # whatever a layer's get_config raises
            # A config that cannot be written is never read back: a custom layer
            # without get_config, a tensor argument no layer of the model makes
            # (refused with the fix; unpatched on tf.keras 1.14, a model input that
            # only such an argument takes: ValueError).
            continue
        for name in layers_called_out_of_order(config):
            found.append((prefix + name, CALLS_OUT_OF_ORDER, "a layer whose calls the model's "
                          "config makes out of order (one waits for another layer's)",
                          bool(prefix)))
    return found


def risks(keras, model, saved_model=False):
    """[(layer path, what puts it at risk, [the checks it endangers])] on
    this release: what the model has that the release's patched routines
    get wrong (_affected.endangered_checks; `saved_model`: loaded from a
    SavedModel folder); none where it is not affected."""
    family, version = release_of(keras)
    found = []
    for path, risk, what, nested in model_risks(keras, model):
        checks = endangered_checks(family, version, risk, nested, saved_model)
        if checks:
            found.append((path, what, [name for name in CHECKS if name in checks]))
    return found


# --- inputs -----------------------------------------------------------------

# Layers whose outputs hold their inputs' values (reshaped, repeated, some
# zeroed): token ids fed through them still reach what follows as token ids.
PASS_VALUES_ON = ("Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D",
                  "GaussianNoise", "GaussianDropout", "AlphaDropout", "ActivityRegularization",
                  "Masking", "Reshape", "Permute", "Flatten", "RepeatVector", "Cropping1D")


def calls_on(model, tensor):
    """(layer, node, position of `tensor` among the node's inputs) of every
    call in `model`'s graph that takes `tensor`."""
    for layer in model.layers:
        for node in inbound_nodes(layer):
            for position, item in enumerate(as_list(getattr(node, "input_tensors", None))):
                if item is tensor and layer is not getattr(tensor, "_keras_history", [None])[0]:
                    yield layer, node, position


def token_limit(keras, model, tensor):
    """The smallest input_dim of the Embeddings that `tensor` reaches in
    `model` (directly, through layers that pass values on, inside wrappers
    and nested models), or None where it reaches none."""
    limits = []
    for layer, node, position in calls_on(model, tensor):
        inner = getattr(layer, "layer", layer)  # TimeDistributed, Bidirectional
        if isinstance(inner, keras.layers.Embedding):
            limits.append(inner.input_dim)
        elif is_model(keras, layer):
            limits.append(token_limit(keras, layer, as_list(layer.inputs)[position]))
        elif type(inner).__name__ in PASS_VALUES_ON:
            limits += [token_limit(keras, model, output)
                       for output in as_list(node.output_tensors)]
    limits = [limit for limit in limits if limit is not None]
    return min(limits) if limits else None


def embedding_sizes(keras, model):
    return [layer.input_dim for _, layer in all_layers(keras, model)
            if isinstance(layer, keras.layers.Embedding)]


def masking_values(keras, model):
    return [float(layer.mask_value) for _, layer in all_layers(keras, model)
            if isinstance(layer, keras.layers.Masking)]


def lengths(batch, steps, reverse, shift):
    """A different number of real time steps in each row, at least one;
    `shift` rotates the rows, so that each input of a model gets its own."""
    rows = [max(1, steps - (row * steps) // max(batch, 1)) for row in range(batch)]
    rows = rows[shift % batch:] + rows[:shift % batch]
    return rows[::-1] if reverse else rows


def make_inputs(keras, model, batch, timesteps, seed, reverse=False):
    """Arrays for the model's inputs. An input that reaches an Embedding
    gets token ids in [1, input_dim) whatever dtype it declares (a float32
    `Input(shape=(None,))` is how Keras's word-level seq2seq example feeds
    its Embedding); other integer inputs token ids below every Embedding's
    input_dim; boolean ones true; float ones normal values. Time steps past
    each row's length are 0 (token ids: padding for mask_zero), false
    (booleans: a mask) or the Masking layer's mask_value (floats)."""
    import numpy  # here, not at the top: the self-check runs where numpy is not installed
    random = numpy.random.RandomState(seed)
    vocabulary = min(embedding_sizes(keras, model) or [10])
    mask_values = masking_values(keras, model)
    arrays = []
    for index, tensor in enumerate(model.inputs):
        shape = [batch] + [timesteps if size is None else size
                           for size in int_shape(keras, tensor)[1:]]
        kind = dtype(keras, tensor)
        limit = token_limit(keras, model, tensor)
        if limit is not None or "int" in kind:
            array = random.randint(1, max(limit or vocabulary, 2), size=shape).astype(
                kind if "int" in kind or "float" in kind else "int32")
            padding = 0
        elif kind == "bool":  # a mask: true for each row's real time steps
            array, padding = numpy.ones(shape, dtype=bool), False
        else:
            array = random.normal(size=shape).astype(kind if "float" in kind else "float32")
            padding = mask_values[0] if mask_values else None
        if padding is not None and len(shape) > 1:
            for row, length in zip(array, lengths(batch, shape[1], reverse, index)):
                row[length:] = padding
        arrays.append(array)
    return arrays


# --- comparing --------------------------------------------------------------

def predict(keras, model, inputs):
    """The model's outputs on `inputs`, as arrays. Where tf.keras executes
    eagerly (TensorFlow 2), the model is called on them, as predict() would
    in inference mode: predict() there traces a function for each model,
    seconds apiece, about half of a small model's check."""
    import numpy
    given = inputs if len(inputs) > 1 else inputs[0]
    if (release_of(keras)[0] in ("tensorflow", "tf_keras")
            or KERAS_AS_TF_KERAS <= api_version(keras) < KERAS_3) and getattr(
                sys.modules["tensorflow"], "executing_eagerly", lambda: False)():
        got = model(given, training=False)
    else:
        got = model.predict(given, batch_size=len(inputs[0]))
    return [numpy.asarray(part) for part in as_list(got)]


def compare(expected, got):
    import numpy
    if len(expected) != len(got):
        return result(WRONG, "{} outputs instead of {}".format(len(got), len(expected)))
    differences = []
    for want, have in zip(expected, got):
        if want.shape != have.shape:
            return result(WRONG, "an output of shape {} instead of {}".format(
                have.shape, want.shape))
        differences.append(float(numpy.max(numpy.abs(want - have))) if want.size else 0.0)
        if not numpy.allclose(want, have, rtol=RTOL, atol=ATOL):
            return result(WRONG, "largest absolute difference {:.3g}".format(max(differences)))
    return result(OK)


# --- the checks -------------------------------------------------------------

def find_clone_model(keras):
    """clone_model, or None: keras has it from 2.0.7; tf.keras exports it
    from 1.11 and before keeps it beside its clone routine, in the module
    that _affected.TARGETS names for the installed TensorFlow."""
    clone_model = getattr(keras.models, "clone_model", None)
    if clone_model is None and keras.__name__.startswith("tensorflow"):
        for target in targets_for(*release_of(keras)):
            if target.attribute == "_clone_functional_model":
                clone_model = getattr(importlib.import_module(target.module), "clone_model", None)
    return clone_model


def new_inputs(keras, model, name):
    return [keras.layers.Input(batch_shape=int_shape(keras, tensor), dtype=dtype(keras, tensor),
                               name="{}_{}".format(name, index))
            for index, tensor in enumerate(model.inputs)]


def called_on(keras, model, inputs):
    return as_list(model(inputs if len(inputs) > 1 else inputs[0]))


class Checks(object):
    """The checks of one model, in one interpreter."""

    def __init__(self, keras, model, inputs, other_inputs):
        self.keras, self.model = keras, model
        self.inputs, self.other_inputs = inputs, other_inputs
        self.expected = predict(keras, model, inputs)
        self.arguments = snapshot_arguments(keras, model)
        self.changes = []  # (check, layer path, call index, argument names)
        self.clone_model = find_clone_model(keras)
        self.clone = None

    def check_load(self):
        return result(OK, "the model predicts on the inputs")

    def cloned(self, model):
        clone = self.clone_model(model)
        clone.set_weights(self.model.get_weights())
        return clone

    def no_clone_model(self):
        return result(UNAVAILABLE, "{} has no clone_model (keras has it from 2.0.7)".format(
            release_name(self.keras)))

    def compare_clone(self, clone, predicting=None):
        """The predictions of the clone, or of another model rebuilt (or of
        the model `predicting` that holds it), then its count of trainable
        weights, with the model's."""
        compared = compare(self.expected, predict(self.keras, predicting or clone, self.inputs))
        want, have = len(self.model.trainable_weights), len(clone.trainable_weights)
        if compared["result"] == OK and have != want:
            return result(WRONG, "{} trainable weights instead of {}".format(have, want))
        return compared

    def check_from_config(self):
        """The model made again from its own config, as saving and loading
        it makes it: model_from_json of its to_json (json.loads, then the
        from_config of the config's class, a Sequential's or a functional
        model's), given the model's weights. Its layers' classes are its
        custom objects: the clones make its layers with them too."""
        objects = dict((type(layer).__name__, type(layer))
                       for _, layer in all_layers(self.keras, self.model))
        rebuilt = self.keras.models.model_from_json(self.model.to_json(), custom_objects=objects)
        rebuilt.set_weights(self.model.get_weights())
        return self.compare_clone(rebuilt)

    def check_clone(self):
        if self.clone_model is None:
            return self.no_clone_model()
        self.clone = self.cloned(self.model)
        return self.compare_clone(self.clone)

    def check_clone_of_clone(self):
        if self.clone_model is None:
            return self.no_clone_model()
        clone = self.clone or self.cloned(self.model)  # raises again where clone failed
        return self.compare_clone(self.cloned(clone))

    def check_nested(self):
        keras = self.keras
        outer_inputs = new_inputs(keras, self.model, "nested")
        outer = keras.models.Model(outer_inputs, called_on(keras, self.model, outer_inputs))
        return compare(self.expected, predict(self.keras, outer, self.inputs))

    def check_called_twice(self):
        keras = self.keras
        first, second = (new_inputs(keras, self.model, name) for name in ("first", "second"))
        twice = keras.models.Model(first + second, called_on(keras, self.model, first)
                                   + called_on(keras, self.model, second))
        expected = self.expected + predict(self.keras, self.model, self.other_inputs)
        return compare(expected, predict(self.keras, twice,
                                          self.inputs + self.other_inputs))

    def check_original_unchanged(self):
        if not self.changes:
            return result(OK)
        return result(WRONG, "; ".join(
            "{} changed the call arguments of {} (call {}): {}".format(
                check, path, index, ", ".join(names))
            for check, path, index, names in self.changes[:3]))

    def check_multi_gpu(self):
        multi_gpu_model, why_not = find_multi_gpu_model(self.keras)
        if multi_gpu_model is None:
            return result(UNAVAILABLE, why_not)
        repeated = sorted(set(name for name in self.model.output_names
                              if self.model.output_names.count(name) > 1))
        if repeated and api_version(self.keras) < OUTPUT_NAMES_MADE_UNIQUE:
            return result(UNAVAILABLE, "{}'s multi_gpu_model names a layer after each output, and "
                          "this model's output names repeat ({}): it cannot build it, fix or no "
                          "fix (keras 2.2.3 made them unique)".format(
                              release_name(self.keras), ", ".join(repeated)))
        parallel = multi_gpu_model(self.model, gpus=2, cpu_relocation=True)
        replica, = [layer for layer in parallel.layers if is_model(self.keras, layer)]
        replica.set_weights(self.model.get_weights())  # the relocated clone starts anew
        return self.compare_clone(replica, predicting=parallel)

    def run(self, progress=None):
        """{check name: result}, each check run even if another failed."""
        results = collections.OrderedDict()
        for name in CHECKS:
            try:
                results[name] = getattr(self, "check_" + name)()
            except Exception as error:
                results[name] = error_result(error)
            self.changes += [(name,) + change for change in changed_arguments(self.arguments)]
            restore_arguments(self.arguments)
            if progress:
                progress(name, results[name])
        return results


def snapshot_arguments(keras, model):
    """[(layer path, call index, node, a copy of its call arguments)]."""
    return [(path, index, node, dict(call_arguments(node)))
            for path, layer in all_layers(keras, model)
            for index, node in enumerate(inbound_nodes(layer))]


def changed_arguments(snapshot):
    """[(layer path, call index, names of the arguments that differ now)]."""
    changed = []
    for path, index, node, before in snapshot:
        after = call_arguments(node)
        names = sorted(name for name in set(before) | set(after)
                       if not same_argument(before.get(name), after.get(name)))
        if names:
            changed.append((path, index, names))
    return changed


def restore_arguments(snapshot):
    for _, _, node, before in snapshot:
        if before or call_arguments(node):
            node.arguments = dict(before)


def same_argument(before, after):
    before, after = as_list(before), as_list(after)
    return len(before) == len(after) and all(
        b is a or (not is_tensor(b) and not is_tensor(a) and b == a)
        for b, a in zip(before, after))


# multi_gpu_model merges each output in a layer named after it; before keras
# 2.2.3 (and tf.keras "2.2.4-tf", TensorFlow 1.13) it did not make repeated
# output names unique (two outputs of one layer or shared model), and then
# fails: `The name "encoder" is used 2 times in the model`.
OUTPUT_NAMES_MADE_UNIQUE = (2, 2, 3)


def find_multi_gpu_model(keras):
    """(multi_gpu_model, None) or (None, why it cannot run here)."""
    name = release_name(keras)
    if keras.backend.backend() != "tensorflow":
        return None, "multi_gpu_model needs the TensorFlow backend"
    multi_gpu_model = getattr(keras.utils, "multi_gpu_model", None)
    if multi_gpu_model is None:
        return None, name + " has no multi_gpu_model"
    if "cpu_relocation" not in parameters(multi_gpu_model):
        return None, name + "'s multi_gpu_model has no cpu_relocation"
    return multi_gpu_model, None


def seeing_two_gpus(keras, set_attribute=setattr):
    """The multi_gpu_model that check_multi_gpu runs, made to see two GPUs
    (`set_attribute` puts the list of devices into its module: a test's
    monkeypatch.setattr restores it); None where there is none."""
    multi_gpu_model, _ = find_multi_gpu_model(keras)
    if multi_gpu_model is not None:
        # Named as TensorFlow names them: tf.keras parses the names.
        devices = ["/job:localhost/replica:0/task:0/device:" + device
                   for device in ("CPU:0", "GPU:0", "GPU:1")]
        set_attribute(importlib.import_module(multi_gpu_model.__module__),
                      "_get_available_devices", lambda: devices)
    return multi_gpu_model


def simulate_two_gpus(keras):
    """Let multi_gpu_model build on the CPU: it sees two GPUs, and the
    session places their operations on the CPU. Before the model is loaded:
    a new session would lose its weights."""
    if seeing_two_gpus(keras) is None:
        return
    import tensorflow
    if tensorflow.__version__.startswith("1."):
        config = tensorflow.ConfigProto(allow_soft_placement=True)
        keras.backend.set_session(tensorflow.Session(config=config))
    else:  # TensorFlow 2 has no sessions to configure
        tensorflow.config.set_soft_device_placement(True)


def check_model(keras, model, batch=4, timesteps=8, seed=0, progress=None, given=None,
                saved_model=False):
    """(risks, {check name: result}, the model's predictions, the inputs'
    shapes) of a model built or loaded in this interpreter; `given`: the
    user's arrays for the model's inputs, else they are made from its inputs;
    `saved_model`: it was loaded from a SavedModel folder."""
    if given is None:
        inputs = make_inputs(keras, model, batch, timesteps, seed)
        other_inputs = make_inputs(keras, model, batch, timesteps, seed + 1, reverse=True)
    else:  # the rows in reverse order: another call, other masks
        inputs, other_inputs = given, [array[::-1] for array in given]
    shapes = [list(array.shape) for array in inputs]
    found = risks(keras, model, saved_model)
    try:
        checks = Checks(keras, model, inputs, other_inputs)
    except Exception as error:  # the model cannot even predict: nothing to compare with
        results = collections.OrderedDict(
            (name, result(UNAVAILABLE, "not run: the model cannot predict")) for name in CHECKS)
        results["load"] = error_result(error)
        return found, results, None, shapes
    return found, checks.run(progress), checks.expected, shapes
