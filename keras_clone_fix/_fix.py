"""The fix: the fixed twin of a Keras routine, read back or built.

A twin is Keras's own installed function with the rules of _build.RULES applied
to its source (see there); its code calls the helpers of _runtime.
Building one takes most of what patch() costs, so the first build is
stored (_cache) and later interpreters of the environment read it back:
then neither the rules nor their imports load.
This module is what every patch() imports; keep it small.
"""

import types

from keras_clone_fix import _cache
from keras_clone_fix._runtime import HELPERS, UnsupportedFunction


def build_fixed(original, rule_names, decorator=None):
    """The twin of `original` with these rules (names in _build.RULES)
    applied: read back where _cache holds this very build, built otherwise.
    With a `decorator` (its expression's text, as the def writes it),
    `original` is the function that decorator made of Keras's def: the twin
    is built from the def's function (its `__wrapped__`), and the release's
    own decorator, named in the module, is applied to it.

    Raises UnsupportedFunction when `original` is not a function whose
    source has what every rule rewrites.
    """
    if decorator is not None:
        made = original
        original = getattr(made, "__wrapped__", None)
        if not isinstance(original, types.FunctionType):
            raise UnsupportedFunction("expected what @{} made, found {!r}".format(decorator, made))
    if not isinstance(original, types.FunctionType):
        raise UnsupportedFunction("expected a plain function, found {!r}".format(original))
    if original.__code__.co_freevars:
        raise UnsupportedFunction("it is a closure")
    # The rules' text as this interpreter first read it (those a build would
    # import); a decorator is among what the build accepted.
    accepted = list(rule_names) + (["@" + decorator] if decorator else [])
    key = _cache.key(original, accepted, _cache.rules_text())
    cached = _cache.read(original, key)
    if cached is not None and all(name in HELPERS for name in cached[1]):
        code, helpers = cached
    else:
        from keras_clone_fix import _build
        code, helpers = _build.factory_code(original, rule_names, decorator)
        _cache.write(original, key, code, helpers)
    scratch = {}
    exec(code, scratch)
    made = scratch["_factory"](*[HELPERS[name] for name in helpers])

    fixed = types.FunctionType(made.__code__, original.__globals__, original.__name__,
                               original.__defaults__, made.__closure__)
    for attribute in ("__doc__", "__module__", "__qualname__", "__kwdefaults__"):
        if hasattr(original, attribute):  # Python 2 has no __qualname__, __kwdefaults__
            setattr(fixed, attribute, getattr(original, attribute))
    if decorator is not None:
        names = decorator.split(".")
        apply = original.__globals__[names[0]]
        for name in names[1:]:
            apply = getattr(apply, name)
        fixed = apply(fixed)
    return fixed
