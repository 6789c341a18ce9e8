"""The C++ op table's signatures against the Python registry, without building C++.

ember-cpp's jit runner binds a program's calls by each op's signature, which must be
Python's. Its ctest ``OpTable.SignaturesAreThePythonRegistrys`` checks that, but only where
the C++ side is built (``nox -s cpp``); a Python signature change once reached CI unnoticed.
``packages/cpp-frontend/tests/jit/op_signatures.json`` is the table as the C++ test
``OpTable.SnapshotIsTheTable`` keeps it; this test holds it against Python's registry.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
JIT_TESTS = REPO / "packages" / "cpp-frontend" / "tests" / "jit"

FIX = ("the C++ op table (packages/cpp-frontend/src/jit/ops_*.cpp) binds it with the old "
       "signature: change it there, then rewrite op_signatures.json with "
       "EMBER_WRITE_OP_SIGNATURES=1 ctest -R SnapshotIsTheTable (nox -s cpp)")


@pytest.fixture(scope="module")
def python_signatures() -> dict:
    spec = importlib.util.spec_from_file_location("_golden_jit", JIT_TESTS / "golden_jit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.python_signatures()


def test_every_cpp_op_has_pythons_signature(python_signatures):
    table = json.loads((JIT_TESTS / "op_signatures.json").read_text())
    assert len(table) > 250
    wrong = []
    for op, cpp in sorted(table.items()):
        if op not in python_signatures:
            wrong.append(f"{op}: Python no longer resolves this name")
            continue
        py = python_signatures[op]
        if py is None:
            continue
        # the C++ test's rule: a wrapper taking (input, *args, **kwargs) does not say its
        # parameters, so a C++ signature without *args is not compared
        if "*args, **kwargs" in py and "*args" not in cpp:
            continue
        if py != cpp:
            wrong.append(f"{op}: C++ binds ({cpp}), Python is ({py})")
    assert not wrong, FIX + "\n" + "\n".join(wrong)
