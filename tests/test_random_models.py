"""Randomised differential test: random models clone faithfully when patched.

Patched, the clone, the clone of the clone and the clone nested in a new
model all predict what the model predicts, and the model is left as it was
(its layers' call arguments, and it still nests, also twice on different
inputs). Unpatched, each model's
first clone either predicts the same too, or (when it has a multi-output
layer the release mishandles) fails as the bug does.
RANDOM_MODELS=N sets how many seeds run (default 6; `nox -s full`: 250).
"""

import collections
import os

import pytest

import keras_clone_fix
from conftest import skip_module_unless_affected

skip_module_unless_affected()

import keras  # noqa: E402
from models import (  # noqa: E402
    assert_close, assert_predicts_like, assert_same_predictions, call_on_new_inputs, called_twice,
    data_for, node_arguments, predict)
from random_models import RandomModel  # noqa: E402

SHAPES = collections.Counter()  # feature -> models; read by conftest
pytestmark = pytest.mark.usefixtures("fresh_graph", "restore_fix_state")


@pytest.mark.parametrize("seed", range(int(os.environ.get("RANDOM_MODELS", "6"))))
def test_random_model(seed):
    generated = RandomModel(seed)
    model, data = generated.model, data_for(generated.model, seed)

    assert keras_clone_fix.patch().patched
    arguments = node_arguments(model)
    clone = keras.models.clone_model(model)
    assert_same_predictions(model, clone, data)
    assert_same_predictions(model, keras.models.clone_model(clone), data)
    assert_predicts_like(model, call_on_new_inputs(clone), data)
    assert node_arguments(model) == arguments
    assert_predicts_like(model, call_on_new_inputs(model), data)
    other = data_for(model, seed + 100)
    assert_close(predict(model, data) + predict(model, other),
                 predict(called_twice(model), data + other))

    # Last: an unpatched clone may write its masks into the model.
    keras_clone_fix.unpatch()
    if generated.state_arguments:  # _standardize_args: initial_state and constants given twice
        with pytest.raises(AssertionError):
            keras.models.clone_model(model)
    elif generated.breaks_upstream:
        with pytest.raises(AssertionError, match="Could not compute output"):
            keras.models.clone_model(model)
    elif not generated.unpatched_may_differ:
        assert_same_predictions(model, keras.models.clone_model(model), data)

    broken = generated.breaks_upstream or generated.state_arguments
    SHAPES.update(generated.features | {"models", "broken upstream"
                                        if broken else "clean upstream"})
