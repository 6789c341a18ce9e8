"""``ember.linalg.eig`` and ``eigvals`` (keyed by their ATen names ``linalg_eig`` and
``linalg_eigvals``, as ``registry.op_key`` names them).

They are not ``torch.<name>`` ops of the registry, so the generic tests of ``tests/ops`` do not
pick them up; ``tests/core/test_complex_linalg.py`` runs these samples (forward against NumPy,
float64 and complex128 gradchecks through ``output``). The samples follow PyTorch's
``sample_inputs_linalg_eig``: square matrices of distinct eigenvalues, batched and empty
ones, real inputs (float32/float64) whose spectra hold complex-conjugate pairs. The float64
samples turn complex128 with ``complex_samples``.
"""

from __future__ import annotations

import numpy as np

from . import FLOAT, SampleInput, SeedStream, define

_SEEDS = SeedStream(40_000)
_SHAPES = ((3, 3), (2, 4, 4), (1, 1), (2, 0, 0))


def _matrix(shape, rng, complex_):
    """A random matrix (batch) whose eigenvalues are distinct (so eig is differentiable)."""
    a = rng.standard_normal(shape)
    if complex_:
        a = a + 1j * rng.standard_normal(shape)
    n = shape[-1]
    # spread the spectrum: a random similarity of a diagonal with gaps of at least 1
    d = np.arange(1, n + 1) * (1.5 + 0.5j if complex_ else 1.5)
    if not n or not np.all(np.abs(np.linalg.det(a)) > 0.1):
        return a
    return a @ (d[..., :, None] * np.linalg.inv(a))


def eig_samples(complex_: bool = False):
    """Samples of ``linalg.eig``: real matrices of ``dtype`` (complex ones of its complex type
    with ``complex_``)."""

    def samples(device, dtype, requires_grad=False):
        import ember

        dt = getattr(ember, dtype)
        if complex_:
            dt = dt.to_complex()
        rng = np.random.default_rng(next(_SEEDS))
        for shape in _SHAPES:
            t = ember.tensor(_matrix(shape, rng, complex_), dtype=dt, device=device)
            yield SampleInput(t.requires_grad_(requires_grad), name=f"shape{shape}")
        if not complex_:
            # a rotation block: a real matrix with a complex-conjugate pair of eigenvalues
            # (as a complex input, LAPACK's order of that pair flips under perturbations of
            # the size finite differences take: no sample for a gradcheck there)
            rot = np.array([[0.0, -2.0, 0.3], [2.0, 0.0, 0.1], [0.0, 0.0, 5.0]])
            t = ember.tensor(rot, dtype=dt, device=device)
            yield SampleInput(t.requires_grad_(requires_grad), name="conjugate pair")

    return samples


def gauge_invariant(result):
    """eig's outputs as PyTorch's OpInfo checks them: the eigenvalues and the moduli of the
    eigenvectors (invariant under V -> V e^{i phi})."""
    L, V = result
    return L, V.abs()


def _np_eigvals(a):
    w = np.linalg.eigvals(a) if a.size else np.zeros(a.shape[:-1], np.complex128)
    return w.astype(np.result_type(a.dtype, np.complex64))


define("linalg_eig", eig_samples(), dtypes=FLOAT, torch="linalg.eig",
       output=gauge_invariant, atol=1e-4, rtol=1e-4)
define("linalg_eigvals", eig_samples(), dtypes=FLOAT, torch="linalg.eigvals",
       ref=_np_eigvals, atol=1e-4, rtol=1e-4)
define("linalg_eig_complex", eig_samples(True), dtypes=FLOAT, torch="linalg.eig",
       output=gauge_invariant, atol=1e-4, rtol=1e-4)
