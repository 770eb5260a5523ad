"""Start-up cost of keras_clone_fix.pth: prints figures, asserts nothing.

Run in an environment where the wheel is installed (nox -s bench startup):

    python benchmarks/startup.py [runs]

Times `python -c pass` with the installed .pth and with it moved aside,
alternating, and reports medians, the instructions callgrind counts, and the
modules the .pth adds at start, as a Markdown table; then what
`python -X importtime` says our modules cost (Python 3.7 and later).
Moves the .pth back however it ends. Runs on Python 2.7 too.
"""

import multiprocessing
import os
import platform
import subprocess
import sys
import time

import keras_clone_fix
from markdown_table import header, row

try:
    from shutil import which
except ImportError:  # Python 2
    from distutils.spawn import find_executable as which

SITE_PACKAGES = os.path.dirname(os.path.dirname(os.path.abspath(keras_clone_fix.__file__)))
PTH = os.path.join(SITE_PACKAGES, "keras_clone_fix.pth")
ASIDE = PTH + ".aside"
ENV = {k: v for k, v in os.environ.items() if not k.startswith("KERAS_CLONE_FIX")}
# Modules only: Python 2 also keeps None under the names an implicit
# relative import tried (keras_clone_fix.os).
LIST_MODULES = ("import sys; print(' '.join(sorted(name for name, module in sys.modules.items()"
                " if module is not None)))")
clock = getattr(time, "perf_counter", time.time)  # Python 2: time.time, to the microsecond


def run_command(command):
    """(stdout, stderr) of a command that must succeed."""
    process = subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True)
    stdout, stderr = process.communicate()
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, command, stdout + stderr)
    return stdout, stderr


def run(*args):
    return run_command([sys.executable] + list(args))


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


class PthMovedAside(object):
    def __enter__(self):
        os.rename(PTH, ASIDE)

    def __exit__(self, *exc_info):
        os.rename(ASIDE, PTH)


def start_once():
    began = clock()
    run("-c", "pass")
    return clock() - began


def timings(runs):
    with_pth, without_pth = [], []
    for _ in range(runs):
        with_pth.append(start_once())
        with PthMovedAside():
            without_pth.append(start_once())
    return with_pth, without_pth


def modules_added_by_the_pth():
    with_pth = set(run("-c", LIST_MODULES)[0].split())
    with PthMovedAside():
        without_pth = set(run("-c", LIST_MODULES)[0].split())
    return sorted(with_pth - without_pth)


def importtime_of_our_modules():
    """(self us, cumulative us, module) rows of `python -X importtime` for ours."""
    rows = []
    for line in run("-X", "importtime", "-c", "pass")[1].splitlines():
        fields = [field.strip() for field in line.split(":", 1)[-1].split("|")]
        if len(fields) == 3 and fields[2].startswith("keras_clone_fix"):
            rows.append(tuple(fields))
    return rows


def instructions():
    """Instructions `python -c pass` executes (valgrind's callgrind): the
    same count on every run, whatever else the machine is doing."""
    if which("valgrind") is None:
        return None
    _, stderr = run_command(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                             sys.executable, "-c", "pass"])
    counts = [line.split()[-1] for line in stderr.splitlines() if "Collected" in line]
    return int(counts[0]) if counts else None


def wrapt_version():
    return run("-c", "import wrapt; print(wrapt.__version__)")[0].strip()


def main(runs=40):
    print("python {} on {} ({} cores)\n".format(platform.python_version(), platform.processor()
                                              or platform.machine(), multiprocessing.cpu_count()))
    with_pth, without_pth = timings(runs)
    median_with, median_without = median(with_pth), median(without_pth)
    with_count = instructions()
    if with_count:
        with PthMovedAside():
            without_count = instructions()
    header("Python", "wrapt", "`python -c pass`, median of {} runs each, alternating: with the "
           ".pth, without".format(runs), "added", "instructions (callgrind) with the .pth, "
           "without", "added", "modules in sys.modules at start only because of the .pth")
    row(platform.python_version(), wrapt_version(),
        "{:.2f} ms, {:.2f} ms".format(median_with * 1e3, median_without * 1e3),
        "{:+.2f} ms".format((median_with - median_without) * 1e3),
        "{:,}, {:,}".format(with_count, without_count) if with_count else "-",
        "{:+,} ({:+.1%})".format(with_count - without_count,
                                 float(with_count - without_count) / without_count)
        if with_count else "-",
        ", ".join("`{}`".format(name) for name in modules_added_by_the_pth()))
    if sys.version_info < (3, 7):
        return  # no -X importtime
    print("\n`python -X importtime`, our modules:\n")
    header("module", "self", "cumulative")
    for self_us, cumulative_us, name in importtime_of_our_modules():
        row("`{}`".format(name), "{} us".format(self_us), "{} us".format(cumulative_us))

if __name__ == "__main__":
    main(*[int(arg) for arg in sys.argv[1:]])
