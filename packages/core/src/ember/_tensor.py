"""``ember.Tensor``: an array (NumPy or CuPy) plus autograd fields.

Only ``_data``, ``_device``, ``requires_grad`` and ``grad_fn`` are set when a tensor is made;
the rarer fields (``_grad``, ``_vc`` the version counter shared with views, ``_base``,
``_accum``, ``_nr``, ``_extra``) stay unset until used and are read with ``getattr``
defaults. That keeps making a tensor about as cheap as Python allows. Most methods are
attached by the op registry (``ember.ops``), so each op is defined once.
"""

from __future__ import annotations

import numpy as np

from . import _dtype
from . import _memory_format as _mf
from ._device import device as _device_cls
from ._device import to_device
from .backends import backend_of

__all__ = ["Tensor"]

_new = object.__new__
_ndarray = np.ndarray
CPU = _device_cls("cpu")
_CONTIGUOUS = _mf.contiguous_format
_PRESERVE = _mf.preserve_format


def _make(data, device):
    """Wrap an array as a tensor without a graph (the hot path of every op)."""
    if data.__class__ is not _ndarray:
        data = _as_array(data)
    t = _new(Tensor)
    t._data = data
    t._device = device
    t.requires_grad = False
    t.grad_fn = None
    return t


def _as_cls(result, cls):
    """Tensor results (also inside tuples and lists) as ``cls`` instances."""
    if isinstance(result, Tensor):
        return result if isinstance(result, cls) else result.as_subclass(cls)
    if type(result) in (tuple, list):
        return type(result)(_as_cls(r, cls) for r in result)
    if isinstance(result, tuple) and hasattr(result, "_fields"):  # return_types.max, ...
        return type(result)(*(_as_cls(r, cls) for r in result))
    return result


def _identity(t):
    return t


def _alias_backward(node, grad):
    return (grad,)


def _as_array(data):
    if isinstance(data, np.generic):
        return np.asarray(data)
    return data  # a backend array (e.g. CuPy) or an ndarray subclass


class Tensor:
    """A multi-dimensional array with autograd, like ``torch.Tensor``."""

    __slots__ = ("_data", "_device", "requires_grad", "grad_fn", "__weakref__", "__dict__")
    __array_priority__ = 1000  # NumPy defers to our reflected operators
    # Rare fields are class-level defaults; an instance that sets one gets it in its __dict__
    # (made on first use). Reading a default costs a dict miss, not a slot AttributeError.
    _grad = None  # the .grad tensor
    _vc = None  # version counter: a one-element list shared with views
    _base = None  # the tensor this one is a view of
    _accum = None  # the AccumulateGrad node of a leaf
    _nr = 0  # output index in a multi-output grad_fn
    _extra = None  # hooks, retains_grad, view replay function

    def __new__(cls, *args, device=None, dtype=None):
        # the legacy constructor: ``ember.Tensor(2, 3)`` (uninitialised, of the default dtype),
        # ``ember.Tensor([1, 2])`` (data), ``ember.Tensor(t)`` (an alias of ``t``)
        from ._tensor_types import legacy_new

        t = legacy_new(args, dtype or _dtype.get_default_dtype(), device, keep_dtype=dtype is None)
        if cls is not Tensor:
            t = cls._make_subclass(cls, t)
        return t

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        from . import overrides

        overrides.on_subclass(cls)  # an overriding subclass turns dispatch on (overrides.py)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """The default: run ``func`` without subclass dispatch and return Tensor results as
        ``cls`` (``MyTensor + 1`` is a ``MyTensor``), as PyTorch does. Subclasses override
        it and usually end with ``super().__torch_function__(func, types, args, kwargs)``."""
        from .overrides import DisableTorchFunctionSubclass

        if not all(issubclass(cls, t) for t in types):
            return NotImplemented
        with DisableTorchFunctionSubclass():
            return _as_cls(func(*args, **(kwargs or {})), cls)

    def as_subclass(self, cls):
        """This tensor as a ``cls`` instance sharing its memory, version counter and autograd
        history (``AliasBackward0`` when it requires grad)."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError("Creating a Tensor subclass from a class that does not inherit "
                            "from Tensor is not possible. Make sure your class inherits from "
                            "Tensor.")
        from .ops.views import make_view

        out = make_view(self, self._data, _AliasBackward0, None, _identity)
        if cls is not Tensor:
            out.__class__ = cls
        return out

    @staticmethod
    def _make_subclass(cls, data, require_grad: bool = False):
        """A ``cls`` instance sharing ``data``'s array (used by ``nn.Parameter``)."""
        t = _new(cls)
        t._data = data._data
        t._device = data._device
        t.requires_grad = bool(require_grad)
        t.grad_fn = None
        vc = getattr(data, "_vc", None)
        if vc is None:
            vc = data._vc = [0]
        t._vc = vc
        return t

    # -- metadata -----------------------------------------------------------------------
    @property
    def dtype(self) -> _dtype.dtype:
        return _dtype.FROM_NP[self._data.dtype]

    @property
    def device(self) -> _device_cls:
        return self._device

    @property
    def shape(self):
        from ._size import Size

        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        from ._size import Size

        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def stride(self, dim: int | None = None):
        """Element strides of the memory layout (``(H*W*C, 1, W*C, C)`` for channels-last).
        A new tensor without elements reports PyTorch's contiguous strides, where NumPy
        gives zeros."""
        arr = self._data
        strides = tuple(s // arr.itemsize for s in arr.strides)
        if not arr.size and not any(strides):
            strides = _contiguous_strides(arr.shape)
        if dim is None:
            return strides
        return strides[_wrap_dim(dim, self._data.ndim)]

    def storage_offset(self) -> int:
        base = getattr(self, "_base", None)
        if base is None:
            return 0
        return (_address(self._data) - _address(base._data)) // self._data.itemsize

    def data_ptr(self) -> int:
        return _address(self._data)

    def is_contiguous(self, *, memory_format=_CONTIGUOUS) -> bool:
        """Whether the elements lie densely in ``memory_format``'s order (C order by default;
        ``ember.channels_last``: NHWC memory under the NCHW shape)."""
        if memory_format is _CONTIGUOUS:
            return bool(self._data.flags.c_contiguous)
        return _mf.is_contiguous(self._data, _mf.check(memory_format, "is_contiguous"))

    def contiguous(self, *, memory_format=_CONTIGUOUS):
        """``self`` if it is laid out in ``memory_format`` already, else a copy that is
        (``CloneBackward0``): ``x.contiguous(memory_format=ember.channels_last)`` keeps the
        shape ``(N, C, H, W)`` over NHWC memory, with PyTorch's strides."""
        if memory_format is _CONTIGUOUS and self._data.flags.c_contiguous:
            return self
        if _mf.is_contiguous(self._data, _mf.check(memory_format, "contiguous")):
            return self
        if memory_format is _PRESERVE:
            raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
        return _copy_as(self, _mf.format_order(memory_format, self._data.ndim))

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    def is_complex(self) -> bool:
        return False

    def is_signed(self) -> bool:
        return self._data.dtype.kind in "if"

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self._device.type == "cpu"

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def is_meta(self) -> bool:
        return False

    @property
    def is_xpu(self) -> bool:
        return self._device.type == "xpu"

    @property
    def is_mps(self) -> bool:
        return self._device.type == "mps"

    @property
    def is_sparse(self) -> bool:
        """False: Ember's tensors are all strided (dense)."""
        return False

    @property
    def is_quantized(self) -> bool:
        """False: Ember has no quantized dtypes."""
        return False

    @property
    def layout(self):
        return "strided"

    def get_device(self) -> int:
        return -1 if self._device.type == "cpu" else self._device.index

    def type_name(self) -> str:
        return _TYPE_NAMES.get(self._data.dtype, "Tensor")

    def type(self, dtype=None, non_blocking: bool = False):
        """With no argument, the legacy type's name: ``'ember.FloatTensor'``,
        ``'ember.cuda.FloatTensor'``. Else this tensor as ``dtype`` (no copy when it already
        is): an ``ember.dtype``, a legacy type (``ember.DoubleTensor``) or its name, spelt
        ``'ember.DoubleTensor'`` or, for ported scripts, ``'torch.DoubleTensor'``; a type of
        another device moves the tensor there."""
        if dtype is None:
            name = self.type_name()
            return f"ember.{name}" if self._device.type == "cpu" else \
                f"ember.{self._device.type}.{name}"
        if isinstance(dtype, _dtype.dtype):
            return self.to(dtype)
        from ._tensor_types import parse_type

        device_type, dt = parse_type(dtype)
        if device_type == self._device.type:
            return self.to(dt)
        return self.to(device_type, dt)

    # -- autograd fields ----------------------------------------------------------------
    @property
    def grad(self):
        g = getattr(self, "_grad", None)
        if g is None and self.grad_fn is not None and not getattr(self, "_retains", False):
            _warn_nonleaf_grad()
        return g

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value._device is not self._device:
                raise RuntimeError(f"assigned grad has data located on {value._device}, "
                                   f"but the tensor is on {self._device}")
            if value._data.dtype != self._data.dtype:
                raise RuntimeError(f"assigned grad has data of a different type: expected "
                                   f"{self.dtype} but got {value.dtype}")
            if value._data.shape != self._data.shape:
                raise RuntimeError("assigned grad has data of a different size")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def _version(self) -> int:
        vc = getattr(self, "_vc", None)
        return vc[0] if vc else 0

    def _bump_version(self) -> None:
        vc = getattr(self, "_vc", None)
        if vc is None:
            self._vc = [1]
        else:
            vc[0] += 1

    @property
    def output_nr(self) -> int:
        return getattr(self, "_nr", 0)

    @property
    def retains_grad(self) -> bool:
        return bool(getattr(self, "_retains", False))

    @property
    def _retains(self) -> bool:
        extra = getattr(self, "_extra", None)
        return bool(extra and extra.get("retains_grad"))

    def requires_grad_(self, requires_grad: bool = True):
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If "
                               "you want to use a computed variable in a subgraph that doesn't "
                               "require differentiation use var_no_grad = var.detach().")
        if requires_grad and self._data.dtype.kind not in "fc":
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = bool(requires_grad)
        return self

    def detach(self):
        """A tensor sharing this one's data and version counter, outside the graph."""
        t = _make(self._data, self._device)
        t._vc = _shared_vc(self)
        return t

    def detach_(self):
        if getattr(self, "_base", None) is not None and self._base.requires_grad:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self.requires_grad = False
        return self

    @property
    def data(self):
        return self.detach()

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, not {type(value).__name__}")
        self._data = value._data
        self._device = value._device

    def retain_grad(self) -> None:
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None:
            return
        import weakref

        from .autograd.graph import _HookDict

        extra = self._extra_dict()
        extra["retains_grad"] = True
        node = self.grad_fn
        retain = getattr(node, "_retain", None)
        if retain is None:
            retain = node._retain = _HookDict()
        retain[getattr(self, "_nr", 0)] = weakref.ref(self)

    def _extra_dict(self) -> dict:
        extra = getattr(self, "_extra", None)
        if extra is None:
            extra = self._extra = {}
        return extra

    def register_hook(self, hook):
        """Register ``hook(grad) -> Tensor | None``, run when this tensor's grad is computed."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        from .autograd.graph import accumulate_node

        node = self.grad_fn if self.grad_fn is not None else accumulate_node(self)
        return node._add_pre_hook(getattr(self, "_nr", 0), hook)

    def register_post_accumulate_grad_hook(self, hook):
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        from .autograd.graph import RemovableHandle, _HookDict

        extra = self._extra_dict()
        hooks = extra.get("post_hooks")
        if hooks is None:
            hooks = extra["post_hooks"] = _HookDict()
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the ``.grad`` of the graph's leaves."""
        if (gradient is None and inputs is None and not create_graph and self.grad_fn is not None
                and self._data.size == 1 and self._data.dtype.kind == "f"):
            # the common ``loss.backward()``: skip argument normalisation
            ones = self._data.copy()
            ones.fill(1)
            _engine.run_backward([(self.grad_fn, self._nr)], [_make(ones, self._device)],
                                 bool(retain_graph), False)
            return
        from .autograd import backward

        backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph,
                 inputs=inputs)

    # -- conversion ---------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        if self._device.type != "cpu":
            if force:
                return backend_of(self._device).to_host(self._data)
            raise TypeError(f"can't convert {self._device.type}:{self._device.index or 0} device "
                            "type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
                            "memory first.")
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return self._data

    def _host(self) -> np.ndarray:
        if self._device.type == "cpu":
            return self._data
        return backend_of(self._device).to_host(self._data)

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        return self._host().item() if self._data.ndim else self._host()[()].item()

    def tolist(self):
        return self._host().tolist()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule sharing this tensor's memory (``np.from_dlpack``,
        ``torch.from_dlpack``, ``ember.from_dlpack``)."""
        if self.requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use "
                               "tensor.detach()")
        kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version),
                                    ("dl_device", dl_device), ("copy", copy)) if v is not None}
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple:
        """``(device type, index)`` in DLPack's numbering (1: CPU, 2: CUDA)."""
        return self._data.__dlpack_device__()

    def __array__(self, dtype=None, copy=None):
        arr = self._data if self._device.type == "cpu" else self._host()
        if dtype is not None and arr.dtype != dtype:
            return arr.astype(dtype)
        return np.array(arr, copy=True) if copy else arr

    def __len__(self) -> int:
        if not self._data.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if not self._data.ndim:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with "
                               f"{'no values' if self._data.size == 0 else 'more than one value'}"
                               " is ambiguous")
        return bool(self._host().reshape(()))

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __hash__(self) -> int:
        return id(self)

    def __reduce_ex__(self, protocol):
        # plain pickling (copy.deepcopy, multiprocessing): the host array plus where it lived
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the pickle protocol; call .detach() first.")
        return (_rebuild_tensor, (type(self), self._host(), str(self._device),
                                  self.requires_grad))

    def __deepcopy__(self, memo):
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        if id(self) in memo:
            return memo[id(self)]
        t = _new(type(self))
        t._data = _mf.copy_as(self._data, _mf.preserve_order(self._data))
        t._device = self._device
        t.requires_grad = self.requires_grad
        t.grad_fn = None
        g = getattr(self, "_grad", None)
        if g is not None:
            t._grad = g.__deepcopy__(memo)
        d = getattr(self, "__dict__", None)
        if d:
            import copy

            t.__dict__.update(copy.deepcopy(d, memo))
        memo[id(self)] = t
        return t

    # -- moves ---------------------------------------------------------------------------
    def to(self, *args, memory_format=_PRESERVE, **kwargs):
        """``to(dtype)``, ``to(device, dtype=None)``, ``to(other)``; copy only when needed.
        ``memory_format=ember.channels_last`` (or another format) also lays the result out
        so, as ``contiguous`` does; the default keeps this tensor's layout."""
        dev, dt, copy = _parse_to(self, *args, **kwargs)
        from .ops._core import cast_to

        out = cast_to(self, dev, dt, copy)
        if memory_format is _PRESERVE or memory_format is None:
            return out
        return out.contiguous(memory_format=_mf.check(memory_format, "to"))

    def cpu(self, memory_format=_PRESERVE):
        return self.to(CPU, memory_format=memory_format)

    def cuda(self, device=None, non_blocking: bool = False, memory_format=_PRESERVE):
        if device is None:
            device = "cuda"
        elif isinstance(device, int):
            device = f"cuda:{device}"
        return self.to(device, memory_format=memory_format)

    def double(self):
        return self.to(_dtype.float64)

    def float(self):  # noqa: A003
        return self.to(_dtype.float32)

    def half(self):
        return self.to(_dtype.float16)

    def long(self):
        return self.to(_dtype.int64)

    def int(self):  # noqa: A003
        return self.to(_dtype.int32)

    def short(self):
        return self.to(_dtype.int16)

    def char(self):
        return self.to(_dtype.int8)

    def byte(self):
        return self.to(_dtype.uint8)

    def bool(self):  # noqa: A003
        return self.to(_dtype.bool)

    def __repr__(self) -> str:
        from ._tensor_str import tensor_repr

        return tensor_repr(self)

    def __format__(self, spec):
        if self._data.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)


from .autograd import graph as _graph  # noqa: E402

_graph._Tensor = Tensor
from .autograd import engine as _engine  # noqa: E402

_engine._make = _make
_AliasBackward0 = _graph.make_node_class("AliasBackward0", _alias_backward)


def _rebuild_tensor(cls, array, device, requires_grad):
    from ._factory import place, resolve_device

    t = place(np.array(array, copy=True), resolve_device(device))
    if cls is not Tensor:
        t = cls._make_subclass(cls, t, requires_grad)
    elif requires_grad:
        t.requires_grad = True
    return t


def _copy_as(t, order):
    """A copy of ``t`` laid out in ``order`` (a ``_memory_format`` order), in the graph as
    ``CloneBackward0``."""
    from .autograd.grad_mode import GRAD

    out = _make(_mf.copy_as(t._data, order), t._device)
    if t.requires_grad and GRAD.enabled:
        from .autograd.graph import record
        from .ops.shape import CloneBackward0

        record(CloneBackward0, out, (t,), ())
    return out


def _shared_vc(t):
    vc = getattr(t, "_vc", None)
    if vc is None:
        vc = t._vc = [0]
    return vc


def _contiguous_strides(shape) -> tuple:
    """PyTorch's strides for a C-contiguous ``shape`` (a dim of size 0 counts as 1)."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _address(arr) -> int:
    iface = getattr(arr, "__array_interface__", None)
    if iface is not None:
        return iface["data"][0]
    return arr.data.ptr  # CuPy


def _wrap_dim(dim: int, ndim: int) -> int:
    n = ndim if ndim else 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


_TYPE_NAMES = {
    np.dtype(np.float32): "FloatTensor", np.dtype(np.float64): "DoubleTensor",
    np.dtype(np.float16): "HalfTensor", np.dtype(np.int64): "LongTensor",
    np.dtype(np.int32): "IntTensor", np.dtype(np.int16): "ShortTensor",
    np.dtype(np.int8): "CharTensor", np.dtype(np.uint8): "ByteTensor",
    np.dtype(np.bool_): "BoolTensor",
}

_warned = [False]


def _warn_nonleaf_grad():
    if not _warned[0]:
        import warnings

        _warned[0] = True
        warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being "
                      "accessed. Its .grad attribute won't be populated during "
                      "autograd.backward(). If you indeed want the .grad field to be populated "
                      "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.",
                      UserWarning, stacklevel=3)


def _parse_to(self, *args, **kwargs):
    dev = kwargs.pop("device", None)
    dt = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    fmt = kwargs.pop("memory_format", None)
    if fmt is not None:
        _mf.check(fmt, "to")
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, Tensor):
            dev, dt = a._device, a.dtype
        elif isinstance(a, _dtype.dtype):
            dt = a
        elif isinstance(a, (str, _device_cls, int)) and not isinstance(a, bool):
            dev = a
        elif a is None:
            continue
        elif isinstance(a, bool):
            continue  # non_blocking positional
        else:
            dt = _dtype.to_dtype(a)
    if dev is not None:
        dev = _canonical_device(to_device(dev))
    if dt is not None:
        dt = _dtype.to_dtype(dt)
    return dev, dt, copy


def _canonical_device(dev):
    """A device with its index filled in (``cuda`` -> ``cuda:0``), as tensors carry."""
    if dev.index is None and dev.type != "cpu":
        idx = backend_of(dev).default_index(None)
        if idx is not None:
            return _device_cls(dev.type, idx)
    return dev
