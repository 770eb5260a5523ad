"""The rules of keras_clone_fix._rules, built by _fix.build_fixed, on a
small function of our own shaped like Keras's code.

These run on every Python the wheel supports; test_fix.py and
test_call_on_new_tensors.py prove the rules on real Keras.
"""

import functools
import importlib
import sys

import pytest

from keras_clone_fix import _runtime
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
    (one_line, "not one def, undecorated or a classmethod"),
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


class Tensor(object):
    """A Keras tensor for these tests: it has a _keras_history."""
    _keras_history = None


def step_with_arguments(node, layer, tensor_map):
    """A node of a rebuild loop keyed like run_internal_graph in 2.1 - 2.2."""
    computed_data = []
    for x in node.input_tensors:
        if str(id(x)) in tensor_map:
            computed_data.append(tensor_map[str(id(x))])
    if node.arguments:
        kwargs = node.arguments
    else:
        kwargs = {}
    return layer([y for y, _ in computed_data], **kwargs)


def called_with(inputs, **kwargs):
    return inputs, kwargs


def test_map_tensors_in_call_arguments():
    old_input, old_state, outside = Tensor(), Tensor(), Tensor()
    new_input, new_state = Tensor(), Tensor()
    tensor_map = {str(id(old_input)): (new_input, None), str(id(old_state)): (new_state, "mask")}
    node = Node({"initial_state": [old_state, outside], "nested": {"a": (old_state,)},
                 "training": False})
    node.input_tensors = [old_input]
    fixed = build_fixed(step_with_arguments, ["MapTensorsInCallArguments"])
    inputs, kwargs = fixed(node, called_with, tensor_map)
    assert inputs == [new_input]
    assert kwargs == {"initial_state": [new_state, outside], "nested": {"a": (new_state,)},
                      "training": False}
    assert node.arguments["initial_state"] == [old_state, outside]


def test_arguments_in_inputs_passed_once():
    old_input, old_state, other = Tensor(), Tensor(), Tensor()
    tensor_map = {str(id(old_input)): (1, None), str(id(old_state)): (2, None)}
    node = Node({"initial_state": [old_state], "other": other, "training": True})
    node.input_tensors = [old_input, old_state]
    fixed = build_fixed(step_with_arguments, ["ArgumentsInInputsPassedOnce",
                                              "MapTensorsInCallArguments"])
    assert fixed(node, called_with, tensor_map) == ([1, 2], {"other": other, "training": True})


def step_like_tf_keras_1_14(node, layer, tensor_dict):
    """run_internal_graph of tf.keras 1.14: kwargs from `node.arguments or
    {}`, the map named tensor_dict, the tensor named otherwise in each test."""
    if all(str(id(tensor)) in tensor_dict for tensor in node.input_tensors):
        computed_tensors = [tensor_dict[str(id(t))] for t in node.input_tensors]
        kwargs = node.arguments or {}
        return layer(computed_tensors, **kwargs)
    return [x for x in node.output_tensors if not str(id(x)) in tensor_dict]  # noqa: E713


def test_map_tensors_and_pass_them_once_in_the_form_of_tf_keras_1_14():
    old_input, old_state, other = Tensor(), Tensor(), Tensor()
    tensor_dict = {str(id(old_input)): 1, str(id(old_state)): 2, str(id(other)): 3}
    node = Node({"initial_state": [old_state], "attention_mask": other, "training": True})
    node.input_tensors = [old_input, old_state]
    fixed = build_fixed(step_like_tf_keras_1_14, ["CopyNodeArguments", "MapTensorsInCallArguments",
                                                  "ArgumentsInInputsPassedOnce"])
    assert fixed(node, called_with, tensor_dict) == ([1, 2], {"attention_mask": 3,
                                                              "training": True})
    assert node.arguments["attention_mask"] is other


def _layer_of_the_module(node):
    return node.layer


def step_with_a_default_of_the_module(node, layer_fn=_layer_of_the_module):
    """A default that names a function of its module, as tf.keras 1.14's
    `_clone_functional_model(..., layer_fn=_clone_layer)`."""
    kwargs = node.arguments or {}
    return layer_fn(node), kwargs


def test_the_twin_takes_the_originals_defaults():
    node = Node({"training": True})
    node.layer = "layer"
    fixed = build_fixed(step_with_a_default_of_the_module, ["CopyNodeArguments"])
    assert fixed.__defaults__ == (_layer_of_the_module,)
    assert fixed(node) == ("layer", {"training": True})


def no_key_test(node, layer, tensor_map):
    if node.arguments:
        kwargs = node.arguments
    return layer(**kwargs)


def test_map_tensors_needs_the_routines_key():
    with pytest.raises(UnsupportedFunction, match="MapTensorsInCallArguments"):
        build_fixed(no_key_test, ["MapTensorsInCallArguments"])


class InputLayer(Layer):
    """Named as Keras's: its compute_mask refuses a mask, as InputLayer's
    did up to keras 2.2.2 and tf.keras 1.12."""

    def compute_mask(self, inputs, mask=None):
        if mask is not None:
            raise TypeError("Layer input_1 does not support masking, but was passed an input_mask")


def node_masks_like_keras(layer, computed_tensor, computed_mask):
    """How run_internal_graph computes a node's masks."""
    return layer.compute_mask(computed_tensor, computed_mask)


def test_input_layer_passes_mask():
    with pytest.raises(TypeError, match="does not support masking"):
        node_masks_like_keras(InputLayer(None), None, "m")
    fixed = build_fixed(node_masks_like_keras, ["InputLayerPassesMask"])
    assert fixed(InputLayer(None), None, "m") == "m"
    assert fixed(Layer("computed"), None, "m") == "computed"


class Masked(object):
    """An output tensor, with the _keras_mask tf.keras sets on it or none."""

    def __init__(self, *mask):
        if mask:
            self._keras_mask = mask[0]


def set_mask_metadata_like_tf_keras_1_11(self, inputs, outputs, previous_mask):
    """tf.keras 1.11 - 1.13's Layer._set_mask_metadata."""
    mask_already_computed = all(hasattr(x, '_keras_mask') for x in to_list(outputs))
    if hasattr(self, 'compute_mask') and not mask_already_computed:
        output_mask = self.compute_mask(inputs, previous_mask)
    else:
        output_mask = None
    if isinstance(outputs, (list, tuple)):
        if output_mask is None:
            output_mask = [None for _ in range(len(outputs))]
        for x, m in zip(outputs, output_mask):
            x._keras_mask = m
    else:
        outputs._keras_mask = output_mask


@pytest.mark.parametrize("fixed, kept", [(False, [None, None]), (True, ["a", None])])
def test_mask_already_computed_kept(fixed, kept):
    set_mask_metadata = set_mask_metadata_like_tf_keras_1_11
    if fixed:
        set_mask_metadata = build_fixed(set_mask_metadata, ["MaskAlreadyComputedKept"])
    outputs = [Masked("a"), Masked(None)]
    set_mask_metadata(Layer("computed"), None, outputs, "m")
    assert [output._keras_mask for output in outputs] == kept
    single = Masked("a")
    set_mask_metadata(Layer("computed"), None, single, "m")
    assert single._keras_mask == ("a" if fixed else None)
    not_yet = [Masked(), Masked("a")]  # not every output has one: compute_mask decides
    set_mask_metadata(Layer(["c", "d"]), None, not_yet, "m")
    assert [output._keras_mask for output in not_yet] == ["c", "d"]


MASK = object()  # a mask tensor: graph tensors are not iterable


@pytest.mark.parametrize("computed, count, unfixed, fixed", [
    (["a", "b"], None, ["a", "b"], "a"),     # a lone output of two masked inputs: the first
    (MASK, 2, TypeError, [MASK, "unset"]),   # one mask for two outputs: the first output's
    (["a", "b"], 2, ["a", "b"], ["a", "b"]),
    (None, 2, [None, None], [None, None]),
])
def test_masks_paired_with_outputs(computed, count, unfixed, fixed):
    """Paired as TensorFlow 1.14 pairs flat outputs with flat masks."""
    def masks(set_mask_metadata):
        outputs = Masked() if count is None else [Masked() for _ in range(count)]
        set_mask_metadata(Layer(computed), None, outputs, "m")
        if count is None:
            return outputs._keras_mask
        return [getattr(output, "_keras_mask", "unset") for output in outputs]
    if unfixed is TypeError:
        with pytest.raises(TypeError):
            masks(set_mask_metadata_like_tf_keras_1_11)
    else:
        assert masks(set_mask_metadata_like_tf_keras_1_11) == unfixed
    assert masks(build_fixed(set_mask_metadata_like_tf_keras_1_11,
                             ["MasksPairedWithOutputs"])) == fixed


# How the source is read (the lines from the code's first line to the last
# its line table names, then line by line until they parse), and what the
# check that it is the running code refuses.

def last_statement_over_lines(node, layer, computed_mask):
    kwargs = node.arguments
    output_masks = to_list(layer.compute_mask(None,
                                              computed_mask))
    return (kwargs,
            output_masks)


class Holder(object):
    def method(self, node, layer):
        """Indented, with a docstring: read as it stands, not dedented."""
        kwargs = node.arguments
        kwargs['mask'] = layer.compute_mask(None)
        return kwargs


def makes_a_nested_def():
    def nested(node, layer):  # no free variables: not a closure
        kwargs = node.arguments
        kwargs['mask'] = layer.compute_mask(None)
        if kwargs:
            return kwargs
        else:
            pass  # compiles to nothing: the source read may end before it
    return nested


@pytest.mark.parametrize("function", [last_statement_over_lines, Holder.method,
                                      makes_a_nested_def()])
def test_reads_the_whole_def(function):
    node, layer = Node({"training": False}), Layer("m", outputs=1)
    fixed = build_fixed(getattr(function, "__func__", function),  # Python 2: unbound method
                        ["CopyNodeArguments"])
    args = (None, node, layer) if function.__name__ == "method" else (node, layer)
    args += ("m",) if function is last_statement_over_lines else ()
    fixed(*args)
    assert node.arguments == {"training": False}
    assert fixed.__code__.co_firstlineno == function.__code__.co_firstlineno


def registered(function):
    return function  # a decorator that wraps nothing


@registered
def decorated_in_place(node, layer):
    kwargs = node.arguments
    return layer.compute_mask(kwargs)


def test_refuses_a_decorated_def():
    with pytest.raises(UnsupportedFunction, match="not one def, undecorated or a classmethod"):
        build_fixed(decorated_in_place, ["OneMaskPerOutput"])


class interfaces(object):
    """Shaped like keras.legacy.interfaces (keras 2.0 - 2.3): its decorator
    gives a function Keras 1's argument names, in a closure that six.wraps
    names the def's function in (`__wrapped__`, on Python 2 as well)."""

    @staticmethod
    def legacy_support(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if "old_layer" in kwargs:
                kwargs["layer"] = kwargs.pop("old_layer")
            return function(*args, **kwargs)
        wrapper.__wrapped__ = function
        return wrapper


@interfaces.legacy_support
def step_decorated_like_keras(node, layer, computed_mask):
    """step_like_keras, decorated as Keras 2.0 - 2.1's Container.__init__."""
    kwargs = node.arguments or {}
    output_tensors = to_list(layer(None, **kwargs))
    output_masks = to_list(layer.compute_mask(None, computed_mask))
    return output_tensors, output_masks, len(list(zip(output_tensors, output_masks)))


def test_a_target_s_decorator_is_applied_to_the_twin_of_its_def():
    """A target with a decorator: the twin is built from the def's function
    (the source check holds at the decorator's line, where the code starts),
    and the decorator, the module's, makes the function put in its place;
    another decorator's def is refused, and so is the decorator's closure
    where the target names none."""
    fixed = build_fixed(step_decorated_like_keras, ["OneMaskPerOutput"],
                        "interfaces.legacy_support")
    assert fixed.__wrapped__ is not step_decorated_like_keras.__wrapped__
    assert (fixed.__wrapped__.__code__.co_firstlineno
            == step_decorated_like_keras.__wrapped__.__code__.co_firstlineno)
    assert fixed(Node(), old_layer=Layer("m", outputs=3), computed_mask="m")[1:] == (
        ["m", "m", "m"], 3)
    assert step_decorated_like_keras(Node(), old_layer=Layer("m", outputs=3),
                                     computed_mask="m")[1:] == (["m"], 1)
    with pytest.raises(UnsupportedFunction, match="decorated by @interfaces.other_support"):
        build_fixed(step_decorated_like_keras, ["OneMaskPerOutput"], "interfaces.other_support")
    with pytest.raises(UnsupportedFunction, match="it is a closure"):
        build_fixed(step_decorated_like_keras, ["OneMaskPerOutput"])
    with pytest.raises(UnsupportedFunction, match="expected what @interfaces.legacy_support made"):
        build_fixed(step_like_keras, ["OneMaskPerOutput"], "interfaces.legacy_support")
    with pytest.raises(UnsupportedFunction, match="decorated by @interfaces.legacy_support"):
        build_fixed(interfaces.legacy_support(step_like_keras), ["OneMaskPerOutput"],
                    "interfaces.legacy_support")  # the def is not decorated


def write(path, text):
    with open(path, "w") as module_file:
        module_file.write(text)


MODULE = '''
def step(node, layer):
    kwargs = node.arguments
    kwargs['mask'] = layer.compute_mask({mask})
    return kwargs
'''


@pytest.mark.parametrize("changed, refused", [
    (MODULE.format(mask="None"), False),                    # the same: accepted
    (MODULE.format(mask="'a constant of another length'"), True),
    (MODULE.format(mask="node"), True),                     # a name changed
    ("\n" + MODULE.format(mask="None"), True),               # moved down a line
])
def test_refuses_source_changed_on_disk_after_import(tmp_path, monkeypatch, changed, refused):
    module_file = str(tmp_path / "changed_after_import.py")
    write(module_file, MODULE.format(mask="None"))
    monkeypatch.syspath_prepend(str(tmp_path))
    import changed_after_import
    try:
        build_fixed(changed_after_import.step, ["OneMaskPerOutput"])  # read, and cached
        write(module_file, changed + "\n")  # another size: linecache sees the change
        if refused:
            with pytest.raises(UnsupportedFunction, match="does not match the running code"):
                build_fixed(changed_after_import.step, ["OneMaskPerOutput"])
        else:
            build_fixed(changed_after_import.step, ["OneMaskPerOutput"])
    finally:
        del sys.modules["changed_after_import"]


FUTURE_MODULE = '''from __future__ import absolute_import, division


def step(node, layer):
    import json
    kwargs = node.arguments
    kwargs['mask'] = json.dumps(1 / 2)
    return kwargs
'''


def test_compiles_as_the_module_did_with_its_future_imports(tmp_path, monkeypatch):
    """TensorFlow's modules import absolute_import and division from
    __future__: on Python 2 an import and a `/` compile to other
    instructions with them, and the source matches the running code only
    compiled so (tf.keras 1.15 on Python 2.7: 'does not match the running
    code' without it); the twin divides as the original."""
    write(str(tmp_path / "with_future_imports.py"), FUTURE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import with_future_imports
    try:
        fixed = build_fixed(with_future_imports.step, ["CopyNodeArguments"])
        node = Node({})
        assert fixed(node, None) == {"mask": "0.5"} and node.arguments == {}
    finally:
        del sys.modules["with_future_imports"]


class FromConfig(object):
    """A layer whose config leaves out `mask` and `trainable`, as Keras's
    Lambda and Network do before tf.keras 1.14."""
    mask, supports_masking, trainable = None, False, True

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls()


class Lambda(FromConfig):
    pass


def clone_step_like_keras(layer, layer_map):
    if layer not in layer_map:
        new_layer = layer.__class__.from_config(layer.get_config())
        layer_map[layer] = new_layer
    return layer_map[layer]


def test_lambda_mask_and_trainable_kept():
    fixed = build_fixed(clone_step_like_keras, ["LambdaMaskKept", "TrainableKept"])
    original = Lambda()
    original.mask, original.supports_masking, original.trainable = "mask_fn", True, False
    plain = clone_step_like_keras(original, {})
    assert (plain.mask, plain.supports_masking, plain.trainable) == (None, False, True)
    clone = fixed(original, {})
    assert (clone.mask, clone.supports_masking, clone.trainable) == ("mask_fn", True, False)
    other = FromConfig()
    other.mask = "not a Lambda's"  # only a Lambda's mask is carried
    assert fixed(other, {}).mask is None


def clone_sequential_like_keras(layers):
    def clone(layer):
        return layer.__class__.from_config(layer.get_config())

    return [clone(layer) for layer in layers]


def test_lambda_mask_and_trainable_kept_in_the_sequential_clone():
    fixed = build_fixed(clone_sequential_like_keras, ["LambdaMaskKept", "TrainableKept"])
    original = Lambda()
    original.mask, original.supports_masking, original.trainable = "mask_fn", True, False
    (clone,) = fixed([original])
    assert (clone.mask, clone.supports_masking, clone.trainable) == ("mask_fn", True, False)


class Wrapper(FromConfig):
    """A wrapper (TimeDistributed): its from_config makes the layer it wraps
    from that one's config, which leaves `trainable` out."""

    def __init__(self):
        self.layer = FromConfig()


def test_trainable_kept_in_a_wrapper():
    fixed = build_fixed(clone_step_like_keras, ["TrainableKept"])
    original = Wrapper()
    original.layer.trainable = False
    assert clone_step_like_keras(original, {}).layer.trainable is True
    assert fixed(original, {}).layer.trainable is False


# Bound by a call, not by `import copy`: Python 3.11 compiles `copy.deepcopy(...)` on a name an
# import statement bound otherwise than the def alone compiles it, and the source check then
# refuses the def (measured on 3.11.7; no release these rules patch runs on 3.11).
copy = importlib.import_module("copy")


class SavedModel(object):
    """A model whose config holds an InputLayer's (no `trainable` key), a
    layer's, and a wrapper's of a Sequential's (a list, keras < 2.2)."""
    trainable = True

    def get_config(self):
        config = {"name": "m", "layers": [
            {"class_name": "InputLayer", "config": {"name": "i"}},
            {"class_name": "Dense", "config": {"name": "d", "trainable": True}},
            {"class_name": "TimeDistributed", "config": {"name": "t", "trainable": True, "layer": {
                "class_name": "Sequential", "config": [
                    {"class_name": "Dense", "config": {"name": "e", "trainable": True}}]}}}]}
        return copy.deepcopy(config)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls()


def test_a_frozen_model_is_written_into_its_config_and_read_back():
    get_config = build_fixed(SavedModel.__dict__["get_config"], ["TrainableWrittenInConfig"])
    from_config = build_fixed(SavedModel.__dict__["from_config"].__func__,
                              ["TrainableReadFromConfig"])
    model = SavedModel()
    assert get_config(model) == model.get_config()  # a model that is not frozen: as written
    model.trainable = False
    config = get_config(model)
    layers = config["layers"]
    assert config["trainable"] is False and "trainable" not in layers[0]["config"]
    assert layers[1]["config"]["trainable"] is False and layers[2]["config"]["trainable"] is False
    assert layers[2]["config"]["layer"]["config"][0]["config"]["trainable"] is False
    assert from_config(SavedModel, config).trainable is False
    assert from_config(SavedModel, model.get_config()).trainable is True


class KerasTensor(object):
    def __init__(self, layer, node_index=0):
        self._keras_history = (layer, node_index, 0)


def input_layers_like_keras(model, input_tensors, layer_map, tensor_map):
    for x, y in zip(model.inputs, input_tensors):
        tensor_map[x] = y
    return layer_map


def test_given_input_layers_kept():
    fixed = build_fixed(input_layers_like_keras, ["GivenInputLayersKept"])
    model = type("Model", (), {})()
    originals = [InputLayer(None) for _ in range(3)]
    model.inputs = [KerasTensor(layer) for layer in originals]
    given = [KerasTensor(InputLayer(None)), KerasTensor(Layer(None)), KerasTensor(InputLayer(None))]
    mapped_before = {originals[2]: "the routine's own"}
    assert input_layers_like_keras(model, given, dict(mapped_before), {}) == mapped_before
    # A given input layer is mapped; a tensor of another kind of layer, and an
    # input layer the routine mapped itself, stay as they were.
    expected = dict(mapped_before)
    expected[originals[0]] = given[0]._keras_history[0]
    assert fixed(model, given, dict(mapped_before), {}) == expected


def input_layers_like_tf_keras_2(model, input_tensors):
    """The loop of tf.keras 2.0 - 2.5's (and keras 2.5 - 2.6's) clone
    routine: a given Keras tensor's input layer mapped to the model's own."""
    new_input_layers = {}
    for i, input_tensor in enumerate(input_tensors):
        original_input_layer = model._input_layers[i]
        if input_tensor is None:  # stands for a backend tensor: wrapped in an Input
            new_input_layers[original_input_layer] = "a new Input's layer"
        else:
            new_input_layers[original_input_layer] = original_input_layer
    return new_input_layers


def test_given_input_layers_taken():
    fixed = build_fixed(input_layers_like_tf_keras_2, ["GivenInputLayersTaken"])
    model = type("Model", (), {})()
    model._input_layers = [InputLayer(None) for _ in range(3)]
    given = [KerasTensor(InputLayer(None)), KerasTensor(Layer(None)), None]
    first, second, third = model._input_layers
    assert input_layers_like_tf_keras_2(model, given) == {
        first: first, second: second, third: "a new Input's layer"}
    # The given input layer is taken; a tensor of another kind of layer keeps
    # the release's mapping, and so does the routine's own wrapper.
    assert fixed(model, given) == {first: given[0]._keras_history[0], second: second,
                                   third: "a new Input's layer"}


class Network(object):
    @classmethod
    def from_config(cls, config):
        """Keras 2.2.4's queue of layer calls, on calls named by the layer
        whose first call they wait for: (layer, [(call, waits for)])."""
        made = dict((layer, []) for layer, _ in config)
        unprocessed_nodes = {}

        def add_unprocessed_node(layer, node_data):
            unprocessed_nodes.setdefault(layer, []).append(node_data)

        def process_node(layer, node_data):
            call, waits_for = node_data
            if waits_for and not made[waits_for]:
                add_unprocessed_node(layer, node_data)
                return
            made[layer].append(call)

        for layer, calls in config:
            for node_data in calls:
                add_unprocessed_node(layer, node_data)
        while unprocessed_nodes:
            for layer, _ in config:
                if layer in unprocessed_nodes:
                    for node_data in unprocessed_nodes.pop(layer):
                        process_node(layer, node_data)
        return cls, made


def test_layer_calls_kept_in_order():
    """s's second call waits for d's: the release makes its third first;
    the twin of the classmethod's function makes them in order."""
    config = [("s", [(0, None), (1, "d"), (2, None)]), ("d", [(0, None)])]
    assert Network.from_config(config) == (Network, {"s": [0, 2, 1], "d": [0]})
    fixed = build_fixed(vars(Network)["from_config"].__func__, ["LayerCallsKeptInOrder"])
    assert fixed(Network, config) == (Network, {"s": [0, 1, 2], "d": [0]})


class Call(object):
    """A layer call (a node) that makes one tensor, the layer holding it in
    its `_inbound_nodes` too. A model input's call (of an InputLayer) takes
    the tensor it makes."""

    def __init__(self, name, inputs=None, **arguments):
        self.name, self.arguments = name, arguments
        self.made = Tensor()
        self.made._keras_history = (self, 0, 0)
        self._inbound_nodes = [self]
        self.outbound_layer = self if inputs else InputLayer(mask=None)
        self.input_tensors = inputs or [self.made]
        self.output_tensors = [self.made]


def calls_by_depth(model):
    """The routines' loop (Keras 2.1 - 2.3): the calls deepest first."""
    made = []
    depth_keys = list(model._nodes_by_depth.keys())
    depth_keys.sort(reverse=True)
    for depth in depth_keys:
        nodes = model._nodes_by_depth[depth]
        for node in nodes:
            made.append(node.name)
    return made


class Model(object):
    def __init__(self, nodes_by_depth):
        self._nodes_by_depth = nodes_by_depth


def test_arguments_made_before_their_calls():
    """`w = Dense(b)` is an output, `attend(a, attention_mask=w)` is not:
    Keras's depths put w's call after attend's; the twin makes it first,
    and the rest in Keras's order."""
    a, b = Call("a"), Call("b")
    w = Call("w", [b.made])
    attend = Call("attend", [a.made], attention_mask=[w.made])
    out = Call("out", [attend.made])
    model = Model({2: [a], 1: [attend, b], 0: [out, w]})
    assert calls_by_depth(model) == ["a", "attend", "b", "out", "w"]
    fixed = build_fixed(calls_by_depth, ["ArgumentsMadeBeforeTheirCalls"])
    assert fixed(model) == ["b", "a", "w", "attend", "out"]
    assert _runtime.arguments_made_later(model._nodes_by_depth) == [attend]


@pytest.mark.parametrize("depth_of_b", [1, 0], ids=["deeper", "a model input at depth 0"])
def test_nodes_by_depth_kept_where_no_argument_needs_them(depth_of_b):
    """An argument made deeper than its call, or a model input, there from
    the start (tf.keras 1.14 puts one that only a keyword argument takes at
    depth 0): Keras's own dict."""
    a, b = Call("a"), Call("b")
    attend = Call("attend", [a.made], attention_mask=b.made)
    nodes_by_depth = {1: [a], 0: [attend]}
    nodes_by_depth[depth_of_b].append(b)
    assert _runtime.nodes_by_depth_in_call_order(nodes_by_depth) is nodes_by_depth
    assert _runtime.arguments_made_later(nodes_by_depth) == []


# tf.keras's mask bookkeeping of a layer call (issue 45).

class Flagged(Layer):
    """A layer whose supports_masking is False (Layer's compute_mask)."""
    supports_masking = False

    def call(self, inputs, mask=None):
        return inputs


class OwnComputeMask(Flagged):
    """Bidirectional of tf.keras 1.11 - 1.13: supports_masking reset to
    False, and a compute_mask of its own."""

    def compute_mask(self, inputs, mask=None):
        return self.mask


class Sequential(object):
    def __init__(self, layers):
        self.layers = layers

    def call_and_compute_mask_like_tf_keras_1_13(self, inputs, mask=None):
        """Sequential._call_and_compute_mask's loop."""
        x = inputs
        for layer in self.layers:
            x = layer.call(x)
            if layer.supports_masking:
                mask = layer.compute_mask(x, mask)
            else:
                mask = None
        return x, mask


def test_own_compute_mask_counted():
    loop = Sequential.__dict__["call_and_compute_mask_like_tf_keras_1_13"]
    fixed = build_fixed(loop, ["OwnComputeMaskCounted"])
    own, flagged = Sequential([OwnComputeMask("both")]), Sequential([Flagged("never")])
    assert loop(own, "x", "m") == ("x", None)
    assert fixed(own, "x", "m") == ("x", "both")
    assert fixed(flagged, "x", "m") == ("x", None)  # neither: no mask, as before


class Calls(object):
    """tf.keras's Layer.__call__ around its two bookkeeping methods: the
    connectivity copies an output that is an input (here: adds a quote)."""

    def __init__(self):
        self.log = []

    def _set_mask_metadata(self, inputs, outputs, previous_mask):
        self.log.append(("masks on", outputs))

    def _set_connectivity_metadata_(self, inputs, outputs, args, kwargs):
        return inputs, outputs + "'"

    def call_like_tf_keras_1_10(self, inputs, build_graph):
        outputs = inputs
        if build_graph:
            self.log.append("regularization")
            self._set_mask_metadata(inputs, outputs, None)
        if build_graph and inputs:
            inputs, outputs = self._set_connectivity_metadata_(inputs, outputs, (), {})
        return outputs

    def call_like_tf_keras_1_13(self, inputs):
        outputs = inputs
        self._set_mask_metadata(inputs, outputs, None)
        if inputs:
            inputs, outputs = self._set_connectivity_metadata_(inputs, outputs, (), {})
        return outputs

    def reads_a_private_name(self):
        """tf.keras 1.9 - 1.12's Layer.__call__ reads `self.__class_`."""
        self._set_mask_metadata(None, self.__class_, None)
        if self:
            self._set_connectivity_metadata_(None, "", (), {})


@pytest.mark.parametrize("method, arguments", [
    ("call_like_tf_keras_1_10", ("x", True)), ("call_like_tf_keras_1_13", ("x",))])
def test_mask_set_on_copied_outputs(method, arguments):
    fixed = build_fixed(Calls.__dict__[method], ["MaskSetOnCopiedOutputs"])
    calls = Calls()
    assert fixed(calls, *arguments) == "x'"
    assert calls.log[-1] == ("masks on", "x'")
    if method == "call_like_tf_keras_1_10":
        assert calls.log == ["regularization", ("masks on", "x'")]
        assert fixed(calls, "x", False) == "x" and len(calls.log) == 2


@pytest.mark.skipif(sys.version_info < (3,), reason="Python 2 keeps no __qualname__")
def test_private_names_mangled_as_the_class_compiled_them():
    fixed = build_fixed(Calls.__dict__["reads_a_private_name"], ["MaskSetOnCopiedOutputs"])
    calls = Calls()
    calls._Calls__class_ = "mangled"
    fixed(calls)
    assert calls.log == [("masks on", "mangled")]


def set_connectivity_metadata_like_tf_keras(self, inputs, outputs, args, kwargs):
    kwargs.pop('mask', None)  # `mask` should not be serialized.
    return kwargs


def test_explicit_mask_recorded():
    fixed = build_fixed(set_connectivity_metadata_like_tf_keras, ["ExplicitMaskRecorded"])
    propagated, given = object(), object()
    assert fixed(None, Masked(propagated), None, (), {"mask": propagated, "training": 0}) == {
        "training": 0}
    assert fixed(None, Masked(propagated), None, (), {"mask": given}) == {"mask": given}
    assert fixed(None, Masked(propagated), None, (), {"mask": None}) == {"mask": None}
    assert fixed(None, Masked(None), None, (), {"mask": None}) == {}
    two = [Masked(propagated), Masked(None)]
    assert fixed(None, two, None, (), {"mask": [propagated, None]}) == {}
    assert fixed(None, two, None, (), {"mask": [given, None]}) == {"mask": [given, None]}


class Called(object):
    """A layer of a model: its calls (nodes), each with its inputs'
    layers, its input tensors and its recorded arguments; called again
    (as a model's from_config calls it), it adds a node making `output`."""

    def __init__(self, name, *calls):
        self.name, self._inbound_nodes = name, []
        for layers, tensors, arguments in calls:
            self._inbound_nodes.append(_Node(self, layers, tensors, arguments))

    def __call__(self, inputs, **kwargs):
        self._inbound_nodes.append(_Node(self, [], inputs, kwargs))


class _Node(object):
    def __init__(self, layer, inbound_layers, input_tensors, arguments):
        self.inbound_layers, self.input_tensors, self.arguments = (
            inbound_layers, input_tensors, arguments)
        self.output_tensors = [KerasTensor(layer, len(layer._inbound_nodes))]


# Bound by calls, as copy is above.
json, warnings = importlib.import_module("json"), importlib.import_module("warnings")


def config_like_keras(self):
    """A model's get_config (keras 2.x, tf.keras 1.4 - 1.14), shortened: the
    layers' entries, a call's arguments left out where JSON cannot hold one."""
    node_conversion_map = dict((layer.name + "_ib-" + str(index), index)
                               for layer in self.layers
                               for index in range(len(layer._inbound_nodes)))
    config = {"layers": []}
    for layer in self.layers:
        filtered_inbound_nodes = []
        for node in layer._inbound_nodes:
            try:
                json.dumps(node.arguments)
                kwargs = node.arguments
            except TypeError:
                warnings.warn("Layer " + layer.name + " was passed non-serializable keyword "
                              "arguments: they will not be included")
                kwargs = {}
            if node.inbound_layers:
                filtered_inbound_nodes.append([[inbound.name, 0, 0, kwargs]
                                               for inbound in node.inbound_layers])
        config["layers"].append({"name": layer.name, "inbound_nodes": filtered_inbound_nodes})
    return copy.deepcopy(config)


def from_config_like_keras(config, created_layers):
    """A model's from_config (keras 2.0.7 - 2.2.4), shortened: the layers
    are made; their calls, queued, are made when their inputs are."""
    unprocessed_nodes = [(created_layers[entry["name"]], node_data)
                         for entry in config["layers"] for node_data in entry["inbound_nodes"]]

    def add_unprocessed_node(layer, node_data):
        unprocessed_nodes.append((layer, node_data))

    def process_node(layer, node_data):
        for input_data in node_data:
            kwargs = input_data[3]
            inbound_node_index = input_data[1]
            if len(created_layers[input_data[0]]._inbound_nodes) <= inbound_node_index:
                add_unprocessed_node(layer, node_data)
                return
        if node_data:
            layer(None, **kwargs)

    while unprocessed_nodes:
        process_node(*unprocessed_nodes.pop(0))
    return created_layers


def test_tensor_arguments_written_and_read():
    """A call's tensor argument, left out of the config, is written as
    [layer name, node index, tensor index] beside its layer's calls, and
    the call made from the config takes the tensor it names, once made."""
    get_config = build_fixed(config_like_keras, ["TensorArgumentsWritten"])
    from_config = build_fixed(from_config_like_keras, ["TensorArgumentsRead"])
    x, h = Called("x", ([], [], {})), Called("h")  # x: an input layer, its own call
    h._inbound_nodes = [_Node(h, [x], [KerasTensor(x)], {})]
    x_, h_ = KerasTensor(x), KerasTensor(h)
    layers = [x, Called("dense", ([x], [x_], {"training": True})),
              Called("decoder", ([x, h], [x_, h_], {"initial_state": [h_]})),  # an input too
              Called("attend", ([x], [x_], {"attention_mask": h_, "scale": [h_, 2],
                                            "training": object()})),  # not JSON: left out
              h]
    model = type("Model", (), {"layers": layers})()
    with pytest.warns(UserWarning):
        config = get_config(model)
    with pytest.warns(UserWarning):
        released = config_like_keras(model)
    entries = dict((entry["name"], entry) for entry in config["layers"])
    written = entries["attend"].pop("call_arguments")
    assert written == [{"attention_mask": ["h", 0, 0], "scale": [["h", 0, 0], 2]}]
    assert config == released  # the rest is what the release writes
    entries["attend"]["call_arguments"] = written
    def made_layers():  # as a model's from_config makes them, an input layer with its call
        return dict((layer.name, Called(layer.name, *([([], [], {})] if layer is x else [])))
                    for layer in layers)

    made = from_config(config, made_layers())
    (attend,) = made["attend"]._inbound_nodes  # made after h, whose output it takes
    (made_by_h,) = made["h"]._inbound_nodes[0].output_tensors
    assert attend.arguments == {"attention_mask": made_by_h, "scale": [made_by_h, 2]}
    assert made["decoder"]._inbound_nodes[0].arguments == {}  # its state comes as an input
    assert from_config_like_keras(config, made_layers())["attend"]._inbound_nodes[0].arguments == {}


class BackendTensor(object):
    """A TensorFlow tensor: its op and dtype, no Keras history."""
    op, dtype = "Const", "float32"

    def __init__(self, name):
        self.name = name


@pytest.mark.parametrize("tensor", [KerasTensor(Called("outside")), BackendTensor("Const:0")],
                         ids=["a Keras tensor of no layer of the model", "a backend constant"])
def test_a_tensor_no_layer_makes_is_refused_in_one_line(tensor):
    get_config = build_fixed(config_like_keras, ["TensorArgumentsWritten"])
    x = Called("x", ([], [], {}))
    model = type("Model", (), {"layers": [x, Called("attend", (
        [x], [KerasTensor(x)], {"attention_mask": tensor}))]})()
    with pytest.raises(_runtime.ArgumentNotInConfig) as refused, pytest.warns(UserWarning):
        get_config(model)
    assert str(refused.value).startswith(
        "layer 'attend' is called with the tensor argument attention_mask, which no layer of "
        "the model makes")
    assert "\n" not in str(refused.value)
    learning = type("Model", (), {"layers": [x, Called("dropout", (
        [x], [KerasTensor(x)], {"training": BackendTensor("keras_learning_phase:0")}))]})()
    with pytest.warns(UserWarning):  # left out, as the release leaves it
        assert "call_arguments" not in get_config(learning)["layers"][1]


def map_graph_network(inputs, outputs):
    """The walk that gathers a model's nodes and layers (Keras 2.2's
    _map_graph_network, shortened): from the outputs through the tensors
    each call takes as inputs; (nodes by depth, the layers' names in order)."""
    nodes_depths = {}
    layers_depths = {}
    layer_indices = {}
    nodes_in_decreasing_depth = []

    def build_map(tensor, finished_nodes, nodes_in_progress, layer, node_index, tensor_index):
        node = layer._inbound_nodes[node_index]
        if node in finished_nodes:
            return
        if node.outbound_layer not in layer_indices:
            layer_indices[node.outbound_layer] = len(layer_indices)
        nodes_in_progress.add(node)
        for x in node.input_tensors:
            layer, node_index, tensor_index = x._keras_history
            if layer is not node:  # an input layer's call takes the tensor it makes
                build_map(x, finished_nodes, nodes_in_progress, layer, node_index, tensor_index)
        finished_nodes.add(node)
        nodes_in_progress.remove(node)
        nodes_in_decreasing_depth.append(node)

    finished_nodes = set()
    nodes_in_progress = set()
    for x in outputs:
        layer, node_index, tensor_index = x._keras_history
        build_map(x, finished_nodes, nodes_in_progress, layer=layer, node_index=node_index,
                  tensor_index=tensor_index)

    for node in reversed(nodes_in_decreasing_depth):
        depth = nodes_depths.setdefault(node, 0)
        depth = max(depth, layers_depths.get(node.outbound_layer, 0))
        layers_depths[node.outbound_layer] = depth
        nodes_depths[node] = depth
        for x in node.input_tensors:
            inbound_node = x._keras_history[0]
            if inbound_node is not node:
                nodes_depths[inbound_node] = max(depth + 1, nodes_depths.get(inbound_node, 0))

    nodes_by_depth = {}
    for node, depth in nodes_depths.items():
        nodes_by_depth.setdefault(depth, []).append(node)
    names = dict((node.outbound_layer, node.name) for node in nodes_depths)
    layers = sorted(layers_depths, key=lambda layer: (-layers_depths[layer], layer_indices[layer]))
    return nodes_by_depth, [names[layer] for layer in layers]


def test_argument_makers_walked():
    """`scale(h, scale=scaler(x))`: the release's walk leaves the scaler out;
    the twin's has it, deeper than the call taking it, with every other
    depth as the release's; a tensor from outside the model stays outside."""
    x = Call("x")
    h = Call("h", [x.made])
    scaler = Call("scaler", [x.made])
    outside = Call("outside", [Call("other input").made])
    scale = Call("scale", [h.made], scale=scaler.made, bias=outside.made)
    out = Call("out", [scale.made])
    by_depth, layers = map_graph_network([x.made], [out.made])
    assert layers == ["x", "h", "scale", "out"]
    fixed = build_fixed(map_graph_network, ["ArgumentMakersWalked"])
    fixed_by_depth, fixed_layers = fixed([x.made], [out.made])
    assert fixed_layers == ["x", "h", "scaler", "scale", "out"]
    by_depth[2].append(scaler)
    assert sorted((depth, sorted(node.name for node in nodes))
                  for depth, nodes in fixed_by_depth.items()) == sorted(
        (depth, sorted(node.name for node in nodes)) for depth, nodes in by_depth.items())
    assert _runtime.nodes_by_depth_in_call_order(fixed_by_depth) is fixed_by_depth


class RefusedModel(FromConfig):
    """A model (it has `layers`) whose config the fix refuses: a call inside
    it takes a tensor argument that no layer of the model makes
    (TensorArgumentsWritten)."""
    layers = ()

    def get_config(self):
        raise _runtime.ArgumentNotInConfig("layer 'attend' is called with the tensor argument "
                                           "attention_mask")


class RefusedModelOfASubclass(RefusedModel):
    pass


class RefusedWrapper(RefusedModel):
    """A wrapper of such a model: its config holds the model's; it has no `layers`."""
    layers = None


def clone_model(model):
    """The release's clone routine, as the fixed clone step finds it in its
    module: a RefusedModel that remembers what it cloned."""
    made = RefusedModel()
    made.cloned_from = model
    return made


@pytest.mark.parametrize("routine", [clone_step_like_keras, clone_sequential_like_keras],
                         ids=["functional", "Sequential"])
def test_nested_model_arguments_kept(routine):
    """A model whose config is refused is cloned by the module's clone_model,
    and then gets its flag back (TrainableKept); every other layer is made
    from its config; a layer that is not a model, or a model that
    clone_model would make of another class, stays refused."""
    fixed = build_fixed(routine, ["NestedModelArgumentsKept", "LambdaMaskKept", "TrainableKept"])

    def copied(layer):
        return fixed(layer, {}) if routine is clone_step_like_keras else fixed([layer])[0]

    original = RefusedModel()
    original.trainable = False
    with pytest.raises(_runtime.ArgumentNotInConfig):
        routine(original, {}) if routine is clone_step_like_keras else routine([original])
    clone = copied(original)
    assert clone.cloned_from is original and clone.trainable is False
    assert not hasattr(copied(FromConfig()), "cloned_from")
    for refused in (RefusedWrapper(), RefusedModelOfASubclass()):
        with pytest.raises(_runtime.ArgumentNotInConfig):
            copied(refused)


# A package shaped like keras: a registry of classes by name, its
# CustomObjectScope, and a model whose from_config makes its layers by name.
LIKE_KERAS_UTILS = '''
OBJECTS = {}


class CustomObjectScope(object):
    def __init__(self, objects):
        self.objects = objects

    def __enter__(self):
        self.before = dict(OBJECTS)
        OBJECTS.update(self.objects)

    def __exit__(self, *error):
        OBJECTS.clear()
        OBJECTS.update(self.before)
'''
LIKE_KERAS_MODELS = '''from like_keras.utils import generic_utils


class Layer(object):
    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls()


class Model(Layer):
    def __init__(self, layers):
        self.layers = layers

    def get_config(self):
        return [(type(layer).__name__, layer.get_config()) for layer in self.layers]

    @classmethod
    def from_config(cls, config):
        return cls([generic_utils.OBJECTS[name].from_config(inner) for name, inner in config])


generic_utils.OBJECTS.update(Layer=Layer, Model=Model)


def _clone_layer(layer):
    return layer.__class__.from_config(layer.get_config())
'''


def test_nested_layer_classes_kept(tmp_path, monkeypatch):
    """A model's copy from its config finds the classes of its layers by
    name, in the registry; fixed, it is made in the package's
    CustomObjectScope of the classes of its own layers (any depth; a name
    two classes share is left out), and the registry is as before after."""
    (tmp_path / "like_keras" / "utils").mkdir(parents=True)
    for path, text in (("__init__.py", ""), ("utils/__init__.py", ""),
                       ("utils/generic_utils.py", LIKE_KERAS_UTILS),
                       ("models.py", LIKE_KERAS_MODELS)):
        write(str(tmp_path / "like_keras" / path), text)
    monkeypatch.syspath_prepend(str(tmp_path))
    from like_keras import models
    try:
        fixed = build_fixed(models._clone_layer, ["NestedLayerClassesKept"])

        class Twice(models.Layer):
            pass

        class Wrapper(models.Layer):
            def __init__(self, layer=None):
                self.layer = layer

        inner = models.Model([Twice(), Wrapper()])
        with pytest.raises(KeyError, match="Twice"):
            models._clone_layer(models.Model([inner]))
        copy = fixed(models.Model([inner]))
        assert [type(layer) for layer in copy.layers[0].layers] == [Twice, Wrapper]
        assert models.generic_utils.OBJECTS == {"Layer": models.Layer, "Model": models.Model}
        assert type(fixed(Twice())) is Twice
        other = type("Twice", (models.Layer,), {})
        assert _runtime.live_classes(models.Model([inner, Wrapper(other())])) == {
            "Model": models.Model, "Wrapper": Wrapper}
        assert _runtime.live_classes(Wrapper(Twice()), lambda cls: "Package>" + cls.__name__) \
            == {"Twice": Twice, "Package>Twice": Twice}
    finally:
        for name in ("like_keras", "like_keras.utils", "like_keras.utils.generic_utils",
                     "like_keras.models"):
            sys.modules.pop(name, None)
