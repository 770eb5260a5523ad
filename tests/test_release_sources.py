"""Every rule of every target finds what it rewrites in the source of every
release the target covers, read from the release's own wheel.

The wheels are not downloaded here: set KERAS_WHEELS to a directory holding
Keras-<version>-py2.py3-none-any.whl for 2.0.7 - 2.3.1, e.g.

    for v in 2.0.7 2.0.8 ... 2.3.1; do pip download --no-deps keras==$v -d wheels; done
"""

import ast
import glob
import os
import re
import zipfile

import pytest

from keras_clone_fix import _fix
from keras_clone_fix._affected import TARGETS

WHEELS = os.environ.get("KERAS_WHEELS")
RELEASES = sorted(
    (tuple(int(part) for part in re.search(r"Keras-(\d+)\.(\d+)\.(\d+)-", path).groups()), path)
    for path in glob.glob(os.path.join(WHEELS or "", "Keras-*.whl")))
pytestmark = pytest.mark.skipif(not WHEELS,
                                reason="set KERAS_WHEELS to a directory of Keras wheels")


def definition(source, attribute):
    """The def of `function` or `Class.method` in a module's source."""
    body = ast.parse(source).body
    for name in attribute.split("."):
        (found,) = [node for node in body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                    and node.name == name]
        body = found.body
    return found


def test_every_release_from_2_0_7_to_2_3_1_is_here():
    if WHEELS:
        assert len([version for version, _ in RELEASES if (2, 0, 7) <= version < (2, 4, 0)]) == 18


@pytest.mark.parametrize("version, wheel", RELEASES,
                         ids=[".".join(map(str, version)) for version, _ in RELEASES])
def test_every_rule_finds_its_code(version, wheel):
    targets = [target for target in TARGETS
               if target.family == "keras" and target.first <= version < target.past]
    assert targets
    with zipfile.ZipFile(wheel) as archive:
        for target in targets:
            source = archive.read(target.module.replace(".", "/") + ".py").decode("utf-8")
            rules = [getattr(_fix, rule) for rule in target.rules]
            rewritten, _ = _fix.apply_rules(definition(source, target.attribute), rules)
            module = ast.Module(body=[rewritten], type_ignores=[]) if hasattr(
                ast, "TypeIgnore") else ast.Module(body=[rewritten])
            compile(ast.fix_missing_locations(module), target.module, "exec")
