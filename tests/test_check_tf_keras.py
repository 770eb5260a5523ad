"""`python -m keras_clone_fix check --tf-keras MODEL_FILE` on a file that
tf.keras of TensorFlow 1.15 - 2.15 saved, where the keras package may be
installed too (tests/test_check.py checks tf.keras 1.4 - 1.14 where it is
not): a model of two layers each called on the other's output, nested,
whose calls the release's from_config makes out of order. Where the release
does that (as measured), `check` names the risk, shows the load without the
fix wrong and every check with it right, and exits 0; it never calls the
release "not affected".
"""

import collections
import json

import pytest

from conftest import installed, run_python

if not installed("tensorflow"):
    pytest.skip("needs TensorFlow", allow_module_level=True)

import tensorflow  # noqa: E402

TF = tuple(int(part) for part in tensorflow.__version__.split(".")[:2])
if not (1, 15) <= TF < (2, 16):
    pytest.skip("needs tf.keras of TensorFlow 1.15 - 2.15", allow_module_level=True)

from check_models import randomized  # noqa: E402
from keras_clone_fix._builtin_model import calls_in_a_cycle  # noqa: E402

# Measured on 1.15.5, 2.0.4 and 2.1.4 (docs/releases.md); issue 44 measured
# 2.2 - 2.6 too, and 2.7 keeps the order.
CALLS_OUT_OF_ORDER = TF < (2, 7)
AT_RISK = "a layer whose calls the model's config makes out of order (one waits for another " \
          "layer's)"


def test_a_model_whose_config_makes_its_calls_out_of_order(tmp_path):
    path = tmp_path / "cycle.h5"
    randomized(calls_in_a_cycle(tensorflow.keras)).save(str(path))
    finished = run_python(["-m", "keras_clone_fix", "check", "--json", "--tf-keras", str(path)])
    report = json.loads(finished.stdout, object_pairs_hook=collections.OrderedDict)
    assert finished.returncode == 0 and report["ok"] is True, finished.stdout + finished.stderr
    assert report["family"] == "tf.keras" and report["tensorflow"] == tensorflow.__version__
    assert set(check["patched"]["result"] for check in report["checks"].values()) <= {
        "ok", "unavailable"}, report["checks"]
    named = [risk["risk"] for risk in report["risks"] if risk["layer"] == "cycle/s"]
    assert (named == [AT_RISK]) is CALLS_OUT_OF_ORDER, report["risks"]
    if CALLS_OUT_OF_ORDER:
        assert report["checks"]["load"]["unpatched"]["result"] == "wrong", report["checks"]
        assert "not affected" not in report["summary"] and "breaks " in report["summary"]
