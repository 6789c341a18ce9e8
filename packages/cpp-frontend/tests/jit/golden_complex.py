"""Golden files of the C++ op table's complex entries (test_complex_ops.cpp; run by ctest before
the jit tests, see tests/CMakeLists.txt):

    python golden_complex.py GOLDEN_DIR

Each program below is traced by ``ember.jit.trace`` (one is exported with a dynamic batch and
a complex64 buffer) and run eagerly. ``<name>.ember`` is the program; ``<name>.run<k>.safetensors``
holds run k's inputs (``in.<i>``) and flattened outputs (``out.<j>``). safetensors has no
complex128 (and C++ reads complex64 from it, but keeps the files uniform): a complex tensor is
stored as its ``view_as_real``, and the metadata's ``complex_in`` / ``complex_out`` list which
entries to turn back with ``view_as_complex``. The names go to ``programs_complex.txt``.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

import ember
import ember.export as E
import ember.nn as nn
from ember.safetensors import save_file

fft = ember.fft
PROGRAMS: list = []


def flatten(out, tensors: list) -> None:
    if isinstance(out, ember.Tensor):
        tensors.append(out)
    elif isinstance(out, (tuple, list)):
        for o in out:
            flatten(o, tensors)
    else:
        raise TypeError(f"unexpected output {type(out).__name__}")


def stored(t):
    t = t.detach().contiguous()
    return (ember.view_as_real(t) if t.is_complex() else t).clone()


def write(out_dir: str, name: str, runs: list, save) -> None:
    save(os.path.join(out_dir, f"{name}.ember"))
    for k, (fn, args) in enumerate(runs):
        with ember.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*args)
        tensors: list = []
        flatten(out, tensors)
        data = {f"in.{i}": stored(a) for i, a in enumerate(args)}
        data.update({f"out.{j}": stored(t) for j, t in enumerate(tensors)})
        meta = {"complex_in": json.dumps([i for i, a in enumerate(args) if a.is_complex()]),
                "complex_out": json.dumps([j for j, t in enumerate(tensors) if t.is_complex()])}
        save_file(data, os.path.join(out_dir, f"{name}.run{k}.safetensors"), metadata=meta)
    PROGRAMS.append((name, len(runs)))


def trace(out_dir: str, name: str, fn, example, others=()) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = ember.jit.trace(fn, example, strict=False)
    runs = [(fn, example)] + [(fn, a) for a in others]
    write(out_dir, name, runs, lambda p: ember.jit.save(traced, p))


def crandn(*shape, dtype=ember.complex64):
    return ember.complex(ember.randn(*shape), ember.randn(*shape)).to(dtype)


# -- the programs ---------------------------------------------------------------------------------

def eig(a, b, z):
    """The general eigendecomposition (LAPACK's geev: unit eigenvectors whose largest component
    is real, NumPy's and PyTorch's convention): real input with complex-pair eigenvalues,
    a batch, and a complex input."""
    L = ember.linalg
    return L.eig(a), L.eigvals(a), L.eig(b), L.eig(z), L.eigvals(z)


def fft_1d(x, z):
    """The one-dimensional transforms: n pads or trims, dim, the three norms, real and complex."""
    return (fft.fft(x), fft.fft(x, n=16), fft.fft(x, n=3, dim=0, norm="ortho"),
            fft.fft(z, dim=0, norm="forward"), fft.ifft(z), fft.ifft(x, norm="forward"),
            fft.ifft(z, n=13, norm="ortho"), fft.rfft(x), fft.rfft(x, n=9, norm="ortho"),
            fft.rfft(x, dim=0), fft.irfft(z), fft.irfft(z, n=11),
            fft.irfft(z, n=7, norm="forward"), fft.hfft(z), fft.hfft(z, n=9, norm="ortho"),
            fft.ihfft(x), fft.ihfft(x, n=12, norm="forward"))


def fft_nd(x, z):
    """The 2-d and n-d transforms: s, dim, norm; and the shifts on complex spectra."""
    return (fft.fft2(x), fft.ifft2(z), fft.fftn(x), fft.fftn(x, s=(4, 8)),
            fft.ifftn(z, dim=(0, 2)), fft.fftn(z, s=(3, -1), dim=(2, 1), norm="ortho"),
            fft.rfft2(x), fft.rfftn(x, s=(3, 6), norm="ortho"), fft.irfft2(z),
            fft.irfftn(z, s=(4, 7)), fft.irfftn(z, dim=(0, 2), norm="forward"), fft.hfft2(z),
            fft.hfftn(z, s=(4, 6), dim=(1, 2)), fft.ihfft2(x), fft.ihfftn(x, norm="forward"),
            fft.fftshift(fft.fft2(x)),
            fft.ifftshift(fft.fftn(z, dim=(1,)), dim=(1, 2)))


def family(z, w, re, im, p):
    """Making, taking apart and computing with complex tensors; complex numbers as arguments.
    (``z.real`` / ``z.imag``, properties, are not recorded by Python's tracer: it lifts their
    values as constants, so the functions ``ember.real`` / ``ember.imag`` are used.)"""
    a = ember.view_as_complex(p)
    return (ember.view_as_real(z), ember.complex(re, im), ember.polar(re.abs(), im), a, a * 2,
            ember.real(z), ember.imag(z) * 1, ember.real(re), z.conj(), ember.conj_physical(z),
            ember.resolve_conj(z.conj()), ember.resolve_neg(z), z.abs(), z.angle(), re.angle(),
            ember.isreal(z), ember.isreal(re), z * w, z + re, z - im, z / (w + 2), z * 2.5, 3 - z,
            z * (1 + 2j), re * 1j, (0.5 - 1j) + z, -z, z.exp(), z.log(), z.sqrt(), z.sin(),
            z.cos(), z.tanh(), ember.sgn(z), z.reciprocal(), z.square(), ember.cat([z, w]),
            ember.stack([z, w], 1), z.reshape(-1), z.t(), z[1:, ::2], z.flip(0),
            ember.roll(z, 1, 1), z.unsqueeze(0).squeeze(0) * 1, z.to(ember.complex128),
            re.to(ember.complex64), w.to(ember.complex64) * z)


def spectrogram(x, w):
    """stft / istft: centred (reflect and constant padding) or not, windows shorter than n_fft,
    normalized, two-sided, the deprecated real output; the inverse back to the signal."""
    spec = ember.stft(x, 16, hop_length=4, window=w, return_complex=True)
    # float64 throughout (a float32 stft would carry float32 rounding into the complex128 result)
    two_sided = ember.stft(x.double(), 16, 4, window=w.double(), onesided=False,
                           return_complex=True)
    return (spec,
            ember.stft(x, 16, 4, window=w, normalized=True, onesided=False, return_complex=True),
            ember.stft(x, 16, 5, 12, w[:12], center=True, pad_mode="constant", return_complex=True),
            ember.stft(x[0], 8, 3, window=w[::2], center=False, return_complex=True),
            ember.stft(x, 16, 4, window=w, return_complex=False),
            ember.istft(spec, 16, 4, window=w, length=64),
            ember.istft(spec, 16, 4, window=w),
            ember.istft(two_sided, 16, 4, window=w.double(), onesided=False,
                        return_complex=True))


class Filter(nn.Module):
    """A frequency-domain filter whose weights are complex: rfft, times the complex64 buffer
    (a C64 tensor of the .ember file), irfft."""

    def __init__(self):
        super().__init__()
        self.register_buffer("response", ember.complex(ember.randn(5), ember.randn(5)))

    def forward(self, x):
        return fft.irfft(fft.rfft(x) * self.response, n=8), (fft.fft(x) * 2).abs()


def main() -> int:
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    ember.manual_seed(31)
    trace(out_dir, "complex_fft_1d", fft_1d, (ember.randn(4, 10), crandn(3, 12)),
          [(ember.randn(4, 10, dtype=ember.float64), crandn(3, 12, dtype=ember.complex128))])
    trace(out_dir, "complex_fft_nd", fft_nd, (ember.randn(2, 6, 5), crandn(2, 4, 6)),
          [(ember.randn(2, 6, 5, dtype=ember.float64), crandn(2, 4, 6, dtype=ember.complex128))])
    trace(out_dir, "complex_family", family,
          (crandn(3, 4), crandn(3, 4, dtype=ember.complex128), ember.randn(3, 4), ember.randn(3, 4),
           ember.randn(3, 4, 2)))
    trace(out_dir, "complex_spectrogram", spectrogram, (ember.randn(2, 64), ember.hann_window(16)))
    rot = ember.tensor([[0.0, -2.0, 0.5], [2.0, 0.0, 0.1], [0.3, 0.2, 1.0]])  # a complex pair
    trace(out_dir, "complex_eig", eig, (rot, ember.randn(2, 4, 4), crandn(3, 3)),
          [(ember.randn(5, 5, dtype=ember.float64), ember.randn(3, 2, 2, dtype=ember.float64),
            crandn(4, 4, dtype=ember.complex128))])
    ember.manual_seed(32)
    model = Filter().eval()
    ep = E.export(model, (ember.randn(3, 8),), dynamic_shapes=({0: E.Dim("batch", min=1, max=64)},))
    runs = [(model, (ember.randn(3, 8),)), (model, (ember.randn(6, 8),))]
    write(out_dir, "complex_filter_export", runs, lambda p: E.save(ep, p))
    from complex_kernel_programs import write_all  # the complex kernels' programs (this folder)

    write_all(out_dir, trace, crandn)
    with open(os.path.join(out_dir, "programs_complex.txt"), "w") as f:
        for name, runs in PROGRAMS:
            f.write(f"{name} {runs}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
