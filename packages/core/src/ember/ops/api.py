"""``ember.ops.api``: the public API for writing ops.

Everything an op needs from ember-core, under names that are kept stable across releases:
``ember.nn``, ``ember.vision`` and ``ember.text`` (separately versioned distributions) write
their kernels with this module and the public ``ember`` API only, and so can you.

An op works on arrays of the tensor's array module (``numpy`` on the CPU, ``cupy`` on a GPU)
and wraps its result; when an input takes part in autograd it records a node whose backward
is written with Tensor ops (so that ``create_graph=True`` differentiates it again)::

    from ember.ops import api

    def _scale_backward(node, grad):
        (factor,) = node.ctx
        return (grad * factor,)

    ScaleBackward0 = api.node_class("ScaleBackward0", _scale_backward)

    def scale(x, factor: float):
        xp = api.array_module(x)            # numpy or cupy: never call np.* on x's array
        r = xp.multiply(api.array(x), factor)
        return api.result(r, x.device, ScaleBackward0, (x,), ctx=(factor,))

``defop`` writes the same op with its forward and backward side by side. A backward returns
one gradient (or None) per input given to ``result``; ``node.saved`` holds what ``saved=``
kept (tensors there have their versions checked at backward, as PyTorch does).
"""

from __future__ import annotations

from collections.abc import Callable

from .. import _native
from .._device import check_same_device, xp_of
from .._device import fused_kernel as _fused_kernel
from .._parallel import parallel_for
from .._tensor import Tensor, _make
from .._warn import user_stacklevel
from ..autograd.grad_mode import GRAD
from ..autograd.graph import Node, make_node_class, record, result
from ..utils._foreach_utils import _group_tensors_by_device_and_dtype
from ._inplace import make_inplace
from .linalg import gemm, gemm_column_block
from .registry import OPS, OpInfo, functional_kernels, register

__all__ = ["array_module", "array_module_of", "array", "wrap", "result", "needs_grad",
           "grad_enabled", "node_class", "record", "check_same_device", "make_inplace",
           "defop", "register", "fused_kernel", "functional_kernels", "OPS", "OpInfo", "Node",
           "rng", "dtype_from_numpy", "parse_to", "fused_op", "gemm", "gemm_column_block",
           "native_kernel", "native_arrays", "native_chunks", "native_address", "blas_sgemm",
           "parallel_for",
           "group_tensors_by_device_and_dtype", "user_stacklevel"]


def array_module(t: Tensor):
    """The array module (``numpy``, ``cupy``, a test device's) of ``t``'s device."""
    return xp_of(t)


def array_module_of(arr):
    """The array module of a bare array (``numpy`` for NumPy's, else its backend's)."""
    return xp_of(arr)


def fused_kernel(t: Tensor, name: str):
    """The fused kernel ``name`` of ``t``'s device backend, or None (the CPU; a backend
    without it). On a CUDA device, ``fused_kernel(p, "adam_step_")`` is CuPy's one-pass Adam
    update (``ember.cuda._kernels``); its arrays are the tensors' (``array(t)``)."""
    return _fused_kernel(t._device, name)


def native_kernel(name: str):
    """The fused float32 CPU kernel ``name`` of ember-core's ``_native/kernels.c`` (a ctypes
    function taking array addresses as integers, ``None`` for a null pointer), or None where
    the kernels cannot be used (no C compiler, ``EMBER_NATIVE=0``): keep a NumPy formulation
    for that case. Take it once per call of your op (the lookup reads the environment)."""
    return _native.kernel(name)


def native_ufunc_loop(uf, dtype):
    """``(function, data)`` of NumPy's own inner loop of ufunc ``uf`` for the NumPy ``dtype``
    (probed once to give the ufunc's bits), for a native kernel that runs it inside a fused
    pass, or None (keep the NumPy formulation). Take it once per call of your op."""
    return _native.ufunc_loop(uf, dtype)


def blas_sgemm():
    """``(address, ilp64)`` of ``cblas_sgemm`` in NumPy's OpenBLAS, for a native kernel that
    runs many small float32 products in one call (pass both to it: ``ilp64`` 1 where the
    BLAS's integers are 64-bit), or None where there is none to call (keep the NumPy loop).
    Use it with ``native_kernel``: None from either means the NumPy formulation."""
    return _native.blas_sgemm()


def native_arrays(*arrays) -> bool:
    """True when every array given (None skipped) is a C-contiguous float32 NumPy array of
    the first one's shape: what the in-place native kernels take."""
    return _native.native_arrays(*arrays)


def native_chunks(fn, n: int, addresses, *scalars) -> None:
    """``fn(*addresses_at_b, e - b, *scalars)`` over chunks ``[b, e)`` of ``n`` float32
    elements, over Ember's intra-op threads (None addresses stay None)."""
    _native.chunks(fn, n, addresses, *scalars)


def native_address(arr) -> int:
    """The address of a NumPy array's first element for a native kernel (``arr.ctypes.data``,
    about five times faster)."""
    return _native.address(arr)


def array(t: Tensor):
    """``t``'s array, shared (no copy): read it, or write it only in an in-place op."""
    return t._data


def wrap(arr, device) -> Tensor:
    """A tensor holding ``arr`` (an array of ``device``'s array module), outside the graph."""
    return _make(arr, device)


def grad_enabled() -> bool:
    """Whether this thread records graphs now (``ember.is_grad_enabled()``)."""
    return GRAD.enabled


def needs_grad(*tensors) -> bool:
    """Whether a result of ``tensors`` must be recorded: grad mode is on and one of them
    (``None`` entries are skipped) requires grad."""
    if not GRAD.enabled:
        return False
    for t in tensors:
        if t is not None and t.requires_grad:
            return True
    return False


def node_class(name: str, backward: Callable, n_out: int = 1) -> type:
    """A ``grad_fn`` class ``name`` (PyTorch's style: ``RoiAlignBackward0``) whose
    ``backward(node, grad)`` returns one gradient per input (``n_out`` > 1: the op has that
    many outputs and ``grad`` is a tuple, a None for each output that got no gradient)."""
    return make_node_class(name, backward, n_out)


def defop(name: str, forward: Callable, backward: Callable | None = None, *,
          node_name: str | None = None) -> Callable:
    """An op ``f(*tensors, **params)`` from an array ``forward`` and a Tensor ``backward``.

    ``forward(ctx, *arrays, **params) -> array`` runs on the tensors' arrays (all on one
    device; ``None`` stays ``None``) and may stash what the backward needs in the dict
    ``ctx``; ``backward(ctx, grad) -> tuple`` gets that dict and the output's gradient and
    returns one gradient per tensor argument. Without ``backward`` the op is not
    differentiable (its result never requires grad).
    """
    node = None
    if backward is not None:
        def _bw(n, grad, _backward=backward):
            out = _backward(n.ctx, grad)
            return out if isinstance(out, tuple) else (out,)

        node = make_node_class(node_name or _camel(name) + "Backward0", _bw)

    def op(*tensors, **params):
        present = [t for t in tensors if t is not None]
        if not present:
            raise TypeError(f"{name}() expects at least one Tensor argument")
        for t in present:
            if not isinstance(t, Tensor):
                raise TypeError(f"{name}(): expected Tensor arguments, got "
                                f"{type(t).__name__}")
        if len(present) > 1:
            check_same_device(*present)
        ctx: dict = {}
        arr = forward(ctx, *(None if t is None else t._data for t in tensors), **params)
        return result(arr, present[0]._device, node, tensors, (), ctx)

    op.__name__ = op.__qualname__ = name
    op._node = node
    return op


def fused_op(name: str, forward: Callable, backward: Callable, *,
             reference: Callable | None = None) -> Callable:
    """An op ``f(*tensors) -> tuple`` that is ONE node for autograd and for ``ember.compile``,
    run by two array kernels.

    ``forward(ctx, *arrays) -> tuple`` gets the tensors' arrays (None stays None) and returns
    the outputs' arrays (None for an absent output), fresh arrays that share no memory with
    its inputs; it may stash what the backward needs in the dict ``ctx`` (fresh per call).
    ``backward(ctx, grads) -> tuple`` gets the outputs' gradients (arrays, None where an output
    got none; it must not write them) and returns one gradient array (or None) per input.
    Eagerly a call records one autograd node; in a compiled function's capture it is one graph
    node whose replay calls the two kernels; ``ember.export`` and ``ember.jit`` record registry
    ops only, so there the call runs ``reference(*tensors)``, the same computation written
    with Tensor ops (which also serves ``create_graph=True``). Without ``reference`` those
    two raise."""
    from .._compile._fused import FusedOp

    return FusedOp(name, forward, backward, reference)


def rng(device, generator=None):
    """The random generator of the array module (``numpy.random.Generator`` on the CPU) that
    an op drawing for an output on ``device`` uses: ``generator``'s (an ``ember.Generator``
    of that device type) or the device's default one, which ``ember.manual_seed`` seeds."""
    from .._device import device as _device_cls
    from .._random import _rng

    dev = device if isinstance(device, _device_cls) else _device_cls(device)
    return _rng(generator, dev)


def dtype_from_numpy(np_dtype):
    """The ``ember.dtype`` of a NumPy dtype (``numpy.float32`` -> ``ember.float32``)."""
    from .. import _dtype

    return _dtype.from_numpy_dtype(np_dtype)


def parse_to(*args, **kwargs):
    """``Tensor.to``'s arguments as ``(device, dtype, copy)`` (None where not given), with
    its errors: ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)`` and the
    keywords ``device``, ``dtype``, ``copy``, ``non_blocking``, ``memory_format``."""
    from .._tensor import _parse_to

    return _parse_to(None, *args, **kwargs)


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


#: tensor lists split by the first list's (device, dtype), for ``ember._foreach_*`` callers:
#: what ``Optimizer._group_tensors_by_device_and_dtype`` (ember-nn) returns
group_tensors_by_device_and_dtype = _group_tensors_by_device_and_dtype
