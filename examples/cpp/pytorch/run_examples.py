"""Build PyTorch's C++ example programs, unchanged, against Ember and run them.

The programs are pytorch/examples' ``cpp/`` folders, read from a local copy of that repository
at the commit ``tools/upstream_sources.py`` pins (``EMBER_UPSTREAM`` says where): they are not
part of this repository. Without one the script says what to provide and exits with status 0
after running nothing, unless ``--require-sources`` is given (or ``EMBER_UPSTREAM_REQUIRED=1``).

Each example is configured with its own CMakeLists.txt (``find_package(Torch REQUIRED)``,
found as Ember's TorchConfig.cmake in ``--cmake-dir``), built, and run in a scratch directory:

- autograd: its deterministic lines (gradient-function names, ``requires_grad`` flags, the
  gradient 4.5 of ``mean(3 (x + 2)^2)`` at ones, the custom function's 5.5) must match;
- regression: must stop below its loss threshold (1e-3);
- mnist: trains its 10 epochs on a small MNIST look-alike (make_mnist_idx.py: the embedded
  8x8 digits upscaled to 28x28) and must reach ``--min-accuracy`` on the held-out set;
- dcgan: one epoch (its ``--epochs`` flag) of 2 batches of the same data, to completion.
  dcgan.cpp needs the argparse header library (p-ranav/argparse), which PyTorch's CI installs
  system-wide; a pinned copy of its ``include`` folder, found the same way, is put on the
  include path instead.

The CMake package directory is the wheel's (``python -m ember_cpp --cmake-dir``) or, without a
wheel, an install prefix's: ``cmake --install BUILD --prefix PREFIX`` then
``--cmake-dir PREFIX/lib/cmake/Ember``.

    python examples/cpp/pytorch/run_examples.py --cmake-dir DIR --work /tmp/pt [autograd ...]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[2] / "tools")]
from make_mnist_idx import write_mnist  # noqa: E402
from upstream_sources import checkout, missing_reason, required  # noqa: E402

EXAMPLES = ("autograd", "regression", "mnist", "dcgan")
# (training, test) images per example: mnist's 10 epochs of 22 batches take seconds;
# a dcgan batch of 64 takes about a second (much more on a loaded machine): 2 batches.
MNIST_IMAGES = {"mnist": (1400, 397), "dcgan": (128, 10)}

# autograd.cpp's output lines that do not depend on random numbers, in order: x = ones(2, 2),
# y = x + 2, z = 3 y^2, out = mean(z), d out / dx = 4.5, the flags, MulConstant's 5.5. libtorch
# names the nodes of its Tensor-Scalar overloads AddBackward1 and MulBackward1; Ember names
# them as Python does (AddBackward0, MulBackward0).
AUTOGRAD_EXPECTED = [
    " 1  1", " 1  1", "[ CPUFloatType{2,2} ]", " 3  3", " 3  3", "AddBackward0",
    " 27  27", " 27  27", "MulBackward0", "27", "[ CPUFloatType{} ]", "MeanBackward0",
    "false", "true", "SumBackward0", " 4.5000  4.5000", " 4.5000  4.5000", "MulBackward0",
    "true", "true", "false", "true", "false", "true", " 5.5000", " 5.5000", "[ CPUFloatType{2} ]",
]


def configure_and_build(name: str, sources: dict[str, Path], cmake_dir: str, build: Path,
                        jobs: str) -> None:
    args = ["cmake", "-S", str(sources["pytorch/examples"] / "cpp" / name), "-B", str(build),
            f"-DCMAKE_PREFIX_PATH={cmake_dir}", "-DCMAKE_BUILD_TYPE=Release"]
    if name in ("mnist", "dcgan"):
        args.append("-DDOWNLOAD_MNIST=OFF")  # the data comes from make_mnist_idx.py
    if name == "dcgan":
        include = sources["p-ranav/argparse"] / "include"
        args.append(f"-DCMAKE_CXX_FLAGS=-isystem {include}")
    subprocess.run(args, check=True)
    subprocess.run(["cmake", "--build", str(build), "--parallel", jobs], check=True)


def run(program: Path, cwd: Path, *args: str) -> str:
    start = time.monotonic()
    result = subprocess.run([str(program), *args], cwd=cwd, capture_output=True, text=True,
                            timeout=600)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    print(f"-- {program.name} exited with {result.returncode} after "
          f"{time.monotonic() - start:.1f} s")
    if result.returncode != 0:
        raise SystemExit(f"{program.name} failed with exit code {result.returncode}")
    return result.stdout


def in_order(lines: list[str], expected: list[str]) -> list[str]:
    """The expected lines not found in ``lines`` in that order (empty when all are)."""
    missing, position = [], 0
    for line in expected:
        try:
            position = lines.index(line, position) + 1
        except ValueError:
            missing.append(line)
    return missing


def check(name: str, output: str, min_accuracy: float) -> None:
    if name == "autograd":
        missing = in_order(output.splitlines(), AUTOGRAD_EXPECTED)
        if missing:
            raise SystemExit(f"autograd: expected lines missing or out of order: {missing}")
    elif name == "regression":
        match = re.search(r"Loss: (\S+) after (\d+) batches", output)
        if not match or not float(match[1]) < 1e-3:
            raise SystemExit("regression: no final loss below 1e-3")
    elif name == "mnist":
        accuracies = [float(a) for a in re.findall(r"Accuracy: ([0-9.]+)", output)]
        if len(accuracies) != 10 or accuracies[-1] < min_accuracy:
            raise SystemExit(f"mnist: expected 10 test passes ending at >= {min_accuracy}, "
                             f"got {accuracies}")
    elif name == "dcgan" and "Training complete!" not in output:
        raise SystemExit("dcgan: did not complete")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cmake-dir", required=True, help="the directory of TorchConfig.cmake")
    parser.add_argument("--work", type=Path, required=True, help="scratch directory")
    parser.add_argument("--jobs", default="2", help="build jobs (default 2)")
    parser.add_argument("--min-accuracy", type=float, default=0.7,
                        help="mnist's final held-out accuracy at least (default 0.7)")
    parser.add_argument("--require-sources", action="store_true",
                        help="fail (instead of running nothing) without the upstream sources")
    parser.add_argument("examples", nargs="*", metavar="EXAMPLE",
                        help=f"some of {', '.join(EXAMPLES)} (default: all)")
    args = parser.parse_args()
    unknown = sorted(set(args.examples) - set(EXAMPLES))
    if unknown:
        parser.error(f"unknown examples {unknown}: choose from {', '.join(EXAMPLES)}")

    sources = {repo: checkout(repo) for repo in ("pytorch/examples", "p-ranav/argparse")}
    missing = [missing_reason(repo) for repo, path in sources.items() if path is None]
    if missing:
        message = "PyTorch's C++ examples not run: " + "; ".join(missing)
        if args.require_sources or required():
            raise SystemExit(message)
        print(message)
        return

    for name in args.examples or EXAMPLES:
        print(f"== {name}", flush=True)
        build, cwd = args.work / name, args.work / f"{name}-run"
        cwd.mkdir(parents=True, exist_ok=True)
        if name in MNIST_IMAGES:
            write_mnist(cwd / "data", *MNIST_IMAGES[name])  # the examples read ./data
        configure_and_build(name, sources, args.cmake_dir, build, args.jobs)
        extra = ("--epochs", "1") if name == "dcgan" else ()
        output = run(build / name, cwd, *extra)
        check(name, output, args.min_accuracy)
        print(f"== {name}: ok", flush=True)


if __name__ == "__main__":
    main()
