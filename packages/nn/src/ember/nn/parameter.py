"""``Parameter`` and ``Buffer``: tensors a ``Module`` registers (``torch.nn.parameter``)."""

from __future__ import annotations

import ember
from ember import Tensor

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer",
           "UninitializedTensorMixin", "is_lazy"]


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning it to a ``Module`` attribute registers it.

    It shares the data of the tensor it is made from and requires grad by default. A
    parameter of a DTensor is that DTensor (detached) as an instance of a class deriving from
    both, so it is a ``DTensor`` and a ``Parameter`` (PyTorch keeps the DTensor's class and
    marks it).
    """

    # as in PyTorch, parameters take no part in __torch_function__ dispatch
    __torch_function__ = ember.overrides.disabled_torch_function_impl

    def __new__(cls, data=None, requires_grad: bool = True):
        if data is None:
            data = ember.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not "
                            f"{type(data).__name__}")
        if requires_grad and not (data.is_floating_point() or data.is_complex()):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        if _keeps_class(type(data)) or (
                type(data) is not Tensor and data.layout is not ember.strided):
            # a DTensor stays a DTensor, a sparse tensor sparse (``SparseTensor``), a
            # subclass with a ``__torch_dispatch__`` (a quantized weight) that subclass
            t = data.detach()
            if type(t) is not type(data):  # (a __torch_dispatch__ that loses the class)
                raise RuntimeError(
                    f"Creating a Parameter from an instance of type {type(data).__name__} "
                    "requires that detach() returns an instance of the same type, but return "
                    f"type {type(t).__name__} was found instead. To use the type as a "
                    "Parameter, please correct the detach() semantics defined by its "
                    "__torch_dispatch__() implementation.")
            t.__class__ = _parameter_class(type(data))
            t._ember_recast = True  # (see _init_once)
            t.requires_grad_(requires_grad)
            return t
        return Tensor._make_subclass(cls, data, requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        detached = self.detach()
        # Tensor.__deepcopy__ files its copy in memo under id(detached): keep that transient
        # alive for the whole deepcopy (as copy.deepcopy keeps its originals), or a later
        # parameter's transient may reuse the id and get this copy back (two parameters
        # would then share one tensor in the copy)
        memo.setdefault(id(memo), []).append(detached)
        # as in PyTorch, the copy has no gradient (``Tensor.__deepcopy__`` copies a leaf's)
        result = type(self)(ember.Tensor.__deepcopy__(detached, memo), self.requires_grad)
        memo[id(self)] = result
        return result


_PARAMETER_CLASSES: dict = {}


def _init_once(base: type):
    """The ``__init__`` of a parameter class made from ``base``: ``base``'s, except on the
    object ``Parameter(data)`` returns (``data`` detached and recast, initialised already:
    Python calls ``__init__`` on it with ``Parameter``'s arguments, not ``base``'s)."""
    def __init__(self, *args, **kwargs):
        if self.__dict__.pop("_ember_recast", False):
            return
        base.__init__(self, *args, **kwargs)
    return __init__


def _keeps_class(tp) -> bool:
    """Whether a parameter made of a ``tp`` stays a ``tp`` (a class deriving from both):
    Ember's wrapper subclasses (DTensor) and Tensor subclasses with a ``__torch_dispatch__``,
    as PyTorch keeps a custom tensor's class and marks it as a parameter."""
    return getattr(tp, "_ember_wrapper_subclass", False) or ember.overrides.has_torch_dispatch(tp)


def _parameter_class(base: type) -> type:
    """``base`` (a wrapper subclass such as DTensor) and Parameter in one class, named as
    ``base``: its methods and dispatch come first."""
    cls = _PARAMETER_CLASSES.get(base)
    if cls is None:
        body = {"__module__": base.__module__, "__qualname__": base.__qualname__,
                "__init__": _init_once(base)}
        if not _keeps_class(base):
            # a sparse parameter prints, copies and pickles as a Parameter
            body["__repr__"] = lambda self: "Parameter containing:\n" + base.__repr__(self)
            body["__reduce_ex__"] = Parameter.__reduce_ex__
            body["__deepcopy__"] = _deepcopy_sparse_parameter
        cls = type(base.__name__, (base, Parameter), body)
        _PARAMETER_CLASSES[base] = cls
    return cls


def _deepcopy_sparse_parameter(self, memo):
    if id(self) in memo:
        return memo[id(self)]
    result = Parameter(self.detach().clone(), self.requires_grad)  # no grad, as PyTorch's
    memo[id(self)] = result
    return result


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


# checkpoints load parameters as this class and save it as PyTorch's Parameter
ember.serialization.register_parameter_class(Parameter)


class _BufferMeta(type):
    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return type.__instancecheck__(cls, instance)


class Buffer(metaclass=_BufferMeta):
    """A tensor marked to be registered as a buffer when assigned to a ``Module`` attribute.

    ``Buffer(t, persistent=False)`` returns ``t`` itself (a plain tensor) with the mark.
    """

    def __new__(cls, data=None, *, persistent: bool = True):
        if data is None:
            data = ember.empty(0)
        t = data.detach()
        t.requires_grad = data.requires_grad
        t._is_buffer = True
        t.persistent = persistent
        return t


# -- lazy (uninitialized) parameters and buffers -----------------------------------------------

#: the slot of ``Tensor`` that holds its array; an uninitialized tensor shadows it (below)
_ARRAY_SLOT = Tensor.__dict__["_data"]


def _uninitialized_use_error(cls) -> ValueError:
    return ValueError(
        f"Attempted to use an uninitialized parameter in an ember operation. This error happens "
        "when you are using a `LazyModule` or explicitly manipulating "
        f"`ember.nn.parameter.{cls.__name__}` objects. When using LazyModules Call `forward` "
        "with a dummy batch to initialize the parameters before calling ember functions")


class UninitializedTensorMixin:
    """What uninitialized parameters and buffers share (``torch.nn.parameter``'s mixin).

    The tensor's array is hidden: every op reads ``_data``, which raises PyTorch's
    ``ValueError``. Only its dtype and device are known; the methods that change those
    (``to``, ``cuda``, ``cpu``, ``float``, ...) are allowed and return a plain empty tensor,
    which ``Module._apply`` stores back through ``data``.
    """

    __torch_function__ = ember.overrides.disabled_torch_function_impl  # ops raise through _data

    __slots__ = ()
    cls_to_become: type

    @property
    def _data(self):
        raise _uninitialized_use_error(type(self))

    @_data.setter
    def _data(self, array) -> None:
        _ARRAY_SLOT.__set__(self, array)

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the tensor ``shape`` (uninitialized memory) and turn it into a
        ``cls_to_become`` (``Parameter`` or ``Tensor``); dtype and device are kept unless
        given."""
        placeholder = self._placeholder
        device = placeholder.device if device is None else device
        dtype = placeholder.dtype if dtype is None else dtype
        Tensor.data.fset(self, ember.empty(shape, device=device, dtype=dtype))
        del self._placeholder
        self.__class__ = self.cls_to_become

    # -- what may be asked of an uninitialized tensor -------------------------------------
    @property
    def data(self) -> Tensor:
        return self._placeholder.detach()

    @data.setter
    def data(self, value: Tensor) -> None:
        self._placeholder = value.detach()
        Tensor.data.fset(self, value)

    @property
    def dtype(self):
        return self._placeholder.dtype

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
            "initialized one. Call `forward` to initialize the parameters before accessing their "
            "attributes.")

    def share_memory_(self):
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
            "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, protocol):
        return (self.__class__, (self.requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype)
        return memo[id(self)]


#: PyTorch's allowed methods of an uninitialized tensor: they need only its dtype and device,
#: so they run on the empty placeholder tensor (moves and casts return a plain tensor)
_PLACEHOLDER_METHODS = ("size", "is_floating_point", "is_complex", "get_device", "to", "cuda",
                        "cpu", "type", "half", "float", "double")


def _on_placeholder(name: str):
    def method(self, *args, **kwargs):
        return getattr(self._placeholder, name)(*args, **kwargs)

    method.__name__ = method.__qualname__ = name
    return method


for _name in _PLACEHOLDER_METHODS:
    setattr(UninitializedTensorMixin, _name, _on_placeholder(_name))
del _name


def _make_uninitialized(cls, requires_grad, device, dtype):
    placeholder = ember.empty(0, device=device, dtype=dtype)
    t = Tensor._make_subclass(cls, placeholder, requires_grad)
    t._placeholder = placeholder
    return t


def is_lazy(param) -> bool:
    """Whether ``param`` is an ``UninitializedParameter`` or ``UninitializedBuffer``."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (the parameters of lazy modules).

    It holds no data: only moving it to a device, changing its dtype and ``materialize``
    are allowed; using it in an op raises ``ValueError``. ``device`` and ``dtype`` set the
    defaults for the materialized parameter.
    """

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return _make_uninitialized(cls, requires_grad, device, dtype)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (the buffers of lazy modules).

    Like ``UninitializedParameter`` but materializes into a plain ``Tensor``.
    """

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None,
                persistent: bool = True):
        t = _make_uninitialized(cls, requires_grad, device, dtype)
        t.persistent = persistent
        t._is_buffer = True
        return t
