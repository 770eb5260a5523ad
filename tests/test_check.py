"""`python -m keras_clone_fix check MODEL_FILE` on models saved here with
the installed Keras (or tf.keras, in the TensorFlow sessions): each run in
a subprocess, its JSON read. Where the release has a bug, the side without
the fix must be seen failing (as measured); with the fix every check matches.
"""

import collections
import json
import os
import re

import pytest

from conftest import AFFECTED, installed, run_python

TENSORFLOW = None
if installed("tensorflow"):
    import tensorflow
    TENSORFLOW = tuple(int(part) for part in tensorflow.__version__.split(".")[:2])
# TensorFlow 2.16 and later: tf.keras is Keras 3; `check --tf-keras` uses the tf_keras package.
TF_KERAS_PACKAGE = TENSORFLOW is not None and TENSORFLOW >= (2, 16) and installed("tf_keras")

if AFFECTED:
    FAMILY, FAMILY_OPTIONS = "keras", []
    import keras
elif TENSORFLOW and (1, 4) <= TENSORFLOW < (2, 0):
    FAMILY, FAMILY_OPTIONS = "tf.keras", ["--tf-keras"]
    from tensorflow import keras
elif TF_KERAS_PACKAGE:
    FAMILY, FAMILY_OPTIONS = "tf.keras", ["--tf-keras"]
    import tf_keras as keras
else:
    pytest.skip("needs keras 2.0.0 - 2.3.1, tf.keras of TensorFlow 1.4 - 1.15, or tf_keras on "
                "TensorFlow 2.16+", allow_module_level=True)

import check_models  # noqa: E402 (numpy: only where keras is, after the skip)
from keras_clone_fix._affected import api_version, bugs_of  # noqa: E402
from keras_clone_fix._bugs import LISTED_BY  # noqa: E402
from keras_clone_fix._builtin_model import calls_in_a_cycle  # noqa: E402
from keras_clone_fix._check import (  # noqa: E402
    Checks, as_list, error_result, find_clone_model, find_multi_gpu_model, make_inputs, predict)
from keras_clone_fix._report import section  # noqa: E402
from keras_clone_fix._side import facts  # noqa: E402

VERSION = api_version(keras)
TF_KERAS_AFFECTED = FAMILY == "tf.keras" and TENSORFLOW < (2, 0)
KERAS_AFFECTED = FAMILY == "keras"
# The routine that calls a model on new tensors gets masks wrong: every
# affected release but tf.keras of TensorFlow 1.15, which copies the call
# arguments (patched for its clone routine and from_config only).
MASKS_WRONG = KERAS_AFFECTED or TF_KERAS_AFFECTED and TENSORFLOW < (1, 15)
# Whether the release can build these models at all, fix or no fix. tf.keras
# of TensorFlow 1.5 cannot (measured: Layer.__call__ iterates one mask over
# the outputs; a nested model's InputLayer refuses a mask); 1.14 can; 1.6 -
# 1.13 are not measured yet, so only 1.14 runs them.
MULTI_OUTPUT_BUILDS = TENSORFLOW >= (1, 14) if FAMILY == "tf.keras" else VERSION >= (2, 0, 7)
NESTS_ON_MASKED_TENSORS = TENSORFLOW >= (1, 14) if FAMILY == "tf.keras" else VERSION >= (2, 2, 0)
# Layer._set_mask_metadata of tf.keras 1.11 - 1.13 overwrites a called
# model's output masks with None (MaskAlreadyComputedKept).
OUTPUT_MASKS_DROPPED = FAMILY == "tf.keras" and (1, 11) <= TENSORFLOW < (1, 14)
CHECKS = ["load", "from_config", "clone", "clone_of_clone", "nested", "called_twice",
          "multi_gpu", "original_unchanged"]
# multi_gpu_model with cpu_relocation (keras 2.1.6 - 2.3.1, TensorFlow backend);
# elsewhere the check is "unavailable" on both sides.
HAS_MULTI_GPU_MODEL = find_multi_gpu_model(keras)[0] is not None
UNAFFECTED_RELEASE = not (KERAS_AFFECTED or TF_KERAS_AFFECTED)
# The family and version whose bugs the report names (its list: --bugs).
RUNNING = ("keras", keras.__version__) if KERAS_AFFECTED else ("tensorflow", tensorflow.__version__)
# What keeps a model from being checked here, fix or no fix: (condition, reason).
# Recurrent layers take return_state from keras 2.0.5 (and every tf.keras).
NO_RETURN_STATE = (KERAS_AFFECTED and VERSION < (2, 0, 5),
                   "keras before 2.0.5 has no return_state")
# Theano compiles every rebuilt graph: minutes a check for an LSTM model.
ON_THEANO = (keras.backend.backend() == "theano", "Theano compiles each rebuilt graph for "
             "minutes; there the plain model and the bad inputs run")
NO_MULTI_OUTPUT = (not MULTI_OUTPUT_BUILDS, "keras before 2.0.7 cannot build a multi-output "
                   "layer's masks, fix or no fix")
NO_INITIAL_STATE_LOAD = (KERAS_AFFECTED and VERSION < (2, 0, 9), "keras before its RNN rewrite "
                         "(2.0.9) cannot load a model whose LSTM takes initial_state (measured "
                         "on 2.0.6: Layer lstm_2 expects 1 inputs), fix or no fix")
NO_NESTING_ON_MASKS = (not NESTS_ON_MASKED_TENSORS, "keras before 2.2 cannot call a model on a "
                       "masked tensor, fix or no fix")
NO_MULTI_GPU_MODEL = (not HAS_MULTI_GPU_MODEL, "needs multi_gpu_model")
NO_CYCLE_LOAD = (KERAS_AFFECTED and VERSION < (2, 0, 7), "keras before 2.0.7 cannot load a model "
                 "whose layers are called on each other's outputs (ValueError: Missing layer), "
                 "fix or no fix")
# A model's from_config makes a layer's calls out of order (LayerCallsKeptInOrder).
FROM_CONFIG_REORDERS = TF_KERAS_AFFECTED or (KERAS_AFFECTED and VERSION < (2, 2, 5))
# The models of the user's module of custom objects.
USER_MODULE_LIMITS = [ON_THEANO, NO_RETURN_STATE, (
    TF_KERAS_PACKAGE, "the user's module imports tensorflow.keras, Keras 3 there, not the "
    "tf_keras that checks")]


def why_not_here(limits):
    """The reason of the first limit that holds here, else None."""
    return next((reason for holds, reason in limits if holds), None)


def skip_if(*limits):
    """A mark skipping the test where one of the limits holds."""
    reason = why_not_here(limits)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


needs_return_state = skip_if(NO_RETURN_STATE)
compiles_for_minutes_on_theano = skip_if(ON_THEANO)


@pytest.fixture(autouse=True)
def fresh_graph():
    yield
    if hasattr(keras.backend, "clear_session"):  # Theano has no session
        keras.backend.clear_session()


def check(*arguments, **kwargs):
    """`check` of model files (and options): the command's exit status, its
    JSON report (None if it printed none), stderr."""
    # The user's directory, then what the tests run with (a tree put before the installed package).
    path = [kwargs.pop("pythonpath", None), os.environ.get("PYTHONPATH")]
    env = {"PYTHONPATH": os.pathsep.join(filter(None, path)) or None}
    finished = run_python(["-m", "keras_clone_fix", "check", "--json"] + FAMILY_OPTIONS
                          + [str(argument) for argument in arguments], env=env)
    try:
        report = json.loads(finished.stdout, object_pairs_hook=collections.OrderedDict)
    except ValueError:
        report = None
    return finished.returncode, report, finished.stderr


def saved(model, directory, name="model.h5"):
    path = directory / name
    model.save(str(path))
    return path


def saved_json(model, directory, name="model.json"):
    path = directory / name
    with open(str(path), "w") as written:  # to_json gives bytes on Python 2
        written.write(model.to_json())
    return path


def results(report, side):
    return dict((name, sides[side]["result"]) for name, sides in report["checks"].items()
                if side in sides)


def risks_of(report, layer):
    return [risk["risk"] for risk in report["risks"] if risk["layer"] == layer]


def assert_fixed(code, report, stderr):
    """Exit 0 (code None: one of several files, see checked_model), the
    family's facts, every check right with the fix, and every check that
    the fix turns from failing to passing named by a risk."""
    assert report is not None, stderr
    assert code in (0, None) and report["ok"] is True, json.dumps(report, indent=1)
    assert report["family"] == FAMILY and list(report["checks"]) == CHECKS
    assert report["bugs"] == [bug.name for bug in bugs_of(*RUNNING)], report["reason"]
    patched = results(report, "patched")
    assert set(patched.values()) <= {"ok", "unavailable"}, patched
    assert ("unpatched" in report["checks"]["load"]) is not UNAFFECTED_RELEASE
    if UNAFFECTED_RELEASE:
        assert "is not affected" in report["summary"]
    # Each side's interpreter: its wall time and peak memory.
    assert list(report["sides"]) == ["patched"] if UNAFFECTED_RELEASE else \
        ["unpatched", "patched"]
    for costs in report["sides"].values():
        assert costs["seconds"] > 0 and costs["peak_memory_mb"] > 50, report["sides"]
    assert_risks_name_what_the_fix_changes(report)


def assert_risks_name_what_the_fix_changes(report):
    endangered = set(name for risk in report["risks"] for name in risk["checks"])
    fixed = set(name for name, result in results(report, "unpatched").items()
                if result in ("wrong", "error") and results(report, "patched")[name] == "ok")
    assert fixed <= endangered, json.dumps(report, indent=1)
    assert not (UNAFFECTED_RELEASE and report["risks"])  # risks are what a release gets wrong


def assert_unpatched_fails(report, expected):
    """The side without the fix gets each named check's expected result."""
    unpatched = results(report, "unpatched")
    assert dict((name, unpatched[name]) for name in expected) == expected, \
        json.dumps(report["checks"], indent=1)
    assert "breaks " in report["summary"] and "with keras-clone-fix every" in report["summary"]


# The models whose tests read one `check` run of them all (checked_models in
# conftest.py): each side imports Keras once for every file. (name, what
# keeps it from being checked here, the model made with the user's module of
# custom objects); shared_masked_encoder is saved as JSON, without weights.
CHECKED = [
    ("multi_output_masking", [ON_THEANO, NO_MULTI_OUTPUT], lambda user: check_models.randomized(
        check_models.multi_output_masking(keras, user.SplitOutputs))),
    ("seq2seq", [ON_THEANO, NO_INITIAL_STATE_LOAD],
     lambda user: check_models.randomized(check_models.seq2seq(keras))),
    ("nested_masked", [ON_THEANO, NO_NESTING_ON_MASKS],
     lambda user: check_models.randomized(check_models.nested_masked(keras))),
    ("nested_model_with_its_own_mask", [(not OUTPUT_MASKS_DROPPED, "only tf.keras of TensorFlow "
                                         "1.11 - 1.13 drops a called model's output masks; "
                                         "elsewhere loading it is right")],
     lambda user: check_models.randomized(check_models.nested_model_with_its_own_mask(keras))),
    ("shared_masked_encoder", [ON_THEANO],
     lambda user: check_models.shared_masked_encoder(keras)),
    ("masked_gru_state", USER_MODULE_LIMITS,
     lambda user: check_models.randomized(check_models.masked_gru_state(keras, user))),
    ("plain", [], lambda user: check_models.plain(keras)),
    ("conv_batch_norm", [NO_MULTI_GPU_MODEL], lambda user: check_models.conv_batch_norm(keras)),
    ("calls_in_a_cycle", [NO_CYCLE_LOAD],
     lambda user: check_models.randomized(calls_in_a_cycle(keras))),
    ("word_level_decoder", [ON_THEANO, NO_INITIAL_STATE_LOAD],
     lambda user: check_models.randomized(check_models.word_level_decoder(keras))),
    ("word_level_encoder", [ON_THEANO, NO_RETURN_STATE],
     lambda user: check_models.randomized(check_models.word_level_encoder(keras))),
]


def check_at_once(directory, user_module):
    """The CHECKED models this release can check, saved in `directory` and
    checked by one `check` run with inputs of 5 time steps: {"paths": the
    files in order, "run": (exit status, JSON report, stderr), "reports":
    {name: the model's report}}."""
    names, paths = [], []
    for name, limits, make in CHECKED:
        if why_not_here(limits) is None:
            if hasattr(keras.backend, "clear_session"):
                keras.backend.clear_session()  # the layers' names, as in a program of its own
            model = make(user_module[1])
            names.append(name)
            paths.append(saved_json(model, directory, name + ".json") if name ==
                         "shared_masked_encoder" else saved(model, directory, name + ".h5"))
    run = check(*paths + ["--timesteps", "5", "--custom-objects",
                          "user_layers:get_custom_objects"], pythonpath=user_module[0])
    assert run[1] is not None, run[2]
    return {"paths": paths, "run": run,
            "reports": dict(zip(names, run[1].get("models", [run[1]])))}


def checked_model(checked_models, name):
    """(None, the report of model `name` in the run of them all, that run's
    stderr): the run's exit status is test_several_model_files_in_one_run's.
    Skipped where this release cannot check the model."""
    why_not = why_not_here(next(limits for model, limits, _ in CHECKED if model == name))
    if why_not:
        pytest.skip(why_not)
    return None, checked_models["reports"][name], checked_models["run"][2]


def test_several_model_files_in_one_run(checked_models):
    """One report for each file, in order; exit 0 where every one is right."""
    code, report, stderr = checked_models["run"]
    reports = report.get("models", [report])  # one file: its report alone
    assert [made["model"] for made in reports] == [str(path) for path in checked_models["paths"]]
    assert code == 0 and all(made["ok"] for made in reports), stderr
    if len(reports) > 1:  # what the command ran on once, then each model's facts
        assert report["keras_clone_fix"] and "family" not in report


@pytest.mark.check_command
def test_a_model_checked_after_others_is_checked_as_alone(checked_models):
    """Each side checks the files one after the other in one interpreter: the
    last one's report is the one a run of it alone gives (costs aside)."""
    path = checked_models["paths"][-1]
    name = os.path.splitext(os.path.basename(str(path)))[0]
    code, alone, stderr = check(path, "--timesteps", "5")
    assert code == 0, stderr
    assert without_costs(alone) == without_costs(checked_models["reports"][name])


def without_costs(report):
    """A model's report less each side's time and memory (and the run's facts)."""
    return dict((key, value) for key, value in report.items()
                if key not in ("sides", "python", "executable", "keras_clone_fix"))


def test_multi_output_masking_layer_from_a_module_of_custom_objects(checked_models):
    code, report, stderr = checked_model(checked_models, "multi_output_masking")
    assert_fixed(code, report, stderr)
    if KERAS_AFFECTED:  # tf.keras 1.14 (the one that builds it) gets multi-output masks right
        assert report["risks"][0]["risk"] == "a layer with 2 outputs carrying masks"
    if KERAS_AFFECTED:
        expected = {"clone": "error", "nested": "error", "called_twice": "error"}
        if HAS_MULTI_GPU_MODEL:
            expected["multi_gpu"] = "error"
        assert_unpatched_fails(report, expected)


def test_seq2seq_of_the_keras_examples(checked_models):
    code, report, stderr = checked_model(checked_models, "seq2seq")
    assert_fixed(code, report, stderr)
    if not MASKS_WRONG:  # tf.keras 1.15 too: its routines take the states as inputs
        assert report["risks"] == []
    else:  # tf.keras 1.13 - 1.14 clone it right, but not a Bidirectional one: named
        assert report["risks"][0]["risk"] in ("called with tensor arguments: initial_state",
                                              "an RNN called with initial_state or constants")
    # tf.keras keeps clone_model in its own models module before 1.11: found there.
    assert report["checks"]["clone"]["patched"]["result"] == "ok"
    if KERAS_AFFECTED and (2, 0, 9) <= VERSION < (2, 2, 5) or \
            TF_KERAS_AFFECTED and (1, 5) <= TENSORFLOW < (1, 13):
        assert_unpatched_fails(report, {"clone": "error"})


def test_nested_masked_model(checked_models):
    code, report, stderr = checked_model(checked_models, "nested_masked")
    assert_fixed(code, report, stderr)
    assert not MASKS_WRONG or "a nested model fed masked tensors" in risks_of(report, "inner")
    if KERAS_AFFECTED and VERSION >= (2, 2, 5):  # silently wrong, not an error
        assert_unpatched_fails(report, {"clone": "wrong"})


def test_nested_model_whose_output_mask_matters(checked_models):
    """Loaded without the fix, the LSTM after the nested model counts the padding."""
    code, report, stderr = checked_model(checked_models, "nested_model_with_its_own_mask")
    assert_fixed(code, report, stderr)
    assert "a nested model whose outputs carry masks" in risks_of(report, "inner")
    assert_unpatched_fails(report, {"load": "wrong"})
    assert report["checks"]["load"]["unpatched"]["detail"].startswith(
        "largest absolute difference ")


def test_layers_called_on_each_others_outputs(checked_models):
    """Loaded without the fix, the nested model's calls are wired otherwise,
    silently (keras-team/keras#11159)."""
    code, report, stderr = checked_model(checked_models, "calls_in_a_cycle")
    assert_fixed(code, report, stderr)
    at_risk = ("a layer whose calls the model's config makes out of order (one waits for "
               "another layer's)") in risks_of(report, "cycle/s")
    assert at_risk is FROM_CONFIG_REORDERS
    if FROM_CONFIG_REORDERS:  # tf.keras of TensorFlow 1.15 too: never "not affected"
        assert_unpatched_fails(report, {"load": "wrong"})
        assert "not affected" not in report["summary"]


def test_shared_masked_encoder_saved_as_json_without_weights(checked_models):
    """Both sides start from the same initial weights, and the report says so."""
    code, report, stderr = checked_model(checked_models, "shared_masked_encoder")
    assert_fixed(code, report, stderr)
    assert report["weights"].startswith("the model's initial weights: the JSON has none")
    assert not MASKS_WRONG or "a model shared by 2 calls" in risks_of(report, "encoder")
    if HAS_MULTI_GPU_MODEL and VERSION < (2, 2, 3):  # its two outputs are both "encoder"
        assert "output names repeat (encoder)" in \
            report["checks"]["multi_gpu"]["patched"]["detail"]
    if MASKS_WRONG:
        # Loaded without the fix, the second call uses the first call's mask,
        # silently, and so does the model made again from its config; called on
        # new tensors, a mask of the original's graph. keras 2.0.0 - 2.0.2 record
        # the propagated mask among the call arguments: loading it without the
        # fix already needs the original's placeholder.
        assert_unpatched_fails(report, {"load": "error"} if KERAS_AFFECTED and VERSION < (
            2, 0, 3) else {"load": "wrong", "from_config": "wrong", "nested": "error",
                           "called_twice": "error"})


def test_masked_gru_whose_state_is_the_output(checked_models):
    """Masking -> the user's layer -> GRU(return_state=True), the state into
    the user's activation: keras 2.2.4 records the GRU's mask in the clone's
    call arguments, so cloning the clone needs the first clone's placeholder
    (measured). Every rebuild finds the user's objects: they are in scope."""
    code, report, stderr = checked_model(checked_models, "masked_gru_state")
    assert_fixed(code, report, stderr)
    assert report["not_run"] == {}, report["summary"]
    if MASKS_WRONG:
        assert [risk["layer"] for risk in report["risks"]][:1] == ["gru"], report["risks"]
    if KERAS_AFFECTED and VERSION == (2, 2, 4):
        expected = {"clone_of_clone": "error"}
        if HAS_MULTI_GPU_MODEL:
            expected["multi_gpu"] = "error"
        assert_unpatched_fails(report, expected)
        assert "You must feed a value for placeholder tensor" in \
            report["checks"]["clone_of_clone"]["unpatched"]["detail"]


@skip_if(*USER_MODULE_LIMITS)
@pytest.mark.skipif(find_clone_model(keras) is None, reason="keras has clone_model from 2.0.7")
def test_clones_made_without_the_custom_objects_could_not_run(tmp_path, user_module):
    """What clone_model of the model gives outside the scope of the objects
    it was loaded with (as `check` once cloned it): an unknown name, alike on
    both sides. The report says that these checks could not run and which
    option helps, not that the release cannot do them."""
    path = saved(check_models.randomized(check_models.masked_gru_state(keras, user_module[1])),
                 tmp_path)
    model = keras.models.load_model(str(path), custom_objects=user_module[1].get_custom_objects())
    inputs = make_inputs(keras, model, 4, 8, 0)
    checks = Checks(keras, model, inputs, inputs)
    results = collections.OrderedDict((name, {"result": "ok", "detail": ""}) for name in CHECKS)
    for name in ("clone", "clone_of_clone"):
        try:
            results[name] = getattr(checks, "check_" + name)()
        except Exception as error:
            results[name] = error_result(error)
    side = dict(facts(FAMILY, keras), risks=[], checks=results)
    made = section(str(path), "weights from the model file", {"unpatched": side, "patched": side})
    assert list(made["not_run"]) == ["clone", "clone_of_clone"], results
    assert made["not_run"]["clone"]["cause"] == "a name unknown to the rebuild"
    assert made["not_run"]["clone"]["error"].startswith("ValueError: Unknown activation function")
    assert made["ok"] is False and made["summary"].startswith(
        "No verdict on clone and clone_of_clone; every check that ran matches the model's "
        "predictions without and with the fix."), made["summary"]
    assert made["summary"].endswith("could not run, without or with the fix: a name unknown to "
                                    "the rebuild ({}); give it with --custom-objects.".format(
                                        made["not_run"]["clone"]["error"]))
    assert "cannot do" not in made["summary"] and "breaks none" not in made["summary"]


def test_plain_model_has_no_risk(checked_models):
    code, report, stderr = checked_model(checked_models, "plain")
    assert_fixed(code, report, stderr)
    assert report["risks"] == [] and stderr == ""
    assert set(results(report, "unpatched").values()) <= {"ok", "unavailable"}


@compiles_for_minutes_on_theano
@pytest.mark.check_command
def test_an_application_model_in_words(tmp_path):
    """The report for people, with progress lines on stderr."""
    finished = run_python(["-m", "keras_clone_fix", "check",
                           str(saved(check_models.vgg16(keras), tmp_path)), "--batch", "2"]
                          + FAMILY_OPTIONS)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    lines = finished.stdout.splitlines()
    assert lines[0] == "model: {} (weights from the model file)".format(tmp_path / "model.h5")
    # The release's bugs counted in one line, their list a command away.
    assert lines[1].endswith("; " + LISTED_BY) is not UNAFFECTED_RELEASE, lines[1]
    assert max(len(line) for line in lines) <= 200, max(lines, key=len)
    assert "at risk: nothing in this model is at risk of these bugs (checked anyway)" in lines
    assert "every check matches the model's predictions" in lines[-1]
    assert lines[-2].startswith("time, peak memory ") and lines[-2].count(" MB") == (
        1 if UNAFFECTED_RELEASE else 2)
    progress = finished.stderr.splitlines()
    assert progress[0] == first_progress_line("at the same time", tmp_path / "model.h5")
    assert any(line.startswith("check: with keras-clone-fix: clone: ") and line.endswith(" s)")
               for line in progress)
    assert progress[-1].startswith("check: done in ")
    if not UNAFFECTED_RELEASE:  # at the same time: the whole took less than the sides added
        assert seconds_done(progress) < sum(seconds_of_sides(lines)), finished.stdout + \
            finished.stderr


def first_progress_line(order, loaded):
    """Where the release is not affected, no side without the fix starts:
    its results would say nothing."""
    if UNAFFECTED_RELEASE:
        return "check: tf.keras of tensorflow {} is not affected: only the side with the fix " \
               "imports tf.keras and loads {} in a new interpreter (TensorFlow and a large " \
               "model take a while)".format(tensorflow.__version__, loaded)
    return "check: the sides with and without the fix each import {} and load {} in a new " \
           "interpreter, {} (TensorFlow and a large model take a while)".format(
               FAMILY, loaded, order)


def seconds_of_sides(lines):
    """Each side's wall time for each model (from its start to its result), from the report."""
    return [float(seconds) for line in lines if line.startswith("time, peak memory ")
            for seconds in re.findall(r"([0-9.]+) s, ", line)]


def seconds_done(progress):
    """The whole command's wall time, from its last progress line."""
    return float(re.match(r"check: done in ([0-9.]+) s$", progress[-1]).group(1))


def started_line(progress, heading, text="imported "):
    start = "check: {}: {}".format(heading, text)
    return next(line for line in progress if line.startswith(start))


@pytest.mark.check_command
def test_jobs_1_runs_the_sides_one_after_the_other(tmp_path):
    """Two model files, in words: a section for each, in order."""
    paths = [saved(check_models.plain(keras), tmp_path, name) for name in ("one.h5", "two.h5")]
    finished = run_python(["-m", "keras_clone_fix", "check", "--jobs", "1"]
                          + [str(path) for path in paths] + FAMILY_OPTIONS)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    lines, progress = finished.stdout.splitlines(), finished.stderr.splitlines()
    assert progress[0] == first_progress_line("one after the other", "2 model files in turn")
    assert "check: with keras-clone-fix: model 2 of 2: {}".format(paths[1]) in progress
    models = [index for index, line in enumerate(lines) if line.startswith("model: ")]
    assert [lines[index] for index in models] == [
        "model: {} (weights from the model file)".format(path) for path in paths]
    assert lines[models[1] - 1] == "" and lines[models[1] - 2] == lines[-1]  # two summaries
    assert UNAFFECTED_RELEASE is not any("without the fix" in line for line in progress)
    if not UNAFFECTED_RELEASE:
        assert progress.index(started_line(progress, "with keras-clone-fix", "finished in ")) < \
            progress.index(started_line(progress, "without the fix"))
    # one after the other: the whole took at least the sides added (each rounded to 0.1 s)
    assert seconds_done(progress) >= sum(seconds_of_sides(lines)) - 0.1 * len(models) * 2


def test_a_failure_alike_on_both_sides_names_keras_and_its_backend(checked_models):
    """keras 2.2.4's multi_gpu_model cannot relocate this model on TensorFlow
    1.15 (tensorflow#30728), fix or no fix: the pair is named."""
    code, report, stderr = checked_model(checked_models, "conv_batch_norm")
    multi_gpu = report["checks"]["multi_gpu"]
    if KERAS_AFFECTED and VERSION == (2, 2, 4) and TENSORFLOW == (1, 15):
        assert multi_gpu["unpatched"] == multi_gpu["patched"] and \
            multi_gpu["patched"]["result"] == "error", multi_gpu
    if multi_gpu["patched"]["result"] == "error":
        assert report["ok"] is True
        assert report["summary"].endswith(
            "multi_gpu fails alike without and with the fix: keras {} with tensorflow {} cannot "
            "do it on this model.".format(keras.__version__, tensorflow.__version__))
    else:
        assert_fixed(code, report, stderr)


@pytest.mark.skipif(not TF_KERAS_PACKAGE, reason="needs tf_keras on TensorFlow 2.16+")
def test_tf_keras_package_on_tensorflow_2_16(checked_models):
    """tf.keras of TensorFlow 2.16+ is Keras 3: --tf-keras checks with tf_keras, and says so."""
    code, report, stderr = checked_model(checked_models, "plain")
    assert_fixed(code, report, stderr)
    assert report["tf_keras"] == keras.__version__ and report["affected"] is False
    assert report["reason"].endswith("checked with the tf_keras package {} (tf.keras of "
                                     "TensorFlow 2.16 and later is Keras 3)".format(
                                         keras.__version__))
    assert report["summary"].startswith("tf_keras {} of tensorflow {} is not affected".format(
        keras.__version__, tensorflow.__version__))


@pytest.mark.skipif(not TF_KERAS_PACKAGE, reason="needs tf_keras on TensorFlow 2.16+")
def test_eager_tf_keras_is_called_not_traced_by_predict(monkeypatch):
    """Where tf.keras executes eagerly, the checks call the model in
    inference mode: predict() traces a function for each model there, and
    computes the same."""
    import numpy
    model = check_models.randomized(check_models.shared_masked_encoder(keras))
    inputs = make_inputs(keras, model, 4, 8, 0)
    expected = as_list(model.predict(inputs, batch_size=4))
    monkeypatch.setattr(type(model), "predict", lambda *args, **kwargs: pytest.fail("traced"))
    got = predict(keras, model, inputs)
    assert len(got) == len(expected) == 2
    for want, have in zip(expected, got):
        numpy.testing.assert_allclose(have, want, rtol=1e-6, atol=1e-6)


# --- bad input: one clear line, exit status 2, the JSON says so ---------------

def assert_bad_input(checked, *words):
    code, report, stderr = checked
    assert code == 2 and report is not None, stderr
    assert report["ok"] is False and report["model"] and report["keras_clone_fix"]
    assert stderr == "python -m keras_clone_fix check: {}\n".format(report["error"])
    for word in words:
        assert word in stderr, stderr


@pytest.mark.check_command
def test_missing_file(tmp_path):
    assert_bad_input(check(tmp_path / "nothing.h5"),
                     "nothing.h5: no such file or SavedModel folder")


@pytest.mark.parametrize("content, words", [
    (None, "is a folder but not a SavedModel (it has no saved_model.pb)"),
    (b"a text", "its saved_model.pb is not a SavedModel's protocol buffer"),
    (b"", "is a SavedModel but not of a Keras model"),
])
@pytest.mark.check_command
def test_folder_that_is_not_a_saved_model_of_keras(tmp_path, content, words):
    folder = tmp_path / "model"
    folder.mkdir()
    if content is not None:
        (folder / "saved_model.pb").write_bytes(content)
    assert_bad_input(check(folder), str(folder), words)


@pytest.mark.check_command
def test_a_missing_file_of_several_is_named_and_nothing_runs(tmp_path):
    code, report, stderr = check(saved(check_models.plain(keras), tmp_path),
                                 tmp_path / "nothing.h5")
    assert_bad_input((code, report, stderr), "nothing.h5: no such file")
    assert report["model"] == str(tmp_path / "nothing.h5") and "family" not in report


@pytest.mark.check_command
def test_weights_go_with_one_model_file(tmp_path):
    assert_bad_input(check("one.json", "two.json", "--weights", "weights.h5"),
                     "--weights and --inputs go with one model file, not 2")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root reads any file")
@pytest.mark.check_command
def test_unreadable_file(tmp_path):
    path = saved(check_models.plain(keras), tmp_path)
    os.chmod(str(path), 0)
    assert_bad_input(check(path), "model.h5: cannot be read")


@pytest.mark.check_command
def test_hdf5_that_is_not_a_model(tmp_path):
    import h5py
    path = tmp_path / "data.h5"
    with h5py.File(str(path), "w") as data:
        data["x"] = [1, 2, 3]
    assert_bad_input(check(path), "is an HDF5 file but not a Keras model")


@pytest.mark.parametrize("content, words", [
    (u'{"layers": []}', "is JSON but not a Keras model"),
    (u"a text", "is neither an HDF5 file nor JSON"),
])
@pytest.mark.check_command
def test_json_or_text_that_is_not_a_model(tmp_path, content, words):
    path = tmp_path / "model.json"
    path.write_text(content)
    assert_bad_input(check(path), words)


@pytest.mark.skipif(not MULTI_OUTPUT_BUILDS, reason="needs a multi-output layer")
@pytest.mark.skipif(TF_KERAS_PACKAGE, reason="tf_keras 2.21 loads this file without "
                    "--custom-objects, and every check matches (measured)")
@pytest.mark.check_command
def test_unknown_layer_class_names_it_and_the_option(tmp_path, user_module):
    model = check_models.multi_output_masking(keras, user_module[1].SplitOutputs)
    assert_bad_input(check(saved(model, tmp_path)), "layer class 'SplitOutputs' is not known",
                     "--custom-objects MODULE:NAME")


@pytest.mark.parametrize("spec, words", [
    ("no_such_module_here", "cannot import module no_such_module_here"),
    ("user_layers:NOT_A_DICT", "NOT_A_DICT is neither a dict nor a function returning one"),
])
@pytest.mark.check_command
def test_bad_custom_objects(tmp_path, user_module, spec, words):
    path = saved(check_models.plain(keras), tmp_path)
    assert_bad_input(check(path, "--custom-objects", spec, pythonpath=user_module[0]),
                     "--custom-objects " + spec, words)


@pytest.mark.check_command
def test_json_with_weights_that_do_not_fit(tmp_path):
    path = saved_json(check_models.plain(keras), tmp_path)
    other = check_models.shared_masked_encoder(keras)  # builds on every release
    other.save_weights(str(tmp_path / "other.h5"))
    assert_bad_input(check(path, "--weights", str(tmp_path / "other.h5")),
                     "does not fit the model")


@pytest.mark.parametrize("options", [[], ["--batch", "0"], ["--keras", "--tf-keras"]])
@pytest.mark.check_command
def test_misuse(options):
    finished = run_python(["-m", "keras_clone_fix", "check"] + options
                          + (["model.h5"] if options else []))
    assert finished.returncode == 2 and "usage: python -m keras_clone_fix check" in \
        finished.stderr and finished.stdout == ""


@pytest.mark.check_command
def test_misuse_with_json_still_prints_json():
    finished = run_python(["-m", "keras_clone_fix", "check", "model.h5", "--json", "--batch", "0"])
    report = json.loads(finished.stdout)
    assert finished.returncode == 2 and report["ok"] is False
    assert report["error"] == "argument --batch: '0' is not a positive integer"
    assert report["error"] in finished.stderr
