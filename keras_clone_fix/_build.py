"""The build of a fixed twin from the installed source (_fix.build_fixed's
miss): the target's rules, named rewrites of Keras's own routine, applied to
its own text. The rules are in _argument_rules, _clone_rules, _config_rules
and _mask_rules, written with _rewrite.

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

from keras_clone_fix import _argument_rules, _clone_rules, _config_rules, _mask_rules
from keras_clone_fix._rewrite import HELPER_PREFIX, Rule, located, name_of, nodes_in
from keras_clone_fix._runtime import UnsupportedFunction

# Every rule, by name (what the targets name).
RULES = dict((name, rule) for module in (_argument_rules, _clone_rules, _config_rules, _mask_rules)
             for name, rule in vars(module).items()
             if isinstance(rule, type) and issubclass(rule, Rule) and rule is not Rule
             and not name.startswith("_"))


def _dotted(node):
    """'interfaces.legacy_model_constructor_support' for that expression; None
    for anything but a name and its attributes."""
    if isinstance(node, ast.Attribute):
        owner = _dotted(node.value)
        return owner and owner + "." + node.attr
    return name_of(node)


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


def _function_def(original, decorator=None):
    """The ast of `original`'s definition, at its lines in its file: one def,
    undecorated or a classmethod, or, where a `decorator` is given (its
    expression's text), decorated by it alone (the lines start at the
    decorator's, as the code's).

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
            if module.body:  # lines of comments alone parse too (a file changed since)
                break
            error = "no statement"
        except SyntaxError as raised:
            error = raised
        if last >= len(lines):
            raise UnsupportedFunction("its source in {} does not parse: {}".format(
                code.co_filename, error))
        last += 1
    body = module.body[0].body if indented else module.body
    definition = body[0] if len(body) == 1 else None
    decorators = [_dotted(expression) for expression in getattr(definition, "decorator_list", [])]
    if not isinstance(definition, ast.FunctionDef) or decorators not in (
            ([decorator],) if decorator else ([], ["classmethod"])):
        raise UnsupportedFunction("its source is not one def, " + (
            "decorated by @" + decorator if decorator else "undecorated or a classmethod"))
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
    for node in nodes_in(definition):
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
        rule = RULES[name]()
        definition = rule.visit(definition)
        if not rule.found:
            raise UnsupportedFunction("rule {} found nothing to rewrite".format(name))
        helpers.extend(rule.helpers)
    return definition, helpers


def factory_code(original, rule_names, decorator=None):
    """(the code of a module defining `_factory(<helpers>)`, which returns
    the fixed twin of `original` (undecorated: its def may have `decorator`,
    which _fix applies); the names of the helpers it takes, in
    _runtime.HELPERS): the expensive part, which _cache keeps."""
    definition = _function_def(original, decorator)
    _check_source_is_running_code(definition, original)
    definition, helpers = apply_rules(definition, rule_names)
    # The twin of a classmethod is its function: the classmethod stays Keras's
    # (the wrapper is around it), and binds the class as it did. A target's
    # decorator is applied to the twin by _fix. The twin's code starts where
    # the original's does, at the first decorator (Python 3.8 puts a def at
    # its `def` line).
    if definition.decorator_list:
        definition.lineno = definition.decorator_list[0].lineno
    definition.decorator_list = []
    # The twin takes the original's defaults; evaluated here they would need
    # the module's names (tf.keras 1.14: `layer_fn=_clone_layer`).
    arguments = definition.args
    arguments.defaults = [located(ast.parse("None", mode="eval").body, default)
                          for default in arguments.defaults]
    # Nest the def in a factory so the helpers arrive as closure variables:
    # the function's module gains no name of ours.
    names = [HELPER_PREFIX + helper.__name__ for helper in helpers]
    module = ast.parse("def _factory({}):\n    return {}\n".format(", ".join(names), definition.name))
    module.body[0].body.insert(0, definition)
    code = compile(module, original.__code__.co_filename, "exec", _future_flags(original),
                   dont_inherit=True)
    return code, [helper.__name__ for helper in helpers]
