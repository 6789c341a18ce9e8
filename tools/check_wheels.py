"""Check Ember's wheels: each holds only its own files, and they merge into one namespace.

Usage: python tools/check_wheels.py WHEEL_DIR

WHEEL_DIR holds one wheel per distribution (``nox -s build`` makes them). The
script

1. reads each wheel's file list and checks that it ships only its own
   subpackages (ember-core alone ships ``ember/__init__.py``);
2. in a fresh virtual environment (``python -m venv``, not the caller's) installs
   the ember-core wheel alone and checks that ``import ember`` works while
   ``import ember.nn`` (and the other subpackages, as imports and as attributes
   of ``ember``) fail with an ImportError that names the distribution to
   ``pip install``;
3. installs all the wheels there and checks that every subpackage imports, as a
   module and as an attribute of ``ember``.

Dependencies (numpy, requests, ...) come from the configured package index.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from pathlib import Path

# distribution -> the subpackages of `ember` it ships ("" is ember itself)
SUBPACKAGES = {
    "ember-core": [""],
    # ember.distributed.optim (ZeroRedundancyOptimizer needs ember.optim) and fsdp
    # (fully_shard needs ember.nn; _composable is its older path) merge into core's
    # ember.distributed package
    "ember-nn": ["nn", "optim", "onnx", "fx", "distributed/optim", "distributed/fsdp",
                 "distributed/_composable"],
    "ember-vision": ["vision"],
    "ember-text": ["text"],
    "ember-hub": ["hub"],
}
OPTIONAL_SUBPACKAGES = {
    sub: dist for dist, subs in SUBPACKAGES.items() if dist != "ember-core" for sub in subs
}
VERSION = "0.1.0"


def fail(message: str) -> None:
    sys.exit(f"check_wheels: FAIL: {message}")


def find_wheels(wheel_dir: Path) -> dict[str, Path]:
    wheels = {}
    for dist in SUBPACKAGES:
        matches = sorted(wheel_dir.glob(f"{dist.replace('-', '_')}-*.whl"))
        if len(matches) != 1:
            fail(f"expected one {dist} wheel in {wheel_dir}, found {[m.name for m in matches]}")
        wheels[dist] = matches[0]
    return wheels


def check_wheel_contents(dist: str, wheel: Path) -> None:
    """The wheel holds its dist-info plus files under its own subpackages, nothing else."""
    dist_info = f"{dist.replace('-', '_')}-{VERSION}.dist-info/"
    names = zipfile.ZipFile(wheel).namelist()
    own_dirs = [f"ember/{sub}/" if sub else "ember/" for sub in SUBPACKAGES[dist]]
    others = [f"ember/{sub}/" for sub, owner in OPTIONAL_SUBPACKAGES.items() if owner != dist]

    for name in names:
        if name.startswith(dist_info):
            continue
        if "__pycache__/" in name or name.endswith((".pyc", ".pyo")):
            fail(f"{wheel.name} ships a bytecode file: {name}")
        if not any(name.startswith(own) for own in own_dirs):
            fail(f"{wheel.name} ships {name}, outside {own_dirs}")
        if any(name.startswith(other) for other in others):
            fail(f"{wheel.name} ships {name}, which belongs to another distribution")

    required = [dist_info + "METADATA"]
    required += [f"{own}__init__.py" for own in own_dirs]
    required += [f"{own}py.typed" for own in own_dirs]  # PEP 561: the API is typed
    for name in required:
        if name not in names:
            fail(f"{wheel.name} lacks {name}")
    if dist != "ember-core" and "ember/__init__.py" in names:
        fail(f"{wheel.name} ships ember/__init__.py, which belongs to ember-core")
    print(f"check_wheels: {wheel.name}: {len(names)} files, all its own")


class FreshVenv:
    """A new virtual environment in a temporary directory, outside any nox venv."""

    def __init__(self, root: Path) -> None:
        self.root = root / "venv"
        # sys._base_executable is the interpreter behind the caller's venv, if any.
        base_python = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base_python, "-m", "venv", str(self.root)], check=True)
        bindir = "Scripts" if os.name == "nt" else "bin"
        self.python = str(self.root / bindir / "python")
        self.workdir = root / "work"  # an empty cwd, so nothing is imported from a checkout
        self.workdir.mkdir()
        self.env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}

    def pip_install(self, *args: str) -> None:
        subprocess.run([self.python, "-m", "pip", "install", "-q", *args], check=True)

    def run(self, code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.python, "-c", textwrap.dedent(code)],
            cwd=self.workdir,
            env=self.env,
            capture_output=True,
            text=True,
        )

    def check(self, what: str, code: str) -> None:
        result = self.run(code)
        if result.returncode != 0:
            fail(f"{what}\n--- stdout\n{result.stdout}--- stderr\n{result.stderr}")
        print(f"check_wheels: ok: {what}")


def check_core_alone(venv: FreshVenv) -> None:
    venv.check(
        "import ember (ember-core alone)",
        f"""
        import ember
        assert ember.__file__.endswith("__init__.py"), ember.__file__
        from importlib.metadata import version
        assert version("ember-core") == {VERSION!r}
        """,
    )
    for sub, dist in OPTIONAL_SUBPACKAGES.items():
        sub = sub.replace("/", ".")
        hint = f"pip install {dist}"
        for how, statement in [("import", f"import ember.{sub}"), ("attribute", f"ember.{sub}")]:
            venv.check(
                f"{how} ember.{sub} without {dist} raises an ImportError naming `{hint}`",
                f"""
                import ember
                try:
                    {statement}
                except Exception as error:
                    assert isinstance(error, ImportError), f"not an ImportError: {{error!r}}"
                    assert {hint!r} in str(error), f"message lacks {hint!r}: {{error!r}}"
                else:
                    raise AssertionError("ember.{sub} is importable without {dist}")
                """,
            )


def check_all_installed(venv: FreshVenv) -> None:
    for sub in OPTIONAL_SUBPACKAGES:
        sub = sub.replace("/", ".")
        venv.check(
            f"ember.{sub} imports, as a module and as an attribute of ember",
            f"""
            import ember
            module = ember.{sub}  # through ember's module __getattr__, before any import
            assert module.__name__ == "ember.{sub}", module.__name__
            assert module.__version__ == {VERSION!r}, module.__version__
            import ember.{sub}
            assert ember.{sub} is module
            """,
        )
    venv.check(
        "import ember.nn, ember.optim, ember.vision, ember.text, ember.hub together",
        "import ember.nn, ember.optim, ember.vision, ember.text, ember.hub",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel_dir", type=Path)
    wheel_dir = parser.parse_args().wheel_dir.resolve()

    wheels = find_wheels(wheel_dir)
    for dist, wheel in wheels.items():
        check_wheel_contents(dist, wheel)

    with tempfile.TemporaryDirectory(prefix="ember-wheels-") as tmp:
        venv = FreshVenv(Path(tmp))
        venv.pip_install(str(wheels["ember-core"]))
        check_core_alone(venv)
        # All wheels in one command, so pip takes ember-* from these files, not an index.
        venv.pip_install(*(str(wheel) for wheel in wheels.values()))
        check_all_installed(venv)
    print("check_wheels: all checks passed")


if __name__ == "__main__":
    main()
