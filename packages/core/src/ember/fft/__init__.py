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

from ..ops.fft_ops import fft_fft as fft
from ..ops.fft_ops import fft_fft2 as fft2
from ..ops.fft_ops import fft_fftfreq as fftfreq
from ..ops.fft_ops import fft_fftn as fftn
from ..ops.fft_ops import fft_fftshift as fftshift
from ..ops.fft_ops import fft_hfft as hfft
from ..ops.fft_ops import fft_hfft2 as hfft2
from ..ops.fft_ops import fft_hfftn as hfftn
from ..ops.fft_ops import fft_ifft as ifft
from ..ops.fft_ops import fft_ifft2 as ifft2
from ..ops.fft_ops import fft_ifftn as ifftn
from ..ops.fft_ops import fft_ifftshift as ifftshift
from ..ops.fft_ops import fft_ihfft as ihfft
from ..ops.fft_ops import fft_ihfft2 as ihfft2
from ..ops.fft_ops import fft_ihfftn as ihfftn
from ..ops.fft_ops import fft_irfft as irfft
from ..ops.fft_ops import fft_irfft2 as irfft2
from ..ops.fft_ops import fft_irfftn as irfftn
from ..ops.fft_ops import fft_rfft as rfft
from ..ops.fft_ops import fft_rfft2 as rfft2
from ..ops.fft_ops import fft_rfftfreq as rfftfreq
from ..ops.fft_ops import fft_rfftn as rfftn

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]

# __torch_function__ modes (vmap, capture) and overriding subclasses see these functions too
import sys as _sys

from .. import overrides as _overrides

_overrides.register_namespace(_sys.modules[__name__])
