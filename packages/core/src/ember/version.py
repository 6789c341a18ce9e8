"""``ember.version``: what this Ember is, as ``torch.version``.

``__version__`` is the installed ember-core distribution's version (under ``ember.as_torch``,
the PyTorch release Ember follows with it as the local label: ``2.13.0+ember.0.1.0``);
``cuda`` is the CUDA runtime version of CuPy (None without it), looked up on first use since
it imports CuPy;
``git_version`` is the commit the distribution was installed from when pip recorded one
(an install from a git URL), else 'Unknown'. Ember has no debug build, no ROCm/HIP and no
XPU backend.
"""

from __future__ import annotations

# ``__version__``, ``git_version`` and ``cuda`` come from the module ``__getattr__`` below
__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu"]  # noqa: F822

_DISTRIBUTION = "ember-core"


def _installed_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version(_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        return "0+unknown"


def _installed_commit() -> str:
    """The commit in pip's ``direct_url.json`` (PEP 610), when it recorded one."""
    import importlib.metadata
    import json

    try:
        text = importlib.metadata.distribution(_DISTRIBUTION).read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return "Unknown"
    try:
        return json.loads(text or "{}").get("vcs_info", {}).get("commit_id") or "Unknown"
    except (ValueError, AttributeError):  # not JSON, or not the documented layout
        return "Unknown"


debug = False
hip = None
rocm = None
xpu = None

def _cuda_version() -> str | None:
    from .backends import cuda as cuda_backend

    return cuda_backend.cuda_version()


# Looked up on first use: importlib.metadata alone costs ~25 ms to import, CuPy far more.
_LAZY = {"__version__": _installed_version, "git_version": _installed_commit,
         "cuda": _cuda_version}


_OWN: list = []  # ember-core's installed version, once read


def __getattr__(name: str):
    if name == "__version__":  # not kept as a global: ``ember.as_torch`` changes the answer
        from ._naming import version_string

        if not _OWN:
            _OWN.append(_installed_version())
        return version_string(_OWN[0])
    if name not in _LAZY:
        raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
    value = globals()[name] = _LAZY[name]()
    return value
