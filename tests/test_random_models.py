"""Randomised differential test: random models are rebuilt faithfully every
way a user rebuilds one, and a model boundary changes nothing.

Patched (keras 2.0.7 - 2.3.1, tf.keras of TensorFlow 1.12 - 1.14 and 2.0 -
2.6, from 2.6 the keras package) and on tf_keras unpatched (the reference:
the same seeds must pass there with nothing patched, or the test tests the
wrong thing), a model with model boundaries drawn in it predicts what its
flat twin (the same layers without the boundaries) predicts, with the same
masks (their values not on tf_keras); every route of random_models.ROUTES
predicts what the model predicts: the clone (a Sequential model's by
clone_model's Sequential routine), the clone of the clone, the model nested
in a new model and called twice on different inputs (each call predicts
what the model does), `Model.from_config(get_config())`,
`model_from_json(to_json())`, `save` + `load_model` of an .h5 file and, on
TensorFlow 2 (tf.keras 2.0 - 2.6, tf_keras), of a SavedModel folder too
(the same model in both formats; custom objects given); the rebuilt models
are given the model's weights by `set_weights(get_weights())` (the loaded
ones have their file's) and have the model's count of trainable weights.
With TensorFlow, multi_gpu_model's two replicas on the CPU (every fourth
seed relocated) predict the same too (keras), and the model is left as it
was (its layers' call arguments).

Unpatched, on keras, each model's first clone either predicts the same too,
or fails as the bug does: the clone raises (a multi-output layer the release
mishandles, a boundary on a masked tensor before keras 2.2.3, recurrent
states given twice from 2.0.9 to 2.2.4, a custom layer registered nowhere
in a nested model: Unknown layer), or, with a tensor keyword argument,
it computes from the model's inputs, which predicting it does not feed; a
model with a Lambda's mask, a Bidirectional layer, an explicit `mask=`, a
model on a masked tensor (2.2.5 - 2.3.1) or a Sequential model may predict
otherwise (not asserted). tf.keras's unpatched clones are not asserted here
(tests/test_tf_keras.py and test_faithful_clones.py hold its bugs).

Each family runs RANDOM_MODELS seeds (default 1; `nox -s full`: 250) from a
first seed of its own, a number of its release, backend and Python below 250
(RANDOM_MODELS_FIRST_SEED sets it, to run another release's seeds on the
reference): the matrix's sessions together try many of the models, each the
same ones at every run (the family and seed are in the test's id).
"""

import collections
import contextlib
import importlib
import os
import sys
import zlib

import pytest

from conftest import fix_in_mode, installed, lambdas_remade, version_of


def _families():
    """(id, keras module, patched, whether it saves SavedModel folders) of
    each family installed here that the random models run on."""
    found = []
    if installed("keras"):
        keras = importlib.import_module("keras")
        if (2, 0, 7) <= version_of(keras) < (2, 4, 0):
            found.append(("keras " + keras.__version__, keras, True, False))
    if installed("tensorflow"):
        tensorflow = importlib.import_module("tensorflow")
        release = version_of(tensorflow)[:2]
        # From 2.6 tf.keras is the keras package (2.4's runs tf.keras's routines).
        if (1, 12) <= release < (1, 15) or (2, 0) <= release < (2, 7):
            found.append(("tf.keras " + tensorflow.__version__, tensorflow.keras, True,
                          release >= (2, 0)))
    if installed("tf_keras"):
        tf_keras = importlib.import_module("tf_keras")
        found.append(("tf_keras " + tf_keras.__version__, tf_keras, False, True))
    return found


FAMILIES = _families()
if not FAMILIES:
    pytest.skip("needs keras 2.0.7 - 2.3.1, tf.keras of TensorFlow 1.12 - 1.14 or 2.0 - 2.6, "
                "or tf_keras",
                allow_module_level=True)

import numpy  # noqa: E402 (only where a family is, after the skip)

from keras_clone_fix import _check  # noqa: E402
from random_models import ROUTES, SAVED_MODEL, STEPS, RandomModel  # noqa: E402

SHAPES = collections.Counter()  # feature -> models; read by conftest
BATCH = 4


def seeds(family):
    name, keras = family[:2]
    first = os.environ.get("RANDOM_MODELS_FIRST_SEED")
    if first is None:
        first = zlib.crc32("{} on {}, Python {}".format(
            name, keras.backend.backend(), sys.version_info[0]).encode("ascii")) % 250
    first = int(first)
    return range(first, first + int(os.environ.get("RANDOM_MODELS", "1")))


@pytest.fixture
def two_gpus_where_any(monkeypatch, family):
    """Whether multi_gpu_model builds here, on the CPU (keras)."""
    if family[1].__name__ != "keras":
        return False
    from test_call_on_new_tensors import on_two_gpus
    return on_two_gpus(monkeypatch)


@pytest.fixture
def family(request):
    yield request.param
    if hasattr(request.param[1].backend, "clear_session"):
        request.param[1].backend.clear_session()


@pytest.mark.parametrize("family, seed", [
    pytest.param(each, seed, id="{}-{}".format(each[0], seed))  # Python 2: no `family` leaks
    for each in FAMILIES for seed in seeds(each)], indirect=["family"])
def test_random_model(family, seed, two_gpus_where_any, tmp_path):
    _, keras, patched, saves_folders = family
    with fix_in_mode("patched" if patched else "unpatched"):
        generated = RandomModel(seed, keras)
        model = generated.model
        data = _check.make_inputs(keras, model, BATCH, STEPS, seed)
        if generated.flat is not None:
            assert_like_flat_twin(keras, generated, data)
        arguments = _check.snapshot_arguments(keras, model)
        for route, rebuild in rebuilds(keras, generated, data, seed, str(tmp_path), patched):
            if route != SAVED_MODEL or saves_folders:
                rebuild()
        assert _check.changed_arguments(arguments) == []
        if two_gpus_where_any:
            assert_multi_gpu_model_predicts_like(keras, model, data, relocated=seed % 4 == 3)

        # Last: an unpatched clone may write its masks into the model.
        if keras.__name__ == "keras":
            assert_unpatched_clone_as_the_bug(keras, generated, data)
    upstream = ("broken upstream" if generated.upstream_errors else "upstream clone misses inputs"
                if generated.unpatched_misses_inputs else "clean upstream")
    SHAPES.update(generated.features | {"models", upstream})


def rebuilds(keras, generated, data, seed, directory, patched):
    """(route, a function that rebuilds the model that way and asserts it
    predicts what the model predicts) for each of random_models.ROUTES."""
    model, custom_objects = generated.model, generated.custom_objects

    @contextlib.contextmanager
    def scope():
        """tf_keras, the reference, is not patched for a custom layer registered
        nowhere in a nested model (MaskOf): its clone makes the nested model from
        its config and raises, so it clones inside a CustomObjectScope of the
        model's custom objects, as its users must (Keras 3 too if it ran here)."""
        if patched:
            yield
        else:
            with keras.utils.custom_object_scope(custom_objects):
                yield
    expected = _check.predict(keras, model, data)
    clone_model = _check.find_clone_model(keras)
    made = {}

    def with_weights(rebuilt):
        rebuilt.set_weights(model.get_weights())
        return rebuilt

    def like_the_model(rebuilt):
        assert len(rebuilt.trainable_weights) == len(model.trainable_weights)
        assert_close(expected, _check.predict(keras, rebuilt, data))

    def clone():
        with lambdas_remade(keras), scope():
            made["clone"] = with_weights(clone_model(model))
        like_the_model(made["clone"])

    def clone_of_clone():
        with lambdas_remade(keras), scope():
            like_the_model(with_weights(clone_model(made.get("clone") or clone_model(model))))

    def nested():
        inputs = _check.new_inputs(keras, model, "nested")
        outer = keras.models.Model(inputs, _check.called_on(keras, model, inputs))
        assert_close(expected, _check.predict(keras, outer, data))

    def called_twice():
        other = _check.make_inputs(keras, model, BATCH, STEPS, seed + 100, reverse=True)
        first, second = (_check.new_inputs(keras, model, name) for name in ("first", "second"))
        twice = keras.models.Model(first + second, _check.called_on(keras, model, first)
                                   + _check.called_on(keras, model, second))
        assert_close(expected + _check.predict(keras, model, other),
                     _check.predict(keras, twice, data + other))

    def from_config():
        with lambdas_remade(keras):
            like_the_model(with_weights(model.__class__.from_config(
                model.get_config(), custom_objects=custom_objects)))

    def from_json():
        with lambdas_remade(keras):
            like_the_model(with_weights(keras.models.model_from_json(
                model.to_json(), custom_objects=custom_objects)))

    def loaded():
        path = os.path.join(directory, "model.h5")
        model.save(path)
        with lambdas_remade(keras):
            like_the_model(keras.models.load_model(path, custom_objects=custom_objects))

    def loaded_from_folder():
        folder = os.path.join(directory, "saved_model")
        model.save(folder, save_format="tf")
        with lambdas_remade(keras):
            like_the_model(keras.models.load_model(folder, custom_objects=custom_objects))

    return list(zip(ROUTES, [clone, clone_of_clone, nested, called_twice, from_config, from_json,
                             loaded, loaded_from_folder]))


def assert_close(expected, got):
    assert len(got) == len(expected)
    for want, have in zip(expected, got):
        numpy.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-5)


def assert_unpatched_clone_as_the_bug(keras, generated, data):
    """Unpatched, the first clone predicts what the model predicts, or
    fails as the release's bug does (generated.upstream_errors,
    unpatched_misses_inputs); not asserted where it may differ."""
    from models import copy_weights  # by name: the order of get_weights() may differ there
    model = generated.model
    with fix_in_mode("unpatched"):
        if generated.upstream_errors:  # the first the clone meets
            with pytest.raises(tuple(set(kind for kind, _ in generated.upstream_errors)),
                               match="|".join(sorted(message for _, message
                                                     in generated.upstream_errors))):
                keras.models.clone_model(model)
        elif generated.unpatched_misses_inputs:
            clone = keras.models.clone_model(model)
            with pytest.raises(missing_input_error(keras)):
                _check.predict(keras, clone, data)
        elif not generated.unpatched_may_differ:
            clone = keras.models.clone_model(model)
            copy_weights(model, clone)
            assert_close(_check.predict(keras, model, data), _check.predict(keras, clone, data))


def missing_input_error(keras):
    """What the backend raises when a graph needs an input nobody feeds."""
    if keras.backend.backend() == "theano":
        import theano
        return theano.gof.fg.MissingInputError
    import tensorflow
    return tensorflow.errors.InvalidArgumentError


def assert_multi_gpu_model_predicts_like(keras, model, data, relocated):
    """multi_gpu_model(model, gpus=2): two replicas, each on its half of the
    batch; `relocated` (cpu_relocation=True, from Keras 2.1.6), the
    replicas call a clone of the model."""
    relocation = "cpu_relocation" in _check.parameters(keras.utils.multi_gpu_model)
    options = dict(cpu_relocation=True) if relocated and relocation else {}
    SHAPES["multi_gpu_model" + (" relocated" if options else "")] += 1
    parallel = keras.utils.multi_gpu_model(model, gpus=2, **options)
    replica, = [layer for layer in parallel.layers if isinstance(layer, keras.models.Model)]
    replica.set_weights(model.get_weights())
    assert_close(_check.predict(keras, model, data), _check.predict(keras, parallel, data))


def assert_like_flat_twin(keras, generated, data):
    """The model and its flat twin (the same layer objects: no weights to
    copy) compute the same predictions and the same masks before the last
    LSTMs: present on the same tensors, with the same values (not compared
    on tf_keras, whose masks are no layer's outputs to compute)."""
    masks = generated.twin_masks()
    assert [nested is None for nested, _ in masks] == [flat is None for _, flat in masks]
    present = [mask for pair in masks for mask in pair
               if mask is not None and keras.__name__ != "tf_keras"]
    outputs = len(generated.flat.outputs)
    values = keras.backend.function(generated.model.inputs,
                                    generated.flat.outputs + present)(data)
    assert_close(_check.predict(keras, generated.model, data), values[:outputs])
    for nested, flat in zip(values[outputs::2], values[outputs + 1::2]):
        numpy.testing.assert_array_equal(nested, flat)
