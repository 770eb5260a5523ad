"""Cost of keras_clone_fix.patch() right after the families are imported:
prints figures, asserts nothing.

Run in an environment where the wheel is installed (`nox -s patch-cost`
runs it on every affected release of the test matrix):

    python benchmarks/patch_time.py [--runs N] [--no-callgrind]
                                    [--baseline FILE] [--record FILE]

Each run is a fresh interpreter with KERAS_CLONE_FIX=0 (nothing patched at
import) that imports keras and tensorflow (those installed), then times
keras_clone_fix.patch() alone: the figure is the median (min, max) of the
runs' wall-clock times. Two kinds of run: "cold", the first interpreter of
an environment (the package's stored builds, keras_clone_fix/__pycache__/
*.fixed, removed before each run: patch() builds and stores them), and
"warm", every later one (patch() reads them). Where bytecode is not
written (PYTHONDONTWRITEBYTECODE, -B) nothing is stored, and every
interpreter pays about the cold figure. The instruction count is the same step under
valgrind's callgrind, which runs the interpreter with instrumentation off
(--instr-atstart=no); the interpreter itself switches it on just before
patch() and off just after with `callgrind_control -i on|off <its pid>`.
Those two switches cost some instructions themselves (about 0.3 million):
that count, measured by an interpreter switching on and off with nothing in
between (and no family imported: the switches do not depend on them), is
subtracted. Python's hash seed is fixed for those runs, and the
count is the same to within a few thousand instructions run after run.
The same count of `import wrapt` alone, after the families' import, tells
how much of patch() that is: all of wrapt's import where the family has not
imported it already (TensorFlow 1.4 - 1.13), nothing where it has.

It prints two Markdown tables (instructions, milliseconds), a row a
release. --record FILE adds this run's figures to FILE and prints the rows
of every release FILE holds: run once per release with the same FILE, the
last run prints the whole table. --baseline FILE prints the "cold" figures
FILE holds for the same release in the column "0.1.0", beside today's.
benchmarks/patch_time_baseline.json holds those of 0.1.0 (commit cb51c02,
before issue 20), recorded by this script: 0.1.0 stores nothing, so its one
figure is what every interpreter pays.
"""

import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile

from markdown_table import header, row

CHILD = r"""
import json, os, subprocess, sys, time
clock = getattr(time, "perf_counter", time.time)
step = sys.argv[2]  # patch, wrapt (its import alone) or nothing
for family in ("keras", "tensorflow") if step != "nothing" else ():
    try:
        __import__(family)
    except ImportError:
        pass
import keras_clone_fix

def instrument(state):
    if sys.argv[1] == "callgrind":
        with open(os.devnull, "w") as quiet:
            subprocess.check_call(["callgrind_control", "-i", state, str(os.getpid())],
                                  stdout=quiet)

instrument("on")
began = clock()
status = keras_clone_fix.patch() if step == "patch" else None
if step == "wrapt":
    import wrapt
took = clock() - began
instrument("off")
if status is not None:
    patched = sorted(set(name.split(".")[0] for name, on in status.targets.items() if on))
    versions = dict((family, getattr(sys.modules.get(family), "__version__", None))
                    for family in ("keras", "tensorflow"))
    print(json.dumps({"seconds": took, "patched": status.patched,
                      "families": ["{} {}".format(family, versions[family]) for family in patched]}))
"""

ENV = dict((k, v) for k, v in os.environ.items()
           if not k.startswith("KERAS_CLONE_FIX") and k != "PYTHONDONTWRITEBYTECODE")
ENV.update(KERAS_CLONE_FIX="0", TF_CPP_MIN_LOG_LEVEL="3", PYTHONHASHSEED="0")
KINDS = ("cold", "warm")


def stores_builds():
    """Whether the installed package stores its builds: 0.1.0 (the code
    before issue 20) builds in every interpreter, so it has only "cold"."""
    try:
        from keras_clone_fix import _cache  # noqa: F401 (the installed package's)
    except ImportError:
        return False
    return True


def prepare(kind):
    """Before a run: no stored builds (cold), or those of one run (warm)."""
    if not stores_builds():
        return
    from keras_clone_fix import _cache
    for name in glob.glob(os.path.join(_cache.DIRECTORY, "*.fixed")):
        os.remove(name)
    if kind == "warm":
        patch_once()


def run(command):
    """stdout of a command that must succeed."""
    process = subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True)
    stdout, stderr = process.communicate()
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, command, stdout + stderr)
    return stdout


def patch_once(mode="time", step="patch"):
    output = run([sys.executable, "-c", CHILD, mode, step]).strip().splitlines()
    return json.loads(output[-1]) if step == "patch" else None


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def callgrind_total(step, kind="cold"):
    """Instructions callgrind counted with instrumentation on, in a child
    doing `step` ("patch" or "nothing") between the switches."""
    prepare(kind)
    handle, out_file = tempfile.mkstemp(prefix="patch-time-callgrind.")
    os.close(handle)
    try:
        run(["valgrind", "--tool=callgrind", "--instr-atstart=no",
             "--callgrind-out-file=" + out_file, sys.executable, "-c", CHILD, "callgrind", step])
        with open(out_file) as counts:
            totals = [line.split()[1] for line in counts if line.startswith("totals:")]
        return int(totals[0])
    finally:
        os.remove(out_file)


def label(families):
    return ", ".join(families) or "nothing patched"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--no-callgrind", dest="callgrind", action="store_false")
    parser.add_argument("--baseline", help="JSON file of earlier figures, printed beside")
    parser.add_argument("--record", help="JSON file to add these figures to")
    options = parser.parse_args()

    figures, families = {}, None
    for kind in KINDS if stores_builds() else KINDS[:1]:
        results = []
        for _ in range(options.runs):
            if kind == "cold" or not results:
                prepare(kind)
            results.append(patch_once())
        assert all(result["patched"] for result in results), results[0]
        families = label(results[0]["families"])
        times = [result["seconds"] * 1e3 for result in results]
        figures[kind] = {"median_ms": median(times), "min_ms": min(times), "max_ms": max(times),
                         "runs": len(times)}
        if options.callgrind:
            switches = callgrind_total("nothing")
            figures[kind]["instructions"] = callgrind_total("patch", kind) - switches
            figures[kind]["switch_instructions"] = switches
    if options.callgrind:
        # Part of patch() where the family has not imported wrapt (TensorFlow 1.4 - 1.13).
        figures["wrapt_import_instructions"] = callgrind_total("wrapt") - switches
    prepare("cold")  # leave the environment as a user's first interpreter finds it
    key = "python {}: {}".format(platform.python_version(), families)

    recorded = {key: figures}
    if options.record:
        if os.path.exists(options.record):
            with open(options.record) as stored:
                recorded = json.load(stored)
        recorded[key] = figures
        with open(options.record, "w") as stored:
            json.dump(recorded, stored, indent=1, sort_keys=True)
            stored.write("\n")
    baseline = {}
    if options.baseline and os.path.exists(options.baseline):
        with open(options.baseline) as stored:
            baseline = json.load(stored)
    print_tables(recorded, baseline)


def instructions(measured):
    return ("{:,}".format(measured["instructions"])
            if measured and "instructions" in measured else "-")


def milliseconds(measured):
    if not measured:
        return "-"
    return "{:.2f} ({:.2f} - {:.2f})".format(
        measured["median_ms"], measured["min_ms"], measured["max_ms"])


def print_tables(recorded, baseline):
    """Markdown tables of the figures of every release in `recorded` (this
    run's alone, or with --record those the file holds), 0.1.0's beside."""
    rows = []
    for key in sorted(recorded):
        python, release = key[len("python "):].split(": ", 1)
        rows.append((python, release, recorded[key], baseline.get(key, {})))
    print("Instructions of patch() (callgrind):\n")
    header("Python", "release", "0.1.0", "cold", "warm", "`import wrapt` after the family's")
    for python, release, figures, before in rows:
        wrapt = figures.get("wrapt_import_instructions")
        row(python, release, instructions(before.get("cold")), instructions(figures["cold"]),
            instructions(figures.get("warm")), "-" if wrapt is None else "{:,}".format(wrapt))
    runs = max(figures["cold"]["runs"] for _, _, figures, _ in rows)
    print("\nMilliseconds of patch(), median (min - max) of {} interpreters:\n".format(runs))
    header("Python", "release", "0.1.0", "cold", "warm")
    for python, release, figures, before in rows:
        row(python, release, milliseconds(before.get("cold")), milliseconds(figures["cold"]),
            milliseconds(figures.get("warm")))

if __name__ == "__main__":
    main()
