"""Operator schemas: PyTorch's ``"name.overload(Tensor x, *, int k=1) -> Tensor"`` strings.

:func:`parse_schema` reads one into a :class:`FunctionSchema`; :meth:`FunctionSchema.bind`
checks a call against it the way PyTorch's dispatcher does (argument count, names, types,
defaults filled in) and returns what the kernels receive: the positional parameters as a
tuple, the keyword-only ones as a dict.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field

__all__ = ["FunctionSchema", "Argument", "SchemaType", "AliasInfo", "parse_schema",
           "parse_namespace"]

#: the argument types of PyTorch's schema language that Ember's custom ops take
BASE_TYPES = frozenset({
    "Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType", "Device",
    "Layout", "MemoryFormat", "Generator", "Dimname", "complex", "Any", "Storage", "Stream",
})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_namespace(qualname: str) -> tuple[str, str]:
    """``"ns::name"`` as ``(ns, name)``, with PyTorch's error for any other form."""
    splits = qualname.split("::")
    if len(splits) != 2:
        raise ValueError(f'Expected `qualname` to be of the form "namespace::name", but got '
                         f"{qualname}. The qualname passed to the torch.library APIs must "
                         "consist of a namespace and a name, e.g. aten::sin")
    return splits[0], splits[1]


@dataclass(frozen=True)
class AliasInfo:
    """An alias annotation: ``(a)`` (a view of set ``a``), ``(a!)`` (written in place)."""

    name: str
    is_write: bool = False

    def __str__(self) -> str:
        return f"({self.name}{'!' if self.is_write else ''})"


@dataclass(frozen=True)
class SchemaType:
    """One type of the schema language: ``Tensor``, ``Tensor?``, ``int[2]``, ``Tensor?[]``,
    ``SymInt[]?``, with an alias annotation on tensors."""

    base: str
    optional: bool = False        # the whole value may be None: ``T?`` / ``T[]?``
    is_list: bool = False
    list_size: int | None = None  # ``int[2]``
    elem_optional: bool = False   # ``Tensor?[]``
    alias: AliasInfo | None = None

    def __str__(self) -> str:
        text = self.base + (str(self.alias) if self.alias else "")
        if self.is_list:
            text += ("?" if self.elem_optional else "") + \
                f"[{'' if self.list_size is None else self.list_size}]"
        return text + ("?" if self.optional else "")

    @property
    def is_tensor(self) -> bool:
        return self.base == "Tensor" and not self.is_list

    @property
    def is_tensor_list(self) -> bool:
        return self.base == "Tensor" and self.is_list


_MISSING = object()


@dataclass
class Argument:
    """A parameter (or a return) of a schema."""

    name: str
    type: SchemaType
    default: object = _MISSING    # the parsed value
    default_text: str = ""
    kwarg_only: bool = False

    @property
    def has_default(self) -> bool:
        return self.default is not _MISSING

    @property
    def alias_info(self) -> AliasInfo | None:
        return self.type.alias

    @property
    def is_write(self) -> bool:
        return self.type.alias is not None and self.type.alias.is_write

    def __str__(self) -> str:
        text = str(self.type)
        if self.name:
            text += f" {self.name}"
        if self.has_default:
            text += f"={self.default_text}"
        return text


@dataclass
class FunctionSchema:
    """A parsed schema: ``name``, ``overload_name``, ``arguments``, ``returns``."""

    name: str
    overload_name: str
    arguments: list = field(default_factory=list)
    returns: list = field(default_factory=list)
    qualname: str = ""            # "ns::name" once the op is defined in a namespace
    returns_tuple: bool = False   # "-> ((Tensor))": a tuple of one value

    def __str__(self) -> str:
        name = self.qualname or self.name
        if self.overload_name:
            name += "." + self.overload_name
        params, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                params.append("*")
                star = True
            params.append(str(a))
        return f"{name}({', '.join(params)}) -> {self.returns_text()}"

    def returns_text(self) -> str:
        if self.returns_tuple:
            return f"(({self.returns[0]}))"
        if len(self.returns) == 1 and not self.returns[0].name:
            return str(self.returns[0])
        return f"({', '.join(str(r) for r in self.returns)})"

    # -- properties the library checks ----------------------------------------------------
    @property
    def is_mutable(self) -> bool:
        return any(a.is_write for a in self.arguments)

    @property
    def mutated_arguments(self) -> list:
        return [a for a in self.arguments if a.is_write]

    def is_functional(self, allow_valid_view: bool = False) -> bool:
        """PyTorch's ``is_functional_schema``: mutates nothing, returns something, and (unless
        ``allow_valid_view`` and it has one tensor in and out) returns no view."""
        if self.is_mutable:
            return False
        view = any(r.type.alias is not None and not r.type.alias.is_write for r in self.returns)
        if view:
            n_in = sum(a.type.is_tensor for a in self.arguments)
            n_out = sum(r.type.is_tensor for r in self.returns)
            return allow_valid_view and n_in == 1 and n_out == 1
        return bool(self.returns)

    @property
    def is_view(self) -> bool:
        return any(r.type.alias is not None and not r.type.alias.is_write for r in self.returns)

    def has_kwarg_only_tensors(self) -> bool:
        return any(a.kwarg_only and a.type.base == "Tensor" for a in self.arguments)

    def has_kwarg_only_args(self) -> bool:
        return any(a.kwarg_only for a in self.arguments)

    def has_tensor_arg(self) -> bool:
        return any(a.type.base == "Tensor" for a in self.arguments)

    def device_arg_index(self) -> int | None:
        for i, a in enumerate(self.arguments):
            if a.type.base == "Device" and a.name == "device":
                return i
        return None

    # -- calls ------------------------------------------------------------------------------
    def bind(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """Check a call and return ``(args, kwargs)`` as the kernels get them: every
        positional parameter in ``args`` and every keyword-only one in ``kwargs``, defaults
        filled in, values converted where PyTorch converts (a device string to a device)."""
        params = self.arguments
        n_positional = sum(not a.kwarg_only for a in params)
        if len(args) > n_positional:
            raise RuntimeError(f"{self.qualname}() expected at most {n_positional} "
                               f"argument(s) but received {len(args)} argument(s). "
                               f"Declaration: {self}")
        if kwargs:
            known = {a.name for a in params}
            for k in kwargs:
                if k not in known:
                    raise RuntimeError(f"Unknown keyword argument '{k}' for operator "
                                       f"'{self.qualname}'. Schema: {self}")
        out_args, out_kwargs = [], {}
        for i, a in enumerate(params):
            if i < len(args) and not a.kwarg_only:
                value = args[i]
                if a.name in kwargs:
                    raise RuntimeError(f"{self.qualname}() got multiple values for argument "
                                       f"'{a.name}'. Declaration: {self}")
            elif a.name in kwargs:
                value = kwargs[a.name]
            elif a.has_default:
                value = _copy_default(a.default)
            else:
                raise RuntimeError(f"{self.qualname}() is missing value for argument "
                                   f"'{a.name}'. Declaration: {self}")
            if not (_CLASSES and value.__class__ is _CLASSES[0] and a.type.is_tensor):
                value = self._convert(a, value, i)  # (a plain tensor for a Tensor: as it is)
            if a.kwarg_only:
                out_kwargs[a.name] = value
            else:
                out_args.append(value)
        return tuple(out_args), out_kwargs

    def _convert(self, a: Argument, value, position: int):
        t = a.type
        if value is None and t.optional:
            return None
        try:
            if t.is_list:
                return _convert_list(t, value)
            return _convert_one(t, value)
        except _CastError as exc:
            shown = str(t) if t.base not in ("SymInt",) else str(t).replace("SymInt", "int")
            if t.base == "Scalar" and not t.is_list:  # PyTorch's name for it in this message
                shown = shown.replace("Scalar", "number")
            detail = exc.args[0] if exc.args else f"Unable to cast {value!r} to {shown}"
            raise RuntimeError(
                f"{self.qualname}() Expected a value of type '{shown}' for argument "
                f"'{a.name}' but instead found type '{type(value).__name__}'.\n"
                f"Position: {position}\nValue: {value!r}\nDeclaration: {self}\n"
                f"Cast error details: {detail}") from None


class _CastError(Exception):
    pass


def _copy_default(value):
    return list(value) if isinstance(value, list) else value


_CLASSES: tuple = ()


def _classes() -> tuple:
    """``(Tensor, dtype, device, numpy)``, imported on the first call (this module loads
    before them) and kept: conversions run on every overload call."""
    global _CLASSES
    if not _CLASSES:
        import numpy as np

        from .._device import device as device_cls
        from .._dtype import dtype as dtype_cls
        from .._tensor import Tensor

        _CLASSES = (Tensor, dtype_cls, device_cls, np)
    return _CLASSES


def _one_element(value, Tensor):
    """A one-element tensor's Python number (PyTorch reads int and float arguments from
    them), else ``_CastError``."""
    if isinstance(value, Tensor) and value.numel() == 1:
        return value.item()
    raise _CastError


def _convert_one(t: SchemaType, value, elem_optional: bool = False):
    Tensor, dtype_cls, device_cls, np = _CLASSES or _classes()
    if value is None and (elem_optional or t.optional):
        return None
    base = t.base
    if base == "Tensor":
        if isinstance(value, Tensor):
            return value
        raise _CastError
    if base in ("int", "SymInt"):
        if isinstance(value, bool):
            raise _CastError
        if isinstance(value, Tensor):
            return int(_one_element(value, Tensor))
        try:
            return operator.index(value)
        except TypeError:
            raise _CastError from None
    if base == "float":
        if isinstance(value, bool) or isinstance(value, complex):
            raise _CastError
        if isinstance(value, Tensor):
            return float(_one_element(value, Tensor))
        try:
            return float(value)
        except (TypeError, ValueError):
            raise _CastError from None
    if base == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, np.bool_):
            return bool(value)
        raise _CastError
    if base == "str":
        if isinstance(value, str):
            return value
        raise _CastError
    if base == "Scalar":  # a Python number only: PyTorch refuses tensors here, 0-d included
        if isinstance(value, (bool, int, float, complex)):
            return value
        if isinstance(value, np.generic):
            return value.item()
        raise _CastError(f"Cannot cast {value!s} to number")
    if base == "complex":
        if isinstance(value, (int, float, complex)) and not isinstance(value, bool):
            return complex(value)
        raise _CastError
    if base == "ScalarType":
        if isinstance(value, dtype_cls):
            return value
        raise _CastError
    if base == "Device":
        if isinstance(value, device_cls):
            return value
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            try:
                return device_cls(value)
            except (RuntimeError, ValueError, TypeError):
                raise _CastError from None
        raise _CastError
    return value  # Layout, MemoryFormat, Generator, Any...: passed as they are


def _convert_list(t: SchemaType, value):
    from .._tensor import Tensor

    if value is None and t.optional:
        return None
    if t.base != "Tensor" and t.list_size is not None and not isinstance(value, (list, tuple)):
        # ``int[2] stride=1``: one value stands for the whole list, as in PyTorch
        return [_convert_one(t, value)] * t.list_size
    if isinstance(value, Tensor) or not isinstance(value, (list, tuple)):
        raise _CastError
    return [_convert_one(t, v, t.elem_optional) for v in value]


# -- parsing ---------------------------------------------------------------------------------

class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.i = 0

    def error(self, expected: str):
        self.skip()
        if self.i >= len(self.text):
            found = "eof"
        else:
            m = _NAME.match(self.text, self.i)
            found = "ident" if m else self.text[self.i]
        raise RuntimeError(f"expected {expected} but found '{found}' here:\n{self.text}\n"
                           f"{' ' * self.i}~ <--- HERE")

    def skip(self) -> None:
        while self.i < len(self.text) and self.text[self.i].isspace():
            self.i += 1

    def peek(self, s: str) -> bool:
        self.skip()
        return self.text.startswith(s, self.i)

    def accept(self, s: str) -> bool:
        if self.peek(s):
            self.i += len(s)
            return True
        return False

    def expect(self, s: str) -> None:
        if not self.accept(s):
            self.error(f"'{s}'")

    def name(self) -> str:
        self.skip()
        m = _NAME.match(self.text, self.i)
        if not m:
            self.error("ident")
        self.i = m.end()
        return m.group()

    def at_end(self) -> bool:
        self.skip()
        return self.i >= len(self.text)

    # -- grammar ----------------------------------------------------------------------------
    def schema(self, need_name: bool) -> FunctionSchema:
        name = overload = ""
        if need_name or not self.peek("("):
            name = self.name()
            if self.accept("."):
                overload = self.name()
            if not self.peek("("):
                self.error("eof" if not self.at_end() else "'('")
        self.expect("(")
        args: list = []
        kwarg_only = False
        if not self.accept(")"):
            while True:
                if self.accept("*"):
                    kwarg_only = True
                else:
                    args.append(self.argument(kwarg_only))
                if self.accept(")"):
                    break
                self.expect(",")
        self.expect("->")
        returns, as_tuple = self.returns()
        if not self.at_end():
            self.error("eof")
        seen = set()
        for a in args:
            if a.name in seen:
                raise RuntimeError(f"duplicate argument name '{a.name}' in schema "
                                   f"{self.text!r}")
            seen.add(a.name)
        return FunctionSchema(name, overload, args, returns, returns_tuple=as_tuple)

    def type(self) -> SchemaType:
        base = self.name()
        if base not in BASE_TYPES:
            raise RuntimeError(f"Unknown type name '{base}':\n{self.text}")
        alias = self.alias()
        is_list = elem_optional = optional = False
        size = None
        if self.accept("?"):
            optional = True
        if self.accept("["):
            is_list = True
            elem_optional, optional = optional, False
            self.skip()
            m = re.match(r"\d+", self.text[self.i:])
            if m:
                size = int(m.group())
                self.i += m.end()
            self.expect("]")
            if self.accept("?"):
                optional = True
        if alias is None:
            alias = self.alias()
        return SchemaType(base, optional, is_list, size, elem_optional, alias)

    def alias(self) -> AliasInfo | None:
        if not self.peek("("):
            return None
        self.expect("(")
        name = self.name()
        write = self.accept("!")
        if self.accept("->"):  # "(a -> *)": a set that also aliases the wildcard
            self.accept("*")
        self.expect(")")
        return AliasInfo(name, write)

    def argument(self, kwarg_only: bool) -> Argument:
        t = self.type()
        name = self.name()
        if not self.accept("="):
            return Argument(name, t, kwarg_only=kwarg_only)
        start = self.i
        value = self.default()
        text = self.text[start:self.i].strip()
        return Argument(name, t, value, text, kwarg_only)

    def default(self):
        self.skip()
        if self.accept("["):
            items = []
            if not self.accept("]"):
                while True:
                    items.append(self.default())
                    if self.accept("]"):
                        break
                    self.expect(",")
            return items
        text = self.text
        if self.i < len(text) and text[self.i] in "\"'":
            quote = text[self.i]
            end = text.find(quote, self.i + 1)
            if end < 0:
                self.error("a closing quote")
            value = text[self.i + 1:end]
            self.i = end + 1
            return value
        m = re.match(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?|[-+]?inf\b|nan\b",
                     text[self.i:])
        if m:
            self.i += m.end()
            s = m.group()
            if re.fullmatch(r"[-+]?\d+", s):
                return int(s)
            return float(s)
        word = self.name()
        if word == "None":
            return None
        if word in ("True", "False"):
            return word == "True"
        import ember

        value = getattr(ember, word, None)  # float32, contiguous_format, strided...
        return value if value is not None else word

    def returns(self) -> tuple[list, bool]:
        """The returns, and whether they are a one-tuple (``((Tensor))``)."""
        if not self.accept("("):
            return [self.ret()], False
        if self.accept("("):
            inner = self.ret()
            self.expect(")")
            self.expect(")")
            return [inner], True
        rets = []
        if not self.accept(")"):
            while True:
                rets.append(self.ret())
                if self.accept(")"):
                    break
                self.expect(",")
        return rets, False

    def ret(self) -> Argument:
        t = self.type()
        self.skip()
        m = _NAME.match(self.text, self.i)
        name = ""
        if m:
            name = m.group()
            self.i = m.end()
        return Argument(name, t)


def parse_schema(text: str, *, need_name: bool = True) -> FunctionSchema:
    """Parse a schema string (RuntimeError, pointing at the place, when it is malformed)."""
    if not isinstance(text, str):
        raise TypeError(f"a schema is a string, got {type(text).__name__}")
    return _Parser(text).schema(need_name)
