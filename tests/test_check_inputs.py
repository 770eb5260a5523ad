"""`check`'s inputs and the files it refuses, on the installed affected
release, the command run in a subprocess and its JSON read (the helpers and
the skip are tests/test_check.py's): token ids for an Embedding whatever the
input's dtype, the user's --inputs, no verdict without predictions, files
of later releases and of another Python (tests/data, made by
tests/data/make_files.py), Lambda code run only with --no-safe-mode, and
JSON at exit 2."""

import os
import sys

import pytest

from conftest import run_python
from test_check import (FAMILY, KERAS_AFFECTED, VERSION, assert_bad_input, assert_fixed,
                        assert_unpatched_fails, check, checked_model, keras, UNAFFECTED_RELEASE,
                        results, saved)
from test_check import TENSORFLOW

import check_models  # numpy: only where keras is, after test_check's skip
import numpy

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
MADE = "made from the model's inputs"


@pytest.fixture(autouse=True)
def fresh_graph():
    yield
    if hasattr(keras.backend, "clear_session"):  # Theano has no session
        keras.backend.clear_session()


# --- inputs a model can take --------------------------------------------------

def test_word_level_decoder_with_float32_token_ids(checked_models):
    """Token ids in [1, input_dim) for the float32 input that reaches the
    Embedding through a Dropout; normal values for the states."""
    code, report, stderr = checked_model(checked_models, "word_level_decoder")
    assert_fixed(code, report, stderr)
    assert report["inputs"] == {"source": MADE, "shapes": [[4, 5], [4, 8], [4, 8]]}
    assert set(results(report, "patched").values()) - {"unavailable"} == {"ok"}
    if KERAS_AFFECTED and VERSION < (2, 2, 5):
        assert_unpatched_fails(report, {"clone": "error", "clone_of_clone": "error"})


def test_word_level_encoder_with_float32_token_ids(checked_models):
    code, report, stderr = checked_model(checked_models, "word_level_encoder")
    assert_fixed(code, report, stderr)
    assert report["inputs"] == {"source": MADE, "shapes": [[4, 5]]}
    assert report["checks"]["load"]["patched"]["result"] == "ok"
    assert results(report, "patched")["clone"] == ("ok" if VERSION >= (2, 0, 7) or
                                                   FAMILY == "tf.keras" else "unavailable")


def cannot_predict_model():
    """check_models.cannot_predict, where the release can build it: tf.keras
    of TensorFlow 1.4 - 1.10 gives the Embedding's output no static length
    from input_length, so the Dense after Flatten cannot be built (fix or no
    fix: building a new model runs no rebuild routine)."""
    try:
        return check_models.cannot_predict(keras)
    except ValueError as error:
        if "should be defined" not in str(error):
            raise
        pytest.skip("{} cannot build the model: {}".format(FAMILY, error))


@pytest.mark.check_command
def test_a_model_that_cannot_predict_on_made_inputs_gets_no_verdict(tmp_path):
    code, report, stderr = check(saved(cannot_predict_model(), tmp_path))
    assert code == 2 and report["ok"] is False, report
    assert report["error"].startswith("{}: no check ran: the model cannot predict on inputs "
                                      "made from its input shapes and dtypes ((4, 8))".format(
                                          tmp_path / "model.h5"))
    assert "--inputs FILE.npz" in report["error"] and report["error"] in stderr
    assert report["family"] == FAMILY and report["inputs"]["shapes"] == [[4, 8]]
    assert report["checks"]["load"]["patched"]["result"] == "error"
    assert "unpatched" not in report["checks"]["clone"]  # the other side did not run


@pytest.mark.parametrize("by_name", [False, True])
@pytest.mark.check_command
def test_inputs_that_fit(tmp_path, by_name):
    model = cannot_predict_model()
    name = model.input_names[0] if by_name else "arr_0"
    numpy.savez(str(tmp_path / "rows.npz"), **{name: numpy.ones((3, 7))})
    code, report, stderr = check(saved(model, tmp_path), "--inputs", str(tmp_path / "rows.npz"))
    assert_fixed(code, report, stderr)
    assert report["inputs"] == {"source": str(tmp_path / "rows.npz"), "shapes": [[3, 7]]}


@pytest.mark.parametrize("arrays, words", [
    ({"arr_0": numpy.ones((3, 7, 1))}, "arr_0 is float64 of shape (3, 7, 1), but the model's "
                                       "input {} takes numbers of shape (None, None)"),
    ({"other": numpy.ones((3, 7))}, "it holds other, but the model's inputs are {}: give one "
                                    "array for each"),
    ({"arr_0": numpy.array(["a", "b"])}, "of shape (2,), but the model's input {} takes "
                                         "numbers"),
])
@pytest.mark.check_command
def test_inputs_that_do_not_fit(tmp_path, arrays, words):
    model = cannot_predict_model()
    numpy.savez(str(tmp_path / "rows.npz"), **arrays)
    checked = check(saved(model, tmp_path), "--inputs", str(tmp_path / "rows.npz"))
    assert_bad_input(checked, "--inputs {}: ".format(tmp_path / "rows.npz"),
                     words.format(model.input_names[0]))
    assert checked[1]["family"] == FAMILY  # the side had imported it


@pytest.mark.check_command
def test_inputs_of_the_right_shape_the_model_cannot_take(tmp_path):
    numpy.savez(str(tmp_path / "rows.npz"), numpy.ones((3, 8)))
    code, report, _ = check(saved(cannot_predict_model(), tmp_path),
                            "--inputs", str(tmp_path / "rows.npz"))
    assert code == 2 and "no check ran: the model cannot predict on the arrays of {}".format(
        tmp_path / "rows.npz") in report["error"]


# --- files from elsewhere -------------------------------------------------------

@pytest.mark.skipif(UNAFFECTED_RELEASE, reason="these files are later only than the affected "
                    "releases (TensorFlow 2.21's tf_keras reads its own)")
@pytest.mark.parametrize("name, version", [
    ("dense_tf_keras_2.21.h5", "2.21.0"), ("dense_keras_3.h5", "3."),
    ("dense_keras_3.keras", "3."), ("dense_keras_3.json", "3 (its config's module and "
                                     "registered_name keys"),
])
@pytest.mark.check_command
def test_file_of_a_later_release_is_named(name, version):
    code, report, stderr = check(os.path.join(DATA, name))
    assert_bad_input((code, report, stderr), "was saved by Keras " + version,
                     "which {} cannot read: check the model with the release that saved "
                     "it".format(
                         "keras " + keras.__version__ if FAMILY == "keras" else
                         "tf.keras " + keras.__version__))
    assert "--custom-objects" not in stderr and report["family"] == FAMILY


@pytest.mark.skipif(UNAFFECTED_RELEASE, reason="tf_keras 2.21 reads its own files; Keras 3's "
                    "are named as the test above says")
@pytest.mark.check_command
def test_a_file_of_several_that_cannot_be_loaded_is_named(tmp_path):
    """The sides find it: the command ends with exit 2 on that file."""
    later = os.path.join(DATA, "dense_keras_3.h5")
    code, report, stderr = check(saved(check_models.plain(keras), tmp_path), later)
    assert_bad_input((code, report, stderr), "{} was saved by Keras 3.".format(later))
    assert report["model"] == later and report["family"] == FAMILY


@pytest.mark.check_command
def test_files_of_two_families_need_the_family_named():
    """Without --keras or --tf-keras, each file's family is the one that saved it."""
    tf_keras_file, keras_file = (os.path.join(DATA, name) for name in (
        "dense_tf_keras_1.12.h5", "dense_keras_3.h5"))
    finished = run_python(["-m", "keras_clone_fix", "check", tf_keras_file, keras_file])
    assert finished.returncode == 2 and finished.stdout == ""
    assert finished.stderr == "python -m keras_clone_fix check: {} was saved by tf.keras, {} by " \
        "keras: give --keras or --tf-keras, or check them in separate runs\n".format(
            tf_keras_file, keras_file)


@pytest.mark.skipif(FAMILY != "tf.keras" or not (1, 10) <= TENSORFLOW < (1, 12),
                    reason="needs tf.keras of TensorFlow 1.10 - 1.11 (measured on 1.10)")
@pytest.mark.check_command
def test_a_built_in_of_a_later_release_is_named_as_such():
    """TensorFlow 1.12 saved the file (keras_version '2.1.6-tf', as 1.10 and
    1.11 write) with its Dense layers' initializer GlorotUniform, a class
    since 1.12: no custom object of the user's, and --custom-objects no help."""
    checked = check(os.path.join(DATA, "dense_tf_keras_1.12.h5"))
    assert_bad_input(checked, "initializer 'GlorotUniform' is not known to tf.keras {}: it is a "
                     "built-in of TensorFlow 1.12 and later".format(keras.__version__))
    assert "--custom-objects" not in checked[2]


@pytest.mark.skipif(sys.version_info[0] == 2, reason="Python 2 reads its own marshal")
@pytest.mark.check_command
def test_lambda_marshalled_by_python_2_names_the_layer_and_the_python():
    assert_bad_input(check(os.path.join(DATA, "lambda_python_2.h5"), "--no-safe-mode"),
                     "Lambda layer doubled holds code marshalled by Python 2, which Python 3.",
                     "check it with Python 2.7")


@pytest.mark.skipif(sys.version_info[0] > 2 or FAMILY != "keras",
                    reason="keras 2.2.4 on Python 2 saved it")
@pytest.mark.check_command
def test_lambda_marshalled_by_python_2_runs_on_python_2_when_allowed():
    assert_fixed(*check(os.path.join(DATA, "lambda_python_2.h5"), "--no-safe-mode"))


def lambda_writing(keras, path):
    """A model whose Lambda writes `path` whenever it runs, loading included.
    It returns a new tensor: keras 2.0.0 cannot build a model whose Lambda
    returns its input tensor itself."""
    function = eval("lambda x: (open({!r}, 'w').write('ran'), x * 1.0)[1]".format(str(path)))
    x = keras.layers.Input(shape=(4,))
    written = keras.layers.Lambda(function, name="writes_a_file")(x)
    return keras.models.Model(x, keras.layers.Dense(2)(written))


@pytest.mark.check_command
def test_lambda_code_runs_only_with_no_safe_mode(tmp_path):
    ran = tmp_path / "ran"
    path = saved(lambda_writing(keras, ran), tmp_path)
    ran.unlink()
    assert_bad_input(check(path), "not loaded, as its Lambda layer writes_a_file holds Python "
                                  "code that loading would run; give --no-safe-mode")
    assert not ran.exists()
    assert_fixed(*check(path, "--no-safe-mode"))
    assert ran.exists()
