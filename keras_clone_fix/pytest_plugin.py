"""pytest plugin (entry point `keras_clone_fix`; disable with -p no:keras_clone_fix).

Loading it imports keras_clone_fix, which activates like any import (unless
KERAS_CLONE_FIX=0), but imports neither keras nor tensorflow.
"""

import pytest

import keras_clone_fix as _package
from keras_clone_fix import _activation


def pytest_report_header(config):
    status = _package.status()
    return "keras-clone-fix {}: {} ({})".format(
        _package.__version__, "patched" if status.patched else "not patched", status.reason)


@pytest.fixture(name="keras_clone_fix")
def keras_clone_fix_fixture():
    """The fix, active for this test; yields its Status. Afterwards the
    process is as it was before the test, patched or not, whether keras was
    imported before the test, during it or not at all."""
    with _activation.restoring():
        yield _activation.patch(source="pytest fixture keras_clone_fix")
