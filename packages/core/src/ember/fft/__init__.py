"""``ember.fft``: PyTorch's ``torch.fft`` over the array module's FFT (``numpy.fft`` on the
CPU, ``cupy.fft`` on a GPU).

Every transform takes ``n`` (1-D) or ``s`` (n-D) to zero-pad or trim the signal, ``dim`` and
``norm`` (``"backward"``, the default: no scaling on the forward transforms and ``1/n`` on
the inverse ones; ``"ortho"``: ``1/sqrt(n)`` both ways; ``"forward"``: ``1/n`` on the
forward transforms) exactly as ``torch.fft`` defines them, and is differentiable (complex
gradients under PyTorch's convention). The functions are ops of the registry, defined in
``ember.ops.fft_ops`` under their ATen names (``fft_fft``, ``fft_rfft``, ...); this module
names them as ``torch.fft`` does.
"""

from __future__ import annotations

from ..ops.registry import OPS as _OPS

# the registry's public functions: PyTorch's out= and NumPy keyword names (axis=, x=)
fft = _OPS["fft_fft"].fn
fft2 = _OPS["fft_fft2"].fn
fftfreq = _OPS["fft_fftfreq"].fn
fftn = _OPS["fft_fftn"].fn
fftshift = _OPS["fft_fftshift"].fn
hfft = _OPS["fft_hfft"].fn
hfft2 = _OPS["fft_hfft2"].fn
hfftn = _OPS["fft_hfftn"].fn
ifft = _OPS["fft_ifft"].fn
ifft2 = _OPS["fft_ifft2"].fn
ifftn = _OPS["fft_ifftn"].fn
ifftshift = _OPS["fft_ifftshift"].fn
ihfft = _OPS["fft_ihfft"].fn
ihfft2 = _OPS["fft_ihfft2"].fn
ihfftn = _OPS["fft_ihfftn"].fn
irfft = _OPS["fft_irfft"].fn
irfft2 = _OPS["fft_irfft2"].fn
irfftn = _OPS["fft_irfftn"].fn
rfft = _OPS["fft_rfft"].fn
rfft2 = _OPS["fft_rfft2"].fn
rfftfreq = _OPS["fft_rfftfreq"].fn
rfftn = _OPS["fft_rfftn"].fn

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]

# __torch_function__ modes (vmap, capture) and overriding subclasses see these functions too
import sys as _sys

from .. import overrides as _overrides

_overrides.register_namespace(_sys.modules[__name__])
