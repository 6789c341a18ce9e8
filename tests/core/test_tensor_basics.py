"""Tensor metadata, conversion, arithmetic and its gradients."""

import numpy as np
import pytest
from testutils import randn64

import ember
from ember.autograd import gradcheck, gradgradcheck


def test_metadata():
    t = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert t.shape == (2, 3) and repr(t.shape) == "ember.Size([2, 3])"
    assert t.size() == ember.Size([2, 3]) and t.size(1) == 3 and t.size(-1) == 3
    assert t.dim() == 2 and t.ndim == 2 and t.numel() == 6
    assert t.dtype is ember.float32 and t.element_size() == 4
    assert t.stride() == (3, 1) and t.is_contiguous()
    assert t.device == ember.device("cpu") and not t.is_cuda
    assert t.data_ptr() == t.numpy().__array_interface__["data"][0]
    assert t.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.size(2)


def test_item_and_python_conversions():
    s = ember.tensor(3.5)
    assert s.item() == 3.5 and float(s) == 3.5 and int(ember.tensor(7)) == 7
    assert bool(ember.tensor([1])) is True
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted"):
        ember.tensor([1, 2]).item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(ember.tensor([1, 2]))
    assert ember.tensor([1, 2, 3]).tolist() == [1, 2, 3]
    assert ember.tensor([1, 2]).dtype is ember.int64
    assert ember.tensor([True, False]).dtype is ember.bool


def test_numpy_shares_memory():
    a = np.zeros(3, dtype=np.float32)
    t = ember.from_numpy(a)
    t.add_(1)
    assert a.tolist() == [1.0, 1.0, 1.0]
    assert t.numpy() is a
    with pytest.raises(RuntimeError, match="requires grad"):
        ember.ones(2, requires_grad=True).numpy()


def test_numpy_of_a_tensor_requiring_grad_under_no_grad():
    # PyTorch refuses only while grad mode is on
    w = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        assert w.numpy().tolist() == [1.0, 1.0]
    with ember.inference_mode():
        assert w.numpy().tolist() == [1.0, 1.0]
    b = ember.ones(2, dtype=ember.bfloat16, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        b.numpy()
    with ember.no_grad(), pytest.raises(TypeError, match="BFloat16"):
        b.numpy()


def test_conversions_copy_only_when_needed():
    t = ember.ones(2)
    assert t.float() is t
    d = t.double()
    assert d.dtype is ember.float64 and d is not t
    assert t.to(ember.int32).dtype is ember.int32
    assert t.long().dtype is ember.int64 and t.bool().dtype is ember.bool
    c = t.to(ember.float32, copy=True)
    assert c is not t and c.data_ptr() != t.data_ptr()


def test_arithmetic_values_against_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float32) + 3
    ta, tb = ember.from_numpy(a), ember.from_numpy(b)
    np.testing.assert_allclose((ta + tb).numpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose((ta - tb).numpy(), a - b, rtol=1e-6)
    np.testing.assert_allclose((ta * tb).numpy(), a * b, rtol=1e-6)
    np.testing.assert_allclose((ta / tb).numpy(), a / b, rtol=1e-6)
    np.testing.assert_allclose((2 - ta).numpy(), 2 - a, rtol=1e-6)
    np.testing.assert_allclose((2 / tb).numpy(), 2 / b, rtol=1e-6)
    np.testing.assert_allclose((tb ** 2).numpy(), b ** 2, rtol=1e-6)
    np.testing.assert_allclose((2 ** ta).numpy(), 2 ** a, rtol=1e-5)
    np.testing.assert_allclose(ember.add(ta, tb, alpha=2).numpy(), a + 2 * b, rtol=1e-6)
    np.testing.assert_allclose(ember.sub(ta, tb, alpha=0.5).numpy(), a - 0.5 * b, rtol=1e-6)


def test_division_modes():
    a = ember.tensor([-7, 7, -8, 9])
    b = ember.tensor([2, -2, 3, 3])
    assert ember.div(a, b, rounding_mode="floor").tolist() == [-4, -4, -3, 3]
    assert ember.div(a, b, rounding_mode="trunc").tolist() == [-3, -3, -2, 3]
    assert (a // b).tolist() == [-4, -4, -3, 3]
    assert (a % b).tolist() == [1, -1, 1, 0]
    assert ember.fmod(a, b).tolist() == [-1, 1, -2, 0]
    assert (a / b).dtype is ember.float32
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a // ember.tensor([0, 1, 1, 1])
    with pytest.raises(RuntimeError, match="rounding_mode"):
        ember.div(a, b, rounding_mode="round")


def test_bool_subtraction_is_an_error():
    m = ember.tensor([True, False])
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors"):
        m - m
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor"):
        ember.tensor([1, 0]) - m


def test_inplace_ops_write_and_check_dtype():
    t = ember.ones(3, dtype=ember.int64)
    t += 2
    assert t.tolist() == [3, 3, 3]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                       "output type Long"):
        t.add_(1.5)
    f = ember.ones(2, 3)
    f.mul_(ember.tensor([2.0, 3.0, 4.0]))
    assert f.tolist() == [[2.0, 3.0, 4.0]] * 2
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        ember.ones(3).add_(ember.ones(2, 3))
    v = f._version
    f.sub_(1)
    assert f._version == v + 1


@pytest.mark.parametrize("fn", [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b,
    lambda a, b: ember.add(a, b, alpha=3), lambda a, b: a ** b, lambda a, b: b ** 2,
    lambda a, b: 2.0 / b, lambda a, b: ember.remainder(a, b), lambda a, b: ember.fmod(a, b),
])
def test_arith_gradcheck(fn):
    a, b = randn64(3, 4, rng=1, positive=True), randn64(4, rng=2, positive=True)
    assert gradcheck(fn, (a, b))


def test_remainder_zero_keeps_the_dividends_sign():
    # PyTorch: fmod(a, b), plus b where non-zero and of the other sign; a zero result keeps
    # fmod's sign (the dividend's), where NumPy's remainder gives it the divisor's
    inf = float("inf")
    a = [-2.0, 2.0, 3.0, -3.0, 0.0, -0.0, 5.0, inf, -1.0, 1.0, 7.5, -7.5]
    b = [2.0, -2.0, -1.5, 1.5, 2.0, 2.0, 0.0, 2.0, inf, -inf, 2.0, -2.0]
    want = np.fmod(a, b)
    want = np.where((want != 0) & ((want < 0) != (np.array(b) < 0)), want + b, want)
    for dtype in (ember.float32, ember.float64, ember.float16):
        at, bt = ember.tensor(a, dtype=dtype), ember.tensor(b, dtype=dtype)
        for got in (ember.remainder(at, bt), at % bt, at.clone().remainder_(bt)):
            g = got.double().numpy()
            np.testing.assert_array_equal(g, want)
            np.testing.assert_array_equal(np.signbit(g), np.signbit(want))
    assert (1 / (ember.tensor([-2.0]) % 2)).tolist() == [-inf]
    assert (1 / (-4 % ember.tensor([2.0]))).tolist() == [-inf]
    assert (1 / ember.remainder(ember.tensor(3.0), -1.5)).item() == inf
    assert ember.remainder(ember.tensor([-4, 3]), 2).tolist() == [0, 1]  # integers: as before


@pytest.mark.parametrize("fn", [lambda a, b: a * b, lambda a, b: a / b, lambda a, b: a ** b])
def test_arith_gradgradcheck(fn):
    a, b = randn64(2, 3, rng=3, positive=True), randn64(2, 3, rng=4, positive=True)
    assert gradgradcheck(fn, (a, b))


def test_mixed_precision_gradient_dtype():
    x = ember.ones(3, requires_grad=True)
    w = ember.ones(3, dtype=ember.float64, requires_grad=True)
    (x * w).sum().backward()
    assert x.grad.dtype is ember.float32 and w.grad.dtype is ember.float64


def test_shared_gradients_are_not_aliased():
    a = ember.ones(3, requires_grad=True)
    b = ember.ones(3, requires_grad=True)
    (a + b).sum().backward()
    a.grad.add_(1)
    assert b.grad.tolist() == [1.0, 1.0, 1.0]
    (a + b).sum().backward()  # accumulation
    assert a.grad.tolist() == [3.0, 3.0, 3.0] and b.grad.tolist() == [2.0, 2.0, 2.0]


def test_matmul_rules_and_errors():
    a = ember.ones(2, 3)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 "
                       r"and 4x5\)"):
        a @ ember.ones(4, 5)
    assert (ember.ones(3) @ ember.ones(3)).shape == ()
    assert (ember.ones(5, 2, 3) @ ember.ones(3)).shape == (5, 2)
    assert (ember.ones(3) @ ember.ones(5, 3, 2)).shape == (5, 2)
    assert (ember.ones(4, 1, 2, 3) @ ember.ones(5, 3, 2)).shape == (4, 5, 2, 2)


def test_out_argument_writes_and_refuses_autograd():
    a = ember.eye(3) * 2
    o = ember.empty(0)
    assert ember.linalg.inv(a, out=o) is o
    np.testing.assert_allclose(o.numpy(), np.eye(3) / 2)
    q, r = ember.empty(0), ember.empty(0)
    res = ember.linalg.qr(a, out=(q, r))
    assert res.Q is q and res.R is r
    np.testing.assert_allclose((q @ r).numpy(), a.numpy(), atol=1e-6)
    dst = ember.empty(2)
    assert ember.add(ember.ones(2), 1, out=dst) is dst and dst.tolist() == [2.0, 2.0]
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"add\(\): functions with out=\.\.\. arguments don't "
                       "support automatic differentiation"):
        ember.add(x, x, out=ember.empty(2))
    with pytest.raises(TypeError, match="tuple of 2 Tensors"):
        ember.linalg.qr(a, out=q)


def test_inf_and_nan_are_silent_like_pytorch():
    # in a fresh interpreter: pytest resets warning filters installed at collection time
    import subprocess
    import sys

    code = ("import ember, numpy as np\n"
            "ember.log(ember.tensor([0.0])); ember.sqrt(ember.tensor(-1.0))\n"
            "ember.tensor([1.0]) / 0\n"
            "np.log(np.zeros(1))  # NumPy in user code still warns\n")
    res = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True,
                         text=True, check=True)
    assert res.stderr.count("RuntimeWarning") == 1 and "<string>" in res.stderr
