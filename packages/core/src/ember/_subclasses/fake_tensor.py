"""``ember._subclasses.fake_tensor``: ``FakeTensorMode`` and ``FakeTensor``, PyTorch's tensors
with a shape, dtype and device but no data (``torch._subclasses.fake_tensor``).

::

    with FakeTensorMode() as mode:
        model = Net()                      # parameters are FakeTensors: nothing allocated
        out = model(torch.randn(64, 3, 224, 224))
    out.shape, out.device                  # what the real run would give

    fake = mode.from_tensor(real)          # a real tensor's metadata as a FakeTensor

A ``FakeTensor`` is a wrapper subclass (``Tensor._make_wrapper_subclass``) over a tensor on
the ``meta`` device (``ember._meta``: shapes and dtypes without values), reporting the device
it stands for. ``FakeTensorMode`` is a ``TorchDispatchMode`` (``ember.utils._python_dispatch``):
inside it, factories make FakeTensors and every op on FakeTensors runs on their meta tensors,
its results wrapped again. An op on FakeTensors outside the mode enters their mode for the
call, as PyTorch's do. As in PyTorch: a real tensor given to an op inside the mode is an
error unless the mode was made with ``allow_non_fake_inputs=True`` (then it is faked first);
``item()`` and the ops whose output shape depends on the values raise
``DataDependentOutputException`` / ``DynamicOutputShapeException``; FakeTensors of two modes
do not mix.

Where Ember differs: shapes are static (no ``ShapeEnv``: ``shape_env`` is refused); autograd
does not record through FakeTensors (forward shape and dtype propagation only: results
report ``requires_grad`` as PyTorch's, without a ``grad_fn``); the recurrent layers
(``nn.LSTM``/``GRU``/``RNN``) run their own kernels rather than one ATen op, so on
FakeTensors they raise (the placeholder guard of ``_make_wrapper_subclass``); a FakeTensor
standing for a CUDA device needs that device's backend only when an op would move data to it
(``.to("cuda")``); strides follow the meta device's (contiguous for results, as documented in
``ember._meta``).
"""

from __future__ import annotations

import contextlib

from .. import _device as _devmod
from .._tensor import Tensor
from ..overrides import _disabled_torch_function_impl
from ..utils._python_dispatch import TorchDispatchMode
from ..utils._pytree import tree_flatten, tree_map

__all__ = ["FakeTensor", "FakeTensorMode", "DataDependentOutputException",
           "DynamicOutputShapeException", "UnsupportedFakeTensorException",
           "unset_fake_temporarily", "is_fake", "maybe_get_fake_mode"]

_META = _devmod.device("meta")


class DataDependentOutputException(RuntimeError):
    """An op needs a tensor's values (``item()``, ``_local_scalar_dense``)."""

    def __init__(self, func):
        super().__init__(func)
        self.func = func


class DynamicOutputShapeException(RuntimeError):
    """An op's output shape depends on its input's values (``nonzero``, ``unique``)."""

    def __init__(self, func):
        super().__init__(func)
        self.func = func


class UnsupportedFakeTensorException(RuntimeError):
    """FakeTensors cannot run this (PyTorch's name)."""


class FakeTensor(Tensor):
    """A tensor with metadata and no data, made by a :class:`FakeTensorMode`."""

    fake_mode: FakeTensorMode
    fake_device: _devmod.device
    constant = None

    @staticmethod
    def __new__(cls, fake_mode, elem, device, strides=None):
        t = Tensor._make_wrapper_subclass(
            cls, elem.shape, strides=elem.stride() if strides is None else strides,
            dtype=elem.dtype, device=device, requires_grad=elem.requires_grad)
        t.fake_mode = fake_mode
        t.fake_device = t._device
        t._fake_meta = elem
        return t

    def __init__(self, *args, **kwargs):
        pass

    __torch_function__ = _disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        # an op on FakeTensors outside their mode: run it in the mode (PyTorch's FakeTensor
        # does the same)
        modes = {id(t.fake_mode): t.fake_mode for t in _fakes((args, kwargs or {}))}
        if len(modes) != 1:
            raise AssertionError("Mixing fake modes NYI")
        (mode,) = modes.values()
        with mode:
            return func(*args, **(kwargs or {}))

    def __repr__(self) -> str:
        from .._dtype import get_default_dtype

        parts = ["..."]
        if self.fake_device.type != "cpu":
            parts.append(f"device='{self.fake_device}'")
        parts.append(f"size={tuple(self.shape)}")
        if self.dtype != get_default_dtype():
            parts.append(f"dtype={self.dtype}")
        if self.requires_grad:
            parts.append("requires_grad=True")
        return f"FakeTensor({', '.join(parts)})"


def _fakes(tree):
    leaves, _ = tree_flatten(tree)
    return [x for x in leaves if isinstance(x, FakeTensor)]


def is_fake(x) -> bool:
    """Whether ``x`` is a FakeTensor."""
    return isinstance(x, FakeTensor)


def maybe_get_fake_mode(t):
    """The fake mode of FakeTensor ``t``, else None."""
    return t.fake_mode if isinstance(t, FakeTensor) else None


@contextlib.contextmanager
def unset_fake_temporarily():
    """Inside the block, the innermost FakeTensorMode is off (real tensors are made)."""
    from ..utils import _python_dispatch as pd

    stack = pd._get_current_dispatch_mode_stack()
    mode = next((m for m in reversed(stack) if isinstance(m, FakeTensorMode)), None)
    if mode is None:
        yield None
        return
    popped = []
    while pd._STATE.stack and pd._STATE.stack[-1] is not mode:
        popped.append(pd._pop_mode())
    pd._pop_mode()
    try:
        yield mode
    finally:
        pd._push_mode(mode)
        for m in reversed(popped):
            pd._push_mode(m)


#: ATen ops whose output shape depends on the values
_DYNAMIC = frozenset(("nonzero", "unique", "_unique", "_unique2", "unique_consecutive",
                      "unique_dim", "masked_select", "bincount", "repeat_interleave",
                      "histc", "argwhere", "nonzero_static"))


class FakeTensorMode(TorchDispatchMode):
    """Inside it, factories make FakeTensors and ops on them run on metadata alone."""

    def __init__(self, *, allow_fallback_kernels=True, allow_non_fake_inputs=False,
                 shape_env=None, static_shapes=None, export=False):
        super().__init__()
        if shape_env is not None:
            raise NotImplementedError("FakeTensorMode(shape_env=...): Ember's fake tensors "
                                      "have static shapes (no ShapeEnv)")
        self.allow_fallback_kernels = allow_fallback_kernels
        self.allow_non_fake_inputs = allow_non_fake_inputs
        self.shape_env = None
        self.static_shapes = True if static_shapes is None else static_shapes
        self.export = export

    def from_tensor(self, tensor, *, static_shapes=None, source=None, symbolic_context=None,
                    trace=True):
        """``tensor``'s shape, strides, dtype, device and ``requires_grad`` as a FakeTensor
        of this mode (a FakeTensor of this mode is returned as it is)."""
        if isinstance(tensor, FakeTensor):
            if tensor.fake_mode is not self:
                raise AssertionError("Mixing fake modes NYI")
            return tensor
        if not isinstance(tensor, Tensor):
            raise TypeError(f"from_tensor(): expected a Tensor, got {type(tensor).__name__}")
        meta = _to_meta(tensor)
        if tensor.requires_grad and tensor.is_leaf:
            meta.requires_grad_(True)
        return FakeTensor(self, meta, tensor.device, tensor.stride())

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = func._schema.name.partition("::")[2] if hasattr(func, "_schema") else str(func)
        if name == "_local_scalar_dense":
            raise DataDependentOutputException(func)
        if name in _DYNAMIC:
            raise DynamicOutputShapeException(func)
        if name in ("lift_fresh", "lift_fresh_copy"):  # ``torch.tensor(data)``: a constant
            return self.from_tensor(args[0])
        leaves, _ = tree_flatten((args, kwargs))
        devices = []
        for x in leaves:
            if isinstance(x, Tensor) and not isinstance(x, FakeTensor) \
                    and x.device.type != "meta" and x.dim() != 0 \
                    and not self.allow_non_fake_inputs:
                raise AssertionError(  # (PyTorch's type and words)
                    f"Please convert all Tensors to FakeTensors first or instantiate "
                    f"FakeTensorMode with 'allow_non_fake_inputs'. Found in {func}(...)")
        for x in leaves:
            if isinstance(x, FakeTensor):
                if x.fake_mode is not self:
                    raise AssertionError("Mixing fake modes NYI")
                devices.append(x.fake_device)
            elif isinstance(x, Tensor) and x.device.type != "meta":
                devices.append(x.device)
        device = kwargs.get("device")
        if device is not None:
            device = _devmod.to_device(device)
        elif devices:
            device = next((d for d in devices if d.type != "cpu"), devices[0])
        else:
            device = _devmod.get_default_device()
        schema = getattr(func, "_schema", None)
        if schema is not None and any(a.name == "device" for a in schema.arguments):
            kwargs["device"] = _META  # a factory (or ``_to_copy``): made on meta

        def unwrap(x):
            if isinstance(x, FakeTensor):
                return x._fake_meta
            if isinstance(x, Tensor) and x.device.type != "meta":
                return _to_meta(x)
            return x

        out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs))
        schema_args = getattr(getattr(func, "_schema", None), "arguments", ())
        if schema_args and schema_args[0].is_write and args and isinstance(args[0], FakeTensor):
            return args[0]  # an in-place op: the FakeTensor it changed (on its meta tensor)

        from ..autograd.grad_mode import GRAD

        # (no autograd records through FakeTensors; their results report requires_grad as
        # PyTorch's do)
        requires = GRAD.enabled and any(x.requires_grad for x in leaves
                                        if isinstance(x, Tensor))

        def wrap(x):
            if isinstance(x, Tensor) and x.device.type == "meta":
                f = FakeTensor(self, x, device)
                if requires and f.is_floating_point():
                    f.requires_grad = True
                return f
            return x

        return tree_map(wrap, out)


def _to_meta(t):
    """A meta tensor with ``t``'s shape and dtype (no gradient history)."""
    from .. import empty

    return empty(tuple(t.shape), dtype=t.dtype, device="meta")
