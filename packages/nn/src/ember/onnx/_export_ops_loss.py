"""ONNX export mappings: the loss functions (registered in the table of ``_export_ops.py``).

Each loss is written as its formula in ONNX operators, as PyTorch's kernels compute it
(``aten/src/ATen/native/Loss.cpp``, ``LossNLL.cpp``): class-index targets go through ONNX
``NegativeLogLikelihoodLoss`` (PyTorch's ``weight``/``ignore_index``/reduction semantics;
its formula in Gather ops at opset 11, which lacks the operator),
label smoothing adds PyTorch's smoothing term, and the log of ``binary_cross_entropy`` is
clamped at -100 as PyTorch clamps it.
"""

from __future__ import annotations

import math

import numpy as np

from ._export_graph import Unsupported, onnx_type
from ._export_ops import Call, mapping, norm_axis, reduce, softmax_like, squeeze, unsqueeze

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(c: Call, extra: tuple = ()) -> str:
    """The ``reduction`` argument (ATen's integer codes and the deprecated
    ``size_average``/``reduce`` pair included)."""
    size_average, legacy = c.lit("size_average"), c.lit("reduce")
    if size_average is not None or legacy is not None:
        size_average = True if size_average is None else size_average
        legacy = True if legacy is None else legacy
        return "mean" if size_average and legacy else "sum" if legacy else "none"
    r = c.lit("reduction", "mean")
    if isinstance(r, int) and not isinstance(r, bool):
        r = _REDUCTIONS.get(r, r)
    if r not in ("none", "mean", "sum", *extra):
        raise Unsupported(f"reduction={r!r}")
    return r


def _reduced(c: Call, loss: str, reduction: str) -> str:
    if reduction == "sum":
        return reduce(c, "ReduceSum", loss, None, False)
    if reduction == "mean":
        return reduce(c, "ReduceMean", loss, None, False)
    return loss


def _pair(c: Call, a: str = "input", b: str = "target") -> tuple[str, str, str]:
    d = c.out_dtype
    return c.t(a, d), c.t(b, d), d


def _weighted(c: Call, loss: str, d: str, reduction: str, mean_by_weight: bool = True) -> str:
    """``loss * weight`` reduced; a weighted mean divides by ``weight.sum()`` where
    ``mean_by_weight`` (mse, l1), by the element count otherwise (huber)."""
    if not c.has("weight"):
        return _reduced(c, loss, reduction)
    w = c.t("weight", d)
    loss = c.add("Mul", [loss, w])
    if reduction == "mean" and mean_by_weight:
        total = reduce(c, "ReduceSum", loss, None, False)
        return c.add("Div", [total, reduce(c, "ReduceSum", w, None, False)])
    return _reduced(c, loss, reduction)


@mapping("mse_loss", "l1_loss")
def _mse_loss(c: Call):
    x, t, d = _pair(c)
    diff = c.add("Sub", [x, t])
    loss = c.add("Mul", [diff, diff]) if c.op == "mse_loss" else c.add("Abs", [diff])
    return _weighted(c, loss, d, _reduction(c))


def _quadratic_then_linear(c: Call, x: str, t: str, d: str, limit: float,
                           divisor: float) -> str:
    """``0.5 z**2 / divisor`` below ``limit``, ``limit / divisor * (z - limit / 2)`` above it
    (``z = |x - t|``)."""
    z = c.add("Abs", [c.add("Sub", [x, t])])
    quadratic = c.add("Mul", [c.add("Mul", [z, z]), c.const(0.5 / divisor, d)])
    linear = c.add("Mul", [c.add("Sub", [z, c.const(0.5 * limit, d)]),
                           c.const(limit / divisor, d)])
    return c.add("Where", [c.add("Less", [z, c.const(limit, d)]), quadratic, linear])


@mapping("smooth_l1_loss")
def _smooth_l1_loss(c: Call):
    x, t, d = _pair(c)
    beta = float(c.lit("beta", 1.0))
    if beta == 0:
        loss = c.add("Abs", [c.add("Sub", [x, t])])
    else:
        loss = _quadratic_then_linear(c, x, t, d, beta, beta)
    return _reduced(c, loss, _reduction(c))


@mapping("huber_loss")
def _huber_loss(c: Call):
    x, t, d = _pair(c)
    loss = _quadratic_then_linear(c, x, t, d, float(c.lit("delta", 1.0)), 1.0)
    return _weighted(c, loss, d, _reduction(c), mean_by_weight=False)


def _softplus_neg(c: Call, x: str, d: str) -> str:
    """``log(1 + exp(-x))`` without overflow: ``max(-x, 0) + log(1 + exp(-|x|))``."""
    zero = c.const(0.0, d)
    tail = c.add("Log", [c.add("Add", [c.const(1.0, d),
                                       c.add("Exp", [c.add("Neg", [c.add("Abs", [x])])])])])
    return c.add("Add", [c.add("Max", [c.add("Neg", [x]), zero]), tail])


@mapping("binary_cross_entropy")
def _binary_cross_entropy(c: Call):
    x, t, d = _pair(c)
    floor = c.const(-100.0, d)
    one = c.const(1.0, d)
    log_x = c.add("Max", [c.add("Log", [x]), floor])
    log_1mx = c.add("Max", [c.add("Log", [c.add("Sub", [one, x])]), floor])
    loss = c.add("Neg", [c.add("Add", [c.add("Mul", [t, log_x]),
                                       c.add("Mul", [c.add("Sub", [one, t]), log_1mx])])])
    if c.has("weight"):
        loss = c.add("Mul", [loss, c.t("weight", d)])
    return _reduced(c, loss, _reduction(c))


@mapping("binary_cross_entropy_with_logits", "nn.functional.binary_cross_entropy_with_logits")
def _bce_with_logits(c: Call):
    x, t, d = _pair(c)
    one = c.const(1.0, d)
    soft = _softplus_neg(c, x, d)
    if c.has("pos_weight"):  # (pos_weight - 1) * target + 1 weighs log(sigmoid(x))
        log_weight = c.add("Add", [c.add("Mul", [c.add("Sub", [c.t("pos_weight", d), one]), t]),
                                   one])
        soft = c.add("Mul", [soft, log_weight])
    loss = c.add("Add", [c.add("Mul", [c.add("Sub", [one, t]), x]), soft])
    if c.has("weight"):
        loss = c.add("Mul", [loss, c.t("weight", d)])
    return _reduced(c, loss, _reduction(c))


@mapping("kl_div", "nn.functional.kl_div")
def _kl_div(c: Call):
    x, t, d = _pair(c)
    if c.lit("log_target", False):
        loss = c.add("Mul", [c.add("Exp", [t]), c.add("Sub", [t, x])])
    else:  # xlogy(t, t) - t * x, with 0 * log(0) = 0
        tlogt = c.add("Where", [c.add("Equal", [t, c.const(0.0, d)]), c.const(0.0, d),
                                c.add("Mul", [t, c.add("Log", [t])])])
        loss = c.add("Sub", [tlogt, c.add("Mul", [t, x])])
    reduction = _reduction(c, extra=("batchmean",))
    if reduction != "batchmean":
        return _reduced(c, loss, reduction)
    total = reduce(c, "ReduceSum", loss, None, False)
    shape = c.shape("input")
    if not shape:
        return total
    batch = c.add("Cast", [c.b.scalar_expr(shape[0])], to=_onnx_type(d))
    return c.add("Div", [total, batch])


def _onnx_type(d: str) -> int:
    from ._export_graph import onnx_type

    return onnx_type(d)


@mapping("poisson_nll_loss", "nn.functional.poisson_nll_loss")
def _poisson_nll_loss(c: Call):
    x, t, d = _pair(c)
    if c.lit("log_input", True):
        loss = c.add("Sub", [c.add("Exp", [x]), c.add("Mul", [t, x])])
    else:
        eps = c.const(float(c.lit("eps", 1e-8)), d)
        loss = c.add("Sub", [x, c.add("Mul", [t, c.add("Log", [c.add("Add", [x, eps])])])])
    if c.lit("full", False):  # Stirling's term where target > 1
        one = c.const(1.0, d)
        tc = c.add("Max", [t, one])
        stirling = c.add("Add", [
            c.add("Sub", [c.add("Mul", [tc, c.add("Log", [tc])]), tc]),
            c.add("Mul", [c.const(0.5, d),
                          c.add("Log", [c.add("Mul", [tc, c.const(2 * math.pi, d)])])])])
        stirling = c.add("Where", [c.add("Greater", [t, one]), stirling, c.const(0.0, d)])
        loss = c.add("Add", [loss, stirling])
    return _reduced(c, loss, _reduction(c))


@mapping("gaussian_nll_loss")
def _gaussian_nll_loss(c: Call):
    x, t, d = _pair(c)
    if not c.is_tensor("var"):
        raise Unsupported("var given as a number")
    var = c.t("var", d)
    in_shape, var_shape = c.shape("input"), c.shape("var")
    if var_shape != in_shape and list(in_shape[:-1]) == list(var_shape):
        var = unsqueeze(c, var, [len(var_shape)])
    var = c.add("Max", [var, c.const(float(c.lit("eps", 1e-6)), d)])
    diff = c.add("Sub", [x, t])
    loss = c.add("Mul", [c.add("Add", [c.add("Log", [var]),
                                       c.add("Div", [c.add("Mul", [diff, diff]), var])]),
                         c.const(0.5, d)])
    if c.lit("full", False):
        loss = c.add("Add", [loss, c.const(0.5 * math.log(2 * math.pi), d)])
    return _reduced(c, loss, _reduction(c))


@mapping("soft_margin_loss")
def _soft_margin_loss(c: Call):
    x, t, d = _pair(c)
    return _reduced(c, _softplus_neg(c, c.add("Mul", [t, x]), d), _reduction(c))


@mapping("multilabel_soft_margin_loss")
def _multilabel_soft_margin_loss(c: Call):
    x, t, d = _pair(c)
    one = c.const(1.0, d)
    loss = c.add("Add", [c.add("Mul", [t, _softplus_neg(c, x, d)]),
                         c.add("Mul", [c.add("Sub", [one, t]),
                                       _softplus_neg(c, c.add("Neg", [x]), d)])])
    if c.has("weight"):
        loss = c.add("Mul", [loss, c.t("weight", d)])
    axis = c.rank("input") - 1
    loss = reduce(c, "ReduceMean", loss, [axis], False)
    return _reduced(c, loss, _reduction(c))


@mapping("margin_ranking_loss", "nn.functional.margin_ranking_loss")
def _margin_ranking_loss(c: Call):
    d = c.out_dtype
    x1, x2, t = c.t("input1", d), c.t("input2", d), c.t("target", d)
    z = c.add("Add", [c.add("Neg", [c.add("Mul", [t, c.add("Sub", [x1, x2])])]),
                      c.const(float(c.lit("margin", 0)), d)])
    return _reduced(c, c.add("Max", [z, c.const(0.0, d)]), _reduction(c))


@mapping("hinge_embedding_loss", "nn.functional.hinge_embedding_loss")
def _hinge_embedding_loss(c: Call):
    x, t, d = _pair(c)
    zero = c.const(0.0, d)
    hinge = c.add("Max", [c.add("Sub", [c.const(float(c.lit("margin", 1.0)), d), x]), zero])
    hinge = c.add("Where", [c.add("Equal", [t, c.const(1.0, d)]), zero, hinge])
    kept = c.add("Where", [c.add("Equal", [t, c.const(-1.0, d)]), zero, x])
    return _reduced(c, c.add("Add", [hinge, kept]), _reduction(c))


@mapping("cosine_embedding_loss", "nn.functional.cosine_embedding_loss")
def _cosine_embedding_loss(c: Call):
    d = c.out_dtype
    x1, x2, t = c.t("input1", d), c.t("input2", d), c.t("target", d)
    axis = c.rank("input1") - 1
    eps = c.const(1e-12, d)
    prod = reduce(c, "ReduceSum", c.add("Mul", [x1, x2]), [axis], False)
    mag1 = c.add("Add", [reduce(c, "ReduceSum", c.add("Mul", [x1, x1]), [axis], False), eps])
    mag2 = c.add("Add", [reduce(c, "ReduceSum", c.add("Mul", [x2, x2]), [axis], False), eps])
    cos = c.add("Div", [prod, c.add("Sqrt", [c.add("Mul", [mag1, mag2])])])
    zero = c.const(0.0, d)
    pos = c.add("Where", [c.add("Equal", [t, c.const(1.0, d)]),
                          c.add("Sub", [c.const(1.0, d), cos]), zero])
    neg = c.add("Where", [c.add("Equal", [t, c.const(-1.0, d)]),
                          c.add("Max", [c.add("Sub", [cos, c.const(float(c.lit("margin", 0)),
                                                                   d)]), zero]), zero])
    return _reduced(c, c.add("Add", [pos, neg]), _reduction(c))


# -- class-index losses -------------------------------------------------------------------------

def _nll(c: Call, logp: str, d: str, reduction: str) -> str:
    """ONNX ``NegativeLogLikelihoodLoss`` of log-probabilities ``logp`` (class dim 1, or 0 for
    one unbatched sample) with the call's ``target``/``weight``/``ignore_index``."""
    rank = c.rank("input")
    target = c.t("target", "int64")
    if rank == 1:  # one sample: a batch of one
        logp, target = unsqueeze(c, logp, [0]), unsqueeze(c, target, [0])
    inputs = [logp, target] + ([c.t("weight", d)] if c.has("weight") else [])
    if c.opset < 12:
        loss = _nll_gathered(c, inputs, d, reduction, int(c.lit("ignore_index", -100)))
    else:
        loss = c.add("NegativeLogLikelihoodLoss", inputs, reduction=reduction,
                     ignore_index=int(c.lit("ignore_index", -100)))
    if rank == 1 and reduction == "none":
        loss = squeeze(c, loss, [0])
    return loss


def _nll_gathered(c: Call, inputs: list, d: str, reduction: str, ignore_index: int) -> str:
    """``NegativeLogLikelihoodLoss`` (opset 12) at opset 11, by the formula ONNX defines it
    by: ``-logp[n, t[n], ...] * w[t[n]]``, 0 where ``t == ignore_index``; the mean divides by
    the sum of the weights of the targets not ignored (NaN when all are, as PyTorch)."""
    logp, target, *weight = inputs
    kept = c.add("Not", [c.add("Equal", [target, c.i64(ignore_index)])])
    safe = c.add("Where", [kept, target, c.i64(0)])
    picked = squeeze(c, c.add("GatherElements", [logp, unsqueeze(c, safe, [1])], axis=1), [1])
    zero = c.const(0.0, d)
    w = c.add("Gather", [weight[0], safe], axis=0) if weight else \
        c.add("Expand", [c.const(1.0, d), c.b.shape_of(target)])
    w = c.add("Where", [kept, w, zero])
    loss = c.add("Neg", [c.add("Mul", [picked, w])])
    if reduction == "none":
        return loss
    total = reduce(c, "ReduceSum", loss, None, False)
    if reduction == "sum":
        return total
    return c.add("Div", [total, reduce(c, "ReduceSum", w, None, False)])


@mapping("nll_loss")
def _nll_loss(c: Call):
    d = c.out_dtype
    return _nll(c, c.t("input", d), d, _reduction(c))


@mapping("cross_entropy")
def _cross_entropy(c: Call):
    d = c.out_dtype
    rank = c.rank("input")
    axis = 0 if rank == 1 else 1
    logp = softmax_like(c, "LogSoftmax", c.t("input", d), axis, rank)
    reduction = _reduction(c)
    eps = float(c.lit("label_smoothing", 0.0))
    classes = c.shape("input")[axis]
    if c.dtype("target") in ("float16", "bfloat16", "float32", "float64"):
        return _probability_ce(c, logp, d, axis, reduction, eps, classes)
    nll = _nll(c, logp, d, reduction)
    if eps == 0:
        return nll
    if not isinstance(classes, int):
        raise Unsupported("label_smoothing with a dynamic number of classes")
    # PyTorch's smoothing term: -sum_c w_c logp_c per sample, 0 where the target is ignored
    weighted = c.add("Mul", [logp, _class_weight(c, d, rank, axis)]) if c.has("weight") \
        else logp
    smooth = c.add("Neg", [reduce(c, "ReduceSum", weighted, [axis], False)])
    target = c.t("target", "int64")
    ignored = c.add("Equal", [target, c.const(int(c.lit("ignore_index", -100)), "int64")])
    zero = c.const(0.0, d)
    smooth = c.add("Where", [ignored, zero, smooth])
    if reduction == "sum":
        smooth = reduce(c, "ReduceSum", smooth, None, False)
    elif reduction == "mean":
        if c.has("weight"):
            safe = c.add("Where", [ignored, c.const(0, "int64"), target])
            picked = c.add("Gather", [c.t("weight", d), safe], axis=0)
            denom = c.add("Where", [ignored, zero, picked])
        else:
            denom = c.add("Cast", [c.add("Not", [ignored])], to=_onnx_type(d))
        smooth = c.add("Div", [reduce(c, "ReduceSum", smooth, None, False),
                               reduce(c, "ReduceSum", denom, None, False)])
    return c.add("Add", [c.add("Mul", [nll, c.const(1.0 - eps, d)]),
                         c.add("Mul", [smooth, c.const(eps / classes, d)])])


def _class_weight(c: Call, d: str, rank: int, axis: int) -> str:
    """``weight`` ([C]) shaped to broadcast along the class axis."""
    w = c.t("weight", d)
    return unsqueeze(c, w, list(range(1, rank - axis))) if rank - axis > 1 else w


def _probability_ce(c: Call, logp: str, d: str, axis: int, reduction: str, eps: float,
                    classes) -> str:
    """Cross entropy against class probabilities: ``-sum_c w_c t_c logp_c`` per sample."""
    t = c.t("target", d)
    if eps:
        if not isinstance(classes, int):
            raise Unsupported("label_smoothing with a dynamic number of classes")
        t = c.add("Add", [c.add("Mul", [t, c.const(1.0 - eps, d)]),
                          c.const(eps / classes, d)])
    prod = c.add("Mul", [logp, t])
    if c.has("weight"):
        prod = c.add("Mul", [prod, _class_weight(c, d, c.rank("input"), axis)])
    loss = c.add("Neg", [reduce(c, "ReduceSum", prod, [norm_axis(axis, c.rank("input"))],
                                False)])
    return _reduced(c, loss, reduction)


# -- margin losses over classes, triplets -------------------------------------------------------

def _as_rows(c: Call, x: str, rank: int) -> str:
    """A ``[C]`` input as one row ``[1, C]``."""
    return unsqueeze(c, x, [0]) if rank == 1 else x


@mapping("multi_margin_loss")
def _multi_margin_loss(c: Call):
    """``sum_{j != y} max(0, margin - x[y] + x[j])**p * w[y] / C`` per sample."""
    d = c.out_dtype
    rank = c.rank("input")
    if rank not in (1, 2):
        raise Unsupported(f"multi_margin_loss of a {rank}-d input")
    classes = c.shape("input")[-1]
    if not isinstance(classes, int):
        raise Unsupported("multi_margin_loss with a dynamic number of classes")
    p = int(c.lit("p", 1))
    if p not in (1, 2):
        raise Unsupported("p other than 1 and 2")
    x = _as_rows(c, c.t("input", d), rank)                              # [N, C]
    t = c.add("Reshape", [c.t("target", "int64"), c.i64([-1, 1])])     # [N, 1]
    picked = c.add("GatherElements", [x, t], axis=1)
    z = c.add("Relu", [c.add("Add", [c.add("Sub", [x, picked]),
                                     c.const(float(c.lit("margin", 1.0)), d)])])
    if p == 2:
        z = c.add("Mul", [z, z])
    others = c.add("Not", [c.add("Equal", [t, c.i64(np.arange(classes)[None, :])])])
    z = c.add("Where", [others, z, c.const(0.0, d)])
    if c.has("weight"):
        z = c.add("Mul", [z, c.add("Gather", [c.t("weight", d), t], axis=0)])
    loss = c.add("Div", [reduce(c, "ReduceSum", z, [1], False), c.const(float(classes), d)])
    if rank == 1:
        loss = c.add("Reshape", [loss, c.i64([])])
    return _reduced(c, loss, _reduction(c))


@mapping("multilabel_margin_loss")
def _multilabel_margin_loss(c: Call):
    """``sum_{j in y, i not in y} max(0, 1 - (x[j] - x[i])) / C`` per sample, ``y`` the
    target's class indices before its first -1 (a repeated index counts each time)."""
    d = c.out_dtype
    rank = c.rank("input")
    if rank not in (1, 2):
        raise Unsupported(f"multilabel_margin_loss of a {rank}-d input")
    classes = c.shape("input")[-1]
    if not isinstance(classes, int):
        raise Unsupported("multilabel_margin_loss with a dynamic number of classes")
    x = _as_rows(c, c.t("input", d), rank)                               # [N, C]
    t = _as_rows(c, c.t("target", "int64"), rank)                        # [N, C]
    ended = c.add("CumSum", [c.add("Cast", [c.add("Equal", [t, c.i64(-1)])],
                                   to=onnx_type("int64")), c.i64(1)])
    valid = c.add("Equal", [ended, c.i64(0)])                            # [N, C]
    hit = c.add("And", [c.add("Equal", [unsqueeze(c, t, [2]),
                                        c.i64(np.arange(classes)[None, None, :])]),
                        unsqueeze(c, valid, [2])])                       # [N, p, class]
    count = reduce(c, "ReduceSum", c.add("Cast", [hit], to=onnx_type(d)), [1], False)
    absent = c.add("Cast", [c.add("Equal", [count, c.const(0.0, d)])], to=onnx_type(d))
    pair = c.add("Mul", [unsqueeze(c, count, [2]), unsqueeze(c, absent, [1])])  # [N, j, i]
    z = c.add("Relu", [c.add("Add", [c.add("Sub", [c.const(1.0, d), unsqueeze(c, x, [2])]),
                                     unsqueeze(c, x, [1])])])
    loss = c.add("Div", [reduce(c, "ReduceSum", c.add("Mul", [z, pair]), [1, 2], False),
                         c.const(float(classes), d)])
    if rank == 1:
        loss = c.add("Reshape", [loss, c.i64([])])
    return _reduced(c, loss, _reduction(c))


def _distance(c: Call, a: str, b: str, p: float, eps: float, rank: int, d: str) -> str:
    """``pairwise_distance``: the ``p``-norm of ``a - b + eps`` along the last axis."""
    from ._export_ops_linalg import vector_norm

    diff = c.add("Add", [c.add("Sub", [a, b]), c.const(eps, d)])
    if rank == 0:
        return c.add("Abs", [diff])
    return vector_norm(c, diff, p, [rank - 1], False, d)


@mapping("triplet_margin_loss", "nn.functional.triplet_margin_loss",
         "triplet_margin_with_distance_loss", "nn.functional.triplet_margin_with_distance_loss")
def _triplet_margin_loss(c: Call):
    """``max(d(a, p) - d(a, n) + margin, 0)``, ``d`` the pairwise ``p``-distance (the
    default distance of ``triplet_margin_with_distance_loss``: ``pairwise_distance``);
    ``swap`` uses ``min(d(a, n), d(p, n))``."""
    d = c.out_dtype
    if c.op.endswith("triplet_margin_with_distance_loss"):
        if c.p.get("distance_function") is not None:
            raise Unsupported("a distance_function other than the default "
                              "(pairwise_distance): a Python callable is not part of the "
                              "captured graph")
        p, eps = 2.0, 1e-6
    else:
        p, eps = float(c.lit("p", 2.0)), float(c.lit("eps", 1e-6))
    rank = max(c.rank("anchor"), c.rank("positive"), c.rank("negative"))
    a, pos, neg = c.t("anchor", d), c.t("positive", d), c.t("negative", d)
    d_pos = _distance(c, a, pos, p, eps, rank, d)
    d_neg = _distance(c, a, neg, p, eps, rank, d)
    if c.lit("swap", False):
        d_neg = c.add("Min", [d_neg, _distance(c, pos, neg, p, eps, rank, d)])
    loss = c.add("Relu", [c.add("Sub", [c.add("Add", [c.const(float(c.lit("margin", 1.0)), d),
                                                      d_pos]), d_neg])])
    return _reduced(c, loss, _reduction(c))
