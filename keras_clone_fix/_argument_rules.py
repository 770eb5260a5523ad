"""The rules on a layer call's keyword arguments: copied, never written into
the original node; their tensors mapped to the rebuilt graph's, passed
once, made before the call that takes them, and their makers part of the
model."""

import ast

from keras_clone_fix._rewrite import (
    HELPER_PREFIX, Rule, call_node, helper_name, is_attribute, located, name_of, nodes_in,
    unlocated_copy)
from keras_clone_fix._runtime import (
    UnsupportedFunction, argument_tensors_mapped, argument_tensors_to_walk,
    arguments_not_in_inputs, nodes_by_depth_in_call_order, tensors_mapped,
    walked_argument_makers_placed)


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
        if name_of(node.targets[0]) == "kwargs" and is_attribute(arguments, "node", "arguments"):
            node.value = located(call_node(ast.Name(id="dict", ctx=ast.Load()), value), value)
            return self.rewritten(node)
        return node


def _takes_node_arguments(statement):
    """How a release starts a call's keyword arguments from the node's:
    `if node.arguments: kwargs = ...` (every release to tf.keras 1.13), or
    `kwargs = node.arguments or {}` (tf.keras 1.14; `dict(...)` of it after
    CopyNodeArguments)."""
    if isinstance(statement, ast.If):
        return is_attribute(statement.test, "node", "arguments") and any(
            isinstance(line, ast.Assign) and name_of(line.targets[0]) == "kwargs"
            for line in statement.body)
    if not (isinstance(statement, ast.Assign) and name_of(statement.targets[0]) == "kwargs"):
        return False
    value = statement.value
    if isinstance(value, ast.Call) and name_of(value.func) == "dict" and len(value.args) == 1:
        value = value.args[0]
    return (isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or)
            and is_attribute(value.values[0], "node", "arguments"))


def _assign_kwargs(value):
    return ast.Assign(targets=[ast.Name(id="kwargs", ctx=ast.Store())], value=value)


class _AfterNodeArguments(Rule):
    """Adds `kwargs = <self.after()>` after the statement that starts a
    call's keyword arguments from the node's (_takes_node_arguments)."""

    def after(self):
        raise NotImplementedError

    def _added_after(self, node):
        if _takes_node_arguments(node):
            return [node, located(self.rewritten(_assign_kwargs(self.after())), node)]
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
    for test in nodes_in(function):
        if (isinstance(test, ast.Compare) and len(test.ops) == 1
                and isinstance(test.ops[0], ast.In)
                and name_of(test.comparators[0]) in _TENSOR_MAPS):
            names = [name_of(name) for name in nodes_in(test.left)
                     if name_of(name) not in (None, "str", "id")]
            if len(names) != 1:
                return None
            shape = ast.dump(test.left).replace("id='{}'".format(names[0]), "id='tensor'")
            found.append((name_of(test.comparators[0]), shape, names[0], test.left))
    if len(set((mapping, shape) for mapping, shape, _, _ in found)) != 1:
        return None
    mapping, _, name, left = found[0]
    key = unlocated_copy(ast.parse("lambda {}: None".format(name), mode="eval").body)
    key.body = unlocated_copy(left)
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
        return call_node(helper_name(tensors_mapped), ast.Name(id="kwargs", ctx=ast.Load()),
                         ast.Name(id=self.mapping, ctx=ast.Load()), unlocated_copy(self.key))


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
        return call_node(helper_name(arguments_not_in_inputs),
                         ast.Name(id="kwargs", ctx=ast.Load()), ast.Name(id="node", ctx=ast.Load()))


# A model's nodes by depth: `_nodes_by_depth`, `nodes_by_depth` in Keras 2.0.x.
_NODES_BY_DEPTH = ("_nodes_by_depth", "nodes_by_depth")


_IN_CALL_ORDER = HELPER_PREFIX + "nodes_by_depth"


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
        for parent in nodes_in(node):
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
                and isinstance(node.ctx, ast.Load) and name_of(node.value) is not None)

    def _local(self, read):
        """The local that replaces a read, the read kept for the assignment."""
        if self.owner is None:
            self.owner = read
        elif name_of(read.value) != name_of(self.owner.value) or read.attr != self.owner.attr:
            raise UnsupportedFunction("nodes by depth read from {} and {}".format(
                ast.dump(self.owner), ast.dump(read)))
        return ast.copy_location(ast.Name(id=_IN_CALL_ORDER, ctx=ast.Load()), read)

    def visit_Assign(self, node):
        if name_of(node.targets[0]) == "depth_keys" and any(
                name_of(name) == _IN_CALL_ORDER for name in nodes_in(node.value)):
            ordered = ast.Assign(targets=[ast.Name(id=_IN_CALL_ORDER, ctx=ast.Store())],
                                 value=call_node(helper_name(nodes_by_depth_in_call_order),
                                                 unlocated_copy(self.owner)))
            return [located(self.rewritten(ordered), node), node]
        return node


def _renamed(node, old, new):
    """A copy of an expression, every name or attribute `old` in it `new`."""
    copy = unlocated_copy(node)
    for part in nodes_in(copy):
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

    Keras 2.0.4 - 2.3.1 and tf.keras of TensorFlow 1.4 - 1.14 walk a model
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
    stay as they were. Keras 2.0.0 - 2.0.3's walk (`build_map_of_graph`)
    keeps no list of the nodes it meets and sets their depths as it goes:
    there the loop added is `for x in argument_tensors_mapped(nodes_depths,
    layers_depths, self.inputs)`, whose helper gives the nodes met before
    their depths back after that walk.
    """

    helpers = (argument_tensors_to_walk, walked_argument_makers_placed, argument_tensors_mapped)

    def visit_FunctionDef(self, node):
        if hasattr(self, "outputs_loop"):
            return node  # the walk's own def, nested in the routine
        self.outputs_loop = None
        self.keeps_a_list = any(name_of(name) == "nodes_in_decreasing_depth"
                                for name in nodes_in(node))
        for statement in node.body:
            if (isinstance(statement, ast.For) and name_of(statement.target) is not None
                    and any(isinstance(call, ast.Call) and (name_of(call.func) or "").startswith(
                        "build_map") for line in statement.body for call in nodes_in(line))
                    and any(name_of(part) == "outputs" or getattr(part, "attr", None) == "outputs"
                            for part in nodes_in(statement.iter))):
                self.outputs_loop = statement
        return self.generic_visit(node) if self.outputs_loop is not None else node

    def visit_Assign(self, node):
        value = node.value
        if name_of(node.targets[0]) == "nodes_by_depth" and (
                isinstance(value, ast.Dict) and not value.keys or isinstance(value, ast.Call)
                and is_attribute(value.func, "collections", "defaultdict")):
            loop = self.outputs_loop
            names = [ast.Name(id=name, ctx=ast.Load()) for name in (
                "nodes_in_decreasing_depth", "nodes_depths", "layers_depths")]
            # The walk's list, or (2.0.0 - 2.0.3) the depths its helper restores.
            walker, given = ((argument_tensors_to_walk, names[:2]) if self.keeps_a_list
                             else (argument_tensors_mapped, names[1:]))
            walk = ast.For(target=unlocated_copy(loop.target),
                           iter=call_node(helper_name(walker), *(
                               given + [_renamed(loop.iter, "outputs", "inputs")])),
                           body=unlocated_copy(loop.body), orelse=[])
            added = [located(self.rewritten(walk), node)]
            if self.keeps_a_list:
                added.append(located(ast.Expr(value=call_node(
                    helper_name(walked_argument_makers_placed),
                    *[unlocated_copy(name) for name in names])), node))
            return added + [node]
        return node
