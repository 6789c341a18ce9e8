"""Parity probes of forward AD's tangent dtypes against PyTorch 2.13: a complex tangent on
a real primal, complex64 primals with complex128 tangents, float tangents of another
precision through selection and elementwise ops, ``mm`` with a tangent of another dtype, and
``jacfwd`` of integer outputs. Expected values are PyTorch's, pinned, so the tests run
without torch."""

import pytest

import ember
from ember.autograd import forward_ad as fwAD
from ember.func import jacfwd, jvp

F32, F64, C64, C128 = ember.float32, ember.float64, ember.complex64, ember.complex128
_T = [1 + 2j, 3 - 1j, 0.5 + 0.5j]


def _tangent(f, pd, td):
    with fwAD.dual_level():
        x = ember.tensor([1., 2., -0.5], dtype=pd)
        t = ember.tensor(_T if td.is_complex else [1., 3., .5]).to(td)
        return fwAD.unpack_dual(f(fwAD.make_dual(x, t))).tangent


_OPS = {
    "neg": lambda d: -d, "sin": ember.sin, "exp": ember.exp, "mul2": lambda d: d * 2,
    "mulT": lambda d: d * ember.ones(3), "sq": lambda d: d * d, "pow2": lambda d: d ** 2,
    "div": lambda d: d / 2, "rsub": lambda d: 1 - d, "abs": ember.abs, "sum": ember.sum,
    "clone": ember.clone, "tocd": lambda d: d.to(C128), "trace": lambda d: ember.diag(d).trace(),
    "add1": lambda d: d + 1, "prod": lambda d: d.prod(),
}
# op -> PyTorch's tangent dtype for (f32, c64), (c64, c128), (c128, c64), (c64, f64)
_EXPECTED = {
    "neg": (F32, C64, C128, F64), "sin": (F32, C64, C128, C64), "exp": (F32, C64, C128, C64),
    "mul2": (C64, C128, C128, C128), "mulT": (C64, C128, C128, C128),
    "sq": (C64, C128, C128, C128), "pow2": (F32, C64, C128, C64),
    "div": (C64, C128, C128, C128), "rsub": (F32, C64, C128, F64),
    "abs": (F32, F32, F64, F32), "sum": (C64, C128, C64, F64), "clone": (C64, C128, C64, F64),
    "tocd": (C128, C128, C64, C128), "trace": (C64, C128, C64, F64),
    "add1": (C64, C128, C64, F64), "prod": (F32, C64, C128, C64),
}
_PAIRS = [(F32, C64), (C64, C128), (C128, C64), (C64, F64)]


@pytest.mark.parametrize("name", sorted(_OPS))
def test_complex_tangent_dtypes_follow_pytorch(name):
    for (pd, td), want in zip(_PAIRS, _EXPECTED[name]):
        t = _tangent(_OPS[name], pd, td)
        assert t.dtype == want, (name, pd, td, t.dtype)


def test_complex_tangent_on_real_primal_keeps_imaginary_part():
    # linear and product ops push the real and imaginary parts through the real op
    assert _tangent(lambda d: d * 2, F32, C64).tolist() == [2 + 4j, 6 - 2j, 1 + 1j]
    assert _tangent(lambda d: d * d, F32, C64).tolist() == [2 + 4j, 12 - 4j, -0.5 - 0.5j]
    assert _tangent(lambda d: d.cumsum(0), F32, C64).tolist() == [1 + 2j, 4 + 1j, 4.5 + 1.5j]
    assert _tangent(lambda d: d + 1, F64, C64).tolist() == _T
    assert _tangent(lambda d: d.to(C64), F32, C64).tolist() == _T
    assert _tangent(lambda d: d * ember.full((3,), 1j), F32, C64).tolist() == [
        -2 + 1j, 1 + 3j, -0.5 + 0.5j]
    # elementwise auto_element_wise ops: the real part
    assert _tangent(lambda d: -d, F32, C64).tolist() == [-1., -3., -0.5]
    s = _tangent(ember.sin, F64, C64)
    assert s.dtype == F64 and s.tolist() == pytest.approx([0.5403023058681398,
                                                            -1.2484405096414273,
                                                            0.4387912809451864])


def test_complex64_primal_complex128_tangent_values():
    t = _tangent(ember.exp, C64, C128)
    assert t.dtype == C64
    assert t.tolist() == pytest.approx([2.7182817 + 5.4365635j, 22.167168 - 7.389056j,
                                        0.30326533 + 0.30326533j], rel=1e-5)


@pytest.mark.parametrize("expr,want", [
    ("d.clamp(0, 2)", F32), ("d.sign()", F32), ("d.floor()", F32), ("d.round()", F32),
    ("d.masked_fill(d > 2, 0.)", F32), ("d.sort(1)[0]", F32), ("d.topk(2)[0]", F32),
    ("d.cummax(1)[0]", F32), ("d.kthvalue(2)[0]", F32), ("d.median()", F32),
    ("ember.diag(d[0])", F32), ("d.logsumexp(1)", F64),
    ("ember.nn.functional.layer_norm(d, (3,))", F32), ("d.sin()", F64),
])
def test_float64_primal_float32_tangent(expr, want):
    with fwAD.dual_level():
        x = ember.tensor([[1., 2., 3.], [3., 4., -1.]], dtype=F64)
        f = eval("lambda d: " + expr)
        t = fwAD.unpack_dual(f(fwAD.make_dual(x, ember.ones(2, 3)))).tangent
    assert t.dtype == want


def test_float32_primal_float64_tangent_output_dtype_ops():
    c = ember.ones(2, 3)
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.ones(2, 3), ember.ones(2, 3, dtype=F64))
        assert fwAD.unpack_dual(d.logsumexp(1)).tangent.dtype == F32
        mse = ember.nn.functional.mse_loss(d, c)
        assert fwAD.unpack_dual(mse).tangent.dtype == F32


def test_mm_tangent_of_another_dtype_is_pytorchs_error():
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.ones(2, 3), ember.ones(2, 3, dtype=C64))
        with pytest.raises(RuntimeError, match=r"^expected m1 and m2 to have the same dtype, "
                           r"but got: float != c10::complex<float>$"):
            fwAD.unpack_dual(d @ d.T)
    with pytest.raises(RuntimeError, match=r"^expected m1 and m2 to have the same dtype, but "
                       r"got: double != float$"):
        jvp(lambda z: z @ ember.ones(3, 2), (ember.ones(4, 3),), (ember.ones(4, 3, dtype=F64),))


def test_jvp_complex_tangent_of_real_primal():
    out, t = jvp(lambda z: z * 2, (ember.ones(3),), (ember.full((3,), 1 + 1j),))
    assert out.dtype == F32 and t.dtype == C64 and t.tolist() == [2 + 2j] * 3
    _, t = jvp(ember.sin, (ember.ones(3, dtype=C64),), (ember.full((3,), 1 + 1j, dtype=C128),))
    assert t.dtype == C64


def test_jacfwd_integer_outputs_are_zeros_of_their_dtype():
    j = jacfwd(lambda a: (a > 0).long())(ember.arange(3.))
    assert j.dtype == ember.int64 and j.shape == (3, 3) and not j.any()
    jb = jacfwd(lambda a: a > 1)(ember.arange(3.))
    assert jb.dtype == ember.bool and jb.shape == (3, 3)
    j1, j2 = jacfwd(lambda a: (a * 2, a.argmax()))(ember.arange(3.))
    assert j1.dtype == F32 and j1.tolist() == [[2., 0, 0], [0, 2., 0], [0, 0, 2.]]
    assert j2.dtype == ember.int64 and j2.shape == (3,) and not j2.any()
    jc = jacfwd(lambda a: ember.ones(2, dtype=ember.int64))(ember.ones(2))
    assert jc.dtype == ember.int64 and jc.shape == (2, 2)
    jd = jacfwd(lambda a: a.long(), randomness="different")(ember.ones(2))
    assert jd.dtype == ember.int64 and jd.shape == (2, 2)
    j, aux = jacfwd(lambda a: (a * 2, a.long()), has_aux=True)(ember.arange(3.))
    assert j.dtype == F32 and aux.dtype == ember.int64
