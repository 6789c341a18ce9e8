"""ember.onnx.export, round 3: the incomplete gamma functions (series and continued fraction
in an ONNX Loop run to convergence), gcd/lcm (Euclid in a Loop), the shifts of signed
integers, diagonal_scatter, cov/corrcoef, renorm, quantile/nanquantile/nanmedian,
tril/triu_indices, the margin and triplet losses, pdist, threshold_backward, max_unpool,
adaptive max pooling with indices, and the refusals of ops that return Python values.

Each exported graph passes ``onnx.checker`` (full check) and ONNX's strict shape inference,
runs in onnxruntime, and is compared with Ember's eager result: float32 at 1e-5, float64 at
1e-10 (the incomplete gamma functions compute in float64 and round once, as Ember's kernels
do), integers exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from testutils import onnx_compare  # noqa: E402
from testutils import onnx_run as run  # noqa: E402

from ember.onnx import UnsupportedOperatorError  # noqa: E402
from ember.onnx import export as onnx_export  # noqa: E402

RNG = np.random.default_rng(13)
TOL = {np.float32: {"rtol": 1e-5, "atol": 1e-6}, np.float64: {"rtol": 1e-10, "atol": 1e-12}}


def tensor(values, dtype=np.float32):
    return ember.tensor(np.asarray(values, dtype=dtype))


def export_and_compare(fn, args, *, opset=13, dtype=np.float32):
    """Export, check, run; the outputs equal eager's (same dtype and shape)."""
    return onnx_compare(fn, args, opset=opset, **TOL[dtype])[0]


def op_types(proto) -> set:
    return {n.op_type for n in proto.graph.node}


# -- incomplete gamma functions -----------------------------------------------------------------

EDGES = [0.0, 1e-3, 0.3, 0.5, 1.0, 1.1, 2.0, 10.0, 150.0, 250.0, np.inf, np.nan, -1.0]


def gamma_args(dtype):
    """Random pairs over every method's range (series, upper series, continued fraction,
    Lanczos' large-argument form) and every pair of edge values."""
    a = np.concatenate([RNG.uniform(0, 20, 120), RNG.uniform(0, 300, 30),
                        np.repeat(EDGES, len(EDGES))])
    x = np.concatenate([RNG.uniform(0, 25, 120), RNG.uniform(0, 300, 30),
                        np.tile(EDGES, len(EDGES))])
    return tensor(a, dtype), tensor(x, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["igamma", "igammac"])
@pytest.mark.parametrize("opset", [13, 18])
def test_incomplete_gamma(op, dtype, opset):
    proto = export_and_compare(getattr(ember, op), gamma_args(dtype), dtype=dtype, opset=opset)
    assert "Loop" in op_types(proto)


def test_incomplete_gamma_loop_stops_when_converged():
    """The loop's condition is 'some element not converged': inputs that converge within a
    few terms run few iterations, and an empty input none (the result is still right)."""
    proto = onnx_export(ember.igamma, (tensor([1.0, 2.0]), tensor([0.5, 3.0])),
                        opset_version=13, dynamic_axes={"input": {0: "n"}, "other": {0: "n"}})
    got = run(proto, tensor([0.5, 4.0, 30.0]), tensor([0.01, 0.2, 29.0]))[0]
    want = ember.igamma(tensor([0.5, 4.0, 30.0]), tensor([0.01, 0.2, 29.0])).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert run(proto, tensor([]), tensor([]))[0].shape == (0,)


def test_incomplete_gamma_broadcasts_and_takes_numbers():
    a = tensor(RNG.uniform(0.1, 8, (3, 1)))
    x = tensor(RNG.uniform(0.1, 8, (1, 4)))
    export_and_compare(lambda a, x: (ember.igamma(a, x), ember.igammac(a, x)), (a, x))


def test_lanczos_coefficients_are_embers():
    from ember.onnx import _export_ops_math as ours
    from ember.ops import special_functions as theirs

    for name in ("_LANCZOS_NUM", "_LANCZOS_DEN", "_LANCZOS_G", "_IGAM_MAXITER", "_MACHEP"):
        assert getattr(ours, name) == getattr(theirs, name), name


# -- integers: shifts, gcd, lcm -----------------------------------------------------------------

INTS = ["int8", "int16", "int32", "int64", "uint8"]


def int_pair(dt):
    info = np.iinfo(dt)
    x = RNG.integers(info.min, info.max, 40, endpoint=True).astype(dt)
    if dt == "uint8":
        n = (np.arange(40) % 12).astype(dt)
    else:  # negative shifts, up to and past the width
        n = np.concatenate([np.arange(-2, 18), RNG.integers(0, 70, 20)]).astype(dt)
    x[:3] = [info.min, info.max, 0]
    return ember.tensor(x), ember.tensor(n)


@pytest.mark.parametrize("dt", INTS)
def test_shifts(dt):
    """PyTorch's semantics: arithmetic right shift of signed values, 0 (left) or the sign
    fill (right) for a shift that is negative or not below the width."""
    x, n = int_pair(dt)
    proto = export_and_compare(lambda a, b: (ember.bitwise_left_shift(a, b),
                                             ember.bitwise_right_shift(a, b), a >> 3, a << 2),
                               (x, n))
    assert "BitShift" in op_types(proto)


def test_right_shift_is_arithmetic():
    x = tensor([-8, -1, -7, 7, -128], np.int8)
    proto = onnx_export(lambda a: a >> 1, (x,), opset_version=13)
    np.testing.assert_array_equal(run(proto, x)[0], [-4, -1, -4, 3, -64])


@pytest.mark.parametrize("dt", INTS)
def test_gcd_lcm(dt):
    info = np.iinfo(dt)
    hi = min(info.max, 1000) if dt != "int64" else 2 ** 30  # lcm without overflow
    lo = 0 if dt == "uint8" else -hi
    a = ember.tensor(RNG.integers(lo, hi, 40).astype(dt))
    b = ember.tensor(RNG.integers(lo, hi, 40).astype(dt))
    proto = export_and_compare(lambda a, b: (ember.gcd(a, b), ember.lcm(a, b)), (a, b))
    assert "Loop" in op_types(proto)


def test_gcd_edges():
    """Zeros, signs, consecutive Fibonacci numbers (Euclid's worst case), broadcasting."""
    a = tensor([0, 0, 12, -18, 1071, 2 ** 62, 7540113804746346429, -5], np.int64)
    b = tensor([0, 5, 0, 24, -462, 3 * 2 ** 40, 4660046610375530309, -5], np.int64)
    export_and_compare(lambda a, b: (ember.gcd(a, b), ember.gcd(a[:3, None], b)), (a, b))
    export_and_compare(lambda a, b: ember.lcm(a, b), (a[:5], b[:5]))


# -- elementwise and reductions -----------------------------------------------------------------

def test_threshold_backward():
    g, x = ember.randn(4, 5), ember.randn(4, 5)
    x[0, 0] = 0.1  # at the threshold: 0
    export_and_compare(lambda g, x: ember.threshold_backward(g, x, 0.1), (g, x))


def test_threshold_backward_nan_input_as_pytorch():
    """PyTorch's kernel is ``x <= t ? 0 : g``: a NaN input passes the gradient through."""
    torch = pytest.importorskip("torch")
    g, x = ember.randn(6), tensor([0.5, np.nan, -1.0, 0.1, np.inf, np.nan])
    proto = onnx_export(lambda g, x: ember.threshold_backward(g, x, 0.1), (g, x),
                        opset_version=13)
    want = torch.ops.aten.threshold_backward(torch.from_numpy(g.numpy()),
                                             torch.from_numpy(x.numpy()), 0.1).numpy()
    np.testing.assert_array_equal(run(proto, g, x)[0], want)


@pytest.mark.parametrize("opset", [11, 13])
def test_threshold_nan_input_as_pytorch(opset):
    """PyTorch's threshold is ``x <= t ? value : x``: a NaN input stays NaN (at opset 11 the
    LessOrEqual is written as Or(Less, Equal))."""
    x = tensor([0.5, np.nan, -1.0, 0.1, np.inf, -np.inf], np.float32)
    proto = onnx_export(lambda x: ember.nn.functional.threshold(x, 0.1, 20.0), (x,),
                        opset_version=opset)
    want = [0.5, np.nan, 20.0, 20.0, np.inf, 20.0]
    np.testing.assert_array_equal(ember.nn.functional.threshold(x, 0.1, 20.0).numpy(), want)
    np.testing.assert_array_equal(run(proto, x)[0], want)
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(
        torch.nn.functional.threshold(torch.from_numpy(x.numpy()), 0.1, 20.0).numpy(), want)


@pytest.mark.parametrize("p", [1, 2, 3.5, float("inf")])
def test_renorm(p):
    x = ember.randn(3, 4, 5) * 3
    export_and_compare(lambda x: (ember.renorm(x, p, 1, 5.0), ember.renorm(x, p, -1, 1.0)),
                       (x,))


def test_renorm_float64():
    export_and_compare(lambda x: ember.renorm(x, 2, 0, 2.0), (ember.randn(4, 6).double(),),
                       dtype=np.float64)


def test_cov_corrcoef():
    v = ember.randn(3, 7, dtype=ember.float64)
    fw = tensor([1, 2, 0, 3, 1, 1, 4], np.int64)
    aw = ember.rand(7, dtype=ember.float64)
    f64 = {"dtype": np.float64}
    export_and_compare(lambda v: (ember.cov(v), ember.cov(v, correction=0), ember.cov(v[0]),
                                  ember.corrcoef(v), ember.corrcoef(v[1])), (v,), **f64)
    export_and_compare(lambda v, f: ember.cov(v, fweights=f), (v, fw), **f64)
    export_and_compare(lambda v, a: ember.cov(v, aweights=a, correction=2), (v, aw), **f64)
    export_and_compare(lambda v, f, a: ember.cov(v, fweights=f, aweights=a), (v, fw, aw),
                       **f64)
    export_and_compare(lambda v: (ember.cov(v), ember.corrcoef(v)), (v.float(),))


# -- quantiles ----------------------------------------------------------------------------------

def with_nans():
    x = ember.randn(4, 6, 5)
    x[0, 1, 2] = float("nan")
    x[1, :, 3] = float("nan")  # an all-NaN slice along dim 1
    x[2, 0, 0] = float("inf")
    x[3, 2, 1] = float("-inf")
    return x


@pytest.mark.filterwarnings("ignore:invalid value encountered in subtract")  # eager: inf - inf
@pytest.mark.parametrize("mode", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("op", ["quantile", "nanquantile"])
def test_quantile(op, mode):
    fn = getattr(ember, op)
    x = with_nans()
    q = tensor([0.0, 0.25, 0.5, 0.7, 1.0])  # 0.5 of 6: a tie for 'nearest' (half to even)
    export_and_compare(lambda a, q: (fn(a, q, dim=1, interpolation=mode),
                                     fn(a, 0.3, dim=-1, keepdim=True, interpolation=mode),
                                     fn(a, q, interpolation=mode),
                                     fn(a, 0.6, keepdim=True, interpolation=mode),
                                     fn(a, q, dim=2, keepdim=True, interpolation=mode)),
                       (x, q), opset=18 if mode == "nearest" else 13)


def test_quantile_float64():
    x = ember.randn(5, 7).double()
    export_and_compare(lambda a: ember.quantile(a, tensor([0.1, 0.9], np.float64), dim=0),
                       (x,), dtype=np.float64)


def test_nanmedian():
    x = with_nans()
    ints = ember.tensor(RNG.permutation(24).reshape(4, 6))
    export_and_compare(lambda a: (ember.nanmedian(a), *ember.nanmedian(a, 2),
                                  *ember.nanmedian(a, 0, True)), (x,))
    export_and_compare(lambda a: ember.nanmedian(a, 1), (ints,))


# -- creation and scatter -----------------------------------------------------------------------

def test_tri_indices_are_constants():
    z = tensor(np.zeros((2, 1)), np.int64)
    proto = export_and_compare(lambda z: (z + ember.tril_indices(4, 5, -1),
                                          z + ember.triu_indices(4, 3, 1),
                                          z + ember.tril_indices(3, 3, dtype=ember.int32),
                                          z * 0 + ember.triu_indices(0, 3).sum()), (z,))
    assert not op_types(proto) & {"Range", "Loop", "NonZero"}


def test_diagonal_scatter():
    y = ember.randn(3, 4, 5)
    export_and_compare(lambda y, s: ember.diagonal_scatter(y, s, 1, 1, 2), (y, ember.randn(3, 4)))
    export_and_compare(lambda y, s: ember.diagonal_scatter(y, s, -1, 2, 0),
                       (y, ember.randn(4, 3)))
    export_and_compare(lambda y, s: ember.diagonal_scatter(y, s), (y[0], ember.randn(4)))


# -- losses -------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss(p):
    x, t, w = ember.randn(5, 4), tensor([0, 3, 1, 1, 2], np.int64), ember.rand(4)
    export_and_compare(lambda x, t, w: (F.multi_margin_loss(x, t, p=p, margin=0.7),
                                        F.multi_margin_loss(x, t, p=p, weight=w,
                                                            reduction="none"),
                                        F.multi_margin_loss(x, t, p=p, reduction="sum"),
                                        F.multi_margin_loss(x[0], t[1], p=p)), (x, t, w))


def test_multilabel_margin_loss():
    """Targets end at their first -1; a repeated class counts each time; a row without
    targets gives 0."""
    x = ember.randn(5, 4)
    t = tensor([[3, 0, -1, 1], [0, 1, 2, 3], [1, 1, -1, 2], [-1, 0, 0, 0], [2, -1, 3, 3]],
               np.int64)
    export_and_compare(lambda x, t: (F.multilabel_margin_loss(x, t),
                                     F.multilabel_margin_loss(x, t, reduction="none"),
                                     F.multilabel_margin_loss(x[0], t[0])), (x, t))


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
def test_triplet_margin_loss(p):
    a, b, n = ember.randn(6, 5), ember.randn(6, 5), ember.randn(6, 5)
    export_and_compare(lambda a, b, n: (F.triplet_margin_loss(a, b, n, p=p, swap=True),
                                        F.triplet_margin_loss(a, b, n, margin=0.3, p=p,
                                                              reduction="none"),
                                        ember.triplet_margin_loss(a, b, n, 0.5, p, 1e-6,
                                                                  False, 2)), (a, b, n))


def test_triplet_margin_with_distance_loss_default_distance():
    a, b, n = ember.randn(6, 5), ember.randn(6, 5), ember.randn(6, 5)
    export_and_compare(lambda a, b, n: (
        F.triplet_margin_with_distance_loss(a, b, n, swap=True, reduction="sum"),
        F.triplet_margin_with_distance_loss(a, b, n, margin=2.0, reduction="none")), (a, b, n))


# -- nn -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [0, 1, 2, 2.5, float("inf")])
def test_pdist(p):
    x = ember.randn(6, 3)
    x[4] = x[1]  # a zero distance
    export_and_compare(lambda x: ember.pdist(x, p), (x,))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool(nd):
    x = ember.randn(*([2, 3] + [8] * nd))
    pool, unpool = getattr(F, f"max_pool{nd}d"), getattr(F, f"max_unpool{nd}d")
    v, i = pool(x, 2, return_indices=True)
    proto = export_and_compare(lambda v, i: (unpool(v, i, 2),
                                             unpool(v, i, 2, output_size=[9] * nd)), (v, i))
    assert "ScatterElements" in op_types(proto)


def test_max_pool_then_unpool_in_one_graph():
    x = ember.randn(2, 3, 6, 6)
    export_and_compare(lambda x: F.max_unpool2d(*F.max_pool2d(x, 2, 2, return_indices=True),
                                                2, 2), (x,))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_adaptive_max_pool_with_indices(nd):
    x = ember.randn(*([2, 3] + [8] * nd))
    pool = getattr(F, f"adaptive_max_pool{nd}d")
    export_and_compare(lambda x: (*pool(x, 4, return_indices=True),
                                  *pool(x, 1, return_indices=True)), (x,))


def test_adaptive_max_pool_with_indices_refuses_overlapping_windows():
    with pytest.raises(UnsupportedOperatorError, match="divides the input size"):
        onnx_export(lambda x: F.adaptive_max_pool2d(x, 3, return_indices=True),
                    (ember.randn(1, 2, 8, 8),), opset_version=13)


# -- refusals -----------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [lambda a: ember.equal(a, a), lambda a: ember.allclose(a, a)])
def test_python_valued_ops_are_refused_naming_the_python_value(fn):
    with pytest.raises(Exception, match="Python value"):
        onnx_export(fn, (ember.randn(3),), opset_version=13)


def test_python_valued_mapping_says_why():
    from ember.onnx._export_graph import Unsupported
    from ember.onnx._export_ops import lookup

    for op in ("equal", "allclose", "is_same_size"):
        with pytest.raises(Unsupported, match="returns a Python bool, not a tensor"):
            lookup(op).fn(type("C", (), {"op": op})())


def test_triplet_loss_with_a_custom_distance_is_refused():
    a = ember.randn(2, 3)
    with pytest.raises(Exception, match="function"):
        onnx_export(lambda a: F.triplet_margin_with_distance_loss(
            a, a, a, distance_function=lambda u, v: (u - v).abs().sum(-1)), (a,),
            opset_version=13)
