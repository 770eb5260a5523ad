"""Randomised differential test: random models clone faithfully when patched,
and a model boundary changes nothing.

Patched, a model with model boundaries drawn in it predicts what its flat
twin (the same layers without the boundaries) predicts, with the same masks;
the clone, the clone of the clone, the clone nested in a new
model and, with TensorFlow, multi_gpu_model's two replicas on the CPU (every
fourth seed relocated) all predict what the model predicts, and the model is
left as it was (its layers' call arguments, and it still nests: called twice
on different inputs, each call predicts what it does), and the clone has the
model's trainable weights. Unpatched, each model's first clone either
predicts the same too, or fails as the bug does: the clone raises (a
multi-output layer the release mishandles, a boundary on a masked tensor
before keras 2.2.3, recurrent states given twice from 2.0.9 to 2.2.4), or,
with a tensor keyword argument, it computes from the model's inputs, which
predicting it does not feed.
Each environment runs RANDOM_MODELS seeds (default 1; `nox -s full`: 250) from
a first seed of its own, a number of its Keras release, backend and Python
below 250: the matrix's sessions together try many of the models, each the
same ones at every run (the seed is in the test's id).
"""

import collections
import os
import sys
import zlib

import pytest

import keras_clone_fix
from conftest import skip_module_unless_affected

skip_module_unless_affected()

import keras  # noqa: E402
import numpy  # noqa: E402 (only where keras is, after the skip)
from models import (  # noqa: E402
    assert_close, assert_predicts_like, assert_same_predictions, call_on_new_inputs, called_twice,
    copy_weights, data_for, missing_input_error, node_arguments, predict)
from keras import backend as K  # noqa: E402
from keras_clone_fix._check import parameters  # noqa: E402
from random_models import RandomModel  # noqa: E402
from test_call_on_new_tensors import on_two_gpus  # noqa: E402

SHAPES = collections.Counter()  # feature -> models; read by conftest
pytestmark = pytest.mark.usefixtures("fresh_graph", "restore_fix_state")


FIRST_SEED = zlib.crc32("keras {} on {}, Python {}".format(
    keras.__version__, K.backend(), sys.version_info[0]).encode("ascii")) % 250
SEEDS = range(FIRST_SEED, FIRST_SEED + int(os.environ.get("RANDOM_MODELS", "1")))


@pytest.fixture
def two_gpus_where_any(monkeypatch):
    """Whether multi_gpu_model builds here, on the CPU."""
    return on_two_gpus(monkeypatch)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_model(seed, two_gpus_where_any):
    generated = RandomModel(seed)
    model, data = generated.model, data_for(generated.model, seed)

    assert keras_clone_fix.patch().patched
    if generated.flat is not None:
        assert_like_flat_twin(generated, data)
    arguments = node_arguments(model)
    clone = keras.models.clone_model(model)
    assert len(clone.trainable_weights) == len(model.trainable_weights)
    assert_same_predictions(model, clone, data)
    assert_same_predictions(model, keras.models.clone_model(clone), data)
    assert_predicts_like(model, call_on_new_inputs(clone), data)
    assert node_arguments(model) == arguments
    # Its first call on new inputs is what nesting it once does.
    other = data_for(model, seed + 100)
    assert_close(predict(model, data) + predict(model, other),
                 predict(called_twice(model), data + other))
    if two_gpus_where_any:
        assert_multi_gpu_model_predicts_like(model, data, relocated=seed % 4 == 3)

    # Last: an unpatched clone may write its masks into the model.
    keras_clone_fix.unpatch()
    if generated.upstream_errors:  # the first the clone meets
        with pytest.raises(tuple(set(kind for kind, _ in generated.upstream_errors)),
                           match="|".join(sorted(message for _, message
                                                 in generated.upstream_errors))):
            keras.models.clone_model(model)
    elif generated.unpatched_misses_inputs:
        clone = keras.models.clone_model(model)
        with pytest.raises(missing_input_error()):
            predict(clone, data)
    elif not generated.unpatched_may_differ:
        assert_same_predictions(model, keras.models.clone_model(model), data)

    upstream = ("broken upstream" if generated.upstream_errors else "upstream clone misses inputs"
                if generated.unpatched_misses_inputs else "clean upstream")
    SHAPES.update(generated.features | {"models", upstream})


def assert_multi_gpu_model_predicts_like(model, data, relocated):
    """multi_gpu_model(model, gpus=2): two replicas, each on its half of the
    batch; `relocated` (cpu_relocation=True, from Keras 2.1.6), the
    replicas call a clone of the model."""
    relocation = "cpu_relocation" in parameters(keras.utils.multi_gpu_model)
    options = dict(cpu_relocation=True) if relocated and relocation else {}
    SHAPES["multi_gpu_model" + (" relocated" if options else "")] += 1
    parallel = keras.utils.multi_gpu_model(model, gpus=2, **options)
    replica, = [layer for layer in parallel.layers if isinstance(layer, keras.models.Model)]
    copy_weights(model, replica)
    assert_predicts_like(model, parallel, data)


def assert_like_flat_twin(generated, data):
    """The model and its flat twin (the same layer objects: no weights to
    copy) compute the same predictions and the same masks before the last
    LSTMs: present on the same tensors, with the same values."""
    masks = generated.twin_masks()
    assert [nested is None for nested, _ in masks] == [flat is None for _, flat in masks]
    present = [mask for pair in masks for mask in pair if mask is not None]
    outputs = len(generated.flat.outputs)
    values = K.function(generated.model.inputs, generated.flat.outputs + present)(data)
    assert_close(predict(generated.model, data), values[:outputs])
    for nested, flat in zip(values[outputs::2], values[outputs + 1::2]):
        numpy.testing.assert_array_equal(nested, flat)
