"""`python -m keras_clone_fix`: diagnose this environment and prove the fix
on a built-in model (`--bugs`: list the bugs of its releases); `python -m
keras_clone_fix check MODEL_FILE`: the same checks on a user's saved model,
with and without the fix."""

import argparse
import collections
import glob
import importlib
import logging
import os
import platform
import re
import shutil
import sys
import tempfile
import time
import warnings

import keras_clone_fix
from keras_clone_fix import _builtin_model, _check, _model_file, _report, _side
from keras_clone_fix._affected import (
    bugs_of, imported_version, is_affected_running, parse_version)
from keras_clone_fix._bugs import ROUTE_WORDS, ROUTES, routes_broken
from keras_clone_fix._model_file import KERAS, TF_KERAS

WORKS, FAILS, USAGE = 0, 1, 2
NOTHING_TO_FIX = "keras is not installed, nor tensorflow: nothing to fix"
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


def _module_places(name):
    """Where a top-level module is imported from (its package's directories,
    or its file), found without importing it; None where it is not found."""
    try:
        from importlib.util import find_spec
    except ImportError:  # Python 2
        import imp
        try:
            return [imp.find_module(name)[1]]
        except ImportError:
            return None
    try:
        spec = find_spec(name)
    except ValueError:  # imported already, without a __spec__ (TensorFlow 1.14)
        module = sys.modules[name]
        return list(getattr(module, "__path__", [])) or [getattr(module, "__file__", None)]
    if spec is None:
        return None
    return list(spec.submodule_search_locations or []) or [spec.origin]


def installed(name):
    """Whether a top-level module can be imported, without importing it."""
    return sys.modules.get(name) is not None or _module_places(name) is not None


def installed_version(name):
    """The version of the distribution that installed a top-level module, as
    its metadata beside it says (pip's *.dist-info, setuptools' *.egg-info,
    whose top_level.txt names the module), importing nothing; None where it
    is not found or not one."""
    versions = set()
    # A module with no file (None) has no directory: "" would glob the current one.
    for place in filter(None, _module_places(name) or []):
        for metadata in glob.glob(os.path.join(os.path.dirname(place), "*-*.*-info")):
            try:
                with open(os.path.join(metadata, "top_level.txt")) as opened:
                    modules = opened.read().split()
            except (IOError, OSError):
                continue
            if name in modules:  # Keras-2.2.4.dist-info, Keras-2.2.4-py3.6.egg-info
                versions.add(os.path.splitext(os.path.basename(metadata))[0].split("-")[1])
    return versions.pop() if len(versions) == 1 else None


def _header():
    return collections.OrderedDict([
        ("python", platform.python_version()), ("executable", sys.executable),
        ("keras_clone_fix", keras_clone_fix.__version__)])


# --- the self-check: the engine on the built-in model, in this interpreter --

def _family_to_check(family):
    """(keras module, None) to check, or (None, why not)."""
    try:
        if family == KERAS:
            keras = _import_keras()
            affected, reason = is_affected_running("keras", keras.__version__, imported_version)
        else:
            import tensorflow
            keras = getattr(tensorflow, "keras", None)
            affected, reason = is_affected_running("tensorflow", tensorflow.__version__,
                                                   imported_version)
    except ImportError as error:
        return None, "{}: not installed ({})".format(family, error)
    return (keras, None) if affected and keras is not None else (None, reason + "; not checked")


def self_check():
    """The report (dict, in the order to show) and the exit code."""
    report = _header()
    _quiet_backends()
    families = [family for family, package in ((KERAS, "keras"), (TF_KERAS, "tensorflow"))
                if installed(package)]
    not_checked, sections = [], []
    for family in families:
        keras, why_not = _family_to_check(family)
        if keras is None:
            not_checked.append(why_not)
            continue
        side, _ = _side.run_checks(family, _builtin_model.build)
        sections.append(_report.section(
            "the built-in model", "its initial weights",
            {_report.PATCHED if side["patched"] else _report.UNPATCHED: side}))
    status = keras_clone_fix.status()
    report.update([("patched", status.patched), ("targets", status.targets),
                   ("reason", status.reason), ("activated_by", status.activated_by),
                   ("not_checked", not_checked), ("models", sections)])
    works = all(made["ok"] for made in sections)
    if not families:
        report["result"] = NOTHING_TO_FIX
    else:
        report["result"] = "ok" if works else "FAILED"
    return report, WORKS if works else FAILS


def _print_self_check(report):
    width = max(len(key) for key in report)
    for key, value in report.items():
        if key == "targets":  # --json names them
            value = "{} of {} patched".format(sum(value.values()), len(value)) if value else \
                "none here"
        if key == "models":
            for made in value:
                print("")
                print("\n".join(_report.text(made)))
            print("")
        else:
            print("{:>{}}: {}".format(key.replace("_", " "), width, value))


# --- --bugs: the bugs of the installed releases -------------------------------

def _release_version(package):
    """The version of an installed keras or tensorflow: its metadata's,
    else (no metadata found) the imported module's; None where it is not
    installed."""
    version = installed_version(package)
    if version is None and installed(package):
        module = _import_keras() if package == "keras" else importlib.import_module(package)
        version = getattr(module, "__version__", None)
    return version


def bugs_report():
    """The report of --bugs (dict, in the order to show): for each installed
    package (keras, tensorflow: its tf.keras), the release's reason and its
    own bugs (a front's are its fronted release's, listed under that one)."""
    report = _header()
    releases = []
    for package in ("keras", "tensorflow"):
        if not installed(package):
            continue
        version = _release_version(package)
        affected, reason = is_affected_running(package, version, _release_version)
        releases.append(collections.OrderedDict([
            ("family", package), ("version", version), ("affected", affected),
            ("reason", reason), ("bugs", [collections.OrderedDict([
                ("name", bug.name), ("words", bug.words),
                ("routes", routes_broken([bug], package, parse_version(version)))])
                for bug in bugs_of(package, version)])]))
    report["releases"] = releases
    report["routes"] = collections.OrderedDict(
        (route, ROUTE_WORDS[route]) for route in ROUTES)
    return report


def _print_bugs(report):
    if not report["releases"]:
        print(NOTHING_TO_FIX)
    for release in report["releases"]:
        print(release["reason"])
        for bug in release["bugs"]:
            print("  [{}] {}".format(", ".join(bug["routes"]), bug["words"]))
    if any(release["bugs"] for release in report["releases"]):
        print("routes: " + "; ".join("{}: {}".format(route, words)
                                     for route, words in report["routes"].items()))


# --- check MODEL_FILE: the engine in two interpreters, with and without the fix --

def _print_error(message):
    sys.stderr.write("python -m keras_clone_fix check: {}\n".format(message))


def _failed(arguments, message, known, code):
    """Exit `code` with the message on stderr; with --json, stdout still
    holds the report: ok false, the error, the model file it is about (of
    several, the first that could not be checked) and what was known."""
    _print_error(message)
    if arguments.json:
        report = _header()
        report.update([("ok", False), ("error", message),
                       ("model", known.get("model", arguments.model_files[0]))])
        report.update((key, value) for key, value in known.items() if key not in report)
        print(_report.as_json(report))
    return code


def _weights_text(arguments, file_format):
    if arguments.weights:
        return "weights from " + arguments.weights
    if file_format == _model_file.SAVED_MODEL:
        return "a SavedModel folder, weights from it"
    if file_format != "json":
        return "weights from the model file"
    return "the model's initial weights: the JSON has none (give --weights FILE)"


def _not_loaded(patched, unpatched):
    """The side without the fix, which could not load the model: the other
    side's facts, its own failure, time and memory."""
    checks = collections.OrderedDict(
        (name, _check.result(_check.UNAVAILABLE, "not run: the model did not load"))
        for name in _check.CHECKS)
    checks["load"] = _check.result(_check.ERROR, unpatched["bad_input"])
    return dict(patched, checks=checks, seconds=unpatched["seconds"],
                peak_memory_mb=unpatched["peak_memory_mb"])


def _about_files(arguments):
    """What each model file says about itself, and the family that loads
    them all; BadInput (its `known` naming the file) for one that cannot be
    checked, or for files of two families with neither --keras nor --tf-keras."""
    if len(arguments.model_files) > 1 and (arguments.weights or arguments.inputs):
        raise _model_file.BadInput("--weights and --inputs go with one model file, not {}".format(
            len(arguments.model_files)))
    about = []
    for path in arguments.model_files:
        try:
            found = _model_file.inspect_file(path, arguments.weights)
            _model_file.refuse_code(path, found["code_layers"], arguments.no_safe_mode)
        except _model_file.BadInput as error:
            error.known.setdefault("model", path)
            raise
        about.append((path, found))
    saved_by = collections.OrderedDict(
        (found["saved_by"], path) for path, found in about if found["saved_by"])
    if len(saved_by) > 1 and not arguments.family:
        (one, one_path), (other, other_path) = list(saved_by.items())[:2]
        raise _model_file.BadInput("{} was saved by {}, {} by {}: give --keras or --tf-keras, or "
                                   "check them in separate runs".format(
                                       one_path, one, other_path, other))
    family = arguments.family or next(iter(saved_by), None) or (
        KERAS if installed("keras") else TF_KERAS)
    return about, family


def run_check(arguments):
    """The report of the model files (dict: one file's, or {"models": [one
    for each]}) and the exit code."""
    started = time.time()
    show = not (arguments.quiet or arguments.json)

    def progress(text):
        if show:
            sys.stderr.write("check: {}\n".format(text))
            sys.stderr.flush()

    about, family = _about_files(arguments)
    package = "keras" if family == KERAS else "tensorflow"
    if not installed(package):
        raise _model_file.BadInput("{}: {} loads this model, but {} is not installed".format(
            arguments.model_files[0], family, package), {"family": family})
    scratch = tempfile.mkdtemp(prefix="keras-clone-fix-check-")
    loaded = about[0][0] if len(about) == 1 else "{} model files in turn".format(len(about))
    try:
        request = dict(
            family=family, custom_objects=arguments.custom_objects, batch=arguments.batch,
            timesteps=arguments.timesteps, seed=arguments.seed, models=[dict(
                model_file=os.path.abspath(path), format=found["format"],
                keras_version=found["keras_version"],
                inputs=arguments.inputs and os.path.abspath(arguments.inputs),
                weights=arguments.weights and os.path.abspath(arguments.weights),
                initial_weights=os.path.join(scratch, "initial-{}.weights.h5".format(index)))
                for index, (path, found) in enumerate(about)])
        # Not affected: no side without the fix, whose results would be discarded.
        version = installed_version(package)
        affected = is_affected_running(package, version, installed_version)[0] if version else None
        if affected is False:
            progress("{}{} {} is not affected: only the side with the fix imports {} and loads "
                     "{} in a new interpreter (TensorFlow and a large model take a while)".format(
                         "" if package == "keras" else "tf.keras of ", package, version, family,
                         loaded))
        else:
            progress("the sides with and without the fix each import {} and load {} in a new "
                     "interpreter, {} (TensorFlow and a large model take a while)".format(
                         family, loaded,
                         "one after the other" if arguments.jobs == 1 else "at the same time"))
        models = _side.run_sides(request, scratch, arguments.jobs, lambda name, text: progress(
            "{}: {}".format(_report.HEADINGS[name], text)), affected)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    sections = [_section(arguments, path, found, sides)
                for (path, found), sides in zip(about, models)]
    progress("done in {:.1f} s".format(time.time() - started))
    report = _header()
    if len(sections) == 1:
        report.update(sections[0])
    else:
        report["models"] = sections
    return report, WORKS if all(made["ok"] for made in sections) else FAILS


def _section(arguments, path, about, sides):
    """The report of one model file from its sides' results; BadInput where
    it could not be checked."""
    if "bad_input" in sides[_report.PATCHED]:
        patched = sides[_report.PATCHED]
        patched["model"] = path
        raise _model_file.BadInput(patched.pop("bad_input"), patched)
    if "bad_input" in sides.get(_report.UNPATCHED, {}):
        sides[_report.UNPATCHED] = _not_loaded(sides[_report.PATCHED], sides[_report.UNPATCHED])
    sides = collections.OrderedDict(
        (name, sides[name]) for name in (_report.UNPATCHED, _report.PATCHED) if name in sides)
    made = _report.section(path, _weights_text(arguments, about["format"]), sides,
                           arguments.inputs or _report.MADE_INPUTS)
    _refuse_without_predictions(arguments, made)
    return made


def _refuse_without_predictions(arguments, made):
    """BadInput where the model could not predict on the inputs: then no
    check ran, and a verdict would say nothing."""
    load = made["checks"]["load"][_report.PATCHED]
    if load["result"] not in _check.FAILED:
        return
    inputs = "the arrays of " + arguments.inputs if arguments.inputs else \
        "inputs made from its input shapes and dtypes ({})".format(
            ", ".join(_report.shape_text(shape) for shape in made["inputs"]["shapes"]))
    raise _model_file.BadInput(
        "{}: no check ran: the model cannot predict on {}: {}; give it inputs it can take "
        "with --inputs FILE.npz (one array per input, by input name or arr_0, arr_1 ... in "
        "input order)".format(made["model"], inputs, load["detail"]),
        collections.OrderedDict((key, value) for key, value in made.items()
                                if key != "summary"))


# --- arguments ----------------------------------------------------------------

def _positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError("{!r} is not a positive integer".format(text))
    return value


class _CheckParser(argparse.ArgumentParser):
    """check's parser: asked for --json, a bad command line still gets its
    JSON report on stdout (ok false, the error) beside argparse's usage."""

    wants_json = False

    def error(self, message):
        if self.wants_json:
            report = _header()
            report.update([("ok", False), ("error", message)])
            print(_report.as_json(report))
        argparse.ArgumentParser.error(self, message)


def _check_parser():
    parser = _CheckParser(
        prog="python -m keras_clone_fix check",
        description="Check a saved model: whether this Keras breaks rebuilding it (clone_model, "
                    "nesting, shared calls, multi_gpu_model), and that keras-clone-fix "
                    "rebuilds it exactly. Each side runs in its own interpreter.")
    parser.add_argument("model_files", metavar="MODEL_FILE", nargs="+",
                        help="a model saved with model.save() (HDF5, or a SavedModel folder on "
                             "TensorFlow 2) or model.to_json() (JSON); "
                             "several are checked in turn by the same interpreters")
    parser.add_argument("--custom-objects", metavar="SPEC", action="append", default=[],
                        help="MODULE:NAME (a dict, or a function returning one) or MODULE (its "
                             "public classes and functions); repeatable")
    parser.add_argument("--weights", metavar="FILE",
                        help="weights (model.save_weights) for a JSON model file")
    family = parser.add_mutually_exclusive_group()
    family.add_argument("--keras", dest="family", action="store_const", const=KERAS,
                        help="load with the keras package")
    family.add_argument("--tf-keras", dest="family", action="store_const", const=TF_KERAS,
                        help="load with tf.keras")
    parser.add_argument("--batch", type=_positive, default=4, metavar="N",
                        help="rows of the inputs (default 4)")
    parser.add_argument("--timesteps", type=_positive, default=8, metavar="N",
                        help="length of the inputs' unknown dimensions (default 8)")
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help="seed of the inputs (default 0)")
    parser.add_argument("--inputs", metavar="FILE.npz",
                        help="the model's inputs (numpy.savez): one array per input, by input "
                             "name or arr_0, arr_1 ... in input order (default: made from the "
                             "model's input shapes and dtypes, token ids for Embeddings)")
    parser.add_argument("--no-safe-mode", action="store_true",
                        help="load a file whose Lambda layers hold Python code, which loading "
                             "runs (by default such a file is refused, as Keras's safe_mode "
                             "does)")
    parser.add_argument("--jobs", type=_positive, default=2, metavar="N",
                        help="interpreters at a time: 2 (the default) runs the sides with and "
                             "without the fix at the same time, 1 one after the other")
    parser.add_argument("--json", action="store_true",
                        help="print the report as JSON, at every exit status")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return parser


def parse_arguments(argv=None):
    """An argparse.Namespace: command is "check" or None (the self-check).
    Exits with status 2 on bad arguments, as argparse does."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["check"]:
        parser = _check_parser()
        parser.wants_json = "--json" in argv
        arguments = parser.parse_args(argv[1:])
        arguments.command = "check"
        return arguments
    parser = argparse.ArgumentParser(
        prog="python -m keras_clone_fix",
        description="Show whether the fix is active here, and prove it on a built-in model: "
                    "clone_model, calls on new tensors and loading, with the fix. "
                    "`python -m keras_clone_fix check MODEL_FILE` checks your own model "
                    "(see `check --help`).")
    parser.add_argument("--bugs", action="store_true",
                        help="list the bugs of the installed releases (keras, tf.keras), one "
                             "a line, instead of the self-check")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    arguments = parser.parse_args(argv)
    arguments.command = None
    return arguments


def main(argv=None):
    arguments = parse_arguments(argv)
    if arguments.command == "check":
        try:
            report, code = run_check(arguments)
        except _model_file.BadInput as error:
            return _failed(arguments, str(error), error.known, USAGE)
        except _side.SideFailed as error:
            return _failed(arguments, "{}\n{}".format(error, _report.REPORT_A_BUG), {}, FAILS)
    elif arguments.bugs:
        report, code = bugs_report(), WORKS
    else:
        report, code = self_check()
    if arguments.json:
        print(_report.as_json(dict(report, ok=code == WORKS)))
    elif arguments.command == "check":
        print("\n\n".join("\n".join(_report.text(made))
                           for made in report.get("models", [report])))
    elif arguments.bugs:
        _print_bugs(report)
    else:
        _print_self_check(report)
    return code
