"""Training steps in C++ (ember-cpp's libember) beside Python Ember and PyTorch (issue 13, item 7).

The MLP 784-512-256-10 and LeNet-5 of bench_nn.py, batch 64, cross-entropy, SGD (lr 0.01,
momentum 0.9); one step is zero_grad, forward, loss, backward, step. PyTorch and Python Ember
are timed in this process (harness.compare, turn by turn); the C++ steps by
benchmarks/cpp/bench_steps (built here against libember with CMake), run before and after
them with the same thread count (the best of the two runs is kept). Two rows per model:
``C++ Ember vs PyTorch`` and ``Python Ember vs PyTorch``, both against the same PyTorch time.

All three start from the same weights and batch (PyTorch's initial weights, written with the
batches to a safetensors directory that the C++ program loads by state_dict name), and the
losses of their first step must agree (to 1e-5, relative) before anything is timed.

libember is found, in this order, through ``EMBER_CPP_CMAKE_DIR`` (a directory holding
EmberConfig.cmake), the installed ember-cpp wheel (``python -m ember_cpp --cmake-dir``), or
``EMBER_CPP_BUILD`` (a configured and built packages/cpp-frontend build tree, installed into
a temporary prefix here). Without any, or without CMake / a C++ compiler, the C++ rows are
skipped with a printed line and the Python Ember rows remain.

``python benchmarks/bench_cpp.py phases`` prints the C++ step split into zero_grad, forward
(per layer), loss, backward (per layer) and step, for both models.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from bench_nn import _copy_weights, _lenet, _mlp, _step_fn
from harness import Result, compare

HERE = Path(__file__).resolve().parent
CPP_SOURCE = HERE / "cpp"
BATCH = 64
# name in bench_steps, row label, model factory, input shape, steps per round
MODELS = [
    ("mlp", "MLP 784-512-256-10 step (b64, SGD momentum)", _mlp, (BATCH, 784), 50),
    ("lenet", "LeNet-5 step (b64, 28x28, SGD momentum)", _lenet, (BATCH, 1, 28, 28), 20),
]
LOSS_RTOL = 1e-5


class CppUnavailable(Exception):
    """libember, CMake or a C++ compiler is missing: the C++ rows are skipped."""


def _run(cmd: list[str], what: str) -> str:
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise CppUnavailable(f"{what} failed ({' '.join(cmd[:3])} ...):\n{tail}")
    return result.stdout


def _ember_cmake_dir() -> str:
    """The directory of EmberConfig.cmake (see the module docstring for the order)."""
    explicit = os.environ.get("EMBER_CPP_CMAKE_DIR")
    if explicit:
        return explicit
    try:
        import ember_cpp
    except ImportError:
        ember_cpp = None
    if ember_cpp is not None:
        return str(ember_cpp.cmake_dir())
    build = os.environ.get("EMBER_CPP_BUILD")
    if build:
        prefix = Path(tempfile.gettempdir()) / f"ember-bench-prefix-{_digest(build)}"
        _run(["cmake", "--install", build, "--prefix", str(prefix)], "installing EMBER_CPP_BUILD")
        return str(prefix / "lib" / "cmake" / "Ember")
    raise CppUnavailable("ember-cpp is not installed (pip install packages/cpp-frontend), and "
                         "neither EMBER_CPP_CMAKE_DIR nor EMBER_CPP_BUILD is set")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def build_bench_steps() -> Path:
    """benchmarks/cpp built (incrementally, in the temp directory) against libember: the
    path of bench_steps."""
    if shutil.which("cmake") is None:
        raise CppUnavailable("cmake is not on PATH")
    cmake_dir = _ember_cmake_dir()
    build = Path(tempfile.gettempdir()) / f"ember-bench-cpp-{_digest(cmake_dir)}"
    _run(["cmake", "-S", str(CPP_SOURCE), "-B", str(build), f"-DCMAKE_PREFIX_PATH={cmake_dir}",
          "-DCMAKE_BUILD_TYPE=Release"], "configuring benchmarks/cpp")
    _run(["cmake", "--build", str(build), "--parallel", "2"], "building benchmarks/cpp")
    return build / "bench_steps"


def run_bench_steps(binary: Path, data_dir: str, threads: int, *extra: str) -> dict[str, dict]:
    """bench_steps' JSON lines, by workload name."""
    out = _run([str(binary), "--threads", str(threads), "--data", data_dir, *extra], "bench_steps")
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {row["workload"]: row for row in rows}


def _threads() -> int:
    import ember

    return ember.get_num_threads()


def _write_inputs(torch, data_dir: str, rng) -> dict:
    """Per model: the PyTorch and Ember models with the same weights (PyTorch's when torch
    is installed, Ember's otherwise), the batch, and their first-step losses; writes the
    weights (<name>.safetensors) and batches (data.safetensors) for bench_steps."""
    import ember
    import ember.safetensors

    batches, setups = {}, {}
    if torch is not None:
        torch.manual_seed(0)
    for name, _label, build, shape, _number in MODELS:
        x = rng.standard_normal(shape).astype(np.float32)
        y = rng.integers(0, 10, BATCH)
        batches[f"{name}.x"], batches[f"{name}.y"] = ember.tensor(x), ember.tensor(y)
        e_model = build(ember)
        t_model = None
        if torch is not None:
            t_model = build(torch)
            _copy_weights(t_model, e_model)
        state = {k: v.detach().clone() for k, v in e_model.state_dict().items()}
        ember.safetensors.save_file(state, os.path.join(data_dir, f"{name}.safetensors"))
        setups[name] = (e_model, t_model, x, y)
    ember.safetensors.save_file(batches, os.path.join(data_dir, "data.safetensors"))
    return setups


def _first_loss(lib, model, x, y) -> float:
    return float(lib.nn.functional.cross_entropy(model(lib.from_numpy(x)),
                                                 lib.from_numpy(y)).item())


def _check_losses(name: str, cpp_loss: float | None, e_model, t_model, x, y, torch) -> None:
    """The first-step losses of C++, Python Ember and PyTorch on the same weights agree."""
    import ember

    losses = {"Python Ember": _first_loss(ember, e_model, x, y)}
    if t_model is not None:
        losses["PyTorch"] = _first_loss(torch, t_model, x, y)
    if cpp_loss is not None:
        losses["C++ Ember"] = cpp_loss
    ref = losses["Python Ember"]
    worst = max(abs(v - ref) / abs(ref) for v in losses.values())
    shown = ", ".join(f"{k} {v:.7f}" for k, v in losses.items())
    print(f"{name}: first-step loss {shown} (largest relative difference {worst:.1e})")
    if worst > LOSS_RTOL:
        raise AssertionError(f"{name}: the first-step losses disagree beyond {LOSS_RTOL}: {shown}")


def _sgd_step(lib, model, x, y):
    """One training step of ``model`` (bench_nn's), with SGD(lr 0.01, momentum 0.9)."""
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return _step_fn(lib, model, opt, lib.from_numpy(x), lib.from_numpy(y))


def workloads(torch):
    import ember

    rng = np.random.default_rng(0)
    threads = _threads()
    results: list[Result | None] = []
    with tempfile.TemporaryDirectory(prefix="ember-bench-cpp-data-") as data_dir:
        setups = _write_inputs(torch, data_dir, rng)
        try:
            binary = build_bench_steps()
            cpp_runs = [run_bench_steps(binary, data_dir, threads)]
        except CppUnavailable as e:
            print(f"skipped the C++ rows: {e}")
            binary, cpp_runs = None, []

        python_rows = {}
        for name, label, _build, _shape, number in MODELS:
            e_model, t_model, x, y = setups[name]
            cpp_loss = cpp_runs[0][name]["loss0"] if cpp_runs else None
            _check_losses(name, cpp_loss, e_model, t_model, x, y, torch)
            e_step = _sgd_step(ember, e_model, x, y)
            t_step = None if t_model is None else _sgd_step(torch, t_model, x, y)
            python_rows[name] = compare(f"{label}: Python Ember vs PyTorch", e_step, t_step,
                                        number=number)

        if binary is not None:  # a second C++ run after the Python ones: keep the best
            cpp_runs.append(run_bench_steps(binary, data_dir, threads))
    for name, label, _build, _shape, _number in MODELS:
        py = python_rows[name]
        if cpp_runs and py is not None:
            cpp_s = min(run[name]["step_s"] for run in cpp_runs)
            results.append(Result(f"{label}: C++ Ember vs PyTorch", cpp_s, py.torch_s))
        results.append(py)
    return results


def phases(threads: int) -> None:
    """Prints where the time of a C++ step goes (bench_steps --phases), per model."""
    binary = build_bench_steps()
    with tempfile.TemporaryDirectory(prefix="ember-bench-cpp-data-") as data_dir:
        _write_inputs(None, data_dir, np.random.default_rng(0))
        for name, row in run_bench_steps(binary, data_dir, threads, "--phases").items():
            p = row["phases"]
            total = row["step_s"]
            print(f"\n{name}, {threads} thread(s): {total * 1e3:.3f} ms per step")
            for phase in ("zero_grad", "forward", "loss", "backward", "step"):
                print(f"  {phase:<10} {p[phase] * 1e3:8.3f} ms  {p[phase] / total:6.1%}")
            print(f"  {'layer':<22} {'forward ms':>10} {'backward ms':>12}")
            for layer, f, b in zip(p["layers"], p["layers_forward"], p["layers_backward"]):
                print(f"  {layer:<22} {f * 1e3:10.3f} {b * 1e3:12.3f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["phases"]:
        import ember

        n = int(os.environ.get("THREADS", 0)) or os.cpu_count() or 1
        ember.set_num_threads(n)
        phases(n)
    else:
        print(__doc__)
