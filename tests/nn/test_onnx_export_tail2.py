"""ember.onnx.export, the last ops of the registry: as_strided and as_strided_scatter (overlapping
views included), resize_as_, nonzero_static, unique_consecutive (flat and along a dim),
histogram (given, fixed-range and data-range edges, weights, density), fractional max pooling
(given and drawn samples, ties, NaN), ctc_loss (an ONNX Loop over time) and hash_tensor (the
64-bit patterns without a bit cast).

Each exported graph passes ``onnx.checker`` and ONNX's strict shape inference, runs in
onnxruntime, and is compared with Ember's eager result: floats at 1e-5, integers exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from testutils import onnx_check, onnx_compare  # noqa: E402
from testutils import onnx_run as run  # noqa: E402

from ember.onnx import export as onnx_export  # noqa: E402

RNG = np.random.default_rng(15)
TOL = {"rtol": 1e-5, "atol": 1e-6}


def tensor(values, dtype=np.float32):
    return ember.tensor(np.asarray(values, dtype=dtype))


def randn(*shape, dtype=np.float32):
    return tensor(RNG.standard_normal(shape), dtype)


def export_and_compare(fn, args, *, opset=13, exact=False):
    """Export, check, run; the outputs equal eager's (same dtype and shape)."""
    return onnx_compare(fn, args, opset=opset, exact=exact, **TOL)[1]


# -- as_strided, as_strided_scatter, resize_as_ -------------------------------------------------

@pytest.mark.parametrize("geometry", [((2, 2), (1, 2), None), ((3, 3), (1, 1), 2),
                                      ((2, 3, 2), (4, 1, 0), 1), ((), (), 5), ((0, 4), (1, 1), 0),
                                      ((12,), (1,), 0)])
def test_as_strided(geometry):
    size, stride, offset = geometry
    x = tensor(np.arange(12).reshape(3, 4), np.float32)
    export_and_compare(lambda x: ember.as_strided(x, size, stride, offset), (x,), exact=True)
    export_and_compare(lambda x: x.as_strided(size, stride, offset), (x.long(),))


def test_as_strided_sliding_windows_of_a_computed_tensor():
    x = randn(10)
    export_and_compare(lambda x: (x * 2).as_strided((4, 3), (2, 1)).sum(-1), (x,))


def test_as_strided_past_the_input_is_refused():
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="past the input"):
        onnx_export(lambda x: ember.as_strided(x[:2], (3, 4), (4, 1), 0), (randn(4, 4),),
                    opset_version=13)


@pytest.mark.parametrize("geometry", [((2, 2), (1, 2), None), ((3, 3), (1, 1), 2),
                                      ((2, 2), (0, 1), 3), ((0, 3), (1, 1), 0),
                                      ((3, 4), (4, 1), 0)])
def test_as_strided_scatter_overlaps_write_as_eager(geometry):
    size, stride, offset = geometry
    x = randn(3, 4)
    src = tensor(np.arange(int(np.prod(size))).reshape(size) + 100.0)
    export_and_compare(lambda x, s: ember.as_strided_scatter(x, s, size, stride, offset),
                       (x, src), exact=True)
    export_and_compare(lambda x, s: x.as_strided_scatter(s.double(), size, stride, offset),
                       (x, src))  # src cast to the input's dtype


@pytest.mark.parametrize("shapes", [((3, 4), (2, 6)), ((3, 4), (2, 3)), ((3, 4), (5,)),
                                    ((3, 4), (4, 4)), ((2, 3), (0, 2)), ((3, 4), (3, 4))])
def test_resize_as(shapes):
    src_shape, template_shape = shapes
    x = tensor(np.arange(np.prod(src_shape)).reshape(src_shape) + 1.0)
    template = randn(*template_shape)
    export_and_compare(lambda x, t: x.clone().resize_as_(t), (x, template), exact=True)


def test_resize_as_channels_last():
    x = tensor(np.arange(48).reshape(2, 3, 2, 4), np.int64)
    t = randn(2, 4, 2, 3)
    export_and_compare(lambda x, t: x.clone().resize_as_(
        t, memory_format=ember.channels_last).contiguous(), (x, t))
    t5 = randn(1, 2, 2, 3, 2)
    export_and_compare(lambda x, t: x.clone().resize_as_(
        t, memory_format=ember.channels_last_3d).contiguous(), (x, t5))


# -- nonzero_static, unique_consecutive ---------------------------------------------------------

@pytest.mark.parametrize("size,fill", [(3, -1), (6, 7), (0, -1), (20, -5)])
def test_nonzero_static(size, fill):
    x = tensor([[0.0, 1.5, 0.0], [-2.0, 0.0, np.nan], [-0.0, 3.0, 0.0]])
    export_and_compare(lambda x: ember.nonzero_static(x, size=size, fill_value=fill), (x,))
    export_and_compare(lambda x: ember.nonzero_static(x, size=size, fill_value=fill),
                       (tensor([True, False, True, True], bool),))
    export_and_compare(lambda x: x.nonzero_static(size=size), (tensor(np.zeros((2, 0)), np.int64),))


def test_nonzero_static_of_a_0d_tensor():
    export_and_compare(lambda x: ember.nonzero_static(x, size=3), (tensor(2.0),))


def _all_outputs(dim=None):
    return lambda x: ember.unique_consecutive(x, return_inverse=True, return_counts=True, dim=dim)


def test_unique_consecutive_flat():
    x = tensor([[1, 1, 2, 2], [2, 3, 1, 1], [1, 5, 5, 5]], np.int64)
    export_and_compare(_all_outputs(), (x,))
    export_and_compare(lambda x: ember.unique_consecutive(x), (x,))
    export_and_compare(lambda x: ember.unique_consecutive(x, return_counts=True), (x,))
    export_and_compare(lambda x: ember.unique_consecutive(x, return_inverse=True), (x,))
    floats = tensor([np.nan, np.nan, 1.0, 1.0, -0.0, 0.0, np.inf, np.inf])  # NaNs never equal
    export_and_compare(_all_outputs(), (floats,))
    export_and_compare(_all_outputs(), (tensor([True, True, False, True], bool),))


def test_unique_consecutive_empty_single_and_0d():
    export_and_compare(_all_outputs(), (tensor(np.zeros(0)),))
    export_and_compare(_all_outputs(), (tensor([4.0]),))
    export_and_compare(_all_outputs(), (tensor(3.0),))
    export_and_compare(_all_outputs(), (tensor(np.full((2, 3), 7.0)),))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_consecutive_along_a_dim(dim):
    x = tensor([[1, 1, 2, 2, 2], [3, 3, 4, 4, 3], [3, 3, 4, 4, 3], [1, 1, 2, 2, 2]], np.int64)
    export_and_compare(_all_outputs(dim), (x,))
    export_and_compare(lambda x: ember.unique_consecutive(x, dim=dim), (x.float(),))


def test_unique_consecutive_along_a_dim_of_3d_and_empty_slices():
    x = tensor(RNG.integers(0, 2, (4, 2, 3)), np.int64)
    x = ember.cat([x[:1], x[:1], x, x[-1:]])
    export_and_compare(_all_outputs(0), (x,))
    export_and_compare(_all_outputs(2), (x,))
    # (rows of zero elements along dim 0: PyTorch refuses them, "There are 0 sized dimensions,
    # and they aren't selected", and so does Ember since session 42)


def test_unique_consecutive_runs_at_other_sizes():
    proto = onnx_export(_all_outputs(), (tensor([1, 1, 2], np.int64),), opset_version=13,
                        dynamic_axes={"x": {0: "n"}})
    onnx_check(proto)
    for values in ([5, 5, 5, 1, 1, 5], [], [2]):
        x = tensor(values, np.int64)
        want = [t.numpy() for t in _all_outputs()(x)]
        for g, w in zip(run(proto, x), want):
            np.testing.assert_array_equal(g, w)


# -- histogram ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_histogram_with_bin_counts(dt):
    x = tensor(RNG.uniform(-3, 3, (4, 25)), dt)
    x.numpy()[0, :5] = [-1.0, 1.0, np.nan, 2.5, -2.5]
    export_and_compare(lambda x: ember.histogram(x, 7, range=(-1.0, 1.0)), (x,))
    export_and_compare(lambda x: ember.histogram(x, 3, range=(2.0, 2.0)), (x,))  # widened
    y = tensor(RNG.uniform(-0.3, 0.7, 37), dt)
    export_and_compare(lambda x: ember.histogram(x, 5), (y,))  # the data's range
    export_and_compare(lambda x: ember.histogram(x, 11), (y * 1e3 + 0.1,))
    export_and_compare(lambda x: ember.histogram(x, 4), (tensor(np.full(6, 3.0), dt),))


def test_histogram_of_no_data():
    export_and_compare(lambda x: ember.histogram(x, 4), (tensor(np.zeros(0)),))
    export_and_compare(lambda x: ember.histogram(x, 4, range=(0.0, 2.0)), (tensor(np.zeros(0)),))


def test_histogram_with_edges_weights_and_density():
    x = tensor(RNG.uniform(0, 4, (5, 6)), np.float64)
    x.numpy()[0, :3] = [0.5, 2.0, 4.0]  # on edges
    edges = tensor([0.5, 1.0, 2.0, 3.5], np.float64)
    w = tensor(RNG.uniform(0, 2, (5, 6)), np.float64)
    export_and_compare(lambda x, e: ember.histogram(x, e), (x, edges))
    export_and_compare(lambda x, e, w: ember.histogram(x, e, weight=w, density=True),
                       (x, edges, w))
    export_and_compare(lambda x, w: ember.histogram(x, 6, weight=w), (x, w))
    export_and_compare(lambda x, w: ember.histogram(x, 6, range=(1.0, 3.0), weight=w,
                                                    density=True), (x.float(), w.float()))
    export_and_compare(lambda x: ember.histogram(x, 8, density=True), (x,))


# -- fractional max pooling ---------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [{"kernel_size": 2, "output_size": 4},
                                    {"kernel_size": (3, 2), "output_size": (3, 5)},
                                    {"kernel_size": 2, "output_ratio": 0.5},
                                    {"kernel_size": 1, "output_size": 1},
                                    {"kernel_size": 3, "output_size": (6, 1)}])
def test_fractional_max_pool2d_with_samples(kwargs):
    x = randn(2, 3, 8, 7)
    samples = tensor(RNG.random((2, 3, 2)))
    export_and_compare(lambda x, s: F.fractional_max_pool2d(x, _random_samples=s,
                                                            return_indices=True, **kwargs),
                       (x, samples))
    export_and_compare(lambda x, s: F.fractional_max_pool2d(x, _random_samples=s, **kwargs),
                       (x[0], samples[:1]))  # unbatched


def test_fractional_max_pool_ties_nan_and_inf_pick_as_eager():
    x = tensor(RNG.integers(0, 3, (1, 2, 9, 9)))  # many ties: the first maximum
    x.numpy()[0, 0, 1, 1] = np.nan
    x.numpy()[0, 0, 1, 2] = np.nan  # two NaNs in a window: the last one
    x.numpy()[0, 1, :4, :4] = -np.inf
    samples = tensor([[[0.1, 0.7], [0.9, 0.0]], [[0.5, 0.5], [0.3, 0.2]]])
    export_and_compare(lambda x, s: F.fractional_max_pool2d_with_indices(x, 3, 4,
                                                                         _random_samples=s),
                       (x, samples))
    export_and_compare(lambda x, s: F.fractional_max_pool2d(x, (2, 3), (4, 3),
                                                            return_indices=True,
                                                            _random_samples=s),
                       (x.double(), samples.double()))


def test_fractional_max_pool_of_half_rounds_the_starts_as_eager():
    """float16 window starts step in float16 (each step rounded), as Ember's kernel."""
    for _ in range(3):
        x = randn(2, 3, 40, 33, dtype=np.float16)
        samples = tensor(RNG.random((2, 3, 2)), np.float16)
        export_and_compare(lambda x, s: F.fractional_max_pool2d(
            x, 3, (29, 17), return_indices=True, _random_samples=s), (x, samples))


@pytest.mark.parametrize("kwargs", [{"kernel_size": 2, "output_size": 3},
                                    {"kernel_size": (2, 1, 3), "output_size": (2, 4, 2)}])
def test_fractional_max_pool3d_with_samples(kwargs):
    x = randn(2, 2, 5, 6, 6)
    samples = tensor(RNG.random((3, 2, 3)))  # more sample rows than the batch
    export_and_compare(lambda x, s: F.fractional_max_pool3d(x, _random_samples=s,
                                                            return_indices=True, **kwargs),
                       (x, samples))
    export_and_compare(lambda x, s: F.fractional_max_pool3d_with_indices(
        x, _random_samples=s, **kwargs), (x[1], samples[:1]))


def test_fractional_max_pool_with_drawn_samples_picks_window_maxima():
    """Without ``_random_samples`` the graph draws them (RandomUniformLike): each pick is the
    maximum of a 2x2 window that holds it, the first windows start at 0, the last ones end
    at the input's end, and the windows move forward."""
    x = randn(2, 3, 9, 8)
    proto = onnx_export(lambda x: F.fractional_max_pool2d(x, 2, (5, 4), return_indices=True),
                        (x,), opset_version=13)
    onnx_check(proto)
    a = x.numpy()
    for _ in range(3):
        v, i = run(proto, x)
        assert v.shape == i.shape == (2, 3, 5, 4) and i.dtype == np.int64
        rows, cols = i // 8, i % 8
        np.testing.assert_array_equal(v, a[np.arange(2)[:, None, None, None],
                                           np.arange(3)[None, :, None, None], rows, cols])
        assert set(np.unique(rows[:, :, 0])) <= {0, 1} and set(np.unique(rows[:, :, -1])) <= {7, 8}
        assert set(np.unique(cols[..., 0])) <= {0, 1} and set(np.unique(cols[..., -1])) <= {6, 7}
        assert (np.diff(rows, axis=2) >= 0).all() and (np.diff(cols, axis=3) >= 0).all()
        for n, ch, r, q in np.ndindex(*v.shape):
            row, col = rows[n, ch, r, q], cols[n, ch, r, q]
            assert any(v[n, ch, r, q] == a[n, ch, r0:r0 + 2, c0:c0 + 2].max()
                       for r0 in {max(row - 1, 0), min(row, 7)}
                       for c0 in {max(col - 1, 0), min(col, 6)})


# -- ctc_loss -----------------------------------------------------------------------------------

def _ctc_case(T=12, N=3, C=5, S=4, dtype=np.float32):
    lp = ember.tensor(RNG.standard_normal((T, N, C)).astype(dtype)).log_softmax(2)
    targets = ember.tensor(RNG.integers(1, C, (N, S)))
    targets.numpy()[0, 1] = targets.numpy()[0, 0]  # a repeated label: no blank skip
    il = ember.tensor([T, T - 3, 5][:N])
    tl = ember.tensor([S, 2, 0][:N])
    return lp, targets, il, tl


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_ctc_loss_padded_targets(reduction, dt):
    lp, targets, il, tl = _ctc_case(dtype=dt)
    export_and_compare(lambda lp, t, il, tl: F.ctc_loss(lp, t, il, tl, reduction=reduction),
                       (lp, targets, il, tl))


def test_ctc_loss_concatenated_targets_lists_and_blank():
    lp, targets, il, tl = _ctc_case()
    flat = ember.tensor([1, 1, 3, 2, 4, 2])
    export_and_compare(lambda lp, t: F.ctc_loss(lp, t, [12, 9, 5], [4, 2, 0],
                                                reduction="none"), (lp, flat))
    export_and_compare(lambda lp, t, il, tl: F.ctc_loss(lp, t, il, tl, blank=4),
                       (lp, targets.clamp(0, 3), il, tl))
    export_and_compare(lambda lp, t, il, tl: ember.ctc_loss(lp, t, il, tl, 0, 2),
                       (lp, targets, il, tl))  # the ATen op, reduction as an int


def test_ctc_loss_impossible_alignments_and_zero_infinity():
    lp, targets, _, _ = _ctc_case(T=4, N=2)
    il, tl = ember.tensor([4, 2]), ember.tensor([4, 3])  # too short: infinite loss
    args = (lp, targets, il, tl)
    export_and_compare(lambda *a: F.ctc_loss(*a, reduction="none"), args)
    export_and_compare(lambda *a: F.ctc_loss(*a, zero_infinity=True), args)


def test_ctc_loss_unbatched_and_single_step():
    lp = ember.tensor(RNG.standard_normal((7, 4)).astype(np.float32)).log_softmax(1)
    export_and_compare(lambda lp, t: F.ctc_loss(lp, t, ember.tensor(7), ember.tensor(3)),
                       (lp, ember.tensor([1, 2, 2])))
    one = lp[:1]
    export_and_compare(lambda lp, t: F.ctc_loss(lp, t, [1], [1], reduction="sum"),
                       (one, ember.tensor([[2]])))


def test_ctc_loss_runs_at_other_lengths():
    lp, targets, il, tl = _ctc_case()

    def fn(lp, t, il, tl):
        return F.ctc_loss(lp, t, il, tl, reduction="none")

    proto = onnx_export(fn, (lp, targets, il, tl), opset_version=13,
                        dynamic_axes={"lp": {0: "T"}})
    onnx_check(proto)
    lp2 = ember.tensor(RNG.standard_normal((20, 3, 5)).astype(np.float32)).log_softmax(2)
    il2 = ember.tensor([20, 17, 3])
    np.testing.assert_allclose(run(proto, lp2, targets, il2, tl)[0],
                               fn(lp2, targets, il2, tl).numpy(), **TOL)


# -- hash_tensor --------------------------------------------------------------------------------

def _float_edges(dt):
    info = np.finfo(dt)
    return np.array([0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -7.25, 1e-3, np.inf, -np.inf, np.nan,
                     info.max, -info.max, info.tiny, info.smallest_subnormal,
                     -3 * info.smallest_subnormal, 2.0 ** 10], dtype=dt)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_hash_tensor_of_floats_is_exact(dt):
    x = tensor(np.concatenate([_float_edges(dt), RNG.standard_normal(23).astype(dt)]), dt)
    export_and_compare(lambda x: ember.hash_tensor(x), (x,))
    export_and_compare(lambda x: ember.hash_tensor(x.reshape(8, 5), 1), (x,))
    export_and_compare(lambda x: ember.hash_tensor(x.reshape(2, 4, 5), (0, 2), keepdim=True),
                       (x,))
    bits = export_and_compare(lambda x: ember.hash_tensor(x.reshape(40, 1), 1), (x,))[0]
    want = np.asarray(x.numpy(), np.float64).view(np.int64)
    nan = np.isnan(x.numpy())
    np.testing.assert_array_equal(bits[~nan], want[~nan])  # each element's own pattern


@pytest.mark.parametrize("dt", [np.int64, np.int32, np.uint8, np.int8, bool])
def test_hash_tensor_of_integers(dt):
    info = np.iinfo(dt) if dt is not bool else None
    values = RNG.integers(0, 2, 30) if dt is bool else \
        RNG.integers(info.min, info.max, 30, dtype=dt, endpoint=True)
    if info is not None:
        values[:2] = [info.min, info.max]
    x = tensor(values, dt)
    export_and_compare(lambda x: ember.hash_tensor(x), (x,))
    export_and_compare(lambda x: ember.hash_tensor(x.reshape(5, 6), -1), (x,))
    export_and_compare(lambda x: ember.hash_tensor(x.reshape(5, 6), 0, keepdim=True), (x,))


def test_hash_tensor_of_0d_and_empty_dims():
    export_and_compare(lambda x: ember.hash_tensor(x), (tensor(-2.5),))
    export_and_compare(lambda x: ember.hash_tensor(x, 1), (tensor(np.zeros((3, 0))),))
    export_and_compare(lambda x: ember.hash_tensor(x, 0), (tensor(np.zeros((0, 2)), np.int64),))
