"""All differentiable ops, registered once in ``ops.registry`` (see its docstring).

``ember.ops.<ns>`` is also the namespace of the custom ops defined in ``<ns>`` through
``ember.library`` (``ember.ops.mylib.numpy_sin.default``), as ``torch.ops.<ns>`` is."""

from . import (
    activation,
    api,
    arith,
    aten_extras,
    attention,
    complex_ops,
    conv,
    extras,
    fft_ops,
    grid,
    indexing,
    linalg,
    linear_op,
    loss,
    nn_misc,
    normalization,
    numeric,
    pointwise,
    pooling,
    reduction,
    shape,
    sorting,
    sparse_ops,
    special_functions,
    statistics,
)
from .registry import OPS

# isort: off
from . import batching_rules  # vmap's batching rules: imported after the ops they batch
# isort: on


def __getattr__(name: str):
    """``ember.ops.<ns>``: a namespace of custom ops (``ember.library``), once one exists;
    ``ember.ops.profiler``: the profiler's range ops (``torch.ops.profiler``);
    ``ember.ops.aten``: PyTorch's ATen ops over the registry (``torch.ops.aten``)."""
    import sys

    if name == "profiler":  # a submodule, loaded on first use
        import importlib

        return importlib.import_module(f"{__name__}.profiler")
    if name == "aten":  # PyTorch's ATen ops over the registry, made on first use
        from ._aten import namespace as aten_namespace

        ns = aten_namespace()
        globals()["aten"] = ns
        return ns
    library = sys.modules.get("ember._library.ops")  # no namespace exists before it loads
    if library is not None and not name.startswith("_"):
        ns = library.namespace(name)
        if ns is not None:
            return ns
    raise AttributeError(f"module 'ember.ops' has no attribute '{name}'")
