"""Build hook: ship keras_clone_fix.pth at the wheel root.

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

PTH = "keras_clone_fix.pth"


def read_version():
    """The package's __version__, read as text: setuptools 44 (the newest
    on Python 2.7) would import the package for `version = attr:`."""
    init_py = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keras_clone_fix", "__init__.py")
    with io.open(init_py, encoding="utf-8") as init:
        return re.search(r'^__version__ = "(.+)"$', init.read(), re.MULTILINE).group(1)


class build_py_with_pth(build_py):
    def run(self):
        build_py.run(self)
        self.copy_file(PTH, os.path.join(self.build_lib, PTH))


setup(version=read_version(), cmdclass={"build_py": build_py_with_pth})
