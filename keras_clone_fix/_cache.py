"""Fixed functions kept on disk, so that patch() does not parse, check and
compile Keras's source again in every interpreter of an environment.

Building a fixed function (_fix.build_fixed) is a pure function of: the
Python that compiles it (version, -O level), our rules (the text of
_fix.py, the names of the rules applied), the file the original function
was read from (its whole text, as linecache reads it) and the original's
running code (compared whole: bytecode, constants, names, first line). An
entry holds all of those beside the compiled result, and is used only
when every one of them is equal to what is installed and running now: a
change to Keras's file, a stale .pyc, another Python, a new release of this
package or a function put in the target's place by another tool all miss,
and the full build (every rule, the source-to-bytecode check) runs again.

Entries live in the package's own __pycache__, one file per function
(module.qualname) and Python, rewritten when it misses: a handful of files
whatever the user does. Like Python's .pyc files, they are written only
where the interpreter may write bytecode (not under -B or
PYTHONDONTWRITEBYTECODE) and the directory is writable, by a rename that
readers never see half done; an entry that cannot be read is a miss.
Nothing here ever raises.
"""

import hashlib
import linecache
import marshal
import os
import sys

FORMAT = 1
DIRECTORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
_PYTHON_TAG = getattr(getattr(sys, "implementation", None), "cache_tag", None) or \
    "python-{}{}".format(*sys.version_info[:2])


def _digest(lines):
    text = "".join(lines)
    if not isinstance(text, bytes):  # Python 3: linecache's lines are str
        text = text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(text).hexdigest()


def _source_file(module_file):
    """The .py of a module file (Python 2's __file__ may name its .pyc)."""
    return module_file[:-1] if module_file.endswith((".pyc", ".pyo")) else module_file


def key(original, rule_names):
    """What a build of `original` with these rules depends on, besides the
    running code itself; None when the original's file cannot be read (the
    build then says why)."""
    code = original.__code__
    linecache.checkcache(code.co_filename)
    lines = linecache.getlines(code.co_filename, original.__globals__)
    rules_file = _source_file(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_fix.py"))
    rules = linecache.getlines(rules_file)
    if not lines or not rules:
        return None
    return (FORMAT, sys.version, sys.flags.optimize, _digest(rules), tuple(rule_names),
            code.co_filename, _digest(lines))


def _path(original):
    name = getattr(original, "__qualname__", original.__name__)  # Python 2: no __qualname__
    return os.path.join(DIRECTORY, "{}.{}.{}.fixed".format(original.__module__, name,
                                                           _PYTHON_TAG))


def read(original, entry_key):
    """(factory code, helper names) stored for this key and running code,
    or None."""
    try:
        with open(_path(original), "rb") as stored:
            stored_key, running, factory, helpers = marshal.loads(stored.read())
    except Exception:  # missing, unreadable, truncated, another format
        return None
    if stored_key != entry_key or running != original.__code__:
        return None
    return factory, helpers


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
