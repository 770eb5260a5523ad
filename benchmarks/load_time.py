"""What the fix costs `load_model` of a large model on tf.keras of TensorFlow
2: ResNet50(weights=None), 25.6 million weights, saved once as .h5 and once
as a SavedModel folder, each loaded in fresh interpreters with the fix
(KERAS_CLONE_FIX=1) and without it (0), alternating, in one run; prints a
Markdown table, asserts nothing.

    nox -s load-cost   (TensorFlow 2.3 with keras 2.4.3, and 2.6 with keras 2.6.0)
    python benchmarks/load_time.py [--runs N]

Each interpreter imports tensorflow and keras_clone_fix (which activates
unless KERAS_CLONE_FIX=0), then times `tf.keras.models.load_model(path,
compile=False)` alone: the process's CPU time (every thread's: less
sensitive to other work on the machine than the wall time, printed
beside) and its wall time, median (min - max) of the runs. One interpreter
with the fix runs first, untimed: the fix's stored builds are then read,
as in every interpreter of an environment but its first (patch_time.py
measures both).
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

from markdown_table import header, row

SAVE = r"""
import sys
import tensorflow as tf
model = tf.keras.applications.ResNet50(weights=None)
model.save(sys.argv[1])
model.save(sys.argv[2])
print(model.count_params())
"""
LOAD = r"""
import json, sys, time
import tensorflow as tf
import keras_clone_fix
load_model = tf.keras.models.load_model  # on 2.6 imports (and patches) the keras package
began, cpu = time.time(), time.process_time()
model = load_model(sys.argv[1], compile=False)
cpu, wall = time.process_time() - cpu, time.time() - began
status = keras_clone_fix.status()
print(json.dumps({"cpu": cpu, "wall": wall, "patched": status.patched,
                  "keras": getattr(sys.modules.get("keras"), "__version__", None),
                  "tensorflow": tf.__version__}))
"""
MODES = (("with the fix", "1"), ("without", "0"))


def run(code, *arguments, **env):
    """The last line of stdout of a child interpreter that must succeed."""
    environment = dict((key, value) for key, value in os.environ.items()
                       if not key.startswith("KERAS_CLONE_FIX"))
    environment.update(TF_CPP_MIN_LOG_LEVEL="3", **env)
    finished = subprocess.run([sys.executable, "-c", code] + list(arguments), env=environment,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True)
    if finished.returncode:
        raise RuntimeError(finished.stdout + finished.stderr)
    return finished.stdout.strip().splitlines()[-1]


def size_mb(path):
    if os.path.isfile(path):
        return os.path.getsize(path) / 1e6
    return sum(os.path.getsize(os.path.join(folder, name))
               for folder, _, names in os.walk(path) for name in names) / 1e6


def seconds(values):
    return "{:.2f} s ({:.2f} - {:.2f})".format(statistics.median(values), min(values), max(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="load-time-")
    try:
        files = [(".h5", os.path.join(scratch, "resnet50.h5")),
                 ("SavedModel folder", os.path.join(scratch, "resnet50"))]
        weights = int(run(SAVE, files[0][1], files[1][1]))
        run(LOAD, files[0][1], KERAS_CLONE_FIX="1")  # stores the fix's builds
        measured = dict(((path, mode), []) for _, path in files for _, mode in MODES)
        for _ in range(options.runs):
            for _, path in files:
                for _, mode in MODES:
                    got = json.loads(run(LOAD, path, KERAS_CLONE_FIX=mode))
                    assert got["patched"] is (mode == "1"), got
                    measured[path, mode].append(got)
        print("load_model of ResNet50(weights=None), {:.1f} M weights: Python {}, tensorflow {}{}, "
              "{}; {} interpreters each, alternating\n".format(
                  weights / 1e6, platform.python_version(), got["tensorflow"],
                  ", keras " + got["keras"] if got["keras"] else "", platform.machine(),
                  options.runs))
        header("format", "size", "CPU: with the fix", "CPU: without", "ratio",
               "wall: with the fix", "wall: without")
        for name, path in files:
            cpu = [[each["cpu"] for each in measured[path, mode]] for _, mode in MODES]
            wall = [[each["wall"] for each in measured[path, mode]] for _, mode in MODES]
            row(name, "{:.0f} MB".format(size_mb(path)), seconds(cpu[0]), seconds(cpu[1]),
                "{:.3f}".format(statistics.median(cpu[0]) / statistics.median(cpu[1])),
                seconds(wall[0]), seconds(wall[1]))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
