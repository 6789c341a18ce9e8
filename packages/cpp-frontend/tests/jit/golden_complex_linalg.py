"""Golden files of the C++ op table's complex linear algebra, complex addmm-family scalars and
complex in-place ops (test_complex_linalg_ops.cpp; run by ctest before the jit tests):

    python golden_complex_linalg.py GOLDEN_DIR

Written as golden_complex.py writes its programs (its ``trace`` and ``crandn``): each program
is traced by ``ember.jit.trace`` and run eagerly on complex64 and complex128 inputs. The names
go to ``programs_complex_linalg.txt``.

The SVD's vectors are unique up to a phase per singular pair, and the C++ library built
without LAPACK (one-sided Jacobi) picks other phases than gesdd: the programs return what
does not depend on them (the singular values, the moduli of the reduced factors'
entries, products that rebuild A). ``var`` / ``std`` of complex tensors and ``torch.svd``'s V
are left out: Python Ember's are wrong there (test_complex_linalg.cpp checks C++'s against
NumPy's values).
"""

from __future__ import annotations

import os
import sys

import golden_complex as G  # this folder: trace, crandn, PROGRAMS

import ember


def solves(a, b, v, ab, s):
    """linalg.solve (matrix and vector right-hand sides, broadcast batches, left=False),
    solve_ex, the inverses and the determinants, a singular matrix included."""
    L = ember.linalg
    x, info = L.solve_ex(a, b)
    inv, inv_info = L.inv_ex(s)
    return (L.solve(a, b), L.solve(a, v), L.solve(ab, b), L.solve(a, b.mT, left=False), x, info,
            L.inv(a), L.inv(ab), ember.inverse(a), L.inv_ex(a)[0], inv_info,
            L.det(a), L.det(ab), ember.det(a), L.det(s), L.slogdet(a), L.slogdet(ab),
            ember.slogdet(s), ember.logdet(a), ember.logdet(ab))


def spectral(r, w, sq):
    """The complex SVD's phase-free results, and the norms and condition numbers through it."""
    L = ember.linalg
    U, S, Vh = L.svd(r, full_matrices=False)
    Uf, Sf, Vhf = L.svd(w)
    k = min(w.shape[-2:])
    rebuilt = (Uf[..., :k] * Sf.unsqueeze(-2)) @ Vhf[..., :k, :]
    return (S, L.svdvals(r), L.svdvals(w), U.abs(), Vh.abs(), (U * S.unsqueeze(-2)) @ Vh,
            Sf, rebuilt, Uf @ Uf.mH, Vhf.mH @ Vhf,
            L.matrix_norm(r, "nuc"), L.matrix_norm(r, 2), L.matrix_norm(r, -2),
            L.matrix_norm(w, "nuc", keepdim=True), L.norm(r[0], "nuc"), L.norm(r[0], 2),
            L.norm(w, -2, dim=(0, 2)), L.cond(sq), L.cond(sq, "fro"), L.cond(sq, 1),
            L.cond(sq, -2), L.cond(sq, float("inf")), L.cond(r, 2))


def scaled_products(c, a, b, v, t, s, x):
    """addmm / addmv / baddbmm / addbmm with complex alpha and beta (beta == 0 included)."""
    return (ember.addmm(c, a, b, beta=1j, alpha=2 - 1j), ember.addmm(c, a, b, alpha=0.5j),
            ember.addmm(c, a, b, beta=0, alpha=1 + 1j),
            ember.addmv(v, a, x, beta=-1j, alpha=0.25 + 2j),
            ember.baddbmm(t @ s, t, s, beta=1 - 1j, alpha=1j),
            ember.addbmm(c, t, s, beta=0.5j, alpha=-2j),
            ember.addmm(c, a, b, beta=2, alpha=0.5))


def inplace(z, w, re):
    """In-place arithmetic and functions on complex tensors (on clones: the inputs stay)."""
    return (z.clone().add_(w), z.clone().add_(w, alpha=2), z.clone().sub_(1j), z.clone().mul_(w),
            z.clone().mul_(2 - 1j), z.clone().div_(w), z.clone().div_(re), z.clone().neg_(),
            z.clone().exp_(), z.clone().sqrt_(), z.clone().sin_(), z.clone().tanh_(),
            z.clone().reciprocal_(), z.clone().pow_(2), z.clone().conj_physical_())


def main() -> int:
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    ember.manual_seed(43)
    crandn, trace = G.crandn, G.trace
    c64, c128 = ember.complex64, ember.complex128

    def solve_args(dt):
        a = crandn(4, 4, dtype=dt)
        s = a.clone()
        s[:, 2] = 0  # singular (exactly: LU finds the zero pivot in any precision)
        return (a, crandn(4, 3, dtype=dt), crandn(4, dtype=dt), crandn(2, 4, 4, dtype=dt), s)

    trace(out_dir, "complex_linalg_solves", solves, solve_args(c64), [solve_args(c128)])

    def spectral_args(dt, batch):
        return (crandn(batch, 5, 3, dtype=dt), crandn(batch, 3, 6, dtype=dt),
                crandn(4, 4, dtype=dt))

    trace(out_dir, "complex_linalg_spectral", spectral, spectral_args(c64, 2),
          [spectral_args(c128, 3)])

    def product_args(dt):
        shapes = ((3, 2), (3, 4), (4, 2), (3,), (5, 3, 4), (5, 4, 2), (4,))
        return tuple(crandn(*sh, dtype=dt) for sh in shapes)

    trace(out_dir, "complex_linalg_scaled_products", scaled_products, product_args(c64),
          [product_args(c128)])
    trace(out_dir, "complex_linalg_inplace", inplace,
          (crandn(3, 4), crandn(3, 4), ember.randn(3, 4)),
          [(crandn(2, 5, dtype=c128), crandn(2, 5, dtype=c128),
            ember.randn(2, 5, dtype=ember.float64))])
    with open(os.path.join(out_dir, "programs_complex_linalg.txt"), "w") as f:
        for name, runs in G.PROGRAMS:
            f.write(f"{name} {runs}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
