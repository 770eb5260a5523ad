"""Run a callback right after `import keras` finishes, importing nothing first.

wrapt's post-import hooks would do, but importing wrapt costs 20 - 95 ms,
too much for a .pth that every interpreter runs. This is the same idea in a
few lines of stdlib: a `sys.meta_path` finder that answers only for "keras",
lets the other finders find it, and hands back its spec with a loader that
calls the callback once keras' `__init__` has run. The loader stands in only
while keras executes; afterwards keras' `__loader__` and `__spec__.loader`
are the real loader again.
"""

import sys


class _LoaderThenCallback(object):
    def __init__(self, loader, callback):
        self._loader = loader
        self._callback = callback

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        try:
            self._loader.exec_module(module)
        finally:
            module.__loader__ = module.__spec__.loader = self._loader
        self._callback()


class KerasImportWatcher(object):
    """A meta path finder: calls `callback()` (which must not raise) after
    the first successful `import keras`, then takes itself off sys.meta_path."""

    def __init__(self, callback):
        self._callback = callback
        self._finding = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "keras" or self._finding:
            return None
        import importlib.util
        self._finding = True  # the lookup below comes back here
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._finding = False
        if spec is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _LoaderThenCallback(spec.loader, self._imported)
        return spec

    def _imported(self):
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        self._callback()
