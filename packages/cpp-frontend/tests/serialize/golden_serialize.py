"""Golden files of the serialization tests (run by ctest before them, see tests/CMakeLists.txt):

    python golden_serialize.py GOLDEN_DIR

With PyTorch and safetensors importable beside Python Ember, writes GOLDEN_DIR/fixtures/
(make_fixtures.py: checkpoints that this commit's Python Ember and the installed PyTorch and
safetensors write, which the C++ tests then read instead of the checked-in copies) and
GOLDEN_DIR/python_env.txt (this interpreter and its PYTHONPATH, with which the tests have
Python read the files C++ writes). Without them it writes neither, and the tests use the
checked-in fixtures and skip the Python read-back.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main(golden: str) -> int:
    missing = [m for m in ("numpy", "torch", "safetensors", "ember")
               if importlib.util.find_spec(m) is None]
    fixtures = os.path.join(golden, "fixtures")
    env_file = os.path.join(golden, "python_env.txt")
    for stale in (fixtures, env_file):
        if os.path.isdir(stale):
            shutil.rmtree(stale)
        elif os.path.exists(stale):
            os.remove(stale)
    if missing:
        print(f"golden_serialize: {', '.join(missing)} not importable: the serialization tests "
              "use the checked-in fixtures and skip the Python read-back")
        return 0
    sys.path.insert(0, HERE)
    import make_fixtures

    partial = fixtures + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    make_fixtures.main(["make_fixtures.py", partial])
    os.replace(partial, fixtures)
    with open(env_file, "w", encoding="utf-8") as fh:
        fh.write(sys.executable + "\n" + os.environ.get("PYTHONPATH", "") + "\n")
    print(f"golden_serialize: wrote {fixtures} and {env_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
