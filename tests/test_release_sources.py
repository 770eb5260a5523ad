"""Every rule of every target finds what it rewrites in the source of every
release the target covers, read from the release's own wheel.

The wheels are not downloaded here: set RELEASE_WHEELS to a directory holding
Keras-<version>-*.whl and/or tensorflow-<version>-*.whl, e.g.

    for v in 2.0.7 2.0.8 ... 2.3.1; do pip download --no-deps keras==$v -d wheels; done

(`nox -s release-sources` does that for the 18 Keras releases 2.0.7 - 2.3.1,
`nox -s tf-release-sources` for TensorFlow 1.4 - 1.15, `nox -s tf2-release-sources`
for TensorFlow 2.0 - 2.5, keras-nightly 2.5.0 and keras 2.6.0.)
"""

import ast
import glob
import os
import re
import zipfile

import pytest

from keras_clone_fix import _build
from keras_clone_fix._affected import TARGETS

WHEELS = os.environ.get("RELEASE_WHEELS")
# Keras-2.2.4-, keras-2.6.0-, keras_nightly-2.5.0.dev2021032900-, tensorflow-1.14.0-,
# tensorflow_cpu-2.3.4-: the family, and its release.
WHEEL_NAME = re.compile(r"(Keras|keras|tensorflow)(?:_nightly|_cpu)?-(\d+)\.(\d+)\.(\d+)"
                        r"(?:\.dev\d+)?-")
RELEASES = sorted(
    (match.group(1).lower(), tuple(int(part) for part in match.groups()[1:]), path)
    for match, path in ((WHEEL_NAME.match(os.path.basename(path)), path)
                        for path in glob.glob(os.path.join(WHEELS or "", "*.whl")))
    if match)
pytestmark = pytest.mark.skipif(not WHEELS,
                                reason="set RELEASE_WHEELS to a directory of Keras or TensorFlow wheels")


def definition(source, attribute):
    """The def of `function` or `Class.method` in a module's source."""
    body = ast.parse(source).body
    for name in attribute.split("."):
        (found,) = [node for node in body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                    and node.name == name]
        body = found.body
    return found


def test_every_keras_release_from_2_0_7_to_2_3_1_is_here_if_one_is():
    keras = [version for family, version, _ in RELEASES
             if family == "keras" and (2, 0, 7) <= version < (2, 4, 0)]
    assert len(keras) in (0, 18)


def module_source(archive, module):
    """A module's source in a wheel: at the top (Keras, TensorFlow 2.2 and
    later) or under <name>.data/purelib (TensorFlow 1.x); TensorFlow 1.15 -
    2.1 keep tensorflow's modules in tensorflow_core."""
    path = module.replace(".", "/") + ".py"
    core = "tensorflow_core/" + path.partition("/")[2] if path.startswith("tensorflow/") else path
    (name,) = [name for name in archive.namelist()
               if name in (path, core) or name.endswith(("/purelib/" + path, "/purelib/" + core))]
    return archive.read(name).decode("utf-8")


@pytest.mark.parametrize("family, version, wheel", RELEASES,
                         ids=["{} {}".format(family, ".".join(map(str, version)))
                              for family, version, _ in RELEASES])
def test_every_rule_finds_its_code(family, version, wheel):
    targets = [target for target in TARGETS
               if target.family == family and target.first <= version < target.past]
    assert targets
    with zipfile.ZipFile(wheel) as archive:
        for target in targets:
            source = module_source(archive, target.module)
            found = definition(source, target.attribute)
            if target.decorator:  # the fix decorates its twin with it: the def must have it
                assert [_build._dotted(expression) for expression in found.decorator_list] == [
                    target.decorator]
            rewritten, _ = _build.apply_rules(found, target.rules)
            module = ast.Module(body=[rewritten], type_ignores=[]) if hasattr(
                ast, "TypeIgnore") else ast.Module(body=[rewritten])
            compile(ast.fix_missing_locations(module), target.module, "exec")
