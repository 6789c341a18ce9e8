"""Parity probes (round 2) of forward AD with a tangent whose dtype differs from its
primal's, against PyTorch 2.13: the errors PyTorch's formulas raise (mixed-dtype products,
convolutions, lerp, scatter-like ops, real-only kernels given a complex tangent) and the
tangent dtypes of selection, pooling, norm and ``auto_element_wise`` ops. Expected values are
PyTorch's, pinned, so the tests run without torch."""

import pytest

import ember
import ember.nn.functional as F
from ember.autograd import forward_ad as fwAD

F32, F64, C64 = ember.float32, ember.float64, ember.complex64


def _x(shape, dt, off=0.0):
    n = 1
    for s in shape:
        n *= s
    v = (ember.arange(n, dtype=F64) * 0.37 + 0.2 + off).sin() * 0.9 + 1.1
    return v.reshape(shape).to(dt)


def _tangent(expr, shape, pd, td):
    with fwAD.dual_level():
        x, o = _x(shape, pd), _x(shape, pd, 0.5)
        t = _x(shape, F64, 1.0)
        t = (t * (1 + 0.5j)).to(td) if td.is_complex else t.to(td)
        d = fwAD.make_dual(x, t)
        r = eval(expr, {"ember": ember, "F": F, "d": d, "o": o})
        return fwAD.unpack_dual(r).tangent


_ERRORS = [
    ("ember.addmm(o[:, :2], d, o.t())", (2, 3), F32, F64, RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: double != float"),
    ("ember.addmm(o[:, :2], d, o.t())", (2, 3), F64, F32, RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    ("ember.einsum('ij,kj->ik', d, o)", (2, 3), F32, F64, RuntimeError,
     "expected scalar type Double but found Float"),
    ("ember.einsum('ij,kj->ik', o, d)", (2, 3), F32, C64, RuntimeError,
     "expected scalar type Float but found ComplexFloat"),
    ("ember.baddbmm(o[:, :, :2], d, o.transpose(1, 2))", (2, 2, 3), F64, F32, RuntimeError,
     "expected scalar type Float but found Double"),
    ("ember.addmv(o[:, 0], d, o[0])", (2, 3), F32, F64, RuntimeError,
     "addmv input tensors must have the same dtype, but got Float, Double, and Float"),
    ("ember.tensordot(d, o, dims=([1], [1]))", (2, 3), F32, F64, RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: double != float"),
    ("ember.inner(d, o)", (3,), F64, F32, RuntimeError,
     "dot : expected both vectors to have same dtype, but found Float and Double"),
    ("F.linear(o, d)", (2, 3), F64, F32, RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: double != float"),
    ("F.linear(d, o)", (2, 3), F32, C64, RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: c10::complex<float> != float"),
    ("F.conv1d(d, o[:, :, :3].expand(3, 2, 3).contiguous())", (1, 2, 5), F32, F64,
     RuntimeError, "expected scalar type Double but found Float"),
    ("F.conv2d(o.reshape(1, 2, 4, 3), d)", (3, 2, 2, 2), F32, F64, RuntimeError,
     "expected scalar type Float but found Double"),
    ("F.conv2d(o.reshape(1, 2, 4, 3), d)", (3, 2, 2, 2), F32, C64, RuntimeError,
     "expected scalar type Float but found ComplexFloat"),
    ("F.conv1d(d, o[:, :, :3].expand(3, 2, 3).contiguous())", (1, 2, 5), F32, C64,
     NotImplementedError, "\"slow_conv2d_cpu\" not implemented for 'ComplexFloat'"),
    ("ember.lerp(d, o, 0.3)", (3,), F32, F64, RuntimeError,
     "expected dtype double for `end` but got dtype float"),
    ("ember.lerp(o, d, 0.3)", (3,), F32, C64, RuntimeError,
     "expected dtype float for `end` but got dtype c10::complex<float>"),
    ("F.gelu(d)", (3,), F32, F64, RuntimeError,
     "itensor_view_from_dense expects float/bfloat16/half/int8/fp8 tensor inputDouble"),
    ("F.logsigmoid(d)", (3,), F32, F64, RuntimeError,
     "Found dtype Double but expected Float"),
    ("F.glu(d)", (2, 4), F64, F32, RuntimeError, "Found dtype Float but expected Double"),
    ("F.huber_loss(d, o)", (2, 3), F32, C64, RuntimeError,
     "Found dtype ComplexFloat but expected Float"),
    ("F.binary_cross_entropy(d.sigmoid(), o / 3)", (2, 3), F32, F64, RuntimeError,
     "Found dtype Float but expected Double"),
    ("o.scatter(1, ember.tensor([[0], [2]]), d[:, :1])", (2, 3), F32, F64, RuntimeError,
     "scatter(): Expected self.dtype to be equal to src.dtype"),
    ("o.index_add(0, ember.tensor([1]), d[:1])", (2, 3), F64, F32, RuntimeError,
     "index_add_(): self (Double) and source (Float) must have the same scalar type"),
    ("o.index_put((ember.tensor([1]),), d[0])", (2, 3), F32, F64, RuntimeError,
     "Index put requires the source and destination dtypes match, got Float for the "
     "destination and Double for the source."),
    ("o.masked_scatter(o > 1.1, d)", (2, 3), F32, F64, RuntimeError,
     "masked_scatter: expected self and source to have same dtypes but gotFloat and Double"),
    ("F.relu(d)", (3,), F32, C64, NotImplementedError,
     "\"threshold_cpu\" not implemented for 'ComplexFloat'"),
    ("F.layer_norm(d, (3,))", (2, 3), F32, C64, RuntimeError,
     "result type ComplexFloat can't be cast to the desired output type Float"),
    ("d.softmax(1)", (2, 3), F32, C64, RuntimeError,
     "result type ComplexFloat can't be cast to the desired output type Float"),
]


@pytest.mark.parametrize("expr,shape,pd,td,exc,msg", _ERRORS)
def test_mixed_dtype_tangent_errors_are_pytorchs(expr, shape, pd, td, exc, msg):
    with pytest.raises(exc) as info:
        _tangent(expr, shape, pd, td)
    assert str(info.value) == msg


_DTYPES = [
    # linear in the tangent: the tangent's dtype
    ("d.max(1)[0]", (2, 3), F64, F32, F32), ("d.masked_select(o > 1.1)", (2, 3), F64, F32, F32),
    ("d.take(ember.tensor([4, 1]))", (2, 3), F64, F32, F32),
    ("F.batch_norm(d, None, None, training=True)", (4, 3), F64, F32, F32),
    ("F.group_norm(d, 2)", (2, 4, 3), F64, F32, F32),
    ("F.nll_loss(d, ember.tensor([0, 2]))", (2, 3), F64, F32, F32),
    ("F.avg_pool1d(d, 2)", (1, 2, 4), F64, F32, F32),
    ("F.max_pool1d(d, 2)", (1, 2, 4), F64, F32, F32),
    ("F.interpolate(d, scale_factor=2)", (1, 1, 3), F64, F32, F32),
    ("F.embedding(ember.tensor([1, 3]), d)", (4, 3), F64, F32, F32),
    ("ember.fmod(d, 0.7)", (3,), F64, F32, F32), ("d.nansum()", (2, 3), F64, F32, F32),
    # the output's dtype
    ("d.cumprod(1)", (2, 3), F32, F64, F32), ("d.logcumsumexp(1)", (2, 3), F32, F64, F32),
    ("F.smooth_l1_loss(d, o)", (2, 3), F32, F64, F32), ("d.sgn()", (3,), F32, F64, F32),
    ("d.angle()", (3,), F32, F64, F32),
    # layer_norm's tangent: its input's tangent's dtype, or its input's
    ("F.layer_norm(o, (3,), d[0], d[1])", (2, 3), F32, F64, F32),
    ("F.layer_norm(d, (3,))", (2, 3), F32, F64, F64),
    # a real input's complex tangent through a nonlinear formula: real, the output's dtype
    ("2 / d", (3,), F32, C64, F32), ("d.sign()", (3,), F32, C64, F32),
    ("F.silu(d)", (3,), F32, C64, F32), ("d.erf()", (3,), F32, C64, F32),
    ("d ** o", (3,), F32, C64, F32), ("d.prod(0)", (3,), F32, C64, F32),
    ("d.std()", (3,), F32, C64, F32), ("d.norm()", (3,), F32, C64, F32),
    # ... and through a linear one: complex
    ("d * o", (3,), F32, C64, C64), ("d / 2", (3,), F32, C64, C64),
]


@pytest.mark.parametrize("expr,shape,pd,td,want", _DTYPES)
def test_mixed_dtype_tangent_dtypes_follow_pytorch(expr, shape, pd, td, want):
    assert _tangent(expr, shape, pd, td).dtype == want


def test_reciprocal_of_number_takes_real_part_of_complex_tangent():
    # PyTorch: 2 / d is reciprocal(d) * 2, whose tangent is -2 Re(t) / d**2
    t = _tangent("2 / d", (3,), F32, C64)
    x, tr = _x((3,), F64), _x((3,), F64, 1.0)
    want = (-2 * tr / x ** 2).tolist()
    assert t.tolist() == pytest.approx(want, rel=1e-5)


def test_same_dtype_tangents_unaffected():
    t = _tangent("ember.einsum('ij,kj->ik', d, o)", (2, 3), F32, F32)
    assert t.dtype == F32
    t = _tangent("F.conv1d(d, o[:, :, :3].expand(3, 2, 3).contiguous())", (1, 2, 5), F64, F64)
    assert t.dtype == F64
