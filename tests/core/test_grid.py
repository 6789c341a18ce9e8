"""affine_grid and grid_sample (ember.ops.grid): a NumPy loop reference, identities, float64
gradchecks for the input and the grid, PyTorch parity (values and both gradients), errors and
the test device."""

import itertools
import warnings

import numpy as np
import pytest
from testutils import t64

import ember
from ember.autograd import gradcheck, gradgradcheck
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


def ref_bilinear_2d(x, g, padding_mode, align_corners):
    """One output value at a time: PyTorch's documented bilinear sampling (zeros/border)."""
    N, C, H, W = x.shape
    out = np.zeros((N, C) + g.shape[1:3])

    def unnorm(v, size):
        return (v + 1) / 2 * (size - 1) if align_corners else ((v + 1) * size - 1) / 2

    def read(n, yy, xx):
        if padding_mode == "border":
            yy, xx = min(max(yy, 0), H - 1), min(max(xx, 0), W - 1)
        if 0 <= yy < H and 0 <= xx < W:
            return x[n, :, yy, xx]
        return np.zeros(C)

    for n, i, j in itertools.product(range(N), range(g.shape[1]), range(g.shape[2])):
        px, py = unnorm(g[n, i, j, 0], W), unnorm(g[n, i, j, 1], H)
        if padding_mode == "border":
            px, py = min(max(px, 0), W - 1), min(max(py, 0), H - 1)
        x0, y0 = int(np.floor(px)), int(np.floor(py))
        fx, fy = px - x0, py - y0
        out[n, :, i, j] = ((1 - fx) * (1 - fy) * read(n, y0, x0) + fx * (1 - fy) *
                           read(n, y0, x0 + 1) + (1 - fx) * fy * read(n, y0 + 1, x0) +
                           fx * fy * read(n, y0 + 1, x0 + 1))
    return out


# -- values without PyTorch ----------------------------------------------------------------

@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_bilinear_matches_loop_reference(padding_mode, align_corners):
    x, g = random_case(2)
    out = grid_sample(t64(x, False), t64(g, False), "bilinear", padding_mode, align_corners)
    np.testing.assert_allclose(out.numpy(), ref_bilinear_2d(x, g, padding_mode, align_corners),
                               atol=1e-12)


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
    assert ember.grid_sampler is grid_sampler and ember.affine_grid_generator is \
        affine_grid_generator
    with pytest.raises(RuntimeError, match="expected 5D input"):
        grid_sampler_3d(t64(x, False), t64(g, False), 0, 0, False)


def test_empty_batch_and_channels():
    out = grid_sample(ember.zeros(0, 3, 4, 5), ember.zeros(0, 2, 6, 2), align_corners=False)
    assert out.shape == (0, 3, 2, 6)
    out = grid_sample(ember.zeros(2, 0, 4, 5), ember.zeros(2, 2, 6, 2), align_corners=False)
    assert out.shape == (2, 0, 2, 6)


# -- gradients --------------------------------------------------------------------------------

@pytest.mark.parametrize("mode,padding_mode,align_corners",
                         [(m, p, a) for m in ("bilinear", "bicubic") for p in PADDINGS
                          for a in (False, True)])
def test_gradcheck_input_and_grid_2d(mode, padding_mode, align_corners):
    x, g = random_case(2, n=1, c=2)
    fn = lambda a, b: grid_sample(a, b, mode, padding_mode, align_corners)
    assert gradcheck(fn, (t64(x), t64(g)))


@pytest.mark.parametrize("padding_mode", PADDINGS)
def test_gradcheck_trilinear(padding_mode):
    x, g = random_case(3, n=1, c=2)
    fn = lambda a, b: grid_sample(a, b, "bilinear", padding_mode, False)
    assert gradcheck(fn, (t64(x), t64(g)))


@pytest.mark.parametrize("nd", [2, 3])
def test_gradcheck_nearest_input(nd):
    x, g = random_case(nd, n=1, c=2)
    grid = t64(g, False)
    assert gradcheck(lambda a: grid_sample(a, grid, "nearest", "reflection", True), (t64(x),))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_double_backward(mode):
    x, g = random_case(2, n=1, c=2)
    fn = lambda a, b: grid_sample(a, b, mode, "border", False)
    assert gradgradcheck(fn, (t64(x), t64(g)))


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("align_corners", [False, True])
def test_gradcheck_affine_grid(nd, align_corners):
    size = (2, 3, 4, 5) if nd == 2 else (2, 1, 2, 3, 4)
    theta = t64(RNG.standard_normal((2, nd, nd + 1)))
    assert gradcheck(lambda t: affine_grid(t, size, align_corners), (theta,))


def test_spatial_transformer_chain_gradcheck():
    x, _ = random_case(2, n=1, c=1)
    theta = t64(np.array([[[0.9, 0.2, 0.1], [-0.1, 1.1, -0.2]]]))
    fn = lambda a, t: grid_sample(a, affine_grid(t, a.shape, False), align_corners=False)
    assert gradcheck(fn, (t64(x), theta))


# -- PyTorch parity ---------------------------------------------------------------------------

PARITY = [(nd, m, p, a) for nd in (2, 3) for m in MODES for p in PADDINGS for a in (False, True)
          if not (nd == 3 and m == "bicubic")]


@pytest.mark.parity
@pytest.mark.parametrize("nd,mode,padding_mode,align_corners", PARITY)
def test_grid_sample_matches_torch(nd, mode, padding_mode, align_corners):
    torch = pytest.importorskip("torch")
    x, g = random_case(nd)
    w = RNG.standard_normal(x.shape[:2] + g.shape[1:-1])
    tx, tg = (torch.tensor(a, requires_grad=True) for a in (x, g))
    ex, eg = t64(x), t64(g)
    t_out = torch.nn.functional.grid_sample(tx, tg, mode, padding_mode, align_corners)
    e_out = grid_sample(ex, eg, mode, padding_mode, align_corners)
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), atol=1e-12)
    (t_out * torch.tensor(w)).sum().backward()
    (e_out * ember.tensor(w)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), atol=1e-12)
    e_grid_grad = 0 if eg.grad is None else eg.grad.numpy()  # nearest: no graph, zero in torch
    np.testing.assert_allclose(e_grid_grad, tg.grad.numpy(), atol=1e-12)


@pytest.mark.parity
@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_float32_matches_torch(mode):
    torch = pytest.importorskip("torch")
    x, g = (a.astype(np.float32) for a in random_case(2))
    t_out = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g), mode, "border",
                                            False)
    e_out = grid_sample(ember.tensor(x), ember.tensor(g), mode, "border", False)
    assert e_out.dtype is ember.float32
    np.testing.assert_allclose(e_out.numpy(), t_out.numpy(), rtol=1e-5, atol=1e-5)


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
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 1, 1, 3), (2, 3, 2, 4, 5), (1, 2, 1, 1, 3)])
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
