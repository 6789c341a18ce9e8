"""Where the ember-cpp wheel put Ember's C++ frontend: headers, libember and its CMake package.

The wheel is a C++ SDK; this module only locates it, for build scripts::

    cmake -S app -B build -DCMAKE_PREFIX_PATH="$(python -m ember_cpp --cmake-dir)"

and then, in the app's CMakeLists.txt, ``find_package(Ember REQUIRED)`` and
``target_link_libraries(app PRIVATE ember::ember)``. Programs built against it need no Python
at run time: libember finds the OpenBLAS installed beside it by itself.
"""

from __future__ import annotations

from importlib.metadata import version as _distribution_version
from pathlib import Path

__all__ = ["cmake_dir", "include_dir", "lib_dir", "library", "prefix", "__version__"]

__version__ = _distribution_version("ember-cpp")

_PREFIX = Path(__file__).resolve().parent


def prefix() -> Path:
    """The installation prefix: the directory holding include/ and lib/."""
    return _PREFIX


def cmake_dir() -> Path:
    """The directory of EmberConfig.cmake, for CMAKE_PREFIX_PATH or Ember_DIR."""
    return _PREFIX / "lib" / "cmake" / "Ember"


def include_dir() -> Path:
    """The directory to put on the include path (it holds ember/ember.h)."""
    return _PREFIX / "include"


def lib_dir() -> Path:
    """The directory of libember.so (and of the OpenBLAS it loads)."""
    return _PREFIX / "lib"


def library() -> Path:
    """The path of libember.so itself."""
    return lib_dir() / "libember.so"
