"""A side: the check engine run on one model in one interpreter, whose fix
state (patched or not) is the one being checked.

`check` runs each side in its own interpreter (`python -m
keras_clone_fix._side REQUEST`): it writes a request (JSON) to its scratch
directory, reads the side's progress lines on stdout ("PROGRESS ...") as
they come, and the side's result (JSON) from the file the request names.
The self-check runs one side in its own interpreter, on the built-in model.
"""

import collections
import json
import os
import subprocess
import sys
import time

from keras_clone_fix import _check, _given_inputs
from keras_clone_fix._affected import is_affected
from keras_clone_fix._model_file import KERAS, BadInput

PROGRESS = "PROGRESS "


def family_module(family):
    """The keras module of a family: `keras`, or tf.keras."""
    if family == KERAS:
        import keras
        return keras
    import tensorflow
    return tensorflow.keras


def facts(family, keras):
    """Versions, and whether the release is affected, in report order."""
    found = collections.OrderedDict([("family", family)])
    tensorflow = sys.modules.get("tensorflow")
    if family == KERAS:
        found["keras"] = keras.__version__
        found["backend"] = keras.backend.backend()
        affected, reason = is_affected("keras", keras.__version__)
    else:
        affected, reason = is_affected("tensorflow", tensorflow.__version__)
    if tensorflow is not None:
        found["tensorflow"] = tensorflow.__version__
    found["affected"], found["reason"] = bool(affected), reason
    return found


def run_checks(family, make_model, batch=4, timesteps=8, seed=0, reference=None,
               progress=lambda text: None, started=None, inputs_file=None):
    """(side: dict, the model's predictions): the engine on make_model(keras);
    `started`: when importing the family began; `inputs_file`: the user's
    arrays (.npz), else inputs are made from the model's."""
    import keras_clone_fix
    started = started or time.time()
    keras = family_module(family)
    side = facts(family, keras)
    progress("imported {} {} in {:.1f} s".format(family, keras.__version__,
                                                  time.time() - started))
    _check.simulate_two_gpus(keras)
    started = time.time()
    model = make_model(keras)
    progress("loaded the model in {:.1f} s".format(time.time() - started))
    times = [time.time()]

    def checked(name, outcome):
        progress("{}: {}{} ({:.1f} s)".format(name, outcome["result"], ": " + outcome["detail"]
                                             if outcome["detail"] else "", time.time() - times[0]))
        times[0] = time.time()

    given = _given_inputs.load(keras, model, inputs_file) if inputs_file else None
    risks, checks, predictions, shapes = _check.check_model(
        keras, model, batch, timesteps, seed, reference, checked, given)
    side["patched"] = keras_clone_fix.status().patched
    side["risks"] = [collections.OrderedDict([("layer", layer), ("risk", risk)])
                     for layer, risk in risks]
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


def _model_maker(request):
    from keras_clone_fix import _model_file

    def make_model(keras):
        objects = _model_file.custom_objects([_native(spec) for spec in request["custom_objects"]])
        initial = _native(request["initial_weights"])
        weights = _native(request["weights"]) or (initial if os.path.exists(initial) else None)
        _model_file.refuse_later_release(keras, request["model_file"], request["keras_version"])
        model = _model_file.load(keras, _native(request["model_file"]), request["format"],
                                 objects, weights)
        if request["format"] == "json" and weights is None:  # the other side gets the same
            model.save_weights(initial)
        return model
    return make_model


def _peak_memory():
    """", peak memory N MB" of this interpreter, where the OS tells it."""
    try:
        import resource
    except ImportError:  # Windows
        return ""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return ", peak memory {:.0f} MB".format(peak / (1024.0 * 1024 if sys.platform == "darwin"
                                                    else 1024.0))


def main(request_path):
    with open(request_path) as opened:
        request = json.load(opened)

    def progress(text):
        sys.stdout.write(PROGRESS + text + "\n")
        sys.stdout.flush()

    started = time.time()
    import numpy
    import keras_clone_fix
    try:
        if request["fix"]:  # imports the family, patched
            keras_clone_fix.patch()
        reference = None
        if os.path.exists(request["reference"]):
            with numpy.load(request["reference"]) as saved:
                reference = [saved["arr_{}".format(index)] for index in range(len(saved.files))]
        side, predictions = run_checks(
            request["family"], _model_maker(request), request["batch"], request["timesteps"],
            request["seed"], reference, progress, started, _native(request["inputs"]))
        if reference is None and predictions is not None:
            numpy.savez(request["reference"], *predictions)
        progress("finished in {:.1f} s{}".format(time.time() - started, _peak_memory()))
    except BadInput as error:
        side = known_facts(request["family"])
        side["bad_input"] = str(error)
    with open(request["result"], "w") as opened:
        json.dump(side, opened)


# --- in the `check` command's interpreter ------------------------------------

class SideFailed(Exception):
    """A side ended without a result: str(error) has the end of its stderr."""


def run_side(request, scratch, name, fix, progress):
    """Run a side in its own interpreter; its result (dict). KERAS_CLONE_FIX=0
    keeps the side without the fix from activating at all."""
    request = dict(request, fix=fix, result=os.path.join(scratch, name + ".json"))
    request_path = os.path.join(scratch, name + "-request.json")
    with open(request_path, "w") as opened:
        json.dump(request, opened)
    environment = dict(os.environ, KERAS_CLONE_FIX="1" if fix else "0")
    environment.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    stderr_path = os.path.join(scratch, name + ".stderr")
    with open(stderr_path, "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "keras_clone_fix._side", request_path], env=environment,
            stdout=subprocess.PIPE, stderr=stderr, universal_newlines=True)
        for line in iter(process.stdout.readline, ""):
            if line.startswith(PROGRESS):
                progress(line[len(PROGRESS):].rstrip("\n"))
        process.stdout.close()
        process.wait()
    if not os.path.exists(request["result"]):
        with open(stderr_path) as stderr:
            tail = stderr.read().strip().splitlines()[-15:]
        raise SideFailed("the interpreter {} ended with status {} and no result:\n{}".format(
            name, process.returncode, "\n".join(tail)))
    with open(request["result"]) as opened:
        return json.load(opened, object_pairs_hook=collections.OrderedDict)


if __name__ == "__main__":
    main(sys.argv[1])
