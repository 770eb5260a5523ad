"""What the fix costs clone_model, and calling a model on new tensors:
prints figures, asserts nothing.

    nox -s bench      (Python 3.7, TensorFlow 1.15, Keras 2.2.5)

The reference is Keras 2.2.5's own code, unpatched, in the same process: it
clones and calls ResNet50 (no multi-output layers), graphs of two-output
Lambda layers (the case 2.2.5 fixed) and a seq2seq-style graph (2.2.5 no
longer records initial_state in call arguments) correctly, so patched and
reference do the same work. Patched and reference runs alternate, and each time is the
CPU time of one clone (or call), garbage collection kept out of it.
"""

import gc
import os
import platform
import statistics
import subprocess
import sys
import time

import keras
from keras import backend as K
from keras.layers import Add, Input, Lambda

import keras_clone_fix
from markdown_table import header, row

REPEATS = 10
SEQ2SEQ_REPEATS = 4  # 120 LSTMs a build: slow


def split_graph(layers, depth=100):
    """`layers` layers: Input, chains of `depth` layers - (two-output Lambda
    -> Add) pairs - side by side, and an Add of the chains. Chains, not one
    long line: Keras walks graphs recursively, and deep ones overflow."""
    x = Input(shape=(8,))
    ends = []
    for _ in range((layers - 2) // depth):
        y = x
        for _ in range(depth // 2):
            first, second = Lambda(lambda t: [t, t * 0.5], output_shape=lambda s: [s, s])(y)
            y = Add()([first, second])
        ends.append(y)
    return keras.models.Model(x, Add()(ends))


def seq2seq_graph(stages=60, per_chain=10):
    """5 layers a stage, 302 layers in all at 60 stages: an encoder LSTM
    (return_state) whose states start a decoder LSTM (initial_state) on
    the encoder's sequence, two Dense and an Add; chains of `per_chain`
    stages side by side, an Add of the chains."""
    from keras.layers import LSTM, Dense
    x = Input(shape=(4, 4))
    ends = []
    for _ in range(stages // per_chain):
        y = x
        for _ in range(per_chain):
            sequence, state_h, state_c = LSTM(4, return_sequences=True, return_state=True)(y)
            decoded = LSTM(4, return_sequences=True)(sequence, initial_state=[state_h, state_c])
            y = Add()([Dense(4)(decoded), Dense(4)(y)])
        ends.append(y)
    return keras.models.Model(x, Add()(ends))


def resnet50():
    return keras.applications.ResNet50(weights=None)


def call_on_new_input(model):
    """What nesting a model does: run_internal_graph on a new Input."""
    return model(Input(batch_shape=K.int_shape(model.input)))


def seconds(build, patched, action):
    """Build a model in a new graph, then time `action` on it once: CPU
    time, with the garbage collector run before and kept out of it."""
    K.clear_session()
    model = build()
    (keras_clone_fix.patch if patched else keras_clone_fix.unpatch)()
    gc.collect()
    gc.disable()
    try:
        began = time.process_time()
        action(model)
        return time.process_time() - began
    finally:
        gc.enable()


def medians(build, repeats, action=keras.models.clone_model):
    """(patched, reference) median seconds; the order alternates too."""
    patched, reference = [], []
    for repeat in range(repeats):
        for is_patched in ((True, False) if repeat % 2 == 0 else (False, True)):
            (patched if is_patched else reference).append(seconds(build, is_patched, action))
    return statistics.median(patched), statistics.median(reference)


def compare(name, build, action=keras.models.clone_model, repeats=REPEATS):
    fixed, plain = medians(build, repeats, action)
    row(name, "{:.3f} s".format(fixed), "{:.3f} s".format(plain), "{:.3f}".format(fixed / plain))


def python_calls(build, patched, action):
    """How many Python function calls `action` makes on a freshly built
    model: unlike time, independent of the machine's load (a clone's count
    also depends on what Python's regular-expression cache holds)."""
    K.clear_session()
    model = build()
    (keras_clone_fix.patch if patched else keras_clone_fix.unpatch)()
    calls = [0]

    def count(frame, event, arg):
        if event == "call":
            calls[0] += 1
    sys.setprofile(count)
    try:
        action(model)
    finally:
        sys.setprofile(None)
    return calls[0]


def compare_calls(name, build, action):
    fixed, plain = python_calls(build, True, action), python_calls(build, False, action)
    row(name, "{:,}".format(fixed), "{:,}".format(plain),
        "{:+,} ({:+.3f} %)".format(fixed - plain, 100.0 * (fixed - plain) / plain))


def scaling(sizes=(202, 302, 3002), repeats=5):
    print("\nclone time by size (chains of two-output Lambda layers; 1,002 layers are in the "
          "first table), median of {} alternating runs:\n".format(repeats))
    header("layers", "patched", "Keras' own", "ratio", "patched per layer")
    for size in sizes:
        fixed, plain = medians(lambda: split_graph(size), repeats)
        row(size, "{:.3f} s".format(fixed), "{:.3f} s".format(plain),
            "{:.3f}".format(fixed / plain), "{:.2f} ms".format(fixed / size * 1e3))


def rss_megabytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2.0 ** 20


def memory_growth(patched, clones=200, warm_up=10):
    """In this process: RSS growth over `clones` clones after a warm-up."""
    (keras_clone_fix.patch if patched else keras_clone_fix.unpatch)()
    for index in range(warm_up + clones):
        if index == warm_up:
            before = rss_megabytes()
        K.clear_session()
        keras.models.clone_model(split_graph(202))
    return rss_megabytes() - before


def memory(clones=200):
    print("\nRSS growth over {} clones of a 202-layer graph, K.clear_session() between,"
          " each mode in a fresh process:\n".format(clones))
    header("mode", "RSS growth")
    for mode in ("patched", "unpatched"):
        finished = subprocess.run([sys.executable, __file__, "--memory", mode], check=True,
                                  stdout=subprocess.PIPE, universal_newlines=True)
        row(mode, "{} MiB".format(finished.stdout.split()[-1]))


def machine():
    with open("/proc/cpuinfo") as cpuinfo:
        cpu = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
    import tensorflow
    return "{}, {} cores; Python {}; TensorFlow {}; Keras {}".format(
        cpu, os.cpu_count(), platform.python_version(), tensorflow.__version__, keras.__version__)


def main():
    print(machine())
    print("\nclone time, median of {} alternating runs ({} for the seq2seq-style graph):\n".format(
        REPEATS, SEQ2SEQ_REPEATS))
    header("model", "patched", "Keras' own", "ratio")
    compare("ResNet50(weights=None)", resnet50)
    compare("1,002 layers, 500 two-output", lambda: split_graph(1002))
    compare("seq2seq-style, 302 layers, 120 LSTMs", seq2seq_graph, repeats=SEQ2SEQ_REPEATS)
    print("\ncalling the model on a new Input (run_internal_graph), median of {} ({} for the "
          "seq2seq-style graph):\n".format(REPEATS, SEQ2SEQ_REPEATS))
    header("model", "patched", "Keras' own", "ratio")
    compare("ResNet50(weights=None)", resnet50, call_on_new_input)
    compare("1,002 layers, 500 two-output", lambda: split_graph(1002), call_on_new_input)
    compare("seq2seq-style, 302 layers, 120 LSTMs", seq2seq_graph, call_on_new_input,
            repeats=SEQ2SEQ_REPEATS)
    print("\nPython function calls (sys.setprofile):\n")
    header("ResNet50(weights=None)", "patched", "Keras' own", "difference")
    compare_calls("clone_model", resnet50, keras.models.clone_model)
    compare_calls("called on a new Input", resnet50, call_on_new_input)
    print()
    header("seq2seq-style, 302 layers", "patched", "Keras' own", "difference")
    compare_calls("clone_model", seq2seq_graph, keras.models.clone_model)
    compare_calls("called on a new Input", seq2seq_graph, call_on_new_input)
    scaling()
    memory()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--memory"]:
        print("{:.1f}".format(memory_growth(sys.argv[2] == "patched")))
    else:
        main()
