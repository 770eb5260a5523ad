"""Activation: patch, unpatch, status, and the wait for `import keras`.

Importing this module costs next to nothing: it needs only modules every
interpreter has loaded at start. wrapt, keras and the fix itself are
imported when keras arrives, never before, so a process that never imports
keras pays no more than a `sys.meta_path` entry.
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
    warnings.warn("keras-clone-fix: " + message, KerasCloneFixWarning, stacklevel=3)


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
        return False, reason + "; not patched (set {}=1 to patch anyway)".format(FORCE)
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


def _keras_arrived():
    """The import watcher's callback: keras has just been imported."""
    with _lock:
        _state.watcher = None
        _apply_quietly()


def _arm():
    """Wait for `import keras` (lock held)."""
    if _state.watcher is None:
        from keras_clone_fix._import_watch import KerasImportWatcher
        _state.watcher = KerasImportWatcher(_keras_arrived)
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
    with _lock:
        _disarm()
        _state.activated_by = source
        try:
            import keras  # noqa: F401  (the caller asked for keras)
        except ImportError as error:
            _state.reason = "keras cannot be imported: {}".format(error)
        else:
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
        if keras_arrived:
            return
        if not was_patched:
            unpatch()
        if was_waiting:
            _arm()
        _state.activated_by, _state.reason = activated_by, reason
