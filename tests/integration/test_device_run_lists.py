"""The lists that shape a device run (tests/strict_exceptions.py, tests/cuda_exceptions.py)
name tests that exist: a renamed file or test would otherwise drop out of them silently, and
the test would fail (EXCEPTIONS) or run again (HOST_ONLY, REPEATS_THE_NORMAL_RUN)."""

import importlib
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _patterns():
    for name in ("strict_exceptions", "cuda_exceptions"):
        mod = importlib.import_module(name)  # tests/ is on pytest.ini's pythonpath
        for listing in ("EXCEPTIONS", "REPEATS_THE_NORMAL_RUN"):
            for pattern in getattr(mod, listing, {}):
                yield pytest.param(pattern, id=f"{name}.{listing}:{pattern}")


@pytest.mark.parametrize("pattern", list(_patterns()))
def test_every_pattern_names_an_existing_test(pattern):
    path, _, test = pattern.partition("::")
    source = ROOT / path
    assert source.is_file(), f"{pattern}: no file {path}"
    # the test's name (a class's method: the method's) up to its parameters or a wildcard,
    # which may end inside the name: a prefix of a test function's name
    name = re.split(r"[\[*?]", test, maxsplit=1)[0].rsplit("::", 1)[-1]
    if name:
        assert re.search(rf"^\s*def {re.escape(name)}", source.read_text(), re.M), \
            f"{pattern}: {path} has no test {name}"


@pytest.mark.parametrize("path", list(importlib.import_module("strict_exceptions").HOST_ONLY))
def test_every_host_only_file_exists(path):
    assert (ROOT / path).is_file(), path
