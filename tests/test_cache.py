"""The stored builds of _cache: used exactly when the build would give the
same function, on the real targets of the installed release."""

import inspect
import json
import linecache
import marshal
import os
import shutil
import sys
import textwrap

import pytest

try:
    from shutil import which
except ImportError:  # Python 2
    from distutils.spawn import find_executable as which

from conftest import RELEASE_TARGETS, run_python
from keras_clone_fix import _activation, _build, _cache, _fix, _runtime
from keras_clone_fix._affected import target_name

TARGETS = [target for targets in RELEASE_TARGETS.values() for target in targets]
pytestmark = [pytest.mark.activation,
              pytest.mark.skipif(not TARGETS, reason="needs an affected keras or tf.keras")]


def keras_function(target):
    """Keras's own function at a target, under any wrapper there."""
    _, _, top = _activation._resolve(target)
    return _activation.function_of(_activation._spine(top)[-1][1])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The cache in a directory of the test's own, written as where bytecode
    is (whatever PYTHONDONTWRITEBYTECODE says here); the full builds counted."""
    monkeypatch.setattr(_cache, "DIRECTORY", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    builds = []
    factory_code = _build.factory_code

    def counted(original, rule_names, decorator=None):
        builds.append(original)
        return factory_code(original, rule_names, decorator)
    monkeypatch.setattr(_build, "factory_code", counted)
    return builds


def entries():
    return sorted(os.listdir(_cache.DIRECTORY)) if os.path.isdir(_cache.DIRECTORY) else []


@pytest.mark.parametrize("target", TARGETS,  # ids as a list: none to make without keras
                         ids=[target_name(target) for target in TARGETS])
def test_the_stored_build_is_the_same_function(cache, target):
    original = keras_function(target)
    built = _fix.build_fixed(original, target.rules, target.decorator)
    assert len(entries()) == 1 and len(cache) == 1
    read = _fix.build_fixed(original, target.rules, target.decorator)
    assert len(cache) == 1  # no second build

    def twin(function):  # the fixed def, which a decorated target's wrapper calls
        return function.__wrapped__ if target.decorator else function
    assert twin(read).__code__ == twin(built).__code__ and read is not built
    assert twin(read).__globals__ is twin(original).__globals__


def copy_of(target, directory, above=""):
    """Keras's function at a target, compiled from a file of its own (as a
    top-level def, `above` before it) as an import would: its source on disk."""
    path = str(directory / "copied.py")
    source = above + textwrap.dedent(inspect.getsource(keras_function(target)))
    with open(path, "w") as written:
        written.write(source)
    namespace = {"__name__": "copied"}
    exec(compile(source, path, "exec", dont_inherit=True), namespace)
    return namespace[target.attribute.split(".")[-1]]


def test_a_changed_file_is_built_again(cache, tmp_path):
    """The entry of a function whose file then changed is not served: the
    build is made again, at the function's new lines; the function that
    still runs the old code is refused, as without the cache."""
    target = TARGETS[0]
    before = copy_of(target, tmp_path)
    _fix.build_fixed(before, target.rules)
    after = copy_of(target, tmp_path, above="# two lines\n# more\n")
    fixed = _fix.build_fixed(after, target.rules)
    assert len(cache) == 2 and len(entries()) == 1  # rewritten in place
    assert fixed.__code__.co_firstlineno == before.__code__.co_firstlineno + 2
    with pytest.raises(_runtime.UnsupportedFunction, match="does not match the running code"):
        _fix.build_fixed(before, target.rules)


def changed_key(field, value):
    def change(key, running):
        key = list(key)
        key[field] = value
        return tuple(key), running
    return change


# Entries as another build would have left them: each is a miss.
OTHER_BUILDS = {
    "another format": changed_key(0, _cache.FORMAT + 1),
    "another Python": changed_key(1, "2.7.18 (default)"),
    "another -O level": changed_key(2, 2),
    "other rules": changed_key(3, b"other rules"),
    "another list of rules": lambda key, running: (
        key[:4] + (key[4] + ("AnotherRule",),) + key[5:], running),
    "another file": changed_key(5, "/elsewhere/network.py"),
    "another size of the file": lambda key, running: (
        key[:6] + ((key[6][0] + 1, key[6][1]),), running),
    "another modification time": lambda key, running: (
        key[:6] + ((key[6][0], key[6][1] - 1),), running),
    "other running code": lambda key, running: (
        key, test_entries_of_other_builds_miss.__code__),
}


def build_and_alter_the_entry(original, rules, alter):
    """Build once, then rewrite the one entry stored as alter(key, running,
    factory, helpers) returns it."""
    _fix.build_fixed(original, rules)
    (name,) = entries()
    path = os.path.join(_cache.DIRECTORY, name)
    with open(path, "rb") as stored:
        entry = marshal.loads(stored.read())
    with open(path, "wb") as stored:
        stored.write(marshal.dumps(alter(*entry)))


@pytest.mark.parametrize("other", sorted(OTHER_BUILDS))
def test_entries_of_other_builds_miss(cache, other):
    target = TARGETS[0]
    original = keras_function(target)
    build_and_alter_the_entry(original, target.rules, lambda key, running, factory, helpers: (
        OTHER_BUILDS[other](key, running) + (factory, helpers)))
    _fix.build_fixed(original, target.rules)
    assert len(cache) == 2
    _fix.build_fixed(original, target.rules)  # the entry was written anew
    assert len(cache) == 2


def test_an_entry_calling_a_helper_we_do_not_have_misses(cache):
    target = TARGETS[0]
    original = keras_function(target)
    build_and_alter_the_entry(original, target.rules, lambda key, running, factory, helpers: (
        key, running, factory, helpers + ("removed_since",)))
    _fix.build_fixed(original, target.rules)
    assert len(cache) == 2


def test_a_function_whose_file_is_not_on_disk_is_never_stored(cache, monkeypatch):
    """Source only in linecache (no file to stamp): built every time."""
    target = TARGETS[0]
    source = textwrap.dedent(inspect.getsource(keras_function(target)))
    filename = "<keras source held in memory>"
    monkeypatch.setitem(linecache.cache, filename, (len(source), None,
                                                    source.splitlines(True), filename))
    namespace = {"__name__": "in_memory"}
    exec(compile(source, filename, "exec", dont_inherit=True), namespace)
    function = namespace[target.attribute.split(".")[-1]]
    for _ in range(2):
        _fix.build_fixed(function, target.rules)
    assert len(cache) == 2 and entries() == []


@pytest.mark.parametrize("content", [b"", b"not marshal", b"\xe3" * 40,
                                     marshal.dumps((1, 2, 3, 4)), marshal.dumps(None)])
def test_unreadable_entries_miss(cache, content):
    target = TARGETS[0]
    original = keras_function(target)
    _fix.build_fixed(original, target.rules)
    (name,) = entries()
    with open(os.path.join(_cache.DIRECTORY, name), "wb") as stored:
        stored.write(content)
    _fix.build_fixed(original, target.rules)
    assert len(cache) == 2


def test_nothing_is_written_where_bytecode_is_not(cache, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    target = TARGETS[0]
    _fix.build_fixed(keras_function(target), target.rules)
    assert entries() == [] and len(cache) == 1


def test_a_directory_that_cannot_be_made_is_no_error(cache, tmp_path, monkeypatch):
    (tmp_path / "a-file").write_text(u"")
    monkeypatch.setattr(_cache, "DIRECTORY", str(tmp_path / "a-file" / "cache"))
    target = TARGETS[0]
    _fix.build_fixed(keras_function(target), target.rules)
    _fix.build_fixed(keras_function(target), target.rules)
    assert len(cache) == 2


PATCH_AND_SAY_IF_BUILT = """
import sys
import keras_clone_fix
from keras_clone_fix import _cache
_cache.DIRECTORY = sys.argv[1]
status = keras_clone_fix.patch()
# A build needs the rules; reading an entry does not import them.
print("{} {}".format(status.patched, "keras_clone_fix._build" in sys.modules))
"""


def test_a_new_interpreter_patches_from_the_entries(tmp_path):
    """The first interpreter builds every target and stores it; the next
    patches without building, or importing the rules."""
    directory = str(tmp_path / "cache")
    runs = [run_python(["-c", PATCH_AND_SAY_IF_BUILT, directory],
                       env={"KERAS_CLONE_FIX": "0", "PYTHONDONTWRITEBYTECODE": None})
            for _ in range(2)]
    assert [run.stdout.split() for run in runs] == [
        ["True", "True"], ["True", "False"]], runs[0].stderr + runs[1].stderr
    assert len(os.listdir(directory)) == len(TARGETS)


# A later interpreter of a read-only install: imports the package (which
# activates), tries to write beside it, imports the families.
LATER_INTERPRETER = """
import json, os, sys
import keras_clone_fix
package = os.path.dirname(os.path.abspath(keras_clone_fix.__file__))
try:
    open(os.path.join(package, "written"), "w").close()
    writable = True
except (IOError, OSError):
    writable = False
for family in ("keras", "tensorflow"):  # those installed: patched on arrival
    try:
        __import__(family)
    except ImportError:
        pass
print(json.dumps({"package": package, "writable": writable,
                  "patched": keras_clone_fix.status().patched,
                  "built": "keras_clone_fix._build" in sys.modules}))
"""


def installed_copy(tmp_path):
    """A copy of the installed package, none of its builds stored, on a
    PYTHONPATH of its own."""
    import keras_clone_fix
    site = tmp_path / "site"
    shutil.copytree(os.path.dirname(os.path.abspath(keras_clone_fix.__file__)),
                    str(site / "keras_clone_fix"), ignore=shutil.ignore_patterns("__pycache__"))
    return str(site)


def later_interpreter(site, python):
    """LATER_INTERPRETER on the copy at `site`, made read-only first: by its
    modes, and for root (whom modes do not stop) by a read-only bind mount
    in a mount namespace of its own (unshare)."""
    for directory, _, files in os.walk(site):
        for name in [directory] + [os.path.join(directory, name) for name in files]:
            os.chmod(name, os.stat(name).st_mode & ~0o222)
    command = [python, "-c", LATER_INTERPRETER]
    if os.getuid() == 0:
        if not which("unshare"):
            pytest.skip("root writes through modes: needs unshare for a read-only mount")
        command = ["unshare", "-rm", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"',
                   site] + command
    finished = run_python(command[1:], python=command[0],
                          env={"PYTHONPATH": site, "PYTHONDONTWRITEBYTECODE": None})
    assert finished.returncode == 0, finished.stderr
    report = json.loads(finished.stdout.splitlines()[-1])
    assert report["package"].startswith(site) and not report["writable"], report
    return report


@pytest.fixture
def restore_modes(tmp_path):
    """pytest must be able to remove what later_interpreter made read-only."""
    yield
    for directory, _, _ in os.walk(str(tmp_path)):
        os.chmod(directory, 0o755)


def test_a_read_only_install_builds_in_every_interpreter(tmp_path, restore_modes,
                                                         python_without_pth):
    """What the self-check run once after installing saves them."""
    report = later_interpreter(installed_copy(tmp_path), python_without_pth)
    assert report["patched"] and report["built"], report


def test_the_self_check_after_installing_stores_the_builds_for_a_read_only_install(
        tmp_path, restore_modes, python_without_pth):
    site = installed_copy(tmp_path)
    stored = run_python(["-m", "keras_clone_fix"], python=python_without_pth,
                        env={"PYTHONPATH": site, "PYTHONDONTWRITEBYTECODE": None})
    assert stored.returncode == 0, stored.stdout + stored.stderr
    entries = [name for name in os.listdir(os.path.join(site, "keras_clone_fix", "__pycache__"))
               if name.endswith(".fixed")]
    assert len(entries) == len(TARGETS), entries  # every target of every affected family
    report = later_interpreter(site, python_without_pth)
    assert report["patched"] and not report["built"], report
