import os

import pytest

import keras_clone_fix
from keras_clone_fix import _activation


def pytest_report_header(config):
    return "keras_clone_fix under test: " + os.path.dirname(keras_clone_fix.__file__)


@pytest.fixture(params=["patched", "unpatched"])
def clone_mode(request):
    """Run the test with the fix on, then off; restore the state after."""
    saved = _activation.save_state()
    if request.param == "patched":
        assert keras_clone_fix.patch().patched
    else:
        assert not keras_clone_fix.unpatch().patched
    yield request.param
    _activation.restore_state(saved)


def expect_upstream_failure(request, clone_mode, broken, why):
    """Unpatched, a case the release is known to break must fail (strict)."""
    if clone_mode == "unpatched" and broken:
        request.applymarker(pytest.mark.xfail(raises=AssertionError, strict=True, reason=why))
