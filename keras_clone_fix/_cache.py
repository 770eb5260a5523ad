"""Fixed functions kept on disk, so that patch() does not parse, check and
compile Keras's source again in every interpreter of an environment.

Building a fixed function (_build.factory_code) is a pure function of: the
Python that compiles it (version, -O level), our rules (the text of
RULE_MODULES, the names of the rules applied), the file the original function
is in (its name, size and modification time, as a .pyc records its source's)
and the original's running code (compared whole: bytecode, constants,
names, first line). An entry holds all of those beside the compiled
result, and is used only when every one of them is equal to what is
installed and running now: an edited Keras file, a stale .pyc, another
Python, another text of the rules or a function put in the target's place
by another tool all miss, and the full build (every rule, the
source-to-bytecode check) runs again. The running code, compared whole, is
what makes a stale build impossible; the file's size and time stand for its
text, as for Python's own .pyc: the text is neither read back nor hashed.

Entries live in the package's own __pycache__, one file per function
(module.qualname) and Python, rewritten when it misses: a handful of files
whatever the user does. Like Python's .pyc files, they are written only
where the interpreter may write bytecode (not under -B or
PYTHONDONTWRITEBYTECODE) and the directory is writable, by a rename that
readers never see half done; an entry that cannot be read is a miss.
Nothing here ever raises.
"""

import marshal
import os
import sys

FORMAT = 2
PACKAGE = os.path.dirname(os.path.abspath(__file__))
DIRECTORY = os.path.join(PACKAGE, "__pycache__")
# The build and the rules, whose text keys every entry.
RULE_MODULES = ("_build", "_rewrite", "_argument_rules", "_clone_rules", "_config_rules",
                "_mask_rules")
_PYTHON_TAG = getattr(getattr(sys, "implementation", None), "cache_tag", None) or \
    "python-{}{}".format(*sys.version_info[:2])


def read_bytes(path):
    """A file's bytes; None if it cannot be read."""
    try:
        with open(path, "rb") as read:
            return read.read()
    except (IOError, OSError):
        return None


def rules_text():
    """The text of RULE_MODULES, as one; None if one cannot be read. Read
    once an interpreter: the six files take 0.1 ms (timeit), which each
    target's warm patch() would pay again."""
    global _rules_text
    if _rules_text is None:
        texts = [read_bytes(os.path.join(PACKAGE, name + ".py")) for name in RULE_MODULES]
        _rules_text = None if None in texts else b"".join(texts)
    return _rules_text


_rules_text = None


def _stamp(filename):
    """(size, modification time) of a file; None if it has none (not a file)."""
    try:
        found = os.stat(filename)
    except (OSError, TypeError, ValueError):
        return None
    return found.st_size, getattr(found, "st_mtime_ns", found.st_mtime)  # Python 2: no _ns


def key(original, rule_names, rules_text):
    """What a build of `original` with these rules depends on, besides the
    running code: `rules_text` is read_bytes() of the rules (None: no
    entry). Taken before a build reads the file."""
    filename = original.__code__.co_filename
    stamp = _stamp(filename)
    if rules_text is None or stamp is None:
        return None
    return (FORMAT, sys.version, sys.flags.optimize, rules_text, tuple(rule_names), filename,
            stamp)


def _path(original):
    name = getattr(original, "__qualname__", original.__name__)  # Python 2: no __qualname__
    return os.path.join(DIRECTORY, "{}.{}.{}.fixed".format(original.__module__, name,
                                                           _PYTHON_TAG))


def read(original, entry_key):
    """(factory code, helper names) stored for this key and running code, or None."""
    if entry_key is None:
        return None
    try:
        with open(_path(original), "rb") as stored:
            stored_key, running, factory, helpers = marshal.loads(stored.read())
        if stored_key == entry_key and running == original.__code__:
            return factory, helpers
    except Exception:  # missing, unreadable, truncated, another format
        pass
    return None


def write(original, entry_key, factory, helpers):
    """Store a build; silently nothing where bytecode may not be written."""
    if sys.dont_write_bytecode or entry_key is None:
        return
    import tempfile  # here: the reading path does without its imports
    scratch = None
    try:
        if not os.path.isdir(DIRECTORY):
            os.makedirs(DIRECTORY)
        handle, scratch = tempfile.mkstemp(dir=DIRECTORY, suffix=".tmp")
        with os.fdopen(handle, "wb") as written:
            written.write(marshal.dumps((entry_key, original.__code__, factory, tuple(helpers))))
        os.rename(scratch, _path(original))  # atomic on POSIX
        scratch = None
    except Exception:  # read-only, full, raced: the next patch() builds again
        pass
    finally:
        if scratch is not None:
            try:
                os.remove(scratch)
            except OSError:
                pass
