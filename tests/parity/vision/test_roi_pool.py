"""roi_pool, ps_roi_pool and ps_roi_align against torchvision 0.29: values, gradients,
modules, errors."""

import numpy as np
import pytest

import ember
from ember.vision import ops as eops

torchvision = pytest.importorskip("torchvision")
torch = pytest.importorskip("torch")
from torchvision import ops as tops  # noqa: E402


def E(a):
    return ember.from_numpy(np.ascontiguousarray(a))


def T(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def random_rois(rng, k, dtype):
    xy = rng.uniform(-5, 30, (k, 2))
    rois = np.concatenate(
        [rng.integers(0, 2, (k, 1)), xy, xy + rng.uniform(-2, 25, (k, 2))], 1
    ).astype(dtype)
    rois[0, 1:] = [4, 4, 4, 4]  # empty
    rois[1, 1:] = [2.5, 1.5, 6.5, 7.5]  # halves
    rois[2, 1:] = [0, 0, 40, 40]  # reaches the last row and column
    return rois


CASES = [
    ("roi_pool", (5, 3), (0.5,)),
    ("roi_pool", 2, (1.0,)),
    ("ps_roi_pool", (2, 3), (0.5,)),
    ("ps_roi_pool", 2, (1.0,)),
    ("ps_roi_align", (2, 3), (0.5, -1)),
    ("ps_roi_align", 2, (1.0, 2)),
    ("ps_roi_align", (3, 2), (0.25, 0)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,output_size,args", CASES)
def test_values_and_grads_same(dtype, name, output_size, args):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 12, 13, 17)).astype(dtype)
    rois = random_rois(rng, 16, dtype)
    tx, ex = T(x).requires_grad_(), E(x).requires_grad_()
    to = getattr(tops, name)(tx, T(rois), output_size, *args)
    eo = getattr(eops, name)(ex, E(rois), output_size, *args)
    assert tuple(eo.shape) == tuple(to.shape)
    assert str(eo.dtype).split(".")[1] == str(to.dtype).split(".")[1]
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(
        eo.detach().numpy(), to.detach().numpy(), rtol=tol, atol=tol, equal_nan=True
    )
    g = rng.standard_normal(to.shape).astype(dtype)
    to.backward(T(g))
    eo.backward(E(g))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("output_size", [1, 2, 7])
def test_roi_pool_nan_and_inf_and_large_bins_same(output_size):
    rng = np.random.default_rng(15)
    x = rng.standard_normal((2, 5, 40, 40)).astype(np.float32)
    x[0, 0, :20, :20] = np.nan  # NaN never wins the scan
    x[0, 1] = -np.inf  # nor does anything below -FLT_MAX
    x[1, 2, ::3] = np.nan
    rois = np.concatenate([random_rois(rng, 10, np.float32), [[0, 0, 0, 39, 39]]]).astype(
        np.float32
    )
    tx, ex = T(x).requires_grad_(), E(x).requires_grad_()
    to = tops.roi_pool(tx, T(rois), output_size)
    eo = eops.roi_pool(ex, E(rois), output_size)
    np.testing.assert_array_equal(eo.detach().numpy(), to.detach().numpy())
    g = rng.standard_normal(to.shape).astype(np.float32)
    to.backward(T(g))
    eo.backward(E(g))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["roi_pool", "ps_roi_pool", "ps_roi_align"])
def test_list_of_boxes_same(name):
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 8, 10, 10)).astype(np.float32)
    boxes = [random_rois(rng, 4, np.float32)[:, 1:] for _ in range(2)]
    to = getattr(tops, name)(T(x), [T(b) for b in boxes], 2, 0.5)
    eo = getattr(eops, name)(E(x), [E(b) for b in boxes], 2, 0.5)
    np.testing.assert_allclose(eo.numpy(), to.numpy(), rtol=1e-5, atol=1e-6, equal_nan=True)


def test_module_reprs_same():
    for ctor, args in [
        ("RoIPool", ((7, 7), 0.0625)),
        ("RoIPool", (7, 1.0)),
        ("PSRoIPool", (7, 0.5)),
        ("PSRoIAlign", ((7, 7), 0.25, 2)),
    ]:
        assert repr(getattr(eops, ctor)(*args)) == repr(getattr(tops, ctor)(*args))


def test_errors_raised_in_the_same_cases():
    x = np.random.default_rng(13).standard_normal((1, 8, 6, 6)).astype(np.float32)
    rois = np.array([[0, 0, 0, 3, 3]], dtype=np.float32)
    calls = [
        ("ps_roi_align", (x, rois, 3), RuntimeError, "input channels must be a multiple"),
        ("ps_roi_pool", (x, rois, 3), RuntimeError, "input channels must be a multiple"),
        ("roi_pool", (x, rois.astype(np.float64), 3), RuntimeError, "same type as rois"),
        ("roi_align", (x, rois.astype(np.float64), 2), RuntimeError, "same type as rois"),
        ("ps_roi_align", (x, rois.astype(np.float64), 2), RuntimeError, "same type as rois"),
        ("ps_roi_pool", (x, rois.astype(np.float64), 2), RuntimeError, "same type as rois"),
        ("roi_align", (x[0], rois, 2), RuntimeError, "Dimension out of range"),
        ("roi_pool", (x[0], rois, 3), RuntimeError, "Dimension out of range"),
        ("roi_pool", (x, rois[:, :4], 3), AssertionError, "Tensor\\[K, 5\\]"),
    ]
    for name, (inp, r, size), exc, msg in calls:
        for mod, wrap in ((tops, T), (eops, E)):
            with pytest.raises(exc, match=msg):
                getattr(mod, name)(wrap(inp), wrap(r), size)
