"""Start-up cost of keras_clone_fix.pth: prints figures, asserts nothing.

Run in an environment where the wheel is installed (nox -s bench startup):

    python benchmarks/startup.py [runs]

Times `python -c pass` with the installed .pth and with it moved aside,
alternating, and reports medians; then lists the modules the .pth adds at
start and what `python -X importtime` says they cost. Moves the .pth back
however it ends.
"""

import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

import keras_clone_fix

SITE_PACKAGES = os.path.dirname(os.path.dirname(os.path.abspath(keras_clone_fix.__file__)))
PTH = os.path.join(SITE_PACKAGES, "keras_clone_fix.pth")
ASIDE = PTH + ".aside"
ENV = {k: v for k, v in os.environ.items() if not k.startswith("KERAS_CLONE_FIX")}
LIST_MODULES = "import sys; print(' '.join(sorted(sys.modules)))"


def run(*args):
    return subprocess.run([sys.executable] + list(args), env=ENV, check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)


class PthMovedAside(object):
    def __enter__(self):
        os.rename(PTH, ASIDE)

    def __exit__(self, *exc_info):
        os.rename(ASIDE, PTH)


def start_once():
    began = time.perf_counter()
    run("-c", "pass")
    return time.perf_counter() - began


def timings(runs):
    with_pth, without_pth = [], []
    for _ in range(runs):
        with_pth.append(start_once())
        with PthMovedAside():
            without_pth.append(start_once())
    return with_pth, without_pth


def modules_added_by_the_pth():
    with_pth = set(run("-c", LIST_MODULES).stdout.split())
    with PthMovedAside():
        without_pth = set(run("-c", LIST_MODULES).stdout.split())
    return sorted(with_pth - without_pth)


def importtime_of_our_modules():
    """(self µs, cumulative µs, module) rows of `python -X importtime` for ours."""
    rows = []
    for line in run("-X", "importtime", "-c", "pass").stderr.splitlines():
        fields = [field.strip() for field in line.split(":", 1)[-1].split("|")]
        if len(fields) == 3 and fields[2].startswith("keras_clone_fix"):
            rows.append(tuple(fields))
    return rows


def instructions():
    """Instructions `python -c pass` executes (valgrind's callgrind): the
    same count on every run, whatever else the machine is doing."""
    finished = run("-c", "pass") if shutil.which("valgrind") is None else subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
         sys.executable, "-c", "pass"], env=ENV, check=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    counts = [line.split()[-1] for line in finished.stderr.splitlines() if "Collected" in line]
    return int(counts[0]) if counts else None


def main(runs=40):
    print("python {} on {} ({} cores)".format(platform.python_version(), platform.processor()
                                            or platform.machine(), os.cpu_count()))
    with_pth, without_pth = timings(runs)
    median_with, median_without = statistics.median(with_pth), statistics.median(without_pth)
    print("python -c pass, median of {} runs each, alternating:".format(runs))
    print("  with keras_clone_fix.pth    {:8.2f} ms".format(median_with * 1e3))
    print("  without it                  {:8.2f} ms".format(median_without * 1e3))
    print("  difference                  {:8.2f} ms".format((median_with - median_without) * 1e3))
    with_pth = instructions()
    if with_pth:
        with PthMovedAside():
            without_pth = instructions()
        print("instructions (callgrind): {:,} with the .pth, {:,} without: {:+,} ({:+.1%})".format(
            with_pth, without_pth, with_pth - without_pth, (with_pth - without_pth) / without_pth))
    print("modules in sys.modules at start only because of the .pth:")
    print("  " + " ".join(modules_added_by_the_pth()))
    print("python -X importtime, our modules (self µs, cumulative µs):")
    for self_us, cumulative_us, name in importtime_of_our_modules():
        print("  {:>6} {:>6}  {}".format(self_us, cumulative_us, name))


if __name__ == "__main__":
    main(*[int(arg) for arg in sys.argv[1:]])
