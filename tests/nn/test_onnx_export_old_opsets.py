"""ember.onnx.export at opsets 11 and 12, which old ``torch.onnx.export`` scripts still ask for.

The mappings write opset 13's forms; below 13 the exporter writes what the requested opset
defines: ReduceSum/Squeeze/Unsqueeze axes and Split sizes as attributes, Softmax-like ops over
a dim that is not the last one moved there (they flatten to 2-d before 13), and at opset 11
the operators added in 12 (GreaterOrEqual/LessOrEqual, Celu, NegativeLogLikelihoodLoss,
ArgMax's select_last_index, Einsum inside tensordot and bilinear) as their formulas, integer
Max/Min/Clip as ``Where``. Each model passes ``onnx.checker`` (full check) and ONNX's strict
shape inference at the declared opset, runs in onnxruntime and matches Ember's eager outputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from testutils import onnx_compare, onnx_run  # noqa: E402

from ember.onnx import UnsupportedOperatorError  # noqa: E402
from ember.onnx import export as onnx_export  # noqa: E402

RNG = np.random.default_rng(11)
TOL = {"rtol": 1e-4, "atol": 1e-5}
OLD = [11, 12]


def randn(*shape):
    return ember.tensor(RNG.standard_normal(shape).astype(np.float32))


def compare(fn, args, opset, **tol):
    """``fn`` exported at ``opset``, checked, run and compared (testutils.onnx_compare); the
    model declares that opset and uses no operator version newer than it."""
    if isinstance(fn, nn.Module):
        fn.eval()
    proto, _ = onnx_compare(fn, args, opset=opset, **(tol or TOL))
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", opset)]
    for node in proto.graph.node:
        schema = onnx.defs.get_schema(node.op_type, max_inclusive_version=opset)
        assert schema.since_version <= opset, node.op_type
    return proto


class Calling(nn.Module):
    """``call(module, *inputs)`` as a module, so the capture sees ``module``'s weights."""

    def __init__(self, module, call):
        super().__init__()
        self.module, self.call = module.eval(), call

    def forward(self, *inputs):
        return self.call(self.module, *inputs)


def op_types(proto) -> list:
    return [n.op_type for n in proto.graph.node]


# -- models ---------------------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 4))

    def forward(self, x):
        return self.net(x).log_softmax(-1)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8),
                                      nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 4, 3),
                                      nn.ReLU())
        self.head = nn.Linear(4 * 2 * 2, 5)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def _trained_bn(model):
    """Running statistics that are not the identity, so eval-mode batch norm is tested."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(randn(m.num_features) * 0.1)
            m.running_var.copy_(randn(m.num_features).abs() + 0.5)
    return model


@pytest.mark.parametrize("opset", OLD)
def test_mlp(opset):
    compare(MLP(), (randn(3, 6),), opset)


@pytest.mark.parametrize("opset", OLD)
def test_small_cnn(opset):
    compare(_trained_bn(SmallCNN()), (randn(2, 3, 8, 8),), opset)


@pytest.mark.parametrize("opset", OLD)
def test_small_cnn_with_a_dynamic_batch_runs_at_other_sizes(opset):
    model = _trained_bn(SmallCNN()).eval()
    proto = onnx_export(model, (randn(2, 3, 8, 8),), opset_version=opset,
                        dynamic_axes={"x": {0: "batch"}, "output_0": {0: "batch"}})
    onnx.checker.check_model(proto, full_check=True)
    x = randn(5, 3, 8, 8)
    with ember.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(onnx_run(proto, x)[0], want, **TOL)


@pytest.mark.parametrize("opset", OLD)
@pytest.mark.parametrize("rnn", ["lstm", "gru"])
def test_recurrent_layers(rnn, opset):
    ember.manual_seed(1)
    model = nn.LSTM(4, 6, num_layers=2, bidirectional=True) if rnn == "lstm" else \
        nn.GRU(4, 6, batch_first=True)

    def flat(model, x):
        out, state = model(x)
        return (out, *state) if rnn == "lstm" else (out, state)

    compare(Calling(model, flat), (randn(5, 2, 4),), opset)


@pytest.mark.parametrize("opset", OLD)
def test_transformer_encoder_layer(opset):
    ember.manual_seed(2)
    layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True)
    mask = ember.tensor(np.array([[False] * 5, [False] * 3 + [True] * 2]))
    compare(Calling(layer, lambda m, x, pad: m(x, src_key_padding_mask=pad)),
            (randn(2, 5, 16), mask), opset, rtol=1e-4, atol=1e-4)


# -- what changed at opset 13 ---------------------------------------------------------------------

def _softmaxes(x):
    return (x.softmax(1), x.log_softmax(0), F.softmin(x, 1), x.softmax(-1), x[0, 0].softmax(0),
            F.cross_entropy(x, x.softmax(1)))


@pytest.mark.parametrize("opset", OLD)
def test_softmax_over_a_dim_that_is_not_the_last(opset):
    proto = compare(_softmaxes, (randn(2, 3, 4),), opset)
    softmax = [n for n in proto.graph.node if n.op_type in ("Softmax", "LogSoftmax")]
    assert softmax and all(n.attribute[0].i in (-1, 2) for n in softmax[:3])
    assert "Transpose" in op_types(proto)


def _axes_ops(x):
    a, b = x.chunk(2, 1)
    c, d, e = x.split([1, 2, 1], 1)
    return (x.unsqueeze(1), x[:, :1].squeeze(1), x.unsqueeze(-1).squeeze(-1), a, b, c, d, e,
            x.sum(1), x.sum((0, 2)), x.mean(1, keepdim=True), x.mean((0, 1)), x.sum(),
            ember.stack(x.unbind(2), 0), x.amax(2), x.prod(0))


@pytest.mark.parametrize("opset", OLD)
def test_axes_and_split_sizes_are_attributes(opset):
    proto = compare(_axes_ops, (randn(2, 4, 3),), opset)
    for node in proto.graph.node:
        if node.op_type in ("ReduceSum", "Squeeze", "Unsqueeze", "Split"):
            assert len(node.input) == 1, (node.op_type, list(node.input))
    names = {o for n in proto.graph.node for o in n.input} | {o.name for o in proto.graph.output}
    assert all(n.output[0] in names for n in proto.graph.node if n.op_type == "Constant")


def _dynamic_split(x):
    a, b = x.split([x.shape[0] - 1, 1], 0)
    return a * 2, b, x.sum(0, keepdim=True).squeeze(0)


@pytest.mark.parametrize("opset", OLD)
def test_split_sizes_computed_at_run_time_become_slices(opset):
    proto = onnx_export(_dynamic_split, (randn(4, 3),), opset_version=opset,
                        dynamic_axes={"x": {0: "n"}})
    onnx.checker.check_model(proto, full_check=True)
    assert "Split" not in op_types(proto) and op_types(proto).count("Slice") == 2
    x = randn(6, 3)
    with ember.no_grad():
        want = [t.numpy() for t in _dynamic_split(x)]
    for got, expected in zip(onnx_run(proto, x), want, strict=True):
        np.testing.assert_allclose(got, expected, **TOL)


def _comparisons(x, y):
    return (x >= y, x <= y, x >= 0.5, ember.ge(x, y), ember.le(y, 0.0), x.clamp(-0.5, 0.5),
            F.celu(x, 0.5), F.celu(x), ember.maximum(x, y), x.argmax(1), x.argmin(0))


@pytest.mark.parametrize("opset", OLD)
def test_comparisons_celu_and_argmax(opset):
    x, y = randn(4, 5), randn(4, 5)
    x.numpy()[0, :2] = np.nan  # >= and <= are False at NaN (not Not(Less))
    y.numpy()[1, 3] = x.numpy()[1, 3]  # and True at equal values
    proto = compare(_comparisons, (x, y), opset)
    fused = {"GreaterOrEqual", "LessOrEqual", "Celu"} & set(op_types(proto))
    assert fused == (set() if opset == 11 else {"GreaterOrEqual", "LessOrEqual", "Celu"})


def _integers(a, b):
    return (a.clamp(-2, 3), a.clamp(min=0), ember.maximum(a, b), ember.minimum(a, b), a ** 2,
            a.max(1).values, b.amin(0))


@pytest.mark.parametrize("opset", OLD)
def test_integer_max_min_clip_and_pow(opset):
    a = ember.tensor(RNG.integers(-6, 6, (3, 4)))
    b = ember.tensor(RNG.integers(-6, 6, (3, 4)))
    proto = compare(_integers, (a, b), opset)
    assert ("Clip" in op_types(proto)) == (opset == 12)


@pytest.mark.parametrize("dtype", [ember.int8, ember.uint8])
@pytest.mark.parametrize("opset", OLD)
def test_byte_reductions(opset, dtype):
    # ReduceMax/ReduceMin take int8 and uint8 from opset 12: at 11 they reduce in int32
    low = -100 if dtype == ember.int8 else 0
    a = ember.tensor(RNG.integers(low, 100, (3, 5))).to(dtype)
    proto = compare(lambda t: (t.amax(1), t.amin(0, keepdim=True), t.max(1).values,
                               t.min(), t.max()), (a,), opset)
    assert ("Cast" in op_types(proto)) == (opset == 11)


@pytest.mark.parametrize("opset", OLD)
def test_double_clamp_keeps_nan(opset):
    x = ember.tensor(np.array([-3.0, np.nan, 0.25, 7.0]))
    compare(lambda t: (t.clamp(-1.0, 1.0), t.clamp(max=0.0)), (x,), opset)


def _losses(x, y, w):
    yi = ember.where(y == 1, ember.full_like(y, -100), y)
    return (F.cross_entropy(x, y), F.cross_entropy(x, yi, weight=w, reduction="none"),
            F.cross_entropy(x, yi, weight=w), F.nll_loss(x.log_softmax(1), y, reduction="sum"),
            F.cross_entropy(x[0], y[0]), F.cross_entropy(x, y, label_smoothing=0.1))


@pytest.mark.parametrize("opset", OLD)
def test_class_losses(opset):
    proto = compare(_losses, (randn(6, 4), ember.tensor(RNG.integers(0, 4, 6)),
                              randn(4).abs() + 0.5), opset)
    assert ("NegativeLogLikelihoodLoss" in op_types(proto)) == (opset == 12)


def test_fractional_max_pool_picks_the_last_nan_at_opset_11():
    x = ember.tensor(RNG.integers(0, 3, (1, 2, 9, 9)).astype(np.float32))
    x.numpy()[0, 0, 1, 1] = np.nan
    x.numpy()[0, 0, 1, 2] = np.nan  # two NaNs in a window: the last one (select_last_index)
    s = ember.tensor(RNG.random((1, 2, 2)).astype(np.float32))
    compare(lambda x, s: F.fractional_max_pool2d(x, 3, output_size=4, _random_samples=s,
                                                 return_indices=True), (x, s), 11)


def test_integer_loops_at_opset_11():
    a = ember.tensor(RNG.integers(-40, 40, 12))
    b = ember.tensor(RNG.integers(-40, 40, 12))
    compare(lambda a, b: (ember.gcd(a, b), ember.lcm(a, b)), (a, b), 11)


@pytest.mark.parametrize("opset", OLD)
def test_interpolate_gives_resize_its_roi_and_scales(opset):
    x = randn(1, 2, 4, 5)
    compare(lambda x: (F.interpolate(x, scale_factor=2), F.interpolate(x, size=(3, 7),
                                                                        mode="bilinear")),
            (x,), opset)


# -- einsum and the ops that use it ---------------------------------------------------------------

def test_einsum_at_opset_12():
    proto = compare(lambda a, b: ember.einsum("bij,bjk->bik", a, b),
                    (randn(2, 3, 4), randn(2, 4, 5)), 12)
    assert op_types(proto) == ["Einsum"]


def test_einsum_needs_opset_12():
    with pytest.raises(UnsupportedOperatorError,
                       match=r"einsum needs opset >= 12 \(requested 11\)"):
        onnx_export(lambda a, b: ember.einsum("ij,jk->ik", a, b), (randn(2, 3), randn(3, 4)),
                    opset_version=11)


@pytest.mark.parametrize("opset", OLD)
def test_tensordot_and_bilinear_without_einsum_at_opset_11(opset):
    ember.manual_seed(3)

    def fn(bilinear, a, b, c, x1, x2):
        return (ember.tensordot(a, b, dims=2), ember.tensordot(a, c, dims=([0, 2], [1, 0])),
                bilinear(x1, x2), bilinear(x1[0], x2[0]))

    inputs = (randn(4, 3, 2), randn(3, 2, 5), randn(2, 4, 3), randn(2, 3), randn(2, 4))
    proto = compare(Calling(nn.Bilinear(3, 4, 5), fn), inputs, opset)
    assert ("Einsum" in op_types(proto)) == (opset == 12)


# -- refusals -------------------------------------------------------------------------------------

def test_opset_10_is_refused_naming_the_range():
    with pytest.raises(ValueError, match="Unsupported ONNX opset version: 10. Supported opset "
                                         "versions are 11 to 21"):
        onnx_export(MLP(), (randn(2, 6),), opset_version=10)


def test_bfloat16_needs_opset_13():
    model = nn.Linear(3, 2).to(ember.bfloat16)
    with pytest.raises(UnsupportedOperatorError, match=r"bfloat16 .*needs opset >= 13, "
                                                       r"requested 11"):
        onnx_export(model, (randn(2, 3).to(ember.bfloat16),), opset_version=11)


def test_dropout_in_training_mode_needs_opset_12():
    def fn(x):
        return F.dropout(x, 0.5, training=True)

    with pytest.raises(UnsupportedOperatorError, match=r"dropout in training mode .*needs "
                                                       r"opset >= 12, requested 11"):
        onnx_export(fn, (randn(64, 64),), opset_version=11)
    proto = onnx_export(fn, (randn(64, 64),), opset_version=12)
    onnx.checker.check_model(proto, full_check=True)
    out = onnx_run(proto, ember.ones(64, 64))[0]
    assert set(np.unique(out)) == {0.0, 2.0}


def test_a_newer_operator_is_refused_with_its_opset():
    with pytest.raises(UnsupportedOperatorError, match=r"triu needs opset >= 14 "
                                                       r"\(requested 12\)"):
        onnx_export(lambda x: ember.triu(x), (randn(3, 3),), opset_version=12)
