"""python -m keras_clone_fix: the self-check."""

import collections
import json

import pytest

from conftest import AFFECTED, KERAS, affected_only, installed, run_python_once
from keras_clone_fix._affected import bugs_of, is_affected
from keras_clone_fix._bugs import LISTED_BY
from keras_clone_fix._cli import parse_arguments

TENSORFLOW = installed("tensorflow")
BACKEND = None
if KERAS:
    from keras import backend
    BACKEND = backend.backend()


def self_check(*options, **kwargs):
    return run_python_once(["-m", "keras_clone_fix"] + list(options), **kwargs)


def keras_section(report):
    sections = [made for made in report["models"] if made["family"] == "keras"]
    return sections[0] if sections else None


def side_results(made, side):
    return dict((name, sides[side]["result"]) for name, sides in made["checks"].items()
                if side in sides)


def test_json_report_matches_the_environment():
    finished = self_check("--json")
    report = json.loads(finished.stdout, object_pairs_hook=collections.OrderedDict)
    assert report["ok"] is True and finished.returncode == 0
    if KERAS is None and not TENSORFLOW:
        assert report["models"] == [] and "keras is not installed" in report["result"]
        return
    assert report["result"] == "ok" and (report["patched"] or not AFFECTED)
    made = keras_section(report)
    if not AFFECTED:  # tests/test_tf_keras.py checks tf.keras
        assert made is None
        return
    assert made["model"] == "the built-in model" and made["keras"] == ".".join(map(str, KERAS))
    assert made["affected"] is True and made["ok"] is True
    assert made["bugs"] == [bug.name for bug in bugs_of("keras", str(made["keras"]))]
    assert list(made["checks"]) == ["load", "from_config", "clone", "clone_of_clone", "nested",
                                    "called_twice", "multi_gpu", "original_unchanged"]
    results = side_results(made, "patched")
    assert set(results.values()) <= {"ok", "unavailable"} and results["called_twice"] == "ok"
    assert (results["clone"] == "ok") is (KERAS >= (2, 0, 7))
    masked = "called on a masked tensor (the mask goes into its call arguments)"
    assert [(risk["layer"], risk["risk"]) for risk in made["risks"]] == (
        [("two_outputs_1", "a layer with 2 outputs carrying masks"), ("two_outputs_1", masked),
         ("lstm_1", masked), ("lstm_2", masked)] if KERAS >= (2, 0, 7) else [("lstm_1", masked)]
        # 2.0.0 - 2.0.2 record the mask they propagated among the call's arguments.
        + ([("lstm_1", "called with tensor arguments: mask")] if KERAS < (2, 0, 3) else []))
    # Both routines are patched from 2.0.7; before, the one that calls a model on new tensors.
    clones = ["clone", "clone_of_clone"] if KERAS >= (2, 0, 7) else []
    assert all(risk["checks"] == clones + ["nested", "called_twice", "multi_gpu",
                                           "original_unchanged"] for risk in made["risks"])


@pytest.mark.skipif(KERAS is not None or TENSORFLOW,
                    reason="needs an environment without keras and tensorflow")
def test_without_keras_says_so_and_succeeds():
    finished = self_check()
    assert finished.returncode == 0
    assert "keras is not installed" in finished.stdout


@affected_only
def test_reports_the_fix_alone_without_the_backends_noise():
    finished = self_check(env={"TF_CPP_MIN_LOG_LEVEL": None, "PYTHONWARNINGS": None})
    assert finished.returncode == 0
    lines = finished.stdout.splitlines()
    assert [line.split(":")[0].strip() for line in lines[:8]] == [
        "python", "executable", "keras clone fix", "patched", "targets", "reason",
        "activated by", "not checked"]
    assert lines[3].split(":", 1)[1].strip() == "True"
    targets = json.loads(self_check("--json").stdout)["targets"]
    assert lines[4].split(":", 1)[1].strip() == "{0} of {0} patched".format(len(targets))
    assert lines[5].split(":", 1)[1].strip().endswith("; " + LISTED_BY)
    assert lines[6].split(":", 1)[1].strip() == ".pth at interpreter start"
    assert lines[8:11] == ["", "model: the built-in model (its initial weights)",
                           "{} (backend {}); {}".format(
                               is_affected("keras", ".".join(map(str, KERAS)))[1], BACKEND,
                               LISTED_BY)]
    assert lines[-1] == "result: ok".rjust(len(lines[-1]))
    assert finished.stderr == ""
    assert max(len(line) for line in lines) <= 200, max(lines, key=len)


def test_bugs_lists_the_bugs_of_each_installed_release_one_a_line():
    finished, as_json = self_check("--bugs"), self_check("--bugs", "--json")
    report = json.loads(as_json.stdout)
    assert finished.returncode == as_json.returncode == 0 and report["ok"] is True
    assert [release["family"] for release in report["releases"]] == [
        package for package, there in (("keras", KERAS), ("tensorflow", TENSORFLOW)) if there]
    lines = finished.stdout.splitlines()
    for release in report["releases"]:
        bugs = bugs_of(release["family"], str(release["version"]))  # JSON: unicode on Python 2
        assert [bug["name"] for bug in release["bugs"]] == [bug.name for bug in bugs]
        at = lines.index(release["reason"])
        assert [line.split("] ", 1)[1] for line in lines[at + 1:at + 1 + len(bugs)]] == [
            bug.words for bug in bugs]
    assert max(len(line) for line in lines) <= 200, max(lines, key=len)


@pytest.mark.skipif(not AFFECTED, reason="needs an affected Keras, 2.0.0 - 2.3.1")
@pytest.mark.unpatched
def test_fails_clearly_when_the_fix_is_switched_off():
    finished = self_check("--json", env={"KERAS_CLONE_FIX": "0"})
    report = json.loads(finished.stdout)
    assert finished.returncode == 1 and report["result"] == "FAILED" and report["ok"] is False
    assert report["reason"] == "activation switched off by KERAS_CLONE_FIX=0"
    made = keras_section(report)
    results = side_results(made, "unpatched")
    assert side_results(made, "patched") == {} and made["ok"] is False
    if KERAS >= (2, 0, 7):
        assert made["checks"]["clone"]["unpatched"]["detail"].startswith(
            "AssertionError: Could not compute output")
        assert results["nested"] == results["called_twice"] == "error"
    else:  # 2.0.0 - 2.0.2 pass the original's mask tensor: a placeholder to feed
        assert results["called_twice"] in ("wrong", "error")
    assert made["summary"].endswith("keras-clone-fix is not active here.")


def test_bad_option_is_named():
    finished = self_check("--jsn")
    assert finished.returncode == 2 and "--jsn" in finished.stderr


@pytest.mark.parametrize("argv, command", [
    ([], None), (["--json"], None), (["--bugs"], None), (["check", "model.h5"], "check"),
    (["check", "model.h5", "--tf-keras", "--custom-objects", "a:b", "--custom-objects", "c",
      "--batch", "2", "--json", "--quiet"], "check"),
])
def test_parse_arguments(argv, command):
    arguments = parse_arguments(argv)
    assert arguments.command == command
    if command:
        assert arguments.model_files == ["model.h5"]
    if len(argv) > 2:
        assert (arguments.family, arguments.custom_objects, arguments.batch, arguments.json,
                arguments.quiet) == ("tf.keras", ["a:b", "c"], 2, True, True)


def test_help_says_the_self_check_checks_every_route(capsys):
    with pytest.raises(SystemExit):
        parse_arguments(["--help"])
    assert "clone_model, calls on new tensors and loading" in " ".join(
        capsys.readouterr().out.split())


def test_parse_arguments_takes_several_model_files():
    assert parse_arguments(["check", "a.h5", "b.json", "--json"]).model_files == ["a.h5", "b.json"]


@pytest.mark.parametrize("argv", [["check"], ["chek", "model.h5"], ["check", "m.h5", "--seed"]])
def test_parse_arguments_exits_2_on_bad_arguments(argv):
    with pytest.raises(SystemExit) as exited:
        parse_arguments(argv)
    assert exited.value.code == 2
