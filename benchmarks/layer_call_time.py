"""What the fix costs each layer call on tf.keras of TensorFlow 1.11 - 1.13,
where it wraps `Layer._set_mask_metadata` (run by every `Layer.__call__`
while a graph is built): prints Markdown tables, asserts nothing.

    python benchmarks/layer_call_time.py [LAYERS ...]

Builds a functional model of LAYERS Dense layers called one after the
other (default 100 and 300), without masks and after a Masking layer (every
call then carries a mask), with the fix patched and unpatched
(keras_clone_fix.patch() / unpatch() in the same process), alternating.
Building calls each layer once, and no model is called on new tensors, so
`_set_mask_metadata` is the only patched routine that runs. Times are the
CPU time of the layer calls, garbage collection kept out, median of the
runs; the Python function calls of one build (sys.setprofile) do not
depend on the machine's load.
"""

import gc
import platform
import sys
import time

import tensorflow as tf

import keras_clone_fix
from markdown_table import header, row

REPEATS = 9
clock = getattr(time, "process_time", time.clock)


def build(layers, masked):
    """Seconds of CPU time the layer calls of one build take."""
    keras = tf.keras
    keras.backend.clear_session()
    x = keras.layers.Input(shape=(8,))
    began = clock()
    y = keras.layers.Masking()(x) if masked else x
    for _ in range(layers):
        y = keras.layers.Dense(8)(y)
    took = clock() - began
    keras.models.Model(x, y)
    return took


def python_calls(layers, masked):
    """Python function calls of the layer calls of one build."""
    calls = [0]

    def count(frame, event, argument):
        if event == "call":
            calls[0] += 1

    tf.keras.backend.clear_session()
    x = tf.keras.layers.Input(shape=(8,))
    sys.setprofile(count)
    try:
        y = tf.keras.layers.Masking()(x) if masked else x
        for _ in range(layers):
            y = tf.keras.layers.Dense(8)(y)
    finally:
        sys.setprofile(None)
    return calls[0]


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def set_patched(patched):
    status = keras_clone_fix.patch() if patched else keras_clone_fix.unpatch()
    on = [name for name, is_on in status.targets.items() if is_on]
    if patched and not any(name.endswith("Layer._set_mask_metadata") for name in on):
        sys.stderr.write("Layer._set_mask_metadata is not patched on TensorFlow {} ({}): "
                         "nothing to measure\n".format(tf.__version__, status.reason))
        sys.exit(2)
    return on


def main(sizes):
    sizes = sizes or [100, 300]
    print("layer calls with the fix on and off: Python {}, TensorFlow {}, {}\n".format(
        platform.python_version(), tf.__version__, platform.processor() or platform.machine()))
    print("patched: " + ", ".join(sorted(set_patched(True))) + "\n")
    gc.disable()
    times, calls = [], []
    for masked in (False, True):
        model = "Masking, then" if masked else "Input, then"
        build(10, masked)  # warm-up: first calls import and cache
        for layers in sizes:
            runs = {True: [], False: []}
            for _ in range(REPEATS):
                for patched in (True, False):
                    set_patched(patched)
                    runs[patched].append(build(layers, masked))
                    gc.collect()
            counted = {}
            for patched in (True, False):
                set_patched(patched)
                counted[patched] = python_calls(layers, masked)
            layer_calls = layers + 1 if masked else layers
            times.append((model, layers, layer_calls, median(runs[True]), median(runs[False])))
            calls.append((model, layers, layer_calls, counted[True], counted[False]))
    set_patched(True)
    print("CPU time of the layer calls of one build, median of {} alternating runs:\n".format(
        REPEATS))
    header("model", "patched", "unpatched", "ratio", "difference per layer call")
    for model, layers, layer_calls, patched, unpatched in times:
        row("{} {} Dense".format(model, layers), "{:.3f} s".format(patched),
            "{:.3f} s".format(unpatched), "{:.3f}".format(patched / unpatched),
            "{:+.1f} us".format((patched - unpatched) / layer_calls * 1e6))
    print("\nPython function calls of one build (sys.setprofile):\n")
    header("model", "patched", "unpatched", "difference", "per layer call")
    for model, layers, layer_calls, patched, unpatched in calls:
        row("{} {} Dense".format(model, layers), "{:,}".format(patched), "{:,}".format(unpatched),
            "{:+,} ({:+.2%})".format(patched - unpatched, float(patched - unpatched) / unpatched),
            "{:+.2f}".format(float(patched - unpatched) / layer_calls))


if __name__ == "__main__":
    main([int(argument) for argument in sys.argv[1:]])
