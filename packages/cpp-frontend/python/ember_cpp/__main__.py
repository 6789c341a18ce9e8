"""``python -m ember_cpp --cmake-dir`` (and ``--include-dir``, ``--lib-dir``, ...): print where
ember-cpp is installed, one answer a line, in the order the options were given."""

from __future__ import annotations

import argparse
import shlex
import sys

from . import __version__, cmake_dir, include_dir, lib_dir, prefix


def _cflags() -> str:
    return f"-std=c++17 -I{shlex.quote(str(include_dir()))}"


def _libs() -> str:
    # -rpath: the program finds libember where pip put it (and libember, its OpenBLAS)
    lib = shlex.quote(str(lib_dir()))
    return f"-L{lib} -Wl,-rpath,{lib} -lember"


_ANSWERS = {
    "cmake_dir": lambda: str(cmake_dir()),
    "include_dir": lambda: str(include_dir()),
    "lib_dir": lambda: str(lib_dir()),
    "prefix": lambda: str(prefix()),
    "cflags": _cflags,
    "libs": _libs,
    "version": lambda: __version__,
}


class _Ask(argparse.Action):
    """Collects the requested answers in command-line order."""

    def __call__(self, parser, namespace, values, option_string=None):
        namespace.asked.append(self.dest)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ember_cpp",
        description="Print where ember-cpp (Ember's C++17 frontend) is installed.",
        epilog='CMake: cmake -DCMAKE_PREFIX_PATH="$(python -m ember_cpp --cmake-dir)" ...; '
        'a Makefile: g++ $(python -m ember_cpp --cflags) app.cpp '
        "$(python -m ember_cpp --libs)",
    )
    parser.set_defaults(asked=[])
    helps = {
        "cmake_dir": "the directory of EmberConfig.cmake (for CMAKE_PREFIX_PATH or Ember_DIR)",
        "include_dir": "the include directory (holding ember/ember.h)",
        "lib_dir": "the directory of libember.so",
        "prefix": "the installation prefix (holding include/ and lib/)",
        "cflags": "compiler flags: -std=c++17 -I<include dir>",
        "libs": "linker flags: -L<lib dir> -Wl,-rpath,<lib dir> -lember",
        "version": "the version of ember-cpp",
    }
    for dest, text in helps.items():
        parser.add_argument(f"--{dest.replace('_', '-')}", dest=dest, action=_Ask, nargs=0,
                            help=text)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.asked:
        parser.print_help(sys.stderr)
        return 2
    for dest in args.asked:
        print(_ANSWERS[dest]())
    return 0


if __name__ == "__main__":
    sys.exit(main())
