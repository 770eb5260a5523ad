"""The rules: named rewrites of Keras's own routines' mask handling, and the
build of a fixed twin from the installed source (_fix.build_fixed's miss).

Rather than ship copies of Keras's code (which differs from release to
release), we take the installed function's own source, check that it
compiles to the bytecode that is running (so it cannot be stale or belong
to another function), apply the rules a target needs, and compile the
result against the function's own module namespace. Everything the rules
do not touch (layer creation, names, shared layers, updates and losses)
stays the installed release's own code.

Every rule must find what it rewrites; a function in which one finds
nothing is refused (UnsupportedFunction), never half-fixed.

A build is what the first patch() of an environment pays (later ones read
it back, _cache), and every one where bytecode is not written, so it is
done cheaply: it avoids inspect.getsource, ast.NodeTransformer's
walks, increment_lineno and fix_missing_locations (a quarter of their
instructions, benchmarks/patch_time.py): the source is the file's lines
from the code object's first line to the last its line table names, parsed
as they stand at their own lines; the rules walk statements, and only the
ones that look inside expressions walk those, once each; new nodes are located as
they are made. What is left is mostly Python's own parse and the two
compiles.
"""

import __future__
import ast
import dis
import linecache
import types

from keras_clone_fix import _cache
from keras_clone_fix._runtime import (
    UnsupportedFunction, argument_tensors_to_walk, arguments_not_in_inputs,
    cloned_where_config_refused, computes_masks,
    given_input_layer, given_input_layers_mapped, keras_masks, lambda_mask_kept,
    mask_through_input_layer, one_mask_per_output, propagated_mask_popped, recorded_output_masks,
    layer_calls_in_order, nodes_by_depth_in_call_order, tensor_arguments_refused, tensors_mapped,
    trainable_kept, trainable_read, trainable_written, walked_argument_makers_placed,
    without_propagated_mask)

_HELPER_PREFIX = "_keras_clone_fix_"
# These rules' text as imported: a stored build is used only where the
# rules that made it are the ones installed.
TEXT = _cache.read_bytes(_cache.RULES_FILE)


def _nodes(tree):
    """Every node in `tree`, as ast.walk finds them, in one list (a third of
    ast.walk's time: no generators)."""
    nodes = [tree]
    for node in nodes:  # grows as it goes
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, ast.AST):
                nodes.append(value)
            elif isinstance(value, list):
                nodes.extend(item for item in value if isinstance(item, ast.AST))
    return nodes


def _located(new, at):
    """`new`, made here around nodes of the source, with the location of
    `at` wherever it has none: what compile needs, without
    fix_missing_locations's walk of the whole function."""
    for node in _nodes(new):
        if "lineno" in node._attributes and not hasattr(node, "lineno"):
            ast.copy_location(node, at)
    return new


def _unlocated_copy(node):
    """A copy of an expression, without its locations (given where it is put)."""
    if isinstance(node, list):
        return [_unlocated_copy(item) for item in node]
    if not isinstance(node, ast.AST):
        return node
    return type(node)(**dict((field, _unlocated_copy(getattr(node, field, None)))
                             for field in node._fields))


def _helper(function):
    return ast.Name(id=_HELPER_PREFIX + function.__name__, ctx=ast.Load())


def _call(function, *args):
    return ast.Call(func=function, args=list(args), keywords=[])


def _name(node):
    return node.id if isinstance(node, ast.Name) else None


def _is_attribute(node, owner, attribute):
    return (isinstance(node, ast.Attribute) and node.attr == attribute
            and _name(node.value) == owner)


# The fields of a statement (or except clause) that hold statements.
_STATEMENT_LISTS = ("body", "orelse", "handlers", "finalbody")


class Rule(ast.NodeTransformer):
    """One rewrite; `found` counts the places it rewrote.

    Its walk visits statements only, as rules rewrite statements: a tenth of
    the nodes. A rule that looks inside expressions walks them itself.
    """

    helpers = ()  # functions of this module the rewritten code calls

    def __init__(self):
        self.found = 0

    def rewritten(self, node):
        self.found += 1
        return node

    def generic_visit(self, node):
        for field in _STATEMENT_LISTS:
            statements = getattr(node, field, None)
            if isinstance(statements, list):
                kept = []
                for statement in statements:
                    visited = self.visit(statement)
                    if isinstance(visited, list):
                        kept.extend(visited)
                    elif visited is not None:
                        kept.append(visited)
                setattr(node, field, kept)
        return node


class CopyNodeArguments(Rule):
    """`kwargs = node.arguments` -> `kwargs = dict(node.arguments)`; in
    tf.keras of TensorFlow 1.14, `kwargs = node.arguments or {}` ->
    `kwargs = dict(node.arguments or {})`.

    Every affected release takes the original node's dict of call arguments
    and then stores `kwargs['mask'] = ...` into it (tf.keras:
    `kwargs.setdefault('mask', ...)`, and the same for `training`): cloning,
    or calling a model on new tensors, wrote into the original model, and
    later calls used the mask of an earlier one.
    """

    def visit_Assign(self, node):
        value = node.value
        arguments = (value.values[0] if isinstance(value, ast.BoolOp)
                     and isinstance(value.op, ast.Or) else value)
        if _name(node.targets[0]) == "kwargs" and _is_attribute(arguments, "node", "arguments"):
            node.value = _located(_call(ast.Name(id="dict", ctx=ast.Load()), value), value)
            return self.rewritten(node)
        return node


class PropagatedMaskNotPassedBack(Rule):
    """`kwargs = dict(node.arguments)` -> `kwargs = without_propagated_mask(dict(node.arguments), node)`.

    `Layer.__call__` of Keras 2.0.0 - 2.0.2 records the mask it propagated
    from the inputs among the node's call arguments (2.0.3 records only the
    caller's). Calling the model on new tensors passed that mask, a tensor
    of the original graph, back to the layer (`You must feed a value for
    placeholder tensor`); without it, `run_internal_graph` passes the new
    inputs' masks. Applies after CopyNodeArguments.
    """

    helpers = (without_propagated_mask,)

    def visit_Assign(self, node):
        value = node.value
        if (_name(node.targets[0]) == "kwargs" and isinstance(value, ast.Call)
                and _name(value.func) == "dict" and len(value.args) == 1
                and _is_attribute(value.args[0], "node", "arguments")):
            node.value = _located(
                _call(_helper(without_propagated_mask), value, ast.Name(id="node", ctx=ast.Load())),
                value)
            return self.rewritten(node)
        return node


class LayerCallPropagatesMasks(Rule):
    """Drop `if has_arg(layer.call, 'mask'): ... kwargs['mask'] = ...`.

    The clone routine passed masks as an explicit `mask=` argument, which
    `Layer.__call__` records in the new node's arguments: the clone kept
    those mask tensors pinned, so cloning the clone or calling it on new
    tensors used masks of the wrong graph. Without it, `Layer.__call__`
    propagates the inputs' masks itself, as it did when the original was
    built. An explicit `mask=` the user passed stays in the arguments.
    """

    def visit_If(self, node):
        test = node.test
        if (isinstance(test, ast.Call) and _name(test.func) == "has_arg" and test.args
                and _is_attribute(test.args[0], "layer", "call")):
            return self.rewritten(None)
        return self.generic_visit(node)


class RecordedOutputMasks(Rule):
    """`output_masks = <anything>` -> `output_masks = recorded_output_masks(output_tensors)`.

    The clone routine recomputed each layer's masks as
    `to_list(layer.compute_mask(...))`: one mask for a multi-output layer,
    and `zip` then dropped the other outputs (2.0.7 - 2.3.1). 2.2.5 gave
    layers with `supports_masking = False` `[None] * len(outputs)`, which
    also drops the masks that nested models compute. The masks
    `Layer.__call__` recorded for the cloned call are the ones Keras uses.
    """

    helpers = (recorded_output_masks,)

    def visit_Assign(self, node):
        if _name(node.targets[0]) == "output_masks":
            node.value = _located(
                _call(_helper(recorded_output_masks), ast.Name(id="output_tensors", ctx=ast.Load())),
                node.value)
            return self.rewritten(node)
        return self.generic_visit(node)


class OneMaskPerOutput(Rule):
    """`layer.compute_mask(...)` -> `one_mask_per_output(layer.compute_mask(...), output_tensors)`.

    `run_internal_graph` calls `layer.call` directly, so it must match the
    masks to the outputs itself as `Layer.__call__` does. Up to 2.1.5 it
    kept one mask and dropped the other outputs (`Could not compute
    output`); 2.1.6 - 2.3.1 expand None only and raise `Layers should have
    equal number of output tensors and output masks` for one real mask, and
    for more masks than outputs (one output from several masked inputs,
    where the default compute_mask returns the inputs' masks), which
    `Layer.__call__` records as output i with mask i.
    """

    helpers = (one_mask_per_output,)

    def visit_FunctionDef(self, node):
        for call in _nodes(node):
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "compute_mask"):
                self.rewritten(self.expand(call))
        return node

    @staticmethod
    def expand(call):
        """`call` becomes `one_mask_per_output(<call>, output_tensors)` in
        place: a walk that knows no parents can rewrite it."""
        inner = ast.copy_location(type(call)(**dict(
            (field, getattr(call, field, None)) for field in call._fields)), call)
        for field in call._fields:  # Python 2 has starargs and kwargs too
            setattr(call, field, [] if isinstance(getattr(call, field, None), list) else None)
        call.func = _helper(one_mask_per_output)
        call.args = [inner, ast.Name(id="output_tensors", ctx=ast.Load())]
        return _located(call, inner)


class InputLayerPassesMask(Rule):
    """`layer.compute_mask(x, mask)` -> `mask_through_input_layer(layer, x, mask)`.

    `run_internal_graph` computes the masks of every node of the model, its
    input layers' too. InputLayer kept Layer's `supports_masking = False`
    up to Keras 2.2.2 and tf.keras of TensorFlow 1.12, so a model called on
    a masked tensor (a shared masked Embedding or a Masking layer in front
    of an encoder model) raised `TypeError: Layer input_1 does not support
    masking, but was passed an input_mask`. Keras 2.2.3 and TensorFlow 1.13
    made InputLayer support masking: the mask passes through it to the
    model's layers, as in the same layers composed without the model.
    Applies after OneMaskPerOutput, which wraps the same calls.
    """

    helpers = (mask_through_input_layer,)

    def visit_FunctionDef(self, node):
        for call in _nodes(node):
            if (isinstance(call, ast.Call) and _is_attribute(call.func, "layer", "compute_mask")
                    and len(call.args) == 2 and not call.keywords):
                call.func = _located(_helper(mask_through_input_layer), call.func)
                call.args = [_located(ast.Name(id="layer", ctx=ast.Load()), call)] + call.args
                self.rewritten(call)
        return node


class MaskAlreadyComputedKept(Rule):
    """In `Layer._set_mask_metadata`, the `else: output_mask = None` of
    `if hasattr(self, 'compute_mask') and not mask_already_computed:` ->
    `output_mask = keras_masks(outputs) if mask_already_computed else None`.

    tf.keras of TensorFlow 1.11 - 1.13 skips `compute_mask` when every
    output already carries a `_keras_mask` (a model's outputs, set by its
    `_run_internal_graph`), and then writes None over those masks: a model
    called on new tensors lost its output masks, and the layers and masked
    losses after it counted the padding, silently. TensorFlow 1.14 (and
    1.10, which always called `compute_mask`) keeps them.
    """

    helpers = (keras_masks,)

    def visit_If(self, node):
        self.generic_visit(node)
        test = node.test
        if (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)
                and any(isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not)
                        and _name(value.operand) == "mask_already_computed"
                        for value in test.values)
                and len(node.orelse) == 1 and isinstance(node.orelse[0], ast.Assign)
                and _name(node.orelse[0].targets[0]) == "output_mask"):
            assign = node.orelse[0]
            assign.value = _located(ast.IfExp(
                test=ast.Name(id="mask_already_computed", ctx=ast.Load()),
                body=_call(_helper(keras_masks), ast.Name(id="outputs", ctx=ast.Load())),
                orelse=assign.value), assign.value)
            self.rewritten(node)
        return node


class OwnComputeMaskCounted(Rule):
    """In `Sequential._call_and_compute_mask`, `if layer.supports_masking:`
    -> `if computes_masks(layer):`: a layer with a compute_mask of its own
    computes its mask whatever its flag says.

    tf.keras's Bidirectional of TensorFlow 1.11 - 1.13 sets
    `supports_masking = True` before `Layer.__init__` resets it to False.
    `Layer.__call__` and `_run_internal_graph` call every layer's
    compute_mask, but the loop a Sequential model is computed by when it is
    called on new tensors (nested, by a model's own routine), asked for its
    mask, or built without an input shape, asks the flag: the mask of a
    Bidirectional inside a Sequential was lost there, and the layers after
    the Sequential counted the padding, silently (the model itself, with
    MaskAlreadyComputedKept, kept it: its nested copy predicted otherwise).
    TensorFlow 1.14 computes a Sequential with `Layer.__call__`, and tf_keras
    counts a layer with its own compute_mask as masking; a layer with
    neither gets no mask, as before.
    """

    helpers = (computes_masks,)

    def visit_If(self, node):
        self.generic_visit(node)
        if _is_attribute(node.test, "layer", "supports_masking"):
            node.test = _located(_call(_helper(computes_masks),
                                       ast.Name(id="layer", ctx=ast.Load())), node.test)
            self.rewritten(node)
        return node


def _string(node):
    """The value of a string literal (ast.Str before Python 3.8), else None."""
    value = getattr(node, "value", getattr(node, "s", None))
    return value if type(node).__name__ in ("Constant", "Str") and isinstance(value, str) else None


def _calls_method(statement, method):
    """Whether a statement is `self.<method>(...)`, or assigns its result."""
    value = getattr(statement, "value", None)
    return (isinstance(statement, (ast.Expr, ast.Assign)) and isinstance(value, ast.Call)
            and _is_attribute(value.func, "self", method))


class MaskSetOnCopiedOutputs(Rule):
    """In `Layer.__call__`, `self._set_mask_metadata(inputs, outputs,
    previous_mask)` moves to after `if ...: inputs, outputs =
    self._set_connectivity_metadata_(...)`, under the test it was under
    (`if build_graph:` on TensorFlow 1.9 - 1.12).

    `_set_connectivity_metadata_` copies an output that is one of the
    layer's inputs (`Activation('linear')`, `GaussianNoise` or
    `GaussianDropout` called with `training=False`, a Lambda returning its
    input) with `array_ops.identity`. tf.keras of TensorFlow 1.9 - 1.13 set
    the masks first, on the input tensor itself (1.11 - 1.13 overwrote its
    mask with None), so the copy that the model holds had none: the layers
    after it counted the padding, while the model called on new tensors,
    whose routine computes the masks itself, did not. TensorFlow 1.14 sets
    the masks after the copy, and so does tf_keras: the copy carries the
    layer's mask and the input keeps its own.
    """

    def visit_FunctionDef(self, node):
        for parent in _nodes(node):
            for field in _STATEMENT_LISTS:
                statements = getattr(parent, field, None)
                if isinstance(statements, list):
                    self._moved(statements)
        return node

    def _moved(self, statements):
        for index, statement in enumerate(statements[:-1]):
            connectivity = statements[index + 1]
            if not (isinstance(connectivity, ast.If) and any(
                    _calls_method(line, "_set_connectivity_metadata_")
                    for line in connectivity.body)):
                continue
            if _calls_method(statement, "_set_mask_metadata"):
                statements[index:index + 2] = [connectivity, statement]
                self.rewritten(statement)
            elif isinstance(statement, ast.If) and len(statement.body) > 1 and _calls_method(
                    statement.body[-1], "_set_mask_metadata") and not statement.orelse:
                setting = statement.body.pop()
                guarded = ast.If(test=_unlocated_copy(statement.test), body=[setting], orelse=[])
                statements.insert(index + 2, _located(self.rewritten(guarded), setting))
            return


class ExplicitMaskRecorded(Rule):
    """In `Layer._set_connectivity_metadata_`, `kwargs.pop('mask', None)` ->
    `propagated_mask_popped(kwargs, inputs)`: the mask is left out of the
    call's recorded arguments only where it is the one `Layer.__call__`
    propagated from the inputs.

    tf.keras of TensorFlow 1.9 - 1.14 drops every `mask` from the arguments
    it records, the one the caller gave too (`LSTM(2)(Masking()(x),
    mask=m)`, or `mask=None` on a masked tensor): the clone and the model
    called on new tensors, which take a call's arguments from the node,
    computed with the propagated mask instead, silently. tf_keras records
    the call's mask. A recorded mask tensor is a tensor argument like any
    other (MapTensorsInCallArguments gives the rebuilt call its
    counterpart); the model's config still leaves arguments that are not
    JSON out, as the release does.
    """

    helpers = (propagated_mask_popped,)

    def visit_Expr(self, node):
        call = node.value
        if (isinstance(call, ast.Call) and _is_attribute(call.func, "kwargs", "pop")
                and call.args and _string(call.args[0]) == "mask"):
            node.value = _located(_call(_helper(propagated_mask_popped),
                                        ast.Name(id="kwargs", ctx=ast.Load()),
                                        ast.Name(id="inputs", ctx=ast.Load())), call)
            return self.rewritten(node)
        return node


def _takes_node_arguments(statement):
    """How a release starts a call's keyword arguments from the node's:
    `if node.arguments: kwargs = ...` (every release to tf.keras 1.13), or
    `kwargs = node.arguments or {}` (tf.keras 1.14; `dict(...)` of it after
    CopyNodeArguments)."""
    if isinstance(statement, ast.If):
        return _is_attribute(statement.test, "node", "arguments") and any(
            isinstance(line, ast.Assign) and _name(line.targets[0]) == "kwargs"
            for line in statement.body)
    if not (isinstance(statement, ast.Assign) and _name(statement.targets[0]) == "kwargs"):
        return False
    value = statement.value
    if isinstance(value, ast.Call) and _name(value.func) == "dict" and len(value.args) == 1:
        value = value.args[0]
    return (isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or)
            and _is_attribute(value.values[0], "node", "arguments"))


def _assign_kwargs(value):
    return ast.Assign(targets=[ast.Name(id="kwargs", ctx=ast.Store())], value=value)


class _AfterNodeArguments(Rule):
    """Adds `kwargs = <self.after()>` after the statement that starts a
    call's keyword arguments from the node's (_takes_node_arguments)."""

    def after(self):
        raise NotImplementedError

    def _added_after(self, node):
        if _takes_node_arguments(node):
            return [node, _located(self.rewritten(_assign_kwargs(self.after())), node)]
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        return self._added_after(node)

    def visit_Assign(self, node):
        return self._added_after(node)


# The routines' map from the original's tensors to the new ones: tensor_dict
# in tf.keras 1.14's run_internal_graph.
_TENSOR_MAPS = ("tensor_map", "tensor_dict")


def _tensor_map_key(function):
    """(the routine's map of tensors, `lambda <name>: <key>`) from its `<key> in
    <map>` tests, the same key in each up to the name of the tensor; None
    where there is none, or where they disagree."""
    found = []  # (map, the key with its tensor renamed, the tensor's name, the key)
    for test in _nodes(function):
        if (isinstance(test, ast.Compare) and len(test.ops) == 1
                and isinstance(test.ops[0], ast.In) and _name(test.comparators[0]) in _TENSOR_MAPS):
            names = [_name(name) for name in _nodes(test.left)
                     if _name(name) not in (None, "str", "id")]
            if len(names) != 1:
                return None
            shape = ast.dump(test.left).replace("id='{}'".format(names[0]), "id='tensor'")
            found.append((_name(test.comparators[0]), shape, names[0], test.left))
    if len(set((mapping, shape) for mapping, shape, _, _ in found)) != 1:
        return None
    mapping, _, name, left = found[0]
    key = _unlocated_copy(ast.parse("lambda {}: None".format(name), mode="eval").body)
    key.body = _unlocated_copy(left)
    return mapping, key


class MapTensorsInCallArguments(_AfterNodeArguments):
    """After the call's keyword arguments are taken from the node's, add
    `kwargs = tensors_mapped(kwargs, tensor_map, lambda x: <key>)`.

    Keyword arguments may hold Keras tensors of the model's own graph: RNN
    `initial_state` and `constants`, which `RNN.__call__` records in the
    node's arguments from 2.0.9 to 2.2.4 (2.2.5 pops them), or any layer
    called with a tensor argument (every release; tf.keras 1.11 - 1.14's
    routines, which handle an RNN's states as inputs, and 1.15's clone
    routine, whose calls moved to `_make_new_nodes`, still passed a custom
    layer's `attention_mask=w` back as it was). Every release passed
    them back as they were, so a clone or a model called on new tensors
    computed from the original graph (`You must feed a value for
    placeholder tensor`; 1.15's clone is refused: `Graph disconnected`).
    Each is replaced by the tensor
    the routine computed for it. The routines key their map (`tensor_map`,
    tf.keras 1.14's run_internal_graph `tensor_dict`) by the tensor, by
    `id(x)` or by `str(id(x))` depending on the release: the key is taken
    from the routine's own `<key> in tensor_map` tests.
    """

    helpers = (tensors_mapped,)

    def visit_FunctionDef(self, node):
        found = _tensor_map_key(node)
        if found is None:
            return node  # no key, or keys that disagree: found stays 0
        self.mapping, self.key = found
        return self.generic_visit(node)

    def after(self):
        # A copy of the key for each place it is inserted, located there.
        return _call(_helper(tensors_mapped), ast.Name(id="kwargs", ctx=ast.Load()),
                     ast.Name(id=self.mapping, ctx=ast.Load()), _unlocated_copy(self.key))


class ArgumentsInInputsPassedOnce(_AfterNodeArguments):
    """After the call's keyword arguments are taken from the node's, add
    `kwargs = arguments_not_in_inputs(kwargs, node)`.

    From 2.0.9 to 2.2.4 `RNN.__call__` (and Bidirectional's from 2.1.3) makes
    `initial_state` and `constants` node inputs and records them in the
    node's arguments as well; so does tf.keras's Bidirectional to 1.14. The
    clone routine (and tf.keras 1.14's run_internal_graph) calls the new
    layer on all the node's input tensors and passed the arguments again,
    and the layer refuses them (`assert initial_state is None and constants
    is None` in recurrent.py's `_standardize_args`); 2.2.5 stopped recording
    them, and the rule then finds nothing to drop. An argument whose tensors
    are all node inputs reaches the layer once, as inputs, the way the
    release's own layer takes them apart again.
    """

    helpers = (arguments_not_in_inputs,)

    def after(self):
        return _call(_helper(arguments_not_in_inputs), ast.Name(id="kwargs", ctx=ast.Load()),
                     ast.Name(id="node", ctx=ast.Load()))


def _makes_from_config(value):
    return any(isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
               and call.func.attr == "from_config" for call in _nodes(value))


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
        node.value = _located(_call(_helper(self.helpers[0]), *self._arguments(node.value)),
                              node.value)
        return self.rewritten(node)

    def visit_Assign(self, node):
        if _name(node.targets[0]) == "new_layer" and _makes_from_config(node.value):
            return self._kept(node)
        return node

    def visit_Return(self, node):
        if node.value is not None and _makes_from_config(node.value) and any(
                _name(name) == "layer" for name in _nodes(node.value)):
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


class _ModelReturned(Rule):
    """The def's own last statement, `return <value>` where `returns(value)`
    holds (not a return of a function nested in it) -> `return <helper>(<self.given>,
    <value>)`."""

    given = None

    def returns(self, value):
        raise NotImplementedError

    def visit_FunctionDef(self, node):
        last = node.body[-1]
        if isinstance(last, ast.Return) and last.value is not None and self.returns(last.value):
            last.value = _located(_call(_helper(self.helpers[0]),
                                        ast.Name(id=self.given, ctx=ast.Load()), last.value),
                                  last.value)
            self.rewritten(last)
        return node


class TrainableWrittenInConfig(_ModelReturned):
    """A model's `get_config`: `return copy.deepcopy(config)` ->
    `return trainable_written(self, copy.deepcopy(config))`.

    A model's config has no `trainable` on Keras 2.0.0 - 2.3.1 and tf.keras
    of TensorFlow 1.4 - 1.13 (Container's, Network's get_config), and
    setting a model's `trainable` leaves its layers' flags as they were: a
    frozen nested model came back trainable from `Model.from_config`,
    `model_from_json` and `load_model`, its weights listed among the
    trainable ones (4 for 2). The config of a frozen model says
    `"trainable": false`, a key the releases' `from_config` does not read
    (a file saved with it loads as before where the fix is not installed);
    the config of any other model stays what the release writes.
    TrainableReadFromConfig reads it back. TensorFlow 1.14's `trainable`
    setter sets the flag of every layer inside, whose configs carry it.
    """

    helpers = (trainable_written,)
    given = "self"

    def returns(self, value):
        return (isinstance(value, ast.Call) and _is_attribute(value.func, "copy", "deepcopy")
                and len(value.args) == 1 and _name(value.args[0]) == "config")


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
    given = "config"

    def returns(self, value):
        return isinstance(value, ast.Call) and _name(value.func) == "cls"


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
        if (isinstance(given, ast.Call) and _name(given.func) == "zip" and len(given.args) == 2
                and _is_attribute(given.args[0], "model", "inputs")
                and _name(given.args[1]) == "input_tensors"):
            call = _call(_helper(given_input_layers_mapped),
                         ast.Name(id="layer_map", ctx=ast.Load()), _unlocated_copy(given.args[0]),
                         ast.Name(id="input_tensors", ctx=ast.Load()))
            return [node, _located(self.rewritten(ast.Expr(value=call)), node)]
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
                and _name(target.value) == "new_input_layers"
                and _name(getattr(target.slice, "value", target.slice)) == "original_input_layer"
                and _name(value) == "original_input_layer"):
            node.value = _located(_call(_helper(given_input_layer),
                                        ast.Name(id="input_tensor", ctx=ast.Load()),
                                        ast.Name(id="original_input_layer", ctx=ast.Load()),
                                        ast.Name(id="original_input_layer", ctx=ast.Load())),
                                  value)
            return self.rewritten(node)
        return node


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
        if (isinstance(queued, ast.Call) and _is_attribute(queued.func, "unprocessed_nodes", "pop")
                and len(queued.args) == 1 and not node.orelse and len(body) == 1
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Call)
                and _name(body[0].value.func) == "process_node"):
            call = _call(_helper(layer_calls_in_order),
                         ast.Name(id="unprocessed_nodes", ctx=ast.Load()),
                         _unlocated_copy(queued.args[0]),
                         ast.Name(id="process_node", ctx=ast.Load()))
            return _located(self.rewritten(ast.Expr(value=call)), node)
        return node


# A model's nodes by depth: `_nodes_by_depth`, `nodes_by_depth` in Keras 2.0.x.
_NODES_BY_DEPTH = ("_nodes_by_depth", "nodes_by_depth")
_IN_CALL_ORDER = _HELPER_PREFIX + "nodes_by_depth"


class ArgumentsMadeBeforeTheirCalls(Rule):
    """`depth_keys = list(model._nodes_by_depth.keys())` ->
    `<in call order> = nodes_by_depth_in_call_order(model._nodes_by_depth)`,
    `depth_keys = list(<in call order>.keys())`, and the routine's other
    reads of `model._nodes_by_depth` (Keras 2.0.x: `nodes_by_depth`) read
    `<in call order>`.

    Every routine makes a model's layer calls depth by depth, and a depth
    counts a call's inputs, not its keyword arguments. A tensor keyword
    argument made by a call that Keras puts at the same depth or after
    (`w = Dense(3)(b)`, `Attend()(a, attention_mask=w)`, `w` also an
    output) was not made yet when its call came, and the call got the
    original graph's tensor (`You must feed a value for placeholder
    tensor`), on every affected release; tf_keras 2.21 computes it right.
    Where no argument needs it, the depths are Keras's own, in the same
    dict.
    """

    helpers = (nodes_by_depth_in_call_order,)

    def visit_FunctionDef(self, node):
        self.owner = None
        for parent in _nodes(node):
            for field in parent._fields:
                value = getattr(parent, field, None)
                if self._is_read(value):
                    setattr(parent, field, self._local(value))
                elif isinstance(value, list):
                    value[:] = [self._local(item) if self._is_read(item) else item
                                for item in value]
        return self.generic_visit(node) if self.owner else node

    def _is_read(self, node):
        return (isinstance(node, ast.Attribute) and node.attr in _NODES_BY_DEPTH
                and isinstance(node.ctx, ast.Load) and _name(node.value) is not None)

    def _local(self, read):
        """The local that replaces a read, the read kept for the assignment."""
        if self.owner is None:
            self.owner = read
        elif _name(read.value) != _name(self.owner.value) or read.attr != self.owner.attr:
            raise UnsupportedFunction("nodes by depth read from {} and {}".format(
                ast.dump(self.owner), ast.dump(read)))
        return ast.copy_location(ast.Name(id=_IN_CALL_ORDER, ctx=ast.Load()), read)

    def visit_Assign(self, node):
        if _name(node.targets[0]) == "depth_keys" and any(
                _name(name) == _IN_CALL_ORDER for name in _nodes(node.value)):
            ordered = ast.Assign(targets=[ast.Name(id=_IN_CALL_ORDER, ctx=ast.Store())],
                                 value=_call(_helper(nodes_by_depth_in_call_order),
                                             _unlocated_copy(self.owner)))
            return [_located(self.rewritten(ordered), node), node]
        return node



def _dumps_node_arguments(statement):
    """`json.dumps(node.arguments)`, the statement a model's get_config tries."""
    call = getattr(statement, "value", None)
    return (isinstance(statement, ast.Expr) and isinstance(call, ast.Call)
            and _is_attribute(call.func, "json", "dumps") and len(call.args) == 1
            and _is_attribute(call.args[0], "node", "arguments"))


class TensorArgumentsRefused(Rule):
    """A model's `get_config`: in `try: json.dumps(node.arguments) ... except
    TypeError: <warn>; kwargs = {}`, the handler starts with
    `tensor_arguments_refused(layer, node)`.

    Keras 2.0.0 - 2.3.1 and tf.keras of TensorFlow 1.4 - 1.14 leave out of
    the config every argument of a layer call that JSON cannot hold, with a
    warning: a tensor argument (`Attend()(x, attention_mask=w)`, `LSTM(2)(x,
    mask=m)`) is not there, and `Model.from_config`, `model_from_json` and
    `load_model` make the call without it (`ValueError`, or other numbers
    with no error: tf.keras 1.13). No form of the config brings it back on
    those releases: their `from_config` passes a call's arguments to the
    layer as the config has them. TensorFlow 1.15 and tf_keras write `[layer
    name, node index, tensor index]` for it and make the tensor from that.
    The fix refuses such a config in one line, naming the layer and the
    argument: no file is written that loads as another model. An argument
    whose tensors are all inputs of the call (an RNN's `initial_state`)
    comes back with them, and the rest is left out as before.
    """

    helpers = (tensor_arguments_refused,)

    def visit_Try(self, node):
        self.generic_visit(node)
        if any(_dumps_node_arguments(statement) for statement in node.body):
            for handler in node.handlers:
                if _name(handler.type) == "TypeError":
                    call = _call(_helper(tensor_arguments_refused),
                                 ast.Name(id="layer", ctx=ast.Load()),
                                 ast.Name(id="node", ctx=ast.Load()))
                    handler.body.insert(0, _located(self.rewritten(ast.Expr(value=call)),
                                                    handler.body[0]))
        return node

    visit_TryExcept = visit_Try  # Python 2's try ... except
def _renamed(node, old, new):
    """A copy of an expression, every name or attribute `old` in it `new`."""
    copy = _unlocated_copy(node)
    for part in _nodes(copy):
        for field in ("id", "attr"):
            if getattr(part, field, None) == old:
                setattr(part, field, new)
    return copy


class ArgumentMakersWalked(Rule):
    """Before `nodes_by_depth = {}` (tf.keras 1.14: `collections.defaultdict(list)`)
    of the walk that gathers a model's nodes and layers (Container.__init__,
    `_map_graph_network`), add `for x in argument_tensors_to_walk(
    nodes_in_decreasing_depth, nodes_depths, <the inputs>): <the body of the
    walk's loop over the outputs>`, then `walked_argument_makers_placed(
    nodes_in_decreasing_depth, nodes_depths, layers_depths)`.

    Keras 2.0.6 - 2.3.1 and tf.keras of TensorFlow 1.4 - 1.14 walk a model
    from its outputs through the tensors each call takes as inputs, not
    through the tensors in its keyword arguments: a layer whose output only
    a keyword argument takes (`Scale()(h, scale=Dense(4)(x))`, `m =
    Lambda(f)(tokens)` for `LSTM(2)(e, mask=m)`) was left out of the model,
    its layers, its weights (never trained, saved or copied) and its nodes:
    the clone and the model called on new tensors passed the original's
    tensor on (`You must feed a value for placeholder tensor`, or other
    numbers where tf.keras drops the mask). TensorFlow 1.15 and tf_keras walk
    the call arguments too. The walk follows the argument tensors that the
    model computes from its inputs; the nodes it adds get depths of their
    own, and Keras's depths, so its order of the layers and their weights,
    stay as they were.
    """

    helpers = (argument_tensors_to_walk, walked_argument_makers_placed)

    def visit_FunctionDef(self, node):
        if hasattr(self, "outputs_loop"):
            return node  # the walk's own def, nested in the routine
        self.outputs_loop = None
        if not any(_name(name) == "nodes_in_decreasing_depth" for name in _nodes(node)):
            return node  # Keras 2.0.0 - 2.0.5 set the depths as they walk
        for statement in node.body:
            if (isinstance(statement, ast.For) and _name(statement.target) is not None
                    and any(isinstance(call, ast.Call) and (_name(call.func) or "").startswith(
                        "build_map") for line in statement.body for call in _nodes(line))
                    and any(_name(part) == "outputs" or getattr(part, "attr", None) == "outputs"
                            for part in _nodes(statement.iter))):
                self.outputs_loop = statement
        return self.generic_visit(node) if self.outputs_loop is not None else node

    def visit_Assign(self, node):
        value = node.value
        if _name(node.targets[0]) == "nodes_by_depth" and (
                isinstance(value, ast.Dict) and not value.keys or isinstance(value, ast.Call)
                and _is_attribute(value.func, "collections", "defaultdict")):
            loop = self.outputs_loop
            names = [ast.Name(id=name, ctx=ast.Load()) for name in (
                "nodes_in_decreasing_depth", "nodes_depths", "layers_depths")]
            walk = ast.For(target=_unlocated_copy(loop.target),
                           iter=_call(_helper(argument_tensors_to_walk), names[0], names[1],
                                      _renamed(loop.iter, "outputs", "inputs")),
                           body=_unlocated_copy(loop.body), orelse=[])
            placed = ast.Expr(value=_call(_helper(walked_argument_makers_placed),
                                          *[_unlocated_copy(name) for name in names]))
            return [_located(self.rewritten(walk), node), _located(placed, node), node]
        return node


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
    supported.`, or other numbers), and with TensorArgumentsRefused, which
    refuses such a config, the clone was refused. TensorFlow 1.15 and
    tf_keras write the tensor into the config, and the copy made from it
    keeps it. Such a model, and only such, is cloned by the release's own
    clone routine (clone_model, fixed), its calls made with their arguments;
    the lambda keeps the config from being written first.
    """

    helpers = (cloned_where_config_refused,)

    def _arguments(self, value):
        made = _unlocated_copy(ast.parse("lambda: None", mode="eval").body)
        made.body = value
        return [ast.Name(id="layer", ctx=ast.Load()), made,
                ast.Name(id="clone_model", ctx=ast.Load())]


# The compiler flags of every __future__ feature: those among a code object's
# flags are the features its module imported, which its source compiles with
# (Python 2: `from __future__ import absolute_import` makes another import
# instruction, `division` another `/`; TensorFlow's modules import both).
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag
del _feature


def _future_flags(original):
    return original.__code__.co_flags & _FUTURE_FLAGS


def _function_def(original):
    """The ast of `original`'s definition, at its lines in its file.

    Read as inspect.getsource would, without its tokenizer: the file's
    lines (linecache, reread if the file changed on disk since) from the
    code's first line to the last its line table names, with the lines
    after those added one by one until they parse (a last statement may
    run over several). Lines after it that compile to nothing (`else:
    pass`) may be left out; _check_source_is_running_code proves the text
    is the running function either way.
    """
    code = original.__code__
    linecache.checkcache(code.co_filename)
    lines = linecache.getlines(code.co_filename, original.__globals__)
    first = code.co_firstlineno
    if not 0 < first <= len(lines):
        raise UnsupportedFunction("its source is not available: no line {} in {}".format(
            first, code.co_filename))
    last = max([first] + [line for _, line in dis.findlinestarts(code) if line is not None])
    # An indented def (a method, a nested function) is parsed as it stands,
    # under an `if 1:` on the line before: at its own lines, and no text of
    # it (a docstring) changed by dedenting.
    indented = lines[first - 1][:1] in (" ", "\t")
    above = "\n" * (first - 2) + "if 1:\n" if indented else "\n" * (first - 1)
    while True:
        try:
            module = compile(above + "".join(lines[first - 1:last]), code.co_filename, "exec",
                             ast.PyCF_ONLY_AST | _future_flags(original), dont_inherit=True)
            break
        except SyntaxError as error:
            if last >= len(lines):
                raise UnsupportedFunction("its source in {} does not parse: {}".format(
                    code.co_filename, error))
            last += 1
    body = module.body[0].body if indented else module.body
    definition = body[0] if len(body) == 1 else None
    decorators = [_name(decorator) for decorator in getattr(definition, "decorator_list", [])]
    if not isinstance(definition, ast.FunctionDef) or decorators not in ([], ["classmethod"]):
        raise UnsupportedFunction("its source is not one def, undecorated or a classmethod")
    return _mangled(definition, original)


def _mangled(definition, original):
    """A method's definition with its private names (`self.__class_`, a
    typo of tf.keras 1.9 - 1.12's Layer.__call__) mangled as its class
    compiled them (`self._Layer__class_`): compiled outside the class, its
    names would be others. Python 2 keeps no __qualname__ to know the class
    by; none of the methods patched there has private names."""
    owner = getattr(original, "__qualname__", "").rpartition(".")[0].rpartition(".")[2]
    prefix = "_" + owner.lstrip("_")
    if not owner or owner == "<locals>" or prefix == "_":
        return definition
    for node in _nodes(definition):
        for field in ("attr", "id"):
            name = getattr(node, field, None)
            if (isinstance(node, (ast.Attribute, ast.Name)) and isinstance(name, str)
                    and name.startswith("__") and not name.endswith("__")):
                setattr(node, field, prefix + name)
    return definition


# What must be the same in the code compiled from the source and the code
# that runs, besides the constants (compared with _same_code).
_COMPARED = ("co_name", "co_argcount", "co_code", "co_names", "co_varnames", "co_freevars",
             "co_cellvars", "co_firstlineno")


def _same_code(compiled, running, owner):
    """Whether two code objects are the same function at the same line:
    bytecode, names, constants, and nested functions alike. `owner` is what
    the running function's qualified name has before its name ('Network.'):
    Python 3 keeps its nested functions' qualified names among the constants,
    and the compiled ones lack it."""
    if any(getattr(compiled, name) != getattr(running, name) for name in _COMPARED):
        return False
    if len(compiled.co_consts) != len(running.co_consts):
        return False
    for mine, theirs in zip(compiled.co_consts, running.co_consts):
        if isinstance(mine, types.CodeType) and isinstance(theirs, types.CodeType):
            if not _same_code(mine, theirs, owner):
                return False
        elif type(mine) is not type(theirs) or (mine != theirs and not (
                isinstance(mine, str) and theirs == owner + mine)):
            return False
    return True


def _check_source_is_running_code(definition, original):
    module = ast.parse("")
    module.body.append(definition)
    code = original.__code__
    compiled = next(const for const in compile(module, code.co_filename, "exec",
                                               _future_flags(original), dont_inherit=True).co_consts
                    if isinstance(const, types.CodeType))
    qualified = getattr(original, "__qualname__", original.__name__)  # Python 2: no __qualname__
    if not _same_code(compiled, code, qualified[:-len(original.__name__)]):
        raise UnsupportedFunction(
            "its source in {} does not match the running code".format(code.co_filename))


def apply_rules(definition, rule_names):
    """(definition rewritten by the rules of these names, the helpers it
    calls); raises UnsupportedFunction when a rule finds nothing to rewrite."""
    helpers = []
    for name in rule_names:
        rule = globals()[name]()
        definition = rule.visit(definition)
        if not rule.found:
            raise UnsupportedFunction("rule {} found nothing to rewrite".format(name))
        helpers.extend(rule.helpers)
    return definition, helpers


def factory_code(original, rule_names):
    """(the code of a module defining `_factory(<helpers>)`, which returns
    the fixed twin of `original`; the names of the helpers it takes, in
    _runtime.HELPERS): the expensive part, which _cache keeps."""
    definition = _function_def(original)
    _check_source_is_running_code(definition, original)
    definition, helpers = apply_rules(definition, rule_names)
    # The twin of a classmethod is its function: the classmethod stays Keras's
    # (the wrapper is around it), and binds the class as it did.
    definition.decorator_list = []
    # The twin takes the original's defaults; evaluated here they would need
    # the module's names (tf.keras 1.14: `layer_fn=_clone_layer`).
    arguments = definition.args
    arguments.defaults = [_located(ast.parse("None", mode="eval").body, default)
                          for default in arguments.defaults]
    # Nest the def in a factory so the helpers arrive as closure variables:
    # the function's module gains no name of ours.
    names = [_HELPER_PREFIX + helper.__name__ for helper in helpers]
    module = ast.parse("def _factory({}):\n    return {}\n".format(", ".join(names), definition.name))
    module.body[0].body.insert(0, definition)
    code = compile(module, original.__code__.co_filename, "exec", _future_flags(original),
                   dont_inherit=True)
    return code, [helper.__name__ for helper in helpers]
