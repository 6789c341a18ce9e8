"""Load every case of a hostile corpus in this process, under a memory limit; one JSON line
per case on stdout.

Usage: ``python fuzz_worker.py MANIFEST [ember|torch]``. The manifest is written by
``make_bad_checkpoints.write_cases``. Before each case a ``{"start": name}`` line is printed,
so that when the process dies (a crash, or the watchdog's exit after ``CASE_TIMEOUT_S``) the
caller knows which case killed it. Each result line holds the outcome ("load" or "error"),
the exception's type and message, the seconds taken and, for a load with a reference,
whether the result equals the reference. Run it in an empty working directory: payloads that
ran would create ``ember_pwned_marker`` there.
"""

from __future__ import annotations

import faulthandler
import json
import os
import shutil
import sys
import time
import zipfile

import numpy as np

CASE_TIMEOUT_S = 20
MEMORY_BUDGET = 2 << 30  # bytes of address space above what the imports took


def _limit_memory() -> None:
    try:
        import resource
    except ImportError:  # not POSIX: no limit
        return
    with open("/proc/self/status") as fh:
        vm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + MEMORY_BUDGET, vm + MEMORY_BUDGET))


def _ember_loaders():
    import ember
    import ember.safetensors

    def extract(path):
        from ember.hub import _repo

        jail = os.path.abspath("jail")
        shutil.rmtree(jail, ignore_errors=True)
        os.makedirs(os.path.join(jail, "out"))
        try:
            with zipfile.ZipFile(path) as zf:
                _repo.safe_extract_zip(zf, os.path.join(jail, "out"))
            return sorted(os.listdir(os.path.join(jail, "out")))
        finally:
            escaped = sorted(set(os.listdir(jail)) - {"out"})
            shutil.rmtree(jail, ignore_errors=True)
            if escaped:  # reported as a failure, whatever else happened
                raise SystemExit(f"extraction wrote outside its directory: {escaped}")

    return {"pt": ember.load, "pt-mmap": lambda p: ember.load(p, mmap=True),
            "st": ember.safetensors.load_file, "zip": extract}, ember.load


def _torch_loaders():
    import safetensors.torch
    import torch

    def load(path, **kwargs):
        return torch.load(path, weights_only=True, **kwargs)

    return {"pt": load, "pt-mmap": lambda p: load(p, mmap=True),
            "st": safetensors.torch.load_file}, load


def normalize(obj, internals: bool = False):
    """A comparable structure: tensors become (class, dtype, shape, bytes[, fields])."""
    if hasattr(obj, "detach") and hasattr(obj, "dtype"):
        t = obj.detach().cpu()
        if "float8" in str(obj.dtype):  # PyTorch's numpy() has no float8: compare the bytes
            lib = sys.modules[type(obj).__module__.split(".")[0]]
            data = t.contiguous().view(lib.uint8).numpy().tobytes()
        else:
            data = np.ascontiguousarray(t.numpy()).tobytes()
        entry = (type(obj).__name__, str(obj.dtype).split(".")[-1], tuple(t.shape), data,
                 bool(obj.requires_grad))
        if internals:  # ember: the array really is an array, no internal field was added
            entry += (type(obj._data).__name__, sorted(vars(obj)), repr(obj) is not None)
        return entry
    if isinstance(obj, dict):
        meta = getattr(obj, "_metadata", None)
        return (type(obj).__name__, [(k, normalize(v, internals)) for k, v in obj.items()],
                meta)
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [normalize(v, internals) for v in obj])
    return obj


def run(manifest_path: str, engine: str) -> None:
    with open(manifest_path) as fh:
        cases = json.load(fh)
    loaders, load_reference = _ember_loaders() if engine == "ember" else _torch_loaders()
    internals = engine == "ember"
    _limit_memory()
    for case in cases:
        loader = loaders.get(case["kind"])
        if loader is None or (engine == "torch" and case["torch_slow"]):
            continue
        print(json.dumps({"start": case["name"]}), flush=True)
        faulthandler.dump_traceback_later(CASE_TIMEOUT_S, exit=True)
        record = {"name": case["name"]}
        start, cpu_start = time.perf_counter(), time.process_time()
        try:
            result = loader(case["path"])
            record.update(outcome="load")
        except Exception as exc:  # the outcome being measured: which exception, if clean
            record.update(outcome="error", type=type(exc).__name__,
                          module=type(exc).__module__, message=str(exc)[:300])
        record["seconds"] = time.perf_counter() - start
        # the bound the tests check: this process's CPU time, which other processes on a
        # shared machine (a parallel test run) do not inflate as they do the wall clock
        record["cpu_seconds"] = time.process_time() - cpu_start
        faulthandler.cancel_dump_traceback_later()
        if record["outcome"] == "load" and case["reference"]:
            expected = normalize(load_reference(case["reference"]), internals)
            try:  # a broken result may fail here, far from the file: that is a wrong load
                record["correct"] = bool(normalize(result, internals) == expected)
            except Exception as exc:
                record.update(correct=False, check_error=repr(exc)[:300])
        result = None
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "ember")
