"""The complex kernels' programs for the C++ op table's golden files, written by
golden_complex.py (checked by test_complex_ops.cpp like its other programs): reductions (sum,
mean, prod, cumsum, cumprod, the real-valued norms), products (mm, bmm, every matmul case, mv,
dot, addmm, linear, baddbmm), comparisons and selects (eq, ne, isclose,
isnan/isinf/isfinite, where, masked_fill), pointwise functions and pow, and the complex LDL^T
family (symmetric and Hermitian), each traced and run eagerly on complex64 and complex128
inputs.
"""

from __future__ import annotations

import ember
import ember.nn.functional as F


def reductions(z, w):
    """sum / mean / prod over everything, a dim, with keepdim; the scans; the vector and
    matrix norms (real)."""
    L = ember.linalg
    return (z.sum(), z.sum(1), ember.sum(z, (0, 2), keepdim=True), z.mean(),
            z.mean(0, keepdim=True), ember.mean(z, (1, 2)), z.prod(), z.prod(1),
            z.prod(2, keepdim=True), z.cumsum(1), ember.cumsum(z, -1), z.cumprod(2),
            ember.cumprod(w, 0), L.vector_norm(z), L.vector_norm(z, 1, dim=1),
            L.vector_norm(z, float("inf"), dim=(0, 2)), L.vector_norm(w, 3.5), L.vector_norm(w, 0),
            z.norm(), ember.norm(w, p=1), w.sum() * 1j, L.norm(w), L.norm(z[0]),
            L.norm(z, dim=(1, 2)), L.matrix_norm(z), L.matrix_norm(z, 1, dim=(0, 2)),
            L.matrix_norm(z, -float("inf")), L.norm(z[:, :, 0], float("inf")))


def products(a, b, v, u, t, s, c, x, weight, bias):
    """mm, bmm, matmul's cases (1-D, 2-D, folded and broadcast batches), mv, dot, outer, addmm
    with beta and alpha, linear with and without bias, baddbmm. (vdot is left out: Python
    Ember's does not conjugate its first argument; test_complex_kernels.cpp checks C++'s.)"""
    return (ember.mm(a, b), a @ b, v @ u, a @ u, v @ b, t @ b, t @ u, v @ s, t @ s,
            t.unsqueeze(0) @ s.unsqueeze(1), ember.bmm(t, s), ember.mv(a, u), ember.dot(v, v),
            ember.outer(v, u),
            ember.addmm(c, a, b), ember.addmm(c, a, b, beta=0.5, alpha=2),
            F.linear(x, weight, bias), F.linear(x, weight),
            ember.baddbmm(t @ s, t, s, beta=2, alpha=0.5),
            a.t() @ a.conj())


def tests(z, w, m, re):
    """eq / ne with tensors and numbers, isclose's modulus, the nan / inf tests, where and
    masked_fill with complex and real values."""
    near = z + ember.complex(re, re) * 1e-6
    bad = ember.where(m, z * float("nan"), z)
    return (z == w, z != w, z == z.clone(), ember.eq(z, 1j), ember.ne(z, 0.5), z == re,
            ember.isclose(z, near), ember.isclose(z, near, rtol=0, atol=1e-9),
            ember.isclose(bad, bad, equal_nan=True), ember.isnan(bad), ember.isinf(z / 0),
            ember.isfinite(bad), ember.where(m, z, w), ember.where(m, z, 2.5),
            ember.where(m, 1j, z), ember.where(m, re, z), z.masked_fill(m, 1j),
            z.masked_fill(m, -0.5),
            z.masked_fill(m, ember.tensor(2 - 1j).to(z.dtype)))


def pointwise(z, w):
    """The pointwise functions of complex tensors, and pow with real and complex exponents (a
    complex tensor exponent is left out: Python Ember's pow of two complex tensors fails)."""
    return (z.exp(), z.log(), z.sqrt(), z.sin(), z.cos(), z.tan(), z.sinh(), z.cosh(), z.tanh(),
            z.reciprocal(), z.rsqrt(), -z, z.square(), z.sigmoid(), ember.sgn(z), z.log1p(),
            (z * 1e-4).log1p(), z.expm1(), (z * 1e-4).expm1(), z.exp2(), z.log2(), z.log10(),
            z ** 2, z ** 3, z ** 0.5, z ** -1.5, z ** (1 + 1j), ember.pow(z, (0.5 - 2j)), w * 1)


def ldl(a, h, b):
    """LDL^T of a complex symmetric matrix (zsytf2) and L D L^H of a Hermitian one (zhetf2), a
    batch, and their solves."""
    L = ember.linalg
    LD, piv = L.ldl_factor(a)
    LDh, pivh, info = L.ldl_factor_ex(h, hermitian=True)
    return (LD, piv, L.ldl_solve(LD, piv, b), LDh, pivh, info,
            L.ldl_solve(LDh, pivh, b, hermitian=True), L.ldl_factor_ex(a + a.mT)[0])


def write_all(out_dir: str, trace, crandn) -> None:
    """Writes the programs with golden_complex.py's ``trace`` and ``crandn``."""
    ember.manual_seed(41)
    c64, c128 = ember.complex64, ember.complex128

    def symmetric(n, batch=(), dtype=c64):
        z = crandn(*batch, n, n, dtype=dtype)
        return z + z.mT

    def hermitian(n, batch=(), dtype=c64):
        z = crandn(*batch, n, n, dtype=dtype)
        return z + z.mT.conj()

    def product_args(dt):
        shapes = ((3, 4), (4, 2), (4,), (4,), (5, 3, 4), (5, 4, 2), (3, 2), (2, 3, 4), (6, 4), (6,))
        return tuple(crandn(*s, dtype=dt) for s in shapes)

    trace(out_dir, "complex_reductions", reductions, (crandn(3, 4, 5), crandn(6)),
          [(crandn(2, 3, 2, dtype=c128), crandn(4, dtype=c128))])
    trace(out_dir, "complex_products", products, product_args(c64), [product_args(c128)])
    m = ember.tensor([[True, False, True, False], [False, False, True, True],
                      [True, True, False, False]])
    z = crandn(3, 4)
    w = ember.where(m, z, crandn(3, 4))  # equal where m
    trace(out_dir, "complex_tests", tests, (z, w, m, ember.randn(3, 4)),
          [(z.to(c128), w.to(c128), ~m, ember.randn(3, 4, dtype=ember.float64))])
    trace(out_dir, "complex_pointwise", pointwise, (crandn(3, 4), crandn(3, 4) * 0.5),
          [(crandn(2, 5, dtype=c128), crandn(2, 5, dtype=c128) * 0.5)])
    trace(out_dir, "complex_ldl", ldl, (symmetric(4), hermitian(4, (2,)), crandn(2, 4, 3)),
          [(symmetric(5, dtype=c128), hermitian(5, (3,), dtype=c128), crandn(3, 5, 2, dtype=c128))])
