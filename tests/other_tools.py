"""Other tools' patches of a target, as legacy code and tracing tools make
them: a wrapt wrapper (wrapt.wrap_function_wrapper), a functools-style
closure (functools.wraps; on Python 2, or with keep_wrapped=False, it has
no `__wrapped__`), and a replacement, their own function that calls
nothing that was there. Each records its label in RAN when it runs. At a
classmethod (a model's from_config) each puts a classmethod of its own.

chain() reads what runs at a target from what these made, without the
package's helpers: the tests compare status() with it.
"""

import functools
import importlib
import types

RAN = []
MADE = {}  # id -> (kind, label, what it calls or None, the object: kept alive, ids stay unique)


def owner_of(module, attribute):
    """(module or class holding the target, its name there)."""
    owner = importlib.import_module(module)
    path = attribute.split(".")
    for part in path[:-1]:
        owner = getattr(owner, part)
    return owner, path[-1]


def at(module, attribute):
    owner, name = owner_of(module, attribute)
    return vars(owner)[name]


def chain(function):
    """[(kind, label, object)] from `function` down: "ours" (the fix's
    wrapper), "wrapt", "closure", "replacement" (which ends it), "keras"
    (anything else: Keras's function)."""
    links = []
    while function is not None:
        kind, label, inner, _ = MADE.get(id(function), (None, None, None, None))
        if kind is None:
            if type(function).__name__ == "FixedFunction":
                kind, label, inner = "ours", "", function.__wrapped__
            else:
                kind, label = "keras", ""
        elif kind == "wrapt":
            inner = function.__wrapped__  # unpatch() may have changed it
        links.append((kind, label, function))
        function = inner
    return links


def wrap_with_wrapt(module, attribute, label):
    def wrapper(wrapped, instance, args, kwargs):
        RAN.append(label)
        return wrapped(*args, **kwargs)

    import wrapt
    proxy = wrapt.wrap_function_wrapper(module, attribute, wrapper)
    MADE[id(proxy)] = ("wrapt", label, None, proxy)


def is_classmethod(function):
    """Whether what is at a target ends in a classmethod (a model's
    from_config): a tool patching it puts a classmethod of its own there."""
    return type(chain(function)[-1][2]) is classmethod


def wrap_in_closure(module, attribute, label, keep_wrapped=True):
    owner, name = owner_of(module, attribute)
    function = vars(owner)[name]
    method = is_classmethod(function)

    if method:  # put back as a classmethod, which binds the class
        def theirs(cls, *args, **kwargs):
            RAN.append(label)
            return function.__get__(None, cls)(*args, **kwargs)
    else:
        def theirs(*args, **kwargs):
            RAN.append(label)
            return function(*args, **kwargs)

    # Named as Keras's function: a classmethod has no name (Python 2, 3.7).
    theirs = functools.wraps(chain(function)[-1][2].__func__ if method else function)(theirs)
    if "__wrapped__" in vars(theirs):  # Python 3: functools.wraps says what it wraps
        theirs.__wrapped__ = function
    if not keep_wrapped:
        vars(theirs).pop("__wrapped__", None)  # as functools.wraps on Python 2
    installed = classmethod(theirs) if method else theirs
    MADE[id(installed)] = ("closure", label, function, installed)
    setattr(owner, name, installed)


def _replacement(*args, **kwargs):
    # Its globals are its own namespace (replace()): no closure, no __wrapped__.
    RAN.append(label)
    return keras_function(*args, **kwargs)


def replace(module, attribute, label):
    """Their own function at the target: it runs a copy of Keras's function
    (the fix's wrapper or not, what was there does not run)."""
    owner, name = owner_of(module, attribute)
    kind, _, keras = chain(vars(owner)[name])[-1]
    method = type(keras) is classmethod
    keras = keras.__func__ if method else keras
    if kind == "replacement":
        keras = keras.__globals__["keras_function"]
    namespace = {"RAN": RAN, "label": label, "__builtins__": __builtins__,
                 "keras_function": types.FunctionType(keras.__code__, keras.__globals__,
                                                      keras.__name__, keras.__defaults__,
                                                      keras.__closure__)}
    replacement = types.FunctionType(_replacement.__code__, namespace, keras.__name__)
    installed = classmethod(replacement) if method else replacement
    MADE[id(installed)] = ("replacement", label, None, installed)
    setattr(owner, name, installed)


def install(kind, module, attribute, label):
    {"wrapt": wrap_with_wrapt, "closure": wrap_in_closure, "replacement": replace}[kind](
        module, attribute, label)
