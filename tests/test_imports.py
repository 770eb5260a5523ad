"""No circle among the package's modules: none imports, at any depth, a
module that imports it. (The package's __init__ is left out: Python imports
it before any of its modules anyway, and it loads _activation only when its
API is called.) Read from the installed package's source, as text."""

import ast
import glob
import os

import keras_clone_fix
from keras_clone_fix import _cache

PACKAGE = os.path.dirname(os.path.abspath(keras_clone_fix.__file__))
MODULES = sorted(os.path.basename(path)[:-3] for path in glob.glob(os.path.join(PACKAGE, "*.py"))
                 if not path.endswith("__init__.py"))


def imported_modules(name):
    """The package's modules that `name` imports, at module level or in a function."""
    with open(os.path.join(PACKAGE, name + ".py")) as source:
        tree = ast.parse(source.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "keras_clone_fix":
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("keras_clone_fix."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[1] for alias in node.names
                         if alias.name.startswith("keras_clone_fix."))
    return found & set(MODULES)


def test_no_module_imports_one_that_imports_it():
    imports = dict((name, imported_modules(name)) for name in MODULES)
    circles = []
    for start in MODULES:
        reached, pending = set(), list(imports[start])
        while pending:
            name = pending.pop()
            if name not in reached:
                reached.add(name)
                pending.extend(imports[name])
        if start in reached:
            circles.append(start)
    assert not circles, "modules in an import circle: {}".format(", ".join(circles))


def test_the_build_and_the_warm_path_share_the_runtime_helpers():
    assert "_runtime" in imported_modules("_build") and "_runtime" in imported_modules("_fix")
    assert not imported_modules("_runtime")


def test_the_text_that_keys_a_stored_build_is_all_the_build_imports():
    """A stored build is used where the text of _cache.RULE_MODULES is the
    same: those must be the build and every module it imports, at any depth,
    but the cache and the helpers it calls (which a build does not contain)."""
    reached, pending = set(), ["_build"]
    while pending:
        name = pending.pop()
        if name not in reached:
            reached.add(name)
            pending.extend(imported_modules(name))
    assert reached - {"_cache", "_runtime"} == set(_cache.RULE_MODULES)
