"""Activation: patch, unpatch, status, and the wait for `import keras`.

Importing this module costs next to nothing: it needs only modules every
interpreter has loaded at start. wrapt, keras and the fix itself are
imported when keras arrives, never before, so a process that never imports
keras pays no more than a `sys.meta_path` entry.

The wait for keras is not wrapt's post-import hook: importing wrapt costs
20 - 95 ms, too much for a .pth that every interpreter runs. It is the same
idea in a few lines: a `sys.meta_path` finder that answers only for "keras",
lets the other finders find it, and hands back its spec with a loader that
patches once keras' `__init__` has run. That loader stands in only while
keras executes; afterwards keras' `__loader__` and `__spec__.loader` are the
real loader again.
"""

import os
import sys
import _thread

SWITCH = "KERAS_CLONE_FIX"
FORCE = "KERAS_CLONE_FIX_FORCE"
_OFF = ("0", "false", "off", "no")
_ON = ("1", "true", "on", "yes")
_TARGET = "_clone_functional_model"


class KerasCloneFixWarning(RuntimeWarning):
    """Activation could not patch keras; clone_model runs unpatched."""


class PatchError(RuntimeError):
    """keras_clone_fix.patch() could not patch an affected keras."""


class Status(object):
    """The fix's state in this process.

    patched: bool, keras.models._clone_functional_model is the fixed one.
    keras_version: str or None, the imported keras' version (None: not imported).
    reason: str, why it is patched or not, for people.
    activated_by: str or None, what asked for the fix.
    """

    # A plain class, not a namedtuple: `collections` is not loaded at
    # interpreter start on Python 3.6/3.7, and this module must add nothing.
    __slots__ = ("patched", "keras_version", "reason", "activated_by")

    def __init__(self, patched, keras_version, reason, activated_by):
        self.patched, self.keras_version = patched, keras_version
        self.reason, self.activated_by = reason, activated_by

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self):
        return "Status({})".format(", ".join(
            "{}={!r}".format(name, getattr(self, name)) for name in self.__slots__))


_lock = _thread.RLock()


class _State(object):
    original = None      # keras.models._clone_functional_model as found
    wrapper = None       # our wrapt FunctionWrapper while it is installed
    watcher = None       # the _KerasImportWatcher while waiting for keras
    activated_by = None
    reason = None        # last decision; None: nothing decided yet


_state = _State()


def _warn(message):
    import warnings
    try:
        warnings.warn("keras-clone-fix: " + message, KerasCloneFixWarning, stacklevel=3)
    except Warning:  # warnings turned into errors must not break `import keras`
        sys.stderr.write("KerasCloneFixWarning: keras-clone-fix: {}\n".format(message))


def _log(message):
    import logging
    logging.getLogger("keras_clone_fix").info(message)


def _env_flag(name, default):
    """An on/off environment variable; a value that is neither warns."""
    value = os.environ.get(name, "").strip().lower()
    if value in _OFF:
        return False
    if value in _ON:
        return True
    if value:
        _warn("{}={!r} is not one of {}; using the default ({})".format(
            name, os.environ[name], "/".join(_ON + _OFF), "on" if default else "off"))
    return default


def _keras_models():
    keras = sys.modules.get("keras")
    return keras, getattr(keras, "models", None)


def _decide(keras, force):
    """(patch?, reason) for an imported keras module."""
    from keras_clone_fix._affected import is_affected
    version = getattr(keras, "__version__", None)
    affected, reason = is_affected(version)
    if affected is None:
        if force:
            return True, reason + "; forced"
        return False, reason + " (set {}=1 to patch it anyway)".format(FORCE)
    return affected, reason


def _wrap(models):
    """Wrap models._clone_functional_model with its fixed twin: (original, wrapper)."""
    import wrapt
    from keras_clone_fix._fix import build_fixed_clone

    original = getattr(models, _TARGET)
    fixed = build_fixed_clone(original)

    def clone_with_one_mask_per_output(wrapped, instance, args, kwargs):
        return fixed(*args, **kwargs)

    # wrapt 2 renamed the first parameter: pass it positionally.
    return original, wrapt.wrap_function_wrapper(models, _TARGET, clone_with_one_mask_per_output)


def _is_installed(models):
    return models is not None and _state.wrapper is not None and (
        getattr(models, _TARGET, None) is _state.wrapper)


def _apply(keras, models, force):
    """Patch an imported keras if the guard says so (lock held); returns reason."""
    should_patch, reason = _decide(keras, force)
    if not should_patch:
        _state.reason = reason + "; not patched"
    elif not _is_installed(models):
        from keras_clone_fix._fix import UnsupportedCloneFunction
        try:
            _state.original, _state.wrapper = _wrap(models)
        except UnsupportedCloneFunction as error:
            _state.reason = "{}; cannot be patched: keras.models.{} {}".format(
                reason, _TARGET, error)
            raise PatchError(_state.reason)
        _state.reason = reason + "; patched"
    return _state.reason


def _apply_quietly():
    """Patch the imported keras for an activation; never raises."""
    with _lock:
        try:
            keras, models = _keras_models()
            _log(_apply(keras, models, _env_flag(FORCE, default=False)))
        except Exception as error:  # activation must never break the program
            _state.reason = "activation failed: {}: {}".format(type(error).__name__, error)
            _warn(_state.reason + "; clone_model is not patched")


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


class _KerasImportWatcher(object):
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


def _keras_arrived():
    """The import watcher's callback: keras has just been imported."""
    with _lock:
        _state.watcher = None
        _apply_quietly()


def _arm():
    """Wait for `import keras` (lock held)."""
    if _state.watcher is None:
        _state.watcher = _KerasImportWatcher(_keras_arrived)
        sys.meta_path.insert(0, _state.watcher)


def activate(source):
    """Patch keras now, or when it is imported; what `import keras_clone_fix`,
    the .pth file and the pytest plugin call. Never raises."""
    try:
        if not _env_flag(SWITCH, default=True):
            with _lock:
                _state.reason = "activation switched off by {}={}".format(
                    SWITCH, os.environ[SWITCH])
            return
        with _lock:
            _state.activated_by = source
            if "keras" in sys.modules:
                _apply_quietly()
            else:
                _arm()
    except Exception as error:  # activation must never break the program
        _warn("activation failed: {}: {}".format(type(error).__name__, error))


def _disarm():
    if _state.watcher is not None:
        if _state.watcher in sys.meta_path:
            sys.meta_path.remove(_state.watcher)
        _state.watcher = None


def patch(force=False, source="keras_clone_fix.patch()"):
    """Import keras and patch it if this release is affected; returns status().

    force=True also patches a keras whose version is not recognised.
    Raises PatchError if an affected keras cannot be patched.
    """
    try:
        # Not under _lock: a thread importing keras meanwhile holds keras'
        # import lock and waits for _lock in _keras_arrived().
        import keras  # noqa: F401  (the caller asked for keras)
    except ImportError as error:
        with _lock:
            _state.reason = "keras cannot be imported: {}".format(error)
            return status()
    with _lock:
        _disarm()
        _state.activated_by = source
        _apply(*_keras_models(), force=force)
        return status()


def unpatch():
    """Put back keras' own clone routine and stop waiting for keras; returns status()."""
    with _lock:
        _disarm()
        keras, models = _keras_models()
        if _is_installed(models):
            setattr(models, _TARGET, _state.original)
        _state.wrapper = _state.original = None
        _state.activated_by = None
        _state.reason = "unpatched by keras_clone_fix.unpatch()"
        return status()


def status():
    """The fix's state in this process, without importing anything heavy."""
    with _lock:
        keras, models = _keras_models()
        reason = _state.reason
        if reason is None:
            if _state.watcher is not None:
                reason = "waiting for `import keras`"
            else:
                reason = "keras is not imported"
        return Status(patched=_is_installed(models),
                      keras_version=getattr(keras, "__version__", None),
                      reason=reason, activated_by=_state.activated_by)


def save_state():
    """What restore_state() needs to put this process back as it is now."""
    with _lock:
        return (_is_installed(_keras_models()[1]), _state.watcher is not None,
                _state.activated_by, _state.reason)


def restore_state(saved):
    """Undo patch()/unpatch() calls made since save_state()."""
    was_patched, was_waiting, activated_by, reason = saved
    with _lock:
        # Waiting meant "patch when keras arrives": if it arrived meanwhile,
        # patched is the state the wait would have led to.
        keras_arrived = was_waiting and "keras" in sys.modules
        if not keras_arrived:
            if not was_patched:
                unpatch()
            if was_waiting:
                _arm()
            _state.reason = reason
        _state.activated_by = activated_by
