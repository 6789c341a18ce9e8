"""3-D pooling and fractional max pooling (2-D and 3-D): PyTorch's errors, random samples,
NaN and batch edges, node names and the test device. The values and indices of lp_pool3d,
max_pool3d, avg_pool3d, max_unpool3d and fractional max pooling (given samples, unbatched
too) against PyTorch, and their gradchecks and gradgradchecks: the generic tests
(tests/ops/test_ops.py)."""

import math

import numpy as np
import pytest
from testutils import t64

import ember
from ember.ops.pooling import (
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
    lp_pool3d,
)

RNG = np.random.default_rng(3)


def distinct(*shape, dtype=np.float64):
    """Distinct values: finite differences never cross a tie of the max."""
    return (RNG.permutation(math.prod(shape)).reshape(shape) / 7.0).astype(dtype)


# -- 3-D pools --------------------------------------------------------------------------------

def test_integer_adaptive_avg_pool3d_names_the_dtype_as_pytorch():
    # output size 1: PyTorch's mean path; otherwise its CPU kernel's dtype dispatch
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        ember.nn.functional.adaptive_avg_pool3d(ember.ones(1, 1, 2, 2, 2, dtype=ember.int64), 1)
    with pytest.raises(NotImplementedError,
                       match="\"adaptive_avg_pool3d_cpu\" not implemented for 'Long'"):
        ember.nn.functional.adaptive_avg_pool3d(ember.ones(1, 1, 2, 2, 2, dtype=ember.int64), 2)


# -- fractional max pooling: values -----------------------------------------------------------

def test_fractional_output_ratio_and_unbatched():
    x = t64(distinct(3, 10, 9), False)
    samples = t64(RNG.random((1, 3, 2)), False)
    out = fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.4), _random_samples=samples)
    assert out.shape == (3, 5, 3)
    batched = fractional_max_pool2d(x.unsqueeze(0), 2, output_ratio=(0.5, 0.4),
                                    _random_samples=samples)
    np.testing.assert_array_equal(out.numpy(), batched.squeeze(0).numpy())
    vals, idx = fractional_max_pool3d_with_indices(t64(distinct(2, 6, 6, 6), False), 2,
                                                   output_ratio=0.5)
    assert vals.shape == idx.shape == (2, 3, 3, 3) and idx.dtype is ember.int64


def test_fractional_draws_samples_from_the_default_generator():
    x = t64(distinct(2, 3, 12, 12), False)
    ember.manual_seed(5)
    a, ia = fractional_max_pool2d_with_indices(x, 2, (5, 5))
    ember.manual_seed(5)
    b, ib = fractional_max_pool2d_with_indices(x, 2, (5, 5))
    np.testing.assert_array_equal(ia.numpy(), ib.numpy())
    flat = x.numpy().reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, ia.numpy().reshape(2, 3, -1), -1),
                                  a.numpy().reshape(2, 3, -1))
    ember.manual_seed(6)
    c, ic = fractional_max_pool2d_with_indices(x, 2, (5, 5))
    assert not np.array_equal(ic.numpy(), ia.numpy())  # other samples, other windows


def test_fractional_extra_samples_are_ignored_and_nan_wins():
    x = distinct(1, 1, 6, 6)
    x[0, 0, 1, 1] = np.nan
    samples = RNG.random((3, 1, 2))  # more rows than the batch: PyTorch uses the first
    out = fractional_max_pool2d(t64(x, False), 3, (2, 2), _random_samples=t64(samples, False))
    assert np.isnan(out.numpy()[0, 0, 0, 0])


# -- fractional max pooling: gradients --------------------------------------------------------

def test_fractional_grad_fn_name():
    x = t64(distinct(1, 1, 6, 6))
    assert type(fractional_max_pool2d(x, 2, 3).grad_fn).__name__ == \
        "FractionalMaxPool2DBackward0"
    x = t64(distinct(1, 1, 6, 6, 6))
    assert type(fractional_max_pool3d(x, 2, 3).grad_fn).__name__ == \
        "FractionalMaxPool3DBackward0"


# -- PyTorch parity and errors ----------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,k,out", [
    ((2, 3, 50, 32), 3, (13, 12)),
    ((3, 9, 8), 2, (8, 7)),
    ((2, 3, 7, 8, 9), (2, 1, 3), (3, 2, 5)),
    ((3, 16, 9, 8), 3, (6, 4, 5)),
])
def test_fractional_matches_torch(shape, k, out, dtype):
    torch = pytest.importorskip("torch")
    n = len(out)
    x = RNG.standard_normal(shape).astype(dtype)
    batch = shape[0] if len(shape) == n + 2 else 1
    samples = RNG.random((batch, shape[-n - 1], n)).astype(dtype)
    name = f"fractional_max_pool{n}d"
    ref = getattr(torch.nn.functional, name)(torch.tensor(x), k, out, return_indices=True,
                                             _random_samples=torch.tensor(samples))
    got = getattr(ember.nn.functional, name)(ember.tensor(x), k, out, return_indices=True,
                                             _random_samples=ember.tensor(samples))
    np.testing.assert_array_equal(got[0].numpy(), ref[0].numpy())
    np.testing.assert_array_equal(got[1].numpy(), ref[1].numpy())


def _f32(*shape):
    return np.zeros(shape, np.float32)


FRACTIONAL_ERRORS = [
    (2, _f32(2, 3, 9, 8), (3,), {}),
    (2, _f32(2, 3, 9, 8), (3, (7, 7)), {}),
    (2, _f32(2, 3, 9, 8), (3, (8, 6)), {}),
    (2, _f32(2, 3, 9, 8), (3, (7, 6)), {"_random_samples": _f32(2, 3, 3)}),
    (2, _f32(2, 3, 9, 8), (3, (7, 6)), {"_random_samples": _f32(1, 3, 2)}),
    (2, _f32(2, 3, 9, 8), (3, (7, 6)), {"_random_samples": _f32(2, 2, 2)}),
    (2, _f32(2, 3, 9, 8), (3, (7, 6)), {"_random_samples": np.zeros((2, 3, 2))}),
    (2, _f32(2, 3, 9, 8), (3, (7, 6)), {"_random_samples": _f32(2, 3)}),
    (2, _f32(2, 3, 9, 8), (3,), {"output_ratio": (0.5, 0.5, 0.5)}),
    (2, _f32(2, 3, 9, 8), ((3, 2, 1), 4), {}),
    (2, _f32(2, 3, 9, 8), (3, (7, -1)), {}),
    (2, _f32(2, 0, 9, 8), (3, (7, 6)), {}),
    (2, _f32(2, 3, 9, 8).astype(np.int32), (3, (7, 6)),
     {"_random_samples": _f32(2, 3, 2).astype(np.int32)}),
    (3, _f32(2, 3, 7, 8, 9), (3,), {}),
    (3, _f32(2, 3, 7, 8, 9), (3, (5, 5, 6)), {}),
    (3, _f32(2, 3, 7, 8, 9), (3, (4, 6, 5)), {}),
    (3, _f32(2, 3, 7, 8, 9), (3, (4, 5, 7)), {}),
    (3, _f32(2, 3, 7, 8, 9), (3, (4, 5, 6)), {"_random_samples": _f32(2, 3, 2)}),
    (3, _f32(2, 3, 0, 8, 9), (3, (4, 5, 6)), {}),
]


@pytest.mark.parity
@pytest.mark.parametrize("n,x,args,kwargs", FRACTIONAL_ERRORS)
def test_fractional_errors_match_torch(n, x, args, kwargs):
    torch = pytest.importorskip("torch")
    name = f"fractional_max_pool{n}d"

    def call(lib, make):
        kw = {k: make(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        return getattr(lib.nn.functional, name)(make(x), *args, **kw)

    with pytest.raises(Exception) as expected:
        call(torch, torch.tensor)
    with pytest.raises(expected.type) as got:
        call(ember, ember.tensor)
    assert str(got.value) == str(expected.value)


def test_fractional_rejects_nonpositive_kernel():
    with pytest.raises(RuntimeError, match="kernel_size must be greater than zero"):
        fractional_max_pool2d(ember.zeros(1, 1, 5, 5), 0, 2)


# -- devices ----------------------------------------------------------------------------------

def test_device_kept(testdev):
    x = t64(distinct(1, 2, 6, 6, 6), False).to(testdev).requires_grad_()
    samples = ember.rand(1, 2, 3, dtype=ember.float64).to(testdev)
    out, idx = fractional_max_pool3d(x, 2, 3, return_indices=True, _random_samples=samples)
    assert out.device == idx.device == testdev
    drawn = fractional_max_pool2d(x[0], 2, 3)  # samples drawn on the input's device
    assert drawn.device == testdev
    (out.sum() + lp_pool3d(x, 2.0, 2).sum() + drawn.sum()).backward()
    assert x.grad.device == testdev
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        fractional_max_pool3d(x, 2, 3, _random_samples=samples.cpu())
