"""Activation: patch, unpatch and status, and the work of the import trigger.

Loaded when a family (keras, tensorflow) arrives or when the API is used,
never at interpreter start (that is the package's __init__). wrapt and the
fix itself are imported only to patch an affected release.

Whether a target is patched is read from the target: our wrapper is there
(`FixedFunction`, whose `__wrapped__` is the original) or it is not. Nothing
else records it, so status() cannot drift from what runs, whatever reloads,
restores or other patchers did meanwhile.

The wait for a family is not wrapt's post-import hook: importing wrapt costs
20 - 95 ms, too much for every interpreter. It is the same idea in a few
lines: the package's `sys.meta_path` finder answers only for the families;
on Python 3, watch() lets the other finders find the family and hands back
its spec with a loader that calls arrived() once the family's `__init__`
has run. That loader stands in only while the module executes; afterwards
its `__loader__` and `__spec__.loader` are the real loader again. On Python
2, whose finders have no specs, load() imports the family through the
other finders and then calls arrived().
"""

import collections
import contextlib
import importlib
import sys

from keras_clone_fix import FAMILIES, KerasCloneFixWarning, PatchError, _arm, _env_flag, _state
from keras_clone_fix._affected import is_affected, target_name, targets_for

FORCE = "KERAS_CLONE_FIX_FORCE"
state = _state  # the package's: the watcher and the switch use it at start
lock = state.lock
# A class attribute of our wrapper: how a target is recognised as patched
# by us, by any copy of this module (importlib.reload makes new classes).
MARK = "keras_clone_fix_fixed_function"


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


def _past(watcher, name, find_or_import):
    """find_or_import(name) by the other finders: it comes back to the
    watcher, which must then let it pass."""
    watcher.finding.add(name)
    try:
        return find_or_import(name)
    finally:
        watcher.finding.discard(name)


def watch(watcher, family):
    """Python 3: the spec of a family, found by the other finders, loading
    so that arrived() runs once it is imported."""
    import importlib.util
    spec = _past(watcher, family, importlib.util.find_spec)
    if spec is not None and hasattr(spec.loader, "exec_module"):
        spec.loader = _LoaderThenCallback(spec.loader, lambda: arrived(family))
    return spec


def load(watcher, family):
    """Python 2's load_module: the family, imported by the other finders,
    then arrived(). A failed import raises as it would without us."""
    module = _past(watcher, family, importlib.import_module)
    arrived(family)
    return module


def arrived(family):
    """Patch a family just imported, if the guard says so. Never raises:
    an exception here would fail the user's import."""
    import logging
    with lock:
        if state.activated_by is None:
            # Unpatched, or activation failed, while this import was under
            # way (keras imports tensorflow): nothing asks for the fix now.
            return
        if all(_imported(name) for name in FAMILIES):
            disarm()
        try:
            _apply([family], _env_flag(FORCE, default=False))
            logging.getLogger("keras_clone_fix").info(state.reason)
        except PatchError:
            warn(state.reason + "; those run unpatched")
        except Exception as error:
            _fail(error)


def activate():
    """Patch the families imported now and wait for the others (lock held).
    Never raises."""
    _wait_for_the_rest()
    try:
        _apply([family for family in FAMILIES if _imported(family)],
               _env_flag(FORCE, default=False))
    except PatchError:
        warn(state.reason + "; those run unpatched")
    except Exception as error:
        _fail(error)


def _fail(error):
    """Activation failed unexpectedly: unpatched means unpatched, and stays
    so (lock held)."""
    disarm()
    state.activated_by = None
    _unwrap([family for family in FAMILIES if _imported(family)])
    state.reason = "activation failed: {}: {}".format(type(error).__name__, error)
    warn(state.reason + "; nothing is patched")


def disarm():
    """Stop waiting for imports (lock held)."""
    if state.watcher in sys.meta_path:
        sys.meta_path.remove(state.watcher)
    state.watcher = None


def _imported(family):
    return sys.modules.get(family) is not None


def _version(family):
    return getattr(sys.modules.get(family), "__version__", None)


class Status(object):
    """The fix's state in this process.

    patched: bool, every target of the imported families is patched (and
        there is at least one).
    targets: dict, each patch target of the imported releases
        (module.function or module.Class.method) -> whether our wrapper is
        installed there now.
    keras_version, tensorflow_version: str or None (None: not imported).
    reason: str, why it is patched or not, for people.
    activated_by: str or None, what asked for the fix.
    """

    __slots__ = ("patched", "targets", "keras_version", "tensorflow_version", "reason",
                 "activated_by")

    def __init__(self, **fields):
        for name in self.__slots__:
            setattr(self, name, fields[name])

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self):
        return "Status({})".format(", ".join(
            "{}={!r}".format(name, getattr(self, name)) for name in self.__slots__))


def _decide(family, version, force):
    """(patch?, reason) for an imported family of this version."""
    affected, reason = is_affected(family, version)
    if affected is None:
        if force:
            return True, reason + "; forced"
        return False, reason + " (set {}=1 to patch it anyway)".format(FORCE)
    return affected, reason


def _resolve(target):
    """(owner, name, object) of a target, importing its module: the module
    or class holding it. Raises UnsupportedFunction if it is not there."""
    from keras_clone_fix._fix import UnsupportedFunction
    try:
        owner = importlib.import_module(target.module)
        path = target.attribute.split(".")
        for part in path[:-1]:
            owner = getattr(owner, part)
        return owner, path[-1], vars(owner)[path[-1]]
    except (ImportError, AttributeError, KeyError) as error:
        raise UnsupportedFunction("is not there ({}: {})".format(type(error).__name__, error))


def _found(target):
    """_resolve() without importing: None where the target's module is not
    imported or the target is not there."""
    from keras_clone_fix._fix import UnsupportedFunction
    if sys.modules.get(target.module) is None:
        return None
    try:
        return _resolve(target)
    except UnsupportedFunction:
        return None


def is_fixed(function):
    """Whether `function` is our wrapper."""
    return bool(getattr(type(function), MARK, False))


def _fixed_function_type():
    """Our wrapper's class, made on first use: wrapt is imported only to patch."""
    if not _made:
        import wrapt

        class FixedFunction(wrapt.FunctionWrapper):
            """A patched target: calls the fixed twin; __wrapped__ is the original."""

        setattr(FixedFunction, MARK, True)
        _made.append(FixedFunction)
    return _made[0]


_made = []


def _wrap(target):
    """Install the fixed twin of a target, wrapping its original."""
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
    setattr(owner, name, _fixed_function_type()(original, call_fixed))


def _targets(families):
    """The targets of the imported releases of these families."""
    return [target for family in families for target in targets_for(family, _version(family))]


def _installed(families):
    """{target name: the object at that target now} for these families."""
    found = ((target_name(target), _found(target)) for target in _targets(families))
    return {name: at[2] for name, at in found if at is not None}


def _apply(families, force):
    """Patch these imported families where the guard says so (lock held):
    every target that can be patched is, and PatchError names those that
    cannot."""
    from keras_clone_fix._fix import UnsupportedFunction
    failures = []
    for family in families:
        version = _version(family)
        should_patch, reason = _decide(family, version, force)
        cannot = []
        if should_patch:
            for target in targets_for(family, version):
                found = _found(target)
                if found is None or not is_fixed(found[2]):
                    try:
                        _wrap(target)
                    except UnsupportedFunction as error:
                        cannot.append("{} {}".format(target_name(target), error))
        failures.extend(cannot)
        decision = reason + ("; not patched" if not should_patch else
                             "; cannot patch " + "; ".join(cannot) if cannot else "; patched")
        state.decisions = dict(state.decisions, **{family: decision})
    state.reason = "; ".join(state.decisions[family] for family in FAMILIES
                             if family in state.decisions)
    if failures:
        raise PatchError(state.reason)


def _unwrap(families):
    """Put back the original at every target of these families where our
    wrapper is (lock held)."""
    for target in _targets(families):
        found = _found(target)
        if found is not None and is_fixed(found[2]):
            owner, name, wrapper = found
            setattr(owner, name, wrapper.__wrapped__)


def _wait_for_the_rest():
    """Wait for the families not imported yet, if any (lock held)."""
    if all(_imported(family) for family in FAMILIES):
        disarm()
    else:
        _arm()


def patch(force=False, source="keras_clone_fix.patch()"):
    """Import the installed families, patch the affected ones, wait for the
    others; returns status()."""
    missing = []
    for family in FAMILIES:
        try:
            # Not under the lock: a thread importing it meanwhile holds its
            # import lock and waits for ours in arrived().
            importlib.import_module(family)
        except ImportError as error:
            missing.append("{} cannot be imported: {}".format(family, error))
    with lock:
        state.activated_by = source
        _wait_for_the_rest()
        families = [family for family in FAMILIES if _imported(family)]
        if families:
            _apply(families, force)
        else:
            state.reason = "; ".join(missing)
        return status()


def unpatch():
    """Put back the original functions (the very same objects) and stop
    waiting for imports; returns status()."""
    with lock:
        disarm()
        _unwrap(FAMILIES)
        state.activated_by = None
        state.decisions = {}
        state.reason = "unpatched by keras_clone_fix.unpatch()"
        return status()


def status():
    """The fix's state in this process, read from the targets; imports nothing."""
    with lock:
        targets = {target_name(target): False for target in _targets(FAMILIES)}
        targets.update((name, is_fixed(function)) for name, function in _installed(FAMILIES).items())
        reason = state.reason
        if reason is None:
            reason = "waiting for {}".format(" or ".join(
                "`import {}`".format(family) for family in FAMILIES if not _imported(family))
            ) if state.watcher is not None else "not activated"
        return Status(patched=bool(targets) and all(targets.values()), targets=targets,
                      keras_version=_version("keras"), tensorflow_version=_version("tensorflow"),
                      reason=reason, activated_by=state.activated_by)


Saved = collections.namedtuple("Saved", "families objects waiting activated_by reason decisions")


def save_state():
    """What restore_state() needs to put this process back as it is now:
    the very objects at every target of the imported families, and whether
    the fix waits for the others."""
    with lock:
        families = [family for family in FAMILIES if _imported(family)]
        return Saved(families, _installed(families), state.watcher is not None,
                     state.activated_by, state.reason, state.decisions)


def restore_state(saved):
    """Undo what happened to the fix since save_state(): the saved objects go
    back to their targets; a family imported since is patched if the fix
    was waiting for it then, and has its originals back otherwise."""
    with lock:
        disarm()
        for target in _targets(saved.families):
            name = target_name(target)
            if name in saved.objects:
                owner, attribute, _ = _resolve(target)
                setattr(owner, attribute, saved.objects[name])
        arrived_since = [family for family in FAMILIES
                         if family not in saved.families and _imported(family)]
        state.activated_by, state.reason, state.decisions = (
            saved.activated_by, saved.reason, saved.decisions)
        if saved.waiting:
            try:
                _apply(arrived_since, _env_flag(FORCE, default=False))
            except PatchError:
                pass  # as the wait would have: those stay unpatched, said in reason
            _wait_for_the_rest()
        else:
            _unwrap(arrived_since)


@contextlib.contextmanager
def restoring():
    """The fix's state afterwards is what it was before (the pytest fixture)."""
    saved = save_state()
    try:
        yield
    finally:
        restore_state(saved)
