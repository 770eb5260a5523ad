"""Activation: patch, unpatch and status, and the work of the keras import trigger.

Loaded when keras arrives or when the API is used, never at interpreter
start (that is the package's __init__). wrapt and the fix itself are
imported only to patch an affected keras.

The wait for keras is not wrapt's post-import hook: importing wrapt costs
20 - 95 ms, too much for every interpreter. It is the same idea in a few
lines: the package's `sys.meta_path` finder answers only for "keras"; then
on Python 3, watch_keras() lets the other finders find it and hands back its
spec with a loader that calls keras_arrived() once keras' `__init__` has
run. That loader stands in only while keras executes; afterwards keras'
`__loader__` and `__spec__.loader` are the real loader again. On Python 2,
whose finders have no specs, load_keras() imports keras through the other
finders and then calls keras_arrived().
"""

import os
import sys

from keras_clone_fix import KerasCloneFixWarning, PatchError, _arm, _env_flag, _state

FORCE = "KERAS_CLONE_FIX_FORCE"
_TARGET = "_clone_functional_model"
state = _state  # the package's: the watcher and the switch use it at start
lock = state.lock


def warn(message):
    """One KerasCloneFixWarning; to stderr if warnings are errors, because
    they must not break `import keras`."""
    import warnings
    try:
        warnings.warn("keras-clone-fix: " + message, KerasCloneFixWarning, stacklevel=3)
    except Warning:
        sys.stderr.write("KerasCloneFixWarning: keras-clone-fix: {}\n".format(message))


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


def _past(watcher, find_or_import):
    """find_or_import("keras") by the other finders: it comes back to the
    watcher, which must then let it pass."""
    watcher.finding = True
    try:
        return find_or_import("keras")
    finally:
        watcher.finding = False


def watch_keras(watcher):
    """Python 3: the spec of keras, found by the other finders, loading so
    that keras_arrived() runs once keras is imported."""
    import importlib.util
    spec = _past(watcher, importlib.util.find_spec)
    if spec is not None and hasattr(spec.loader, "exec_module"):
        spec.loader = _LoaderThenCallback(spec.loader, keras_arrived)
    return spec


def load_keras(watcher):
    """Python 2's load_module: keras, imported by the other finders, then
    keras_arrived(). A failed import raises as it would without us."""
    import importlib
    keras = _past(watcher, importlib.import_module)
    keras_arrived()
    return keras


def keras_arrived():
    """Patch the keras just imported, if the guard says so. Never raises:
    an exception here would fail the user's `import keras`."""
    import logging
    with lock:
        disarm()
        try:
            keras, models = _keras_models()
            reason = _apply(keras, models, _env_flag(FORCE, default=False))
            logging.getLogger("keras_clone_fix").info(reason)
        except Exception as error:
            state.reason = "activation failed: {}: {}".format(type(error).__name__, error)
            warn(state.reason + "; clone_model is not patched")


def disarm():
    """Stop waiting for keras (lock held)."""
    if state.watcher in sys.meta_path:
        sys.meta_path.remove(state.watcher)
    state.watcher = None


class Status(object):
    """The fix's state in this process.

    patched: bool, keras.models._clone_functional_model is the fixed one.
    keras_version: str or None, the imported keras' version (None: not imported).
    reason: str, why it is patched or not, for people.
    activated_by: str or None, what asked for the fix.
    """

    __slots__ = ("patched", "keras_version", "reason", "activated_by")

    def __init__(self, patched, keras_version, reason, activated_by):
        self.patched, self.keras_version = patched, keras_version
        self.reason, self.activated_by = reason, activated_by

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self):
        return "Status({})".format(", ".join(
            "{}={!r}".format(name, getattr(self, name)) for name in self.__slots__))


def _keras_models():
    keras = sys.modules.get("keras")
    return keras, getattr(keras, "models", None)


def _decide(keras, force):
    """(patch?, reason) for an imported keras module."""
    from keras_clone_fix._affected import is_affected
    affected, reason = is_affected(getattr(keras, "__version__", None))
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
    return models is not None and state.wrapper is not None and (
        getattr(models, _TARGET, None) is state.wrapper)


def _apply(keras, models, force):
    """Patch an imported keras if the guard says so (lock held); returns reason."""
    should_patch, reason = _decide(keras, force)
    if not should_patch:
        state.reason = reason + "; not patched"
    elif not _is_installed(models):
        from keras_clone_fix._fix import UnsupportedCloneFunction
        try:
            state.original, state.wrapper = _wrap(models)
        except UnsupportedCloneFunction as error:
            state.reason = "{}; cannot be patched: keras.models.{} {}".format(
                reason, _TARGET, error)
            raise PatchError(state.reason)
        state.reason = reason + "; patched"
    return state.reason


def patch(force=False, source="keras_clone_fix.patch()"):
    """Import keras and patch it if this release is affected; returns status()."""
    try:
        # Not under the lock: a thread importing keras meanwhile holds keras'
        # import lock and waits for ours in keras_arrived().
        import keras  # noqa: F401  (the caller asked for keras)
    except ImportError as error:
        with lock:
            state.reason = "keras cannot be imported: {}".format(error)
            return status()
    with lock:
        disarm()
        state.activated_by = source
        _apply(*_keras_models(), force=force)
        return status()


def unpatch():
    """Put back keras' own clone routine and stop waiting for keras; returns status()."""
    with lock:
        disarm()
        keras, models = _keras_models()
        if _is_installed(models):
            setattr(models, _TARGET, state.original)
        state.wrapper = state.original = state.activated_by = None
        state.reason = "unpatched by keras_clone_fix.unpatch()"
        return status()


def status():
    """The fix's state in this process; imports nothing."""
    with lock:
        keras, models = _keras_models()
        reason = state.reason
        if reason is None:
            reason = ("waiting for `import keras`" if state.watcher is not None
                      else "keras is not imported")
        return Status(patched=_is_installed(models),
                      keras_version=getattr(keras, "__version__", None),
                      reason=reason, activated_by=state.activated_by)


def save_state():
    """What restore_state() needs to put this process back as it is now."""
    with lock:
        return (_is_installed(_keras_models()[1]), state.watcher is not None,
                state.activated_by, state.reason)


def restore_state(saved):
    """Undo patch()/unpatch() calls made since save_state()."""
    was_patched, was_waiting, activated_by, reason = saved
    with lock:
        # Waiting meant "patch when keras arrives": if it arrived meanwhile,
        # patched is the state the wait would have led to.
        keras_arrived = was_waiting and "keras" in sys.modules
        if not keras_arrived:
            if not was_patched:
                unpatch()
            if was_waiting:
                _arm()
            state.reason = reason
        state.activated_by = activated_by
