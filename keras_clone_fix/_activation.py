"""Activation: patch, unpatch and status, and the work of the import trigger.

Loaded when a family (keras, tensorflow) arrives or when the API is used,
never at interpreter start (that is the package's __init__). wrapt and the
fix itself are imported only to patch an affected release.

Whether a target is patched is read from the target: our wrapper
(`FixedFunction`, whose `__wrapped__` is the original) is in the chain of
wrappers there, or it is not. Nothing else records it, so status() cannot
drift from what runs, whatever reloads, restores or other patchers did
meanwhile. Other tools' wrappers are lived with: ours goes in right around
Keras's original, under any wrapt proxies there, and comes out from under
them; inside another tool's closure it can be found but not taken out.

The wait for a family is not wrapt's post-import hook: that would import
wrapt in every interpreter, at start. It is the same idea in a few
lines: the package's `sys.meta_path` finder answers only for the families;
on Python 3, watch() lets the other finders find the family and hands back
its spec with a loader that calls arrived() once the family's `__init__`
has run. That loader stands in only while the module executes; afterwards
its `__loader__` and `__spec__.loader` are the real loader again. On Python
2, whose finders have no specs, load() imports the family through the
other finders and then calls arrived().
"""

import contextlib
import importlib
import os
import sys
import types

from keras_clone_fix import (
    FAMILIES, KerasCloneFixWarning, PatchError, _arm, _env_flag, _env_switch, _state)
from keras_clone_fix._affected import (
    bugs_of, fronted_family, imported_version, is_affected, target_name, targets_for)
from keras_clone_fix._bugs import LISTED_BY

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
            _apply([family], _forced(None))
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
        _apply([family for family in FAMILIES if _imported(family)], _forced(None))
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


class _Record(object):
    """Named fields, set by keyword. (Not collections.namedtuple: that costs
    0.3 ms a class on Python 3.6, in every patch().)"""

    __slots__ = ()

    def __init__(self, **fields):
        for name in self.__slots__:
            setattr(self, name, fields[name])

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self):
        return "{}({})".format(type(self).__name__, ", ".join(
            "{}={!r}".format(name, getattr(self, name)) for name in self.__slots__))


class Status(_Record):
    """The fix's state in this process.

    patched: bool, every target of the imported families is patched (and
        there is at least one).
    targets: dict, each patch target of the imported releases
        (module.function or module.Class.method) -> whether calling it runs
        the fix: our wrapper is in the chain of wrappers there.
    keras_version, tensorflow_version: str or None (None: not imported).
    reason: str, why it is patched or not, for people.
    activated_by: str or None, what asked for the fix.
    """

    __slots__ = ("patched", "targets", "keras_version", "tensorflow_version", "reason",
                 "activated_by")


def _forced(force):
    """Whether to patch unrecognised versions: `force`, or where it is None,
    KERAS_CLONE_FIX_FORCE (every way in reads it)."""
    return _env_flag(FORCE, default=False) if force is None else force


def _decide(family, version, force):
    """(patch?, reason) for an imported family of this version."""
    affected, reason = is_affected(family, version)
    if affected is None:
        if force:
            return True, reason + "; forced"
        if _env_switch(FORCE):
            # Set, and overridden by patch(force=False): setting it is no advice.
            return False, reason + " (not forced: force=False overrides {}={})".format(
                FORCE, os.environ[FORCE])
        return False, reason + " (set {}=1 to patch it anyway)".format(FORCE)
    return affected, reason


def _resolve(target):
    """(owner, name, object) of a target, importing its module: the module
    or class holding it. Raises UnsupportedFunction if it is not there."""
    from keras_clone_fix._runtime import UnsupportedFunction
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
    from keras_clone_fix._runtime import UnsupportedFunction
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


# How far _links() looks: chains of wrappers are a few deep; the bound
# keeps a pathological object graph (a mock answering every attribute) cheap.
MAX_LINKS = 64


def _inner(function):
    """The callables `function` calls into, as far as can be seen: a
    classmethod's function, its `__wrapped__` (wrapt proxies, functools.wraps
    on Python 3), or else the callables in a plain function's closure (a
    closure, or functools.wraps on Python 2, which sets no `__wrapped__`)."""
    # The type itself: a wrapt proxy passes isinstance() for what it wraps.
    if type(function) is classmethod:  # Keras's from_config, or another tool's classmethod
        return [function.__func__]
    wrapped = getattr(function, "__wrapped__", None)
    if wrapped is not None:
        return [wrapped]
    if type(function) is types.FunctionType and function.__closure__:
        inner = []
        for cell in function.__closure__:
            try:
                if callable(cell.cell_contents):
                    inner.append(cell.cell_contents)
            except ValueError:  # an empty cell
                pass
        return inner
    return []


def _links(top):
    """(holder, object) for `top` (holder None: the target itself) and for
    each callable reachable from it through _inner(), depth first: the
    chain of wrappers at a target. Bounded, and each object once."""
    seen = set()
    pending = [(None, top)]
    while pending and len(seen) < MAX_LINKS:
        holder, function = pending.pop()
        if id(function) not in seen:
            seen.add(id(function))
            yield holder, function
            pending.extend((function, inner) for inner in reversed(_inner(function)))


def _changeable(holder):
    """Whether what `holder` holds can be changed: the target itself, or a
    wrapt proxy (its `__wrapped__` is what it calls). Not a closure: what it
    calls is in a cell (which Python 2 cannot set), and functools.wraps's
    `__wrapped__` only records it."""
    wrapt = sys.modules.get("wrapt")
    # wrapt 2 made ObjectProxy a subclass of the proxies' base.
    proxy = wrapt and getattr(wrapt, "BaseObjectProxy", wrapt.ObjectProxy)
    return holder is None or (proxy is not None and isinstance(holder, proxy))


def _spine(top):
    """The changeable links from the top: the target, then each wrapt
    proxy's `__wrapped__` down to the first object that is none."""
    spine = []
    for link in _links(top):
        if not _changeable(link[0]):
            break
        spine.append(link)
    return spine


def _ours(top):
    """(holder, our wrapper) in the chain at a target, or None."""
    return next(((holder, function) for holder, function in _links(top) if is_fixed(function)),
                None)


def _put(owner, name, holder, function):
    """Make `holder` (None: the target owner.name) hold `function`."""
    if holder is None:
        setattr(owner, name, function)
    else:
        holder.__wrapped__ = function


def _stays_patched(target, holder):
    """Why our wrapper at this target cannot be taken out."""
    if type(holder) is types.FunctionType:
        code = holder.__code__
        holder = "the function {} at {}:{}".format(holder.__name__, code.co_filename,
                                                    code.co_firstlineno)
    return ("{} stays patched: the fix is held inside {} (another tool's wrapper), "
            "which cannot be changed".format(target_name(target), holder))


def function_of(original):
    """The function Keras's original at a target runs: a classmethod's own
    (a model's from_config). The wrapper goes around the classmethod, and
    wrapt gives it the class as the instance, the twin's first argument."""
    return original.__func__ if type(original) is classmethod else original


def _wrap(target):
    """Install the fixed twin of a target around its original: at the
    target, or under the wrapt proxies there (their wrappers still run,
    then ours). Another tool's closure or replacement is not Keras's
    function: build_fixed refuses it."""
    from keras_clone_fix import _fix

    owner, name, top = _resolve(target)
    holder, original = _spine(top)[-1]
    fixed = _fix.build_fixed(function_of(original), target.rules, target.decorator)

    def call_fixed(wrapped, instance, args, kwargs):
        if instance is None:  # a function of a module
            return fixed(*args, **kwargs)
        return fixed(instance, *args, **kwargs)

    # Wrapped here rather than by wrapt.wrap_function_wrapper, whose own
    # lookup of a method on Python 2 (wrapt 1.10) would wrap the unbound
    # method, not the function that unpatch() puts back.
    _put(owner, name, holder, _fixed_function_type()(original, call_fixed))


def _targets(families):
    """The targets of the imported releases of these families."""
    return [target for family in families
            for target in targets_for(family, imported_version(family))]


def _installed(families):
    """{target name: the changeable links of the chain at that target now,
    the target's own first} for these families: what restore_state() puts
    back."""
    found = ((target_name(target), _found(target)) for target in _targets(families))
    return {name: [link for link in _links(at[2]) if _changeable(link[0])]
            for name, at in found if at is not None}


def _apply(families, force):
    """Patch these imported families where the guard says so (lock held):
    every target that can be patched is, and PatchError names those that
    cannot."""
    from keras_clone_fix._runtime import UnsupportedFunction
    failures = []
    # A front decided while its fronted family was not imported yet waited
    # for it: decided again now that it is.
    families = list(families) + [
        front for front in FAMILIES if front not in families and _imported(front)
        and fronted_family(front, imported_version(front)) in families]
    for family in families:
        version = imported_version(family)
        should_patch, reason = _decide(family, version, force)
        cannot = []
        if should_patch:
            for target in targets_for(family, version):
                found = _found(target)
                if found is None or _ours(found[2]) is None:
                    try:
                        _wrap(target)
                    except UnsupportedFunction as error:
                        cannot.append("{} {}".format(target_name(target), error))
        failures.extend(cannot)
        if should_patch and not targets_for(family, version):  # forced, 'custom': no release
            should_patch, reason = False, reason + "; no release to take the targets of"
        fronted = fronted_family(family, version)
        if not should_patch and fronted and not _imported(fronted):
            # tf.keras of TensorFlow 2.6 - 2.15 imports keras when first used.
            decision = reason + "; waiting for `import {}`".format(fronted)
        else:
            decision = reason + ("; not patched" if not should_patch else
                                 "; cannot patch " + "; ".join(cannot) if cannot else
                                 "; patched")
        state.decisions = dict(state.decisions, **{family: decision})
    decided = [family for family in FAMILIES if family in state.decisions]
    state.reason = "; ".join([state.decisions[family] for family in decided] + (
        [LISTED_BY] if any(bugs_of(family, imported_version(family)) for family in decided)
        else []))
    if failures:
        raise PatchError(state.reason)


def _take_out(target):
    """Take our wrapper out of the chain at a target, Keras's original
    back where it was; why it stays, where another tool's closure holds it."""
    found = _found(target)
    ours = found and _ours(found[2])
    if ours and _changeable(ours[0]):
        _put(found[0], found[1], ours[0], ours[1].__wrapped__)
    elif ours:
        return _stays_patched(target, ours[0])
    return None


def _unwrap(families):
    """_take_out() at every target of these families (lock held); why the
    fix stays at some, if it does."""
    stays = (_take_out(target) for target in _targets(families))
    return [why for why in stays if why is not None]


def _wait_for_the_rest():
    """Wait for the families not imported yet, if any (lock held)."""
    if all(_imported(family) for family in FAMILIES):
        disarm()
    else:
        _arm()


def patch(force=None, source="keras_clone_fix.patch()"):
    """Import the installed families, patch the affected ones, wait for the
    others; returns status(). force=None: KERAS_CLONE_FIX_FORCE decides."""
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
            _apply(families, _forced(force))
        else:
            state.reason = "; ".join(missing)
        return status()


def unpatch():
    """Put back the original functions (the very same objects) and stop
    waiting for imports; returns status()."""
    with lock:
        disarm()
        stays = _unwrap(FAMILIES)
        if stays:
            warn("unpatch(): " + "; ".join(stays))
        state.activated_by = None
        state.decisions = {}
        state.reason = "unpatched by keras_clone_fix.unpatch()"
        return status()


def status():
    """The fix's state in this process, read from the targets; imports nothing."""
    with lock:
        targets = {}
        stays = []
        for target in _targets(FAMILIES):
            found = _found(target)
            ours = found and _ours(found[2])
            targets[target_name(target)] = bool(ours)
            if ours and state.activated_by is None and not _changeable(ours[0]):
                stays.append(_stays_patched(target, ours[0]))
        reason = state.reason
        if reason is None:
            reason = "waiting for {}".format(" or ".join(
                "`import {}`".format(family) for family in FAMILIES if not _imported(family))
            ) if state.watcher is not None else "not activated"
        return Status(patched=bool(targets) and all(targets.values()), targets=targets,
                      keras_version=imported_version("keras"),
                      tensorflow_version=imported_version("tensorflow"),
                      reason="; ".join([reason] + stays), activated_by=state.activated_by)


class Saved(_Record):
    """What save_state() saw: the imported families, the objects at their
    targets, whether the fix waited for the others, and its bookkeeping."""

    __slots__ = ("families", "objects", "waiting", "activated_by", "reason", "decisions")


def save_state():
    """What restore_state() needs to put this process back as it is now:
    the very objects at every target of the imported families, and those
    held by the wrapt proxies there, and whether the fix waits for the
    others."""
    with lock:
        families = [family for family in FAMILIES if _imported(family)]
        return Saved(families=families, objects=_installed(families),
                     waiting=state.watcher is not None, activated_by=state.activated_by,
                     reason=state.reason, decisions=state.decisions)


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
                for holder, function in saved.objects[name]:
                    _put(owner, attribute, holder, function)
        arrived_since = [family for family in FAMILIES
                         if family not in saved.families and _imported(family)]
        state.activated_by, state.reason, state.decisions = (
            saved.activated_by, saved.reason, saved.decisions)
        if saved.waiting:
            try:
                _apply(arrived_since, _forced(None))
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
