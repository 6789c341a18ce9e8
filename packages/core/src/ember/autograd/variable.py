"""``ember.autograd.Variable``: the pre-0.4 wrapper, kept for old code and tutorials.

Variables and tensors merged long ago: ``Variable(t)`` returns a tensor sharing ``t``'s data
(and version counter) outside ``t``'s graph, with ``requires_grad`` as asked, and
``isinstance(x, Variable)`` is true of every tensor, as in PyTorch.
"""

from __future__ import annotations

import warnings

from .. import _dtype

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        from .._tensor import Tensor

        return isinstance(obj, Tensor)

    def __call__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        from .. import _factory
        from .._tensor import Tensor

        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "ember.no_grad():` instead.", UserWarning, stacklevel=2)
        if data is None:
            data = _factory.empty(0)
        elif not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type(data).__name__}")
        if requires_grad and data._data.dtype not in _dtype.INEXACT_NP:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        out = data.detach()
        out.requires_grad = bool(requires_grad)
        return out


class Variable(metaclass=_VariableMeta):
    """``Variable(data=None, requires_grad=False, volatile=False)``: deprecated; returns a
    tensor that shares ``data``'s memory, detached from its graph. ``volatile=True`` only
    warns: use ``with ember.no_grad():``."""

    #: the autograd engine (PyTorch's ``Variable._execution_engine``), for what libraries
    #: call on it: ``queue_callback(fn)`` runs ``fn`` when the running backward has finished
    _execution_engine: _ExecutionEngine


class _ExecutionEngine:
    """``Variable._execution_engine``: the backward engine's one hook that libraries use."""

    @staticmethod
    def queue_callback(callback) -> None:
        from .engine import queue_callback

        queue_callback(callback)


Variable._execution_engine = _ExecutionEngine()
