"""Test matrix: real Keras releases on the Pythons our users run.

    nox                 # every environment below (what .ci/run runs)
    nox -s demo         # the bug on Keras 2.2.4, then the fix
    nox -s full         # the long randomised differential run
    nox -s release-sources    # every rule on the source of every release 2.0.7 - 2.3.1
    nox -s tf-release-sources # the same on TensorFlow 1.4 - 1.15
    nox -s tf2-release-sources # the same on TensorFlow 2.0 - 2.5, keras 2.5 and 2.6
    nox -s activation-model   # the long model-based test of activation
    nox -s bench        # clone-time, memory and start-up benchmarks
    nox -s check-cost   # seconds and memory of `check` on BERT-base and ResNet50
    nox -s startup startup-2.7   # start-up figures on Python 3.13 and 2.7
    nox -s patch-cost   # what patch() costs on every affected release
    nox -s load-cost    # load_model of ResNet50 (.h5, SavedModel) with the fix and without, TF 2
    nox -s layer-call-cost    # what the fix adds to a layer call on tf.keras 1.12, 1.13

Each session installs the one wheel built from this tree (never an editable
install: those carry no .pth file), so tests see what users install.
"""

import atexit
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

import nox

nox.options.sessions = ["tests", "tests-2.7", "wheel", "wheel-2.7"]
nox.options.error_on_missing_interpreters = True
nox.needs_version = ">=2024.3.2"

ROOT = os.path.dirname(os.path.abspath(__file__))
TF1 = ["tensorflow==1.15.5", "protobuf<3.21", "h5py<3"]
QUIET_TF = {"TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONWARNINGS": "ignore::DeprecationWarning,ignore::FutureWarning"}
# What a session leaves to another that proves the same (PYTEST_ADDOPTS):
# - tf.keras's tests (tests/test_tf_keras.py, test_check_tf_keras.py and
#   tf.keras's parts of test_model_boundary, test_faithful_clones and
#   test_random_models) run
#   once for each TensorFlow (1.15: tests(keras-2.2.4-tf-1.15) and, on Python
#   2.7, tests-2.7; 1.14: tests(tf-1.14); 2.1: tests(keras-2.3.1-tf-2.1), with
#   test_tf2_keras.py): the other keras sessions on those releases leave them.
# - The tests marked `activation` (how the fix goes in and out) depend on the
#   kinds of targets (a module's function, a class's method, a classmethod,
#   a method that every layer call runs), the families imported and the
#   Python, not on the release. They run in keras 2.2.5 with TensorFlow 1.14
#   (keras's function and method, and tf.keras 1.14's method and classmethod:
#   both families in one process, Python 3.7), tf-1.12 (all four kinds,
#   Python 3.6) and Python
#   2.7, and where nothing is patched, in keras-3 and the wheel sessions; the
#   others leave them. Each release still proves its own activation: its
#   self-check and tests run patched by the .pth (tf.keras: by all three ways
#   in).
# - Those marked `check_command` (how `check` treats files, options and
#   input) do not depend on the backend or the patched targets: they run for
#   each family at both ends of its releases and Python (keras 2.0.0 and
#   2.2.4, whose targets 2.3.1 has; tf.keras 1.4 and 1.14; Python 2.7) and in
#   keras-3. Every session still runs `check` on its own release's model
#   files (tests/test_check.py).
# - The runs with the fix off (marked `unpatched`) run the Keras release's own
#   code, which does not depend on the Python: of the two keras 2.2.4 sessions
#   on a backend, one runs them. Python 2.7 on TensorFlow leaves them to 3.7,
#   Theano on 3.7 leaves them to 2.7.
TF_KERAS_ELSEWHERE = ("--ignore=tests/test_tf_keras.py --ignore=tests/test_check_tf_keras.py "
                      "-k 'not ((test_model_boundary or test_faithful_clones or test_random_models)"
                      " and tf.keras)'")
ACTIVATION, CHECK_COMMAND, UNPATCHED = "activation", "check_command", "unpatched"  # markers


def leaving(*elsewhere, running=(), **env):
    """QUIET_TF and env, with PYTEST_ADDOPTS leaving out `elsewhere`: pytest
    options (from "-") and markers; running only the test files `running`
    where it names some."""
    options = list(running) + [item for item in elsewhere if item.startswith("-")]
    markers = [item for item in elsewhere if not item.startswith("-")]
    if markers:  # pytest reads the last -m alone
        options.append("-m '{}'".format(" and ".join("not " + marker for marker in markers)))
    return dict(QUIET_TF, PYTEST_ADDOPTS=" ".join(options), **env)


# A session whose patched targets another session on its Python has (its
# twin, named at its row) leaves both to that twin.
PROVEN_BY_ITS_TWIN = (ACTIVATION, CHECK_COMMAND)


# Twins: keras 2.2.4 on TensorFlow, on the same Python. Theano compiles with
# few graph optimizations: those are most of its time (docs/testing.md), and
# the graphs the tests compare are Keras's.
THEANO = dict(KERAS_BACKEND="theano", THEANO_FLAGS="optimizer=fast_compile")


# TensorFlow 2.2 - 2.4 install on Python 3.8 with these (docs/testing.md).
TF2_PINS = ["h5py==2.10.0", "numpy==1.18.5", "protobuf==3.20.3", "pytest<8"]
TF2_ONLY = ["tests/test_tf2_keras.py", "tests/test_saved_model.py", "tests/test_random_models.py"]


def tf_on_python36(tensorflow, tensorboard, numpy):
    """TensorFlow 1.x on Python 3.6, with what has dropped 3.6 since pinned
    (pip there takes the newest release of everything: grpcio's newer ones
    build from source for 20 minutes)."""
    return (["tensorflow==" + tensorflow, "numpy==" + numpy, "termcolor==1.1.0", "grpcio==1.26.0",
             "protobuf==3.19.6", "h5py==2.10.0", "wheel==0.37.1"]
            + (["tensorboard==" + tensorboard] if tensorboard else []))


# id: (python, requirements, environment variables)
ENVIRONMENTS = {
    "keras-2.0.0-tf-1.15": ("3.7", TF1 + ["keras==2.0.0"], leaving(TF_KERAS_ELSEWHERE, ACTIVATION)),
    # Twins: 2.0.6 patches 2.0.0's targets, 2.1.6 2.0.8's, 2.3.1 2.2.4's but from_config.
    "keras-2.0.6-tf-1.15": ("3.7", TF1 + ["keras==2.0.6"],
                            leaving(TF_KERAS_ELSEWHERE, *PROVEN_BY_ITS_TWIN)),
    "keras-2.0.8-tf-1.15": ("3.7", TF1 + ["keras==2.0.8"],
                            leaving(TF_KERAS_ELSEWHERE, ACTIVATION, CHECK_COMMAND)),
    "keras-2.1.6-tf-1.15": ("3.7", TF1 + ["keras==2.1.6"],
                            leaving(TF_KERAS_ELSEWHERE, *PROVEN_BY_ITS_TWIN)),
    # activation: keras 2.2.5 patches the same kinds of targets, on 3.7 too.
    "keras-2.2.4-tf-1.15": ("3.7", TF1 + ["keras==2.2.4"], leaving(ACTIVATION)),
    # TensorFlow 1.14 (affected too): both families patched in one process.
    # check_command: keras's targets are 2.2.4's but from_config (its twin), tf.keras's 1.14's.
    "keras-2.2.5-tf-1.14": ("3.7", ["tensorflow==1.14.0", "protobuf<3.21", "h5py<3", "keras==2.2.5"],
                            leaving(TF_KERAS_ELSEWHERE, CHECK_COMMAND)),
    "keras-2.3.1-tf-1.15": ("3.7", TF1 + ["keras==2.3.1"],
                            leaving(TF_KERAS_ELSEWHERE, *PROVEN_BY_ITS_TWIN)),
    "keras-2.3.1-tf-2.1": ("3.7", ["tensorflow==2.1.4", "keras==2.3.1", "protobuf<3.21",
                                   "h5py<3"], leaving(*PROVEN_BY_ITS_TWIN)),
    "keras-2.2.4-theano": ("3.7", ["theano==1.0.4", "keras==2.2.4", "numpy<1.19", "scipy<1.6",
                                   "h5py<3"], leaving(UNPATCHED, *PROVEN_BY_ITS_TWIN, **THEANO)),
    # TensorFlow before 1.13 has no Python 3.7 wheels: on 3.6, see tf_on_python36.
    "tf-1.4": ("3.6", tf_on_python36("1.4.1", None, "1.14.5"), leaving(ACTIVATION)),
    "tf-1.5": ("3.6", tf_on_python36("1.5.1", None, "1.14.5"), leaving(ACTIVATION, CHECK_COMMAND)),
    "tf-1.10": ("3.6", tf_on_python36("1.10.1", "1.10.0", "1.14.5"),
                leaving(ACTIVATION, CHECK_COMMAND)),
    "tf-1.12": ("3.6", tf_on_python36("1.12.3", "1.12.2", "1.16.6"), leaving(CHECK_COMMAND)),
    "tf-1.13": ("3.7", ["tensorflow==1.13.2", "protobuf<3.21", "h5py<3"],
                leaving(ACTIVATION, CHECK_COMMAND)),
    "tf-1.14": ("3.7", ["tensorflow==1.14.0", "protobuf<3.21", "h5py<3"], leaving(ACTIVATION)),
    # tf.keras of TensorFlow 2.2 - 2.6: one session for each source of the routines
    # patched there (reconstruct_from_config in network.py, functional.py, and
    # the keras package's; the clone routine is one source throughout), each
    # running tests/test_tf2_keras.py, test_saved_model.py and
    # test_random_models.py alone. Activation: 2.3's targets are module
    # functions of the tensorflow family, as 2.2's; 2.6's are the keras
    # family's, reached through tf.keras.
    "tf-2.2": ("3.8", ["tensorflow-cpu==2.2.3"] + TF2_PINS, leaving(ACTIVATION, running=TF2_ONLY)),
    "keras-2.4.3-tf-2.3": ("3.8", ["tensorflow-cpu==2.3.4", "keras==2.4.3"] + TF2_PINS,
                           leaving(running=TF2_ONLY)),
    "keras-2.6.0-tf-2.6": ("3.9", ["tensorflow-cpu==2.6.5", "keras==2.6.0", "protobuf==3.19.6",
                                   "pytest<8"], leaving(running=TF2_ONLY)),
    "keras-3-tf-2.21": ("3.11", ["tensorflow-cpu==2.21.*", "keras>=3"], QUIET_TF),
    # Keras 3 and TensorFlow 2.21 here too, nothing to patch: activation as in keras-3's.
    "tf-keras-tf-2.21": ("3.11", ["tensorflow-cpu==2.21.*", "tf-keras==2.21.*"],
                         leaving(ACTIVATION, CHECK_COMMAND)),
}
# The same on Python 2.7, in its own sessions: they need the virtualenv backend.
# TensorFlow 1.15.0 is the last with 2.7 wheels; grpcio 1.39 the last such wheel.
PYTHON2_ENVIRONMENTS = {
    "keras-2.2.4-tf-1.15.0": ("2.7", ["tensorflow==1.15.0", "grpcio==1.39.0", "keras==2.2.4",
                                      "h5py<3"], leaving(UNPATCHED)),
    "keras-2.2.4-theano": ("2.7", ["theano==1.0.4", "keras==2.2.4", "numpy<1.17", "scipy<1.3",
                                   "h5py<3"], leaving(*PROVEN_BY_ITS_TWIN, **THEANO)),
}


def build_wheel(directory):
    """The wheel of this tree, built in `directory` from a copy of the tree:
    the build leaves nothing in the tree, and two builds can run at once."""
    source = os.path.join(directory, "source")
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".nox", ".ci", "build", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                    "--wheel-dir", directory, source], check=True)
    (wheel,) = glob.glob(os.path.join(directory, "*.whl"))
    return wheel


_built = []  # nox imports this file once per run


def built_wheel():
    """The wheel every session of this nox run installs: the one .ci/run built
    for all of its runs (KERAS_CLONE_FIX_WHEEL), or one built now."""
    if not _built:
        wheel = os.environ.get("KERAS_CLONE_FIX_WHEEL")
        if not wheel:
            scratch = tempfile.mkdtemp(prefix="keras-clone-fix-build-")
            atexit.register(shutil.rmtree, scratch, True)
            wheel = build_wheel(scratch)
        _built.append(wheel)
    return _built[0]


CONSTRAINTS_36 = os.path.join(ROOT, ".ci", "py36-constraints.txt")
# In a kept environment (a session with reuse_venv=True): what it was built from.
BUILT_FROM = "keras-clone-fix-built-from.txt"


def install(session, *requirements):
    """The wheel of this tree and `requirements` (with pytest and what the
    Python needs). A kept environment built from the same requirements, the
    same constraints and the wheel's same dependencies gets only the new wheel;
    any other kept one (built from others, or cut short) is made anew."""
    constraints = ()
    if session.python == "3.6":
        requirements += ("hypothesis",)
        constraints = ("-c", CONSTRAINTS_36)
    elif session.python == "2.7":
        # The tests make an interpreter without our .pth; 2.7 has no venv.
        # Hypothesis 4.x is the last for 2.7.
        requirements += ("virtualenv<20.22", "hypothesis<5")
    else:
        requirements += ("hypothesis",)
    wheel = built_wheel()
    # The constraints by their content, not their path: a clone elsewhere (CI's)
    # finds the environments built here.
    built_from = "\n".join(("pytest",) + requirements + wheel_dependencies(wheel) + (
        (read(CONSTRAINTS_36),) if constraints else ())) + "\n"
    location = session.virtualenv.location
    stamp = os.path.join(location, BUILT_FROM)
    if os.path.exists(stamp) and read(stamp) == built_from:
        # As in a new environment: no files the last run's package wrote (the
        # stored builds of keras_clone_fix/__pycache__). session.install, not
        # session.run: --install-only runs the one, not the other.
        for leftover in glob.glob(os.path.join(location, "lib", "python*", "site-packages",
                                               "keras_clone_fix")):
            shutil.rmtree(leftover)
        session.install("--no-deps", "--force-reinstall", wheel)
        return
    if session.virtualenv._reused:  # nox 2024.10.9 (.ci/run pins it) says so
        shutil.rmtree(location)
        session.virtualenv.create()
    if session.python == "3.6":
        # venv's pip 18 on 3.6 picks releases that need a newer Python.
        session.install("pip==21.3.1")
    session.install(wheel, "pytest", *(requirements + constraints))
    with open(stamp, "w") as written:
        written.write(built_from)


def read(path):
    with open(path) as text:
        return text.read()


def wheel_dependencies(wheel):
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        lines = archive.read(metadata).decode("utf-8").splitlines()
    return tuple(line for line in lines if line.startswith("Requires-Dist:"))


def environments(table):
    return nox.parametrize("python,requirements,env",
                           [nox.param(*spec, id=name) for name, spec in table.items()])


def run_suite(session, requirements, env):
    # Bytecode compiled at install: with PYTHONDONTWRITEBYTECODE set (as it is
    # on this project's machines) no interpreter stores what it compiles, so
    # each one the tests start compiled TensorFlow's modules anew (import
    # keras: 9.2 s, against 3.0 s compiled).
    install(session, *requirements)
    session.run("pytest", *session.posargs, env=env)


# The test sessions keep their environments (see install); .ci/run keeps them
# between runs in a directory of its own.
@nox.session(venv_backend="venv", reuse_venv=True)
@environments(ENVIRONMENTS)
def tests(session, requirements, env):
    """The whole suite against one real keras environment."""
    run_suite(session, requirements, env)


@nox.session(name="tests-2.7", venv_backend="virtualenv", reuse_venv=True)  # 2.7: no venv
@environments(PYTHON2_ENVIRONMENTS)
def tests_python2(session, requirements, env):
    """The whole suite against one real keras environment on Python 2.7."""
    run_suite(session, requirements, env)


def check_wheel(session, older_wrapt):
    """The wheel with the newest wrapt it allows, then with `older_wrapt`. The
    environment is kept between runs (pytest, hypothesis); wrapt goes in anew
    as the wheel's dependency, at each run."""
    session.run("python", "-m", "pip", "uninstall", "--yes", "--quiet", "wrapt")
    install(session)
    session.install(*[line.split(":", 1)[1].strip()
                      for line in wheel_dependencies(built_wheel())])
    session.run("pytest", *session.posargs)
    session.install(older_wrapt)
    session.run("pytest", *session.posargs)


@nox.session(venv_backend="venv", reuse_venv=True,
             python=["3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13"])
def wheel(session):
    """The wheel installs and activates on every Python, with the newest wrapt
    each allows (1.16 before 3.9; 2.x after), keras not installed."""
    check_wheel(session, "wrapt<2")


@nox.session(name="wheel-2.7", venv_backend="virtualenv", python="2.7", reuse_venv=True)
def wheel_python2(session):
    """The same on Python 2.7: wrapt 1.15 (the newest for 2.7), then the
    oldest wrapt we accept, 1.10."""
    check_wheel(session, "wrapt==1.10.*")


@nox.session(venv_backend="venv", python="3.7")
def demo(session):
    """Show the bug on a real affected keras, then the fix."""
    install(session, *TF1, "keras==2.2.4")
    session.log("without the fix (KERAS_CLONE_FIX=0): expect a failure")
    # No QUIET_TF: the self-check keeps TensorFlow's noise out of its report.
    session.run("python", "-m", "keras_clone_fix", env={"KERAS_CLONE_FIX": "0"},
                success_codes=[1])
    session.log("with the fix, activated by the installed .pth")
    session.run("python", "-m", "keras_clone_fix")


@nox.session(venv_backend="venv", python="3.7")
@nox.parametrize("keras_version", ["2.1.6", "2.2.4", "2.3.1"])
def full(session, keras_version):
    """The randomised differential test with 250 models."""
    install(session, *TF1, "keras==" + keras_version)
    session.run("pytest", "tests/test_random_models.py", *session.posargs,
                env=dict(QUIET_TF, RANDOM_MODELS="250"))


KERAS_RELEASES = ["2.0.7", "2.0.8", "2.0.9", "2.1.0", "2.1.1", "2.1.2", "2.1.3", "2.1.4",
                  "2.1.5", "2.1.6", "2.2.0", "2.2.1", "2.2.2", "2.2.3", "2.2.4", "2.2.5",
                  "2.3.0", "2.3.1"]


def check_release_sources(session, package, versions, *download_options, more=()):
    """test_release_sources.py on the wheels of `package` at `versions`, and
    of `more`: (requirement, download options) each."""
    install(session)
    wheels = os.path.join(session.create_tmp(), "release-wheels")
    downloads = [("{}=={}".format(package, version), download_options) for version in versions]
    for requirement, options in downloads + list(more):
        session.run("pip", "download", "--quiet", "--no-deps", "--dest", wheels,
                    *options, requirement)
    session.run("pytest", "tests/test_release_sources.py", *session.posargs,
                env={"RELEASE_WHEELS": wheels})


@nox.session(name="release-sources", venv_backend="venv", python="3.7")
def release_sources(session):
    """Every rule of every target finds its code in the source of each of
    the 18 releases it covers (their wheels, downloaded, not installed)."""
    check_release_sources(session, "keras", KERAS_RELEASES)


TF_RELEASES = ["1.4.1", "1.5.1", "1.6.0", "1.7.1", "1.8.0", "1.9.0", "1.10.1", "1.11.0",
               "1.12.3", "1.13.2", "1.14.0", "1.15.5"]


@nox.session(name="tf-release-sources", venv_backend="venv", python="3.7")
def tf_release_sources(session):
    """The same for tf.keras: the last release of each TensorFlow 1.4 - 1.15
    (their Python 3.6 wheels)."""
    check_release_sources(session, "tensorflow", TF_RELEASES, "--only-binary=:all:",
                          "--python-version", "3.6")


TF2_WITH_THE_BUGS = ["2.1.4", "2.2.3", "2.3.4", "2.4.4", "2.5.3"]
PYTHON_37_WHEELS = ("--only-binary=:all:", "--python-version", "3.7")


@nox.session(name="tf2-release-sources", venv_backend="venv", python="3.7")
def tf2_release_sources(session):
    """The same for tf.keras of TensorFlow 2.0 - 2.5 (tensorflow-cpu's wheels
    from 2.1; 2.0 has none) and the keras package 2.5 (keras-nightly, which
    TensorFlow 2.5 installs) and 2.6, which carry tf.keras's code."""
    check_release_sources(session, "tensorflow-cpu", TF2_WITH_THE_BUGS, *PYTHON_37_WHEELS, more=[
        ("tensorflow==2.0.4", PYTHON_37_WHEELS), ("keras-nightly==2.5.0.dev2021032900", ()),
        ("keras==2.6.0", ())])


@nox.session(name="activation-model", venv_backend="venv", python="3.7")
def activation_model(session):
    """The model-based activation test with 300 event sequences (keras 2.2.4)."""
    install(session, *TF1, "keras==2.2.4")
    session.run("pytest", "tests/test_activation_model.py", *session.posargs,
                env=dict(QUIET_TF, ACTIVATION_SEQUENCES="300"))


@nox.session(venv_backend="venv", python="3.7")
def bench(session):
    """Clone time, memory and start-up figures: Python 3.7, TF 1.15, Keras 2.2.5."""
    install(session, *TF1, "keras==2.2.5")
    session.run("python", "benchmarks/clone_time.py", env=QUIET_TF)
    session.run("python", "benchmarks/startup.py", env=QUIET_TF)


@nox.session(name="check-cost", venv_backend="venv", python="3.7")
def check_cost(session):
    """Seconds and peak memory of `python -m keras_clone_fix check` on a
    BERT-base-sized model and ResNet50: Python 3.7, TF 1.15, Keras 2.2.4."""
    install(session, *TF1, "keras==2.2.4")
    session.run("python", "benchmarks/check_cost.py", env=QUIET_TF)


def measure_startup(session):
    install(session)
    session.run("python", "benchmarks/startup.py")


@nox.session(venv_backend="venv", python="3.13")
def startup(session):
    """Start-up figures on the newest Python, with wrapt 2 installed."""
    measure_startup(session)


@nox.session(name="startup-2.7", venv_backend="virtualenv", python="2.7")
def startup_python2(session):
    """Start-up figures on Python 2.7, with wrapt 1.15 installed."""
    measure_startup(session)


PATCH_COST_KERAS = ["2.0.0", "2.0.6", "2.0.8", "2.1.6", "2.2.4", "2.2.5", "2.3.1"]
PATCH_COST_BASELINE = os.path.join("benchmarks", "patch_time_baseline.json")
# The TensorFlow 2 releases patched that no test session installs, with the pins they install with.
TF2_OUTSIDE_THE_MATRIX = {
    "tf-2.0": ("3.7", ["tensorflow-cpu==2.0.4", "h5py==2.10.0", "numpy==1.18.5",
                       "protobuf==3.20.3"]),
    "tf-2.4": ("3.8", ["tensorflow-cpu==2.4.4", "numpy==1.19.5", "h5py==2.10.0",
                       "protobuf==3.20.3"]),
    "tf-2.5": ("3.9", ["tensorflow-cpu==2.5.3", "h5py==3.1.0", "numpy==1.19.5"]),
}


@nox.session(name="patch-cost", venv_backend="venv")
@nox.parametrize("python,requirements,keras_releases", [
    # One environment for the Keras releases: each installed in turn, --no-deps
    # (2.2.4 brings what they all need); its TensorFlow 1.15 is not measured.
    nox.param("3.7", TF1 + ["keras==2.2.4"], PATCH_COST_KERAS, id="keras")] + [
    nox.param(ENVIRONMENTS[name][0], ENVIRONMENTS[name][1], [], id=name)
    for name in ("tf-1.4", "tf-1.5", "tf-1.10", "tf-1.12", "tf-1.13", "tf-1.14",
                 "keras-2.3.1-tf-2.1", "tf-2.2", "keras-2.4.3-tf-2.3", "keras-2.6.0-tf-2.6")] + [
    nox.param(python, requirements, [], id=name)
    for name, (python, requirements) in sorted(TF2_OUTSIDE_THE_MATRIX.items())])
def patch_cost(session, requirements, keras_releases):
    """What keras_clone_fix.patch() costs right after `import keras` (or
    tensorflow) on each affected release of the matrix, beside the figures
    before issue 20; arguments go to benchmarks/patch_time.py."""
    install(session, *requirements)
    for release in keras_releases or [None]:
        if release:
            session.install("--no-deps", "keras==" + release)
        session.run("python", "benchmarks/patch_time.py", "--baseline", PATCH_COST_BASELINE,
                    *session.posargs, env=QUIET_TF)


@nox.session(name="load-cost", venv_backend="venv")
@nox.parametrize("python,requirements", [
    nox.param(ENVIRONMENTS[name][0], ENVIRONMENTS[name][1], id=name)
    for name in ("keras-2.4.3-tf-2.3", "keras-2.6.0-tf-2.6")])
def load_cost(session, requirements):
    """load_model of ResNet50 saved as .h5 and as a SavedModel folder, with
    the fix and without, in one run, on the two sources of the TensorFlow 2
    routines that loading runs patched; arguments go to
    benchmarks/load_time.py."""
    install(session, *requirements)
    session.run("python", "benchmarks/load_time.py", *session.posargs, env=QUIET_TF)


@nox.session(name="layer-call-cost", venv_backend="venv")
@nox.parametrize("python,requirements", [
    nox.param(ENVIRONMENTS[name][0], ENVIRONMENTS[name][1], id=name)
    for name in ("tf-1.12", "tf-1.13")])
def layer_call_cost(session, requirements):
    """What wrapping Layer._set_mask_metadata adds to each layer call on
    tf.keras 1.12 and 1.13; arguments go to benchmarks/layer_call_time.py."""
    install(session, *requirements)
    session.run("python", "benchmarks/layer_call_time.py", *session.posargs, env=QUIET_TF)
