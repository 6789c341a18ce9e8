"""``ember.utils.collect_env``: PyTorch's ``torch.utils.collect_env`` for Ember.

``python -m ember.utils.collect_env`` prints what a bug report needs, in PyTorch's layout
where it applies: Ember's version and every installed Ember distribution, NumPy, CuPy and
the GPUs it sees, the BLAS (and OpenMP) libraries loaded (through threadpoolctl), Python,
the OS and the CPU. Everything is read in this process (package metadata, ``/proc``,
``/etc/os-release``): no subprocess, no network. What cannot be read says so.
"""

from __future__ import annotations

import os
import platform
import sys
from collections import namedtuple

__all__ = ["SystemEnv", "get_env_info", "get_pretty_env_info", "pretty_str", "main"]

SystemEnv = namedtuple("SystemEnv", [
    "ember_version",
    "numpy_version",
    "cupy_version",
    "os",
    "libc_version",
    "python_version",
    "python_platform",
    "is_cuda_available",
    "cuda_runtime_version",
    "nvidia_gpu_models",
    "nvidia_driver_version",
    "blas_info",
    "cpu_info",
    "pip_packages",
])

#: the distributions listed under "Versions of relevant libraries" (every ``ember*`` too)
RELEVANT = ("numpy", "cupy", "threadpoolctl", "safetensors", "ml_dtypes", "ml-dtypes",
            "mpi4py", "mpich", "onnx", "onnxruntime", "tqdm", "requests", "sentencepiece",
            "tensorboard", "pillow", "torch", "torchvision", "torchaudio")


def _safe(fn, *args):
    """``fn(*args)``, or None when it fails: a report never dies on one field."""
    try:
        return fn(*args)
    except Exception:
        return None


def get_platform() -> str:
    if sys.platform.startswith("linux"):
        return "linux"
    if sys.platform.startswith("win32"):
        return "win32"
    if sys.platform.startswith("cygwin"):
        return "cygwin"
    if sys.platform.startswith("darwin"):
        return "darwin"
    return sys.platform


def get_ember_version() -> str:
    import ember

    return str(ember.__version__)


def _module_version(name: str) -> str | None:
    """The version of module ``name`` if it imports (None otherwise)."""
    import importlib

    try:
        return str(importlib.import_module(name).__version__)
    except Exception:
        return None


def get_os() -> str:
    machine = platform.machine()
    plat = get_platform()
    if plat == "linux":
        for path in ("/etc/os-release", "/usr/lib/os-release"):
            try:
                with open(path, encoding="utf-8") as f:
                    for line in f:
                        if line.startswith("PRETTY_NAME="):
                            return f"{line.split('=', 1)[1].strip().strip(chr(34))} ({machine})"
            except OSError:
                continue
        return f"{plat} ({machine})"
    if plat == "darwin":
        return f"macOS {platform.mac_ver()[0]} ({machine})"
    if plat in ("win32", "cygwin"):
        return f"{platform.system()} {platform.release()} ({platform.version()} {machine})"
    return plat


def get_libc_version() -> str:
    if get_platform() != "linux":
        return "N/A"
    return "-".join(platform.libc_ver())


def get_python_version() -> str:
    return "{} ({}-bit runtime)".format(sys.version.replace("\n", " "),
                                       sys.maxsize.bit_length() + 1)


def get_python_platform() -> str:
    return platform.platform()


def get_cpu_info() -> str:
    """Architecture, logical CPUs (all, and those this process may run on) and the model."""
    lines = [f"Architecture: {platform.machine()}", f"CPU(s): {os.cpu_count()}"]
    if hasattr(os, "sched_getaffinity"):
        lines.append(f"CPU(s) available to this process: {len(os.sched_getaffinity(0))}")
    model = None
    if get_platform() == "linux":
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                for line in f:
                    key, _, value = line.partition(":")
                    if key.strip() in ("model name", "Model", "cpu model", "Processor"):
                        model = value.strip()
                        break
        except OSError:
            pass
    model = model or platform.processor() or None
    if model:
        lines.append(f"Model name: {model}")
    return "\n".join(lines)


def get_blas_info() -> str:
    """One line per BLAS/OpenMP library loaded in this process, as threadpoolctl sees it."""
    import numpy  # noqa: F401  (its BLAS must be loaded to be seen)
    import threadpoolctl

    lines = []
    for lib in threadpoolctl.threadpool_info():
        details = [f"{k}: {lib[k]}" for k in ("threading_layer", "architecture", "num_threads")
                   if lib.get(k) is not None]
        lines.append(f"[{lib.get('user_api')}] {lib.get('internal_api')} {lib.get('version')} "
                     f"({', '.join(details)}) {lib.get('filepath')}")
    return "\n".join(lines)


def _cuda():
    """``ember.cuda`` when CuPy sees a GPU, else None."""
    import ember.cuda

    return ember.cuda if ember.cuda.is_available() else None


def is_cuda_available() -> bool:
    return _cuda() is not None


def get_cuda_runtime_version() -> str | None:
    if _cuda() is None:
        return None
    import cupy

    v = cupy.cuda.runtime.runtimeGetVersion()  # e.g. 12040
    return f"{v // 1000}.{v % 1000 // 10}"


def get_gpu_info() -> str | None:
    cuda = _cuda()
    if cuda is None:
        return None
    return "\n".join(f"GPU {i}: {cuda.get_device_name(i)}" for i in range(cuda.device_count()))


def get_nvidia_driver_version() -> str | None:
    """The NVIDIA kernel driver's version, from ``/proc/driver/nvidia/version`` (Linux)."""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as f:
            first = f.readline()
    except OSError:
        return None
    for word in first.split():
        parts = word.split(".")
        if len(parts) >= 2 and all(p.isdigit() for p in parts):
            return word
    return None


def get_pip_packages() -> str:
    """``[installer] name==version`` for each relevant distribution installed (the Ember
    ones first), read from the packages' metadata; ``[pip3]`` for pip as in PyTorch."""
    from importlib import metadata

    found = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name") or ""
        key = name.lower().replace("_", "-")
        if not key or key in found:
            continue
        if key.startswith("ember") or key in RELEVANT or key.startswith("cupy"):
            installer = (_safe(dist.read_text, "INSTALLER") or "").strip() or "unknown"
            tag = "pip3" if installer == "pip" else installer
            found[key] = f"[{tag}] {name}=={dist.version}"
    order = sorted(found, key=lambda k: (not k.startswith("ember"), k))
    return "\n".join(found[k] for k in order)


def get_env_info() -> SystemEnv:
    """What ``get_pretty_env_info`` prints, field by field (None: could not be read)."""
    return SystemEnv(
        ember_version=_safe(get_ember_version),
        numpy_version=_module_version("numpy"),
        cupy_version=_module_version("cupy"),
        os=_safe(get_os),
        libc_version=_safe(get_libc_version),
        python_version=get_python_version(),
        python_platform=_safe(get_python_platform),
        is_cuda_available=bool(_safe(is_cuda_available)),
        cuda_runtime_version=_safe(get_cuda_runtime_version),
        nvidia_gpu_models=_safe(get_gpu_info),
        nvidia_driver_version=_safe(get_nvidia_driver_version),
        blas_info=_safe(get_blas_info),
        cpu_info=_safe(get_cpu_info),
        pip_packages=_safe(get_pip_packages),
    )


env_info_fmt = """
Ember version: {ember_version}
NumPy version: {numpy_version}
CuPy version: {cupy_version}

OS: {os}
Libc version: {libc_version}

Python version: {python_version}
Python platform: {python_platform}
Is CUDA available: {is_cuda_available}
CUDA runtime version: {cuda_runtime_version}
GPU models and configuration: {nvidia_gpu_models}
Nvidia driver version: {nvidia_driver_version}

CPU:
{cpu_info}

BLAS and OpenMP libraries (threadpoolctl):
{blas_info}

Versions of relevant libraries:
{pip_packages}
""".strip()


def pretty_str(envinfo: SystemEnv) -> str:
    """``envinfo`` in PyTorch's layout: Yes/No for booleans, "No CUDA" for the GPU fields
    of a machine without one, "Could not collect" for what could not be read."""
    d = envinfo._asdict()
    gpus = d["nvidia_gpu_models"]
    if gpus is not None and "\n" in gpus:  # several GPUs start on the next line
        d["nvidia_gpu_models"] = f"\n{gpus}\n"
    cuda_fields = ("cuda_runtime_version", "nvidia_gpu_models", "nvidia_driver_version")
    if not envinfo.is_cuda_available and all(d[k] is None for k in cuda_fields):
        for k in cuda_fields:
            d[k] = "No CUDA"
    if d["cupy_version"] is None:
        d["cupy_version"] = "N/A (not installed)"
    for k, v in d.items():
        if v is True:
            d[k] = "Yes"
        elif v is False:
            d[k] = "No"
        elif v is None:
            d[k] = "Could not collect"
    if d["pip_packages"] == "":
        d["pip_packages"] = "No relevant packages"
    if d["blas_info"] == "":
        d["blas_info"] = "None loaded"
    return env_info_fmt.format(**d)


def get_pretty_env_info() -> str:
    """The environment report ``python -m ember.utils.collect_env`` prints."""
    return pretty_str(get_env_info())


def main() -> None:
    print("Collecting environment information...")
    print(get_pretty_env_info())


if __name__ == "__main__":
    main()
