"""Build hook: ship keras_clone_fix.pth at the wheel root, and the README,
its relative links made text, as the package's long description.

pip installs files at the wheel root into site-packages, where `site`
runs .pth files at interpreter start (setuptools' data_files would put it
under sys.prefix instead). Editable installs do not run build_py: they get
no .pth, so test activation against a built wheel.
"""

import io
import os
import re

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PTH = "keras_clone_fix.pth"
# A Markdown link whose target has no scheme: relative to the repository.
RELATIVE_LINK = re.compile(r"\[([^\]]*)\]\((?![a-zA-Z][a-zA-Z0-9+.-]*:)[^)]*\)")


def read_version():
    """The package's __version__, read as text: setuptools 44 (the newest
    on Python 2.7) would import the package for `version = attr:`."""
    init_py = os.path.join(HERE, "keras_clone_fix", "__init__.py")
    with io.open(init_py, encoding="utf-8") as init:
        return re.search(r'^__version__ = "(.+)"$', init.read(), re.MULTILINE).group(1)


def long_description():
    """The README as a package index shows it, where a relative link
    (docs/releases.md, #which-releases) leads nowhere: each link is its
    text alone, which names the file (the sdist ships docs/)."""
    with io.open(os.path.join(HERE, "README.md"), encoding="utf-8") as readme:
        return RELATIVE_LINK.sub(r"\1", readme.read())


class build_py_with_pth(build_py):
    def run(self):
        build_py.run(self)
        self.copy_file(PTH, os.path.join(self.build_lib, PTH))


if __name__ == "__main__":  # as pip and setuptools run it; tests/test_docs.py imports it
    setup(version=read_version(), long_description=long_description(),
          cmdclass={"build_py": build_py_with_pth})
