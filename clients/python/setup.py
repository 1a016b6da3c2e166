"""Builds the pathlock Python package: CMake on the repository root builds
the extension target `pathlock_python` (clients/python/CMakeLists.txt) against the
engine's sources, offline; setuptools packages it with clients/python/pathlock/.

    pip install --no-build-isolation ./clients/python   # from the repository root

Environment: PATHLOCK_CMAKE_ARGS (extra CMake arguments, split on spaces),
PATHLOCK_JOBS (parallel build jobs), CMAKE_CXX_COMPILER_LAUNCHER (e.g. ccache)
as CMake reads it; PATHLOCK_SOURCE_DIR (the pathlock tree, default: this
folder's grandparent, the repository root) and PATHLOCK_PYTHON_BUILD_DIR (CMake's build folder, default:
inside setuptools' build_temp), used by the test of this file.
"""
import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("PATHLOCK_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))


def version():
    with open(os.path.join(ROOT, "VERSION"), encoding="utf-8") as f:
        return f.read().strip()


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.path.abspath(os.environ.get("PATHLOCK_PYTHON_BUILD_DIR") or
                                    os.path.join(self.build_temp, "cmake"))
        configure = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                     "-DPATHLOCK_BUILD_PYTHON=ON", "-DPATHLOCK_BUILD_TESTS=OFF", "-DPATHLOCK_BUILD_TOOLS=OFF",
                     "-DPATHLOCK_INSTALL=OFF", f"-DPython3_EXECUTABLE={sys.executable}"]
        configure += os.environ.get("PATHLOCK_CMAKE_ARGS", "").split()
        subprocess.check_call(configure)
        jobs = os.environ.get("PATHLOCK_JOBS") or str(os.cpu_count() or 1)
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "pathlock_python", "-j", jobs])
        built = glob.glob(os.path.join(build_dir, "python", "pathlock", "_pathlock*.so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one built extension in {build_dir}/python/pathlock, found {built}")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built[0], dest)


setup(
    version=version(),
    packages=["pathlock"],
    package_data={"pathlock": ["py.typed", "*.pyi"]},
    ext_modules=[Extension("pathlock._pathlock", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
