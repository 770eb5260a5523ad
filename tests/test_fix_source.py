"""The source rewrite of keras_clone_fix._fix, on small functions of our own.

These run on every Python the wheel supports; test_fix.py proves the fix on
real Keras.
"""

import functools
import sys

import pytest

from keras_clone_fix._fix import UnsupportedCloneFunction, build_fixed_clone, masks_per_output


def to_list(x):
    """Keras 2.x's to_list: a tuple becomes one element."""
    return x if isinstance(x, list) else [x]


@pytest.mark.parametrize("mask, outputs, expected", [
    ("m", 3, ["m", "m", "m"]),
    (None, 2, [None, None]),
    (["a", None], 2, ["a", None]),
    (["a", "b", "c"], 2, ["a", "b", "c"]),  # longer: zip ignores the rest, as Keras does
    (("a", "b"), 2, [("a", "b")]),          # tuples: the release's own to_list decides
    ("m", 1, ["m"]),
    (None, 1, [None]),
])
def test_masks_per_output_follows_layer_call(mask, outputs, expected):
    assert masks_per_output(to_list, mask, [object()] * outputs) == expected


class Layer(object):
    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, inputs, mask=None):
        return self.mask


def clone_like(layer, outputs=2):
    """Shaped like the loop body of keras.models._clone_functional_model."""
    output_tensors = to_list(["out"] * outputs)
    output_masks = to_list(layer.compute_mask(None, None))
    return list(zip(output_tensors, output_masks))


def test_rewritten_function_keeps_every_output():
    assert clone_like(Layer("m"), 3) == [("out", "m")]
    fixed = build_fixed_clone(clone_like)
    assert fixed(Layer("m"), 3) == [("out", "m")] * 3
    assert fixed(Layer(["a", None]), 2) == [("out", "a"), ("out", None)]


def test_rewritten_function_looks_like_the_original():
    fixed = build_fixed_clone(clone_like)
    # (Python 2 functions have no __qualname__: None on both sides there.)
    names = ("__name__", "__qualname__", "__doc__", "__defaults__")
    assert [getattr(fixed, name, None) for name in names] == [
        getattr(clone_like, name, None) for name in names]
    assert fixed.__globals__ is clone_like.__globals__
    assert fixed.__code__.co_filename == clone_like.__code__.co_filename
    assert "_keras_clone_fix_masks_per_output" not in clone_like.__globals__


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
    (no_masks_here, "no to_list(layer.compute_mask(...))"),
    # Python 3's inspect finds the wrapped function's source, Python 2's the
    # wrapper's own, decorator included.
    (decorated(clone_like), "does not match the running code" if sys.version_info[0] > 2
     else "not one undecorated def"),
    (one_line, "not one undecorated def"),
])
def test_refuses_what_it_cannot_rewrite(function, problem):
    with pytest.raises(UnsupportedCloneFunction, match=problem.replace("(", r"\(").replace(")", r"\)")):
        build_fixed_clone(function)


def test_refuses_code_without_source():
    namespace = {}
    exec("def made_at_run_time(layer):\n    return layer\n", namespace)
    with pytest.raises(UnsupportedCloneFunction, match="source is not available"):
        build_fixed_clone(namespace["made_at_run_time"])
