"""The one op registry: Tensor methods, ``ember.<op>`` functions, in-place variants, and
later the graph-mode tracer and the C++ op list all read ``OPS``.

An op module defines a function once and registers it::

    @register("exp", inplace=True)
    def exp(input): ...

``install()`` (run at import of ``ember``) attaches methods to ``Tensor`` and exports the
functions into the ``ember`` namespace.

``varargs=True`` marks an op whose int-list parameter (the one after ``input``) its Tensor
method also takes as varargs, PyTorch's rule for a method whose only positional parameter is
an int list: ``t.flip(0, 2)`` is ``t.flip((0, 2))`` and ``torch.flip(t, (0, 2))``.
"""

from __future__ import annotations

import functools
import inspect
import operator
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["OpInfo", "OPS", "register", "register_method", "install", "varargs_method"]


@dataclass
class OpInfo:
    name: str
    fn: Callable
    function: bool = True          # exported as ``ember.<name>``
    method: bool = True            # attached as ``Tensor.<name>``
    inplace: Callable | None = None  # ``Tensor.<name>_`` if any
    aliases: tuple = ()
    differentiable: bool = True
    tags: set = field(default_factory=set)
    varargs: bool = False          # ``Tensor.<name>(*ints)`` packs them into the int list


OPS: dict[str, OpInfo] = {}
#: extra Tensor methods that are not functions (``Tensor.view``, ``Tensor.add_``, dunders)
METHODS: dict[str, Callable] = {}


def register(name: str | None = None, *, function: bool = True, method: bool = True,
             inplace: bool | Callable = False, aliases: tuple = (), differentiable: bool = True,
             tags: tuple = (), varargs: bool = False):
    """Register ``fn`` as op ``name``. ``inplace=True`` derives ``Tensor.<name>_``;
    ``varargs=True`` lets the method take its int list as varargs (see the module doc)."""

    def deco(fn):
        op_name = name or fn.__name__
        inplace_fn = None
        if inplace is True:
            from ._core import make_inplace

            inplace_fn = make_inplace(fn, op_name + "_")
        elif callable(inplace):
            inplace_fn = inplace
        OPS[op_name] = OpInfo(op_name, fn, function, method, inplace_fn, tuple(aliases),
                              differentiable, set(tags), varargs)
        return fn

    return deco


def register_method(name: str, fn: Callable, *, varargs: bool = False) -> Callable:
    """A Tensor method that is not an ``ember.<name>`` function (``varargs`` as in
    ``register``)."""
    METHODS[name] = varargs_method(fn, name) if varargs else fn
    return fn


def varargs_method(fn: Callable, name: str) -> Callable:
    """``fn(self, ints, ...)`` as a method that also takes the int list as varargs.

    One positional argument passes through as it is (an int or a sequence, as PyTorch
    accepts both); several are the int list; none leaves the parameter to its keyword or
    default, and else is the empty list (PyTorch raises there, but ``t.reshape(*shape)``
    with an empty ``shape`` is common in ember's own ops). Views are on every backward's
    path: the common calls take the shortest way.
    """
    param = list(inspect.signature(fn).parameters.values())[1]
    required = param.default is inspect.Parameter.empty
    pname = param.name

    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        if len(args) == 1:
            return fn(self, args[0], **kwargs) if kwargs else fn(self, args[0])
        if not args and (pname in kwargs or not required):
            return fn(self, **kwargs)
        for a in args:
            if a.__class__ is not int:
                _check_ints(args, name, pname)
                break
        return fn(self, args, **kwargs) if kwargs else fn(self, args)

    return method


def _check_ints(args: tuple, name: str, pname: str) -> None:
    """PyTorch's error when varargs hold something other than integers."""
    for i, a in enumerate(args):
        try:
            operator.index(a)
        except TypeError:
            if i == 0:  # not the varargs form: a sequence and more arguments
                raise TypeError(f"{name}() takes 1 positional argument but {len(args)} were "
                                "given") from None
            raise TypeError(f"{name}(): argument '{pname}' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{type(a).__name__}\"") from None


def install(namespace: dict, tensor_cls: type) -> None:
    """Export registered functions into ``namespace`` and attach Tensor methods."""
    for info in OPS.values():
        names = (info.name, *info.aliases)
        method = varargs_method(info.fn, info.name) if info.varargs and info.method else info.fn
        for n in names:
            if info.function:
                namespace[n] = info.fn
            if info.method:
                setattr(tensor_cls, n, method)
            if info.inplace is not None:
                setattr(tensor_cls, n + "_", info.inplace)
                if info.function:
                    namespace.setdefault(n + "_", info.inplace)
    for n, fn in METHODS.items():
        setattr(tensor_cls, n, fn)
