"""Unary math and other elementwise ops: exp/log families, trig, activations' kernels,
rounding, clamp, comparisons, logical ops, where."""

from __future__ import annotations

import numpy as np

from ._core import unary_op
from .registry import register

__all__ = ["neg", "exp", "log", "relu"]


def _neg_bw(node, g):
    return (-g,)


def _exp_bw(node, g):
    return (g * node.output(),)


def _log_bw(node, g):
    return (g / node.saved[0],)


def _relu_bw(node, g):
    return (g * (node.output(False) > 0),)


neg = register("neg", inplace=True, aliases=("negative",))(
    unary_op("neg", np.negative, _neg_bw, no_bool=True))
exp = register("exp", inplace=True)(unary_op("exp", np.exp, _exp_bw, to_float=True, saves="o"))
log = register("log", inplace=True)(unary_op("log", np.log, _log_bw, to_float=True, saves="a"))


def _relu_np(a):
    return np.maximum(a, 0) if a.dtype.kind != "b" else a


relu = register("relu", inplace=True)(unary_op("relu", _relu_np, _relu_bw, saves="o"))

from .registry import register_method  # noqa: E402

register_method("__neg__", neg)

from ._core import binary_op  # noqa: E402

gt = register("gt", inplace=True, aliases=("greater",))(binary_op("gt", np.greater, kind="bool"))
lt = register("lt", inplace=True, aliases=("less",))(binary_op("lt", np.less, kind="bool"))
ge = register("ge", inplace=True, aliases=("greater_equal",))(
    binary_op("ge", np.greater_equal, kind="bool"))
le = register("le", inplace=True, aliases=("less_equal",))(
    binary_op("le", np.less_equal, kind="bool"))
eq = register("eq", inplace=True)(binary_op("eq", np.equal, kind="bool"))
ne = register("ne", inplace=True, aliases=("not_equal",))(binary_op("ne", np.not_equal,
                                                                    kind="bool"))
for _name, _fn in (("__gt__", gt), ("__lt__", lt), ("__ge__", ge), ("__le__", le),
                   ("__eq__", eq), ("__ne__", ne)):
    register_method(_name, _fn)
