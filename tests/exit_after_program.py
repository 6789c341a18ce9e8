"""``python exit_after_program.py PROGRAM ARGS...``: run PROGRAM as ``__main__`` with its
arguments, then end the process with its exit status without the interpreter's teardown.

For PyTorch's ranks under its launcher (``testutils.torchrun``): their gloo process groups
now and then abort in teardown, after the program's work ("terminate called without an
active exception": a C++ thread still joinable when static objects are destroyed; Python's
fault handler shows the main thread with no Python frame left). The oracle's exit is not
what the tests measure, so its ranks skip that teardown.
"""

import os
import runpy
import sys
import traceback


def main() -> int:
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(e.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
