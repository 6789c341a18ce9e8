"""``ember.Tensor``: an array (NumPy or CuPy) plus autograd fields.

Only ``_data``, ``_device``, ``requires_grad`` and ``grad_fn`` are set when a tensor is made;
the rarer fields (``_grad``, ``_vc`` the version counter shared with views, ``_base``,
``_accum``, ``_nr``, ``_extra``) stay unset until used and are read with ``getattr``
defaults. That keeps making a tensor about as cheap as Python allows. Most methods are
attached by the op registry (``ember.ops``), so each op is defined once.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np

from . import _dtype
from . import _memory_format as _mf
from ._device import canonical_device, to_device
from ._device import device as _device_cls
from ._layout import strided as _STRIDED
from ._naming import PREFIX as _PREFIX
from ._size import Size as _Size
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


class _WrapperPlaceholder(np.ndarray):
    """The array of a wrapper subclass (``Tensor._make_wrapper_subclass``): zeros never
    computed with, marked so that reading values (``item``, ``tolist``, ``numpy``) goes to
    the subclass's ``__torch_dispatch__`` or raises PyTorch's error, and so that a kernel
    computing with it (an Ember function with no ATen op to dispatch) raises instead of
    giving zeros. ``_python_dispatch``'s probes of a call's result metadata may compute."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _check_probe(ufunc)
        inputs = tuple(i.view(np.ndarray) if isinstance(i, _WrapperPlaceholder) else i
                       for i in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        _check_probe(func)
        return super().__array_function__(func, types, args, kwargs)


class _Probe(threading.local):
    on = False


#: set while ``ember.utils._python_dispatch`` probes what a call would return
PLACEHOLDER_PROBE = _Probe()


def _check_probe(what) -> None:
    if not PLACEHOLDER_PROBE.on:
        raise RuntimeError(
            f"an Ember kernel computed with the placeholder data of a wrapper subclass "
            f"(Tensor._make_wrapper_subclass) through {getattr(what, '__name__', what)}: the "
            "Ember function called has no ATen op to hand to the subclass's "
            "__torch_dispatch__ (see ember.utils._python_dispatch)")


#: the largest placeholder with the strides given (its zeros are allocated lazily, but an
#: allocation beyond memory may be refused): a larger one is one zero, reported contiguous
_PLACEHOLDER_BYTES = 1 << 30
_NO_STORAGE = RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")


def _wrapper_item(t):
    """``item()`` of a wrapper subclass: PyTorch's ``aten._local_scalar_dense``, handed to
    its ``__torch_dispatch__``."""
    from .ops import aten
    from .utils._python_dispatch import _call_handler

    return _call_handler(aten._local_scalar_dense.default, (t,), {})


def _as_cls(result, cls):
    """Tensor results (also inside tuples and lists) as ``cls`` instances."""
    if isinstance(result, Tensor):
        return result if isinstance(result, cls) else result.as_subclass(cls)
    if type(result) in (tuple, list):
        return type(result)(_as_cls(r, cls) for r in result)
    if isinstance(result, tuple) and hasattr(result, "_fields"):  # return_types.max, ...
        return type(result)(*(_as_cls(r, cls) for r in result))
    return result


def _as_array(data):
    if isinstance(data, np.generic):
        return np.asarray(data)
    return data  # a backend array (e.g. CuPy) or an ndarray subclass



_FLOAT_WARNED = [False]  # float() of a tensor that requires grad warns once a process


def _grad_enabled() -> bool:
    """Whether grad mode is on in this thread (autograd imports this module: a late import)."""
    from .autograd.grad_mode import GRAD

    return GRAD.enabled

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
    _views = None  # weak references to the views made of this root under grad mode

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
        from .ops.views import alias
        from .overrides import DisableTorchFunction

        with DisableTorchFunction():  # (PyTorch's as_subclass dispatches nothing: a
            out = alias(self)  # __torch_dispatch__ that unwraps with it must not recurse)
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

    @staticmethod
    def _make_wrapper_subclass(cls, size, strides=None, storage_offset=None,
                               memory_format=None, dtype=None, layout=None, device=None,
                               pin_memory=False, requires_grad=False,
                               dispatch_sizes_strides_policy=None, dispatch_device=False,
                               dispatch_layout=False, _extra_dispatch_keys=None,
                               storage_size=None):
        """A ``cls`` instance with the given metadata and no data of its own, for a subclass
        whose ``__torch_dispatch__`` computes with tensors it wraps (PyTorch's wrapper
        subclasses): its ops go to ``cls.__torch_dispatch__`` as ATen overloads
        (``ember.utils._python_dispatch``). Its placeholder array is all zeros, allocated
        lazily by the OS (untouched pages cost nothing), read-only and never computed with.
        ``dispatch_sizes_strides_policy`` and the other dispatch-key options are accepted and
        have no effect: sizes and strides are the ones given."""
        from ._device import resolve_device

        shape = tuple(int(n) for n in size)
        dt = (dtype or _dtype.get_default_dtype()).np
        if strides is None:
            strides = _contiguous_strides(shape)
        strides = tuple(int(st) for st in strides)
        offset = int(storage_offset or 0)
        extent = 1 + sum((n - 1) * st for n, st in zip(shape, strides)) if all(shape) else 0
        n = max(offset + extent, int(storage_size or 0), 1)
        if n * dt.itemsize <= _PLACEHOLDER_BYTES:
            buf = np.zeros(n, dt)
            arr = np.lib.stride_tricks.as_strided(buf[offset:], shape,
                                                  tuple(st * dt.itemsize for st in strides))
        else:  # (a fake 7B model's weights: one element, its strides reported contiguous,
            arr = np.broadcast_to(np.zeros((), dt), shape)  # as a meta tensor's are)
        arr = arr.view(_WrapperPlaceholder)
        arr.flags.writeable = False
        t = _new(cls)
        t._data = arr
        t._device = resolve_device(device)
        t.requires_grad = bool(requires_grad)
        t.grad_fn = None
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
        return tuple.__new__(_Size, self._data.shape)  # ints already: no Size() checks

    def size(self, dim: int | None = None):
        if dim is None:
            return tuple.__new__(_Size, self._data.shape)
        shape = self._data.shape
        if not shape and isinstance(dim, int):
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return shape[_wrap_dim(dim, len(shape))]

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
        if not any(strides) and (not arr.size or self._device.type == "meta"
                                 or arr.__class__ is _WrapperPlaceholder):
            strides = _contiguous_strides(arr.shape)  # meta tensors: see ember._meta
        elif 0 in strides and 1 in arr.shape:
            strides = _mf.unit_dim_strides(arr.shape, strides)
        if dim is None:
            return strides
        return strides[_wrap_dim(dim, self._data.ndim)]

    def storage_offset(self) -> int:
        """The element at which this tensor starts in its storage (``untyped_storage()``)."""
        base = self._base
        root = self if base is None else base
        extra = root._extra
        if extra is None or "storage" not in extra:
            if base is None:
                return 0
            return (_address(self._data) - _address(base._data)) // self._data.itemsize
        from ._storage import storage_of

        return (_address(self._data) - storage_of(self).data_ptr()) // self._data.itemsize

    def data_ptr(self) -> int:
        return 0 if self._device.type == "meta" else _address(self._data)

    def const_data_ptr(self) -> int:
        """The address of the first element (``data_ptr``: Ember has no copy-on-write)."""
        return _address(self._data)

    def dim_order(self, *, ambiguity_check=False) -> tuple:
        """The dims from the outermost in memory to the innermost (``(0, 2, 3, 1)`` for a
        channels-last NCHW tensor). ``ambiguity_check=True`` raises when more than one order
        fits (size-1 dims, equal strides); a list of memory formats raises unless exactly one
        of them fits."""
        return _dim_order(self, ambiguity_check)

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another (``_base`` is that one)."""
        return self._base is not None

    def is_contiguous(self, *, memory_format=_CONTIGUOUS) -> bool:
        """Whether the elements lie densely in ``memory_format``'s order (C order by default;
        ``ember.channels_last``: NHWC memory under the NCHW shape)."""
        if memory_format is _CONTIGUOUS:
            return bool(self._data.flags.c_contiguous) or self._device.type == "meta" or (
                self._data.__class__ is _WrapperPlaceholder and not any(self._data.strides))
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
        from .ops.pointwise import copy_as

        return copy_as(self, _mf.format_order(memory_format, self._data.ndim))

    def is_floating_point(self) -> bool:
        return self._data.dtype in _dtype.FLOATING_NP

    def is_complex(self) -> bool:
        return self._data.dtype in _dtype.COMPLEX_NP

    def is_signed(self) -> bool:
        return self._data.dtype.kind == "i" or self._data.dtype in _dtype.INEXACT_NP

    def is_conj(self) -> bool:
        """False: ember's ``conj`` makes a conjugated copy (no lazy conjugate bit)."""
        return False

    def is_neg(self) -> bool:
        """False: ember has no lazy negative bit."""
        return False

    def resolve_conj(self):
        """This tensor: ember never holds an unresolved conjugation."""
        return self

    def resolve_neg(self):
        """This tensor: ember never holds an unresolved negation."""
        return self

    @property
    def real(self):
        """The real part: a view for complex tensors (writes go through), the tensor itself
        for real ones, as in PyTorch."""
        from . import real  # ember.real as it is now: captures and modes see the call

        return real(self)

    @real.setter
    def real(self, value):
        self.real.copy_(value)

    @property
    def imag(self):
        """The imaginary part of a complex tensor, a view (PyTorch's error for real ones)."""
        from . import imag  # ember.imag as it is now: captures and modes see the call

        return imag(self)

    @imag.setter
    def imag(self, value):
        self.imag.copy_(value)

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
        return self._device.type == "meta"

    @property
    def is_xpu(self) -> bool:
        return self._device.type == "xpu"

    @property
    def is_mps(self) -> bool:
        return self._device.type == "mps"

    @property
    def is_sparse(self) -> bool:
        """Whether this is a sparse COO tensor (``ember.sparse_coo_tensor``); False here."""
        return False

    @property
    def is_quantized(self) -> bool:
        """False: Ember has no quantized dtypes."""
        return False

    @property
    def layout(self):
        """``ember.strided`` for dense tensors (sparse ones say ``sparse_coo``/``sparse_csr``)."""
        return _STRIDED

    # backends and kinds of tensor Ember does not have: PyTorch's predicates, truthfully False
    is_ipu = property(lambda self: False, doc="False: Ember has no IPU backend.")
    is_maia = property(lambda self: False, doc="False: Ember has no MAIA backend.")
    is_mkldnn = property(lambda self: False, doc="False: Ember has no MKL-DNN tensors.")
    is_mtia = property(lambda self: False, doc="False: Ember has no MTIA backend.")
    is_vulkan = property(lambda self: False, doc="False: Ember has no Vulkan backend.")
    is_xla = property(lambda self: False, doc="False: Ember has no XLA backend.")
    is_nested = property(lambda self: False,
                         doc="False: a plain tensor (``ember.nested``'s tensors say True).")

    @property
    def volatile(self) -> bool:
        """Removed in PyTorch (always False, with its warning): use ``ember.no_grad()``."""
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                      stacklevel=2)
        return False

    @volatile.setter
    def volatile(self, value) -> None:
        warnings.warn("volatile was removed and now has no effect. Use `with ember.no_grad():` "
                      "instead.", UserWarning, stacklevel=2)

    def get_device(self) -> int:
        return -1 if self._device.type == "cpu" else self._device.index

    def type_name(self) -> str:
        # every dtype has one in PyTorch: ``ComplexFloatTensor``, ``Float8_e4m3fnTensor``
        return _dtype.legacy_type_name(self._data.dtype) or \
            f"{_dtype.scalar_type_name(self._data.dtype)}Tensor"

    def type(self, dtype=None, non_blocking: bool = False):
        """With no argument, the legacy type's name: ``'ember.FloatTensor'``,
        ``'ember.cuda.FloatTensor'``. Else this tensor as ``dtype`` (no copy when it already
        is): an ``ember.dtype``, a legacy type (``ember.DoubleTensor``) or its name, spelt
        ``'ember.DoubleTensor'`` or, for ported scripts, ``'torch.DoubleTensor'``; a type of
        another device moves the tensor there."""
        if dtype is None:
            name = self.type_name()
            prefix = _PREFIX[0]  # "torch" under ember.as_torch
            return f"{prefix}.{name}" if self._device.type == "cpu" else \
                f"{prefix}.{self._device.type}.{name}"
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
            _check_grad_dtype(self, value)  # PyTorch's order: dtype, device, size
            if value._device is not self._device:
                gd, sd = value._device, self._device
                if gd.type != sd.type:
                    raise RuntimeError(f"attempting to assign a gradient with device type "
                                       f"'{gd.type}' to a tensor with device type '{sd.type}'"
                                       ". Please ensure that the gradient and the tensor are "
                                       "on the same device")
                raise RuntimeError(f"attempting to assign a gradient located on device with "
                                   f"index '{_device_index(gd)}' to a tensor located on "
                                   f"device with index '{_device_index(sd)}'. Please ensure "
                                   "that the gradient and the tensor are on the same device")
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"attempting to assign a gradient of size '"
                                   f"{list(value._data.shape)}' to a tensor of size '"
                                   f"{list(self._data.shape)}'. Please ensure that the "
                                   "gradient and the tensor are the same size")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def grad_dtype(self):
        """The dtype ``.grad`` must have: the tensor's own unless set on a leaf (None allows
        any). A leaf's accumulated gradient is cast to it."""
        extra = self._extra
        if extra is not None and "grad_dtype" in extra:
            return extra["grad_dtype"]
        return self.dtype

    @grad_dtype.setter
    def grad_dtype(self, value) -> None:
        if self.grad_fn is not None:
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        if value is not None and not isinstance(value, _dtype.dtype):
            raise RuntimeError("grad_dtype must be a ember.dtype or None, but got "
                               f"{type(value).__name__}")
        extra = self._extra_dict()
        extra["grad_dtype"] = value
        _cast_accumulated_grad_to(self, value)

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
        if requires_grad.__class__ is not bool:
            raise TypeError("requires_grad_(): argument 'requires_grad' (position 1) must be "
                            f"bool, not {type(requires_grad).__name__}")
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If "
                               "you want to use a computed variable in a subgraph that doesn't "
                               "require differentiation use var_no_grad = var.detach().")
        if requires_grad and self._data.dtype not in _dtype.INEXACT_NP:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = bool(requires_grad)
        return self

    def detach(self):
        """A tensor sharing this one's data and version counter, outside the graph."""
        t = _make(self._data, self._device)
        t._vc = _shared_vc(self)
        root = self if self._base is None else self._base
        if root is not self or (root._extra is not None and "storage" in root._extra):
            from ._storage import storage_of

            t._extra = {"storage": storage_of(self)}  # a detached view keeps its storage
        return t

    def detach_(self):
        if getattr(self, "_base", None) is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        self.grad_fn = None
        self.requires_grad = False
        return self

    @property
    def data(self):
        """This tensor's data outside autograd: a tensor sharing its memory (and storage)
        with a version counter of its own, as PyTorch's ``.data``: writes through it are
        not seen by autograd's checks of this tensor (torchdiffeq writes its Runge-Kutta
        stages into a saved scratch tensor this way; ``detach()`` shares the counter and
        would raise). Each write through such an alias counts in ``DATA_WRITES``, which
        caches of a tensor's contents (``ember.compile``'s broadcast constants) compare
        besides the tensor's own version."""
        t = self.detach()
        t._vc = _DataVersion((0,))
        return t

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, not {type(value).__name__}")
        self._data = value._data
        self._device = value._device
        root = value if value._base is None else value._base
        if root is not value or (root._extra is not None and "storage" in root._extra):
            from ._storage import storage_of

            self._extra_dict()["storage"] = storage_of(value)  # the storage of ``value``
        elif self._extra is not None:
            self._extra.pop("storage", None)

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
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
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
                and self._data.size == 1 and self._data.dtype in _dtype.FLOATING_NP):
            # the common ``loss.backward()``: skip argument normalisation
            ones = self._data.copy()
            ones.fill(1)
            from .autograd.engine import run_backward

            run_backward([(self.grad_fn, self._nr)], [_make(ones, self._device)],
                         bool(retain_graph), False)
            return
        from .autograd import backward

        backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph,
                 inputs=inputs)

    # -- conversion ---------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The tensor's NumPy array (shared, not copied), as ``torch.Tensor.numpy``; bfloat16
        and complex32 raise PyTorch's TypeError (NumPy has neither: ``t.float().numpy()``,
        ``t.cfloat().numpy()``)."""
        # PyTorch refuses a tensor that requires grad only while grad mode is on
        grad_error = self.requires_grad and not force and _grad_enabled()
        if self._data.dtype in _NO_NUMPY and not grad_error:
            raise _no_numpy_bfloat16(self._data.dtype)
        if self._device.type != "cpu":
            if force:
                return backend_of(self._device).to_host(self._data)
            dev = self._device
            where = dev.type if dev.type == "meta" else f"{dev.type}:{dev.index or 0}"
            raise TypeError(f"can't convert {where} device "
                            "type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
                            "memory first.")
        if grad_error:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self._data.__class__ is _WrapperPlaceholder:
            raise _NO_STORAGE
        return self._data

    def _host(self) -> np.ndarray:
        if self._device.type == "cpu":
            return self._data
        return backend_of(self._device).to_host(self._data)

    def item(self):
        if self._data.__class__ is _WrapperPlaceholder:
            return _wrapper_item(self)
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        if self._device.type == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return self._host().item() if self._data.ndim else self._host()[()].item()

    def tolist(self):
        if self._data.__class__ is _WrapperPlaceholder:
            raise _NO_STORAGE
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
        # as PyTorch: a tensor off the CPU does not convert implicitly (``numpy()`` raises)
        if self.requires_grad and _grad_enabled():  # PyTorch's __array__ calls numpy()
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self._data.dtype in _NO_NUMPY:
            raise _no_numpy_bfloat16(self._data.dtype)
        if self._data.__class__ is _WrapperPlaceholder:
            raise _NO_STORAGE
        arr = self._data if self._device.type == "cpu" else self.numpy()
        if dtype is not None and arr.dtype != dtype:
            return arr.astype(dtype)
        return np.array(arr, copy=True) if copy else arr

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A NumPy ufunc's result on a tensor, as a tensor (``np.sin(t)``), as PyTorch's:
        a bool result becomes uint8 (PyTorch's old workaround, kept by it)."""
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return _make(np.asarray(array), CPU)

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
        if self._device.type == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        if self._data.__class__ is _WrapperPlaceholder:
            return bool(_wrapper_item(self))
        return bool(self._host().reshape(()))

    def _python_scalar(self):
        """The one element, for ``float()``/``int()``/``complex()`` (PyTorch's ValueError
        for any other count, where ``item()`` raises a RuntimeError)."""
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __float__(self) -> float:
        if self.requires_grad and not _FLOAT_WARNED[0] and _grad_enabled():
            _FLOAT_WARNED[0] = True  # PyTorch's TORCH_WARN_ONCE: once a process
            from ._warn import user_stacklevel

            warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to "
                          "unexpected behavior.\nConsider using tensor.detach() first.",
                          UserWarning, stacklevel=user_stacklevel())
        v = self._python_scalar()
        return float(v if v.__class__ is not complex else _real_part(v, "double"))

    def __int__(self) -> int:
        v = self._python_scalar()
        return int(v if v.__class__ is not complex else _real_part(v, "int64_t"))

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __complex__(self):
        return complex(self._python_scalar())

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
                               "support the deepcopy protocol at the moment.  If you were "
                               "attempting to deepcopy a module, this may be because of a "
                               "ember.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
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

            extra = d.get("_extra")
            if extra and any(k in extra for k in _MEMORY_KEYS):  # the copy has its own memory
                d = {**d, "_extra": {k: v for k, v in extra.items() if k not in _MEMORY_KEYS}}
            if "_views" in d:  # the original's views are not the copy's
                d = {k: v for k, v in d.items() if k != "_views"}
            t.__dict__.update(copy.deepcopy(d, memo))
        memo[id(self)] = t
        return t

    # -- moves ---------------------------------------------------------------------------
    def to(self, *args, memory_format=_PRESERVE, **kwargs):
        """``to(dtype)``, ``to(device, dtype=None)``, ``to(other)``; copy only when needed.
        ``memory_format=ember.channels_last`` (or another format) also lays the result out
        so, as ``contiguous`` does; the default keeps this tensor's layout."""
        dev, dt, copy = _parse_to(self, *args, **kwargs)
        from .ops._casts import cast_to

        out = cast_to(self, dev, dt, copy)
        if memory_format is _PRESERVE or memory_format is None:
            return out
        # PyTorch's rule (to_will_alias): the tensor itself when nothing else changes and its
        # layout already suggests the format (ambiguous size-1 layouts suggest contiguous);
        # else a copy with the format's fresh strides
        arr = out._data
        order = _mf.format_order(_mf.check(memory_format, "to"), arr.ndim)
        if out is self and _mf.suggest(arr) == order:
            return out
        if out is not self and arr.strides == _mf.dense_strides(arr.shape, order, arr.itemsize):
            return out
        from .ops.pointwise import copy_as

        return copy_as(out, order)

    def cpu(self, memory_format=_PRESERVE):
        return self.to(CPU, memory_format=memory_format)

    def cuda(self, device=None, non_blocking: bool = False, memory_format=_PRESERVE):
        if device is None:
            device = "cuda"
        elif isinstance(device, int) and not isinstance(device, bool):
            device = _device_cls(device)  # the accelerator's (PyTorch's error without one)
        return self.to(device, memory_format=memory_format)

    def xpu(self, device=None, non_blocking: bool = False, memory_format=_PRESERVE):
        """This tensor on an Intel GPU: Ember has none, so this raises as a PyTorch build
        without XPU does."""
        from .accelerator import _NONE_AVAILABLE, current_accelerator
        from .xpu import _not_compiled

        if device is not None and current_accelerator() is None:
            raise RuntimeError(_NONE_AVAILABLE)
        raise _not_compiled()

    # -- shared memory -------------------------------------------------------------------
    def share_memory_(self):
        """Move the underlying storage to shared memory, so that other processes can map it
        (``ember.multiprocessing``), and return ``self``. A no-op when it is in shared memory
        already and for tensors not on the CPU (CUDA tensors are shared by handle).

        Every tensor over the storage moves with it: the base, its views, the tensors
        detached from them. NumPy arrays over the old memory (``numpy()``) keep it.
        """
        from .multiprocessing._shared_memory import share_tensor_

        share_tensor_(self)
        return self

    def is_shared(self) -> bool:
        """Whether this tensor is in shared memory (``share_memory_()``, or received through
        an ``ember.multiprocessing`` queue). Always True for CUDA tensors, as in PyTorch."""
        from .multiprocessing._shared_memory import tensor_is_shared

        return tensor_is_shared(self)

    # -- pinned memory and streams -----------------------------------------------------------
    def is_pinned(self, device=None) -> bool:
        """Whether this tensor lives in page-locked host memory (made by ``pin_memory``)."""
        if device is not None:
            warnings.warn("The argument 'device' of Tensor.is_pinned() is deprecated. Please do "
                          "not pass this argument.", DeprecationWarning, stacklevel=2)
        extra = self._extra
        return bool(extra is not None and extra.get("pinned"))

    def pin_memory(self, device=None):
        """A copy of this CPU tensor in page-locked host memory, for faster copies to the
        accelerator. Without an accelerator this raises, as PyTorch does."""
        from .accelerator import _NONE_AVAILABLE, current_accelerator

        if self._device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be "
                               "pinned")
        if device is not None and _device_cls(device).type == "cpu":
            raise RuntimeError("CPU device type not an accelerator.")
        acc = current_accelerator()
        if acc is None:
            raise RuntimeError(_NONE_AVAILABLE)
        if self.is_pinned():
            return self
        alloc = getattr(backend_of(acc), "pinned_empty", None)
        if alloc is None:
            raise NotImplementedError(f"pin_memory: the {acc.type} backend of Ember has no "
                                      "page-locked host allocator")
        buf = alloc(self._data.shape, self._data.dtype)
        buf[...] = self._data
        out = _make(buf, self._device)
        out._extra = {"pinned": True}
        return out

    def record_stream(self, s) -> None:
        """Mark this tensor's memory as used by the stream ``s`` (PyTorch's name; a CUDA
        tensor's only: CuPy's memory pool keeps a block until the work queued before its
        release is done, so there is nothing more to record)."""
        from ._stream import Stream
        from .cuda import Stream as CudaStream

        if not isinstance(s, (Stream, CudaStream)):
            raise RuntimeError("unknown parameter type")
        if self._device.type != "cuda":
            backend = "CPU" if self._device.type == "cpu" else self._device.type
            raise NotImplementedError(f"Could not run 'aten::record_stream' with arguments from "
                                      f"the '{backend}' backend. This could be because the "
                                      "operator doesn't exist for this backend.")

    # -- per-element Python callables (CPU only) ---------------------------------------------
    def apply_(self, callable):
        """Replace each element with ``callable(element)`` (a Python number in, a number out),
        in place. CPU only, and slow: it calls Python once per element."""
        _check_map(self, "apply_", ())
        return _map_into(self, callable, (), "apply_")

    def map_(self, tensor, callable):
        """``self[i] = callable(self[i], tensor[i])`` in place, ``tensor`` broadcast to
        ``self``'s shape. CPU only."""
        _check_map(self, "map_", (("other", tensor),))
        return _map_into(self, callable, (tensor,), "map_")

    def map2_(self, x, y, callable):
        """``self[i] = callable(self[i], x[i], y[i])`` in place, ``x`` and ``y`` broadcast to
        ``self``'s shape. CPU only."""
        _check_map(self, "map2_", (("x", x), ("y", y)))
        return _map_into(self, callable, (x, y), "map2_")

    # -- loading and legacy construction -----------------------------------------------------
    def module_load(self, other, assign: bool = False):
        """How ``other`` (a state-dict value) is loaded into this parameter or buffer by
        ``nn.Module.load_state_dict`` when swapping tensors: ``other`` itself (detached) with
        ``assign``, else this tensor with ``other`` copied in (detached)."""
        if assign:
            return other.detach()
        return self.copy_(other).detach()

    def new(self, *args, device=None):
        """The legacy constructor with this tensor's dtype (deprecated in PyTorch): sizes
        (uninitialised), data, a tensor (an alias) or a storage; ``new()`` has no
        elements."""
        from ._storage import TypedStorage, UntypedStorage

        if device is not None:
            from ._device import resolve_device

            kind = device.type if isinstance(device, _device_cls) else _device_cls(device).type
            if kind != self._device.type:
                raise RuntimeError(f"legacy constructor expects device type: "
                                   f"{self._device.type} but device type: {kind} was passed")
            dev = resolve_device(device)
        else:
            dev = self._device
        if len(args) == 1 and isinstance(args[0], (UntypedStorage, TypedStorage)):
            from ._factory import empty

            return empty(0, dtype=self.dtype, device=dev).set_(args[0])
        from ._tensor_types import legacy_new

        return legacy_new(args, self.dtype, dev)

    def resize(self, *sizes):
        """A tensor of ``sizes`` with this tensor's elements (deprecated: use ``reshape``);
        the number of elements must stay."""
        warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
        from .ops.views import resize_view

        return resize_view(self, sizes)

    def resize_as(self, tensor):
        """``resize(*tensor.size())`` (deprecated: use ``reshape_as``)."""
        warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
        from .ops.views import resize_view

        return resize_view(self, tuple(tensor._data.shape))

    def __repr__(self) -> str:
        if self._data.__class__ is _WrapperPlaceholder:  # no values of its own to show
            return (f"{type(self).__name__}(size={tuple(self._data.shape)}, dtype={self.dtype}, "
                    f"device={str(self._device)!r})")
        from ._tensor_str import tensor_repr

        return tensor_repr(self)

    def __format__(self, spec):
        if self._data.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)




def _cast_method(name: str, dt):
    """``Tensor.<name>(memory_format=ember.preserve_format)``: ``self.to(dt, ...)``
    (``double``, ``float``, ...)."""

    def method(self, *, memory_format=_PRESERVE):
        if memory_format is _PRESERVE:
            return self.to(dt)
        return self.to(dt, memory_format=memory_format)

    method.__name__, method.__qualname__ = name, f"Tensor.{name}"
    return method


for _name, _dt in (("double", _dtype.float64), ("float", _dtype.float32),
                   ("half", _dtype.float16), ("bfloat16", _dtype.bfloat16),
                   ("long", _dtype.int64), ("int", _dtype.int32),
                   ("short", _dtype.int16), ("char", _dtype.int8), ("byte", _dtype.uint8),
                   ("bool", _dtype.bool), ("chalf", _dtype.complex32),
                   ("cfloat", _dtype.complex64),
                   ("cdouble", _dtype.complex128)):
    setattr(Tensor, _name, _cast_method(_name, _dt))


def _no_numpy_bfloat16(np_dtype=_dtype.BFLOAT16_NP) -> TypeError:
    """PyTorch's error for NumPy conversions of bfloat16 and complex32 (NumPy has neither
    dtype; Ember keeps them ``ml_dtypes`` arrays inside: ``t.float().numpy()``,
    ``t.cfloat().numpy()`` or ``t.view(ember.int16)`` reach the values)."""
    return TypeError(f"Got unsupported ScalarType {_dtype.scalar_type_name(np_dtype)}")


#: the dtypes ``numpy()`` refuses, as PyTorch does (NumPy has no such dtype)
_NO_NUMPY = frozenset((_dtype.BFLOAT16_NP, _dtype.CHALF_NP))


def _rebuild_tensor(cls, array, device, requires_grad):
    from ._device import resolve_device
    from ._factory import place

    t = place(np.array(array, copy=True), resolve_device(device))
    if cls is not Tensor:
        t = cls._make_subclass(cls, t, requires_grad)
    elif requires_grad:
        t.requires_grad = True
    return t


#: how many writes went through ``.data`` aliases in this process (``_DataVersion``)
DATA_WRITES = [0]


class _DataVersion(list):
    """The version counter of a ``.data`` alias: its own count (autograd's checks of the
    original tensor do not see it), and each write also counts in ``DATA_WRITES``."""

    __slots__ = ()

    def __setitem__(self, index, value):
        list.__setitem__(self, index, value)
        DATA_WRITES[0] += 1


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



def _warn_nonleaf_grad():
    # on every access, as PyTorch (Python's warning filters decide what is shown)
    import warnings

    warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being "
                  "accessed. Its .grad attribute won't be populated during "
                  "autograd.backward(). If you indeed want the .grad field to be populated "
                  "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.",
                  UserWarning, stacklevel=3)


_TO_OVERLOADS = (
    "(torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, bool "
    "copy = False, *, torch.memory_format memory_format = None)",
    "(torch.dtype dtype, bool non_blocking = False, bool copy = False, *, torch.memory_format "
    "memory_format = None)",
    "(Tensor tensor, bool non_blocking = False, bool copy = False, *, torch.memory_format "
    "memory_format = None)")


def _to_type_name(a) -> str:
    if isinstance(a, Tensor):
        return "Tensor"
    if isinstance(a, _dtype.dtype):
        return "torch.dtype"
    if isinstance(a, _device_cls):
        return "torch.device"
    return type(a).__name__


def _to_invalid(args, kwargs) -> TypeError:
    from .ops._signatures import _got_types
    from .ops.numeric import _invalid_args

    return _invalid_args("to", _got_types(args, kwargs, _to_type_name), _TO_OVERLOADS)


def _is_dtype_arg(a) -> bool:
    """A dtype as PyTorch's argument parser takes one: an ember dtype, or a Python (or NumPy)
    scalar type (``float`` is float64)."""
    return isinstance(a, (_dtype.dtype, np.dtype)) or (
        isinstance(a, type) and issubclass(a, (bool, int, float, complex, np.generic)))


def _real_part(v: complex, c_type: str) -> float:
    """A complex scalar as a real one, as PyTorch converts it: the real part when the imaginary
    part is zero, else its overflow error."""
    if v.imag:
        raise RuntimeError(f"value cannot be converted to type {c_type} without overflow")
    return v.real


#: a Python number as ``to``'s tensor argument (an int is a device index): its tensor's dtype
_NUMBER_AS_TENSOR = {float: "float64", bool: "bool", complex: "complex128"}


def _parse_to(self, *args, **kwargs):
    """``Tensor.to``'s three overloads, PyTorch's: ``(device=None, dtype=None,
    non_blocking=False, copy=False)``, ``(dtype, non_blocking=False, copy=False)`` and
    ``(tensor, non_blocking=False, copy=False)``, each with the keyword-only
    ``memory_format``; a call that fits none raises PyTorch's TypeError."""
    if len(args) == 1 and not kwargs:  # the common calls: to(dtype), to(device), to(other)
        a = args[0]
        if a.__class__ is _dtype.dtype:
            return None, a, False
        if isinstance(a, Tensor):
            return a._device, a.dtype, False
        if isinstance(a, (str, _device_cls)) or (isinstance(a, int) and a.__class__ is not bool):
            return canonical_device(to_device(a)), None, False
    nargs = len(args)
    if nargs > 4:
        raise TypeError(f"to() takes from 0 to 4 positional arguments but {nargs} were given")
    first = args[0] if args else None
    number = _NUMBER_AS_TENSOR.get(first.__class__)
    if isinstance(first, Tensor) or number is not None or (
            first is not None and _is_dtype_arg(first)):
        names = ("non_blocking", "copy")  # the tensor and dtype overloads
        if nargs > 3 or "device" in kwargs or "dtype" in kwargs:
            raise _to_invalid(args, kwargs)
        if isinstance(first, Tensor):
            dev, dt = first._device, first.dtype
        elif number is not None:  # PyTorch's parser wraps it as a CPU tensor (to(1.5): double)
            dev, dt = CPU, getattr(_dtype, number)
        else:
            dev, dt = None, first
        rest = args[1:]
    else:
        names = ("device", "dtype", "non_blocking", "copy")
        rest, dev, dt = args, None, None
    values = dict(zip(names, rest))
    for k, v in kwargs.items():
        if k == "memory_format":
            if v is not None:
                _mf.check(v, "to")
            continue
        if k not in names or k in values:
            raise _to_invalid(args, kwargs)
        values[k] = v
    if "device" in values:
        dev = values["device"]
        if dev is not None and not (isinstance(dev, (str, _device_cls))
                                    or (isinstance(dev, int) and dev.__class__ is not bool)):
            raise _to_invalid(args, kwargs)
    if "dtype" in values:
        dt = values["dtype"]
        if dt is not None and not _is_dtype_arg(dt):
            raise _to_invalid(args, kwargs)
    for k in ("non_blocking", "copy"):
        if k in values and values[k].__class__ is not bool:
            raise _to_invalid(args, kwargs)
    if dev is not None:
        dev = canonical_device(to_device(dev))
    if dt is not None:
        dt = _dtype.to_dtype(dt)
    return dev, dt, values.get("copy", False)


_MEMORY_KEYS = ("storage", "geom", "pinned")


def _device_index(dev) -> int:
    """A device's index as PyTorch's ``get_device()`` gives it (-1 for the CPU)."""
    return -1 if dev.index is None else dev.index


def _check_grad_dtype(t, grad) -> None:
    """PyTorch's check of an assigned ``.grad``'s dtype against ``grad_dtype``."""
    extra = t._extra
    explicit = extra is not None and "grad_dtype" in extra
    want = extra["grad_dtype"] if explicit else t.dtype
    if want is None or grad._data.dtype == want.np:
        return
    from ._dtype import options_type_name, scalar_type_name

    raise RuntimeError(f"attempting to assign a gradient with dtype '"
                       f"{options_type_name(grad.dtype)}' "
                       f"to a tensor with grad_dtype '"
                       f"{scalar_type_name(want.np)}'. The gradient must "
                       "match the tensor's grad_dtype (defaults to the tensor's dtype). You can "
                       "set the tensor's grad_dtype attribute with a specific dtype, or None to "
                       "allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a "
                       "tensor and its gradient may break downstream systems that assume they "
                       "match.")


def _cast_accumulated_grad_to(t, dtype) -> None:
    """Make the gradients accumulated into leaf ``t`` take ``dtype``: a post-accumulate hook
    (first of the leaf's) casts ``.grad`` once the engine has accumulated it in ``t``'s
    dtype, which is what the incoming gradient has (a cast's backward casts back)."""
    from .autograd.graph import _HookDict

    extra = t._extra_dict()
    hooks = extra.get("post_hooks")
    old = extra.pop("_grad_dtype_hook", None)
    if hooks is not None and old is not None:
        hooks.pop(old, None)
    if dtype is None or dtype is t.dtype:
        return

    def cast(var, _np=dtype.np, _dt=dtype):
        g = var._grad
        if g is not None and g._data.dtype != _np:
            var._grad = g.to(_dt)

    if hooks is None:
        hooks = extra["post_hooks"] = _HookDict()
    others = list(hooks.items())  # the cast runs first: users' hooks see the cast gradient
    hooks.clear()
    hooks[-1] = cast
    hooks.update(others)
    extra["_grad_dtype_hook"] = -1


def _check_map(t, name: str, others) -> None:
    """``apply_``/``map_``/``map2_``'s checks: CPU tensors of ``t``'s type, no autograd."""
    for arg, o in others:
        if not isinstance(o, Tensor):
            pos = 1 if arg in ("other", "x") else 2
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                            f"{type(o).__name__}")
    if t._device.type != "cpu" or any(o._device.type != "cpu" for _, o in others):
        raise RuntimeError(f"{name} is only implemented on CPU tensors")
    for arg, o in others:
        if o._data.dtype != t._data.dtype:
            what = "'other'" if name == "map_" else f"argument '{arg}'"
            raise TypeError(f"{name}: expected {t.type()} for {what} (got {o.type()})")
    if t.requires_grad or any(o.requires_grad for _, o in others):
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")


def _real_number(r):
    import numbers

    if isinstance(r, (numbers.Real, np.generic)) and not isinstance(r, complex):
        return r
    raise TypeError(f"must be real number, not {type(r).__name__}")


def _map_into(t, fn, others, name: str):
    """``t``'s elements replaced, in place, by ``fn`` of them and of ``others``' (broadcast)."""
    from .ops._inplace import write_inplace

    d = t._data
    args = [d.ravel().tolist()]
    for o in others:
        args.append(o.expand(d.shape)._data.ravel().tolist())
    values = [_real_number(fn(*vals)) for vals in zip(*args)]
    result = np.array(values).astype(d.dtype).reshape(d.shape) if values else d.copy()
    write_inplace(t, result, name)
    t._bump_version()
    return t


def _dim_order(t, ambiguity_check) -> tuple:
    """``Tensor.dim_order`` (PyTorch's ``compute_elementwise_output_logical_to_physical_perm``
    on one tensor, with its ambiguity checks)."""
    from ._memory_format import memory_format

    if not isinstance(ambiguity_check, bool):
        if not isinstance(ambiguity_check, list) or not all(
                isinstance(f, memory_format) for f in ambiguity_check):
            raise TypeError("The ambiguity_check argument must be a bool or a list of memory "
                            "formats.")
    sizes, strides = t._data.shape, t.stride()
    ndim = len(sizes)
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    check_multiple = ambiguity_check if isinstance(ambiguity_check, bool) else True
    multiple = any(a == b for a, b in zip(strides, strides[1:])) or 1 in sizes
    if check_multiple and multiple and \
            sum(bool(t.is_contiguous(memory_format=f)) for f in formats) != 1:
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact "
                           "one of the given memory formats.")
    if ndim == 0:
        return ()
    if ndim == 1:
        return (0,)
    contiguous = t.is_contiguous()
    channels_last = ndim == 4 and t.is_contiguous(memory_format=_mf.channels_last)
    if contiguous and not channels_last:
        return tuple(range(ndim))
    if channels_last and not contiguous:
        return (0, *range(2, ndim), 1)

    def should_swap(a, b):
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            return 0

        def ge(x, y):
            if y == 0:
                return True
            if x == 0:
                return False
            return x >= y or x % y == 0

        if sa == sb:
            return 0 if ge(sizes[b], sizes[a]) else 1
        if ge(sb, sa):
            return -1
        if ge(sa, sb):
            return 1
        return 0

    perm = list(reversed(range(ndim)))
    for i in range(1, ndim):
        dim1 = i
        for dim0 in reversed(range(i)):
            cmp = should_swap(perm[dim0], perm[dim1])
            if cmp > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif cmp < 0:
                break
    if ambiguity_check and any(should_swap(perm[i], perm[i + 1]) != -1
                               for i in range(ndim - 1)):
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(reversed(perm))
