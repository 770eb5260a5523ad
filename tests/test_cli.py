"""python -m keras_clone_fix: the self-check."""

import json

import pytest

from conftest import AFFECTED, KERAS, affected_only, installed, run_python

TENSORFLOW = installed("tensorflow")


def self_check(*options, **kwargs):
    return run_python(["-m", "keras_clone_fix"] + list(options), **kwargs)


def test_json_report_matches_the_environment():
    finished = self_check("--json")
    report = json.loads(finished.stdout)
    assert report["ok"] is True and finished.returncode == 0
    if KERAS is None and not TENSORFLOW:
        assert report["keras"] is None and "keras is not installed" in report["result"]
        return
    assert ("tf_keras" in report) is TENSORFLOW  # tests/test_tf_keras.py checks what it says
    if KERAS is None:
        assert report["keras"] is None and report["result"] == "ok"
    else:
        assert report["patched"] is AFFECTED and report["affected"] is AFFECTED
        assert report["clone"].startswith(
            "clone_model works" if KERAS >= (2, 0, 7) else "keras {} has no clone_model".format(
                report["keras"]))
        assert report["call_on_new_tensors"].startswith(
            "calling the model on a new tensor works" if KERAS >= (2, 0, 7) else
            "calling the model on two new tensors works")
        assert report["result"] == "ok"


@pytest.mark.skipif(KERAS is not None or TENSORFLOW,
                    reason="needs an environment without keras and tensorflow")
def test_without_keras_says_so_and_succeeds():
    finished = self_check()
    assert finished.returncode == 0
    assert "keras is not installed" in finished.stdout


@affected_only
def test_reports_the_fix_and_how_it_was_activated():
    finished = self_check()
    assert finished.returncode == 0
    assert "activated by: .pth at interpreter start" in finished.stdout
    assert "patched: True" in finished.stdout


@affected_only
def test_prints_the_report_alone_without_the_backends_noise():
    finished = self_check(env={"TF_CPP_MIN_LOG_LEVEL": None, "PYTHONWARNINGS": None})
    assert [line.split(":")[0].strip() for line in finished.stdout.splitlines()] == [
        "python", "executable", "keras clone fix", "keras", "backend", "affected", "clone",
        "call on new tensors"] + (["tf keras"] if TENSORFLOW else []) + [
        "patched", "targets", "reason", "activated by", "result"]
    assert finished.stderr == ""


@pytest.mark.skipif(not AFFECTED, reason="needs an affected Keras, 2.0.0 - 2.3.1")
def test_fails_clearly_when_the_fix_is_switched_off():
    finished = self_check(env={"KERAS_CLONE_FIX": "0"})
    assert finished.returncode == 1
    if KERAS >= (2, 0, 7):
        assert "clone_model failed: AssertionError: Could not compute output" in finished.stdout
        assert "calling the model on a new tensor failed: " in finished.stdout
    else:  # 2.0.0 - 2.0.2 pass the original's mask tensor: a placeholder to feed
        assert ("the second call used the first's mask" in finished.stdout
                or "failed: InvalidArgumentError: You must feed a value" in finished.stdout)
    assert "result: FAILED" in finished.stdout
    assert "activation switched off by KERAS_CLONE_FIX=0" in finished.stdout


def test_bad_option_is_named():
    finished = self_check("--jsn")
    assert finished.returncode == 2 and "--jsn" in finished.stderr
