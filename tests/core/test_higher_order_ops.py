"""``ember._higher_order_ops`` (``torch._higher_order_ops``): while_loop, scan,
associative_scan, map and cond, eager, against PyTorch's where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._higher_order_ops import associative_scan, cond, map, scan, while_loop
from ember.autograd import gradcheck


def test_while_loop():
    r = while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i),
                   (ember.tensor(0), ember.tensor(0)))
    assert isinstance(r, tuple) and r[0].item() == 5 and r[1].item() == 10
    assert while_loop(lambda i: i < 3, lambda i: (i + 1,), (0,)) == (3,)
    # additional inputs reach both functions
    r = while_loop(lambda i, lim: i < lim, lambda i, lim: (i * 2,), (ember.tensor(1),),
                   (ember.tensor(50),))
    assert r[0].item() == 64
    with pytest.raises(RuntimeError, match="differ in 'dtype"):
        while_loop(lambda i: i < 3, lambda i: (i + 1.0,), (ember.tensor(0),))
    with pytest.raises(RuntimeError, match="same number of outputs"):
        while_loop(lambda i: i < 3, lambda i: (i + 1, i), (ember.tensor(0),))


def test_while_loop_differentiates_through_its_iterations():
    x = ember.tensor(1.5, dtype=ember.float64, requires_grad=True)
    (_, y) = while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x), (ember.tensor(0), x))
    y.backward()
    assert abs(x.grad.item() - 4 * 1.5 ** 3) < 1e-12  # y = x^4


def test_scan():
    xs = ember.arange(6.0).view(3, 2)
    c, ys = scan(lambda c, x: (c + x, c * 2), ember.zeros(2), xs)
    np.testing.assert_array_equal(c.numpy(), [6, 9])
    np.testing.assert_array_equal(ys.numpy(), [[0, 0], [0, 2], [4, 8]])
    c, ys = scan(lambda c, x: (c + x, c * 2), ember.zeros(2), xs, reverse=True)
    np.testing.assert_array_equal(ys.numpy(), [[12, 16], [8, 10], [0, 0]])
    c, ys = scan(lambda c, x: ({"a": c["a"] + x}, x.sum()), {"a": ember.zeros(2)},
                 ember.ones(3, 2))
    np.testing.assert_array_equal(c["a"].numpy(), [3, 3])
    np.testing.assert_array_equal(ys.numpy(), [2, 2, 2])
    c, ys = scan(lambda c, x: (c + x, c), ember.zeros(3), ember.ones(3, 4), dim=1)
    assert ys.shape == (3, 4)
    with pytest.raises(RuntimeError, match="scan dimension > 0"):
        scan(lambda c, x: (c + x, c), ember.zeros(2), ember.ones(0, 2))
    with pytest.raises(RuntimeError, match="shape or dtype of a carry changed"):
        scan(lambda c, x: (c.sum(), c), ember.zeros(2), ember.ones(3, 2))


def test_scan_gradcheck():
    def f(init, xs):
        return scan(lambda c, x: (c * x + 1, (c * x).sin()), init, xs)

    init = ember.randn(2, dtype=ember.float64, requires_grad=True)
    xs = ember.randn(4, 2, dtype=ember.float64, requires_grad=True)
    assert gradcheck(f, (init, xs))


def test_associative_scan():
    xs = ember.arange(1.0, 6.0)
    np.testing.assert_array_equal(
        associative_scan(lambda a, b: a + b, xs, 0, combine_mode="generic").numpy(),
        [1, 3, 6, 10, 15])
    np.testing.assert_array_equal(
        associative_scan(lambda a, b: a * b, xs, 0, reverse=True,
                         combine_mode="generic").numpy(), [120, 120, 60, 20, 5])
    with pytest.raises(ValueError, match="need to be on CUDA"):
        associative_scan(lambda a, b: a + b, xs, 0)
    with pytest.raises(ValueError, match="Combine_mode must"):
        associative_scan(lambda a, b: a + b, xs, 0, combine_mode="fast")


def test_map_and_cond():
    np.testing.assert_array_equal(map(lambda x, y: x * y, ember.arange(3.0),
                                      ember.tensor(2.0)).numpy(), [0, 2, 4])
    out = map(lambda d: {"s": d["a"] + d["b"]}, {"a": ember.ones(2, 3), "b": ember.ones(2, 3)})
    assert out["s"].shape == (2, 3)
    with pytest.raises(RuntimeError, match="at least one dimension"):
        map(lambda x: x, ember.tensor(1.0))
    x = ember.randn(3, 3)
    r = cond(x.sum() > 0, lambda t: (t.cos(),), lambda t: (t.sin(),), (x,))
    np.testing.assert_array_equal(r[0].numpy(), (x.cos() if x.sum() > 0 else x.sin()).numpy())


def test_parity_with_pytorch():
    torch = pytest.importorskip("torch")
    from torch._higher_order_ops.scan import scan as tscan

    xn = np.random.default_rng(0).standard_normal((4, 3))
    tc, tys = tscan(lambda c, x: (c * 0.5 + x, (c * x).tanh()), torch.zeros(3, dtype=torch.float64),
                    torch.tensor(xn), reverse=True)
    ec, eys = scan(lambda c, x: (c * 0.5 + x, (c * x).tanh()), ember.zeros(3, dtype=ember.float64),
                   ember.tensor(xn), reverse=True)
    np.testing.assert_allclose(ec.numpy(), tc.numpy(), rtol=1e-12)
    np.testing.assert_allclose(eys.numpy(), tys.numpy(), rtol=1e-12)


def test_importable_from_pytorchs_submodules():
    import importlib

    for name in ("cond", "while_loop", "scan", "associative_scan", "map"):
        mod = importlib.import_module(f"ember._higher_order_ops.{name}")
        assert callable(getattr(mod, name))


def test_map_and_scan_are_captured_by_export():
    """Their stacks are the public op, which a capture records (PyTorch's export tutorial
    exports a map; the registry's stack escaped the capture: 'a tensor the capture did not
    see being made')."""
    from ember._higher_order_ops.scan import scan

    class M(ember.nn.Module):
        def forward(self, xs, y, z):
            mapped = map(lambda x, y, z: x + y + z, xs, y, z)
            carry, ys = scan(lambda c, x: (c + x, c * x), ember.zeros(4), xs)
            return mapped, carry, ys

    args = (ember.ones(6, 4), ember.tensor(5.0), ember.tensor(4.0))
    ep = ember.export.export(M(), args)
    for got, want in zip(ep.module()(*args), M()(*args)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert ep.module()(*args)[0][0].tolist() == [10.0] * 4
