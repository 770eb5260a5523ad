"""A side: the check engine run on models in one interpreter, whose fix
state (patched or not) is the one being checked.

`check` runs each side in its own interpreter (`python -m
keras_clone_fix._side REQUEST`), both at once unless told otherwise: it
writes a request (JSON) to its scratch directory, reads each side's
progress lines on stdout ("PROGRESS ...") as they come, and the side's
results (JSON: one for each model file, in order) and predictions (.npz,
one for each model) from the files the request names; the `load` check of
the side without the fix is the comparison of the two sides' predictions.
A side checks its model files one after the other, each on a new graph
(the backend's clear_session): Keras is imported once for all. The
self-check calls run_checks in its own (the caller's) interpreter, on the
built-in model, with the fix as it is there.
"""

import collections
import importlib
import json
import os
import subprocess
import sys
import threading
import time

from keras_clone_fix import _check, _given_inputs
from keras_clone_fix._affected import (
    api_version, bugs_running, imported_version, is_affected_running, package_of, parse_version)
from keras_clone_fix._model_file import KERAS, SAVED_MODEL, BadInput
from keras_clone_fix._report import PATCHED, UNPATCHED

PROGRESS = "PROGRESS "
KERAS_3_IN_TENSORFLOW = (2, 16, 0)


def family_module(family):
    """The keras module of a family: `keras`, or tf.keras; on TensorFlow
    2.16 and later, whose tf.keras is Keras 3, the tf_keras package (the
    tf.keras of TensorFlow 2.15) where it is installed."""
    if family == KERAS:
        import keras
        if _check.KERAS_AS_TF_KERAS <= api_version(keras) < _check.KERAS_3:
            return importlib.import_module("keras.api._v2.keras")
        return keras
    import tensorflow
    if parse_version(tensorflow.__version__, leading=True) >= KERAS_3_IN_TENSORFLOW:
        try:
            import tf_keras
            return tf_keras
        except ImportError:
            pass
    return tensorflow.keras


def facts(family, keras):
    """Versions, whether the release is affected and the names of its bugs
    (_bugs.BUGS), in report order."""
    found = collections.OrderedDict([("family", family)])
    tensorflow = sys.modules.get("tensorflow")
    named, version = ("keras", keras.__version__) if family == KERAS else \
        ("tensorflow", tensorflow.__version__)
    affected, reason = is_affected_running(named, version, imported_version)
    if family == KERAS:
        found["keras"] = keras.__version__
        found["backend"] = keras.backend.backend()
        backend = sys.modules.get(found["backend"])  # Theano's or CNTK's version too
        if backend is not None and found["backend"] != "tensorflow":
            found[found["backend"]] = backend.__version__
    else:
        package = package_of(keras)
        if package == "tf_keras":
            found["tf_keras"] = keras.__version__
            reason += "; checked with the tf_keras package {} (tf.keras of TensorFlow 2.16 " \
                      "and later is Keras 3)".format(keras.__version__)
        elif package == "keras":  # the keras package: 2.6 - 2.15, or Keras 3 from TF 2.16
            found["keras"] = keras.__version__
            if api_version(keras) >= (3, 0, 0):
                reason += "; tf.keras of TensorFlow 2.16 and later is Keras {}, checked as " \
                          "such (install tf_keras to check with Keras 2)".format(
                              keras.__version__)
    if tensorflow is not None:
        found["tensorflow"] = tensorflow.__version__
    found["affected"], found["reason"] = bool(affected), reason
    found["bugs"] = [bug.name for bug in bugs_running(named, version, imported_version)]
    return found


def run_checks(family, make_model, batch=4, timesteps=8, seed=0, progress=lambda text: None,
               started=None, inputs_file=None, objects=None, saved_model=False):
    """(side: dict, the model's predictions): the engine on make_model(keras);
    `started`: when importing the family began (None: imported already,
    nothing to say); `inputs_file`: the user's
    arrays (.npz), else inputs are made from the model's; `objects`: the
    custom objects the model is loaded with, in scope (Keras's
    CustomObjectScope) while it is loaded and every rebuild is made, as a
    user rebuilds it; `saved_model`: make_model loads a SavedModel folder."""
    import keras_clone_fix
    keras = family_module(family)
    side = facts(family, keras)
    if started is not None:
        progress("imported {} in {:.1f} s".format(_check.release_name(keras),
                                                  time.time() - started))
    _check.simulate_two_gpus(keras)
    with keras.utils.CustomObjectScope(objects or {}):
        started = time.time()
        model = make_model(keras)
        progress("loaded the model in {:.1f} s".format(time.time() - started))
        times = [time.time()]

        def checked(name, outcome):
            progress("{}: {}{} ({:.1f} s)".format(
                name, outcome["result"], ": " + outcome["detail"] if outcome["detail"] else "",
                time.time() - times[0]))
            times[0] = time.time()

        given = _given_inputs.load(keras, model, inputs_file) if inputs_file else None
        risks, checks, predictions, shapes = _check.check_model(
            keras, model, batch, timesteps, seed, checked, given, saved_model)
    side["patched"] = keras_clone_fix.status().patched
    # (Python 2's comprehensions leak their names: none of them may be `checks`.)
    side["risks"] = [collections.OrderedDict([("layer", layer), ("risk", risk),
                                              ("checks", endangered)])
                     for layer, risk, endangered in risks]
    side["checks"] = checks
    side["inputs"] = shapes
    return side, predictions


# --- in the side's interpreter ----------------------------------------------

def known_facts(family):
    """The family's facts where it was imported already, else its name."""
    if ("keras" if family == KERAS else "tensorflow") not in sys.modules:
        return collections.OrderedDict([("family", family)])
    return facts(family, family_module(family))


def _native(path):
    """A path as `str`: Python 2's json gives unicode, which keras 2.2.4's
    load_model refuses there."""
    if path is None or isinstance(path, str):
        return path
    return path.encode(sys.getfilesystemencoding() or "utf-8")


def _model_maker(request, fix, objects):
    """make_model(keras) for run_checks, of one model file of the request.
    A JSON file without --weights has none: the side with the fix saves its
    initial ones, and the other, running at the same time, waits for them
    (the `check` command stops it if they never come)."""
    from keras_clone_fix import _model_file

    def make_model(keras):
        initial = _native(request["initial_weights"])
        weights = _native(request["weights"])
        _model_file.refuse_later_release(keras, request["model_file"], request["keras_version"])
        shares_initial_weights = request["format"] == "json" and weights is None
        if shares_initial_weights and not fix:
            while not os.path.exists(initial):
                time.sleep(0.1)
            weights = initial
        model = _model_file.load(keras, _native(request["model_file"]), request["format"],
                                 objects, weights)
        if shares_initial_weights and fix:
            # Keras 3 writes weights only to names ending in .weights.h5
            writing = os.path.join(os.path.dirname(initial),
                                   "writing-" + os.path.basename(initial))
            model.save_weights(writing)
            os.rename(writing, initial)  # whole, for the side that waits
        return model
    return make_model


def _peak_memory_mb():
    """This interpreter's peak memory (MB), None where the OS does not tell it."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(round(peak / (1024.0 * 1024 if sys.platform == "darwin" else 1024.0)))


def _new_graph(family):
    """Forget the previous model's graph and session (Theano keeps none)."""
    clear_session = getattr(family_module(family).backend, "clear_session", None)
    if clear_session is not None:
        clear_session()


def _refused(family, error):
    """A side's result where its model could not be checked: the facts known."""
    side = known_facts(family)
    side["bad_input"] = str(error)
    return side


def main(request_path):
    with open(request_path) as opened:
        request = json.load(opened)

    def progress(text):
        sys.stdout.write(PROGRESS + text + "\n")
        sys.stdout.flush()

    started = time.time()
    import numpy
    import keras_clone_fix
    from keras_clone_fix import _model_file
    family, models, sides, since = request["family"], request["models"], [], started
    try:
        if request["fix"]:  # imports the family, patched
            keras_clone_fix.patch()
        # The user's modules import Keras: after patch(), as a user's program.
        objects = _model_file.custom_objects([_native(spec) for spec in request["custom_objects"]])
        refused = None
    except BadInput as error:  # no model can load
        refused = error
    for index, model in enumerate(models):
        if len(models) > 1:
            progress("model {} of {}: {}".format(index + 1, len(models), model["model_file"]))
        if refused is not None:
            side = _refused(family, refused)
        else:
            if index:
                _new_graph(family)
            try:
                side, predictions = run_checks(
                    family, _model_maker(model, request["fix"], objects), request["batch"],
                    request["timesteps"], request["seed"], progress, None if index else started,
                    _native(model["inputs"]), objects, model["format"] == SAVED_MODEL)
                if predictions is not None:
                    numpy.savez(model["predictions"], *predictions)
            except BadInput as error:
                side = _refused(family, error)
        # Its seconds since the previous model's (the first's: since this side began).
        now = time.time()
        side["seconds"], side["peak_memory_mb"], since = now - since, _peak_memory_mb(), now
        sides.append(side)
    peak = sides[-1]["peak_memory_mb"]
    progress("finished in {:.1f} s{}".format(time.time() - started, "" if peak is None else
                                             ", peak memory {} MB".format(peak)))
    with open(request["result"], "w") as opened:
        json.dump(sides, opened)


# --- in the `check` command's interpreter ------------------------------------

class SideFailed(Exception):
    """A side ended without a result: str(error) has the end of its stderr."""


class _Running(object):
    """A side's interpreter, started; a thread passes on its progress lines.
    KERAS_CLONE_FIX=0 keeps the side without the fix from activating at all."""

    def __init__(self, request, scratch, name, fix, progress):
        self.name = name
        self.request = dict(request, fix=fix, result=os.path.join(scratch, name + ".json"))
        self.request["models"] = [
            dict(model, predictions=os.path.join(scratch, "{}-predictions-{}.npz".format(
                name, index))) for index, model in enumerate(request["models"])]
        request_path = os.path.join(scratch, name + "-request.json")
        with open(request_path, "w") as opened:
            json.dump(self.request, opened)
        environment = dict(os.environ, KERAS_CLONE_FIX="1" if fix else "0")
        environment.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        self.stderr_path = os.path.join(scratch, name + ".stderr")
        self.started = time.time()
        with open(self.stderr_path, "w") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "keras_clone_fix._side", request_path], env=environment,
                stdout=subprocess.PIPE, stderr=stderr, universal_newlines=True)
        self.reader = threading.Thread(target=self._pass_on, args=(progress,))
        self.reader.daemon = True
        self.reader.start()

    def _pass_on(self, progress):
        for line in iter(self.process.stdout.readline, ""):
            if line.startswith(PROGRESS):
                progress(self.name, line[len(PROGRESS):].rstrip("\n"))
        self.process.stdout.close()

    def results(self):
        """The side's result for each model (dicts), once it has ended, each
        with its wall time: the first's from the interpreter's start."""
        self.process.wait()
        self.reader.join()
        seconds = time.time() - self.started
        if not os.path.exists(self.request["result"]):
            with open(self.stderr_path) as stderr:
                tail = stderr.read().strip().splitlines()[-15:]
            raise SideFailed("the interpreter {} ended with status {} and no result:\n{}".format(
                self.name, self.process.returncode, "\n".join(tail)))
        with open(self.request["result"]) as opened:
            sides = json.load(opened, object_pairs_hook=collections.OrderedDict)
        sides[0]["seconds"] += seconds - sum(side["seconds"] for side in sides)
        for side in sides:
            side["seconds"] = round(side["seconds"], 1)
        return sides

    def predictions(self, index):
        """The predictions of model `index` on this side, None if it made none."""
        path = self.request["models"][index]["predictions"]
        if not os.path.exists(path):
            return None
        import numpy
        with numpy.load(path) as saved:
            return [saved["arr_{}".format(number)] for number in range(len(saved.files))]

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def run_sides(request, scratch, jobs, progress, affected=None):
    """For each model of the request, {side name: result}: the side with the
    fix (PATCHED) and, where the release is affected, the side without it
    (UNPATCHED), whose `load` check compares its predictions with the
    other's. With jobs > 1 both run at once (the second stopped if the first
    finds nothing to compare: bad input, a model that cannot predict),
    unless `affected` (what the installed release's metadata says) is False:
    then the side without the fix starts only if the first finds the release
    affected after all. progress(side name, text) is called from a thread of
    each side."""
    running = []

    def start(name, fix):
        running.append(_Running(request, scratch, name, fix, progress))
        return running[-1]

    try:
        patched = start(PATCHED, True)
        unpatched = start(UNPATCHED, False) if jobs > 1 and affected is not False else None
        models = [collections.OrderedDict([(PATCHED, side)]) for side in patched.results()]
        if any("bad_input" in sides[PATCHED] or not sides[PATCHED]["affected"]
               or sides[PATCHED]["checks"]["load"]["result"] in _check.FAILED
               for sides in models):
            return models  # a model with nothing to compare ends the command
        unpatched = unpatched or start(UNPATCHED, False)
        for index, (sides, side) in enumerate(zip(models, unpatched.results())):
            sides[UNPATCHED] = side
            expected, got = patched.predictions(index), unpatched.predictions(index)
            if expected is not None and got is not None:
                side["checks"]["load"] = _check.compare(expected, got)
        return models
    finally:
        for side in running:
            side.stop()


if __name__ == "__main__":
    main(sys.argv[1])
