"""Pooling: NumPy loop references, PyTorch's index convention, gradcheck, errors, devices."""

import itertools
import math

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.ops.pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
    max_unpool2d,
)

RNG = np.random.default_rng(99)


def distinct(*shape, requires_grad=True):
    # distinct values: finite differences never cross a tie of the max
    a = RNG.permutation(math.prod(shape)).reshape(shape) / 7.0 + RNG.uniform(0, .01, shape)
    return ember.tensor(a, requires_grad=requires_grad)


def _tup(v, n):
    return (v,) * n if isinstance(v, int) else tuple(v)


def _out(x, k, s, p, d, ceil):
    num = x + 2 * p - d * (k - 1) - 1
    y = (num + (s - 1 if ceil else 0)) // s + 1
    if ceil and (y - 1) * s >= x + p:
        y -= 1
    return y


def ref_max_pool(x, k, s=None, p=0, d=1, ceil=False):
    """Loops over output positions: values and flat plane indices."""
    n = x.ndim - 2
    k, p, d = _tup(k, n), _tup(p, n), _tup(d, n)
    s = k if s is None else _tup(s, n)
    xs = x.shape[2:]
    ys = [_out(xs[i], k[i], s[i], p[i], d[i], ceil) for i in range(n)]
    vals = np.zeros(x.shape[:2] + tuple(ys))
    idx = np.zeros(x.shape[:2] + tuple(ys), dtype=np.int64)
    for nc in itertools.product(*map(range, x.shape[:2])):
        for pos in itertools.product(*map(range, ys)):
            best, where = -np.inf, -1
            for off in itertools.product(*map(range, k)):
                q = [pos[i] * s[i] - p[i] + off[i] * d[i] for i in range(n)]
                if all(0 <= q[i] < xs[i] for i in range(n)) and x[nc + tuple(q)] > best:
                    best, where = x[nc + tuple(q)], int(np.ravel_multi_index(q, xs))
            vals[nc + pos], idx[nc + pos] = best, where
    return vals, idx


def ref_avg_pool(x, k, s=None, p=0, ceil=False, count_include_pad=True, divisor=None):
    n = x.ndim - 2
    k, p = _tup(k, n), _tup(p, n)
    s = k if s is None else _tup(s, n)
    xs = x.shape[2:]
    ys = [_out(xs[i], k[i], s[i], p[i], 1, ceil) for i in range(n)]
    out = np.zeros(x.shape[:2] + tuple(ys))
    for pos in itertools.product(*map(range, ys)):
        start = [pos[i] * s[i] - p[i] for i in range(n)]
        end = [min(start[i] + k[i], xs[i] + p[i]) for i in range(n)]
        region = tuple(slice(max(start[i], 0), min(end[i], xs[i])) for i in range(n))
        total = x[(Ellipsis,) + region].sum(tuple(range(2, 2 + n)))
        if divisor is not None:
            div = divisor
        elif count_include_pad:
            div = math.prod(end[i] - start[i] for i in range(n))
        else:
            div = math.prod(r.stop - r.start for r in region)
        out[(Ellipsis,) + pos] = total / div
    return out


def ref_adaptive(x, out_size, reduce):
    n = x.ndim - 2
    xs = x.shape[2:]
    res = np.zeros(x.shape[:2] + tuple(out_size))
    for pos in itertools.product(*map(range, out_size)):
        region = tuple(slice(pos[i] * xs[i] // out_size[i],
                             -(-(pos[i] + 1) * xs[i] // out_size[i])) for i in range(n))
        res[(Ellipsis,) + pos] = reduce(x[(Ellipsis,) + region], tuple(range(2, 2 + n)))
    return res


MAX2D_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=2, stride=1),  # overlapping windows: gradients accumulate
    dict(kernel_size=(2, 3), stride=2, padding=1, dilation=2, ceil_mode=True),
]


# The values, indices, gradchecks and gradgradchecks of every pool on the op database's samples
# (kernels, strides, padding, dilation, ceil_mode, count_include_pad, divisor_override,
# adaptive sizes, unbatched and integer inputs): the generic tests (tests/ops/test_ops.py).
# Here: what their samples do not combine (dilation with ceil_mode), node names, the
# performance paths (separable maxima, window offsets), NaN and integer edges, errors.

@pytest.mark.parametrize("kw", MAX2D_CASES[5:])
def test_max_pool2d(kw):
    x = distinct(2, 2, 7, 6)
    out, idx = max_pool2d(x, return_indices=True, **kw)
    ref_v, ref_i = ref_max_pool(x.detach().numpy(), kw["kernel_size"], kw.get("stride"),
                                kw.get("padding", 0), kw.get("dilation", 1),
                                kw.get("ceil_mode", False))
    np.testing.assert_array_equal(out.detach().numpy(), ref_v)
    np.testing.assert_array_equal(idx.numpy(), ref_i)
    assert idx.dtype == ember.int64
    assert out.grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    assert gradcheck(lambda a: max_pool2d(a, **kw), (x,))


@pytest.mark.parametrize("kw", MAX2D_CASES)
def test_max_pool2d_without_indices_separable(kw):
    # no indices wanted: maxima one spatial dim at a time; same values as the reference,
    # NaN propagating like PyTorch's kernel
    a = RNG.standard_normal((2, 3, 9, 8)).astype(np.float32)
    a[0, 1, 4, 4] = np.nan
    # a NaN wins its windows (PyTorch: `val > maxval || isnan(val)`): +inf in the reference
    ref_v, _ = ref_max_pool(np.nan_to_num(a, nan=np.inf), kw["kernel_size"], kw.get("stride"),
                            kw.get("padding", 0), kw.get("dilation", 1),
                            kw.get("ceil_mode", False))
    ref_v[ref_v == np.inf] = np.nan
    with ember.no_grad():
        out = max_pool2d(ember.from_numpy(a), **kw)
    np.testing.assert_array_equal(out.numpy(), ref_v)
    assert out.dtype == ember.float32


FAST_CASES = [  # unpadded: training without return_indices keeps uint8 window offsets
    dict(kernel_size=2),
    dict(kernel_size=2, stride=1),  # overlapping windows
    dict(kernel_size=3, stride=2, ceil_mode=False),
    dict(kernel_size=(2, 3), dilation=(2, 1)),
]


@pytest.mark.parametrize("kw", FAST_CASES)
@pytest.mark.parametrize("ties", [False, True])
def test_max_pool2d_offset_path_matches_index_path(kw, ties):
    # ReLU before a pool makes all-zero windows: the gradient must go to the first maximum
    a = RNG.standard_normal((2, 3, 7, 8))
    if ties:
        a = np.round(np.maximum(a, 0), 1)
    gy = RNG.standard_normal(max_pool2d(ember.from_numpy(a), **kw).shape)
    grads = []
    for with_idx in (False, True):
        x = ember.from_numpy(a.copy()).requires_grad_()
        out = max_pool2d(x, return_indices=with_idx, **kw)
        out = out[0] if with_idx else out
        assert out.grad_fn.name() == "MaxPool2DWithIndicesBackward0"
        out.backward(ember.from_numpy(gy))
        grads.append((out.detach().numpy(), x.grad.numpy()))
    np.testing.assert_array_equal(grads[0][0], grads[1][0])
    # overlapping windows sum in another order: equal to rounding
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-14, atol=1e-15)


def test_max_pool2d_offset_path_inf_gradient():
    x = ember.tensor([[[[1.0, 3.0], [2.0, 0.0]]]], requires_grad=True)
    max_pool2d(x, 2).backward(ember.tensor([[[[float("inf")]]]]))
    # inf lands on the maximum only (a product with a 0/1 mask would leave NaN elsewhere)
    np.testing.assert_array_equal(x.grad.numpy(), [[[[0.0, np.inf], [0.0, 0.0]]]])


@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                     dilation=2)])
def test_max_pool1d(kw):
    x = distinct(2, 3, 9)
    out, idx = max_pool1d(x, return_indices=True, **kw)
    ref_v, ref_i = ref_max_pool(x.detach().numpy(), kw["kernel_size"], kw.get("stride"),
                                kw.get("padding", 0), kw.get("dilation", 1),
                                kw.get("ceil_mode", False))
    np.testing.assert_array_equal(out.detach().numpy(), ref_v)
    np.testing.assert_array_equal(idx.numpy(), ref_i)
    assert gradcheck(lambda a: max_pool1d(a, **kw), (x,))
    from ember.ops.registry import OPS

    assert OPS["max_pool1d"].kernel is max_pool1d and ember.max_pool1d is OPS["max_pool1d"].fn


AVG2D_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=(3, 2), stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(3, 2), stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=2, stride=1, divisor_override=3),
]


@pytest.mark.parametrize("kw", AVG2D_CASES[4:5])
def test_avg_pool2d(kw):
    x = distinct(2, 2, 7, 6)
    out = avg_pool2d(x, **kw)
    ref = ref_avg_pool(x.detach().numpy(), kw["kernel_size"], kw.get("stride"),
                       kw.get("padding", 0), kw.get("ceil_mode", False),
                       kw.get("count_include_pad", True), kw.get("divisor_override"))
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-12)
    assert out.grad_fn.name() == "AvgPool2DBackward0"
    assert gradcheck(lambda a: avg_pool2d(a, **kw), (x,))


@pytest.mark.parametrize("size", [(5, 5)])
def test_adaptive_max_pool2d(size):
    x = distinct(2, 2, 7, 6)
    out, idx = adaptive_max_pool2d(x, size, return_indices=True)
    full = size if isinstance(size, tuple) else (size, size)
    np.testing.assert_array_equal(out.detach().numpy(),
                                  ref_adaptive(x.detach().numpy(), full, np.max))
    flat = x.detach().numpy().reshape(2, 2, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, idx.numpy().reshape(2, 2, -1), -1),
                                  out.detach().numpy().reshape(2, 2, -1))
    assert out.grad_fn.name() == "AdaptiveMaxPool2DBackward0"
    assert gradcheck(lambda a: adaptive_max_pool2d(a, size), (x,))


def test_max_unpool2d_inverts_pool():
    x = distinct(2, 2, 6, 5)
    out, idx = max_pool2d(x, 2, return_indices=True)
    up = max_unpool2d(out, idx, 2, output_size=(6, 5))
    assert up.shape == (2, 2, 6, 5)
    ref = np.zeros((2, 2, 30))
    np.put_along_axis(ref, idx.numpy().reshape(2, 2, -1), out.detach().numpy().reshape(2, 2, -1),
                      -1)
    np.testing.assert_array_equal(up.detach().numpy(), ref.reshape(2, 2, 6, 5))
    assert up.grad_fn.name() == "MaxUnpool2DBackward0"
    v = distinct(2, 2, 3, 2)
    assert gradcheck(lambda a: max_unpool2d(a, idx, 2, output_size=(6, 5)), (v,))
    assert max_unpool2d(out[..., :2], idx[..., :2] % 4, 2).shape == (2, 2, 6, 4)
    with pytest.raises(RuntimeError, match="Found an invalid max index: 99"):
        max_unpool2d(out, idx * 0 + 99, 2)


@pytest.mark.parametrize("call, message", [
    (lambda: max_pool2d(ember.randn(1, 4, 5, 5), 3, padding=2),
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and "
     "dilation=1"),
    (lambda: max_pool2d(ember.randn(1, 4, 2, 2), 3),
     r"Given input size: \(4x2x2\). Calculated output size: \(4x0x0\). Output size is too "
     "small"),
    (lambda: max_pool2d(ember.randn(4, 2), 1),
     r"non-empty 3D or 4D \(batch mode\) tensor expected for input"),
    (lambda: max_pool2d(ember.randn(1, 4, 5, 5), 2, stride=0), "stride should not be zero"),
    (lambda: avg_pool2d(ember.randn(1, 4, 5, 5), 3, padding=2),
     "pad should be at most half of effective kernel size"),
    (lambda: avg_pool1d(ember.randn(4, 5, 5, 5), 3),
     "Expected 2 to 3 dimensions, but got 4-dimensional tensor"),
    (lambda: adaptive_avg_pool2d(ember.randn(4, 5), 3),
     r"adaptive_avg_pool2d\(\): Expected 3D or 4D tensor, but got \[4, 5\]"),
    (lambda: adaptive_max_pool2d(ember.randn(1, 2, 5, 5, 5), 2),
     r"adaptive_max_pool2d\(\): Expected 3D or 4D tensor, but got: \[1, 2, 5, 5, 5\]"),
])
def test_errors(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


def test_device_kept(testdev):
    x = ember.randn(1, 2, 6, 6).to(testdev).requires_grad_()
    for fn in (lambda a: max_pool2d(a, 2), lambda a: avg_pool2d(a, 3, 1, 1),
               lambda a: adaptive_avg_pool2d(a, 3), lambda a: adaptive_max_pool2d(a, 4)):
        out = fn(x)
        assert out.device == testdev
        out.sum().backward()
        assert x.grad.device == testdev
        x.grad = None
    out, idx = max_pool2d(x, 2, return_indices=True)
    assert idx.device == testdev
    assert max_unpool2d(out, idx, 2).device == testdev


def test_three_d_family():
    from ember.ops.pooling import max_pool3d

    # values, indices and gradchecks: the generic tests
    x = distinct(1, 2, 5, 4, 5)
    out, idx = max_pool3d(x, 2, (2, 1, 2), (1, 0, 1), return_indices=True)
    assert out.grad_fn.name() == "MaxPool3DWithIndicesBackward0"


def test_with_indices_variants():
    from ember.ops.pooling import adaptive_max_pool2d_with_indices, max_pool2d_with_indices

    x = distinct(1, 2, 6, 6)
    v, i = max_pool2d_with_indices(x, 2)
    np.testing.assert_array_equal(i.numpy(), max_pool2d(x, 2, return_indices=True)[1].numpy())
    v, i = adaptive_max_pool2d_with_indices(x, 3)
    assert i.shape == (1, 2, 3, 3)
    assert ember.max_pool1d_with_indices(distinct(1, 2, 6), 2)[1].dtype == ember.int64


# -- regressions ---------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3])
def test_adaptive_max_pool_several_nans_give_the_last(n):
    """A window holding several NaNs: the index of the last one, as PyTorch's (and ember's
    max_pool); argmax gave the first."""
    from ember.ops import pooling

    x = np.arange(1.0, 7.0).reshape((1, 1) + (1,) * (n - 1) + (6,))
    x[..., 1] = x[..., 3] = np.nan
    op = getattr(pooling, f"adaptive_max_pool{n}d")
    out, idx = op(ember.tensor(x), (1,) * (n - 1) + (1,), return_indices=True)
    assert np.isnan(out.numpy()).all()
    assert idx.numpy().ravel().tolist() == [3]
    # two windows: [1, nan, 3 | nan, 5, nan] -> 1 and 5
    x[..., 5] = np.nan
    out, idx = op(ember.tensor(x), (1,) * (n - 1) + (2,), return_indices=True)
    assert idx.numpy().ravel().tolist() == [1, 5]
    with_indices = getattr(pooling, f"adaptive_max_pool{n}d_with_indices")
    assert with_indices(ember.tensor(x), (1,) * (n - 1) + (2,))[1].numpy().ravel().tolist() \
        == [1, 5]
    x[...] = np.arange(1.0, 7.0)  # no NaN: the first maximum, as before
    x[..., 4] = 6.0
    assert op(ember.tensor(x), (1,) * n, return_indices=True)[1].numpy().ravel().tolist() == [4]


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_max_pool_integer_padding_index(dtype):
    """An integer window whose maximum is the dtype's minimum (the padding fill): the index
    of its first in-bounds maximum, never a padding position (was -1)."""
    low = np.iinfo(dtype).min
    x = ember.tensor(np.full((1, 1, 3), low, dtype=dtype))
    out, idx = max_pool1d(x, 3, 1, 1, return_indices=True)
    assert out.numpy().ravel().tolist() == [low] * 3
    assert idx.numpy().ravel().tolist() == [0, 0, 1]  # PyTorch's
    x2 = np.full((1, 1, 3, 4), low, dtype=dtype)
    x2[0, 0, 2, 3] = low + 1
    out, idx = max_pool2d(ember.tensor(x2), 3, 2, 1, return_indices=True)
    assert idx.numpy().ravel().tolist() == [0, 1, 4, 11]
    from ember.ops.pooling import max_pool3d

    x3 = ember.tensor(np.full((1, 1, 2, 2, 2), low, dtype=dtype))
    assert max_pool3d(x3, 2, 1, 1, return_indices=True)[1].numpy().min() >= 0


def test_max_pool_padding_index_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    for dtype in ("uint8", "int64"):
        a = rng.integers(0, 2, (2, 2, 5, 6)).astype(dtype)
        if dtype == "int64":
            a = np.where(a == 0, np.iinfo(np.int64).min, a)
        got = max_pool2d(ember.tensor(a), 3, 1, 1, return_indices=True)[1].numpy()
        ref = torch.nn.functional.max_pool2d(torch.from_numpy(a), 3, 1, 1,
                                             return_indices=True)[1].numpy()
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("call", [
    lambda x: avg_pool1d(x[:, :, 0], 3, 2, 1),
    lambda x: avg_pool2d(x, 3, 2, 1, count_include_pad=False),
    lambda x: avg_pool2d(x, 2, divisor_override=3),
    lambda x: adaptive_avg_pool1d(x[:, :, 0], 5),
    lambda x: adaptive_avg_pool2d(x, (3, 4)),
])
def test_float16_average_accumulates_in_float32(call):
    """float16 averages are the float32 computation rounded once, as PyTorch's kernels."""
    a = np.random.default_rng(3).uniform(-3, 3, (2, 3, 7, 9)).astype(np.float16)
    got = call(ember.tensor(a))
    assert got.dtype == ember.float16
    expected = call(ember.tensor(a.astype(np.float32))).numpy().astype(np.float16)
    np.testing.assert_array_equal(got.numpy(), expected)
    x = ember.tensor(a, requires_grad=True)
    call(x).sum().backward()
    assert x.grad.dtype == ember.float16
