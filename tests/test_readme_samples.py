"""The samples of README.md (`check`) and docs/cli.md (the self-check) are
what the commands print, and the README's example does what it says: each fenced block
after a `<!-- sample: COMMAND -->` comment is compared with the output of
COMMAND, run in the session the samples come from (keras 2.2.4 on
TensorFlow 1.15.5, Python 3.7: tests(keras-2.2.4-tf-1.15)), paths, seconds,
memory and column padding normalised. `check` runs on a model saved here with a two-output
masking layer from the user's module `my_layers`, as the README tells.

To rewrite the blocks with what the commands print now (after a change of
the output), run this module with README_SAMPLES=write: see docs/testing.md.
The Python block after `<!-- example: ... -->` (the README's opening) must
run with the fix and raise the AssertionError the README names without it.
"""

import io
import os
import re
import shlex
import sys

import pytest

from conftest import KERAS, TESTS, installed, run_python

ROOT = os.path.dirname(TESTS)
README, CLI_PAGE = os.path.join(ROOT, "README.md"), os.path.join(ROOT, "docs", "cli.md")
SAMPLE = re.compile(r"^<!-- sample: (.+?) -->\n+```\n(.*?)^```$", re.MULTILINE | re.DOTALL)
PATH = re.compile(r"(?<![\w.])/[^\s'\",()]+")
SECONDS = re.compile(r"\b\d+(?:\.\d+)? s\b")
MEMORY = re.compile(r"\b\d[\d,]*(?:\.\d+)? (?:[KMG]i?B)\b")
PADDING = re.compile(r" {2,}")  # a table's columns widen with its figures


def pinned_session():
    if KERAS != (2, 2, 4) or sys.version_info[:2] != (3, 7) or not installed("tensorflow"):
        return False
    import keras
    import tensorflow
    return tensorflow.__version__ == "1.15.5" and keras.backend.backend() == "tensorflow"


pytestmark = pytest.mark.skipif(
    not pinned_session(), reason="the README's samples are those of tests(keras-2.2.4-tf-1.15)")

SAVE_THE_MODEL = """
import keras
import check_models
import my_layers
check_models.multi_output_masking(keras, my_layers.SplitOutputs).save("your_model.h5")
"""


def shown(text):
    """Output as the README shows it: an absolute path as /path/to/NAME."""
    return PATH.sub(lambda found: "/path/to/" + found.group(0).rstrip("/").split("/")[-1], text)


def normalised(text):
    return PADDING.sub("  ", MEMORY.sub("N MB", SECONDS.sub("N s", PATH.sub("PATH", text))))


def samples(page):
    with io.open(page, encoding="utf-8") as read:
        return SAMPLE.findall(read.read())


@pytest.fixture(scope="module")
def user_directory(tmp_path_factory):
    """The user's directory: my_layers.py and your_model.h5."""
    import check_models  # numpy: only where keras is, after the skip
    directory = str(tmp_path_factory.mktemp("user"))
    with io.open(os.path.join(directory, "my_layers.py"), "w") as written:
        written.write(check_models.CUSTOM_OBJECTS_MODULE.format(import_keras="import keras"))
    saved = run_python(["-c", SAVE_THE_MODEL], cwd=directory,
                       env={"PYTHONPATH": os.pathsep.join([directory, TESTS])})
    assert saved.returncode == 0, saved.stderr
    return directory


def printed(command, directory):
    """What COMMAND (python -m keras_clone_fix ...) prints on stdout, as shown."""
    words = shlex.split(command)
    assert words[:3] == ["python", "-m", "keras_clone_fix"], command
    # The user's directory, then what the tests run with (a tree put before the installed package).
    path = [directory] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    finished = run_python(words[1:], cwd=directory, env={"PYTHONPATH": os.pathsep.join(path)})
    return shown(finished.stdout)


def rewrite(page, outputs):
    """The page with these outputs in its sample blocks, in order."""
    with io.open(page, encoding="utf-8") as read:
        text = read.read()
    outputs = iter(outputs)
    text = SAMPLE.sub(lambda found: found.group(0)[:found.start(2) - found.start(0)]
                      + next(outputs) + "```", text)
    with io.open(page, "w", encoding="utf-8") as written:
        written.write(text)


def test_the_pages_show_samples_of_both_commands():
    assert any(command.startswith("python -m keras_clone_fix check ")
               for command, _ in samples(README))
    assert "python -m keras_clone_fix" in [command for command, _ in samples(CLI_PAGE)]


@pytest.mark.parametrize("page", [README, CLI_PAGE], ids=["README.md", "docs/cli.md"])
def test_samples_are_what_the_commands_print(user_directory, page):
    outputs = [(command, block, printed(command, user_directory))
               for command, block in samples(page)]
    if os.environ.get("README_SAMPLES") == "write":
        rewrite(page, [output for _, _, output in outputs])
        return
    wrong = ["{}'s block after <!-- sample: {} --> should be:\n```\n{}```".format(
        os.path.relpath(page, ROOT), command, output) for command, block, output in outputs
        if normalised(block) != normalised(output)]
    assert not wrong, "\n\n".join(wrong + [
        "(README_SAMPLES=write rewrites them: see docs/testing.md)"])


EXAMPLE = re.compile(r"^<!-- example: [^>]*-->\n```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def test_the_readme_example_clones_with_the_fix_and_raises_without_it():
    with io.open(README, encoding="utf-8") as read:
        example = EXAMPLE.search(read.read())
    assert example, "no <!-- example: ... --> python block in README.md"
    fixed = run_python(["-c", example.group(1)])
    assert fixed.returncode == 0, fixed.stderr
    unfixed = run_python(["-c", example.group(1)], env={"KERAS_CLONE_FIX": "0"})
    assert unfixed.returncode != 0 and "assert initial_state is None and constants is None" in (
        unfixed.stderr), unfixed.stderr
