"""Parity probes of ``ember.func`` and ``ember.autograd.forward_ad`` against PyTorch 2.13:
tangents whose dtype differs from their primal's, ``jacfwd(randomness=...)`` per column,
complex inputs/outputs of jacrev/jacfwd, argnums errors, a custom Function's jvp with
``mark_dirty``. Expected values are pinned (PyTorch's), so the tests run without torch."""

import pytest

import ember
from ember.autograd import forward_ad as fwAD
from ember.func import jacfwd, jacrev, jvp, vmap

F32, F64, F16, BF16, C64 = (ember.float32, ember.float64, ember.float16, ember.bfloat16,
                            ember.complex64)


def _dual_tangent(f, pd, td):
    with fwAD.dual_level():
        x = ember.tensor([[1., 2.], [3., 4.]], dtype=pd)
        d = fwAD.make_dual(x, ember.ones(2, 2, dtype=td))
        return fwAD.unpack_dual(f(d)).tangent


# (op, primal dtype, tangent dtype) -> PyTorch's output tangent dtype
_C = ember.ones(2, 2)
_OPS = {
    "neg": lambda x: -x, "sum": lambda x: x.sum(), "add1": lambda x: x + 1,
    "addT": lambda x: x + _C, "cat": lambda x: ember.cat([x, _C]), "mul2": lambda x: x * 2,
    "sin": ember.sin, "exp": ember.exp, "tof64": lambda x: x.double(), "abs": ember.abs,
    "view": lambda x: x.view(-1), "softmax": lambda x: x.softmax(-1),
}
_EXPECTED = {  # columns: (f32, f64), (f64, f32), (f32, f16), (f16, f32), (c64, f32), (f32, bf16)
    "neg": (F64, F32, F16, F32, F32, BF16), "sum": (F64, F32, F16, F32, F32, BF16),
    "add1": (F64, F32, F16, F32, F32, BF16), "addT": (F64, F32, F32, F32, F32, F32),
    "cat": (F64, F32, F32, F32, F32, F32), "mul2": (F64, F64, F32, F32, C64, F32),
    "sin": (F64, F64, F32, F32, C64, F32), "exp": (F64, F64, F32, F32, C64, F32),
    "tof64": (F64, F32, F64, F64, F64, F64), "abs": (F64, F64, F32, F32, F32, F32),
    "view": (F64, F32, F16, F32, F32, BF16), "softmax": (F64, F64, F32, F32, None, F32),
}
_PAIRS = [(F32, F64), (F64, F32), (F32, F16), (F16, F32), (C64, F32), (F32, BF16)]


@pytest.mark.parametrize("name", sorted(_OPS))
def test_mixed_tangent_dtype_follows_pytorch(name):
    for (pd, td), want in zip(_PAIRS, _EXPECTED[name]):
        if want is None:
            continue
        t = _dual_tangent(_OPS[name], pd, td)
        assert t.dtype == want, (name, pd, td, t.dtype)


def test_make_dual_keeps_tangent_object_and_values():
    with fwAD.dual_level():
        t = ember.ones(2, dtype=F64)
        d = fwAD.make_dual(ember.tensor([1., 2.]), t)
        assert fwAD.unpack_dual(d).tangent is t
        y = fwAD.unpack_dual(d * 3).tangent
        assert y.dtype == F64 and y.tolist() == [3.0, 3.0]


def test_jvp_mixed_dtypes():
    _, j = jvp(lambda x: x * 2, (ember.tensor([1., 2.]),), (ember.ones(2, dtype=F64),))
    assert j.dtype == F64 and j.tolist() == [2.0, 2.0]
    _, j = jvp(ember.sin, (ember.ones(2, dtype=F64),), (ember.ones(2),))
    assert j.dtype == F64
    _, j = jvp(lambda x: x * 2, (ember.tensor([1., 2.], dtype=BF16),), (ember.ones(2),))
    assert j.dtype == F32
    o, j = jvp(lambda x: x * 2, (ember.tensor([1 + 1j, 2], dtype=C64),), (ember.ones(2),))
    assert j.dtype == C64 and j.tolist() == [2 + 0j, 2 + 0j]
    # the double-vjp path (inside vmap, on inputs that require grad) promotes too
    _, j = vmap(lambda x, t: jvp(ember.sin, (x,), (t,)))(ember.ones(3, 2),
                                                           ember.ones(3, 2, dtype=F64))
    assert j.dtype == F64 and tuple(j.shape) == (3, 2)
    _, j = vmap(lambda x, t: jvp(lambda x: x * 2, (x,), (t,)))(ember.ones(3, 2, dtype=C64),
                                                                 ember.ones(3, 2))
    assert j.dtype == C64
    _, j = jvp(ember.sin, (ember.ones(2, requires_grad=True),), (ember.ones(2, dtype=F64),))
    assert j.dtype == F64 and j.requires_grad


def test_jvp_integer_primal_or_tangent_is_refused():
    with pytest.raises(ValueError, match="Expected tangent to be floating point or complex, "
                                         "but got: ember.int64"):
        jvp(lambda x: x, (ember.ones(2),), (ember.ones(2, dtype=ember.int64),))
    with pytest.raises(ValueError, match="Expected primal to be floating point"):
        jvp(lambda x: x, (ember.ones(2, dtype=ember.int64),), (ember.ones(2),))


def test_jvp_complex_forward_mode():
    x = ember.tensor([1 + 1j, 2 - 0.5j])
    _, j = jvp(ember.abs, (x,), (ember.tensor([1 + 0j, 0.5j]),))
    assert j.dtype == F32
    assert [round(v, 5) for v in j.tolist()] == [0.70711, -0.12127]


# -- jacfwd randomness: PyTorch's draws under the same seed -----------------------------------

def test_jacfwd_different_draws_one_batch_per_column():
    ember.manual_seed(0)
    J = jacfwd(lambda x: x * ember.rand(3), randomness="different")(ember.ones(3))
    assert [round(J[i, i].item(), 4) for i in range(3)] == [0.4963, 0.3074, 0.4556]
    assert [round(v, 4) for v in ember.rand(2).tolist()] == [0.6323, 0.3489]  # 9 drawn


def test_jacfwd_same_draws_once():
    ember.manual_seed(0)
    J = jacfwd(lambda x: x * ember.rand(3), randomness="same")(ember.ones(3))
    assert [round(J[i, i].item(), 4) for i in range(3)] == [0.4963, 0.7682, 0.0885]
    assert [round(v, 4) for v in ember.rand(2).tolist()] == [0.132, 0.3074]


def test_jacfwd_different_argnums_tuple_and_aux():
    ember.manual_seed(0)
    J = jacfwd(lambda x, y: x * y * ember.randn(2), argnums=(0, 1),
               randomness="different")(ember.ones(2), ember.ones(2))
    assert [round(J[0][i, i].item(), 4) for i in range(2)] == [1.541, 0.5684]
    assert [round(J[1][i, i].item(), 4) for i in range(2)] == [-1.0845, 0.838]
    ember.manual_seed(0)
    J, aux = jacfwd(lambda x: (x * 2, ember.rand_like(x)), randomness="different",
                    has_aux=True)(ember.zeros(3))
    assert tuple(J.shape) == (3, 3) and J.tolist() == (ember.eye(3) * 2).tolist()
    assert [round(v, 4) for v in aux.tolist()] == [0.4963, 0.7682, 0.0885]


def test_jacfwd_different_dropout_matches_pytorch():
    ember.manual_seed(0)
    J = jacfwd(lambda x: ember.nn.functional.dropout(x, 0.5), randomness="different")(
        ember.ones(4))
    assert J.diagonal().tolist() == [0.0, 0.0, 2.0, 2.0]


def test_jacfwd_random_error_mode():
    with pytest.raises(RuntimeError, match="called random operation while in randomness "
                                           "error mode"):
        jacfwd(lambda x: x * ember.rand(3))(ember.ones(3))


# -- errors --------------------------------------------------------------------------------------

@pytest.mark.parametrize("api", [jacfwd, jacrev])
def test_jacobians_refuse_complex(api):
    name = api.__name__
    with pytest.raises(RuntimeError, match=f"{name}: Expected all inputs to be real but "
                                           f"received complex tensor at flattened input idx: 1"):
        api(lambda x, y: x)(ember.ones(2), ember.ones(2, dtype=C64))
    with pytest.raises(RuntimeError, match=f"{name}: Expected all outputs to be real but "
                                           f"received complex tensor at flattened input idx: 0"):
        api(lambda x: x * 1j)(ember.ones(2))


def test_argnums_duplicate_message_is_normalized():
    with pytest.raises(RuntimeError, match=r"argnums elements must be unique, got \(0, 0\)"):
        jacrev(lambda x, y: x * y, argnums=(0, -2))(ember.ones(2), ember.ones(2))


def test_custom_function_jvp_with_mark_dirty():
    class F(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            x.mul_(2)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            t.mul_(2)
            return t

    with fwAD.dual_level():
        t = ember.ones(2)
        d = fwAD.make_dual(ember.tensor([1., 2.]), t)
        y = F.apply(d.clone())
        assert fwAD.unpack_dual(y).tangent.tolist() == [2.0, 2.0]
        assert t.tolist() == [1.0, 1.0]
