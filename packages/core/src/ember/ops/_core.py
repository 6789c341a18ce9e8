"""A re-export of the op machinery under its old home, for the modules that have not moved
yet; new code imports from ``_promotion``, ``_factories``, ``_inplace``, ``_casts`` and
``ember._device``. (Removed once ember.linalg and the last ops import from there.)"""

from __future__ import annotations

from .. import _dtype
from .._device import _device_error, check_same_device, xp_of  # noqa: F401
from ._casts import as_tensor_like, cast_to  # noqa: F401
from ._factories import _fit, binary_op, sum_to_size, unary_op  # noqa: F401
from ._inplace import (  # noqa: F401
    accepts_out,
    check_inplace_autograd,
    make_inplace,
    rebase_history,
    write_inplace,
    write_out,
)
from ._promotion import broadcast_array, coerce, normalize_dims, wrap_dim  # noqa: F401
from ._promotion import broadcast_shape as _broadcast_shape  # noqa: F401

_pretty = _dtype.scalar_type_name
xp_of_array = xp_of
