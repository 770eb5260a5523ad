"""What `python -m keras_clone_fix check MODEL_FILE` costs on large models:
prints, a Markdown table row a model, seconds and peak memory (max RSS) of
the command's own process and of each side's interpreter, and the
command's wall time beside the sum of its two sides' times (they run at the
same time); asserts nothing.

    nox -s check-cost   (Python 3.7, TensorFlow 1.15, Keras 2.2.4)
    python benchmarks/check_cost.py resnet50   (the models named only)

The models, saved to a temporary directory: a BERT-base-sized encoder
(Embedding with mask_zero, 12 blocks of hidden size 768, 12 heads,
feed-forward 3072: about 110 million weights), built here from Dense, Add
and two small custom layers of this module (given to `check` with
--custom-objects check_cost), and ResNet50 (weights=None).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import keras
import tensorflow as tf
from keras import backend as K

from markdown_table import header, row

HIDDEN, BLOCKS, HEADS, FEED_FORWARD, VOCABULARY, STEPS = 768, 12, 12, 3072, 30522, 128
# The command's own process, run so that it reports its peak memory too.
MEASURED_COMMAND = """
import resource, runpy, sys
sys.argv = ["keras_clone_fix"] + sys.argv[1:]
try:
    runpy.run_module("keras_clone_fix", run_name="__main__", alter_sys=True)
except SystemExit as exit:
    code = exit.code
sys.stderr.write("check: command's own process: peak memory {:.0f} MB\\n".format(
    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
sys.exit(code)
"""
# A side's last progress line, and the command's own.
PEAK = re.compile(r"check: (.+?): (?:finished in ([\d.]+) s, )?peak memory (\d+) MB")


class SelfAttention(keras.layers.Layer):
    """Scaled dot-product attention of [queries, keys, values], HEADS heads;
    padded keys (the mask of the keys) get no attention."""

    def __init__(self, heads=HEADS, **kwargs):
        super(SelfAttention, self).__init__(**kwargs)
        self.heads = heads
        self.supports_masking = True

    def call(self, inputs, mask=None):
        queries, keys, values = inputs
        batch, steps = tf.shape(queries)[0], tf.shape(queries)[1]
        size = int(queries.shape[-1]) // self.heads

        def heads(x):
            return tf.transpose(tf.reshape(x, [batch, steps, self.heads, size]), [0, 2, 1, 3])
        scores = tf.matmul(heads(queries), heads(keys), transpose_b=True) / size ** 0.5
        if mask is not None and mask[1] is not None:
            scores += (1.0 - tf.cast(mask[1], scores.dtype))[:, None, None, :] * -1e9
        attended = tf.matmul(tf.nn.softmax(scores), heads(values))
        return tf.reshape(tf.transpose(attended, [0, 2, 1, 3]), [batch, steps, self.heads * size])

    def compute_mask(self, inputs, mask=None):
        return mask[0] if mask else None

    def compute_output_shape(self, input_shape):
        return input_shape[0]

    def get_config(self):
        return dict(super(SelfAttention, self).get_config(), heads=self.heads)


class LayerNormalization(keras.layers.Layer):
    def __init__(self, **kwargs):
        super(LayerNormalization, self).__init__(**kwargs)
        self.supports_masking = True

    def build(self, input_shape):
        self.gamma = self.add_weight("gamma", input_shape[-1:], initializer="ones")
        self.beta = self.add_weight("beta", input_shape[-1:], initializer="zeros")
        super(LayerNormalization, self).build(input_shape)

    def call(self, inputs, mask=None):
        mean, variance = tf.nn.moments(inputs, [-1], keep_dims=True)
        return (inputs - mean) / K.sqrt(variance + 1e-12) * self.gamma + self.beta


def bert_base():
    tokens = keras.layers.Input(shape=(STEPS,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(VOCABULARY, HIDDEN, mask_zero=True, name="embedding")(tokens)
    for block in range(BLOCKS):
        name = "block{}_".format(block)
        q, k, v = (keras.layers.Dense(HIDDEN, name=name + part)(x) for part in "qkv")
        attended = keras.layers.Dense(HIDDEN, name=name + "o")(
            SelfAttention(name=name + "attention")([q, k, v]))
        x = LayerNormalization(name=name + "norm1")(keras.layers.Add()([x, attended]))
        hidden = keras.layers.Dense(FEED_FORWARD, activation="relu", name=name + "ff1")(x)
        x = LayerNormalization(name=name + "norm2")(keras.layers.Add()(
            [x, keras.layers.Dense(HIDDEN, name=name + "ff2")(hidden)]))
    return keras.models.Model(tokens, x, name="bert_base")


def resnet50():
    return keras.applications.ResNet50(weights=None)


def measure(name, build, scratch, options=()):
    model = build()
    path = os.path.join(scratch, name + ".h5")
    model.save(path)
    weights = model.count_params()
    K.clear_session()
    del model
    environment = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.abspath(__file__)))
    started = time.time()
    finished = subprocess.run(
        [sys.executable, "-c", MEASURED_COMMAND, "check", path] + list(options),
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True)
    seconds = time.time() - started
    peaks = PEAK.findall(finished.stderr)
    if finished.returncode:
        sys.stderr.write(finished.stderr[-3000:] + "\n")
    sides = [float(side_seconds) for _, side_seconds, _ in peaks if side_seconds]
    return [name, "{:.1f} M, {:.0f} MB".format(weights / 1e6, os.path.getsize(path) / 2.0 ** 20),
            str(finished.returncode), "{:.0f} s".format(seconds),
            "{:.0f} s ({} sides)".format(sum(sides), len(sides)),
            "; ".join("{}: {}{} MB".format(process, side_seconds + " s, " if side_seconds else "",
                                           megabytes)
                      for process, side_seconds, megabytes in peaks),
            finished.stdout.rstrip().splitlines()[-1] if finished.stdout.strip() else "-"]


def main():
    print("check cost: Python {}, keras {}, tensorflow {}".format(
        sys.version.split()[0], keras.__version__, tf.__version__))
    print("`python -m keras_clone_fix check MODEL_FILE` (two sides, with and without the fix, "
          "at the same time; each a new interpreter)")
    models = {"bert_base": (bert_base, ["--custom-objects", "check_cost"]),
              "resnet50": (resnet50, [])}
    scratch = tempfile.mkdtemp(prefix="check-cost-")
    try:
        rows = [measure(name, models[name][0], scratch, models[name][1])
                for name in sys.argv[1:] or sorted(models)]
    finally:
        shutil.rmtree(scratch)
    print()
    header("model", "weights, file", "exit status", "wall time of `check`",
           "the sides' own times, added", "each process: seconds, peak memory",
           "the report's last line")
    for cells in rows:
        row(*cells)


if __name__ == "__main__":
    main()
