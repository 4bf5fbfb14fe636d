"""Builds the Python packages (adxl, hixl, llm_datadist) with the project's
CMake: configure the parent directory with ADXL_PYTHON_WHEEL=ON, build the
native modules and the plugin, `cmake --install` them into a staging prefix,
and hand the staged packages (libraries in adxl/_lib) to setuptools.

    pip install --no-build-isolation ./python     # needs cmake, a C++17 compiler, the -dev packages

Environment: ADXL_CMAKE_ARGS (extra configure arguments), ADXL_BUILD_JOBS
(parallel jobs, default: the CPU count), ADXL_CMAKE_BUILD_DIR (an existing
build directory to reuse instead of a fresh one; it is reconfigured for the
wheel).
"""
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PACKAGES = ["adxl", "hixl", "llm_datadist"]


class CMakeBuild(build_py):
    def run(self):
        build_temp = os.environ.get("ADXL_CMAKE_BUILD_DIR") or os.path.join(self.build_lib, "..", "adxl-cmake")
        build_temp = os.path.abspath(build_temp)
        stage = os.path.abspath(os.path.join(self.build_lib, "..", "adxl-stage"))
        shutil.rmtree(stage, ignore_errors=True)
        jobs = os.environ.get("ADXL_BUILD_JOBS", str(os.cpu_count() or 1))
        configure = ["cmake", "-S", ROOT, "-B", build_temp, "-DADXL_PYTHON_WHEEL=ON", "-DADXL_PYTHON_INSTALL_DIR=python",
                     f"-DCMAKE_INSTALL_PREFIX={stage}", f"-DPython3_EXECUTABLE={sys.executable}"]
        if not os.environ.get("ADXL_CMAKE_BUILD_DIR"):
            configure += ["-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DADXL_BUILD_TESTS=OFF"]
        configure += shlex.split(os.environ.get("ADXL_CMAKE_ARGS", ""))
        subprocess.check_call(configure)
        subprocess.check_call(["cmake", "--build", build_temp, "-j", jobs, "--target", "adxl_python_adxl",
                               "adxl_python_hixl", "adxl_python_llm_datadist", "adxl_plugin_ucx"])
        subprocess.check_call(["cmake", "--install", build_temp, "--component", "python"])
        for p in PACKAGES:
            dst = os.path.join(self.build_lib, p)
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(os.path.join(stage, "python", p), dst, symlinks=True)
        # A wheel has no symbolic links: keep each library once, under its
        # SONAME (libadxl.so.0, ...), the name the modules ask for.
        lib = os.path.join(self.build_lib, "adxl", "_lib")
        for name in sorted(os.listdir(lib)):
            path = os.path.join(lib, name)
            if os.path.islink(path):
                real = os.path.realpath(path)
                os.remove(path)
                if name.count(".so.") == 1 and name.split(".so.")[1].isdigit():
                    shutil.copy2(real, path)
        for name in os.listdir(lib):
            path = os.path.join(lib, name)
            if os.path.isfile(path) and ".so." in name and not name.split(".so.")[1].isdigit():
                os.remove(path)


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True  # a platform wheel: the packages carry native code


setup(
    name="adxl",
    version="0.1.0",
    description="ADXL KV-cache transfer engine on UCX: the adxl, hixl and llm_datadist packages",
    packages=PACKAGES,
    package_dir={p: p for p in PACKAGES},
    cmdclass={"build_py": CMakeBuild},
    distclass=BinaryDistribution,
    python_requires=">=3.8",
    zip_safe=False,
)
