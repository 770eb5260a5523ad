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

import collections
import importlib
import sys

from keras_clone_fix import KerasCloneFixWarning, PatchError, _arm, _env_flag, _state
from keras_clone_fix._affected import is_affected, target_name, targets_for

FORCE = "KERAS_CLONE_FIX_FORCE"
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
            _apply(_env_flag(FORCE, default=False))
            logging.getLogger("keras_clone_fix").info(state.reason)
        except PatchError:
            warn(state.reason + "; those run unpatched")
        except Exception as error:
            _uninstall()
            state.reason = "activation failed: {}: {}".format(type(error).__name__, error)
            warn(state.reason + "; keras is not patched")


def disarm():
    """Stop waiting for keras (lock held)."""
    if state.watcher in sys.meta_path:
        sys.meta_path.remove(state.watcher)
    state.watcher = None


class Status(object):
    """The fix's state in this process.

    patched: bool, every target this keras needs is patched.
    targets: dict, each patch target of this keras (module.function or
        module.Class.method) -> whether it is patched now.
    keras_version: str or None, the imported keras' version (None: not imported).
    reason: str, why it is patched or not, for people.
    activated_by: str or None, what asked for the fix.
    """

    __slots__ = ("patched", "targets", "keras_version", "reason", "activated_by")

    def __init__(self, patched, targets, keras_version, reason, activated_by):
        self.patched, self.targets, self.keras_version = patched, targets, keras_version
        self.reason, self.activated_by = reason, activated_by

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self):
        return "Status({})".format(", ".join(
            "{}={!r}".format(name, getattr(self, name)) for name in self.__slots__))


Installed = collections.namedtuple("Installed", "owner name original wrapper")


def _keras_version():
    return getattr(sys.modules.get("keras"), "__version__", None)


def _decide(version, force):
    """(patch?, reason) for an imported keras of this version."""
    affected, reason = is_affected(version)
    if affected is None:
        if force:
            return True, reason + "; forced"
        return False, reason + " (set {}=1 to patch it anyway)".format(FORCE)
    return affected, reason


def _resolve(target):
    """(owner, name, object) of a target: the module or class holding it."""
    from keras_clone_fix._fix import UnsupportedFunction
    try:
        owner = importlib.import_module(target.module)
        path = target.attribute.split(".")
        for part in path[:-1]:
            owner = getattr(owner, part)
        return owner, path[-1], vars(owner)[path[-1]]
    except (ImportError, AttributeError, KeyError) as error:
        raise UnsupportedFunction("is not there ({}: {})".format(type(error).__name__, error))


def _wrap(target):
    """Wrap a target with its fixed twin; returns Installed."""
    import wrapt
    from keras_clone_fix import _fix

    owner, name, original = _resolve(target)
    fixed = _fix.build_fixed(original, [getattr(_fix, rule) for rule in target.rules])

    def call_fixed(wrapped, instance, args, kwargs):
        if instance is None:  # a function of a module
            return fixed(*args, **kwargs)
        return fixed(instance, *args, **kwargs)

    # Wrapped here rather than by wrapt.wrap_function_wrapper, whose own
    # lookup of a method on Python 2 (wrapt 1.10) would wrap the unbound
    # method, not the function that unpatch() puts back.
    wrapper = wrapt.FunctionWrapper(original, call_fixed)
    setattr(owner, name, wrapper)
    return Installed(owner, name, original, wrapper)


def _is_installed(name):
    installed = state.installed.get(name)
    return installed is not None and vars(installed.owner).get(installed.name) is installed.wrapper


def _targets_status(version):
    return {target_name(target): _is_installed(target_name(target))
            for target in targets_for(version)}


def _uninstall():
    """Put back the original of every target we patched (lock held)."""
    for name, installed in state.installed.items():
        if _is_installed(name):
            setattr(installed.owner, installed.name, installed.original)
    state.installed.clear()


def _apply(force):
    """Patch the imported keras if the guard says so (lock held): every
    target that can be patched is, and PatchError names those that cannot."""
    from keras_clone_fix._fix import UnsupportedFunction
    version = _keras_version()
    should_patch, reason = _decide(version, force)
    if not should_patch:
        state.reason = reason + "; not patched"
        return
    failures = []
    for target in targets_for(version):
        name = target_name(target)
        if not _is_installed(name):
            try:
                state.installed[name] = _wrap(target)
            except UnsupportedFunction as error:
                failures.append("{} {}".format(name, error))
    if failures:
        state.reason = "{}; cannot patch {}".format(reason, "; ".join(failures))
        raise PatchError(state.reason)
    state.reason = reason + "; patched"


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
        _apply(force)
        return status()


def unpatch():
    """Put back keras' own functions (the very same objects) and stop
    waiting for keras; returns status()."""
    with lock:
        disarm()
        _uninstall()
        state.activated_by = None
        state.reason = "unpatched by keras_clone_fix.unpatch()"
        return status()


def status():
    """The fix's state in this process; imports nothing."""
    with lock:
        version = _keras_version()
        targets = _targets_status(version)
        reason = state.reason
        if reason is None:
            reason = ("waiting for `import keras`" if state.watcher is not None
                      else "keras is not imported")
        return Status(patched=bool(targets) and all(targets.values()), targets=targets,
                      keras_version=version, reason=reason, activated_by=state.activated_by)


Saved = collections.namedtuple("Saved", "attributes installed waiting activated_by reason")


def save_state():
    """What restore_state() needs to put this process back as it is now:
    the very objects at every target of the imported keras, and our state."""
    from keras_clone_fix._fix import UnsupportedFunction
    with lock:
        attributes = []
        for target in targets_for(_keras_version()):
            try:
                attributes.append(_resolve(target))
            except UnsupportedFunction:
                pass  # nothing there to restore
        return Saved(attributes, dict(state.installed), state.watcher is not None,
                     state.activated_by, state.reason)


def restore_state(saved):
    """Undo patch()/unpatch() calls made since save_state()."""
    with lock:
        # Waiting meant "patch when keras arrives": if it arrived meanwhile,
        # patched is the state the wait would have led to.
        if not (saved.waiting and not saved.attributes and "keras" in sys.modules):
            disarm()
            for owner, name, value in saved.attributes:
                setattr(owner, name, value)
            state.installed.clear()
            state.installed.update(saved.installed)
            if saved.waiting:
                _arm()
            state.reason = saved.reason
        state.activated_by = saved.activated_by
