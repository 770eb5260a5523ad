"""A fresh interpreter driven by the model-based activation test.

It reads one event a line from stdin, makes it happen, and prints one JSON
line of what it then sees. What is installed at each target is read here
without the package's own helpers (other_tools.chain: the module attribute,
the class of our wrapper, and what other_tools made), so the test compares
status() with an independent view. "other KIND LABEL MODULE ATTRIBUTE" is
another tool patching a target (other_tools.install).

    python activation_driver.py        # with the installed .pth, as users run
"""

import importlib
import json
import os
import sys
import traceback
import warnings

import other_tools

try:
    from importlib import reload
except ImportError:  # Python 2
    from imp import reload

FAMILIES = ("keras", "tensorflow")
scopes = []  # the fixture's context managers entered and not yet left


def fix():
    return sys.modules["keras_clone_fix"]


def activation():
    from keras_clone_fix import _activation
    return _activation


def import_family(name):
    try:
        importlib.import_module(name)
    except ImportError:
        pass  # not installed here: importing it changes nothing


def enter_fixture():
    # What the plugin's fixture does.
    scope = activation().restoring()
    scope.__enter__()
    scopes.append(scope)
    activation().patch(source="pytest fixture keras_clone_fix")


EVENTS = {
    "import keras": lambda: import_family("keras"),
    "import tensorflow": lambda: import_family("tensorflow"),
    "patch": lambda: fix().patch(),
    "unpatch": lambda: fix().unpatch(),
    "enter fixture": enter_fixture,
    "exit fixture": lambda: scopes.pop().__exit__(None, None, None),
    "force on": lambda: os.environ.__setitem__("KERAS_CLONE_FIX_FORCE", "1"),
    "force off": lambda: os.environ.pop("KERAS_CLONE_FIX_FORCE", None),
    "reload keras.models": lambda: reload(sys.modules["keras.models"]),
    "reload keras_clone_fix": lambda: reload(fix()),
}


def keras_behaviour(keras):
    """Whether clone_model, and calling a model on a new tensor, work on a
    model whose two-output layer passes one mask: every affected release
    fails both ("Could not compute output", "Layers should have equal
    number of output tensors and output masks"). Built in a new graph each
    time, and not run: this is about which code runs, cheaply. (Before
    2.0.7, which cannot build that model, a shared model is run instead.)
    And whether a frozen model's config says so (get_config), is read back
    (from_config), a Sequential model's Lambda's mask is read back from its
    config and a Sequential clone keeps a Lambda's mask."""
    import models
    backend = keras.backend
    if hasattr(backend, "clear_session"):  # Theano has none
        backend.clear_session()
    if not hasattr(keras.models, "clone_model"):
        # Before 2.0.7 that model cannot be built, fix or no fix; a shared
        # masked model shows the bug there (and needs predict).
        return {"clone": None, "call": shared_model_called_twice(keras),
                "from_config": frozen_read(keras), "get_config": tensor_argument_written(keras),
                "sequential_config": frozen_sequential_written(keras),
                "sequential_from_config": sequential_lambda_mask_read(keras),
                "sequential_clone": None, "walk": argument_maker_walked(keras)}
    x = models.tokens()
    model = keras.models.Model(x, models.SplitOutputs(2)(models.embedded(x)))
    new_input = models.tokens()
    return {"clone": attempt(lambda: keras.models.clone_model(model))
            if hasattr(keras.models, "clone_model") else None,  # none before 2.0.7
            "call": attempt(lambda: keras.models.Model(new_input, model(new_input))),
            "from_config": from_config_behaviour(keras), "get_config": tensor_argument_written(keras),
            "sequential_config": frozen_sequential_written(keras),
            "sequential_from_config": sequential_lambda_mask_read(keras),
            "sequential_clone": sequential_clone_masked(keras),
            "walk": argument_maker_walked(keras)}


def argument_maker_walked(keras):
    """"ok" where the walk that gathers a model's layers takes in a layer
    whose output only a keyword argument takes (`mask=`): every affected
    keras leaves it out, else "left out". Built, not run."""
    if hasattr(keras.backend, "clear_session"):
        keras.backend.clear_session()
    L = keras.layers
    tokens = L.Input(shape=(5,), dtype="int32")
    mask = L.Lambda(lambda t: keras.backend.not_equal(t, 0), name="makes_mask")(tokens)
    model = keras.models.Model(tokens, L.LSTM(2)(L.Embedding(10, 3)(tokens), mask=mask))
    return "ok" if "makes_mask" in [layer.name for layer in model.layers] else "left out"


def frozen_model(keras):
    """A frozen model of one Dense, in a new graph."""
    if hasattr(keras.backend, "clear_session"):
        keras.backend.clear_session()
    x = keras.layers.Input(shape=(3,))
    model = keras.models.Model(x, keras.layers.Dense(2)(x))
    model.trainable = False
    return model


def tensor_argument_written(keras):
    """"ok" where a model's config keeps a layer call's tensor argument that
    the release leaves out (with a warning) in the layer's entry, else
    "left out". Built, not run."""
    if hasattr(keras.backend, "clear_session"):
        keras.backend.clear_session()

    class Scaled(keras.layers.Layer):
        def call(self, inputs, scale=None):
            return inputs * scale

        def compute_output_shape(self, input_shape):
            return input_shape

    a, w = keras.layers.Input(shape=(3,)), keras.layers.Input(shape=(3,))
    # w an input of a call too: the model's walk meets it, with the fix or without
    model = keras.models.Model([a, w], Scaled(name="scaled")(keras.layers.add([a, w]), scale=w))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the release's own, where it leaves the argument out
        entries = model.get_config()["layers"]
    (entry,) = [entry for entry in entries if entry["name"] == "scaled"]
    return "ok" if entry.get("call_arguments") else "left out"


def frozen_sequential_written(keras):
    """"ok" where a frozen Sequential model's config says its layers are
    frozen (every affected release writes them trainable: its flag does
    not set theirs), else "not written". Built, not run."""
    if hasattr(keras.backend, "clear_session"):
        keras.backend.clear_session()
    model = keras.models.Sequential([keras.layers.Dense(2, input_shape=(3,))])
    model.trainable = False
    config = model.get_config()
    layers = config["layers"] if isinstance(config, dict) else config  # a list to 2.2.2 / 1.10
    return "ok" if all(layer["config"].get("trainable") is False for layer in layers) else (
        "not written")


def sequential_lambda_mask_read(keras):
    """"ok" where a Sequential model made from a config that holds its
    Lambda's mask (written here by the fix's own helper, whatever
    get_config's state) has a Lambda with a mask, else "no mask". Built, not run."""
    from keras_clone_fix._runtime import lambda_masks_written
    if hasattr(keras.backend, "clear_session"):
        keras.backend.clear_session()
    model = keras.models.Sequential([keras.layers.Lambda(
        lambda x: x, mask=lambda x, mask: mask, input_shape=(3,))])
    config = lambda_masks_written(model, model.get_config())
    rebuilt = keras.models.Sequential.from_config(config)
    return "ok" if rebuilt.layers[-1].mask is not None else "no mask"


def frozen_read(keras):
    """"ok" where a model made from a config that says it is frozen (the
    model's own key only) has no trainable weights (no affected release
    reads the key), else "trainable"."""
    model = frozen_model(keras)
    model.trainable = True
    config = model.get_config()
    config["trainable"] = False
    return "ok" if not keras.models.Model.from_config(config).trainable_weights else "trainable"


def from_config_behaviour(keras):
    """"ok" where the rules of the release's from_config target run: a
    layer's calls in their order, and a frozen model's config read back."""
    from keras_clone_fix._affected import targets_for
    from keras_clone_fix._check import release_of
    rules = [rule for target in targets_for(*release_of(keras))
             if target.routine() == "from_config" for rule in target.rules]
    shown = [("LayerCallsKeptInOrder", calls_in_order), ("TrainableReadFromConfig", frozen_read)]
    for rule, behaviour in shown:
        if rule in rules and behaviour(keras) != "ok":
            return behaviour(keras)
    return "ok"


def sequential_clone_masked(keras):
    """"ok" where the clone of a Sequential model keeps its Lambda's mask (no
    affected release's does), else "no mask". Built, not run."""
    if hasattr(keras.backend, "clear_session"):
        keras.backend.clear_session()
    model = keras.models.Sequential([keras.layers.Lambda(
        lambda x: x, mask=lambda x, mask: mask, input_shape=(3,))])
    return "ok" if keras.models.clone_model(model).layers[-1].mask is not None else "no mask"


def calls_in_order(keras):
    """"ok" where a model's from_config makes a layer's calls in their order
    (_builtin_model.calls_in_a_cycle's nested model: every affected release
    but keras 2.2.5 - 2.3.1 makes them out of order), else "out of order".
    Built, not run."""
    from keras_clone_fix._builtin_model import calls_in_a_cycle
    from keras_clone_fix._check import as_list, inbound_nodes
    if hasattr(keras.backend, "clear_session"):
        keras.backend.clear_session()
    cycle = calls_in_a_cycle(keras).get_layer("cycle")
    rebuilt = keras.models.Model.from_config(cycle.get_config())
    made, remade = [[[layer.name for layer in as_list(node.inbound_layers)]
                     for node in inbound_nodes(model.get_layer("s"))] for model in (cycle, rebuilt)]
    # The cycle's calls come first (tf.keras 1.14 adds the outer model's after them).
    return "ok" if made[:len(remade)] == remade else "out of order"


def shared_model_called_twice(keras):
    """"ok" where a masked model called on two new inputs computes each
    call with its own mask (the check engine's called_twice), else "wrong"."""
    from keras_clone_fix import _builtin_model, _check
    model = _builtin_model.masked_encoder(keras)
    inputs, other_inputs = (  # padded to other lengths: each call has its own mask
        _check.make_inputs(keras, model, 2, _builtin_model.STEPS, seed, reverse=seed == 1)
        for seed in (0, 1))
    try:  # 2.0.0 - 2.0.2 unpatched: a placeholder of the original graph to feed
        outcome = _check.Checks(keras, model, inputs, other_inputs).check_called_twice()
    except Exception:
        return "wrong"
    return "ok" if outcome["result"] == _check.OK else "wrong"


def tf_keras_behaviour(tensorflow):
    """Whether calling a tf.keras model on a new tensor leaves the original's
    node arguments as they were: every affected TensorFlow writes the call's
    mask into them (what makes a shared model's next call wrong). Built, not
    run: cheap."""
    keras = tensorflow.keras
    keras.backend.clear_session()
    x = keras.layers.Input(shape=(5,), dtype="int32")
    lstm = keras.layers.LSTM(2)
    encoder = keras.models.Model(x, lstm(keras.layers.Embedding(10, 3, mask_zero=True)(x),
                                         training=False))
    recorded = dict(lstm._inbound_nodes[0].arguments)
    encoder(keras.layers.Input(shape=(5,), dtype="int32"))
    return {"call": "ok" if lstm._inbound_nodes[0].arguments == recorded else "wrote into it",
            "from_config": from_config_behaviour(keras), "get_config": tensor_argument_written(keras),
            "sequential_config": frozen_sequential_written(keras),
            "sequential_from_config": sequential_lambda_mask_read(keras)}


BEHAVIOURS = {"keras": keras_behaviour, "tensorflow": tf_keras_behaviour}


def attempt(action):
    try:
        action()
    except Exception as error:  # whatever the release raises
        return type(error).__name__
    return "ok"


def chain_at(module, attribute):
    """[[kind, label, id]] of what runs at the target, from the top; None
    where the target's module is not imported."""
    if sys.modules.get(module) is None:
        return None
    return [[kind, label, id(function)]
            for kind, label, function in other_tools.chain(other_tools.at(module, attribute))]


def make_happen(event):
    """(the PatchError message patch() raised or None, KerasCloneFixWarnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if event.startswith("other "):
                kind, label, module, attribute = event.split()[1:]
                other_tools.install(kind, module, attribute, label)
            else:
                EVENTS[event]()
            raised = None
        except Exception as error:
            if type(error).__name__ != "PatchError":  # the class of any copy of the package
                raise
            raised = str(error)
    return raised, [str(warning.message) for warning in caught
                    if warning.category.__name__ == "KerasCloneFixWarning"]


def observe(targets, behaviours):
    status = fix().status()
    chains = {module + "." + attribute: chain_at(module, attribute)
              for module, attribute in targets}
    imported = [family for family in FAMILIES if sys.modules.get(family) is not None]
    del other_tools.RAN[:]
    return {
        "status": status.as_dict(),
        "chains": {name: chain for name, chain in chains.items() if chain is not None},
        "imported": imported,
        "waiting": any(type(finder).__name__ == "_ImportWatcher" for finder in sys.meta_path),
        "behaviour": {family: BEHAVIOURS[family](sys.modules[family])
                      for family in behaviours if family in imported},
        "ran": sorted(set(other_tools.RAN)),  # the other tools' patches the behaviours ran
    }


def main():
    # From the test: the targets to look at, [module, attribute] each, and
    # the families whose behaviour to try (clone_model, calls on new tensors).
    targets, behaviours = json.loads(sys.stdin.readline())
    for line in iter(sys.stdin.readline, ""):
        event = line.strip()
        try:
            raised, warned = make_happen(event)
            report = dict(observe(targets, behaviours), raised=raised, warned=warned)
        except Exception:
            report = {"error": traceback.format_exc()}
        sys.stdout.write(json.dumps(report) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
