"""The rules of keras_clone_fix._rules, built by _fix.build_fixed, on a
small function of our own shaped like Keras's code.

These run on every Python the wheel supports; test_fix.py and
test_call_on_new_tensors.py prove the rules on real Keras.
"""

import functools
import sys

import pytest

from keras_clone_fix import _fix, _runtime
from keras_clone_fix._fix import build_fixed
from keras_clone_fix._runtime import UnsupportedFunction, one_mask_per_output


def to_list(x):
    """Keras 2.x's to_list: a tuple becomes one element."""
    return x if isinstance(x, list) else [x]


def has_arg(function, name):
    return name in function.__code__.co_varnames


@pytest.mark.parametrize("mask, outputs, expected", [
    ("m", 3, ["m", "m", "m"]),
    (None, 2, [None, None]),
    (["a", None], 2, ["a", None]),
    # More masks than outputs: output i has mask i, as Layer.__call__ records
    # them (run_internal_graph of 2.1.6 - 2.3.1 raised; zip dropped the rest before).
    (["a", "b", "c"], 2, ["a", "b"]),
    (["a", "b"], 1, ["a"]),
    (("a", "b"), 2, ("a", "b")),            # tuples: kept, the release's to_list decides
    ("m", 1, "m"),
    (None, 1, None),
])
def test_one_mask_per_output_follows_layer_call(mask, outputs, expected):
    assert one_mask_per_output(mask, [object()] * outputs) == expected


class Node(object):
    def __init__(self, arguments=None, output_masks=None):
        self.arguments, self.output_masks = arguments, output_masks


class Output(object):
    def __init__(self, layer, index):
        self._keras_history = (layer, 0, index)


class Layer(object):
    """`outputs` outputs; compute_mask gives `mask`; a call records its
    keyword arguments and a node with `recorded` as its output masks."""

    def __init__(self, mask, outputs=2, recorded=None):
        self.mask, self.outputs, self.recorded = mask, outputs, recorded
        self._inbound_nodes = []

    def call(self, inputs, mask=None):
        pass

    def __call__(self, inputs, **kwargs):
        self.kwargs = kwargs
        self._inbound_nodes.append(Node(output_masks=self.recorded))
        outputs = [Output(self, index) for index in range(self.outputs)]
        return outputs if self.outputs > 1 else outputs[0]

    def compute_mask(self, inputs, mask=None):
        return self.mask


def step_like_keras(node, layer, computed_mask):
    """One node of Keras's clone loop (and of run_internal_graph)."""
    if node.arguments:
        kwargs = node.arguments
    else:
        kwargs = {}
    if has_arg(layer.call, 'mask'):
        if 'mask' not in kwargs:
            kwargs['mask'] = computed_mask
    output_tensors = to_list(layer(None, **kwargs))
    output_masks = to_list(layer.compute_mask(None, computed_mask))
    return output_tensors, output_masks, len(list(zip(output_tensors, output_masks)))


def test_unfixed_step_shows_every_flaw():
    node, layer = Node({"training": False}), Layer("m")
    assert step_like_keras(node, layer, "m")[1:] == (["m"], 1)
    assert node.arguments == {"training": False, "mask": "m"}
    assert layer.kwargs == {"training": False, "mask": "m"}


def test_copy_node_arguments():
    node, layer = Node({"training": False}), Layer("m")
    build_fixed(step_like_keras, ["CopyNodeArguments"])(node, layer, "m")
    assert node.arguments == {"training": False}
    assert layer.kwargs == {"training": False, "mask": "m"}


def test_layer_call_propagates_masks():
    node, layer = Node({"training": False}), Layer("m")
    build_fixed(step_like_keras, ["LayerCallPropagatesMasks"])(node, layer, "m")
    assert layer.kwargs == {"training": False}


def test_one_mask_per_output():
    fixed = build_fixed(step_like_keras, ["OneMaskPerOutput"])
    assert fixed(Node(), Layer("m", outputs=3), "m")[1:] == (["m", "m", "m"], 3)
    assert fixed(Node(), Layer(["a", None]), "m")[1:] == (["a", None], 2)


def test_recorded_output_masks():
    layer = Layer("computed", recorded=["recorded", None])
    fixed = build_fixed(step_like_keras, ["RecordedOutputMasks"])
    assert fixed(Node(), layer, "m")[1:] == (["recorded", None], 2)


def test_keras_2_0_names_the_node_list_inbound_nodes():
    layer = Layer("m")
    layer.inbound_nodes = [Node(output_masks=["first", "second"])]
    del layer._inbound_nodes
    assert _runtime.recorded_output_masks([Output(layer, 1), Output(layer, 0)]) == ["second", "first"]


def test_fixed_function_looks_like_the_original():
    fixed = build_fixed(step_like_keras, ["CopyNodeArguments", "OneMaskPerOutput"])
    for attribute in ("__name__", "__qualname__", "__doc__", "__defaults__", "__module__"):
        assert getattr(fixed, attribute, None) == getattr(step_like_keras, attribute, None)
    assert fixed.__globals__ is step_like_keras.__globals__
    assert fixed.__code__.co_filename == step_like_keras.__code__.co_filename
    assert not [name for name in step_like_keras.__globals__ if name.startswith("_keras_clone")]


def no_masks_here(layer):
    return to_list(layer)


def decorated(function):
    @functools.wraps(function)
    def wrapper(*args):
        return function(*args)
    return wrapper


one_line = lambda layer: to_list(layer.compute_mask(None))  # noqa: E731


@pytest.mark.parametrize("function, problem", [
    (len, "expected a plain function"),
    (no_masks_here, "rule OneMaskPerOutput found nothing to rewrite"),
    (decorated(step_like_keras), "it is a closure"),
    (one_line, "not one undecorated def"),
])
def test_refuses_what_it_cannot_rewrite(function, problem):
    with pytest.raises(UnsupportedFunction) as raised:
        build_fixed(function, ["OneMaskPerOutput"])
    assert problem in str(raised.value)


def test_refuses_source_that_is_not_the_running_code():
    stale = build_fixed(step_like_keras, ["CopyNodeArguments"])  # source: step_like_keras
    with pytest.raises(UnsupportedFunction, match="does not match the running code"):
        build_fixed(stale, ["CopyNodeArguments"])


def test_refuses_code_without_source():
    namespace = {}
    exec("def made_at_run_time(layer):\n    return layer\n", namespace)
    with pytest.raises(UnsupportedFunction, match="source is not available"):
        build_fixed(namespace["made_at_run_time"], ["OneMaskPerOutput"])



class KerasTensor(object):
    def __init__(self, layer):
        self._keras_history = (layer, 0, 0)


class InputLayer(object):
    pass


def input_layers_like_keras(model, input_tensors, layer_map, tensor_map):
    for x, y in zip(model.inputs, input_tensors):
        tensor_map[x] = y
    return layer_map


def test_given_input_layers_kept():
    fixed = build_fixed(input_layers_like_keras, ["GivenInputLayersKept"])
    model = type("Model", (), {})()
    originals = [InputLayer(), InputLayer(), InputLayer()]
    model.inputs = [KerasTensor(layer) for layer in originals]
    given = [KerasTensor(InputLayer()), KerasTensor(object()), KerasTensor(InputLayer())]
    mapped_before = {originals[2]: "the routine's own"}
    assert input_layers_like_keras(model, given, dict(mapped_before), {}) == mapped_before
    # A given input layer is mapped; a tensor of another kind of layer, and an
    # input layer the routine mapped itself, stay as they were.
    expected = dict(mapped_before)
    expected[originals[0]] = given[0]._keras_history[0]
    assert fixed(model, given, dict(mapped_before), {}) == expected
