"""The fix: the installed `_clone_functional_model`, with one rule corrected.

Each affected release builds the list of a cloned layer's output masks as

    output_masks = to_list(layer.compute_mask(...))

so a single mask (None, or one tensor) becomes a one-element list, and the
`zip(reference_output_tensors, output_tensors, output_masks)` that follows
drops every output after the first. `Layer.__call__` of the same releases
repeats a single mask once per output instead; the corrected routine does
the same through `masks_per_output`.

Rather than ship a copy of Keras's routine (which differs from release to
release), we take the installed function's own source, rewrite only those
`to_list(....compute_mask(...))` calls, and compile it against the module
`keras.models`: everything else (layer creation, names, input_tensors
handling, shared layers) stays the installed release's own code. Before
rewriting, we compile the unmodified source and check that its bytecode is
the bytecode of the running function, so the source cannot be stale or
belong to some other function.
"""

import ast
import inspect
import textwrap
import types

MASKS_PER_OUTPUT = "_keras_clone_fix_masks_per_output"


class UnsupportedCloneFunction(Exception):
    """The installed clone routine is not one this fix knows how to correct."""


def masks_per_output(to_list, output_mask, output_tensors):
    """The output masks of one layer call, one per output.

    The rule of `Layer.__call__` in Keras 2.0.7 - 2.3.1: a mask that is not
    a list or tuple is repeated once per output; lists and tuples are kept.
    `to_list` is the release's own helper, applied as the release applies it.
    """
    if not isinstance(output_mask, (list, tuple)) and len(output_tensors) > 1:
        output_mask = [output_mask] * len(output_tensors)
    return to_list(output_mask)


class _RewriteMaskLists(ast.NodeTransformer):
    """`f(x.compute_mask(...))` -> `masks_per_output(f, x.compute_mask(...),
    output_tensors)`."""

    def __init__(self):
        self.rewritten = 0

    def visit_Call(self, node):
        self.generic_visit(node)
        if len(node.args) == 1 and not node.keywords and _is_compute_mask(node.args[0]):
            self.rewritten += 1
            return ast.copy_location(ast.Call(
                func=ast.Name(id=MASKS_PER_OUTPUT, ctx=ast.Load()),
                args=[node.func, node.args[0],
                      ast.Name(id="output_tensors", ctx=ast.Load())],
                keywords=[]), node)
        return node


def _is_compute_mask(node):
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "compute_mask")


def _function_def(original):
    """The ast of `original`'s definition, at its line in its file."""
    if not isinstance(original, types.FunctionType):
        raise UnsupportedCloneFunction(
            "expected a plain function, found {!r}".format(original))
    try:
        source = textwrap.dedent(inspect.getsource(original))
    except (IOError, OSError, TypeError) as error:  # Python 2 raises IOError
        raise UnsupportedCloneFunction("its source is not available: {}".format(error))
    module = ast.parse(source)
    ast.increment_lineno(module, original.__code__.co_firstlineno - 1)
    definition = module.body[0] if len(module.body) == 1 else None
    if not isinstance(definition, ast.FunctionDef) or definition.decorator_list:
        raise UnsupportedCloneFunction("its source is not one undecorated def")
    return definition


def _check_source_is_running_code(definition, original):
    module = ast.parse("")
    module.body.append(definition)
    code = original.__code__
    compiled = next(const for const in compile(module, code.co_filename, "exec",
                                               dont_inherit=True).co_consts
                    if isinstance(const, types.CodeType))
    if (compiled.co_name, compiled.co_code, compiled.co_names, compiled.co_varnames) != (
            code.co_name, code.co_code, code.co_names, code.co_varnames):
        raise UnsupportedCloneFunction(
            "its source in {} does not match the running code".format(code.co_filename))


def build_fixed_clone(original):
    """Return the corrected twin of `original` (keras.models._clone_functional_model).

    Raises UnsupportedCloneFunction when `original` is not a function whose
    source has the shape this fix corrects.
    """
    definition = _function_def(original)
    _check_source_is_running_code(definition, original)

    rewrite = _RewriteMaskLists()
    fixed_definition = rewrite.visit(definition)
    local_names = {node.id for node in ast.walk(definition)
                   if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    if not rewrite.rewritten or "output_tensors" not in local_names:
        raise UnsupportedCloneFunction(
            "it has no to_list(layer.compute_mask(...)) next to output_tensors")

    # Nest the def in a factory so `masks_per_output` arrives as a closure
    # variable: keras.models' namespace gains no name of ours.
    module = ast.parse("def _factory({}):\n    return {}\n".format(
        MASKS_PER_OUTPUT, definition.name))
    module.body[0].body.insert(0, fixed_definition)
    ast.fix_missing_locations(module)
    scratch = {}
    exec(compile(module, original.__code__.co_filename, "exec", dont_inherit=True), scratch)
    made = scratch["_factory"](masks_per_output)

    fixed = types.FunctionType(made.__code__, original.__globals__, original.__name__,
                               original.__defaults__, made.__closure__)
    fixed.__doc__ = original.__doc__
    fixed.__module__ = original.__module__
    for name in ("__kwdefaults__", "__qualname__"):  # Python 3 only
        if hasattr(original, name):
            setattr(fixed, name, getattr(original, name))
    return fixed
