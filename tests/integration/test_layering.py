"""Layering between Ember's distributions (DESIGN.md: each is versioned on its own).

ember-nn, ember-vision, ember-text and ember-hub may use only ember-core's public API: no
import of a private module (a path segment starting with ``_``) or of a name outside the
target module's ``__all__``; op kernels come from ``ember.ops.api``. And ember-core never
imports the distributions above it.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ROOT / "packages"
CORE = PACKAGES / "core" / "src"
UPPER = ["nn", "vision", "text", "hub"]


def _owner(module: str) -> str | None:
    """The distribution (folder under packages/) whose sources define ``module``."""
    rel = pathlib.Path(*module.split("."))
    for pkg in sorted(PACKAGES.iterdir()):
        src = pkg / "src"
        if (src / rel).with_suffix(".py").is_file() or (src / rel / "__init__.py").is_file():
            return pkg.name
    return None


def _imports(path: pathlib.Path):
    """``(line, module, names)`` for every absolute ``ember`` import in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                node.module == "ember" or node.module.startswith("ember.")):
            yield node.lineno, node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("ember."):
                    yield node.lineno, a.name, []


def _public_names(module: str) -> set:
    mod = importlib.import_module(module)
    if not hasattr(mod, "__all__"):  # ``ember`` itself: every name without an underscore
        return {n for n in dir(mod) if not n.startswith("_")}
    names = set(mod.__all__)
    # submodules are public when their own name is
    names |= {n for n in dir(mod) if not n.startswith("_")
              and type(getattr(mod, n, None)).__name__ == "module"}
    return names


def _violations(dist: str):
    src = PACKAGES / dist / "src"
    found = []
    for path in sorted(src.rglob("*.py")):
        for line, module, names in _imports(path):
            owner = _owner(module)
            if owner in (None, dist):
                # a submodule imported as a name: ``from ember import nn`` is resolved below
                if owner is None:
                    found.append(f"{path.relative_to(ROOT)}:{line}: unknown module {module}")
                continue
            where = f"{path.relative_to(ROOT)}:{line}"
            if any(seg.startswith("_") for seg in module.split(".")):
                found.append(f"{where}: private module {module}")
                continue
            public = _public_names(module)
            for name in names:
                sub = f"{module}.{name}"
                if _owner(sub) is not None:
                    if name.startswith("_"):
                        found.append(f"{where}: private module {sub}")
                    continue
                if name not in public:
                    found.append(f"{where}: {module}.{name} is not public (not in __all__)")
    return found


@pytest.mark.parametrize("dist", [d for d in UPPER if (PACKAGES / d / "src").is_dir()])
def test_no_private_core_imports(dist):
    bad = _violations(dist)
    assert not bad, "private imports from another distribution:\n" + "\n".join(bad)


def test_core_never_imports_upper_distributions():
    bad = []
    for path in sorted((CORE / "ember").rglob("*.py")):
        text = path.read_text()
        for line, module, _names in _imports(path):
            owner = _owner(module)
            if owner not in (None, "core"):
                bad.append(f"{path.relative_to(ROOT)}:{line}: imports {module}")
        for dist in UPPER:
            if f'import_module("ember.{dist}' in text:
                bad.append(f"{path.relative_to(ROOT)}: import_module of ember.{dist}")
    assert not bad, "\n".join(bad)


def test_checker_catches_a_private_import(tmp_path, monkeypatch):
    """The rule above is not vacuous: a planted private import is reported."""
    fake = tmp_path / "packages"
    (fake / "core").mkdir(parents=True)
    (fake / "core" / "src").symlink_to(CORE, target_is_directory=True)
    mod = fake / "nn" / "src" / "ember" / "nn"
    mod.mkdir(parents=True)
    (mod / "__init__.py").write_text("from ember._tensor import _make\n"
                                     "from ember.ops.api import result\n"
                                     "from ember.autograd.graph import record\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGES", fake)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    bad = _violations("nn")
    assert any("private module ember._tensor" in b for b in bad), bad
    assert any("ember.autograd.graph.record is not public" in b for b in bad), bad
    assert not any("ember.ops.api" in b for b in bad), bad


def test_parameters_load_without_core_importing_nn(tmp_path):
    """A checkpoint's parameters load as ember.nn.Parameter once ember-nn is imported, and
    as tensors that require grad without it: core does not import ember-nn to read them."""
    path = tmp_path / "p.pt"
    code = f"""
import sys, ember, ember.nn as nn
ember.save({{"w": nn.Parameter(ember.ones(2))}}, {str(path)!r})
"""
    subprocess.run([sys.executable, "-c", code], check=True)
    code = f"""
import sys, ember
sd = ember.load({str(path)!r})
assert "ember.nn" not in sys.modules, "loading imported ember.nn"
assert type(sd["w"]) is ember.Tensor and sd["w"].requires_grad
import ember.nn as nn
assert type(ember.load({str(path)!r})["w"]) is nn.Parameter
"""
    subprocess.run([sys.executable, "-c", code], check=True)
