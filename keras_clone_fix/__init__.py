"""keras-clone-fix: `clone_model`, models called on new tensors and models
loaded (`load_model`, `from_config`) give back the model they were, on
multi-backend Keras 2.0 - 2.3, the keras package 2.5 - 2.6 and tf.keras of
TensorFlow 1.4 - 2.5 (_bugs.BUGS: what each release gets wrong).

Importing this package applies the fix: at once to a family (`keras`,
`tensorflow`) imported already, and to the others right after they are
imported. Set KERAS_CLONE_FIX=0 to import it without activating; patch()
still works then.

This module is the interpreter-start bootstrap too: keras_clone_fix.pth
imports it in every interpreter of the environment, so it is all that loads
before keras does. It holds the API, the switch and the wait for the
families' imports, and imports nothing Python has not loaded at start; the
rest (_activation, _affected, _fix, _runtime, wrapt) loads when a family arrives or
the API is used. One module, not a package plus a bootstrap submodule: each
module imported at start is paid by every interpreter.

PYTEST_DONT_REWRITE: the .pth imports this package before pytest starts,
so pytest could not rewrite its asserts (it has none) and would warn so.
"""

import os
import sys

try:
    from _thread import RLock as _RLock
except ImportError:  # Python 2: its `thread` module has no RLock
    import thread as _thread

    class _RLock(object):
        """A reentrant lock from the builtin `thread` module: `threading`
        is not imported at start on Python 2."""

        def __init__(self):
            self._lock = _thread.allocate_lock()
            self._owner = None
            self._depth = 0

        def __enter__(self):
            me = _thread.get_ident()
            if self._owner != me:  # only this thread could have made it `me`
                self._lock.acquire()
                self._owner = me
            self._depth += 1

        def __exit__(self, *exc_info):
            self._depth -= 1
            if not self._depth:
                self._owner = None
                self._lock.release()

__version__ = "0.2.0"
__all__ = ["KerasCloneFixWarning", "PatchError", "patch", "status", "unpatch"]

SWITCH = "KERAS_CLONE_FIX"
SWITCH_OFF = ("0", "false", "off", "no")
SWITCH_ON = ("1", "true", "on", "yes")
# The packages whose import the fix waits for; _affected.RELEASES says which
# of their releases are affected.
FAMILIES = ("keras", "tensorflow")


class KerasCloneFixWarning(RuntimeWarning):
    """Activation could not patch keras; clone_model runs unpatched."""


class PatchError(RuntimeError):
    """patch() could not patch an affected keras."""


def patch(force=None):
    """Import keras and tensorflow (those installed), patch the affected
    ones, and patch the others when they are imported; returns status().

    force=True also patches a release whose version is not recognised;
    None (the default) reads KERAS_CLONE_FIX_FORCE, as every way in does.
    Works with KERAS_CLONE_FIX=0, which only turns off the automatic ways.
    Idempotent and thread-safe. Raises PatchError if an affected release
    cannot be patched.
    """
    from keras_clone_fix import _activation
    return _activation.patch(force=force)


def unpatch():
    """Put back the original functions (the very same objects) and stop
    waiting for imports; returns status()."""
    from keras_clone_fix import _activation
    return _activation.unpatch()


def status():
    """The fix's state, read from what is installed at each target: an
    object with patched (bool), targets (dict: each target -> whether its
    fix runs there), keras_version and tensorflow_version (str or None),
    reason (str) and activated_by (str or None). Imports nothing."""
    from keras_clone_fix import _activation
    return _activation.status()


class _State(object):
    """The fix's bookkeeping in this process; whether a target is patched is
    never kept here, but read from the target itself."""
    lock = _RLock()
    watcher = None       # the _ImportWatcher while waiting for families
    activated_by = None  # what asked for the fix
    reason = None        # the last decision, for people; None: none yet
    decisions = {}       # family -> the last decision about it


# Kept across importlib.reload(keras_clone_fix): the watcher and the lock
# must stay the ones in use.
_state = globals().get("_state") or _State()


class _ImportWatcher(object):
    """A sys.meta_path finder waiting for the families' imports; _activation
    patches a family once its `__init__` has run. Python 3 calls find_spec;
    Python 2 calls find_module, then load_module of the loader it returns."""

    def __init__(self):
        self.finding = set()  # names the other finders are looking for now

    def _watches(self, fullname):
        return fullname in FAMILIES and fullname not in self.finding

    def find_spec(self, fullname, path=None, target=None):
        if not self._watches(fullname):
            return None
        from keras_clone_fix import _activation
        return _activation.watch(self, fullname)

    def find_module(self, fullname, path=None):
        return self if self._watches(fullname) else None

    def load_module(self, fullname):
        from keras_clone_fix import _activation
        return _activation.load(self, fullname)


def _arm():
    """Wait for the families' imports (lock held)."""
    if _state.watcher not in sys.meta_path:
        _state.watcher = _ImportWatcher()
        sys.meta_path.insert(0, _state.watcher)


def _env_switch(name):
    """An on/off environment variable read: True, False, or None where it is
    unset or holds another value."""
    value = os.environ.get(name, "").strip().lower()
    return True if value in SWITCH_ON else False if value in SWITCH_OFF else None


def _env_flag(name, default):
    """An on/off environment variable; any other value warns and counts as
    `default`."""
    switch = _env_switch(name)
    if switch is not None:
        return switch
    if os.environ.get(name, "").strip():
        from keras_clone_fix import _activation
        _activation.warn("{}={!r} is not one of {}; using the default ({})".format(
            name, os.environ[name], "/".join(SWITCH_ON + SWITCH_OFF), "on" if default else "off"))
    return default


def _activate(source):
    """Patch the families imported already, and wait for the others, unless
    KERAS_CLONE_FIX=0; `source` says who asked. Never raises."""
    try:
        with _state.lock:
            if _state.activated_by is not None:
                # Active already: the .pth imports this package (activating
                # as an import), then says it was the .pth.
                _state.activated_by = source
                return
            if not _env_flag(SWITCH, default=True):
                _state.reason = "activation switched off by {}={}".format(
                    SWITCH, os.environ[SWITCH])
                return
            _state.activated_by = source
            if any(sys.modules.get(family) is not None for family in FAMILIES):
                from keras_clone_fix import _activation
                _activation.activate()
            else:
                _arm()
    except Exception as error:  # activation must never break the program
        from keras_clone_fix import _activation
        _activation.warn("activation failed: {}: {}".format(type(error).__name__, error))


_activate("import keras_clone_fix")
