"""Tuple helpers of ``torch.nn.modules.utils`` (``_single``, ``_pair``, ``_triple``...) and
``consume_prefix_in_state_dict_if_present``; also the private helpers the layers share to
allocate and initialize their parameters and to write their ``extra_repr``."""

from __future__ import annotations

import collections.abc
import math
from itertools import repeat
from typing import Any

import ember

from .. import init
from ..parameter import Parameter

__all__ = ["_ntuple", "_single", "_pair", "_triple", "_quadruple", "_reverse_repeat_tuple",
           "_list_with_default", "consume_prefix_in_state_dict_if_present"]


def _ntuple(n: int, name: str = "parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):  # a str too, as in PyTorch
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n: int) -> tuple:
    """``(1, 2)`` and ``n=2`` give ``(2, 2, 1, 1)``: the padding order ``F.pad`` takes."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults: list[int]):
    """``out_size`` with its ``None`` entries taken from the trailing ``defaults`` (an int
    passes through), as adaptive pooling and ``MaxUnpool`` fill in their output sizes."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d
            for v, d in zip(out_size, defaults[-len(out_size):], strict=False)]


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    """Strip ``prefix`` from the keys of ``state_dict`` in place, where they have it (and from
    its ``_metadata``): a ``DataParallel`` model's checkpoint (keys ``module.*``) then loads
    into the bare model after ``consume_prefix_in_state_dict_if_present(sd, "module.")``."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            # '' is the wrapper's own entry (kept); 'module' and 'module.*' are the model's
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                metadata[key[len(prefix):]] = metadata.pop(key)


# -- shared by the layers ----------------------------------------------------------------------

def _parameter_or_none(present: bool, shape, device=None, dtype=None) -> Parameter | None:
    """A ``Parameter`` of ``shape`` (values not yet initialized) when ``present``, else
    ``None``: what ``register_parameter`` takes for an optional weight or bias."""
    return Parameter(ember.empty(shape, device=device, dtype=dtype)) if present else None


def _reset_kaiming_uniform(weight, bias, *, keep_bias_without_fan_in: bool = False) -> None:
    """PyTorch's ``Linear``/``ConvNd`` init: Kaiming-uniform ``weight`` (``a=sqrt(5)``) and
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` ``bias``. With no fan-in, ``Linear`` zeroes the
    bias and ``ConvNd`` (``keep_bias_without_fan_in``) leaves it as it is."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        if fan_in == 0 and keep_bias_without_fan_in:
            return
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)


def _options_repr(module, head: str, options) -> str:
    """An ``extra_repr`` that shows an option only where it is not the default: ``head``
    followed by the text of each ``(text, shown)`` of ``options`` that is shown, formatted
    with the module's attributes (``"{in_channels}"`` gives ``module.in_channels``)."""
    return (head + "".join(text for text, shown in options if shown)).format(**module.__dict__)
