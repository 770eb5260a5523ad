"""Randomised differential test: random models clone faithfully when patched.

Unpatched, each model either clones faithfully too, or (when it has a
multi-output layer the release mishandles) fails as the bug does.
RANDOM_MODELS=N sets how many seeds run (default 12; `nox -s full`: 250).
"""

import collections
import os

import pytest

import keras_clone_fix
from conftest import skip_module_unless_affected

skip_module_unless_affected()

import keras  # noqa: E402
from models import assert_same_predictions, data_for  # noqa: E402
from random_models import RandomModel  # noqa: E402

SHAPES = collections.Counter()  # feature -> models; read by conftest
pytestmark = pytest.mark.usefixtures("fresh_graph", "restore_fix_state")


@pytest.mark.parametrize("seed", range(int(os.environ.get("RANDOM_MODELS", "12"))))
def test_random_model(seed):
    generated = RandomModel(seed)
    model, data = generated.model, data_for(generated.model, seed)

    keras_clone_fix.unpatch()
    if generated.breaks_upstream:
        with pytest.raises(AssertionError, match="Could not compute output"):
            keras.models.clone_model(model)
    else:
        assert_same_predictions(model, keras.models.clone_model(model), data)

    assert keras_clone_fix.patch().patched
    assert_same_predictions(model, keras.models.clone_model(model), data)

    SHAPES.update(generated.features | {"models", "broken upstream"
                                        if generated.breaks_upstream else "clean upstream"})
