"""The rules on how rebuilt and called layers get their masks: one mask per
output, recorded and propagated masks, and Layer.__call__'s own mask
bookkeeping on tf.keras."""

import ast

from keras_clone_fix._rewrite import (
    Rule, STATEMENT_LISTS, call_node, helper_name, is_attribute, located, name_of, nodes_in,
    unlocated_copy)
from keras_clone_fix._runtime import (
    computes_masks, keras_masks, mask_through_input_layer, masks_on_copies, masks_paired,
    one_mask_per_output, propagated_mask_popped, recorded_output_masks, without_propagated_mask)


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
        if (name_of(node.targets[0]) == "kwargs" and isinstance(value, ast.Call)
                and name_of(value.func) == "dict" and len(value.args) == 1
                and is_attribute(value.args[0], "node", "arguments")):
            node.value = located(
                call_node(helper_name(without_propagated_mask), value,
                          ast.Name(id="node", ctx=ast.Load())),
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
        if (isinstance(test, ast.Call) and name_of(test.func) == "has_arg" and test.args
                and is_attribute(test.args[0], "layer", "call")):
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
        if name_of(node.targets[0]) == "output_masks":
            node.value = located(
                call_node(helper_name(recorded_output_masks),
                          ast.Name(id="output_tensors", ctx=ast.Load())),
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
        for call in nodes_in(node):
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
        call.func = helper_name(one_mask_per_output)
        call.args = [inner, ast.Name(id="output_tensors", ctx=ast.Load())]
        return located(call, inner)


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
        for call in nodes_in(node):
            if (isinstance(call, ast.Call) and is_attribute(call.func, "layer", "compute_mask")
                    and len(call.args) == 2 and not call.keywords):
                call.func = located(helper_name(mask_through_input_layer), call.func)
                call.args = [located(ast.Name(id="layer", ctx=ast.Load()), call)] + call.args
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
                        and name_of(value.operand) == "mask_already_computed"
                        for value in test.values)
                and len(node.orelse) == 1 and isinstance(node.orelse[0], ast.Assign)
                and name_of(node.orelse[0].targets[0]) == "output_mask"):
            assign = node.orelse[0]
            assign.value = located(ast.IfExp(
                test=ast.Name(id="mask_already_computed", ctx=ast.Load()),
                body=call_node(helper_name(keras_masks), ast.Name(id="outputs", ctx=ast.Load())),
                orelse=assign.value), assign.value)
            self.rewritten(node)
        return node


class MasksPairedWithOutputs(Rule):
    """In `Layer._set_mask_metadata`, `output_mask = self.compute_mask(...)`
    -> `output_mask = masks_paired(outputs, self.compute_mask(...))`.

    tf.keras of TensorFlow 1.9 - 1.13 gives the masks to the outputs by the
    outputs' structure: a lone output takes whatever `compute_mask` returns,
    a list of masks too (one output from several masked inputs), and a list
    of outputs iterates a lone mask (`Tensor objects are only iterable`).
    With MaskSetOnCopiedOutputs the masks are set after
    `_set_connectivity_metadata_`, which makes a one-element list of outputs
    its element: the output then carried the list, which a model called on
    it took as its input's mask and fed the original's placeholder to its
    clone. TensorFlow 1.14 and tf_keras pair flat outputs with flat masks.
    """

    helpers = (masks_paired,)

    def visit_Assign(self, node):
        value = node.value
        if (name_of(node.targets[0]) == "output_mask" and isinstance(value, ast.Call)
                and is_attribute(value.func, "self", "compute_mask")):
            node.value = located(call_node(helper_name(masks_paired),
                                           ast.Name(id="outputs", ctx=ast.Load()), value), value)
            return self.rewritten(node)
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
        if is_attribute(node.test, "layer", "supports_masking"):
            node.test = located(call_node(helper_name(computes_masks),
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
            and is_attribute(value.func, "self", method))


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
        for parent in nodes_in(node):
            for field in STATEMENT_LISTS:
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
                guarded = ast.If(test=unlocated_copy(statement.test), body=[setting], orelse=[])
                statements.insert(index + 2, located(self.rewritten(guarded), setting))
            return


class MaskOnCopiedOutputs(Rule):
    """In tf.layers' `Layer.__call__`, after `if len(output_ls_copy) == 1:
    outputs = ... else: outputs = ...`, adds `masks_on_copies(output_ls,
    output_ls_copy)`.

    TensorFlow 1.4 - 1.8 compute the masks in the body of `Layer.__call__`,
    set them on the outputs, then copy each output that is one of the
    layer's inputs (`Activation('linear')`, `GaussianNoise` with
    `training=False`) with `array_ops.identity`: the copy the model holds
    had no mask, so the model counted the padding while its nested copy did
    not (1.4.1: 0.244, 1.5.1: 0.0376 apart). MaskSetOnCopiedOutputs answers
    the same on 1.9 - 1.13, where the two steps are methods of their own.
    """

    helpers = (masks_on_copies,)

    def visit_If(self, node):
        self.generic_visit(node)
        if _tests_one_copy(node.test):
            return [node, located(self.rewritten(ast.Expr(value=call_node(
                helper_name(masks_on_copies), ast.Name(id="output_ls", ctx=ast.Load()),
                ast.Name(id="output_ls_copy", ctx=ast.Load())))), node)]
        return node


def _tests_one_copy(test):
    """`len(output_ls_copy) == 1`."""
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Call)
            and name_of(test.left.func) == "len" and len(test.left.args) == 1
            and name_of(test.left.args[0]) == "output_ls_copy")


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
        if (isinstance(call, ast.Call) and is_attribute(call.func, "kwargs", "pop")
                and call.args and _string(call.args[0]) == "mask"):
            node.value = located(call_node(helper_name(propagated_mask_popped),
                                           ast.Name(id="kwargs", ctx=ast.Load()),
                                           ast.Name(id="inputs", ctx=ast.Load())), call)
            return self.rewritten(node)
        return node
