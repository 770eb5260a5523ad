"""`check` where the keras package is Keras 3 (not affected): it checks the
files Keras 3 can load, truthfully (nothing at risk, every check matches,
the verdict says the release is not affected), and starts no side without
the fix, whose results would say nothing. The command runs in a
subprocess, its JSON read."""

import collections
import json

import pytest

from conftest import KERAS, installed, run_python

if KERAS is None or KERAS < (3, 0, 0):
    pytest.skip("needs Keras 3", allow_module_level=True)

import check_models  # noqa: E402 (numpy: only where keras is, after the skip)
import keras  # noqa: E402
import tensorflow  # noqa: E402


@pytest.mark.parametrize("family", [
    "keras", pytest.param("tf.keras", marks=pytest.mark.skipif(
        installed("tf_keras"), reason="--tf-keras checks with tf_keras where it is installed"))])
def test_a_keras_3_file_is_checked_and_the_release_named_not_affected(tmp_path, family):
    """tf.keras of TensorFlow 2.16+ is Keras 3 too, whose keras.backend has
    Keras 2's int_shape and dtype, which fail on its tensors."""
    path = tmp_path / "model.keras"
    check_models.randomized(check_models.nested_masked(keras)).save(str(path))
    finished = run_python(["-m", "keras_clone_fix", "check", str(path), "--json"]
                          + (["--tf-keras"] if family == "tf.keras" else []))
    report = json.loads(finished.stdout, object_pairs_hook=collections.OrderedDict)
    assert finished.returncode == 0 and report["ok"] is True, finished.stdout + finished.stderr
    assert (report["family"], report["keras"], report["affected"]) == (
        family, keras.__version__, False)
    assert report["risks"] == [] and list(report["sides"]) == ["patched"]
    results = dict((name, sides["patched"]["result"]) for name, sides in
                   report["checks"].items())
    assert all(list(sides) == ["patched"] for sides in report["checks"].values())
    assert results == dict(load="ok", from_config="ok", clone="ok", clone_of_clone="ok",
                           nested="ok", called_twice="ok", multi_gpu="unavailable",
                           original_unchanged="ok")
    assert report["summary"] == "{} is not affected by these bugs; every check matches the " \
                                "model's predictions.".format(
                                    "keras " + keras.__version__ if family == "keras" else
                                    "tf.keras of tensorflow {} (keras {})".format(
                                        tensorflow.__version__, keras.__version__))


def test_a_keras_3_json_starts_no_side_without_the_fix(tmp_path):
    """Keras 3's to_json names no keras_version: its config says Keras 3.
    Without weights, the side with the fix saves its initial ones."""
    path = tmp_path / "model.json"
    path.write_text(check_models.plain(keras).to_json())
    finished = run_python(["-m", "keras_clone_fix", "check", str(path)])
    assert finished.returncode == 0, finished.stdout + finished.stderr
    progress = finished.stderr.splitlines()
    assert progress[0] == (
        "check: keras {} is not affected: only the side with the fix imports keras and loads {} "
        "in a new interpreter (TensorFlow and a large model take a while)".format(
            keras.__version__, path))
    assert not any("without the fix" in line for line in progress), progress
    lines = finished.stdout.splitlines()
    assert lines[0] == "model: {} (the model's initial weights: the JSON has none (give " \
                       "--weights FILE))".format(path)
    assert lines[-1] == "keras {} is not affected by these bugs; every check matches the " \
                        "model's predictions.".format(keras.__version__)
