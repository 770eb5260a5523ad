import contextlib
import importlib
import json
import os
import subprocess
import sys
import threading
import time

import pytest

import keras_clone_fix
from keras_clone_fix import FAMILIES, _activation
from keras_clone_fix._affected import targets_for
from keras_clone_fix._cli import installed  # the tests ask it too

TESTS = os.path.dirname(os.path.abspath(__file__))
SITE_PACKAGES = os.path.dirname(os.path.dirname(os.path.abspath(keras_clone_fix.__file__)))


def version_of(module):
    """A module's release as numbers: '2.1.6-tf' -> (2, 1, 6)."""
    return tuple(int(part) for part in module.__version__.split("-")[0].split(".")[:3])


def _keras_version():
    try:
        import keras
    except ImportError:
        return None
    return version_of(keras)


KERAS = _keras_version()
AFFECTED = KERAS is not None and (2, 0, 0) <= KERAS < (2, 4, 0)
# clone_model exists from 2.0.7: tests that clone need an affected release from there.
CLONE_AFFECTED = AFFECTED and KERAS >= (2, 0, 7)
affected_only = pytest.mark.skipif(not CLONE_AFFECTED,
                                   reason="clones a model: needs Keras 2.0.7 - 2.3.1")
keras_free_only = pytest.mark.skipif(KERAS is not None, reason="needs an environment without keras")


GRAPH_MODE = "KERAS_CLONE_FIX_TEST_GRAPH_MODE"  # set: the TF 2 modules run with eager execution off


def tf2_families(keras_package):
    """(id, keras module, release) of each TensorFlow 2 family installed
    here: tf.keras of TensorFlow 2.0 - 2.15 (release: TensorFlow's (major,
    minor), whose routines it runs), with `keras_package` the keras package
    2.4 - 2.15 beside it too (it runs its TensorFlow's routines), and
    tf_keras, the reference (release None). Turns eager execution off where
    GRAPH_MODE is set."""
    found = []
    if installed("tensorflow"):
        tensorflow = importlib.import_module("tensorflow")
        release = version_of(tensorflow)[:2]
        if (2, 0) <= release < (2, 16):
            if os.environ.get(GRAPH_MODE):
                tensorflow.compat.v1.disable_eager_execution()
            found.append(("tf.keras", tensorflow.keras, release))
            if keras_package and installed("keras"):
                keras = importlib.import_module("keras")
                if (2, 4) <= version_of(keras) < (2, 16):
                    found.append(("keras " + keras.__version__, keras, release))
    if installed("tf_keras"):
        found.append(("tf_keras", importlib.import_module("tf_keras"), None))
    return found


def skip_module_unless_affected(clones=True):
    """Skip the module unless an affected keras is installed; one that
    clones needs clone_model, which exists from 2.0.7."""
    if not (CLONE_AFFECTED if clones else AFFECTED):
        pytest.skip("needs multi-backend Keras {} - 2.3.1".format("2.0.7" if clones else "2.0.0"),
                    allow_module_level=True)


def pytest_report_header(config):
    return "keras_clone_fix under test: {}; keras {}".format(
        os.path.dirname(keras_clone_fix.__file__), KERAS)


# Seconds per test file, setup and teardown included (printed at the end).
FILE_SECONDS = {}


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    FILE_SECONDS[path] = FILE_SECONDS.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_sep("-", "seconds per test file")
    for path, seconds in sorted(FILE_SECONDS.items(), key=lambda item: -item[1]):
        terminalreporter.write_line("{:>7.1f}  {}".format(seconds, path))
    terminalreporter.write_line("interpreters the tests started: {}, {:.1f} s".format(
        STARTED["interpreters"], STARTED["seconds"]))
    activation_model = sys.modules.get("test_activation_model")
    if activation_model and activation_model.RAN["sequences"]:
        ran = dict(activation_model.RAN)
        terminalreporter.write_sep("-", "activation model: {} event sequences".format(
            ran.pop("sequences")))
        terminalreporter.write_line(", ".join(
            "{} {}".format(count, event) for event, count in sorted(ran.items())))
    random_models = sys.modules.get("test_random_models")
    if random_models and random_models.SHAPES:
        terminalreporter.write_sep("-", "random models: how many had each feature")
        for feature, count in sorted(random_models.SHAPES.items()):
            terminalreporter.write_line("{:>5}  {}".format(count, feature))


def release_targets():
    """{family: [targets]} of the releases installed here."""
    return {family: targets_for(family, importlib.import_module(family).__version__)
            if installed(family) else [] for family in FAMILIES}


RELEASE_TARGETS = release_targets()


class Finished(object):
    """What subprocess.run returns (Python 3 only): returncode, stdout, stderr."""

    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


# Every process the tests start goes through run(): how many, how long in all
# (printed at the end of the session, read by .ci/session).
STARTED = {"interpreters": 0, "seconds": 0.0}


def run(command, env=None, cwd=None, timeout=600):
    """Run a command to its end; killed after `timeout` seconds (Python 2's
    communicate() has no timeout)."""
    started = time.time()
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True)
    timer = threading.Timer(timeout, process.kill)
    timer.start()
    try:
        stdout, stderr = process.communicate()
    finally:
        timer.cancel()
        STARTED["interpreters"] += 1
        STARTED["seconds"] += time.time() - started
    return Finished(process.returncode, stdout, stderr)


def run_python(args, python=sys.executable, env=None, cwd=TESTS):
    """A fresh interpreter, KERAS_CLONE_FIX* unset unless given in env; a
    variable given as None in env is unset."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("KERAS_CLONE_FIX")}
    environment.update(env or {})
    return run([python] + list(args), env={k: v for k, v in environment.items() if v is not None},
               cwd=cwd)


_RAN_ONCE = {}


def run_python_once(args, env=None):
    """run_python, once per arguments and environment in a session: tests
    that assert different things about one command's output share its run
    (the self-check imports Keras and checks in two interpreters)."""
    key = (tuple(args), tuple(sorted((env or {}).items())))
    if key not in _RAN_ONCE:
        _RAN_ONCE[key] = run_python(args, env=env)
    return _RAN_ONCE[key]


def run_pytest(tmp_path, test_source, options=(), env=None):
    """pytest in a fresh interpreter on a user's test file of this source,
    with tests/ importable (clone_probe), then what the tests run with (a
    tree put before the installed package)."""
    (tmp_path / "test_user.py").write_text(test_source)
    path = [TESTS] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    return run_python(["-m", "pytest", "-p", "no:cacheprovider", "-v",
                       "--rootdir", str(tmp_path), str(tmp_path)] + list(options),
                      env=dict({"PYTHONPATH": os.pathsep.join(path)}, **(env or {})),
                      cwd=str(tmp_path))


def probe(how=None, **options):
    """Run clone_probe.py; its JSON report and the finished process."""
    finished = run_python(["clone_probe.py"] + ([how] if how else []), **options)
    reports = [line[len("PROBE "):] for line in finished.stdout.splitlines()
               if line.startswith("PROBE ")]
    assert reports, "probe failed:\n" + finished.stdout + finished.stderr
    return json.loads(reports[-1]), finished


# A module the other interpreter's .pth imports: this environment's
# site-packages on sys.path, with its .pth files run (Python 2 needs
# protobuf's to import TensorFlow), all but ours.
EVERY_PTH_BUT_OURS = """
import os
import site
import sys

sys.path.append({path!r})
for name in sorted(os.listdir({path!r})):
    if name.endswith(".pth") and name != "keras_clone_fix.pth":
        site.addpackage({path!r}, name, set())
"""


@pytest.fixture(scope="session")
def python_without_pth(tmp_path_factory):
    """An interpreter that sees this environment's packages and runs its
    .pth files, all but ours. (python -S would do without ours, but
    TensorFlow 1.15 fails to import without `site`.)"""
    home = str(tmp_path_factory.mktemp("without-pth"))
    if sys.version_info[0] > 2:
        make_environment = [sys.executable, "-m", "venv", "--without-pip", home]
    else:  # Python 2 has no venv; the 2.7 sessions install virtualenv
        make_environment = [sys.executable, "-m", "virtualenv", "--no-pip", "--no-setuptools",
                            "--no-wheel", "--quiet", home]
    made = run(make_environment)
    assert made.returncode == 0, made.stdout + made.stderr
    python = os.path.join(home, "bin", "python")
    site_dir = run_python(["-c", "import site; print(site.getsitepackages()[0])"],
                          python=python).stdout.strip()
    with open(os.path.join(site_dir, "environment_but_keras_clone_fix.py"), "w") as module:
        module.write(EVERY_PTH_BUT_OURS.format(path=SITE_PACKAGES))
    with open(os.path.join(site_dir, "environment.pth"), "w") as pth:
        pth.write("import environment_but_keras_clone_fix\n")
    return python


def warnings_in(stderr):
    return [line for line in stderr.splitlines() if "KerasCloneFixWarning" in line]


# The runs with the fix off are marked: a session may leave them to another
# that runs the same release (noxfile.py).
MODES = ["patched", pytest.param("unpatched", marks=pytest.mark.unpatched)]


@contextlib.contextmanager
def fix_in_mode(mode):
    """The fix on ("patched") or off ("unpatched") inside, the state before
    restored after."""
    with _activation.restoring():
        if mode == "patched":
            assert keras_clone_fix.patch().patched
        else:
            assert not keras_clone_fix.unpatch().patched
        yield


@contextlib.contextmanager
def lambdas_remade(keras):
    """tf_keras remakes a Lambda (in a nested model, a config, a file) from
    its config's bytecode only outside its safe mode (our releases have none)."""
    if keras.__name__ != "tf_keras":
        yield
        return
    from tf_keras.src.saving.serialization_lib import SafeModeScope
    with SafeModeScope(False):
        yield


@pytest.fixture(params=MODES)
def clone_mode(request):
    """Run the test with the fix on, then off; restore the state after."""
    with fix_in_mode(request.param):
        yield request.param


# The backends of the families on TensorFlow 1.x, by module name: keras's
# (where its backend is TensorFlow), tf.keras's from 1.10 and before.
TF1_BACKEND_MODULES = ("keras.backend", "tensorflow.python.keras.backend",
                       "tensorflow.python.keras._impl.keras.backend")


def session_config(tf):
    """The TensorFlow 1.x sessions the tests' own models run in: soft
    placement (multi_gpu_model's two GPUs go on the CPU), and no graph
    rewriting (the graph optimizer's L1 passes; Grappler, where TensorFlow
    1.12+ lets it be switched off), much of a small graph's first run
    (docs/testing.md). The graphs the tests compare are the ones Keras builds,
    run the same way on both sides of each comparison; the `check`
    command's sides and the self-check run with TensorFlow's defaults."""
    config = tf.ConfigProto(allow_soft_placement=True)
    config.graph_options.optimizer_options.opt_level = tf.OptimizerOptions.L0
    rewriting = config.graph_options.rewrite_options
    if "disable_meta_optimizer" in rewriting.DESCRIPTOR.fields_by_name:  # TensorFlow 1.12+
        rewriting.disable_meta_optimizer = True
    return config


@pytest.fixture(autouse=True)
def unoptimized_sessions():
    """Before each test, a new session of session_config() for each family
    imported on TensorFlow 1.x; nothing where none is (nothing is imported)."""
    tensorflow = sys.modules.get("tensorflow")
    if tensorflow is not None and tensorflow.__version__.startswith("1."):
        for name in TF1_BACKEND_MODULES:
            backend = sys.modules.get(name)
            if backend is not None and getattr(backend, "backend", lambda: None)() == \
                    "tensorflow":
                backend.set_session(tensorflow.Session(config=session_config(tensorflow)))
    yield


@pytest.fixture
def fresh_graph():
    """A new backend graph after the test (Theano has no session to clear)."""
    yield
    from keras import backend
    if hasattr(backend, "clear_session"):
        backend.clear_session()


@pytest.fixture(scope="session")
def user_module(tmp_path_factory):
    """(directory, module): the user's module of custom objects for the family
    tests/test_check.py checks, importable here and, through PYTHONPATH, in
    the `check` command's interpreters."""
    import check_models
    from test_check import FAMILY
    directory = tmp_path_factory.mktemp("user")
    (directory / "user_layers.py").write_text(check_models.CUSTOM_OBJECTS_MODULE.format(
        import_keras=check_models.IMPORT_KERAS[FAMILY]))
    sys.path.insert(0, str(directory))
    try:
        yield str(directory), importlib.import_module("user_layers")
    finally:
        sys.path.remove(str(directory))
        sys.modules.pop("user_layers", None)


@pytest.fixture(scope="session")
def checked_models(tmp_path_factory, user_module):
    """One `check` run of every model of tests/test_check.py's CHECKED that
    the release can check (test_check.check_at_once): its tests, and
    tests/test_check_inputs.py's, each read their model's report."""
    from test_check import check_at_once
    return check_at_once(tmp_path_factory.mktemp("checked"), user_module)


@pytest.fixture
def restore_fix_state():
    with _activation.restoring():
        yield


def expect_upstream_failure(request, clone_mode, broken, why, raises=AssertionError):
    """Unpatched, a case the release is known to break must fail (strict),
    with `raises`."""
    if clone_mode == "unpatched" and broken:
        request.applymarker(pytest.mark.xfail(raises=raises, strict=True, reason=why))
