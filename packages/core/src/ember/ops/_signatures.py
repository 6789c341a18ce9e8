"""PyTorch's argument-parser errors for the ops whose Python signatures Ember mirrors.

PyTorch binds a call to one of an op's Python signatures (``python_arg_parser.cpp``); when
none takes the arguments it raises a TypeError in one of two words: with a single plausible
signature (by argument count) the argument that does not fit ("fmod(): argument 'other'
(position 2) must be Tensor, not str"), else "received an invalid combination of arguments"
with every signature listed (``invalid_arguments.cpp``). ``SIGNATURES`` holds the signatures
as PyTorch prints them, in its order; ``parser_error`` words the error from them.

Nothing here runs on a call that succeeds: an op asks only once its arguments have already
failed (a string where a number goes), or on a path that a refused call alone takes (a number
first where no signature has a ``Number self``: ``ember.fmod(2, t)``).
"""

from __future__ import annotations

import os

__all__ = ["SIGNATURES", "UNARY", "check_binds", "out_needs_tensor_first", "parser_error",
           "refuse_input", "refuses_number_first"]

_TT = "(Tensor input, Tensor other, *, Tensor out = None)"
_TN = "(Tensor input, Number other, *, Tensor out = None)"
_NT = "(Number self, Tensor other)"

#: the Python signatures of PyTorch's ``torch.<name>`` (``str(e)`` of its parser's error)
SIGNATURES: dict[str, tuple[str, ...]] = {
    **{n: (_TT, _TN) for n in ("eq", "ne", "lt", "le", "gt", "ge", "fmod", "copysign")},
    **{n: (_TT, _NT, _TN) for n in ("remainder", "bitwise_and", "bitwise_or", "bitwise_xor",
                                     "bitwise_left_shift", "bitwise_right_shift")},
    **{n: ("(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)",)
       for n in ("add", "sub")},
    "subtract": ("(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)",
                 "(Tensor input, Number other, Number alpha = 1)"),
    **{n: ("(Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)",
           "(Tensor input, Number min = None, Number max = None, *, Tensor out = None)")
       for n in ("clamp", "clip")},
    **{n: ("(Tensor input, Tensor min = None, Tensor max = None)",
           "(Tensor input, Number min = None, Number max = None)") for n in ("clamp_", "clip_")},
    **{f"clamp_{b}": (f"(Tensor input, Tensor {b}, *, Tensor out = None)",
                      f"(Tensor input, Number {b}, *, Tensor out = None)") for b in ("min", "max")},
    **{f"clamp_{b}_": (f"(Tensor input, Tensor {b})", f"(Tensor input, Number {b})")
       for b in ("min", "max")},
    **{n: ("(Tensor input, *, Tensor out = None)", _TT,
           "(Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None)")
       for n in ("max", "min")},
    "searchsorted": tuple(f"(Tensor sorted_sequence, {v}, *, bool out_int32 = False, bool right = "
                          "False, str side = None, Tensor sorter = None, Tensor out = None)"
                          for v in ("Tensor input", "Number self")),
    "histogram": ("(Tensor input, Tensor bins, *, Tensor weight = None, bool density = False, "
                  "tuple of Tensors out = None)",
                  "(Tensor input, int bins = 100, *, tuple of floats range = None, Tensor weight "
                  "= None, bool density = False, tuple of Tensors out = None)"),
    "xlogy": (_TT, "(Number self, Tensor other, *, Tensor out = None)", _TN),
    "xlogy_": ("(Tensor input, Tensor other)", "(Tensor input, Number other)"),
    "ldexp_": ("(Tensor input, Tensor other)",),
    "mul": (_TT,),
    **{n: (_TT, "(Tensor input, Number other)") for n in ("multiply", "true_divide",
                                                          "floor_divide")},
    **{n: (_TT, "(Tensor input, Tensor other, *, str rounding_mode, Tensor out = None)",
           *(("(Tensor input, Number other)",) if n == "divide" else ()),
           "(Tensor input, Number other, *, str rounding_mode)") for n in ("div", "divide")},
    "rsub": ("(Tensor input, Tensor other, *, Number alpha = 1)",
             "(Tensor input, Number other, Number alpha = 1)"),
    **{f"atleast_{n}d": ("(Tensor input)", "(tuple of Tensors tensors)") for n in (1, 2, 3)},
    "slice_scatter": ("(Tensor input, Tensor src, int dim = 0, int start = None, int end = None, "
                      "int step = 1)",),
    **{n: (_TT,) for n in ("kron", "inner")},
    **{n: ("(Tensor input, Tensor vec2, *, Tensor out = None)",) for n in ("outer", "ger")},
    "dist": ("(Tensor input, Tensor other, Number p = 2)",),
    **{n: ("(Tensor input, Tensor other)",) for n in ("equal", "is_same_size")},
    "isin": tuple(f"({a}, {b}, *, bool assume_unique = False, bool invert = False, Tensor out "
                  "= None)" for a, b in (("Tensor elements", "Tensor test_elements"),
                                         ("Number element", "Tensor test_elements"),
                                         ("Tensor elements", "Number test_element"))),
    **{n: ("(Tensor y, Tensor x, *, int dim = -1)", "(Tensor y, *, Number dx = 1, int dim = -1)")
       for n in ("trapezoid", "cumulative_trapezoid")},
    "trapz": ("(Tensor y, *, float dx = 1, int dim = -1)", "(Tensor y, Tensor x, *, int dim = -1)"),
    "normal": tuple(f"({a}, {b}, *, torch.Generator generator = None, Tensor out = None{c})"
                    for a, b, c in (("Tensor mean", "Tensor std", ""),
                                    ("Tensor mean", "float std = 1", ""),
                                    ("float mean", "Tensor std", ""),
                                    ("float mean", "float std, tuple of ints size",
                                     ", torch.dtype dtype = None, torch.layout layout = None, "
                                     "torch.device device = None, bool pin_memory = False, "
                                     "bool requires_grad = False"))),
    "linalg_vecdot": ("(Tensor x, Tensor y, *, int dim = -1, Tensor out = None)",),
    # what torch.nn.functional passes on positionally to the bindings it calls
    "pairwise_distance": ("(Tensor x1, Tensor x2, float p = 2, float eps = 1e-06, "
                          "bool keepdim = False)",),
    "cosine_similarity": ("(Tensor x1, Tensor x2, int dim = 1, float eps = 1e-08)",),
    "cross_entropy_loss": ("(Tensor input, Tensor target, Tensor weight = None, int reduction = "
                           "1, SymInt ignore_index = -100, float label_smoothing = 0.0)",),
    "nll_loss_nd": ("(Tensor input, Tensor target, Tensor weight = None, int reduction = 1, "
                    "SymInt ignore_index = -100)",),
    "kl_div": ("(Tensor input, Tensor target, int reduction = 1, *, bool log_target = False)",),
    **{n: ("(Tensor input, Tensor target, int reduction = 1, *, Tensor out = None)",)
       for n in ("soft_margin_loss", "multilabel_margin_loss")},
    "hinge_embedding_loss": ("(Tensor input, Tensor target, float margin = 1.0, int reduction "
                             "= 1)",),
    "poisson_nll_loss": ("(Tensor input, Tensor target, bool log_input, bool full, float eps, "
                         "int reduction)",),
    "cosine_embedding_loss": ("(Tensor input1, Tensor input2, Tensor target, float margin = "
                              "0.0, int reduction = 1)",),
    "multi_margin_loss": ("(Tensor input, Tensor target, Number p = 1, Number margin = 1, "
                          "Tensor weight = None, int reduction = 1, *, Tensor out = None)",),
    "triplet_margin_loss": ("(Tensor anchor, Tensor positive, Tensor negative, float margin = "
                            "1.0, float p = 2, float eps = 1e-06, bool swap = False, int "
                            "reduction = 1)",),
}

#: ``torch.nn.functional``'s reduction names as the enum its bindings take
REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}

#: PyTorch's ``should_allow_numbers_as_tensors``: their ``Tensor`` parameters take numbers
_NUMBERS_AS_TENSORS = frozenset(("add", "sub", "subtract", "mul", "multiply", "div", "divide",
                                 "true_divide", "floor_divide"))


def refuses_number_first(name: str) -> bool:
    """Whether PyTorch refuses a Python number as ``name``'s first operand: no signature of
    it starts with a ``Number`` (``fmod``, ``eq``; not ``remainder``, ``pow``)."""
    sigs = SIGNATURES.get(name)
    if sigs is None or name in _NUMBERS_AS_TENSORS:
        return False
    return not any(_params(s)[0][0] == "Number" for s in sigs)


def out_needs_tensor_first(name: str) -> bool:
    """Whether ``name``'s signatures that start with a ``Number`` take no ``out=``, so that
    ``out=`` needs a tensor first (``remainder``, ``bitwise_and``)."""
    sigs = SIGNATURES.get(name)
    if sigs is None or name in _NUMBERS_AS_TENSORS:
        return False
    firsts = [s for s in sigs if _params(s)[0][0] == "Number"]
    return bool(firsts) and not any("out" in (p[1] for p in _params(s)) for s in firsts)


def check_binds(name: str, args: tuple, kwargs: dict | None = None) -> None:
    """Raise PyTorch's parser error for ``name`` when no signature of it takes ``args`` and
    ``kwargs``; return when one does. For the ``except`` of an op whose arguments already
    failed: ``except AttributeError: check_binds(...); raise`` (the op's own error stands
    when the parser would have taken the arguments)."""
    kwargs = kwargs or {}
    allow = name in _NUMBERS_AS_TENSORS
    for sig in SIGNATURES[name]:
        params = _params(sig)
        positional = [p for p in params if not p[3]]
        if len(args) > len(positional):
            continue
        given = dict(zip((p[1] for p in positional), args))
        if any(k in given for k in kwargs):
            continue
        given.update(kwargs)
        by_name = {p[1]: p for p in params}
        if any(k not in by_name for k in given) \
                or any(not d and n not in given for _, n, d, _ in params):
            continue
        if all((x is None and _optional(sig, k)) or _fits(by_name[k][0], x, allow)
               for k, x in given.items()):
            return
    raise parser_error(name, args, kwargs) from None


def _optional(sig: str, name: str) -> bool:
    """Whether ``sig``'s parameter ``name`` defaults to None (takes None)."""
    return f" {name} = None" in sig


def _params(sig: str) -> list[tuple[str, str, bool, bool]]:
    """``(type, name, has default, keyword-only)`` of each parameter of ``sig``."""
    out, kwonly = [], False
    for part in sig[1:-1].split(", "):
        if part == "*":
            kwonly = True
            continue
        decl, _, default = part.partition(" = ")
        typ, _, name = decl.rpartition(" ")
        out.append((typ, name, bool(default), kwonly))
    return out


def _tp_name(x) -> str:
    from .._factory import tp_name

    return tp_name(x)


def _is_number(x) -> bool:
    import numbers

    from .._tensor import Tensor

    return isinstance(x, numbers.Number) and not isinstance(x, Tensor)


def _fits(typ: str, x, numbers_as_tensors: bool) -> bool:
    """Whether the parser binds ``x`` to a parameter of type ``typ`` (the types above)."""
    from .._tensor import Tensor

    if typ == "Tensor":
        return isinstance(x, Tensor) or (numbers_as_tensors and _is_number(x))
    if typ == "Number":
        return _is_number(x) or (isinstance(x, Tensor) and x.dim() == 0
                                 and not x.requires_grad)
    if typ in ("int", "bool", "float"):  # a 0-dim tensor of the kind, or the Python type
        import numbers

        if isinstance(x, Tensor):
            return x.dim() == 0 and (typ == "float" or x.dtype.is_floating_point is False)
        want = {"int": numbers.Integral, "bool": bool, "float": numbers.Real}[typ]
        return isinstance(x, want) and not (typ == "int" and isinstance(x, bool))
    if typ == "str":
        return isinstance(x, str)
    if typ.startswith("tuple of "):
        inner = {"Tensors": "Tensor", "floats": "float", "ints": "int"}[typ[9:]]
        return isinstance(x, (tuple, list)) and all(_fits(inner, v, False) for v in x)
    return True


#: the Python signature of PyTorch's ops of one tensor: its elementwise ops (``exp``, ``abs``,
#: ``special_expit``, ...; a few lack the ``out``, which a one-argument call never shows)
UNARY = ("(Tensor input, *, Tensor out = None)",)


def refuse_input(name: str, input) -> None:
    """For the ``except AttributeError`` of an op of one tensor whose ``input._data`` failed:
    PyTorch's parser error when ``input`` is no tensor (``abs(): argument 'input' (position
    1) must be Tensor, not str``), by ``UNARY`` unless ``SIGNATURES`` has the op; returns
    for a tensor (the op's own error stands)."""
    from .._tensor import Tensor

    if not isinstance(input, Tensor):
        SIGNATURES.setdefault(name, UNARY)  # (a front's ``out=`` rewording looks it up)
        raise parser_error(name, (input,)) from None


def parser_error(name: str, args: tuple, kwargs: dict | None = None) -> TypeError:
    """The TypeError PyTorch's parser raises when no signature of ``name`` takes ``args``
    and ``kwargs`` (``PythonArgParser::print_error``)."""
    kwargs = kwargs or {}
    sigs = SIGNATURES[name]
    parsed = [_params(s) for s in sigs]
    n = len(args) + len(kwargs)
    plausible = [(p, s) for p, s in zip(parsed, sigs)
                 if sum(not d for _, _, d, _ in p) <= n <= len(p)]
    err = _argument_error(name, *plausible[0], args, kwargs) if len(plausible) == 1 else None
    if err is None:
        err = TypeError(_invalid_combination(f"{name}()", sigs, args, kwargs))
    err.parser_call = (name, args, kwargs)  # for a front that adds what the kernel never saw
    return err


def _argument_error(name, params, sig, args, kwargs) -> TypeError | None:
    """The one signature's complaint about the first argument that does not fit it."""
    allow = name in _NUMBERS_AS_TENSORS
    for i, (x, (typ, pname, has_default, _)) in enumerate(zip(args, params)):
        if x is None and has_default and (typ == "Tensor" or _optional(sig, pname)):
            continue  # ``Tensor? weight``, ``SymInt? start = None`` take None
        if not _fits(typ, x, allow):
            return TypeError(f"{name}(): argument '{pname}' (position {i + 1}) must be {typ}, "
                             f"not {_tp_name(x)}")
    by_name = {p[1]: p[0] for p in params}
    for key, x in kwargs.items():
        typ = by_name.get(key)
        if typ is not None and not (typ == "Tensor" and x is None) and not _fits(typ, x, allow):
            return TypeError(f"{name}(): argument '{key}' must be {typ}, not {_tp_name(x)}")
    return None


#: the Python type names a signature's type matches in ``invalid_arguments.cpp`` (by name)
_ACCEPTS = {"float": ("float", "int", "long"), "int": ("int", "long")}


def _describe(x) -> str:
    """An argument as ``_formattedArgDesc`` prints it: lists and tuples with their items."""
    if isinstance(x, (list, tuple)):
        items = ", ".join(_tp_name(v) for v in x)
        if isinstance(x, tuple):
            return f"{_tp_name(x)} of ({items}{',' if len(x) == 1 else ''})"
        return f"{_tp_name(x)} of [{items}]"
    return _tp_name(x)


def _got_types(args: tuple, kwargs: dict, type_name=None) -> str:
    """What ``torch::format_invalid_args`` prints between the parentheses after "got": the
    arguments' types, then the keywords as ``name=type``. PyTorch keeps the keywords in a C++
    hash map; with the few a call has, it prints them last given first, and a call without
    positional arguments keeps its trailing ``", "``."""
    type_name = type_name or _tp_name
    got = "".join(f"{type_name(a)}, " for a in args)
    got += "".join(f"{k}={type_name(v)}, " for k, v in reversed(kwargs.items()))
    return got[:-2] if args else got


def _invalid_combination(fname: str, sigs, args: tuple, kwargs: dict) -> str:
    """``torch::format_invalid_args`` for several signatures: the types got, then each
    signature, with why it did not match where the argument count fits it."""
    kw = list(reversed(kwargs.items()))
    got = "(" + _got_types(args, kwargs) + ")"
    tty = os.isatty(1) and os.isatty(2)
    red, reset = ("\33[31;1m", "\33[0m") if tty else ("!", "!")
    green, reset_green = ("\33[32;1m", "\33[0m") if tty else ("", "")
    lines = [f"{fname} received an invalid combination of arguments - got {got}, but expected "
             "one of:\n"]
    for sig in sigs:
        lines.append(f" * {sig}\n")
        # as invalid_arguments.cpp reads a signature: split on ", " (the "*" of keyword-only
        # parameters counts too), the name after the last space, the type before it
        parts = sig[1:-1].split(", ")
        names = [part.rpartition(" ")[2] for part in parts]
        types = [part.rpartition(" ")[0] for part in parts]
        if len(args) + len(kwargs) != len(names):
            continue
        start = max(len(names) - len(kwargs), 0)
        wrong = [k for k, _ in kw if k not in names[start:]]
        if wrong:
            lines.append("      didn't match because some of the keywords were incorrect: "
                         f"{', '.join(wrong)}\n")
            continue
        got_types = []
        for i in range(len(args) + len(kwargs)):
            x = args[i] if i < len(args) else kwargs[names[i]]
            ok = _tp_name(x) in _ACCEPTS.get(types[i], (types[i],))
            key = "" if i < len(args) else f"{names[i]}="
            got_types.append(f"{green if ok else red}{key}{_describe(x)}"
                             f"{reset_green if ok else reset}")
        lines.append("      didn't match because some of the arguments have invalid types: "
                     f"({', '.join(got_types)})\n")
    return "".join(lines)
