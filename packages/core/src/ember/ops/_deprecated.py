"""PyTorch's deprecated overloads that put a scale before the tensors it scales.

PyTorch still binds the signatures of its ``tools/autograd/deprecated.yaml``, with a
warning: ``torch.add(x, 2, y)`` and ``x.add_(alpha, y)`` (``add``/``sub``),
``x.addcmul_(value, t1, t2)`` (``addcmul``/``addcdiv``), and ``torch.addmm(beta, x, alpha,
m1, m2)``, ``torch.addmm(beta, x, m1, m2)`` and their methods ``x.addmm(beta, alpha, m1, m2)``
(``addmm``, ``addmv``, ``addr``, ``baddbmm``, ``addbmm``). Optimizers written before PyTorch
1.5 (``exp_avg.mul_(beta1).add_(1 - beta1, grad)``: pytorch_ranger, torch-optimizer, many
papers' code) still call them.

Each of these ops takes one or two extra positional parameters after its modern ones
(``add(input, other, _deprecated=NO_ARG, *, alpha=1)``): a modern call never fills them, so
the common path costs one ``is`` test. A call that does is rebound here, warned about once
per process and overload (PyTorch warns once too), and runs as the modern call. The
parameters are hidden from the ops' signatures (:func:`hide`), as PyTorch's parser keeps its
deprecated signatures out of the docs. The warning names the function form of the overload;
PyTorch words it for the method form when a method was called (``add_(Number alpha, Tensor
other)``).
"""

from __future__ import annotations

import inspect
import numbers
import warnings

from .._tensor import Tensor
from .._warn import user_stacklevel

__all__ = ["NO_ARG", "alpha_first", "value_first", "beta_first", "hide"]


class _NoArg:
    """The default of a deprecated overload's extra parameter: no argument was given."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<no argument>"


NO_ARG = _NoArg()

_OUT = ", *, Tensor out = None"
_SCALES = "*, Number beta = 1, Number alpha = 1"
#: op -> (the deprecated signatures by the number of positional arguments, the modern one)
_FORMS = {
    **{op: ({3: f"(Tensor input, Number alpha, Tensor other{_OUT})"},
            "(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)")
       for op in ("add", "sub")},
    **{op: ({4: f"(Tensor input, Number value, Tensor tensor1, Tensor tensor2{_OUT})"},
            "(Tensor input, Tensor tensor1, Tensor tensor2, *, Number value = 1, Tensor out "
            "= None)") for op in ("addcmul", "addcdiv")},
    **{op: ({5: f"(Number beta, Tensor input, Number alpha, Tensor {a}, Tensor {b}{_OUT})",
             4: f"(Number beta, Tensor input, Tensor {a}, Tensor {b}{_OUT})"},
            f"(Tensor input, Tensor {a}, Tensor {b}, {_SCALES}, Tensor out = None)")
       for op, a, b in (("addmm", "mat1", "mat2"), ("addmv", "mat", "vec"),
                        ("addr", "vec1", "vec2"), ("baddbmm", "batch1", "batch2"),
                        ("addbmm", "batch1", "batch2"))},
}

#: (op, number of positional arguments) already warned about
_WARNED: set = set()


def _warn(op: str, nargs: int) -> None:
    key = (op, nargs)
    if key in _WARNED:
        return
    _WARNED.add(key)
    old, new = _FORMS[op]
    warnings.warn(f"This overload of {op} is deprecated:\n\t{op}{old[nargs]}\nConsider using "
                  f"one of the following signatures instead:\n\t{op}{new}", UserWarning,
                  stacklevel=user_stacklevel())


def _scalar(op: str, value, args: tuple):
    """``value`` where the overload takes a Number: PyTorch's parser refuses a tensor (or
    anything else) there, naming the modern signature."""
    if isinstance(value, numbers.Number) and not isinstance(value, Tensor):
        return value
    from ._signatures import SIGNATURES, parser_error

    if op in SIGNATURES:
        raise parser_error(op, args)
    raise TypeError(f"{op}() received an invalid combination of arguments: a deprecated "
                    f"overload takes a Number where it got {type(value).__name__}; use "
                    f"{op}{_FORMS[op][1]}")


def alpha_first(op: str, input, alpha, other, alpha_kw) -> tuple:
    """``add(input, alpha, other)`` / ``sub``: ``(other, alpha)`` of the modern call."""
    if alpha_kw is not None and not (alpha_kw.__class__ is int and alpha_kw == 1):
        raise TypeError(f"{op}() got multiple values for argument 'alpha'")
    _scalar(op, alpha, (input, alpha, other))
    _warn(op, 3)
    return other, alpha


def value_first(op: str, input, value, tensor1, tensor2, value_kw) -> tuple:
    """``addcmul(input, value, tensor1, tensor2)`` / ``addcdiv``: ``(tensor1, tensor2,
    value)`` of the modern call."""
    if not (value_kw.__class__ is int and value_kw == 1):
        raise TypeError(f"{op}() got multiple values for argument 'value'")
    _scalar(op, value, (input, value, tensor1, tensor2))
    _warn(op, 4)
    return tensor1, tensor2, value


def beta_first(op: str, a0, a1, a2, d1, d2, beta_kw, alpha_kw) -> tuple:
    """The ``addmm`` family's deprecated calls as the kernel received them (its three
    parameters, then the two extra ones, ``NO_ARG`` where not given): the function forms
    ``(beta, input, alpha, m1, m2)`` / ``(beta, input, m1, m2)`` and the method forms
    ``self.op(beta, alpha, m1, m2)`` / ``self.op(beta, m1, m2)`` (``self`` first). Returns
    ``(input, m1, m2, beta, alpha)`` of the modern call."""
    if d2 is NO_ARG and _is_dtype(d1):  # PyTorch's op(input, m1, m2, out_dtype): GPU only
        device = getattr(getattr(a0, "device", None), "type", "cpu").upper()
        raise NotImplementedError(f"Could not run 'aten::{op}.dtype' with arguments from the "
                                  f"'{device}' backend.")
    for kw, name in ((beta_kw, "beta"), (alpha_kw, "alpha")):
        if not (kw.__class__ is int and kw == 1):
            raise TypeError(f"{op}() got multiple values for argument '{name}'")
    given = (a0, a1, a2, d1) if d2 is NO_ARG else (a0, a1, a2, d1, d2)
    if isinstance(a0, Tensor):  # the method: self first, then the scales
        input, beta, rest = a0, a1, given[2:]
    else:
        beta, input, rest = a0, a1, given[2:]
    if len(rest) == 3:
        alpha, m1, m2 = rest
        _scalar(op, alpha, given)
    else:
        alpha, (m1, m2) = 1, rest
    _scalar(op, beta, given)
    _warn(op, len(given))
    return input, m1, m2, beta, alpha


def _is_dtype(x) -> bool:
    from .._dtype import dtype

    return isinstance(x, dtype)


def hide(*names: str) -> None:
    """Leave the deprecated overloads' extra parameters (named ``_deprecated...``) out of
    the signatures of the registered ops ``names`` (kernel, front and method), as PyTorch
    documents only the modern one. Run after registration: a front mirrors the kernel's
    parameters as ``inspect.signature`` reports them."""
    from .registry import OPS

    for name in names:
        info = OPS[name]
        for fn in {id(f): f for f in (info.fn, info.kernel, info.method_fn) if f}.values():
            sig = inspect.signature(fn)
            params = [p for p in sig.parameters.values()
                      if not p.name.startswith("_deprecated")]
            fn.__signature__ = sig.replace(parameters=params)
        info.__dict__.pop("_signature", None)
