"""`python -m keras_clone_fix`: diagnose this environment and prove clone_model works."""

import argparse
import collections
import json
import logging
import os
import platform
import re
import sys
import warnings

import keras_clone_fix
from keras_clone_fix._affected import is_affected

NOT_INSTALLED, WORKS, FAILS = 0, 0, 1
BACKEND_BANNER = re.compile(r"Using \w+ backend\.?\n?\Z")
NOISY_PACKAGES = r"(tensorflow|keras|theano|cntk|numpy|h5py|google)(\.|\Z)"


class _StderrWithoutBackendBanner(object):
    """sys.stderr while keras is imported, less Keras' `Using TensorFlow
    backend.` line: the report names the backend."""

    def __init__(self, stderr):
        self._stderr = stderr

    def __getattr__(self, name):
        return getattr(self._stderr, name)

    def write(self, text):
        if not BACKEND_BANNER.match(text):
            self._stderr.write(text)


def _quiet_backends():
    """Keep the check's own process to its report: TensorFlow's C++ log,
    the backends' logged notices (TensorFlow's deprecations) and their
    Python warnings would bury it. Ours (KerasCloneFixWarning) still show."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    # Not per logger: Theano resets its own loggers' levels when imported.
    logging.disable(logging.WARNING)
    for category in (DeprecationWarning, PendingDeprecationWarning, FutureWarning):
        warnings.filterwarnings("ignore", category=category)
    warnings.filterwarnings("ignore", module=NOISY_PACKAGES)
    warnings.filterwarnings("default", category=keras_clone_fix.KerasCloneFixWarning)


def _import_keras():
    real_stderr, sys.stderr = sys.stderr, _StderrWithoutBackendBanner(sys.stderr)
    try:
        import keras
    finally:
        sys.stderr = real_stderr
    return keras


def _two_output_model(keras):
    """Embedding(mask_zero) -> a masking layer with two outputs -> one LSTM each.

    The middle layer keeps Layer's default compute_mask, so it returns the
    incoming mask once: the case every affected release fails to clone.
    """
    class TwoOutputs(keras.layers.Layer):
        def __init__(self, **kwargs):
            super(TwoOutputs, self).__init__(**kwargs)
            self.supports_masking = True

        def call(self, inputs, mask=None):
            return [inputs, inputs * 2.0]

        def compute_output_shape(self, input_shape):
            return [input_shape, input_shape]

    tokens = keras.layers.Input(shape=(5,), dtype="int32")
    embedded = keras.layers.Embedding(10, 3, mask_zero=True)(tokens)
    first, second = TwoOutputs()(embedded)
    outputs = [keras.layers.LSTM(2)(first), keras.layers.LSTM(2)(second)]
    return keras.models.Model(tokens, outputs)


def _predicts_like(model, other):
    import numpy
    padded = numpy.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0]])
    expected, got = model.predict(padded, verbose=0), other.predict(padded, verbose=0)
    return all(numpy.allclose(e, g) for e, g in zip(expected, got))


def check_clone(keras):
    """(works: bool, detail: str): clone the model, compare predictions."""
    if not hasattr(keras.models, "clone_model"):
        return True, "keras {} has no clone_model (it exists from 2.0.7)".format(keras.__version__)
    model = _two_output_model(keras)
    try:
        clone = keras.models.clone_model(model)
    except Exception as error:
        return False, "clone_model failed: {}: {}".format(type(error).__name__, error)
    clone.set_weights(model.get_weights())
    if _predicts_like(model, clone):
        return True, "clone_model works: the clone predicts what the model predicts"
    return False, "clone_model ran, but the clone predicts differently from the model"


def _masked_encoder_called_twice(keras):
    """(encoder, a model calling it on two inputs): Embedding(mask_zero) ->
    LSTM(training=False), whose node keeps a dict of call arguments that
    the affected releases write each call's mask into."""
    def tokens():
        return keras.layers.Input(shape=(5,), dtype="int32")
    x = tokens()
    lstm = keras.layers.LSTM(2)(keras.layers.Embedding(10, 3, mask_zero=True)(x), training=False)
    encoder = keras.models.Model(x, lstm)
    first, second = tokens(), tokens()
    return encoder, keras.models.Model([first, second], [encoder(first), encoder(second)])


def check_shared_model(keras):
    """(works: bool, detail: str): a model called on two new inputs must
    compute each call with its own mask. The check where a multi-output
    layer with one mask cannot be built: keras before 2.0.7, tf.keras."""
    import numpy
    first, second = numpy.array([[1, 2, 3, 0, 0]]), numpy.array([[4, 0, 0, 0, 0]])
    encoder, siamese = _masked_encoder_called_twice(keras)
    try:
        got = siamese.predict([first, second], verbose=0)
    except Exception as error:  # 2.0.0 - 2.0.2: a placeholder of the original graph
        return False, "calling the model on two new tensors failed: {}: {}".format(
            type(error).__name__, str(error).splitlines()[0])
    expected = [encoder.predict(first, verbose=0), encoder.predict(second, verbose=0)]
    if all(numpy.allclose(e, g) for e, g in zip(expected, got)):
        return True, "calling the model on two new tensors works: each call uses its own mask"
    return False, "calling the model on two new tensors ran, but the second call used the first's mask"


def check_call_on_new_tensors(keras):
    """(works: bool, detail: str): call the model on a new input (what a
    nested model, TimeDistributed and multi_gpu_model do), compare predictions."""
    if not hasattr(keras.models, "clone_model"):
        return check_shared_model(keras)
    model = _two_output_model(keras)
    new_input = keras.layers.Input(shape=(5,), dtype="int32")
    try:
        outer = keras.models.Model(new_input, model(new_input))
    except Exception as error:
        return False, "calling the model on a new tensor failed: {}: {}".format(
            type(error).__name__, error)
    if _predicts_like(model, outer):
        return True, "calling the model on a new tensor works: it predicts what the model predicts"
    return False, "calling the model on a new tensor ran, but predicts differently"


def check_tf_keras():
    """(works: bool, detail: str or None): tf.keras of an affected TensorFlow
    must compute a shared model's calls each with its own mask; None where
    TensorFlow is not installed."""
    try:
        import tensorflow
    except ImportError:
        return True, None
    version = tensorflow.__version__
    affected, reason = is_affected("tensorflow", version)
    if not affected:
        return True, reason + "; not checked"
    works, detail = check_shared_model(tensorflow.keras)
    return works, "tensorflow {}: {}".format(version, detail)


def self_check():
    """A report (dict, in the order to show) and the exit code."""
    report = collections.OrderedDict([
        ("python", platform.python_version()), ("executable", sys.executable),
        ("keras_clone_fix", keras_clone_fix.__version__)])
    _quiet_backends()
    checks = []
    try:
        keras = _import_keras()
    except ImportError as error:
        report["keras"] = None
        missing = "keras is not installed ({})".format(error)
    else:
        missing = None
        report.update([  # pairs, not keywords: Python 2 would shuffle keywords
            ("keras", keras.__version__), ("backend", keras.backend.backend()),
            ("affected", is_affected("keras", keras.__version__)[0])])
        clone_works, report["clone"] = check_clone(keras)
        call_works, report["call_on_new_tensors"] = check_call_on_new_tensors(keras)
        checks += [clone_works, call_works]
    tf_keras_works, tf_keras = check_tf_keras()
    if tf_keras is None and missing:
        report["result"] = missing + ", nor tensorflow: nothing to fix"
        return report, NOT_INSTALLED
    if tf_keras is not None:
        report["tf_keras"] = tf_keras
        checks.append(tf_keras_works)
    status = keras_clone_fix.status()
    report.update([("patched", status.patched), ("targets", status.targets),
                   ("reason", status.reason), ("activated_by", status.activated_by)])
    works = all(checks)
    report["result"] = "ok" if works else "FAILED"
    return report, WORKS if works else FAILS


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m keras_clone_fix",
        description="Show whether keras.models.clone_model is fixed here, and prove it.")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    arguments = parser.parse_args(argv)
    report, code = self_check()
    if arguments.json:
        print(json.dumps(dict(report, ok=code == 0), indent=2, sort_keys=True,
                         separators=(",", ": ")))  # Python 2 would end lines with ", "
    else:
        width = max(len(key) for key in report)
        for key, value in report.items():
            print("{:>{}}: {}".format(key.replace("_", " "), width, value))
    return code
