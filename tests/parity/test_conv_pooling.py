"""Parity of convolutions and pooling with torch.nn.functional: values, gradients, indices,
dtypes, shapes, and errors raised in the same cases."""

import numpy as np
import pytest

import ember
from ember.ops import conv as C
from ember.ops import pooling as P

torch = pytest.importorskip("torch")
F = torch.nn.functional

RNG = np.random.default_rng(7)
pytestmark = pytest.mark.filterwarnings("ignore:Using padding=.same.:UserWarning")

EMBER_FN = {
    "unfold": C.unfold, "fold": C.fold,
    **{name: getattr(P, name) for name in P.__all__},
    **{name: getattr(C, name) for name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d",
                                           "conv_transpose2d", "conv_transpose3d")},
}


def run_both(name, shapes, dtype=np.float32, int_args=(), **kw):
    """Run ``name`` in both libraries on the same random inputs; compare values and grads."""
    arrays = [RNG.standard_normal(s).astype(dtype) if s is not None else None for s in shapes]
    e_in = [ember.tensor(a, requires_grad=True) if a is not None else None for a in arrays]
    t_in = [torch.tensor(a, requires_grad=True) if a is not None else None for a in arrays]
    e_out = EMBER_FN[name](*e_in, *int_args, **kw)
    t_out = getattr(F, name)(*t_in, *int_args, **kw)
    if isinstance(t_out, tuple):
        np.testing.assert_array_equal(e_out[1].numpy(), t_out[1].numpy())
        assert e_out[1].dtype == ember.int64
        e_out, t_out = e_out[0], t_out[0]
    assert tuple(e_out.shape) == tuple(t_out.shape)
    assert str(e_out.dtype).split(".")[1] == str(t_out.dtype).split(".")[1]
    tol = 1e-5 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=tol,
                               atol=tol)
    g = RNG.standard_normal(tuple(t_out.shape)).astype(dtype)
    e_out.backward(ember.tensor(g))
    t_out.backward(torch.tensor(g))
    for e, t in zip(e_in, t_in):
        if e is not None:
            # float32 sums over batch and positions: error relative to the largest entry
            scale = max(1.0, float(np.abs(t.grad.numpy()).max()))
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=tol * 10,
                                       atol=tol * 10 * scale)


@pytest.mark.parametrize("name, shapes, kw", [
    ("conv2d", [(4, 3, 9, 8), (6, 3, 3, 3), (6,)], dict(stride=2, padding=1)),
    ("conv2d", [(2, 4, 9, 8), (6, 2, 4, 2), None], dict(padding="same", dilation=(2, 1),
                                                        groups=2)),
    ("conv2d", [(2, 4, 9, 8), (8, 1, 3, 3), (8,)], dict(groups=4, padding=(0, 2))),
    ("conv2d", [(3, 9, 8), (5, 3, 3, 3), (5,)], dict(stride=(1, 2), dilation=2)),
    ("conv2d", [(32, 3, 32, 32), (16, 3, 3, 3), (16,)], dict(padding=1)),
    ("conv2d", [(16, 1, 28, 28), (6, 1, 5, 5), (6,)], dict()),
    ("conv1d", [(3, 4, 17), (6, 2, 5), (6,)], dict(stride=3, padding=2, groups=2)),
    ("conv1d", [(3, 4, 17), (6, 4, 4), None], dict(padding="same", dilation=3)),
    ("conv3d", [(2, 2, 5, 6, 5), (4, 2, 3, 2, 3), (4,)], dict(stride=(2, 1, 1), padding=1)),
    ("conv_transpose2d", [(2, 4, 5, 6), (4, 3, 3, 3), (3,)], dict(stride=2, padding=1,
                                                                output_padding=1)),
    ("conv_transpose2d", [(2, 4, 5, 6), (4, 2, 2, 3), (4,)], dict(stride=(3, 2), groups=2,
                                                                dilation=(1, 2),
                                                                output_padding=(1, 0))),
    ("conv_transpose1d", [(2, 4, 7), (4, 3, 4), (3,)], dict(stride=2, padding=1)),
    ("conv_transpose2d", [(4, 5, 6), (4, 3, 3, 3), None], dict(stride=2)),
    ("conv_transpose3d", [(1, 2, 3, 4, 3), (2, 2, 2, 2, 2), None], dict(stride=2)),
])
def test_conv_parity(name, shapes, kw):
    run_both(name, shapes, **kw)


def test_conv_float64_parity():
    run_both("conv2d", [(2, 3, 7, 7), (4, 3, 3, 3), (4,)], dtype=np.float64, stride=2)


@pytest.mark.parametrize("name, shape, args, kw", [
    ("max_pool2d", (4, 3, 9, 8), (2,), dict(return_indices=True)),
    ("max_pool2d", (4, 3, 9, 8), (3, 2, 1), dict(return_indices=True, ceil_mode=True)),
    ("max_pool2d", (4, 3, 9, 8), ((3, 2), (2, 1), (1, 1)), dict(dilation=(2, 1),
                                                                return_indices=True)),
    ("max_pool2d", (3, 9, 8), (2, 1), dict(return_indices=True)),
    ("max_pool1d", (4, 3, 11), (3, 2, 1), dict(ceil_mode=True, return_indices=True)),
    ("avg_pool2d", (4, 3, 9, 8), (3, 2, 1), dict()),
    ("avg_pool2d", (4, 3, 9, 8), (3, 2, 1), dict(ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d", (4, 3, 9, 8), ((2, 3), 2), dict(ceil_mode=True, divisor_override=4)),
    ("avg_pool1d", (4, 3, 11), (4, 3, 2), dict(ceil_mode=True)),
    ("adaptive_avg_pool2d", (4, 3, 9, 8), ((4, 3),), dict()),
    ("adaptive_avg_pool2d", (4, 3, 9, 8), (1,), dict()),
    ("adaptive_avg_pool1d", (4, 3, 11), (4,), dict()),
    ("adaptive_max_pool2d", (4, 3, 9, 8), ((4, 5),), dict(return_indices=True)),
    ("adaptive_max_pool1d", (4, 3, 11), (4,), dict(return_indices=True)),
    ("lp_pool2d", (2, 3, 8, 8), (2.0, 3, 2), dict()),
    ("max_pool3d", (2, 2, 5, 6, 5), (3, 2, 1), dict(return_indices=True, ceil_mode=True)),
    ("avg_pool3d", (2, 2, 5, 6, 5), (3, 2, 1), dict(count_include_pad=False)),
    ("adaptive_avg_pool3d", (2, 2, 5, 6, 5), ((2, 4, 3),), dict()),
    ("adaptive_max_pool3d", (2, 2, 5, 6, 5), ((2, 4, 3),), dict(return_indices=True)),
])
def test_pool_parity(name, shape, args, kw):
    run_both(name, [shape], int_args=args, **kw)


def test_max_unpool_parity():
    x = RNG.standard_normal((2, 3, 8, 6)).astype(np.float32)
    tv, ti = F.max_pool2d(torch.tensor(x), 2, return_indices=True)
    ev, ei = P.max_pool2d(ember.tensor(x), 2, return_indices=True)
    np.testing.assert_array_equal(
        P.max_unpool2d(ev, ei, 2, output_size=(8, 6)).numpy(),
        F.max_unpool2d(tv, ti, 2, output_size=(8, 6)).numpy())
    x1 = RNG.standard_normal((2, 3, 9)).astype(np.float32)
    tv, ti = F.max_pool1d(torch.tensor(x1), 3, return_indices=True)
    ev, ei = P.max_pool1d(ember.tensor(x1), 3, return_indices=True)
    np.testing.assert_array_equal(P.max_unpool1d(ev, ei, 3).numpy(),
                                  F.max_unpool1d(tv, ti, 3).numpy())


def test_unfold_fold_parity():
    run_both("unfold", [(2, 3, 7, 6)], int_args=((2, 3),), dilation=(2, 1), padding=1,
             stride=(1, 2))
    run_both("fold", [(2, 12, 12)], int_args=((5, 6), 2), padding=1, stride=2)


def test_grad_fn_names_match():
    def names(lib, fns):
        x = lib.ones(1, 2, 6, 6, requires_grad=True)
        w = lib.ones(2, 2, 3, 3, requires_grad=True)
        return [fns[n](x, *a).grad_fn.name() for n, a in
                (("conv2d", (w,)), ("max_pool2d", (2,)), ("avg_pool2d", (2,)),
                 ("adaptive_max_pool2d", (2,)))]
    assert names(ember, EMBER_FN) == names(torch, vars(F))


ERROR_CASES = [
    ("conv2d", [(1, 4, 5, 5), (8, 3, 3, 3)], {}),
    ("conv2d", [(4, 5), (8, 4, 3, 3)], {}),
    ("conv2d", [(1, 4, 2, 2), (8, 4, 3, 3)], {}),
    ("conv2d", [(1, 4, 5, 5), (8, 2, 3, 3)], dict(groups=3)),
    ("conv2d", [(1, 4, 5, 5), (8, 4, 3, 3), (3,)], {}),
    ("conv2d", [(1, 4, 5, 5), (8, 4, 3, 3)], dict(stride=0)),
    ("conv2d", [(1, 4, 5, 5), (8, 4, 3, 3)], dict(padding=-1)),
    ("conv2d", [(1, 4, 5, 5), (8, 4, 3, 3)], dict(padding="same", stride=2)),
    ("conv2d", [(1, 4, 5, 5), (8, 4, 3, 3)], dict(padding="foo")),
    ("conv2d", [(1, 4, 5, 5), (8, 4, 3, 3)], dict(stride=(1, 1, 1))),
    ("conv2d", [(1, 4, 5, 5), (8, 4, 3, 3)], dict(dilation=(1, 0))),
    ("conv1d", [(1, 4, 5, 5), (8, 4, 3)], {}),
    ("conv_transpose2d", [(1, 4, 5, 5), (3, 4, 3, 3)], {}),
    ("conv_transpose2d", [(1, 4, 5, 5), (4, 4, 3, 3)], dict(output_padding=(1, 0))),
    ("conv_transpose2d", [(5, 5), (4, 4, 3, 3)], {}),
    ("conv_transpose1d", [(1, 4, 5), (4, 4, 3)], dict(output_padding=1)),
    ("max_pool2d", [(1, 4, 5, 5)], dict(kernel_size=3, padding=2)),
    ("max_pool2d", [(1, 4, 2, 2)], dict(kernel_size=3)),
    ("max_pool2d", [(1, 4, 5, 5)], dict(kernel_size=2, stride=0)),
    ("max_pool2d", [(1, 4, 5, 5)], dict(kernel_size=2, padding=-1)),
    ("max_pool1d", [(1, 4, 5, 5, 5)], dict(kernel_size=2)),
    ("avg_pool2d", [(1, 4, 5, 5)], dict(kernel_size=3, padding=2)),
    ("avg_pool2d", [(1, 4, 2, 2)], dict(kernel_size=3)),
    ("avg_pool1d", [(4, 5, 5, 5)], dict(kernel_size=3)),
    ("adaptive_avg_pool2d", [(4, 5)], dict(output_size=3)),
    ("adaptive_avg_pool1d", [(1, 2, 5, 5)], dict(output_size=3)),
    ("adaptive_max_pool2d", [(1, 2, 5, 5, 5)], dict(output_size=2)),
    ("fold", [(1, 4, 5)], dict(output_size=(4, 4), kernel_size=2)),
]


@pytest.mark.parametrize("name, shapes, kw", ERROR_CASES)
def test_same_errors(name, shapes, kw):
    e_args = [ember.randn(*s) for s in shapes]
    t_args = [torch.randn(*s) for s in shapes]
    with pytest.raises(RuntimeError) as t_err:
        getattr(F, name)(*t_args, **kw)
    with pytest.raises(RuntimeError) as e_err:
        EMBER_FN[name](*e_args, **kw)
    assert str(e_err.value) == str(t_err.value)


def test_dtype_mismatch_errors_match():
    cases = [((ember.float64, ember.float32, None), (torch.float64, torch.float32, None)),
             ((ember.float32, ember.float32, ember.float64),
              (torch.float32, torch.float32, torch.float64))]
    for (ex, ew, eb), (tx, tw, tb) in cases:
        with pytest.raises(RuntimeError) as t_err:
            F.conv2d(torch.ones(1, 2, 4, 4, dtype=tx), torch.ones(3, 2, 3, 3, dtype=tw),
                     torch.ones(3, dtype=tb) if tb else None)
        with pytest.raises(RuntimeError) as e_err:
            ember.conv2d(ember.ones(1, 2, 4, 4, dtype=ex), ember.ones(3, 2, 3, 3, dtype=ew),
                         ember.ones(3, dtype=eb) if eb else None)
        assert str(e_err.value) == str(t_err.value)


def test_max_pool_nan_parity():
    x = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
    x[0, 0, 1, 1] = x[0, 0, 0, 1] = x[0, 1, 5, 5] = np.nan
    tv, ti = F.max_pool2d(torch.tensor(x), 3, 1, 1, return_indices=True)
    ev, ei = P.max_pool2d(ember.tensor(x), 3, 1, 1, return_indices=True)
    np.testing.assert_array_equal(ev.numpy(), tv.numpy())
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())


def test_max_pool_ties_pick_first_like_torch():
    x = np.round(RNG.standard_normal((2, 3, 7, 7))).astype(np.float32)  # many ties
    for args in ((2,), (3, 1, 1), (3, 2, 1, 2)):
        tv, ti = F.max_pool2d(torch.tensor(x), *args, return_indices=True)
        ev, ei = P.max_pool2d(ember.tensor(x), *args, return_indices=True)
        np.testing.assert_array_equal(ev.numpy(), tv.numpy())
        np.testing.assert_array_equal(ei.numpy(), ti.numpy())


@pytest.mark.parametrize("n, kw", [
    (2, dict(kernel_size=3, stride=1, padding=2, dilation=2)),
    (1, dict(kernel_size=3, stride=1, padding=2, dilation=2)),
    (1, dict(kernel_size=3, stride=1, padding=2, dilation=2, return_indices=True)),
    (3, dict(kernel_size=(3, 2, 2), stride=2, padding=(2, 1, 0), dilation=2)),
])
def test_max_pool_dilated_padding_errors_match(n, kw):
    shape = (1, 2) + (9,) * n
    with pytest.raises(RuntimeError) as t_err:
        getattr(F, f"max_pool{n}d")(torch.randn(*shape), **kw)
    with pytest.raises(RuntimeError) as e_err:
        getattr(P, f"max_pool{n}d")(ember.randn(*shape), **kw)
    assert str(e_err.value) == str(t_err.value)


def test_avg_pool3d_small_input_error_matches():
    with pytest.raises(RuntimeError) as t_err:
        F.avg_pool3d(torch.randn(1, 1, 5, 6, 2), (2, 3, 3), padding=1)
    with pytest.raises(RuntimeError) as e_err:
        P.avg_pool3d(ember.randn(1, 1, 5, 6, 2), (2, 3, 3), padding=1)
    assert str(e_err.value) == str(t_err.value)
