"""The pytest plugin, run in a fresh pytest process on a small test file."""

import textwrap

import pytest

from conftest import affected_only, run_pytest
from keras_clone_fix._bugs import LISTED_BY

pytestmark = pytest.mark.activation

USES_THE_FIXTURE = textwrap.dedent(u"""
    import sys

    import keras_clone_fix
    from clone_probe import clone_two_output_model


    def test_loading_the_plugin_imported_no_keras():
        assert not {"keras", "tensorflow"} & set(sys.modules)


    def test_before():
        from keras.models import clone_model
        assert not keras_clone_fix.status().patched
        assert clone_two_output_model(clone_model).startswith("AssertionError")


    def test_with_the_fixture(keras_clone_fix):
        from keras.models import clone_model
        assert keras_clone_fix.patched
        assert keras_clone_fix.activated_by == "pytest fixture keras_clone_fix"
        assert clone_two_output_model(clone_model) == "ok"


    def test_after():
        from keras.models import clone_model
        assert not keras_clone_fix.status().patched
        assert clone_two_output_model(clone_model).startswith("AssertionError")
""")


KERAS_IMPORTED_BY_THE_FIXTURE = textwrap.dedent(u"""
    import sys

    import keras_clone_fix
    from clone_probe import clone_two_output_model


    def test_keras_is_not_imported_yet():
        assert "keras" not in sys.modules


    def test_with_the_fixture(keras_clone_fix):
        from keras.models import clone_model
        assert keras_clone_fix.patched
        assert clone_two_output_model(clone_model) == "ok"


    def test_after():
        import keras.models
        fixed = type(vars(keras.models)["_clone_functional_model"]).__name__ == "FixedFunction"
        assert keras_clone_fix.status().patched is fixed is ACTIVE
        assert clone_two_output_model(keras.models.clone_model).startswith(
            "ok" if ACTIVE else "AssertionError")
""")


def test_header_names_the_state(tmp_path):
    finished = run_pytest(tmp_path, u"def test_nothing():\n    pass\n")
    assert "keras-clone-fix 0.2.0: not patched (waiting for `import keras` or `import tensorflow`)" in finished.stdout


@affected_only
def test_header_is_one_short_line_where_a_conftest_imports_keras(tmp_path):
    """The release's bugs counted, not listed: the list is a command away."""
    (tmp_path / "conftest.py").write_text(u"import keras\n")
    finished = run_pytest(tmp_path, u"def test_nothing():\n    pass\n")
    header = [line for line in finished.stdout.splitlines()
              if line.startswith("keras-clone-fix ")]
    assert len(header) == 1 and header[0].startswith("keras-clone-fix 0.2.0: patched (keras "), \
        finished.stdout
    assert header[0].endswith("; {})".format(LISTED_BY)) and len(header[0]) <= 200, header


def test_no_keras_clone_fix_disables_the_plugin(tmp_path):
    finished = run_pytest(tmp_path, u"def test_it(keras_clone_fix):\n    pass\n",
                          ["-p", "no:keras_clone_fix"])
    # No header line of the plugin (a path may hold the name: not the whole output).
    assert not [line for line in finished.stdout.splitlines()
                if line.startswith("keras-clone-fix ")], finished.stdout
    assert "fixture 'keras_clone_fix' not found" in finished.stdout


@affected_only
def test_fixture_patches_only_inside_its_test(tmp_path):
    finished = run_pytest(tmp_path, USES_THE_FIXTURE, env={"KERAS_CLONE_FIX": "0"})
    assert "4 passed" in finished.stdout, finished.stdout + finished.stderr


@affected_only
@pytest.mark.parametrize("switch, active", [("0", False), ("1", True)])
def test_fixture_restores_a_keras_first_imported_in_its_test(tmp_path, switch, active):
    """Afterwards the process is as if the test had not run: keras as Keras
    has it when activation is off, patched (as the wait for keras would
    have done) when it is on."""
    source = KERAS_IMPORTED_BY_THE_FIXTURE.replace("ACTIVE", repr(active))
    finished = run_pytest(tmp_path, source, env={"KERAS_CLONE_FIX": switch})
    assert "3 passed" in finished.stdout, finished.stdout + finished.stderr


FORK_OF_THE_RELEASE = textwrap.dedent(u"""
    import pytest


    @pytest.fixture
    def custom_keras():
        import keras
        release = keras.__version__
        keras.__version__ = release + "-custom"  # a fork of the installed release
        yield
        keras.__version__ = release


    def test_with_the_fixture(custom_keras, keras_clone_fix):
        assert keras_clone_fix.patched is FORCED, keras_clone_fix.reason
        assert ("set KERAS_CLONE_FIX_FORCE=1" in keras_clone_fix.reason) is not FORCED
""")


@affected_only
@pytest.mark.parametrize("force", [None, "1"])
def test_fixture_reads_the_force_variable(tmp_path, force):
    """With the automatic ways off, as the fixture needs none of them."""
    source = FORK_OF_THE_RELEASE.replace("FORCED", repr(force is not None))
    finished = run_pytest(tmp_path, source,
                          env={"KERAS_CLONE_FIX": "0", "KERAS_CLONE_FIX_FORCE": force})
    assert "1 passed" in finished.stdout, finished.stdout + finished.stderr
