"""PyTorch's ``repr``/``str`` of tensors, reproduced on host NumPy arrays.

The rules are PyTorch's (``torch/_tensor_str.py``): one width for every element, floats
printed as ``1.`` when all are integral, with ``precision`` decimals otherwise, scientific
notation when the nonzero finite magnitudes span more than 1000x or leave [1e-4, 1e8];
summarised with ``...`` above ``threshold`` elements; suffixes for the device, a dtype other
than the default float/int64/bool, ``requires_grad`` and ``grad_fn``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as np

from . import _dtype

__all__ = ["set_printoptions", "get_printoptions", "printoptions", "tensor_repr"]


@dataclasses.dataclass
class _PrinterOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrinterOptions()

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:
    """Set options for printing tensors (as ``torch.set_printoptions``).

    Args:
        precision: digits after the decimal point of floats (default 4).
        threshold: element count above which the repr is summarised (default 1000).
        edgeitems: items shown at each end of a summarised dimension (default 3).
        linewidth: characters per line before wrapping (default 80).
        profile: ``"default"``, ``"short"`` or ``"full"``; the options above override it.
        sci_mode: force scientific notation on (True) or off (False); None decides per tensor.
    """
    # an unknown profile changes nothing, as in PyTorch
    for key, value in _PROFILES.get(profile, {}).items():
        setattr(PRINT_OPTS, key, value)
    for key, value in (("precision", precision), ("threshold", threshold),
                       ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTS, key, value)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options, as keyword arguments for ``set_printoptions``."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Temporarily change the print options (arguments as ``set_printoptions``)."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    """One width and one notation for every element of a (summarised) array."""

    def __init__(self, arr: np.ndarray):
        self.floating = arr.dtype in _dtype.FLOATING_NP
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = arr.reshape(-1)
        if not self.floating:
            if flat.size:
                self.max_width = max(1, max(map(len, map(str, flat.tolist()))))
            return
        with np.errstate(invalid="ignore"):
            values = flat[np.isfinite(flat) & (flat != 0)]
        if values.size == 0:
            return
        mags = np.abs(values).astype(np.float64)
        lo, hi = float(mags.min()), float(mags.max())
        self.int_mode = bool(np.all(values == np.ceil(values)))
        p = PRINT_OPTS.precision
        self.sci_mode = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4) \
            if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode
        pylist = values.tolist()
        if self.sci_mode:
            self.max_width = max(len(f"{v:.{p}e}") for v in pylist)
        elif self.int_mode:
            self.max_width = max(len(f"{v:.0f}") + 1 for v in pylist)
        else:
            self.max_width = max(len(f"{v:.{p}f}") for v in pylist)

    def format(self, value) -> str:
        if self.floating:
            p = PRINT_OPTS.precision
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


class _ComplexFormatter:
    """PyTorch's complex printing: the real and the imaginary parts each get their own
    formatter (width, notation), joined as ``1.+2.j`` / ``1.-2.j``."""

    def __init__(self, arr: np.ndarray):
        self.real = _Formatter(_dtype.real_part(arr))  # complex32's parts too
        self.imag = _Formatter(_dtype.imag_part(arr))
        self.max_width = self.real.max_width + self.imag.max_width + 1

    def format(self, value) -> str:
        value = complex(value)
        real_str = self.real.format(value.real)
        imag_str = (self.imag.format(value.imag) + "j").lstrip()
        if imag_str[0] in "+-":  # negative numbers, -0.0
            return real_str + imag_str
        return real_str + "+" + imag_str


def _formatter(arr: np.ndarray):
    return _ComplexFormatter(arr) if arr.dtype in _dtype.COMPLEX_NP else _Formatter(arr)


def _vector_str(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    element_length = fmt.max_width + 2
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    edge = PRINT_OPTS.edgeitems
    if summarize and not edge:
        data = ["..."]
    elif summarize and arr.shape[0] > 2 * edge:
        data = ([fmt.format(v) for v in arr[:edge].tolist()] + [" ..."]
                + [fmt.format(v) for v in arr[-edge:].tolist()])
    else:
        data = [fmt.format(v) for v in arr.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _str_with_formatter(arr: np.ndarray, indent: int, summarize: bool,
                        fmt: _Formatter) -> str:
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmt)
    edge = PRINT_OPTS.edgeitems
    n = arr.shape[0]
    if summarize and n > 2 * edge:
        slices = ([_str_with_formatter(arr[i], indent + 1, summarize, fmt) for i in range(edge)]
                  + ["..."]
                  + [_str_with_formatter(arr[i], indent + 1, summarize, fmt)
                     for i in range(n - edge, n)])
    else:
        slices = [_str_with_formatter(arr[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _summarized(arr: np.ndarray) -> np.ndarray:
    """The elements a summarised repr shows (the formatter looks at these only)."""
    edge = PRINT_OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1:
        if arr.shape[0] > 2 * edge:
            return np.concatenate((arr[:edge], arr[-edge:]))
        return arr
    if not edge:
        return arr[(slice(0, 0),) * arr.ndim]
    n = arr.shape[0]
    rows = [*range(edge), *range(n - edge, n)] if n > 2 * edge else range(n)
    return np.stack([_summarized(arr[i]) for i in rows])


def tensor_str(arr: np.ndarray, indent: int) -> str:
    """The bracketed body of a tensor's repr (``[1, 2, 3]``)."""
    if arr.size == 0:
        return "[]"
    summarize = arr.size > PRINT_OPTS.threshold
    fmt = _formatter(_summarized(arr) if summarize else arr)
    return _str_with_formatter(arr, indent, summarize, fmt)


def _add_suffixes(body: str, suffixes: list, indent: int) -> str:
    parts = [body]
    last_line_len = len(body) - body.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t, *, tensor_contents: str | None = None) -> str:
    """``repr(t)`` exactly as PyTorch writes it, with ``ember.`` for ``torch.``."""
    from ._tensor import Tensor

    cls = type(t)
    # nn.Parameter prints as a plain tensor (its own repr adds "Parameter containing:")
    plain = cls is Tensor or cls.__name__ == "Parameter"
    prefix = "tensor(" if plain else f"{cls.__name__}("
    indent = len(prefix)
    suffixes = []
    dev = t._device
    if dev.type != "cpu":
        suffixes.append(f"device='{dev}'")
    if dev.type == "meta":  # no data: its size, and its dtype unless the default float
        data = t._data
        suffixes.append(f"size={tuple(data.shape)}")
        dt = _dtype.FROM_NP[data.dtype]
        if dt is not _dtype.get_default_dtype():
            suffixes.append(f"dtype={dt}")
        if t.grad_fn is not None:
            suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
        elif t.requires_grad:
            suffixes.append("requires_grad=True")
        return _add_suffixes(prefix + "...", suffixes, indent)
    arr = t._host()
    dt = _dtype.FROM_NP[arr.dtype]
    default = _dtype.get_default_dtype()
    if arr.size == 0:
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if dt is not default:
            suffixes.append(f"dtype={dt}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(arr.shape)}")
        if dt not in (default, default.to_complex(), _dtype.int64, _dtype.bool):
            suffixes.append(f"dtype={dt}")
        body = tensor_str(arr, indent)
    if tensor_contents is not None:
        body = tensor_contents
    tangent = _tangent(t)
    gf = t.grad_fn
    if gf is not None and (tangent is None or gf._fw_real):
        suffixes.append(f"grad_fn=<{gf.name()}>")
    elif t.requires_grad and tangent is None:
        suffixes.append("requires_grad=True")
    if tangent is not None:
        suffixes.append(f"tangent={tangent!r}")
    return _add_suffixes(prefix + body, suffixes, indent)


def _tangent(t):
    """``t``'s forward-AD tangent at the active dual level, or None. A dual tensor requires
    grad only to be recorded (``forward_ad``): its ``grad_fn`` is shown, as PyTorch shows it,
    only when the graph reaches a tensor that really requires grad."""
    gf = t.grad_fn
    if gf is None or gf._fw is None and t._base is None:
        return None
    import sys

    fw = sys.modules.get("ember.autograd.forward_ad")
    if fw is None or fw._LEVEL[0] is None:
        return None
    return fw._tangent_of(t)


def _tensor_str(self, indent: int) -> str:
    """``torch._tensor_str._tensor_str``: the bracketed body of a tensor's repr, its rows
    indented by ``indent`` (torch_geometric prints meshes with it)."""
    if self._device.type == "meta":
        return "..."
    return tensor_str(self._host(), indent)


def _str(self, *, tensor_contents: str | None = None) -> str:
    """``torch._tensor_str._str``: the whole ``repr`` of a tensor."""
    return tensor_repr(self, tensor_contents=tensor_contents)
