"""ember.onnx.export of the special functions, the random ops, the windows and the ops ONNX
has no operator for.

Special functions: each exported graph is checked with ``onnx.checker`` (full check) and
ONNX's strict shape inference, run in onnxruntime and compared with Ember's eager result over
inputs that cover every branch of its approximation (poles, the switch points, +-inf, NaN).
The graphs compute in float64 as Ember's kernels do, so the honest tolerance is float32's
rounding: rtol 1e-5 (float64 inputs: 1e-8, onnxruntime's sin and log against NumPy's).
Random ops: distributions and shapes, checked statistically in onnxruntime (moments within 6
standard errors, supports, permutations), not values. Windows: against eager at every length
class (0, 1, 2, odd, even), native (opset 17) and composed (13).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from testutils import onnx_check as check  # noqa: E402
from testutils import onnx_compare  # noqa: E402
from testutils import onnx_run as run  # noqa: E402
from testutils import onnx_session as session  # noqa: E402

from ember.onnx import UnsupportedOperatorError  # noqa: E402
from ember.onnx import export as onnx_export  # noqa: E402

RNG = np.random.default_rng(7)
SPECIAL = ember.special


def tensor(values, dtype=np.float32):
    return ember.tensor(np.asarray(values, dtype=dtype))


# -- inputs covering every branch ---------------------------------------------------------------

EDGES = [0.0, -0.0, 0.25, 0.46875, 0.5, 1.0, 2.0, 2.09, -2.09, 4.0, 5.0, 8.0, -1.0, -3.0, -2.5,
         10.0, 1e-8, -1e-8, 30.0, 120.0, np.nan, np.inf, -np.inf]


def reals(dtype=np.float32):
    """Wide and narrow ranges of both signs, integers, the switch points and non-finites."""
    v = np.concatenate([RNG.uniform(-15, 15, 60), RNG.uniform(-2.5, 2.5, 40), EDGES])
    return tensor(v, dtype)


def unit(dtype=np.float32):
    """``[-1, 1]`` with its ends, values just inside, outside and NaN."""
    v = np.concatenate([RNG.uniform(-1, 1, 60), [0.0, 1.0, -1.0, 0.7, -0.7, 0.999999,
                                                  -0.9999, 1e-30, 1.5, -2.0, np.nan]])
    return tensor(v, dtype)


def probabilities(dtype=np.float32):
    v = np.concatenate([RNG.uniform(0, 1, 60), [0.0, 1.0, 1e-30, 1e-10, 0.5, 0.135, 0.865,
                                                 0.9999, 1.5, -0.1, np.nan]])
    return tensor(v, dtype)


def positive(dtype=np.float32):
    return tensor(np.concatenate([RNG.uniform(0.01, 25, 60), [1.0, 2.0, 9.5, 0.5]]), dtype)


UNARY = {
    "erfinv": (ember.erfinv, unit), "lgamma": (ember.lgamma, reals),
    "digamma": (ember.digamma, reals), "i0": (ember.i0, reals), "sinc": (ember.sinc, reals),
    "special.i0e": (SPECIAL.i0e, reals), "special.i1": (SPECIAL.i1, reals),
    "special.i1e": (SPECIAL.i1e, reals), "special.ndtr": (SPECIAL.ndtr, reals),
    "special.log_ndtr": (SPECIAL.log_ndtr, reals), "special.ndtri": (SPECIAL.ndtri, probabilities),
    "special.erfcx": (SPECIAL.erfcx, reals), "special.entr": (SPECIAL.entr, reals),
    "special.bessel_j0": (SPECIAL.bessel_j0, reals),
    "special.bessel_j1": (SPECIAL.bessel_j1, reals),
    "special.bessel_y0": (SPECIAL.bessel_y0, reals),
    "special.bessel_y1": (SPECIAL.bessel_y1, reals),
    "special.modified_bessel_i0": (SPECIAL.modified_bessel_i0, reals),
    "special.modified_bessel_i1": (SPECIAL.modified_bessel_i1, reals),
    "special.modified_bessel_k0": (SPECIAL.modified_bessel_k0, reals),
    "special.modified_bessel_k1": (SPECIAL.modified_bessel_k1, reals),
    "special.scaled_modified_bessel_k0": (SPECIAL.scaled_modified_bessel_k0, reals),
    "special.scaled_modified_bessel_k1": (SPECIAL.scaled_modified_bessel_k1, reals),
    "special.spherical_bessel_j0": (SPECIAL.spherical_bessel_j0, reals),
    "special.airy_ai": (SPECIAL.airy_ai, reals),
    "polygamma(1)": (lambda x: ember.polygamma(1, x), reals),
    "polygamma(2)": (lambda x: ember.polygamma(2, x), reals),
    "polygamma(3)": (lambda x: ember.polygamma(3, x), positive),
    "mvlgamma(p=3)": (lambda x: ember.mvlgamma(x, 3), lambda d=np.float32: positive(d) + 1.5),
    "special.xlog1py": (lambda x: SPECIAL.xlog1py(x, x.abs() - 0.5), reals),
    "special.xlog1py(number)": (lambda x: SPECIAL.xlog1py(2.0, x), reals),
    "special.zeta": (lambda x: SPECIAL.zeta(x.abs() + 1, x), reals),
    "special.zeta(number)": (lambda x: SPECIAL.zeta(3.0, x), reals),
}

TOL = {np.float32: {"rtol": 1e-5, "atol": 1e-6}, np.float64: {"rtol": 1e-8, "atol": 1e-12}}


def export_and_compare(fn, args, *, opset=13, dtype=np.float32):
    return onnx_compare(fn, args, opset=opset, **TOL[dtype])[0]


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")  # eager: inf, as PyTorch
@pytest.mark.parametrize("name", list(UNARY))
def test_special_functions_match_eager(name):
    fn, make = UNARY[name]
    export_and_compare(fn, (make(),))


@pytest.mark.parametrize("name", ["erfinv", "lgamma", "digamma", "special.ndtri",
                                  "special.log_ndtr", "special.bessel_y1", "special.zeta"])
def test_special_functions_in_float64(name):
    fn, make = UNARY[name]
    export_and_compare(fn, (make(np.float64),), opset=17, dtype=np.float64)


def test_an_integer_input_computes_in_the_default_float_dtype():
    x = ember.tensor([1, 2, 3, 7])
    export_and_compare(lambda t: (ember.lgamma(t), SPECIAL.i0e(t), ember.erfinv(t * 0)), (x,))


def test_special_functions_at_the_newest_opset_in_one_model():
    x = reals()
    proto = export_and_compare(lambda t: (ember.lgamma(t), ember.digamma(t), SPECIAL.ndtr(t),
                                          SPECIAL.bessel_j0(t), ember.polygamma(2, t)),
                               (x,), opset=21)
    assert proto.opset_import[0].version == 21


POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_orthogonal_polynomials(name):
    """A small constant degree (unrolled), a large one (a Loop), a tensor of degrees (a Loop
    to the largest; NaN and negative degrees give 0, degree 0 gives 1)."""
    poly = getattr(SPECIAL, name)
    x = unit()
    degrees = tensor(np.concatenate([RNG.integers(0, 12, x.shape[0] - 4), [-1, 0, np.nan, 40]]))
    proto = export_and_compare(lambda t, n: (poly(t, 5), poly(t, 30), poly(t, 0), poly(t, n)),
                               (x, degrees))
    assert "Loop" in {n.op_type for n in proto.graph.node}


def test_a_loop_runs_as_long_as_the_data_needs():
    """Hurwitz zeta's direct sum runs until ``q + k > 9`` for the smallest ``q`` of the input:
    the exported Loop reads that from the data, so a more negative ``q`` at run time is still
    summed far enough."""
    proto = onnx_export(lambda q: SPECIAL.zeta(4.0, q), (tensor([0.5, 2.0, 3.0, 4.0]),),
                        opset_version=17)
    q = tensor([-30.5, -7.25, 0.5, 3.0])
    got = run(proto, q)[0]
    np.testing.assert_allclose(got, SPECIAL.zeta(4.0, q).numpy(), rtol=1e-5)


def test_coefficients_are_embers():
    from ember.onnx import _special_coefficients as ours
    from ember.ops import _special, special_functions

    for name in ours.__all__:
        theirs = getattr(_special, "_" + name, None)
        if theirs is None:
            theirs = getattr(special_functions, "_" + name)
        assert ours.__dict__[name] == theirs, name


# -- random ops ---------------------------------------------------------------------------------

N = 20000


def within(sample: np.ndarray, mean: float, std: float, name: str) -> None:
    """The sample mean within 6 standard errors of ``mean``."""
    err = 6 * std / math.sqrt(sample.size)
    assert abs(sample.mean() - mean) < err, (name, sample.mean(), mean, err)


def _samplers(x):
    n = x.shape[0]
    y = x.clone()
    probs = ember.tensor([0.1, 0.2, 0.7]).expand(n, 3)
    return (ember.rand(n, 2), ember.randn(2, n), ember.rand_like(x), ember.randn_like(x),
            ember.randint(3, 9, (n,)), ember.randint_like(x, 4), ember.normal(x, 2.0),
            ember.normal(0.5, 3.0, (n, 2)), y.uniform_(-2, 3), x.clone().normal_(1.0, 0.5),
            x.clone().bernoulli_(0.3), ember.bernoulli(x + 0.8),
            ember.multinomial(probs, 2, replacement=True), ember.multinomial(probs, 3),
            x.clone().exponential_(4.0), x.clone().cauchy_(1.0, 2.0),
            x.clone().geometric_(0.25), x.clone().log_normal_(0.5, 0.25), ember.randperm(n))


@pytest.mark.parametrize("opset", [13, 17])
def test_random_ops_sample_embers_distributions(opset):
    proto = onnx_export(_samplers, (ember.zeros(8, 3),), opset_version=opset,
                        dynamic_axes={"x": {0: "n"}})
    check(proto)
    sess = session(proto)
    outs = sess.run(None, {sess.get_inputs()[0].name: np.zeros((N, 3), np.float32)})
    (rand, randn, rand_like, randn_like, randint, randint_like, normal_t, normal_n, uniform_,
     normal_, bernoulli_, bernoulli, with_repl, without_repl, expo, cauchy, geometric,
     log_normal, perm) = outs
    with ember.no_grad():
        eager = _samplers(ember.zeros(N, 3))
    for got, want in zip(outs, eager):  # shapes and dtypes as Ember's at another size
        assert got.shape == tuple(want.shape) and got.dtype == want.numpy().dtype
    for name, u in (("rand", rand), ("rand_like", rand_like)):
        assert u.min() >= 0 and u.max() < 1
        within(u, 0.5, math.sqrt(1 / 12), name)
        within((u - 0.5) ** 2, 1 / 12, 1 / math.sqrt(180), name + " variance")
    for name, z in (("randn", randn), ("randn_like", randn_like)):
        within(z, 0.0, 1.0, name)
        within(z ** 2, 1.0, math.sqrt(2), name + " variance")
    assert set(np.unique(randint)) == set(range(3, 9))
    within(randint.astype(float), 5.5, math.sqrt(35 / 12), "randint")
    assert set(np.unique(randint_like)) == {0.0, 1.0, 2.0, 3.0}
    within(normal_t, 0.0, 2.0, "normal(tensor, 2)")
    within(normal_n, 0.5, 3.0, "normal(0.5, 3, size)")
    within((normal_n - 0.5) ** 2, 9.0, 9 * math.sqrt(2), "normal variance")
    assert uniform_.min() >= -2 and uniform_.max() < 3
    within(uniform_, 0.5, 5 / math.sqrt(12), "uniform_")
    within(normal_, 1.0, 0.5, "normal_")
    assert set(np.unique(bernoulli_)) == {0.0, 1.0}
    within(bernoulli_, 0.3, math.sqrt(0.21), "bernoulli_(0.3)")
    within(bernoulli, 0.8, math.sqrt(0.16), "bernoulli(p)")
    for k in range(3):  # with replacement: each draw independent
        within(with_repl == k, [0.1, 0.2, 0.7][k], math.sqrt(0.25), f"multinomial {k}")
    assert all(len(set(row)) == 3 for row in without_repl[:500])  # no category twice
    within(without_repl[:, 0] == 2, 0.7, 0.5, "first draw without replacement")
    within(without_repl[:, 2] == 0, 0.7 * 0.2 / 0.3 + 0.2 * 0.7 / 0.8, 0.5,
           "last draw without replacement")
    within(expo, 0.25, 0.25, "exponential_(4)")
    assert abs(np.median(cauchy) - 1.0) < 0.1
    assert abs(np.quantile(cauchy, 0.75) - 3.0) < 0.2  # median + sigma
    assert geometric.min() >= 1 and np.all(geometric == np.round(geometric))
    within(geometric, 4.0, math.sqrt(0.75) / 0.25, "geometric_(0.25)")
    assert abs(np.median(np.log(log_normal)) - 0.5) < 0.02
    assert np.array_equal(np.sort(perm), np.arange(N))
    again = sess.run(None, {sess.get_inputs()[0].name: np.zeros((N, 3), np.float32)})
    assert not np.array_equal(again[0], rand)  # every run draws anew


def test_randomized_activations():
    x = tensor(RNG.standard_normal((N, 4)))
    proto = onnx_export(lambda t: (F.rrelu(t, 0.1, 0.3, training=True), F.rrelu(t),
                                   F.gumbel_softmax(t * 0, tau=0.5),
                                   F.gumbel_softmax(t, hard=True)), (x,))
    check(proto)
    train, evaluation, soft, hard = run(proto, x)
    xs = x.numpy()
    np.testing.assert_allclose(evaluation, F.rrelu(x).numpy(), rtol=1e-6)
    negative = xs < 0
    np.testing.assert_array_equal(train[~negative], xs[~negative])
    slopes = train[negative] / xs[negative]
    assert slopes.min() >= 0.1 - 1e-6 and slopes.max() < 0.3 + 1e-6
    within(slopes, 0.2, 0.2 / math.sqrt(3), "rrelu slopes")
    np.testing.assert_allclose(soft.sum(-1), 1.0, rtol=1e-5)
    within(soft.argmax(-1) == 0, 0.25, 0.5, "gumbel argmax of equal logits")
    assert set(np.unique(hard)) == {0.0, 1.0} and np.all(hard.sum(-1) == 1)
    # the Gumbel-max trick: argmax frequencies follow softmax(logits)
    row = tensor([[0.0, 1.0, 2.0]]).expand(N, 3)
    picks = run(onnx_export(lambda t: F.gumbel_softmax(t, hard=True), (row,)), row)[0]
    p = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    for k in range(3):
        within(picks[:, k], p[k], 0.5, f"gumbel hard {k}")


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax_export_survives_a_zero_uniform_draw(hard):
    """RandomUniformLike draws from [0, 1): a draw of exactly 0 made the exponential 0, the
    Gumbel noise +inf and the row NaN (a CI run met it, 1 in ~10^5 rows). The export keeps the
    exponential at half the dtype's epsilon at least, as PyTorch's sampler keeps clear of 0:
    here every draw is forced to 0 (the uniform node replaced by x - x)."""
    x = tensor([[0.5, -1.0, 2.0], [0.0, 0.0, 0.0]])
    proto = onnx_export(lambda t: F.gumbel_softmax(t, tau=0.5, hard=hard), (x,))
    (node,) = [n for n in proto.graph.node if n.op_type == "RandomUniformLike"]
    node.op_type = "Sub"
    node.input.append(node.input[0])
    del node.attribute[:]
    (out,) = run(proto, x)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-6)
    if hard:
        assert set(np.unique(out)) == {0.0, 1.0}


def test_samplers_onnx_has_not_name_the_op_and_why():
    with pytest.raises(UnsupportedOperatorError,
                       match=r"'ember.poisson' cannot be exported: ONNX has no operator for "
                             r"ember.poisson \(no Poisson sampler"):
        onnx_export(lambda x: ember.poisson(x), (tensor([1.0, 2.0]),))
    with pytest.raises(UnsupportedOperatorError, match="no binomial sampler"):
        onnx_export(lambda n, p: ember.binomial(n, p), (tensor([5.0]), tensor([0.5])))


# -- windows ------------------------------------------------------------------------------------

def _windows(x):
    n = x.shape[0]
    return (ember.hann_window(n), ember.hann_window(n, periodic=False),
            ember.hamming_window(n), ember.hamming_window(n, False, alpha=0.6, beta=0.4),
            ember.blackman_window(n), ember.blackman_window(n, False),
            ember.bartlett_window(n), ember.bartlett_window(n, False), ember.kaiser_window(n),
            ember.kaiser_window(n, False, beta=5.0), ember.hann_window(n, dtype=ember.float64))


@pytest.mark.parametrize("opset", [13, 17])
def test_windows_of_a_dynamic_length(opset):
    proto = onnx_export(_windows, (ember.zeros(8),), opset_version=opset,
                        dynamic_axes={"x": {0: "n"}})
    check(proto)
    ops = {n.op_type for n in proto.graph.node}
    assert ("HannWindow" in ops and "BlackmanWindow" in ops) == (opset >= 17)
    assert "HammingWindow" not in ops  # ONNX's has alpha = 25/46, not PyTorch's 0.54
    for n in (0, 1, 2, 5, 8, 33):
        x = ember.zeros(n)
        for got, want in zip(run(proto, x), _windows(x)):
            assert got.shape == (n,) and got.dtype == want.numpy().dtype
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-6, atol=1e-7)


# -- products -----------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:torch.chain_matmul is deprecated")
def test_matrix_power_and_chains():
    a, b, v = tensor(RNG.standard_normal((2, 3, 3))), tensor(RNG.standard_normal((3, 4))), \
        tensor(RNG.standard_normal(4))
    export_and_compare(lambda a, b, v: (ember.matrix_power(a, 5), ember.linalg.matrix_power(a, 0),
                                        ember.linalg.matrix_power(a, 1),
                                        ember.linalg.multi_dot([a[0], b, v]),
                                        ember.chain_matmul(a[0], a[1], b)), (a, b, v))
    with pytest.raises(UnsupportedOperatorError, match=r"ONNX has no operator for "
                                                       r"matrix_power with n = -1"):
        onnx_export(lambda a: ember.matrix_power(a, -1), (a,))


# -- ops ONNX has no operator for ---------------------------------------------------------------

def test_decompositions_name_each_op_in_one_error():
    def decompositions(x):
        spd = x @ x.mT + 4 * ember.eye(4)
        return (ember.linalg.qr(x)[0], ember.linalg.svd(x)[1], ember.linalg.lu(x)[1],
                ember.linalg.eigh(spd)[0], ember.linalg.cholesky(spd),
                ember.linalg.solve(spd, x), ember.linalg.matrix_exp(x), x * 2)

    with pytest.raises(UnsupportedOperatorError) as info:
        onnx_export(decompositions, (tensor(RNG.standard_normal((4, 4))),))
    message = str(info.value)
    for op, what in (("linalg.qr", "a QR decomposition"),
                     ("linalg.svd", "a singular value decomposition"),
                     ("linalg.lu", "an LU decomposition"),
                     ("linalg.eigh", "an eigendecomposition"),
                     ("linalg.cholesky", "a Cholesky decomposition"),
                     ("linalg.solve", "a linear solver"), ("linalg.matrix_exp", "")):
        assert f"ember op '{op}' cannot be exported: ONNX has no operator for {op} ({what}" \
            in message, op
    assert [op for op, *_ in info.value.ops] == ["linalg.qr", "linalg.svd", "linalg.lu",
                                                 "linalg.eigh", "linalg.cholesky",
                                                 "linalg.solve", "linalg.matrix_exp"]
    assert "test_onnx_export_special.py" in message  # each names its source line


# -- differences, integrals, products of shapes -------------------------------------------------

def _tail_ops(x, y, t, idx):
    return (ember.diff(x), ember.diff(x, n=2, dim=0), ember.diff(x, prepend=x[:, :1], append=y),
            ember.diff(x > 0, dim=1), ember.trapezoid(x), ember.trapezoid(x, dx=0.5, dim=0),
            ember.trapezoid(x, t), ember.trapz(x, x.cumsum(1)), ember.cumulative_trapezoid(x),
            ember.cumulative_trapezoid(x, t, dim=1), ember.kron(x, y), ember.kron(x, t),
            ember.vander(t), ember.vander(t, 3, increasing=True), ember.vander(idx),
            ember.isin(idx, ember.tensor([1, 3])), ember.isin(x.round(), ember.tensor([0.0, 1.0]),
                                                                invert=True),
            ember.isin(idx, idx[:0]), ember.ldexp(x, idx[:4]), ember.angle(x), ember.real(x),
            ember.conj(x), ember.resolve_conj(x), ember.resolve_neg(x), ember.isreal(x),
            ember.narrow_copy(x, 1, 1, 2))


@pytest.mark.parametrize("opset", [13, 18])
def test_differences_integrals_and_products_of_shapes(opset):
    x = tensor(RNG.standard_normal((3, 4)))
    x = ember.tensor(np.where(np.arange(12).reshape(3, 4) == 5, np.nan, x.numpy()))
    args = (x, tensor(RNG.standard_normal((3, 1))), tensor(np.cumsum(RNG.uniform(0.1, 1, 4))),
            ember.tensor([3, 1, 0, 2, 5]))
    proto = onnx_export(_tail_ops, args, opset_version=opset)
    check(proto)
    for got, want in zip(run(proto, *args), _tail_ops(*args)):
        assert got.shape == tuple(want.shape) and got.dtype == want.numpy().dtype
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6, equal_nan=True)


# -- stft ---------------------------------------------------------------------------------------

def _stfts(x, w):
    return (ember.stft(x, 16, 4, window=w, return_complex=False),
            ember.stft(x[0], 16, hop_length=5, win_length=12, window=w[:12], center=False,
                       return_complex=False, normalized=True),
            ember.stft(x, 8, return_complex=False, onesided=False, pad_mode="constant"),
            ember.stft(x, 10, 3, return_complex=False, pad_mode="replicate"))


@pytest.mark.filterwarnings("ignore:stft with return_complex=False is deprecated")
@pytest.mark.filterwarnings("ignore:A window was not provided")
@pytest.mark.parametrize("opset", [17, 21])
def test_stft_with_real_pairs(opset):
    """ONNX's STFT; float32 sums of up to 16 products: 1e-4 (measured: 1e-5 at most)."""
    args = (tensor(RNG.standard_normal((2, 100))), ember.hann_window(16))
    proto = onnx_export(_stfts, args, opset_version=opset)
    check(proto)
    for got, want in zip(run(proto, *args), _stfts(*args)):
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.filterwarnings("ignore:stft with return_complex=False is deprecated")
@pytest.mark.filterwarnings("ignore:A window was not provided")
def test_stft_needs_opset_17():
    args = (tensor(RNG.standard_normal((2, 100))), ember.hann_window(16))
    with pytest.raises(UnsupportedOperatorError, match=r"stft needs opset >= 17 \(requested "
                                                       r"13\)"):
        onnx_export(_stfts, args, opset_version=13)


# -- diagonal embeddings, scatters into views, products of sets ---------------------------------

def _embeddings(x, v, s, idx):
    return (ember.diag_embed(x), ember.diag_embed(x, 1), ember.diag_embed(x, -2, 0, 2),
            ember.diag_embed(v, offset=-1, dim1=1, dim2=0), ember.diagflat(x),
            ember.diagflat(v, 2), ember.select_scatter(x, v[:3], 1, 2),
            ember.select_scatter(x, v[:3], -1, -1), ember.select_scatter(x, x[0], 0, 0),
            ember.slice_scatter(x, x[:, ::2] * 2, 1, 0, None, 2),
            ember.slice_scatter(x, x[1:] + 1, 0, 1),
            ember.slice_scatter(x, x[:, 1:3], -1, 1, 3), ember.cartesian_prod(v, s),
            ember.cartesian_prod(idx, idx[:2], idx[1:]), ember.cartesian_prod(v),
            ember.block_diag(x, v, s[0], x[:1]), ember.block_diag(idx[:2], idx))


@pytest.mark.parametrize("opset", [13, 18])
def test_diagonal_embeddings_scatters_into_views_and_products_of_sets(opset):
    x = tensor(RNG.standard_normal((3, 4)))
    x = ember.tensor(np.where(np.arange(12).reshape(3, 4) == 5, np.nan, x.numpy()))
    args = (x, tensor(RNG.standard_normal(5)), tensor(RNG.standard_normal(2)),
            ember.tensor([4, 1, 7]))
    proto = onnx_export(_embeddings, args, opset_version=opset)
    check(proto)
    for i, (got, want) in enumerate(zip(run(proto, *args), _embeddings(*args))):
        assert got.shape == tuple(want.shape) and got.dtype == want.numpy().dtype, i
        np.testing.assert_array_equal(got, want.numpy(), err_msg=f"output {i}")
