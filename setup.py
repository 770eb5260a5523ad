"""Build hook: ship keras_clone_fix.pth at the wheel root.

pip installs files at the wheel root into site-packages, where `site`
runs .pth files at interpreter start (setuptools' data_files would put it
under sys.prefix instead). Editable installs do not run build_py: they get
no .pth, so test activation against a built wheel.
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "keras_clone_fix.pth"


class build_py_with_pth(build_py):
    def run(self):
        build_py.run(self)
        self.copy_file(PTH, os.path.join(self.build_lib, PTH))


setup(cmdclass={"build_py": build_py_with_pth})
