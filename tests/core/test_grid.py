"""affine_grid and grid_sample (ember.ops.grid): identities, far and NaN grid values, size-1
dimensions, warnings, PyTorch's errors and the test device. Their values against PyTorch and
float64 gradchecks and gradgradchecks (input and grid) for every mode, padding mode and
align_corners, 4-D and 5-D: the generic tests over the op database (tests/ops/test_ops.py)."""

import warnings

import numpy as np
import pytest
from testutils import t64

import ember
from ember.ops.grid import (
    affine_grid,
    affine_grid_generator,
    grid_sample,
    grid_sampler,
    grid_sampler_2d,
    grid_sampler_3d,
)

RNG = np.random.default_rng(7)
MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")


def random_case(nd, n=2, c=3):
    spatial = (4, 5) if nd == 2 else (3, 4, 5)
    out = (3, 4) if nd == 2 else (2, 3, 2)
    x = RNG.standard_normal((n, c) + spatial)
    g = RNG.uniform(-1.4, 1.4, (n,) + out + (nd,))  # beyond [-1, 1]: every padding path
    return x, g


# -- values -----------------------------------------------------------------------------------

@pytest.mark.parametrize("nd,mode", [(2, m) for m in MODES] + [(3, "bilinear"), (3, "nearest")])
def test_identity_affine_grid_reproduces_input(nd, mode):
    x, _ = random_case(nd)
    theta = np.tile(np.eye(nd, nd + 1), (2, 1, 1))
    for align in (False, True):
        grid = affine_grid(t64(theta, False), x.shape, align)
        out = grid_sample(t64(x, False), grid, mode, "zeros", align)
        np.testing.assert_allclose(out.numpy(), x, atol=1e-12)


def test_affine_grid_translation_shifts_the_image():
    x = np.arange(20.0).reshape(1, 1, 4, 5)
    theta = np.array([[[1.0, 0.0, 2 / 5], [0.0, 1.0, 0.0]]])  # one pixel to the right
    grid = affine_grid(t64(theta, False), (1, 1, 4, 5), False)
    out = grid_sample(t64(x, False), grid, "nearest", "border", False).numpy()
    np.testing.assert_array_equal(out[..., :-1], x[..., 1:])
    np.testing.assert_array_equal(out[..., -1], x[..., -1])


def test_reflection_folds_far_positions_back():
    x = np.arange(5.0).reshape(1, 1, 1, 5)
    # -3.5 reflects by -1 to 1.5, then by 1 to 0.5 (pixel 3); 3 reflects to -1 (pixel 0)
    g = np.array([[[[-3.5, 0.0], [-0.5, 0.0], [3.0, 0.0]]]])
    out = grid_sample(t64(x, False), t64(g, False), "bilinear", "reflection", True).numpy()
    np.testing.assert_allclose(out[0, 0, 0], [3.0, 1.0, 0.0], atol=1e-12)


def test_align_corners_default_warns():
    x, g = random_case(2)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        a = grid_sample(t64(x, False), t64(g, False))
    b = grid_sample(t64(x, False), t64(g, False), align_corners=False)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        affine_grid(t64(np.eye(2, 3)[None], False), (1, 1, 2, 2))


def test_torch_level_functions():
    x, g = random_case(2)
    ref = grid_sample(t64(x, False), t64(g, False), "bicubic", "reflection", True)
    for fn in (grid_sampler, grid_sampler_2d):
        np.testing.assert_array_equal(fn(t64(x, False), t64(g, False), 2, 2, True).numpy(),
                                      ref.numpy())
    x3, g3 = random_case(3)
    np.testing.assert_array_equal(
        grid_sampler_3d(t64(x3, False), t64(g3, False), 1, 1, False).numpy(),
        grid_sample(t64(x3, False), t64(g3, False), "nearest", "border", False).numpy())
    # the registry's fronts of these kernels (ember._front: out=, NumPy keyword names)
    from ember.ops.registry import OPS

    assert OPS["grid_sampler"].kernel is grid_sampler and ember.grid_sampler is OPS[
        "grid_sampler"].fn
    assert OPS["affine_grid_generator"].kernel is affine_grid_generator
    with pytest.raises(RuntimeError, match="expected 5D input"):
        grid_sampler_3d(t64(x, False), t64(g, False), 0, 0, False)


def test_empty_batch_and_channels():
    out = grid_sample(ember.zeros(0, 3, 4, 5), ember.zeros(0, 2, 6, 2), align_corners=False)
    assert out.shape == (0, 3, 2, 6)
    out = grid_sample(ember.zeros(2, 0, 4, 5), ember.zeros(2, 2, 6, 2), align_corners=False)
    assert out.shape == (2, 0, 2, 6)



# -- PyTorch parity ---------------------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding_mode", PADDINGS)
def test_nan_and_far_grid_values_match_torch(mode, padding_mode):
    torch = pytest.importorskip("torch")
    x = np.arange(1.0, 13.0).reshape(1, 1, 3, 4)
    nan = float("nan")
    g = np.array([[[[nan, 0.0], [0.0, nan], [nan, nan], [-1.0, -1.0], [1e30, 0.0],
                    [-7.3, 2.2]]]])
    ref = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g), mode, padding_mode,
                                          False)
    out = grid_sample(t64(x, False), t64(g, False), mode, padding_mode, False)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=1e-12)


@pytest.mark.parity
@pytest.mark.parametrize("size", [(1, 1, 1, 3), (1, 2, 1, 1, 3)])  # size-1 dims
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.filterwarnings("ignore:Since version 1.3.0")
def test_affine_grid_matches_torch(size, align_corners):
    torch = pytest.importorskip("torch")
    nd = len(size) - 2
    theta = RNG.standard_normal((size[0], nd, nd + 1)).astype(np.float32)
    ref = torch.nn.functional.affine_grid(torch.tensor(theta), size, align_corners)
    out = affine_grid(ember.tensor(theta), size, align_corners)
    assert out.shape == tuple(ref.shape) and out.dtype is ember.float32
    np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=1e-6)


# -- errors (PyTorch's words) ---------------------------------------------------------------

def _x(*shape, dtype=np.float32):
    return np.zeros(shape, dtype)


SAMPLE_ERRORS = [
    (_x(2, 3, 5, 6), _x(2, 4, 7, 2), {"mode": "x"}),
    (_x(2, 3, 5, 6), _x(2, 4, 7, 2), {"padding_mode": "x"}),
    (_x(2, 3, 5, 6), _x(3, 4, 7, 2), {}),
    (_x(2, 3, 5, 6), _x(2, 4, 7, 3), {}),
    (_x(2, 3, 5), _x(2, 4, 1), {}),
    (_x(2, 3, 5, 5), _x(2, 4, 5, 2, 2), {}),
    (_x(2, 3, 4, 5, 6), _x(2, 4, 7, 2, 3), {"mode": "bicubic"}),
    (_x(2, 3, 0, 6), _x(2, 4, 7, 2), {}),
    (_x(2, 3, 5, 6), _x(2, 4, 7, 2, dtype=np.float64), {}),
    (_x(2, 3, 5, 6, dtype=np.int32), _x(2, 4, 7, 2), {}),
    (_x(2, 3, 2, 5, 6, dtype=np.int64), _x(2, 4, 1, 7, 3), {}),
]


@pytest.mark.parity
@pytest.mark.parametrize("x,g,kwargs", SAMPLE_ERRORS)
def test_grid_sample_errors_match_torch(x, g, kwargs):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as expected:
        torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g), align_corners=False,
                                        **kwargs)
    with pytest.raises(expected.type) as got:
        grid_sample(ember.tensor(x), ember.tensor(g), align_corners=False, **kwargs)
    assert str(got.value) == str(expected.value)


AFFINE_ERRORS = [
    (_x(2, 2, 3), (2, 3, 4, 5, 6)),
    (_x(2, 3, 4), (2, 3, 4, 5)),
    (_x(2, 2, 3), (2, 3, 4)),
    (_x(2, 2, 3, dtype=np.int32), (2, 3, 4, 5)),
    (_x(2, 2, 3), (2, 3, 0, 5)),
]


@pytest.mark.parity
@pytest.mark.parametrize("theta,size", AFFINE_ERRORS)
def test_affine_grid_errors_match_torch(theta, size):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as expected:
        torch.nn.functional.affine_grid(torch.tensor(theta), size, False)
    with pytest.raises(expected.type) as got:
        affine_grid(ember.tensor(theta), size, False)
    assert str(got.value) == str(expected.value).replace("torch.", "ember.")


# -- devices ----------------------------------------------------------------------------------

def test_device_kept(testdev):
    x, g = random_case(2, n=1, c=2)
    ex = t64(x, False).to(testdev).requires_grad_()
    theta = t64(np.array([[[0.9, 0.1, 0.0], [0.0, 1.0, 0.2]]]), False).to(testdev)
    theta.requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing falls back to the host with a warning
        grid = affine_grid(theta, ex.shape, False)
        for mode in MODES:
            out = grid_sample(ex, grid, mode, "reflection", False)
            assert out.device == testdev
            out.sum().backward(retain_graph=True)
    assert grid.device == testdev and ex.grad.device == testdev
    assert theta.grad.device == testdev
    cpu = t64(x, False)
    np.testing.assert_allclose(
        grid_sample(ex.detach(), grid.detach(), "bicubic", "border", True).cpu().numpy(),
        grid_sample(cpu, grid.detach().cpu(), "bicubic", "border", True).numpy())
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        grid_sample(cpu, grid, align_corners=False)
