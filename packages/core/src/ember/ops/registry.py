"""The one op registry: Tensor methods, ``ember.<op>`` functions, in-place variants, and
later the graph-mode tracer and the C++ op list all read ``OPS``.

An op module defines a function once and registers it::

    @register("exp", inplace=True)
    def exp(input): ...

``install()`` (run at import of ``ember``) attaches methods to ``Tensor`` and exports the
functions into the ``ember`` namespace.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["OpInfo", "OPS", "register", "register_method", "install"]


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


OPS: dict[str, OpInfo] = {}
#: extra Tensor methods that are not functions (``Tensor.view``, ``Tensor.add_``, dunders)
METHODS: dict[str, Callable] = {}


def register(name: str | None = None, *, function: bool = True, method: bool = True,
             inplace: bool | Callable = False, aliases: tuple = (), differentiable: bool = True,
             tags: tuple = ()):
    """Register ``fn`` as op ``name``. ``inplace=True`` derives ``Tensor.<name>_``."""

    def deco(fn):
        op_name = name or fn.__name__
        inplace_fn = None
        if inplace is True:
            from ._core import make_inplace

            inplace_fn = make_inplace(fn, op_name + "_")
        elif callable(inplace):
            inplace_fn = inplace
        OPS[op_name] = OpInfo(op_name, fn, function, method, inplace_fn, tuple(aliases),
                              differentiable, set(tags))
        return fn

    return deco


def register_method(name: str, fn: Callable) -> Callable:
    """A Tensor method that is not an ``ember.<name>`` function."""
    METHODS[name] = fn
    return fn


def install(namespace: dict, tensor_cls: type) -> None:
    """Export registered functions into ``namespace`` and attach Tensor methods."""
    for info in OPS.values():
        names = (info.name, *info.aliases)
        for n in names:
            if info.function:
                namespace[n] = info.fn
            if info.method:
                setattr(tensor_cls, n, info.fn)
            if info.inplace is not None:
                setattr(tensor_cls, n + "_", info.inplace)
                if info.function:
                    namespace.setdefault(n + "_", info.inplace)
    for n, fn in METHODS.items():
        setattr(tensor_cls, n, fn)
