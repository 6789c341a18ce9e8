"""Complex dtypes: promotion, creation, printing, the complex ops, autograd under PyTorch's
conjugate Wirtinger convention (gradcheck in complex128 for every op that supports complex
autograd), checkpoints and safetensors."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.autograd.graph import HOLOMORPHIC
from ember.ops.opdb import entry, load_all
from ember.ops.registry import OPS

C64, C128 = ember.complex64, ember.complex128
ALL = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64,
       ember.float16, ember.bfloat16, ember.float32, ember.float64, C64, C128]


def z(values, dtype=C128, **kw):
    return ember.tensor(values, dtype=dtype, **kw)


# -- dtypes ------------------------------------------------------------------------------------

def test_dtype_objects():
    assert ember.cfloat is C64 and ember.cdouble is C128
    assert C64.is_complex and not C64.is_floating_point and C64.is_signed
    assert C64.itemsize == 8 and C128.itemsize == 16
    assert C64.to_real() is ember.float32 and C128.to_real() is ember.float64
    assert ember.float64.to_complex() is C128 and ember.float32.to_complex() is C64
    assert C64.to_complex() is C64 and ember.float32.to_real() is ember.float32
    with pytest.raises(RuntimeError, match="Unknown Complex ScalarType for Long"):
        ember.int64.to_complex()
    assert repr(C64) == "ember.complex64"
    assert ember.finfo(C64).eps == ember.finfo(ember.float32).eps
    with pytest.raises(TypeError, match="iinfo"):
        ember.iinfo(C64)
    assert not ember.can_cast(C64, ember.float64) and ember.can_cast(ember.float64, C64)


@pytest.mark.parametrize("a, b, expected", [
    (C64, ember.float64, C128), (C64, ember.float32, C64), (C64, ember.float16, C64),
    (C64, ember.bfloat16, C64), (C128, ember.float32, C128), (C64, C128, C128),
    (C64, ember.int64, C64), (ember.bool, C128, C128), (ember.uint8, C64, C64),
])
def test_promote_types(a, b, expected):
    assert ember.promote_types(a, b) is expected
    assert ember.promote_types(b, a) is expected


def test_promotion_matches_pytorch():
    torch = pytest.importorskip("torch")
    for a, b in itertools.product(ALL, ALL):
        if {a, b} & {C64, C128}:
            expected = torch.promote_types(getattr(torch, a.name), getattr(torch, b.name))
            assert ember.promote_types(a, b).name == str(expected)[6:], (a, b)


def test_python_complex_scalars():
    assert ember.tensor([1 + 2j]).dtype is C64
    assert ember.tensor([1, 2.5, 1j]).dtype is C64
    assert (ember.ones(2) * 1j).dtype is C64
    assert (ember.ones(2, dtype=ember.float64) + 1j).dtype is C128
    assert (ember.arange(3) * 1j).dtype is C64
    assert (z([1j], C64) * 2.0).dtype is C64
    assert (z([1j], C64) * ember.ones(1, dtype=ember.float64)).dtype is C128
    # float16 meets a complex number at complex32, bfloat16 at complex64 (PyTorch's)
    assert ember.result_type(ember.ones(2, dtype=ember.float16), 1j) is ember.complex32
    assert ember.result_type(ember.ones(2, dtype=ember.bfloat16), 1j) is C64
    prev = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor([1j]).dtype is C128
        assert (ember.ones(2, dtype=ember.float32) * 1j).dtype is C64
    finally:
        ember.set_default_dtype(prev)
    np.testing.assert_allclose((ember.ones(2) * (1 - 2j)).numpy(), [1 - 2j, 1 - 2j])


def test_creation():
    a = np.array([[1 + 2j, -3j]], dtype=np.complex64)
    t = ember.from_numpy(a)
    assert t.dtype is C64 and t.is_complex() and ember.is_complex(t)
    assert not ember.ones(1).is_complex()
    assert ember.zeros(2, 3, dtype=C128).dtype is C128
    assert ember.full((2,), 1 + 1j).dtype is C64
    np.testing.assert_array_equal(ember.ones(2, dtype=C64).numpy(), [1, 1])
    assert z([1j]).is_signed()
    assert ember.ones(2).to(C64).dtype is C64
    with pytest.warns(UserWarning, match="Casting complex values to real discards the "
                                         "imaginary part"):
        r = z([1 + 2j]).to(ember.float32)
    assert r.tolist() == [1.0]


def test_requires_grad():
    t = z([1j], requires_grad=True)
    assert t.requires_grad
    assert z([1j]).requires_grad_().requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can "
                                           "require gradients"):  # PyTorch's text here
        ember.ones(2, dtype=ember.int64).requires_grad_()
    with pytest.raises(RuntimeError, match="floating point and complex dtype"):
        ember.ones(2, dtype=ember.int64, requires_grad=True)


@pytest.mark.parametrize("values, dtype", [
    ([1 + 2j, 3 - 1j], C64), ([[0.5 + 1e-5j, -2j], [3.25, 1e9 + 1j]], C64),
    ([1 + 2j, float("nan") + 1j, float("inf") - 2j], C128), ([0j], C128), ([], C64),
    ([[1.123456 + 2j]], C128), (3 + 4j, C64),
])
def test_repr_matches_pytorch(values, dtype):
    torch = pytest.importorskip("torch")
    ours = repr(z(values, dtype, device="cpu"))
    theirs = repr(torch.tensor(values, dtype=getattr(torch, dtype.name)))
    assert ours == theirs.replace("torch.", "ember.")


# -- the complex ops ---------------------------------------------------------------------------

def test_real_and_imag_are_views():
    t = z([1 + 2j, 3 - 4j])
    re, im = t.real, t.imag
    assert re.dtype is ember.float64 and im.tolist() == [2.0, -4.0]
    re[0] = 10.0
    im.mul_(2)
    assert t.tolist() == [10 + 4j, 3 - 8j]
    t.imag = ember.zeros(2, dtype=ember.float64)
    assert t.tolist() == [10 + 0j, 3 + 0j]
    x = ember.ones(2)
    assert x.real is x and ember.real(x) is x
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                           "non-complex dtypes."):
        _ = x.imag


def test_view_as_real_and_complex():
    t = z([[1 + 2j, 3 - 4j], [5j, -1]], C64)
    r = ember.view_as_real(t)
    assert r.shape == (2, 2, 2) and r.dtype is ember.float32
    np.testing.assert_array_equal(r.numpy(), np.stack([t.numpy().real, t.numpy().imag], -1))
    r[0, 0, 1] = 7
    assert t[0, 0].item() == 1 + 7j
    c = ember.view_as_complex(r)
    assert c.dtype is C64 and c.tolist() == t.tolist()
    c[1, 1] = 2j
    assert r[1, 1].tolist() == [0.0, 2.0]
    col = t[:, 1]  # a strided view: view_as_real keeps its strides
    np.testing.assert_array_equal(ember.view_as_real(col).numpy(),
                                  [[3, -4], [0, 2]])
    assert ember.view_as_real(z(1 + 2j)).tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex"):
        ember.view_as_real(ember.ones(2))
    with pytest.raises(RuntimeError, match="Tensor must have a last dimension of size 2"):
        ember.view_as_complex(ember.ones(2, 3))
    with pytest.raises(RuntimeError, match="Tensor must have a last dimension with stride 1"):
        ember.view_as_complex(ember.ones(2, 4)[:, ::2])
    with pytest.raises(RuntimeError, match="only supported for half, float and double"):
        ember.view_as_complex(ember.ones(2, 2, dtype=ember.int64))


def test_pointwise_values_match_numpy():
    a = np.array([1 + 2j, -0.5 + 0.25j, 3 - 1j, -2j])
    t = z(a)
    for name, ref in [("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("sin", np.sin),
                      ("cos", np.cos), ("tanh", np.tanh), ("abs", np.abs),
                      ("angle", np.angle), ("conj", np.conj), ("reciprocal", np.reciprocal),
                      ("square", np.square), ("neg", np.negative)]:
        np.testing.assert_allclose(getattr(ember, name)(t).numpy(), ref(a), rtol=1e-12,
                                   err_msg=name)
    np.testing.assert_allclose(t.sgn().numpy(), a / np.abs(a))
    assert z([0j]).sgn().tolist() == [0j]
    np.testing.assert_allclose((t * t).numpy(), a * a)
    np.testing.assert_allclose((t / (t + 1)).numpy(), a / (a + 1))
    np.testing.assert_allclose((t @ t).numpy(), a @ a)
    np.testing.assert_allclose(t.sum().numpy(), a.sum())
    np.testing.assert_allclose(ember.angle(ember.tensor([-1.0, 0.0, 2.0])).numpy(),
                               [np.pi, 0, 0], rtol=1e-6)


def test_polar_and_complex():
    r = ember.tensor([1.0, 2.0], dtype=ember.float64)
    th = ember.tensor([0.0, np.pi / 2], dtype=ember.float64)
    np.testing.assert_allclose(ember.polar(r, th).numpy(), [1, 2j], atol=1e-15)
    c = ember.complex(r, th)
    assert c.dtype is C128 and c.tolist() == [1 + 0j, 2 + np.pi / 2 * 1j]
    assert ember.complex(ember.ones(2, 1), ember.zeros(3)).shape == (2, 3)
    with pytest.raises(RuntimeError, match="Expected object of scalar type Double but got "
                                           "scalar type Float"):
        ember.complex(r, ember.ones(2))
    with pytest.raises(RuntimeError, match="Half, Float or Double"):
        ember.complex(ember.ones(2, dtype=ember.int64), ember.ones(2, dtype=ember.int64))


def test_conj_is_an_honest_copy():
    t = z([1 + 2j])
    c = t.conj()
    assert c.tolist() == [1 - 2j] and not c.is_conj() and c.resolve_conj() is c
    c[0] = 0
    assert t.tolist() == [1 + 2j]  # a copy, documented (PyTorch's conj is a lazy view)
    x = ember.ones(2)
    assert x.conj() is x
    assert z([[1j, 2]]).mH.tolist() == [[-1j], [2]]


# -- autograd ----------------------------------------------------------------------------------

#: every registered op whose complex autograd ember claims (holomorphic/linear ones through
#: graph.HOLOMORPHIC, the rest with their own complex backward), with how to call it
COMPLEX_GRAD_OPS = [
    "add", "sub", "mul", "div", "neg", "exp", "expm1", "log", "log2", "log10", "log1p",
    "sqrt", "rsqrt", "reciprocal", "square", "sin", "cos", "tan", "sinh", "cosh", "tanh",
    "sigmoid", "mm", "bmm", "mv", "dot", "matmul", "addmm", "sum", "mean", "reshape", "t",
    "transpose", "permute", "squeeze", "unsqueeze", "flip", "roll", "cat", "stack",
    "clone", "narrow", "diagonal", "cumsum", "prod", "index_select", "gather", "take",
    "tile", "flatten", "movedim", "kron", "outer", "trace", "abs", "sgn", "angle",
    "conj", "conj_physical", "real", "imag", "view_as_real",
    # linear algebra (holomorphic, or PyTorch's conjugate formulas)
    "inverse", "det", "slogdet", "logdet", "matrix_exp", "matrix_power", "pinverse", "qr",
    "cross", "triangular_solve", "lu_solve",
]


def _complexify(s, rng):
    """The sample with every float64 tensor turned complex128 (a random imaginary part)."""
    def f(t):
        if t.dtype is not ember.float64:
            return t
        im = rng.uniform(-1, 1, size=tuple(t.shape))
        c = ember.tensor(t.detach().cpu().numpy() + 1j * im, dtype=C128, device=t.device)
        return c.requires_grad_(t.requires_grad)

    return s.map_tensors(f)


@pytest.mark.parametrize("name", COMPLEX_GRAD_OPS)
def test_gradcheck_complex128(name):
    load_all()
    e = entry(name)
    op = OPS[name].fn
    rng = np.random.default_rng(len(name))
    checked = 0
    for s in e.samples("cpu", "float64", requires_grad=True):
        s = _complexify(s, rng)
        leaves = [t for t in s.tensors() if t.requires_grad]
        if not leaves or any(t.numel() == 0 for t in leaves):
            continue
        if any(t.dtype not in (C128, ember.float64) for t in leaves):
            continue  # a mixed-precision sample: float32 leaves cannot be checked

        def f(*new, s=s, leaves=leaves):
            index = {id(t): i for i, t in enumerate(leaves)}
            out = s.map_tensors(lambda t: new[index[id(t)]] if id(t) in index else t).call(op)
            if isinstance(out, (tuple, list)):
                return tuple(o for o in out if isinstance(o, ember.Tensor))
            return out

        assert gradcheck(f, tuple(leaves), atol=1e-5, rtol=1e-3), f"{name} {s}"
        checked += 1
    assert checked, name


@pytest.mark.parametrize("name", ["view_as_complex", "polar", "complex"])
def test_gradcheck_real_to_complex(name):
    rng = np.random.default_rng(0)
    a = ember.tensor(rng.uniform(0.5, 2, (3, 2)), dtype=ember.float64, requires_grad=True)
    b = ember.tensor(rng.uniform(-2, 2, (3, 2)), dtype=ember.float64, requires_grad=True)
    fn = {"view_as_complex": lambda a, b: ember.view_as_complex(a * b) * (1 + 2j),
          "polar": ember.polar, "complex": lambda a, b: ember.complex(a, b).exp()}[name]
    assert gradcheck(fn, (a, b))


def test_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))
    b = rng.normal(size=(4, 2)) + 1j * rng.normal(size=(4, 2))

    def loss(lib, x, y):
        h = lib.tanh(x @ y) * x.sum().conj() / (1 + y.abs().sum())
        return (h.abs() ** 2).sum() + lib.angle(h).sum() + lib.view_as_real(h.exp()).sum()

    ex, ey = z(a, requires_grad=True), z(b, requires_grad=True)
    loss(ember, ex, ey).backward()
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.tensor(b, requires_grad=True)
    loss(torch, tx, ty).backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ey.grad.numpy(), ty.grad.numpy(), rtol=1e-10)


def test_real_parameter_through_complex_values():
    w = ember.tensor([0.5, -1.0], dtype=ember.float64, requires_grad=True)
    c = z([1 + 2j, 3 - 1j])
    ((w * c).abs() ** 2).sum().backward()
    assert w.grad.dtype is ember.float64
    np.testing.assert_allclose(w.grad.numpy(), 2 * w.detach().numpy() * np.abs(c.numpy()) ** 2)


def test_ops_without_a_complex_derivative_refuse():
    t = z([1 + 1j], requires_grad=True)
    assert "ErfBackward0" not in HOLOMORPHIC
    # erf has no complex kernel at all in PyTorch: its dispatch error, with or without grad
    with pytest.raises(NotImplementedError, match="\"erf_vml_cpu\" not implemented for "
                                                  "'ComplexDouble'"):
        ember.erf(t)
    with ember.no_grad(), pytest.raises(NotImplementedError):
        ember.erf(t)


# -- checkpoints -------------------------------------------------------------------------------

def test_save_load_round_trip(tmp_path):
    d = {"a": z([1 + 2j, -3j], C64), "b": z([[0.5 - 1j]], C128)}
    path = tmp_path / "c.pt"
    ember.save(d, path)
    back = ember.load(path)
    for k in d:
        assert back[k].dtype is d[k].dtype and back[k].tolist() == d[k].tolist()


def test_checkpoints_interoperate_with_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "c.pt"
    ember.save({"a": z([1 + 2j], C64, device="cpu"), "b": z([3 - 1j], C128, device="cpu")},
               path)
    theirs = torch.load(path)
    assert theirs["a"].dtype == torch.complex64 and theirs["b"].tolist() == [3 - 1j]
    torch.save({"a": torch.tensor([2j]), "b": torch.tensor([1 + 1j], dtype=torch.complex128)},
               path)
    ours = ember.load(path)
    assert ours["a"].dtype is C64 and ours["b"].dtype is C128 and ours["b"].tolist() == [1 + 1j]


def test_safetensors_complex64(tmp_path):
    from ember import safetensors as st

    path = tmp_path / "c.safetensors"
    st.save_file({"w": z([[1 + 2j, 3j]], C64)}, path)
    back = st.load_file(path)
    assert back["w"].dtype is C64 and back["w"].tolist() == [[1 + 2j, 3j]]
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file, save_file

    assert load_file(path)["w"].dtype == torch.complex64
    save_file({"v": torch.tensor([1 - 1j])}, path)
    assert st.load_file(path)["v"].tolist() == [1 - 1j]
    with pytest.raises(Exception, match="complex128"):  # the format has no complex128
        st.save_file({"w": z([1j], C128)}, path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        st.load_file(path)


def test_gradcheck_linear_and_indexing_paths():
    """The view, indexing and splitting nodes that HOLOMORPHIC names beyond the opdb ops."""
    rng = np.random.default_rng(3)
    x = z(rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4)), requires_grad=True)

    def f(x):
        a = x[1] + x[:, 2].sum() + x[0, 1:3].expand(2, 2).sum(0).sum()
        b, c = x.unbind(0)[:2]
        d = x.split(2, dim=1)[1].reshape(-1).exp2()
        e = x.view(12)[::3].cumprod(0)
        return a.sum() * (1 - b).sum() + (2 - c).sum() + d.sum() + e.sum() + x.view(4, 3).sum()

    assert gradcheck(f, (x,))


def test_rand_and_randn_of_a_complex_dtype():
    """PyTorch's complex sampling: parts drawn independently; randn's each with variance 1/2
    (E|z|^2 = 1), rand's uniform in [0, 1)."""
    ember.manual_seed(0)
    z = ember.randn(200_000, dtype=ember.complex64)
    assert z.dtype is ember.complex64 and z.shape == (200_000,)
    assert abs((z.abs() ** 2).mean().item() - 1.0) < 0.02
    for part in (z.real, z.imag):
        assert abs(part.mean().item()) < 0.01 and abs(part.var().item() - 0.5) < 0.01
    u = ember.rand(2, 50_000, dtype=ember.complex128)
    assert u.dtype is ember.complex128 and u.shape == (2, 50_000)
    for part in (u.real, u.imag):
        assert 0.0 <= part.min().item() and part.max().item() < 1.0
        assert abs(part.mean().item() - 0.5) < 0.01
    like = ember.randn_like(ember.zeros(3, 2, dtype=ember.cfloat))
    assert like.dtype is ember.complex64 and like.shape == (3, 2)


def test_gradgradcheck_draws_complex_grad_outputs_for_complex_outputs():
    x = ember.randn(3, 3, dtype=ember.complex128, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda a: (a * a).exp().sum(0), (x,))
    assert ember.autograd.gradgradcheck(lambda a: a @ a, (x,))


def test_isreal_of_complex_is_where_the_imaginary_part_is_zero():
    z = ember.complex(ember.tensor([1.0, 0.0, -2.0]), ember.tensor([1.0, 0.0, -0.0]))
    assert ember.isreal(z).tolist() == [False, True, True]
    assert z.isreal().tolist() == [False, True, True]
    assert ember.isreal(ember.tensor([1.0, float("nan")])).tolist() == [True, True]
