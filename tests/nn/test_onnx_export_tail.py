"""ember.onnx.export, the tail of the registry: bilinear, conv_tbc, im2col/col2im (F.unfold and
F.fold), the ATen embedding_bag with all four outputs, grid_sampler_2d/3d, dsplit, combinations,
unravel_index, gradient, frexp and nextafter (exact, without a bit cast), bincount and histc,
mode, index_reduce and lu_unpack.

Each exported graph passes ``onnx.checker`` and ONNX's strict shape inference, runs in
onnxruntime, and is compared with Ember's eager result: floats at 1e-5, integers exactly (and
frexp/nextafter exactly, signs of zero included where stated).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from testutils import onnx_compare  # noqa: E402
from testutils import onnx_run as run  # noqa: E402

from ember.onnx import export as onnx_export  # noqa: E402

RNG = np.random.default_rng(14)
TOL = {"rtol": 1e-5, "atol": 1e-6}


def tensor(values, dtype=np.float32):
    return ember.tensor(np.asarray(values, dtype=dtype))


def randn(*shape, dtype=np.float32):
    return tensor(RNG.standard_normal(shape), dtype)


def export_and_compare(fn, args, *, opset=13, exact=False):
    """Export, check, run; the outputs equal eager's (same dtype and shape)."""
    return onnx_compare(fn, args, opset=opset, exact=exact, **TOL)[1]


# -- nn: bilinear, conv_tbc, unfold/fold, embedding_bag, grid_sampler ---------------------------

def test_bilinear_with_and_without_bias_and_batch_dims():
    x1, x2, w, b = randn(2, 3, 4), randn(2, 3, 5), randn(6, 4, 5), randn(6)
    export_and_compare(lambda a, c, w, b: (F.bilinear(a, c, w, b), ember.bilinear(a, c, w)),
                       (x1, x2, w, b))
    export_and_compare(lambda a, c, w, b: F.bilinear(a, c, w, b),
                       (randn(4), randn(5), w, b))  # no batch dims


@pytest.mark.parametrize("pad", [0, 2])
def test_conv_tbc(pad):
    x, w, b = randn(7, 2, 3), randn(3, 3, 4), randn(4)
    export_and_compare(lambda x, w, b: ember.conv_tbc(x, w, b, pad), (x, w, b))


@pytest.mark.parametrize("kwargs", [{}, {"padding": 1, "stride": 2},
                                    {"dilation": (2, 1), "padding": (1, 0), "stride": (1, 2)}])
def test_unfold_is_exact_for_every_value(kwargs):
    x = randn(2, 3, 5, 6)
    x.numpy()[0, 0, 1, 1] = np.inf  # copied, not multiplied: no NaN from inf * 0
    x.numpy()[1, 2, 2, 3] = np.nan
    export_and_compare(lambda x: F.unfold(x, (2, 3), **kwargs), (x,), exact=True)
    export_and_compare(lambda x: F.unfold(x, 2, **kwargs), (tensor(np.arange(60).reshape(
        3, 4, 5), np.float64),))  # unbatched (integers: PyTorch's CPU im2col refuses them)


@pytest.mark.parametrize("kwargs", [{}, {"padding": 1, "stride": 2}, {"dilation": 2}])
def test_fold_needs_opset_18(kwargs):
    k = (2, 3)
    blocks = F.unfold(randn(2, 3, 6, 7), k, **kwargs)
    export_and_compare(lambda c: F.fold(c, (6, 7), k, **kwargs), (blocks,), opset=18)
    export_and_compare(lambda c: F.fold(c, (6, 7), k, **kwargs), (blocks[0],), opset=18)
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="opset"):
        onnx_export(lambda c: F.fold(c, (6, 7), k, **kwargs), (blocks,), opset_version=17)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx", [None, 1])
def test_aten_embedding_bag_all_outputs(mode, padding_idx):
    weight = randn(6, 3, dtype=np.float64)
    ids = ember.tensor([1, 2, 4, 5, 1, 0, 3, 3, 1])
    offsets = ember.tensor([0, 3, 3, 6])  # bag 1 is empty
    args = (weight, ids, offsets)
    export_and_compare(lambda w, i, o: ember.embedding_bag(w, i, o, mode=mode,
                                                           padding_idx=padding_idx), args)
    export_and_compare(lambda w, i, o: ember.embedding_bag(w, i, o, mode=mode,
                                                           include_last_offset=True,
                                                           padding_idx=padding_idx), args)


def test_aten_embedding_bag_float32_sum_with_weights():
    weight, ids, offsets = randn(5, 4), ember.tensor([0, 4, 4, 2]), ember.tensor([0, 1, 1])
    psw = randn(4)
    export_and_compare(lambda w, i, o, p: ember.embedding_bag(w, i, o, per_sample_weights=p)[0],
                       (weight, ids, offsets, psw))
    export_and_compare(lambda w, i, o: ember.embedding_bag(w, i, o), (weight, ids, offsets))


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("mode,padding", [(0, 0), (1, 1), (0, 2)])
def test_grid_sampler_2d(mode, padding, align):
    x, grid = randn(2, 3, 5, 4), tensor(RNG.uniform(-1.2, 1.2, (2, 3, 6, 2)))
    export_and_compare(lambda x, g: ember.grid_sampler_2d(x, g, mode, padding, align),
                       (x, grid), opset=16)


@pytest.mark.parametrize("align", [False, True])
def test_grid_sampler_3d_needs_opset_20(align):
    x, grid = randn(1, 2, 3, 4, 5), tensor(RNG.uniform(-1, 1, (1, 2, 3, 4, 3)))
    export_and_compare(lambda x, g: ember.grid_sampler_3d(x, g, 0, 0, align), (x, grid),
                       opset=20)
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="20"):
        onnx_export(lambda x, g: ember.grid_sampler_3d(x, g, 0, 0, align), (x, grid),
                    opset_version=18)


# -- shapes: dsplit, combinations, unravel_index, gradient --------------------------------------

def test_dsplit():
    x = randn(2, 3, 6)
    export_and_compare(lambda x: ember.dsplit(x, 3), (x,), exact=True)
    export_and_compare(lambda x: ember.dsplit(x, [1, 4]), (x,), exact=True)
    export_and_compare(lambda x: ember.dsplit(x, [2, 2]), (x,), exact=True)  # an empty part


@pytest.mark.parametrize("r,with_replacement", [(2, False), (3, False), (2, True), (1, False),
                                                (0, False), (5, False)])
def test_combinations(r, with_replacement):
    x = tensor([3, 1, 4, 1], np.int64)
    export_and_compare(lambda x: ember.combinations(x, r, with_replacement), (x,))


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 5), 7, (4,)])
def test_unravel_index(shape):
    indices = ember.tensor([0, 5, 11, 3, 6])
    export_and_compare(lambda i: ember.unravel_index(i, shape), (indices,))


def test_unravel_index_of_negative_indices_counts_from_the_end():
    export_and_compare(lambda i: ember.unravel_index(i, (3, 4)), (ember.tensor([-1, -5, -12]),))


@pytest.mark.parametrize("kwargs", [{}, {"spacing": 2.0}, {"dim": 1, "edge_order": 2},
                                    {"spacing": [0.5, 3.0], "edge_order": 2},
                                    {"dim": [-1], "spacing": [2]}])
def test_gradient(kwargs):
    export_and_compare(lambda x: ember.gradient(x, **kwargs), (randn(4, 5),))


def test_gradient_of_integers_and_float64():
    export_and_compare(lambda x: ember.gradient(x), (tensor([[1, 4, 9], [2, 3, 7]], np.int64),))
    export_and_compare(lambda x: ember.gradient(x, edge_order=2),
                       (randn(6, dtype=np.float64),))


# -- frexp and nextafter ------------------------------------------------------------------------

def _edge_values(dt):
    info = np.finfo(dt)
    return np.array([0.0, -0.0, 1.0, -1.0, 0.5, 0.75, 3.0, -7.25, 1e-3, np.inf, -np.inf, np.nan,
                     info.max, -info.max, info.tiny, info.smallest_subnormal,
                     -3 * info.smallest_subnormal, 2.0 ** 10], dtype=dt)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_frexp_exact_with_zero_inf_nan_and_subnormals(dt):
    x = ember.tensor(np.concatenate([_edge_values(dt), RNG.standard_normal(50).astype(dt) *
                                     np.asarray(10.0, dt) ** RNG.integers(-3, 4, 50)]))
    got = export_and_compare(ember.frexp, (x,), exact=True)
    np.testing.assert_array_equal(np.signbit(got[0]), np.signbit(ember.frexp(x)[0].numpy()))


@pytest.mark.filterwarnings("ignore:overflow encountered in nextafter")
@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_nextafter_exact(dt):
    x = _edge_values(dt)
    towards = np.array([1.0, -1.0, 0.0, 5.0, -1.0, 3.0, 0.0, np.inf, 0.0, 0.0, 1.0, np.inf,
                        0.0, -np.inf, 0.0, -1.0, 0.0, 2.0 ** 10], dtype=dt)
    big = RNG.standard_normal(40).astype(dt)
    x = ember.tensor(np.concatenate([x, big, np.ldexp(np.ones(4, dt), [-3, -2, 2, 5]).astype(dt)]))
    y = ember.tensor(np.concatenate([towards, -big * 2, np.zeros(4, dt)]))
    export_and_compare(ember.nextafter, (x, y), exact=True)


# -- counting: bincount, histc, mode ------------------------------------------------------------

def test_bincount():
    x = ember.tensor([0, 3, 3, 1, 7, 3])
    w = randn(6)
    export_and_compare(lambda x: ember.bincount(x), (x,))
    export_and_compare(lambda x: ember.bincount(x, minlength=10), (x,))
    export_and_compare(lambda x, w: ember.bincount(x, w), (x, w))
    export_and_compare(lambda x, w: ember.bincount(x, w.double(), 3), (x, w))


def test_bincount_runs_at_other_sizes_and_empty():
    proto = onnx_export(lambda x: ember.bincount(x, minlength=2), (ember.tensor([0, 3, 1]),),
                        opset_version=13, dynamic_axes={"x": {0: "n"}})
    np.testing.assert_array_equal(run(proto, ember.tensor([5, 5, 0, 2]))[0], [1, 0, 1, 0, 0, 2])
    np.testing.assert_array_equal(run(proto, ember.tensor(np.zeros(0, np.int64)))[0], [0, 0])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_histc(dt):
    x = tensor(RNG.uniform(-2, 2, (4, 25)), dt)
    x.numpy()[0, :4] = [-1.0, 1.0, np.nan, 1.5]
    export_and_compare(lambda x: ember.histc(x, 7, -1, 1), (x,))
    export_and_compare(lambda x: ember.histc(x, 5), (tensor(RNG.uniform(0, 3, 30), dt),))
    export_and_compare(lambda x: ember.histc(x, 4), (tensor(np.full(6, 3.0), dt),))  # lo == hi


def test_mode():
    x = tensor(RNG.integers(0, 4, (3, 8)), np.float32)
    export_and_compare(lambda x: ember.mode(x), (x,))
    export_and_compare(lambda x: ember.mode(x, 0, keepdim=True), (x,))
    ties = tensor([[2, 1, 1, 2, 5], [7, 7, 7, 0, 0]], np.int64)  # the smaller of tied values
    export_and_compare(lambda x: ember.mode(x), (ties,))
    export_and_compare(lambda x: ember.mode(x), (tensor([[4.0, 3.0, 2.0]]),))  # all distinct


# -- index_reduce, lu_unpack --------------------------------------------------------------------

@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    x, src = randn(5, 3), randn(4, 3)
    opset = 18 if reduce in ("amax", "amin") else 16
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        export_and_compare(lambda x, s: ember.index_reduce(x, 0, ember.tensor([0, 4, 0, 2]), s,
                                                           reduce, include_self=include_self),
                           (x, src), opset=opset)
        export_and_compare(lambda x, s: x.index_reduce(1, ember.tensor([2, 2]), s, reduce,
                                                       include_self=include_self),
                           (x, randn(5, 2)), opset=opset)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (5, 3), (3, 5)])
def test_lu_unpack(shape):
    a = randn(*shape, dtype=np.float64)
    LU, piv = ember.linalg.lu_factor(a)
    export_and_compare(lambda lu, p: ember.lu_unpack(lu, p), (LU, piv), opset=14)


def test_lu_unpack_with_identity_pivots_and_only_one_part():
    LU = randn(3, 3)
    piv = ember.tensor(np.array([1, 2, 3], np.int32))
    export_and_compare(lambda lu, p: ember.lu_unpack(lu, p), (LU, piv), opset=14)
    export_and_compare(lambda lu, p: ember.lu_unpack(lu, p, unpack_data=False), (LU, piv))
    export_and_compare(lambda lu, p: ember.lu_unpack(lu, p, unpack_pivots=False), (LU, piv),
                       opset=14)
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="opset"):
        onnx_export(lambda lu, p: ember.lu_unpack(lu, p), (LU, piv), opset_version=13)
