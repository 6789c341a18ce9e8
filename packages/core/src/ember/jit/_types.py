"""TorchScript's type objects as PyTorch exposes them at the top level (``torch.TensorType``,
``torch.DeviceObjType``, ``torch.ListType``, ...; also ``torch._C.<name>``).

Ember has no TorchScript type system; model code names these classes mostly as annotations
(``def set_steps(self, n: int, device: torch.DeviceObjType)``, the DDIM tutorial) or builds and
prints them. The parameterless ones have PyTorch's ``get()`` singleton and ``str``
(``str(torch.DeviceObjType.get()) == "Device"``); the containers take their element types
(``str(torch.ListType(torch.IntType.get())) == "List[int]"``, ``getElementType()``) and compare
by them. Nothing in Ember checks values against them."""

from __future__ import annotations

__all__ = ["JIT_TYPE_NAMES", "jit_type"]


class Type:
    """``torch.Type``: the base of the TorchScript type classes."""

    _str = "Type"

    def __str__(self) -> str:
        return self._str

    __repr__ = __str__

    @property
    def annotation_str(self) -> str:
        return str(self)

    def kind(self) -> str:
        return type(self).__name__

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash((type(self).__name__, str(self)))


class _Singleton(Type):
    @classmethod
    def get(cls):
        inst = cls.__dict__.get("_singleton")
        if inst is None:
            inst = object.__new__(cls)
            cls._singleton = inst
        return inst


class _Container(Type):
    """A type of other types: ``List[int]``, ``Optional[Tensor]``, ``Dict[str, Tensor]``."""

    _arity: int | None = 1  # None: a list of any length (Tuple, Union)

    def __init__(self, *types) -> None:
        if self._arity is None:
            if len(types) != 1 or not isinstance(types[0], (list, tuple)):
                raise TypeError(f"{type(self).__name__}() takes a list of types")
            types = tuple(types[0])
        elif len(types) != self._arity:
            raise TypeError(f"{type(self).__name__}() takes {self._arity} type"
                            f"{'s' if self._arity > 1 else ''}, got {len(types)}")
        for t in types:
            if not isinstance(t, Type):
                raise TypeError(f"{type(self).__name__}(): expected a type, got "
                                f"{type(t).__name__}")
        self._types = types

    def containedTypes(self) -> list:
        return list(self._types)

    def getElementType(self):
        return self._types[0]

    def __str__(self) -> str:
        inner = sorted(map(str, self._types)) if type(self).__name__ == "UnionType" \
            else map(str, self._types)
        return f"{self._str}[{', '.join(inner)}]"


#: parameterless classes -> PyTorch's str() of their get() instance
_SINGLETONS = {
    "AnyType": "Any", "BoolType": "bool", "ComplexType": "complex", "DeviceObjType": "Device",
    "FloatType": "float", "IntType": "int", "NoneType": "NoneType", "NumberType": "number",
    "PyObjectType": "PyObject", "StreamObjType": "Stream", "StringType": "str",
    "SymBoolType": "bool", "SymIntType": "int", "TensorType": "Tensor",
}
#: containers -> (str prefix, how many element types; None: a list of them)
_CONTAINERS = {
    "ListType": ("List", 1), "OptionalType": ("Optional", 1), "FutureType": ("Future", 1),
    "AwaitType": ("Await", 1), "RRefType": ("RRef", 1), "DictType": ("Dict", 2),
    "TupleType": ("Tuple", None), "UnionType": ("Union", None),
}

JIT_TYPE_NAMES = frozenset(_SINGLETONS) | frozenset(_CONTAINERS) | {"Type"}
_CLASSES: dict = {"Type": Type}


def jit_type(name: str):
    """The class ``torch.<name>`` (made on first use)."""
    cls = _CLASSES.get(name)
    if cls is None:
        doc = f"``torch.{name}`` (a TorchScript type)."
        if name in _SINGLETONS:
            cls = type(name, (_Singleton,), {"_str": _SINGLETONS[name], "__module__": "ember",
                                             "__doc__": doc})
        else:
            prefix, arity = _CONTAINERS[name]
            cls = type(name, (_Container,), {"_str": prefix, "_arity": arity,
                                             "__module__": "ember", "__doc__": doc})
            if name == "ListType":
                cls.ofInts = staticmethod(lambda: cls(jit_type("IntType").get()))
                cls.ofTensors = staticmethod(lambda: cls(jit_type("TensorType").get()))
        _CLASSES[name] = cls
    return cls


Type.__module__ = "ember"
