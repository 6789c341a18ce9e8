"""``infer_schema``: an op's schema string from a Python function's type annotations
(PyTorch's ``torch.library.infer_schema``, with its rules and its errors)."""

from __future__ import annotations

import collections.abc
import inspect
import typing
from types import GenericAlias

__all__ = ["infer_schema", "supported_param_types", "SUPPORTED_RETURN_TYPES"]

_UNKNOWN_MUTATES = "unknown"


def _number():
    return int | float | bool  # torch.types.Number


def _derived(base, schema: str, list_base: bool, optional_base_list: bool,
             optional_list_base: bool) -> list:
    result = [(base, schema), (typing.Optional[base], f"{schema}?")]  # noqa: UP045

    def seqs(t):
        return (typing.Sequence[t], typing.List[t],  # noqa: UP006
                GenericAlias(collections.abc.Sequence, (t,)), GenericAlias(list, (t,)))

    if list_base:
        result += [(s, f"{schema}[]") for s in seqs(base)]
    if optional_base_list:
        result += [(s, f"{schema}?[]") for s in seqs(typing.Optional[base])]  # noqa: UP045
    if optional_list_base:
        result += [(typing.Optional[s], f"{schema}[]?") for s in seqs(base)]  # noqa: UP045
    return result


def supported_param_types() -> dict:
    """Python annotation -> schema type, for parameters (PyTorch's table)."""
    from .._device import device
    from .._dtype import dtype
    from .._tensor import Tensor

    rows = [
        (Tensor, "Tensor", True, True, False),
        (int, "SymInt", True, False, True),
        (float, "float", True, False, True),
        (bool, "bool", True, False, True),
        (str, "str", False, False, False),
        (_number(), "Scalar", True, False, False),
        (dtype, "ScalarType", False, False, False),
        (device, "Device", False, False, False),
    ]
    out: dict = {}
    for row in rows:
        out.update(_derived(*row))
    return out


def _return_types() -> dict:
    from .._tensor import Tensor

    return {Tensor: "Tensor", typing.List[Tensor]: "Tensor[]",  # noqa: UP006
            list[Tensor]: "Tensor[]", int: "SymInt", float: "float", bool: "bool",
            _number(): "Scalar"}


class _Lazy(dict):
    """A table built on first use (its keys need ember's Tensor, dtype and device)."""

    def __init__(self, build):
        super().__init__()
        self._build = build

    def _fill(self):
        if not dict.__len__(self):
            self.update(self._build())

    def __getitem__(self, k):
        self._fill()
        return super().__getitem__(k)

    def __contains__(self, k):
        self._fill()
        return super().__contains__(k)

    def __repr__(self):
        self._fill()
        return super().__repr__()

    def keys(self):
        self._fill()
        return super().keys()

    def get(self, k, default=None):
        self._fill()
        return super().get(k, default)


SUPPORTED_PARAM_TYPES = _Lazy(supported_param_types)
SUPPORTED_RETURN_TYPES = _Lazy(_return_types)


def infer_schema(prototype_function: typing.Callable, /, *, mutates_args,
                 op_name: str | None = None) -> str:
    r"""The schema of ``prototype_function`` from its type annotations.

    Every parameter needs an annotation among ``Tensor``, ``int``, ``float``, ``bool``,
    ``str``, ``ember.types.Number`` (``int | float | bool``), ``ember.dtype``,
    ``ember.device``, ``Optional`` of those, and ``list``/``Sequence`` of ``Tensor``, ``int``,
    ``float``, ``bool``, Number (and of ``Optional[Tensor]``); the return annotation is one of
    ``Tensor``, ``list[Tensor]``, ``int``, ``float``, ``bool``, Number, a ``tuple`` of those, or
    ``None`` (nothing returned). ``mutates_args`` names the parameters the function writes
    (they become ``Tensor(a<i>!)``), or is ``"unknown"`` (every Tensor parameter is)::

        >>> def foo_impl(x: ember.Tensor) -> ember.Tensor:
        ...     return x.sin()
        >>> infer_schema(foo_impl, op_name="foo", mutates_args={})
        'foo(Tensor x) -> Tensor'
        >>> infer_schema(foo_impl, mutates_args={})
        '(Tensor x) -> Tensor'
    """
    pf_globals = getattr(prototype_function, "__globals__", {})
    sig = inspect.signature(prototype_function)
    if type(mutates_args) is not str:
        mutates_args = tuple(mutates_args)

    def error_fn(what):
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    def convert_type_string(annotation: str):
        try:
            return eval(annotation, _annotation_namespace(pf_globals))
        except NameError as e:
            error_fn(f"Unsupported type annotation {annotation}. It is not a type. ({e}). If "
                     "you are using 'from __future__ import annotations', note that "
                     "annotations are evaluated lazily as strings; make sure all types "
                     "referenced in annotations are importable at module scope, not only "
                     "inside a local function.")
        except Exception as e:
            error_fn(f"Unsupported type annotation {annotation}. It is not a type. "
                     f"({type(e).__name__}: {e})")

    def unstringify(ty):
        if isinstance(ty, str):
            return convert_type_string(ty)
        origin = typing.get_origin(ty)
        if origin is not None and not isinstance(ty, type(int | float)):
            args = typing.get_args(ty)
            new = tuple(unstringify(a) for a in args)
            if new != args:
                return GenericAlias(origin, new)
        return ty

    params = []
    seen = set()
    saw_kwarg_only = False
    for idx, (name, param) in enumerate(sig.parameters.items()):
        if param.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              inspect.Parameter.KEYWORD_ONLY):
            error_fn("We do not support positional-only args, varargs, or varkwargs.")
        if param.kind == inspect.Parameter.KEYWORD_ONLY and not saw_kwarg_only:
            params.append("*")
            saw_kwarg_only = True
        if param.annotation is inspect.Parameter.empty:
            error_fn(f"Parameter {name} must have a type annotation.")
        annotation = unstringify(param.annotation)
        if annotation not in SUPPORTED_PARAM_TYPES:
            if getattr(annotation, "__origin__", None) is tuple:
                list_type = _tuple_to_list(annotation)
                example = f"For example, {list_type}.\n\n" \
                    if list_type in SUPPORTED_PARAM_TYPES else "\n\n"
                error_fn(f"Parameter {name} has unsupported type {param.annotation}. We do "
                         "not support Tuple inputs in schema. As a workaround, please try to "
                         f"use List instead. {example}The valid types are: "
                         f"{SUPPORTED_PARAM_TYPES.keys()}.")
            error_fn(f"Parameter {name} has unsupported type {param.annotation}. The valid "
                     f"types are: {SUPPORTED_PARAM_TYPES.keys()}.")
        schema_type = SUPPORTED_PARAM_TYPES[annotation]
        if type(mutates_args) is str:
            if mutates_args != _UNKNOWN_MUTATES:
                raise ValueError("mutates_args must either be a sequence of the names of the "
                                 "arguments that are mutated or the string 'unknown'. ")
            if schema_type.startswith("Tensor"):
                schema_type = f"Tensor(a{idx}!){schema_type[len('Tensor'):]}"
        elif name in mutates_args:
            if not schema_type.startswith("Tensor"):
                error_fn(f"Parameter {name} is in mutable_args but only Tensors or "
                         "collections of Tensors can be mutated")
            schema_type = f"Tensor(a{idx}!){schema_type[len('Tensor'):]}"
        seen.add(name)
        if param.default is inspect.Parameter.empty:
            params.append(f"{schema_type} {name}")
        else:
            params.append(f"{schema_type} {name}={_default_repr(param.default, name, error_fn)}")
    if mutates_args != _UNKNOWN_MUTATES:
        not_seen = set(mutates_args) - seen
        if not_seen:
            error_fn(f"{not_seen} in mutates_args were not found in the custom op's "
                     "signature. mutates_args should contain the names of all args that the "
                     "custom op mutates, or just the string 'unknown' if you don't know.")
    ret = _parse_return(unstringify(sig.return_annotation), error_fn)
    if op_name is not None:
        return f"{op_name}({', '.join(params)}) -> {ret}"
    return f"({', '.join(params)}) -> {ret}"


def _annotation_namespace(pf_globals: dict) -> dict:
    """Where a string annotation is evaluated: the function's globals, with PyTorch's rule
    that bare ``Tensor``, ``device``, ``dtype``, ``types`` mean ember's and ``Optional``,
    ``List``, ``Sequence``, ``Union`` mean typing's."""
    import ember

    ns = {"Tensor": ember.Tensor, "device": ember.device, "dtype": ember.dtype,
          "Optional": typing.Optional, "List": typing.List,  # noqa: UP006
          "Sequence": typing.Sequence, "Union": typing.Union, "torch": ember,
          "ember": ember}
    ns.update(pf_globals)
    return ns


def _default_repr(default, name: str, error_fn) -> str:
    from .._device import device
    from .._dtype import dtype

    if default is None or isinstance(default, (int, float, bool)):
        return str(default)
    if isinstance(default, (str, device)):
        return f'"{default}"'
    if isinstance(default, dtype):
        from .._naming import bare

        return bare(default)
    error_fn(f"Parameter {name} has an unsupported default value type {type(default)}. "
             "Please file an issue on GitHub so we can prioritize this.")


def _parse_return(annotation, error_fn) -> str:
    if annotation is None:
        return "()"
    if annotation is inspect.Parameter.empty:
        error_fn("No return type annotation was provided. Please add one.")
    if typing.get_origin(annotation) is not tuple:
        if annotation not in SUPPORTED_RETURN_TYPES:
            error_fn(f"Return has unsupported type {annotation}. The valid types are: "
                     f"{SUPPORTED_RETURN_TYPES}.")
        return SUPPORTED_RETURN_TYPES[annotation]
    args = typing.get_args(annotation)
    for arg in args:
        if arg not in SUPPORTED_RETURN_TYPES:
            error_fn(f"Return has unsupported type {annotation}. The valid types are: "
                     f"{SUPPORTED_RETURN_TYPES}.")
    out = ", ".join(SUPPORTED_RETURN_TYPES[a] for a in args)
    if len(args) == 1:  # a tuple of one value: ((Tensor))
        out = f"({out})"
    return f"({out})"


def _tuple_to_list(tuple_type):
    args = typing.get_args(tuple_type)
    if not args:
        return list
    if len(args) == 1 or len(args) == 2 and args[1] is Ellipsis:
        return list[args[0]]
    return list[typing.Union[args]]  # noqa: UP007
