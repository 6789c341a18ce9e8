"""The five distributions merge into one ``ember`` namespace (editable installs too)."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import ember

SUBPACKAGE_TO_DISTRIBUTION = {
    "nn": "nn",
    "optim": "nn",
    "vision": "vision",
    "text": "text",
    "hub": "hub",
}


def test_core_owns_the_top_level_package() -> None:
    assert ember.__file__ is not None, "ember is a bare namespace: core's __init__.py is missing"
    init = Path(ember.__file__).resolve()
    assert init.name == "__init__.py"
    if init.parents[3].name == "packages":  # an editable install
        assert init.parents[2].name == "core"


@pytest.mark.parametrize("name", sorted(SUBPACKAGE_TO_DISTRIBUTION))
def test_subpackage_is_an_attribute_of_ember(name: str) -> None:
    # A fresh interpreter, so that nothing has imported ember.<name> yet: the
    # attribute must come from ember's module __getattr__.
    code = f"import ember; m = ember.{name}; print(m.__name__, m.__version__)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [f"ember.{name}", "0.1.0"]


@pytest.mark.parametrize("name", sorted(SUBPACKAGE_TO_DISTRIBUTION))
def test_subpackage_comes_from_its_own_distribution(name: str) -> None:
    module = importlib.import_module(f"ember.{name}")
    package_dir = Path(module.__file__).resolve().parent
    # Editable installs: packages/<dist>/src/ember/<name>/__init__.py.
    # Wheel installs: site-packages/ember/<name>/__init__.py (nothing to tell apart).
    if package_dir.parents[2].parent.name == "packages":
        assert package_dir.parents[2].name == SUBPACKAGE_TO_DISTRIBUTION[name]
