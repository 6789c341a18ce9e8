"""The public face of an op: PyTorch's NumPy-compatible keyword names and ``out=``.

PyTorch's argument parser lets every native function and Tensor method take its ``dim`` as
``axis=``, ``keepdim`` as ``keepdims=``, ``input`` as ``x=``, ``a=`` or ``x1=`` and ``other``
as ``x2=`` (``t.sum(axis=0)``, ``torch.mean(t, axis=1, keepdims=True)``,
``torch.linalg.vector_norm(x=t)``). ``front(kernel)`` gives a kernel written with PyTorch's
own names the same manners, and, with ``out=``, PyTorch's ``out=`` keyword (the result
written by ``write_out``).

The front is generated code with the kernel's exact parameters plus a ``**kwargs`` catch
(one per parameter *shape*, compiled once: ~270 shapes, ~20 ms of ``import ember``), so the
common call is one extra Python frame that forwards its arguments as they came: 0.06-0.1 us
more than the kernel itself (the ``*args, **kwargs`` wrapper it replaces for ``out=`` cost
~0.15 us: ``ember.exp(t)`` went 0.87 -> 0.80 us). That is why the registry gives fronts only
to ops with a ``dim``/``keepdim`` or ``out=`` (``front(hot=True)``). A call that uses an
alias, leaves a required argument out or passes an unknown keyword takes the slow path,
which resolves the aliases and lets the kernel raise Python's own error for the rest.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

__all__ = ["NUMPY_ALIASES", "front", "aliases_of", "method_aliases", "write_results"]

#: PyTorch's table (``python_arg_parser.cpp``): the NumPy names each parameter also answers to
NUMPY_ALIASES = {"dim": ("axis",), "keepdim": ("keepdims",), "input": ("x", "a", "x1"),
                 "other": ("x2",)}


def _aliases(fn) -> dict:
    """The NumPy aliases, plus what ``fn._ember_param_aliases`` adds for its own parameters
    (``split``: ``split_size``, the Tensor method's name of ``split_size_or_sections``)."""
    extra = getattr(fn, "_ember_param_aliases", None)
    if not extra:
        return NUMPY_ALIASES
    return {**NUMPY_ALIASES, **{p: NUMPY_ALIASES.get(p, ()) + a for p, a in extra.items()}}


class _Missing:
    """The default of a required parameter that an alias may supply instead."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<required>"


_NA = _Missing()
_DIM_NAMES = frozenset(("dim", "keepdim"))
_POS = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_VAR = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def aliases_of(fn) -> dict:
    """``{alias: parameter}`` that the public function ``fn`` also accepts: a front's, or
    what ``fn._ember_aliases`` declares (an in-place variant's); else empty."""
    spec = getattr(fn, "_ember_front", None)
    if spec is None:  # code that takes the keywords as a dict and renames them itself
        return dict(getattr(fn, "_ember_aliases", {}))
    return {a: p for p, alts in spec.aliases.items() for a in alts}


def method_aliases(fn) -> dict:
    """``{alias: parameter}`` of the NumPy names that the method ``fn`` (first parameter
    ``self``) answers to, as its front would: for code that takes the keywords as a dict."""
    try:
        params = list(inspect.signature(fn).parameters.values())[1:]
    except (TypeError, ValueError):
        return {}
    names = {p.name for p in params}
    table = _aliases(fn)
    return {a: p.name for p in params if p.kind not in _VAR and p.kind is not p.POSITIONAL_ONLY
            for a in table.get(p.name, ()) if a not in names}


def method_positions(fn) -> dict:
    """``{parameter: index}`` of the method ``fn``'s positional parameters after ``self``."""
    try:
        params = list(inspect.signature(fn).parameters.values())[1:]
    except (TypeError, ValueError):
        return {}
    return {p.name: i for i, p in enumerate(params) if p.kind in _POS}


def write_results(result, out, op_name: str, dtype_rule: str, inputs=None):
    """``out=``: write ``result`` (a tensor or a tuple of them) into ``out`` and return it
    (``inputs``: the op's arguments, for ``write_out``'s memory-overlap checks)."""
    write_out = _WRITE_OUT[0]
    if write_out is None:  # (an import statement per call costs ~0.3 us: out= is hot)
        from .ops._inplace import write_out

        _WRITE_OUT[0] = write_out
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{op_name}(): argument 'out' must be a tuple of "
                            f"{len(result)} Tensors")
        written = [write_out(o, r, op_name, dtype_rule) for o, r in zip(out, result)]
        return type(result)(*written) if hasattr(result, "_fields") else tuple(written)
    return write_out(out, result, op_name, dtype_rule, inputs)


_WRITE_OUT: list = [None]  # ``ops._inplace.write_out``, imported on first use (a cycle)


class _Spec:
    """What a front's slow path needs: the kernel's parameters and the aliases."""

    __slots__ = ("name", "aliases", "defaults", "positional", "out_rule")

    def __init__(self, name, aliases, defaults, positional, out_rule):
        self.name = name
        self.aliases = aliases      # {parameter: (alias, ...)}
        self.defaults = defaults    # {parameter: its default}, for the conflict check
        self.positional = positional  # the positional parameters' names, in order
        self.out_rule = out_rule    # out='s dtype rule, or None: the front takes no out=


def _slow(fn, spec: _Spec, values: dict, extra: dict):
    """A call that named an alias, left a required argument out, or passed an unknown
    keyword: resolve the aliases, then call the kernel by keyword (it raises Python's own
    error for whatever is still wrong)."""
    for param, alts in spec.aliases.items():
        given = None
        for alt in alts:
            if alt not in extra:
                continue
            cur = values[param]
            if given is not None or (cur is not _NA and cur is not spec.defaults.get(param, _NA)):
                raise TypeError(f"{spec.name}() got an unexpected keyword argument '{alt}'")
            given = alt
            values[param] = extra.pop(alt)
    out = values.pop("out", None) if spec.out_rule is not None else None
    args = []  # the leading positional parameters by position (a kernel's own names may
    for n in spec.positional:  # differ from its signature's: self for input)
        if values[n] is _NA:
            break
        args.append(values.pop(n))
    kwargs = {n: v for n, v in values.items() if v is not _NA}
    kwargs.update(extra)
    if out is None:
        return fn(*args, **kwargs)
    try:
        result = fn(*args, **kwargs)
    except NotImplementedError as err:
        raise _out_overload(err, spec.name) from None
    return write_results(result, out, spec.name, spec.out_rule)


def _with_out(err: TypeError, out) -> TypeError:
    """The argument parser's error ``err`` (``ops._signatures.parser_error``, raised by the
    kernel, which never sees ``out=``) as PyTorch words it for the call with ``out=``."""
    from .ops._signatures import parser_error

    name, args, kwargs = err.parser_call
    return parser_error(name, args, {**kwargs, "out": out})


def _out_overload(err: NotImplementedError, op_name: str) -> NotImplementedError:
    """The dispatcher's refusal ``err`` of the op itself (``Could not run 'aten::baddbmm'
    ...``, a sparse argument it has no kernel for) as PyTorch words it for the call with
    ``out=``: its ``.out`` overload's (``'aten::baddbmm.out'``). Other errors pass as they are
    (an op the kernel called refused, in that op's name)."""
    head = f"Could not run 'aten::{op_name}' "
    msg = str(err)
    if not msg.startswith(head):
        return err
    return NotImplementedError(head[:-2] + ".out' " + msg[len(head):])


@functools.cache
def _maker(shape: tuple, out: bool, own_out: bool) -> Callable:
    """Compile the front of one parameter shape: ``shape`` is ``((name, kind, check), ...)``
    in order (``kind``: 0 positional-only, 1 positional-or-keyword, 3 keyword-only;
    ``check``: the default is ``_NA``, a required argument an alias may stand for)."""
    sig, call, names, checks = [], [], [], []
    prev = None
    for name, kind, check in shape:
        if prev == 0 and kind != 0:
            sig.append("/")
        if kind == 3 and prev != 3:
            sig.append("*")
        prev = kind
        sig.append(name)
        names.append(name)
        if name == "out" and out and own_out:
            continue  # the front's own out=, not passed on
        call.append(f"{name}={name}" if kind == 3 else name)
        if check:
            checks.append(f"{name} is _e_na")
    if prev == 0:
        sig.append("/")
    if out and not own_out:
        if prev != 3:
            sig.append("*")
        sig.append("out")
        names.append("out")
    sig.append("**_e_kw")
    test = " or ".join(["_e_kw", *checks])
    values = ", ".join(f"{n!r}: {n}" for n in names)
    run = f"_e_fn({', '.join(call)})"
    # the arguments, for out='s memory-overlap checks (a tuple: ~0.02 us on the out= path)
    inputs = "(" + "".join(f"{n}, " for n in names if n != "out") + ")"
    lines = [
        "def _e_make(_e_fn, _e_na, _e_slow, _e_write, _e_pre):",
        f"    def _e_front({', '.join(sig)}):",
        f"        if {test}:",
        f"            return _e_slow({{{values}}}, _e_kw)",
    ]
    if out:  # (a try costs nothing in CPython 3.11+ until it catches)
        lines += ["        if out is None:",
                  f"            return {run}",
                  f"        if _e_pre is not None and not hasattr({names[0]}, '_data'):",
                  f"            _e_pre({inputs}, out)",
                  "        try:",
                  f"            _e_result = {run}",
                  "        except TypeError as _e_err:",
                  "            if getattr(_e_err, 'parser_call', None) is None:",
                  "                raise",
                  "            raise _with_out(_e_err, out) from None",
                  "        except NotImplementedError as _e_err:",
                  "            raise _out_overload(_e_err, _e_write.args[0]) from None",
                  f"        return _e_write(_e_result, out, {inputs})"]
    else:
        lines.append(f"        return {run}")
    lines.append("    return _e_front")
    ns: dict = {"__name__": __name__,  # its globals: ember's own code (export's routing)
                "_with_out": _with_out, "_out_overload": _out_overload}
    exec(compile("\n".join(lines) + "\n", f"<ember front {len(shape)}>", "exec"), ns)
    return ns["_e_make"]


def front(fn: Callable, *, name: str | None = None, out: str | None = None,
          method: bool = False, hot: bool = False) -> Callable:
    """``fn`` as PyTorch's argument parser would bind it: the NumPy aliases of its ``dim``,
    ``keepdim``, ``input`` and ``other`` parameters (not of the first parameter of a
    ``method``: ``self``), and with ``out`` (a dtype rule of ``_inplace.OUT_DTYPE_RULES``)
    PyTorch's ``out=``. ``fn`` itself when there is nothing to add, and, with ``hot`` (the
    registry's ops), when ``input``/``other`` would be the only names to add: a front costs
    ~0.06-0.1 us a call, which ``torch.add(x1=a, x2=b)`` is not worth (``axis=`` and
    ``keepdims=`` are; so is ``out=``, whose front is cheaper than a plain wrapper). The
    front's signature, name and attributes are ``fn``'s (plus ``out``)."""
    if getattr(fn, "_ember_front", None) is not None and out is None:
        return fn  # already a front (``accepts_out`` under ``register``)
    op_name = name or getattr(fn, "__name__", "op")
    try:  # what fn takes itself (a functools.wraps wrapper's *args, not its target's names)
        sig = inspect.signature(fn, follow_wrapped=False)
    except (TypeError, ValueError):
        sig = None
    params = list(sig.parameters.values()) if sig is not None else None
    if params is None or any(p.kind in _VAR for p in params):
        return fn if out is None else _generic_out(fn, op_name, out, sig)
    pnames = {p.name for p in params}
    table = _aliases(fn)
    aliases = {}
    for i, p in enumerate(params):
        if (method and i == 0) or p.kind is p.POSITIONAL_ONLY or p.name == "out":
            continue
        alts = tuple(a for a in table.get(p.name, ()) if a not in pnames)
        if alts:
            aliases[p.name] = alts
    if out is None and (not aliases or hot and not aliases.keys() & _DIM_NAMES):
        return fn
    own_out = out is not None and "out" in pnames
    shape, pos_defaults, kw_defaults, defaults = [], [], {}, {}
    converting = False
    for p in params:
        required = p.default is p.empty
        check = False
        if p.kind in _POS:
            if required and (converting or p.name in aliases):
                converting = check = True
            if check:
                pos_defaults.append(_NA)
            elif not required:
                pos_defaults.append(p.default)
        elif required and p.name in aliases:
            check = True
            kw_defaults[p.name] = _NA
        elif not required:
            kw_defaults[p.name] = p.default
        if not required:
            defaults[p.name] = p.default
        kind = 0 if p.kind is p.POSITIONAL_ONLY else 1 if p.kind is p.POSITIONAL_OR_KEYWORD else 3
        shape.append((p.name, kind, check))
    if out is not None:
        kw_defaults["out"] = None
    spec = _Spec(op_name, aliases, defaults, tuple(p.name for p in params if p.kind in _POS),
                 out)
    slow = functools.partial(_slow, fn, spec)
    write = pre = None
    if out is not None:
        from .ops._signatures import out_needs_tensor_first

        write = functools.partial(_write, op_name, out)
        if out_needs_tensor_first(op_name):
            pre = functools.partial(_tensor_first, op_name)
    wrapper = _maker(tuple(shape), out is not None, own_out)(fn, _NA, slow, write, pre)
    wrapper.__defaults__ = tuple(pos_defaults) or None
    wrapper.__kwdefaults__ = kw_defaults or None
    functools.update_wrapper(wrapper, fn)
    if out is not None and not own_out:
        at = len(params)
        params.insert(at, inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
    wrapper.__signature__ = sig.replace(parameters=params)
    wrapper._ember_front = spec
    return wrapper


def _write(op_name, dtype_rule, result, out, inputs=None):
    return write_results(result, out, op_name, dtype_rule, inputs)


def _tensor_first(op_name, inputs, out):
    """``out=`` with a number first, where the op's number-first signature takes no ``out=``
    (``remainder(2, t, out=o)``): PyTorch's parser refuses it before any kernel runs."""
    from .ops._signatures import parser_error

    raise parser_error(op_name, inputs, {"out": out})


def _generic_out(fn, op_name: str, dtype_rule: str, sig):
    """``out=`` for a kernel whose parameters a front cannot mirror (``*args``/``**kwargs``,
    or no signature): a plain ``(*args, out=None, **kwargs)`` wrapper."""

    @functools.wraps(fn)
    def wrapper(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        try:
            result = fn(*args, **kwargs)
        except NotImplementedError as err:
            raise _out_overload(err, op_name) from None
        return write_results(result, out, op_name, dtype_rule)

    if sig is not None and "out" not in sig.parameters:
        params = list(sig.parameters.values())
        at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
        params.insert(at, inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
        wrapper.__signature__ = sig.replace(parameters=params)
    return wrapper
