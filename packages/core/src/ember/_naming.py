"""The module name Ember's objects print under.

``ember`` normally; ``torch`` while ``ember.as_torch`` is installed, so that a PyTorch program
run on Ember sees PyTorch's spellings where it reads or compares them: ``torch.float32``,
``torch.Size([2, 3])``, ``torch.strided``, ``torch.return_types.max(...)``,
``x.type() == 'torch.FloatTensor'``. (``ember.__version__`` then reports the PyTorch release
whose API Ember follows; see ``ember.version``.)
"""

from __future__ import annotations

#: ``PREFIX[0]``: "ember", or "torch" under ``ember.as_torch`` (one list read per repr)
PREFIX = ["ember"]

#: the PyTorch release whose API Ember follows (the one its parity tests run against)
TORCH_API = "2.13.0"


def version_string(ember_version: str) -> str:
    """What ``__version__`` reports: Ember's own version; under ``ember.as_torch`` the
    PyTorch release Ember follows, with Ember's version as the local label
    (``2.13.0+ember.0.1.0``), so that a program's ``torch.__version__ >= "2.0"`` (or
    ``packaging``'s parse of it) asks about the API it will get."""
    if PREFIX[0] != "torch":
        return ember_version
    local = "".join(c if c.isalnum() else "." for c in ember_version).strip(".")
    return f"{TORCH_API}+ember.{local}"


def bare(obj) -> str:
    """``repr(obj)`` without its module prefix: ``"float32"`` for ``ember.float32`` however
    it prints (file formats and generated code spell names this way)."""
    r = repr(obj)
    for p in ("ember.", "torch."):
        if r.startswith(p):
            return r[len(p):]
    return r
