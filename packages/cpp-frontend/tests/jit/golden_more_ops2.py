"""Golden files of issue 14's second batch of C++ op table entries (test_more_ops2.cpp; run by
ctest before the jit tests, see tests/CMakeLists.txt):

    python golden_more_ops2.py GOLDEN_DIR

Each program below is a function traced by ``ember.jit.trace`` and run eagerly, written as
golden_jit.py writes its programs (``<name>.ember``, ``<name>.run<k>.safetensors``); the names
go to ``programs_more2.txt`` (golden_jit.py's ``programs.txt`` is its own list).
"""

from __future__ import annotations

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import golden_jit  # the writer of the first programs: trace_program, write, write_program_list

import ember
import ember.export
import ember.nn as nn

F = nn.functional


# -- in-place views, products, statistics, windows ----------------------------------------------

def views_products(x, v, b1, b2, m):
    """In-place views, small products, norms, statistics and the trapezoid rule."""
    a = x.clone()
    a.t_()
    b = x.clone()
    b.unsqueeze_(1).transpose_(0, 2)
    c = x[:1].clone()
    c.squeeze_()
    d = x.clone().unsqueeze(0)
    d.squeeze_(0).swapdims_(0, 1)
    e = x.clone()
    e.as_strided_((2, 2), (1, 3))
    f = x.clone()
    f.addr_(v[:3], v, alpha=0.5)
    g = x.clone().unsqueeze(2).expand(3, 4, 2).contiguous()
    g.swapaxes_(0, 2)
    return (a * 1, b + 0, c * 2, d - 1, e + 0, f, g + 0, x.narrow_copy(1, 1, 2),
            x.unsafe_split_with_sizes([1, 2]),
            ember.combinations(v), ember.combinations(v[:3], 3),
            ember.combinations(v[:3], with_replacement=True),
            ember.addbmm(x, b1, b2), ember.addbmm(x[0], b1, b2, beta=0.5, alpha=2),
            ember.addr(x, v[:3], v), ember.addr(m[:3], m[0, :3], m[1], beta=2, alpha=3),
            ember.vdot(v, v * 2), ember.chain_matmul(x, x.t(), x),
            ember.cross(b1[:, :3, 0], b2[:, 0, :3], dim=1),
            ember.cross(b1[0, :3, :3], b2[0, :3, :3]),
            ember.vander(v), ember.vander(v, 3, increasing=True), ember.vander(m[0]),
            ember.dist(x, x.flip(0)), ember.dist(x, 0.5 * x, 1), ember.dist(x, x * 0, float("inf")),
            ember.dist(x, x.flip(1), 0), ember.dist(x, x.flip(1), 3),
            x.renorm(2, 0, 1.5), x.renorm(1, 1, 1.0), ember.renorm(b1, float("inf"), 2, 0.5),
            ember.cov(x), ember.cov(x, correction=0), ember.cov(v),
            ember.cov(x, fweights=ember.tensor([1, 2, 0, 3])),
            ember.cov(x, aweights=ember.tensor([0.5, 1.0, 2.0, 1.5]), correction=1),
            ember.corrcoef(x), ember.corrcoef(m[:2].float()),
            ember.trapezoid(x), ember.trapezoid(x, dx=0.5, dim=0), ember.trapezoid(x, v),
            ember.trapz(x, v[:3], dim=0), ember.cumulative_trapezoid(x),
            ember.cumulative_trapezoid(x, v, dim=1), ember.cumulative_trapezoid(x, dx=2.0, dim=0))


def windows_activations(x, g):
    """Window factories, threshold_backward and rrelu out of training."""
    y = x.clone()
    F.rrelu(y, 0.1, 0.3, training=False, inplace=True)
    z = x.clone()
    ember.rrelu_(z)
    return (ember.hann_window(8), ember.hann_window(7, periodic=False),
            ember.hamming_window(6), ember.hamming_window(5, False, alpha=0.5, beta=0.4),
            ember.blackman_window(9), ember.blackman_window(1),
            ember.bartlett_window(7), ember.bartlett_window(6, periodic=False, dtype=ember.float64),
            ember.threshold_backward(g, x, 0.1), ember.rrelu(x), F.rrelu(x, 0.2, 0.4), y, z)


def losses(x, y, var, t, labels, pos, neg):
    """The remaining losses, registry and nn.functional spellings."""
    return (F.gaussian_nll_loss(x, y, var), F.gaussian_nll_loss(x, y, var[:, :1], full=True),
            F.gaussian_nll_loss(x, y, var[:, 0], reduction="sum", eps=0.5),
            F.gaussian_nll_loss(x, y, var, reduction="none"),
            F.poisson_nll_loss(x, y.abs()),
            F.poisson_nll_loss(x.abs(), y.abs() * 3, log_input=False, full=True, reduction="none"),
            ember.poisson_nll_loss(x, y.abs()),
            ember.poisson_nll_loss(x, y.abs() * 2, True, True, 1e-8, 2),
            F.multi_margin_loss(x, t), F.multi_margin_loss(x, t, p=2, margin=0.5, reduction="sum"),
            F.multi_margin_loss(x, t, weight=ember.tensor([1.0, 2.0, 0.5, 1.5, 1.0]),
                                reduction="none"),
            F.multi_margin_loss(x[0], t[:1]),
            F.multilabel_margin_loss(x, labels),
            F.multilabel_margin_loss(x, labels, reduction="none"),
            F.multilabel_margin_loss(x[1], labels[1], reduction="sum"),
            F.triplet_margin_with_distance_loss(x, pos, neg),
            F.triplet_margin_with_distance_loss(x, pos, neg, margin=2.0, swap=True,
                                                reduction="none"))


def distances_bags(x1, x2, w, idx, off, idx2, psw, seq, wt, bt, b1, b2, wb, bb):
    """cdist, pdist, embedding bags, conv_tbc and bilinear."""
    return (ember.cdist(x1, x2), ember.cdist(x1, x2, p=1.0), ember.cdist(x1, x2, p=0.0),
            ember.cdist(x1, x2, p=float("inf")), ember.cdist(x1.unsqueeze(0), x2.unsqueeze(0), 3.0),
            ember.pdist(x1), F.pdist(x2, p=1), ember.pdist(x1, 0.5),
            F.embedding_bag(idx, w, off), F.embedding_bag(idx, w, off, mode="sum"),
            F.embedding_bag(idx, w, off, mode="max"), F.embedding_bag(idx2, w, mode="max"),
            F.embedding_bag(idx2, w, mode="sum", per_sample_weights=psw),
            F.embedding_bag(idx, w, off, padding_idx=2),
            F.embedding_bag(idx, w, ember.tensor([0, 2, 2, 7]), include_last_offset=True),
            ember.embedding_bag(w, idx, off), ember.embedding_bag(w, idx, off, False, 1),
            ember.embedding_bag(w, idx, off, False, 2),
            ember.embedding_bag(w.double(), idx, off, False, 0),
            ember.conv_tbc(seq, wt, bt), ember.conv_tbc(seq, wt, bt, 1),
            F.conv_tbc(seq, wt, bt, pad=2),
            ember.bilinear(b1, b2, wb, bb), ember.bilinear(b1[0], b2[0], wb))


# -- reductions by index, sampling, pooling, order statistics ------------------------------------

def scatter_index(x, idx, src, mask, ints):
    """scatter_reduce, index_reduce, masked_scatter, put, nonzero_static, unravel_index."""
    out = []
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        out.append(ember.scatter_reduce(x, 0, idx, src, reduce))
        out.append(x.scatter_reduce(1, idx.t()[:3, :2] % 4, src[:2, :3].t(), reduce,
                                    include_self=False))
        out.append(ints.scatter_reduce(0, idx[:, :3] % 3, ints * 3 - 4, reduce))
    for reduce in ("prod", "mean", "amax", "amin"):
        out.append(x.index_reduce(0, ember.tensor([0, 2, 0]), src[:3], reduce))
        out.append(x.index_reduce(1, ember.tensor([3, 3]), x.flip(0)[:, :2] * 2, reduce,
                                  include_self=False))
        out.append(ints.index_reduce(1, ember.tensor([0, 0, 2]), ints[:, :3] - 2, reduce))
    a = x.clone()
    a.scatter_reduce_(0, idx, src, "amax")
    b = x.clone()
    b.index_reduce_(0, ember.tensor([1, 1, 2]), src[:3], "mean", include_self=False)
    c = x.clone()
    c.masked_scatter_(mask, ember.cat([src.flatten(), -src.flatten()]))
    d = x.clone()
    d.put_(ember.tensor([0, -1, 5, 5]), ember.tensor([1.0, 2.0, 3.0, 4.0]), accumulate=True)
    return (*out, a, b, c, d, x.masked_scatter(mask, src.flatten().repeat(2)),
            x.masked_scatter(mask[0], src.flatten().repeat(2)),
            x.put(ember.tensor([[1, 2], [1, 11]]), src[:2, :2]),
            ints.put(ember.tensor([3]), ints[0, :1]), ember.nonzero_static(x > 0, size=5),
            ember.nonzero_static(x > 0, size=20, fill_value=-7),
            ember.unravel_index(ember.tensor([3, 7, 11]), (3, 4)),
            ember.unravel_index(idx, (2, 2, 5)))


def sampling(img, grid, theta, vol, grid3, theta3):
    """grid_sample's modes and paddings, the grid_sampler family and affine_grid."""
    out = []
    for mode in ("bilinear", "nearest", "bicubic"):
        for padding in ("zeros", "border", "reflection"):
            for align in (False, True):
                out.append(F.grid_sample(img, grid, mode=mode, padding_mode=padding,
                                         align_corners=align))
    for mode in ("bilinear", "nearest"):
        for padding in ("zeros", "border", "reflection"):
            out.append(F.grid_sample(vol, grid3, mode=mode, padding_mode=padding,
                                     align_corners=True))
    g2 = F.affine_grid(theta, (2, 3, 5, 4), align_corners=False)
    g3 = F.affine_grid(theta3, (1, 2, 3, 4, 2), align_corners=True)
    return (*out, g2, g3, F.grid_sample(img, g2, align_corners=False),
            F.affine_grid(theta, (2, 1, 1, 3), align_corners=True),
            ember.affine_grid_generator(theta, (2, 3, 2, 6), False),
            ember.grid_sampler(img, grid, 0, 2, False),
            ember.grid_sampler_2d(img, grid, 2, 0, True),
            ember.grid_sampler_3d(vol, grid3, 1, 1, False))


def pools(x, seq, vol, samples, samples3):
    """Unpooling, power-average pooling, 1-D max pooling with indices, fractional pooling."""
    y, i = F.max_pool2d(x, 2, return_indices=True)
    y1, i1 = F.max_pool1d(seq, 3, 2, return_indices=True)
    y3, i3 = F.max_pool3d(vol, 2, return_indices=True)
    return (F.max_unpool2d(y, i, 2), F.max_unpool2d(y, i, 2, output_size=(7, 9)),
            F.max_unpool2d(y[0], i[0], (2, 2), stride=2), F.max_unpool1d(y1, i1, 3, 2),
            F.max_unpool1d(y1, i1, 3, 2, output_size=[9]), F.max_unpool3d(y3, i3, 2),
            F.lp_pool2d(x, 2, 2), F.lp_pool2d(x.abs(), 1.5, (2, 3), stride=1, ceil_mode=True),
            F.lp_pool1d(seq, 3, 2), F.lp_pool3d(vol.abs(), 2, 2),
            F.max_pool1d_with_indices(seq, 2), F.max_pool1d_with_indices(seq, 3, 1, 1),
            F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=samples),
            F.fractional_max_pool2d(x, (2, 3), output_ratio=0.5, _random_samples=samples,
                                    return_indices=True),
            F.fractional_max_pool2d(x[0], 2, output_size=(2, 4), _random_samples=samples[:1]),
            F.fractional_max_pool3d(vol, 2, output_size=2, _random_samples=samples3,
                                    return_indices=True))


def order_counts(x, z, ints):
    """Quantiles, nanmedian, bincount, histc, unique and unique_consecutive."""
    q = ember.tensor([0.0, 0.25, 0.5, 1.0])
    out = [ember.quantile(x, 0.3), ember.quantile(x, q, dim=1), ember.quantile(x, 0.5, 0, True),
           ember.quantile(z, 0.5, 1), ember.nanquantile(z, q, 1), ember.nanquantile(z, 0.7),
           ember.nanquantile(z, 0.2, 0, keepdim=True)]
    for interpolation in ("lower", "higher", "midpoint", "nearest"):
        out.append(ember.quantile(x, q, 1, interpolation=interpolation))
    return (*out, ember.nanmedian(z), ember.nanmedian(z, 1), ember.nanmedian(z, 0, keepdim=True),
            ember.nanmedian(ints, 1), ember.nanmedian(x),
            ember.bincount(ints.flatten()), ember.bincount(ints[0], x[0]),
            ember.bincount(ints[1], minlength=9), ember.bincount(ints[0], x[0].double()),
            ember.histc(x), ember.histc(x, 5, -1, 1),
            ember.histc(x.double(), bins=3, min=0, max=0.5),
            ember.unique(ints), ember.unique(ints, return_inverse=True, return_counts=True),
            ember.unique(ints, return_counts=True, dim=1), ember.unique(x.round()),
            ember.unique(ints, return_inverse=True, dim=0),
            ember.unique_consecutive(ints), ember.unique_consecutive(ints, True, True),
            ember.unique_consecutive(ints, return_counts=True, dim=1), ember.unique(z))


# -- special functions, integer ops, the complex family on real tensors --------------------------

def special(x, p, u, n):
    """torch.special's functions and the top-level special ops, float32 and float64."""
    S = ember.special
    xd = x.double()
    out = []
    for t in (x, xd):
        out += [S.erfcx(t), S.ndtr(t * 3), S.log_ndtr(t * 4), S.i0e(t * 5), S.i1(t * 3),
                S.i1e(t * 12), S.entr(t), S.bessel_j0(t * 6), S.bessel_j1(t * 6),
                S.bessel_y0(t.abs() * 6), S.bessel_y1(t.abs() * 6), S.modified_bessel_i0(t * 2),
                S.modified_bessel_i1(t * 2), S.modified_bessel_k0(t.abs() * 3),
                S.modified_bessel_k1(t.abs() * 3), S.scaled_modified_bessel_k0(t.abs() * 3),
                S.scaled_modified_bessel_k1(t.abs() * 3), S.spherical_bessel_j0(t * 4),
                S.airy_ai(t * 4), ember.digamma(t * 3), ember.i0(t * 4)]
    a = x.clone()
    a.digamma_()
    b = x.clone()
    b.i0_()
    c = p.clone()
    c.igamma_(p * 0.5)
    return (*out, a, b, c, S.ndtri(u), S.ndtri(u.double()), S.xlog1py(x, p), S.xlog1py(x, 0.5),
            S.zeta(p + 1, p), S.zeta(xd.abs() + 1.5, 2.0), ember.igamma(p, p * 2),
            ember.igammac(p, x.abs() * 3), ember.igamma(p.double() * 10, p.double() * 9),
            ember.igammac(p * 30, p * 31), ember.polygamma(1, p), ember.polygamma(2, x * 2),
            ember.polygamma(3, p.double()), ember.mvlgamma(p + 2, 3), ember.mvlgamma(n + 3, 2),
            S.digamma(n), S.chebyshev_polynomial_t(x, 3), S.chebyshev_polynomial_t(x, 9),
            S.chebyshev_polynomial_u(x, n), S.chebyshev_polynomial_v(x, 10),
            S.chebyshev_polynomial_w(x, 4), S.shifted_chebyshev_polynomial_t(u, 7),
            S.shifted_chebyshev_polynomial_u(u, n), S.shifted_chebyshev_polynomial_v(u, 2),
            S.shifted_chebyshev_polynomial_w(u, 5), S.hermite_polynomial_h(x, n),
            S.hermite_polynomial_he(x, 5), S.laguerre_polynomial_l(x, n),
            S.legendre_polynomial_p(x, 6), S.legendre_polynomial_p(x.double(), n))


def integers_floats(i, j, x, y):
    """gcd, lcm, shifts, nextafter, frexp and the complex family on real tensors."""
    a = i.clone()
    a.gcd_(j)
    b = i.clone()
    b.bitwise_left_shift_(2)
    m, e = ember.frexp(x * 100)
    return (ember.gcd(i, j), ember.lcm(i, j), ember.gcd(i.to(ember.int8), j.to(ember.int8)),
            ember.lcm(i.to(ember.int16) * 300, j.to(ember.int16) * 7), a, b,
            ember.bitwise_left_shift(i, j % 5), ember.bitwise_right_shift(i * -3, j % 70),
            ember.bitwise_left_shift(i.to(ember.uint8), 3), ember.bitwise_right_shift(i, 1),
            ember.bitwise_left_shift(i.int(), j % 40), ember.nextafter(x, y),
            ember.nextafter(x.double(), y.double()), m, e, ember.frexp(x.double()),
            ember.angle(x), ember.angle(i), ember.conj(x) * 1, ember.conj_physical(x) + 0,
            ember.real(x) * 2, ember.resolve_conj(x) + 1, ember.resolve_neg(x) - 1,
            ember.isreal(x))


# -- linear algebra -------------------------------------------------------------------------------

def linalg_solvers(a, spd, b, r, v):
    """Inverses, determinants, solves, Cholesky and LU (registry and linalg spellings)."""
    L = ember.linalg
    lu, piv = ember.lu(a)
    lu_b, piv_b, info = ember.lu(a.expand(2, 4, 4) * 1, get_infos=True)
    chol = L.cholesky(spd)
    up = ember.cholesky(spd, upper=True)
    return (ember.inverse(a), L.inv(a), L.inv_ex(a), ember.det(a), L.det(a.expand(2, 4, 4) * 1),
            ember.slogdet(a), L.slogdet(-a), ember.logdet(spd), ember.logdet(-spd[:3, :3]),
            L.solve(a, b), L.solve(a, v), L.solve(a, b.t()[:2], left=False), L.solve_ex(a, b),
            L.solve_triangular(chol, b, upper=False), L.solve_triangular(up, b, upper=True),
            L.solve_triangular(up, b.t()[:3], upper=True, left=False),
            L.solve_triangular(chol, b, upper=False, unitriangular=True),
            ember.triangular_solve(b, up),
            ember.triangular_solve(b, chol, upper=False, transpose=True),
            chol, up, L.cholesky(spd, upper=True), L.cholesky_ex(spd),
            ember.cholesky_solve(b, chol), ember.cholesky_solve(b, up, upper=True),
            ember.cholesky_inverse(chol), ember.cholesky_inverse(up, upper=True),
            lu, piv, lu_b, piv_b, info, ember.lu_unpack(lu, piv), L.lu(a), L.lu(r), L.lu(r.t()),
            L.lu_factor(a), L.lu_factor_ex(r), L.lu_solve(lu, piv, b),
            L.lu_solve(lu, piv, b, adjoint=True),
            L.lu_solve(lu, piv, b.t()[:2], left=False), ember.lu_solve(b, lu, piv),
            ember.matrix_power(a, 3), L.matrix_power(a, -2), L.matrix_power(a, 0),
            ember.matrix_power(a, 1), ember.matrix_exp(a * 0.3),
            L.matrix_exp(a.expand(2, 4, 4) * 0.1), L.tensorinv(a.reshape(2, 2, 4), 2),
            L.tensorsolve(a.reshape(2, 2, 4), b[:, 0].reshape(2, 2)),
            L.tensorsolve(a.reshape(4, 2, 2), b[:, 1].reshape(2, 2), dims=(0,)))


def linalg_factorizations(a, r, spd, c):
    """QR, Householder reflectors, singular values and eigenvalues and what they give: pinv,
    rank, lstsq, norms (none of it depends on the signs of singular or eigen vectors)."""
    L = ember.linalg
    g, tau = ember.geqrf(r)
    q, rr = ember.qr(r)
    return (q, rr, ember.qr(r, some=False), L.qr(r), L.qr(r.t()), L.qr(r, mode="complete"),
            L.qr(r, mode="r"), g, tau, ember.orgqr(g, tau), L.householder_product(g, tau),
            ember.ormqr(g, tau, c), ember.ormqr(g, tau, c, transpose=True),
            ember.ormqr(g, tau, c.t(), left=False),
            L.svdvals(r), ember.svd(r, compute_uv=False), L.eigvalsh(spd), L.eigvalsh(a + a.t()),
            L.pinv(r), L.pinv(spd, hermitian=True), ember.pinverse(r.t()), L.pinv(r, rtol=0.3),
            L.matrix_rank(r), L.matrix_rank(spd, hermitian=True), L.matrix_rank(r, atol=1.0),
            L.lstsq(r, c), L.lstsq(r, c[:, 0], driver="gelsd"), L.lstsq(r, c, driver="gels"),
            L.vector_norm(a), L.vector_norm(a, 1, dim=1), L.vector_norm(a, float("inf"), (0, 1)),
            L.vector_norm(a, 0.5, keepdim=True), L.vector_norm(a, 3, -1, dtype=ember.float64),
            L.matrix_norm(a), L.matrix_norm(a, "nuc"), L.matrix_norm(a, 2), L.matrix_norm(a, -2),
            L.matrix_norm(a, 1), L.matrix_norm(r, float("-inf"), keepdim=True),
            L.norm(a), L.norm(a, "fro"), L.norm(a[0], 3), L.norm(r, 1), L.norm(a, dim=1),
            L.cond(a), L.cond(a, "fro"), L.cond(a, 1), L.cond(r, -2),
            L.multi_dot([a[:3, :3], r.t(), c]), L.multi_dot([a[0], a, a[:, :2]]),
            L.vecdot(a, a * 2),
            L.cross(r[:3, :3], r[2:, :]), L.vander(a[0]), L.vander(a[0], N=3),
            L.diagonal(a), L.matmul(r, a[:3]))


# -- the rest: scatters by geometry, gradients, histograms, hashes, CTC, FFT helpers -------------

def rest(x, src, coords, lp, targets, flat_targets):
    """as_strided_scatter, resize_as_, gradient, histogram, hash_tensor, ctc_loss, fftshift
    (histogramdd, whose result nests a tuple of edges, is golden_nested.py's)."""
    y = x.clone()
    y.resize_as_(x[:2])
    edges = ember.tensor([-2.0, -0.5, 0.0, 0.3, 2.0])
    il = ember.tensor([6, 5])
    tl = ember.tensor([3, 2])
    return (ember.as_strided_scatter(x, src, (2, 2), (1, 3)),
            ember.as_strided_scatter(x, src[0], (2,), (5,), 1), y * 1,
            ember.gradient(x), ember.gradient(x, spacing=2.0),
            ember.gradient(x, dim=1, edge_order=2),
            ember.gradient(x, spacing=[coords], dim=0), ember.gradient(x, spacing=(0.5, 2.0)),
            ember.histogram(x, 5), ember.histogram(x, edges),
            ember.histogram(x, 4, range=(-1.0, 1.0), weight=x.abs(), density=True),
            ember.hash_tensor(x), ember.hash_tensor(targets, 1),
            ember.hash_tensor(x, (0,), keepdim=True),
            F.ctc_loss(lp, targets, il, tl), F.ctc_loss(lp, targets, il, tl, reduction="sum"),
            F.ctc_loss(lp, flat_targets, il, tl, reduction="none", blank=0),
            F.ctc_loss(lp[:, 0], targets[0], il[:1], tl[:1]),
            ember.ctc_loss(lp, targets, il, tl, 0, 2, True),
            ember.fft.fftshift(x), ember.fft.ifftshift(x, dim=1), ember.fft.fftshift(x, dim=(0,)))


def windows(x):
    """The window and frequency factories, recorded where their length is a symbolic size."""
    n = x.shape[0]
    return (ember.hann_window(n) + x, ember.hann_window(n + 1, periodic=False),
            ember.hamming_window(n, alpha=0.5, beta=0.3), ember.blackman_window(n),
            ember.bartlett_window(n), ember.kaiser_window(n, beta=5.0),
            ember.kaiser_window(n, False, dtype=ember.float64), ember.fft.fftfreq(n),
            ember.fft.fftfreq(n, 0.25), ember.fft.rfftfreq(n, d=2.0))


def linalg_ldl(a, s, b):
    """Bunch-Kaufman LDL^T (1x1 and 2x2 pivots: ``s`` has a zero diagonal) and its solve,
    with a broadcast batch."""
    L = ember.linalg
    ld, piv = L.ldl_factor(a)
    ld2, piv2, info = L.ldl_factor_ex(s)
    return (ld, piv, ld2, piv2, info, L.ldl_solve(ld, piv, b), L.ldl_solve(ld2, piv2, b[0]),
            L.ldl_factor(s, hermitian=True).LD)


def factories(x):
    """The random and spaced factories recorded where a size is symbolic or a tensor is an
    argument. C++ draws from its own stream, so the random ones are called where every draw
    gives one value (std 0, rate 0, one integer to draw from, a permutation of one)."""
    n = x.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ember.range's deprecation
        rng = (ember.range(0, n), ember.range(1, n, 0.5, dtype=ember.float64),
               ember.range(n, 0, -2, dtype=ember.int64), ember.range(0, n))
    return (ember.logspace(0, 2, n), ember.logspace(-1.5, 1, n, base=2.0, dtype=ember.float64),
            ember.logspace(0, 3, n, 2, dtype=ember.int64), *rng,
            ember.empty_strided((n, 3), (1, n)).fill_(2.5) + x.unsqueeze(1),
            ember.normal(x, ember.zeros_like(x)), ember.normal(x, 0.0), ember.normal(1.5, x * 0),
            ember.normal(2.0, 0.0, (n, 2)), ember.poisson(x * 0), ember.randint(0, 1, (n, 2)),
            ember.randint(1, (n,), dtype=ember.float32), ember.randperm(n - n + 1))


def _signed(q, dim):
    """``q`` with each vector (along ``dim``) turned so that its largest entry is positive:
    singular and eigen vectors are defined up to sign, and two LAPACK builds (NumPy's, the C++
    frontend's scipy-openblas32) may pick different ones for the same matrix."""
    return q * q.gather(dim, q.abs().argmax(dim, keepdim=True)).sign()


def linalg_vectors(a, r, spd):
    """Singular and eigen vectors, each turned to a sign convention of its own (see
    ``_signed``): the ops' values and layouts, not a LAPACK build's sign choice."""
    L = ember.linalg
    out = []
    for u, s, vh in (L.svd(a), L.svd(r, full_matrices=False), L.svd(r.t())):
        out += [_signed(u, 0), s, _signed(vh, 1)]
    for u, s, v in (ember.svd(r), ember.svd(r, some=False)):
        out += [_signed(u, 0), s, _signed(v, 0)]
    for w, q in (L.eigh(spd), L.eigh(spd, UPLO="U")):
        out += [w, _signed(q, 0)]
    return tuple(out)


def main() -> int:
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    golden_jit.PROGRAMS.clear()
    warnings.simplefilter("ignore")
    trace = golden_jit.trace_program

    ember.manual_seed(20)
    trace(out_dir, "more2_views_products", views_products,
          (ember.randn(3, 4), ember.randn(4), ember.randn(2, 3, 5), ember.randn(2, 5, 4),
           ember.tensor([[1, 2, 3, 4], [0, -1, 2, 5], [3, 3, 1, 2]])))
    trace(out_dir, "more2_windows_activations", windows_activations,
          (ember.randn(3, 5), ember.randn(3, 5)))
    trace(out_dir, "more2_losses", losses,
          (ember.randn(4, 5), ember.randn(4, 5), ember.rand(4, 5) + 0.1,
           ember.tensor([1, 0, 4, 2]),
           ember.tensor([[1, 3, -1, 0, 0], [0, 1, 2, 3, 4], [4, -1, 2, 2, 0], [2, 2, -1, 1, 1]]),
           ember.randn(4, 5), ember.randn(4, 5)))
    trace(out_dir, "more2_distances_bags", distances_bags,
          (ember.randn(4, 3), ember.randn(5, 3), ember.randn(10, 3),
           ember.tensor([1, 2, 4, 5, 4, 3, 2, 9]), ember.tensor([0, 2, 2, 5]),
           ember.tensor([[0, 2, 2], [9, 1, 1]]), ember.rand(2, 3), ember.randn(6, 2, 3),
           ember.randn(3, 3, 4), ember.randn(4), ember.randn(2, 3, 4), ember.randn(2, 3, 5),
           ember.randn(6, 4, 5), ember.randn(6)))
    ember.manual_seed(21)
    trace(out_dir, "more2_scatter_index", scatter_index,
          (ember.randn(4, 5), ember.tensor([[1, 0, 3, 3, 2], [0, 0, 1, 2, 2], [3, 1, 1, 0, 0]]),
           ember.randn(3, 5), ember.randn(4, 5) > 0,
           ember.tensor([[4, 1, 7], [2, 2, 9], [5, 0, 3]])))
    trace(out_dir, "more2_sampling", sampling,
          (ember.randn(2, 3, 4, 5), ember.rand(2, 3, 6, 2) * 2.6 - 1.3,
           ember.eye(2, 3).expand(2, 2, 3) + ember.randn(2, 2, 3) * 0.3,
           ember.randn(1, 2, 3, 4, 2), ember.rand(1, 2, 3, 2, 3) * 2.4 - 1.2,
           ember.eye(3, 4).expand(1, 3, 4) + ember.randn(1, 3, 4) * 0.2))
    trace(out_dir, "more2_pools", pools,
          (ember.randn(2, 3, 6, 8), ember.randn(2, 3, 9), ember.randn(1, 2, 4, 6, 6),
           ember.rand(2, 3, 2), ember.rand(1, 2, 3)))
    z = ember.randn(3, 5)
    z[0, 1] = float("nan")
    z[2] = float("nan")
    trace(out_dir, "more2_order_counts", order_counts,
          (ember.randn(3, 5), z, ember.tensor([[1, 3, 3, 0, 7], [2, 2, 5, 8, 0], [1, 3, 3, 0, 7]])))
    ember.manual_seed(22)
    trace(out_dir, "more2_special", special,
          (ember.randn(3, 5), ember.rand(3, 5) * 3 + 0.1, ember.rand(3, 5),
           ember.tensor([[0, 1, 2, 3, 5], [8, 13, -1, 4, 7], [2, 2, 0, 1, 6]])))
    trace(out_dir, "more2_integers_floats", integers_floats,
          (ember.tensor([[12, -18, 0, 7], [100, 35, -64, 1]]),
           ember.tensor([[8, 27, 0, -21], [75, 14, 48, 0]]), ember.randn(2, 4), ember.randn(2, 4)))
    ember.manual_seed(23)
    m = ember.randn(4, 4)
    spd = m @ m.t() + 4 * ember.eye(4)
    trace(out_dir, "more2_linalg_solvers", linalg_solvers,
          (ember.randn(4, 4) + 4 * ember.eye(4), spd, ember.randn(4, 3), ember.randn(3, 5),
           ember.randn(4)))
    m = ember.randn(4, 4)
    trace(out_dir, "more2_linalg_factorizations", linalg_factorizations,
          (ember.randn(4, 4) + 3 * ember.eye(4), ember.randn(5, 3),
           m @ m.t() + ember.diag(ember.tensor([1.0, 3.0, 6.0, 10.0])), ember.randn(5, 2)))
    m = ember.randn(4, 4)
    trace(out_dir, "more2_linalg_vectors", linalg_vectors,
          (ember.randn(4, 4), ember.randn(5, 3),
           m @ m.t() + ember.diag(ember.tensor([1.0, 3.0, 6.0, 10.0]))))
    ember.manual_seed(24)
    trace(out_dir, "more2_rest", rest,
          (ember.randn(3, 4), ember.randn(2, 2), ember.tensor([0.0, 0.5, 1.5]),
           ember.randn(6, 2, 5).log_softmax(2), ember.tensor([[1, 2, 2], [3, 4, 0]]),
           ember.tensor([1, 2, 2, 3, 4])))
    golden_jit.export_program(out_dir, "more2_windows_export", windows, (ember.randn(6),),
                              ({0: ember.export.Dim("n", min=2, max=64)},), [(ember.randn(9),)])
    golden_jit.export_program(out_dir, "more2_factories_export", factories, (ember.randn(5),),
                              ({0: ember.export.Dim("n", min=2, max=64)},), [(ember.randn(8),)])
    ember.manual_seed(25)
    m = ember.randn(2, 4, 4, dtype=ember.float64)
    m5 = ember.randn(2, 5, 5)  # float32
    trace(out_dir, "more2_linalg_ldl", linalg_ldl,
          (m + m.transpose(-1, -2),
           ember.tensor([[0.0, 1.0, 2.0, 0.5], [1.0, 0.0, 3.0, 1.0], [2.0, 3.0, 0.0, -1.0],
                         [0.5, 1.0, -1.0, 0.0]], dtype=ember.float64),
           ember.randn(2, 4, 3, dtype=ember.float64)),
          [(m5 + m5.transpose(-1, -2), ember.randn(5, 5) + 3 * ember.eye(5).flip(0),
            ember.randn(2, 5, 2))])
    golden_jit.write_program_list(out_dir, "programs_more2.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
