"""Small ops of ``ops/extras.py``: detach, fill, zero_ (the rest of that module has entries
in the families their ops belong to)."""

from __future__ import annotations

import numpy as np

from . import ALL, FLOAT, SampleInput, define, make


def _shapes(device, dtype, requires_grad=False, **kw):
    for shape in ((), (4,), (2, 3), (0, 3)):
        yield make(shape, dtype, device, requires_grad=requires_grad, **kw), f"shape{shape}"
    yield make((3, 4), dtype, device, noncontiguous=True, requires_grad=requires_grad), \
        "noncontiguous"


def _detach_samples(device, dtype, requires_grad=False):
    for t, name in _shapes(device, dtype, requires_grad):
        yield SampleInput(t, name=name)


def _fill_samples(device, dtype, requires_grad=False):
    value = True if dtype == "bool" else (3 if np.dtype(dtype).kind in "iu" else 1.5)
    for t, name in _shapes(device, dtype, requires_grad):
        yield SampleInput(t, value, name=name + " number")
    if dtype in FLOAT:
        # a 0-d tensor value: the gradient flows to it (the input's gradient is zero)
        yield SampleInput(make((2, 3), dtype, device, requires_grad=requires_grad),
                          make((), dtype, device, requires_grad=requires_grad),
                          name="0-d tensor value")


def _zero_samples(device, dtype, requires_grad=False):
    for t, name in _shapes(device, dtype):  # in place: never a leaf that requires grad
        yield SampleInput(t, name=name)


define("detach", _detach_samples, dtypes=ALL, ref=lambda a: a)
define("fill", _fill_samples, dtypes=ALL,
       ref=lambda a, v: np.full_like(a, v))
define("zero_", _zero_samples, dtypes=ALL, ref=lambda a: np.zeros_like(a))
