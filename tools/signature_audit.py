"""Signature audit: the parameters PyTorch's public functions take that Ember's rejects.

For each function PyTorch lists in ``torch.overrides.get_testing_overrides()`` under
``torch.*``, ``torch.nn.functional.*``, ``torch.linalg.*``, ``torch.fft.*``,
``torch.special.*`` and the ``torch.Tensor`` methods, whose Ember counterpart exists
(``ember.<same path>``, methods on ``ember.Tensor``), the audit compares parameter names:

* ``rejects``: a keyword PyTorch accepts and Ember's function refuses (no such parameter,
  no ``**kwargs``, or a positional-only one);
* ``kwargs``: Ember takes ``**kwargs`` but its source never names the keyword, so it is
  likely dropped or refused further down;
* ``extra``: Ember's function takes ``out=`` where PyTorch's binds none;
* ``position``: the i-th positional parameter has another name in Ember (``input`` vs
  ``x``), which breaks calls that pass it by keyword.

A native function (one with ATen schemas) also takes the argument parser's NumPy names
(``axis=`` for ``dim``, ``keepdims=``, ``x=``/``a=``/``x1=`` for ``input``, ``x2=`` for
``other``; ``ember.ops._front.NUMPY_ALIASES``): Ember's function must accept them too, as
its front's aliases (``ember.ops._front.aliases_of``) or as parameters.

PyTorch's names come from the override lambdas (its Python-visible signature), from
``inspect.signature`` where the function is Python code, and, for the keyword-only options
the lambdas often leave out (``out``, ``dtype``, ``keepdim``, ...), from the ATen schemas of
the op. Tensor methods never take ``out=``. PyTorch is only the oracle here: run with the
test environment's interpreter::

    .nox/tests/bin/python tools/signature_audit.py [--json] [--kind rejects,kwargs,position]
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from dataclasses import asdict, dataclass

#: keyword-only options of PyTorch's functions (never compared by position)
OPTION_NAMES = ("out", "dtype", "keepdim", "dim", "generator", "layout", "device",
                "requires_grad", "pin_memory", "memory_format")
_KW_ONLY = frozenset(OPTION_NAMES) - {"dim", "keepdim"}
#: PyTorch's namespaces and Ember's counterpart of each
NAMESPACES = (("torch", "ember"), ("torch.nn.functional", "ember.nn.functional"),
              ("torch.linalg", "ember.linalg"), ("torch.fft", "ember.fft"),
              ("torch.special", "ember.special"), ("torch.Tensor", "ember.Tensor"))


@dataclass(frozen=True)
class Gap:
    """One parameter PyTorch's ``name`` accepts that Ember's handles differently."""

    name: str        # PyTorch's path: "torch.addmm", "torch.Tensor.sum"
    param: str       # PyTorch's parameter name
    kind: str        # "rejects", "kwargs", "extra" or "position"
    detail: str = ""

    @property
    def key(self) -> str:
        return f"{self.name}:{self.param}"


def _resolve(path: str):
    import importlib

    parts = path.split(".")
    obj = importlib.import_module(parts[0])
    for p in parts[1:]:
        obj = getattr(obj, p)
    return obj


def torch_functions():
    """``[(path, torch_obj, lambda)]`` for the audited namespaces (each path once)."""
    import torch

    overrides = torch.overrides.get_testing_overrides()
    found = []
    for ns_path, _ in NAMESPACES:
        ns = _resolve(ns_path)
        for name in sorted(dir(ns)):
            if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                continue
            obj = inspect.getattr_static(ns, name, None) if ns_path == "torch.Tensor" else None
            obj = getattr(ns, name, None) if obj is None or not callable(obj) else obj
            try:
                lam = overrides.get(obj)
            except TypeError:  # unhashable
                continue
            if lam is not None:
                found.append((f"{ns_path}.{name}", obj, lam))
    return found


def _schemas(obj) -> list:
    """The ATen schemas of the op behind the builtin ``obj`` (empty for Python code)."""
    import torch

    if inspect.isfunction(obj):
        return []
    try:
        return list(torch._C._jit_get_schemas_for_operator(f"aten::{obj.__name__}"))
    except (RuntimeError, AttributeError):
        return []


def _python_signature(obj):
    """``inspect.signature`` of PyTorch's own Python code (None for builtins and for code
    that takes ``**kwargs``, whose names only the lambda knows)."""
    fn = obj.__func__ if isinstance(obj, (classmethod, staticmethod)) else obj
    if not inspect.isfunction(fn):
        return None
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return sig


def torch_params(path: str, obj, lam) -> tuple[list[list[str]], set[str]]:
    """PyTorch's positional parameter names (in order, without ``self``; the default
    overload's first, then the other overloads') and every keyword name it accepts.

    A builtin's names are its ATen schema's (``self`` is ``input`` for a function): the
    default overload's arguments, the lambda's names that some overload has, and the options
    (``OPTION_NAMES``) of every overload, ``out`` for functions only. Python code's names are
    its own signature's; the override lambda is the fallback."""
    is_method = path.startswith("torch.Tensor.")
    sig = _python_signature(obj) or inspect.signature(lam)
    params = list(sig.parameters.values())
    if is_method and params and params[0].name in ("self", "input"):
        params = params[1:]
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                  and p.name not in _KW_ONLY]
    keywords = {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                and p.kind is not p.POSITIONAL_ONLY}
    from ember._front import NUMPY_ALIASES

    schemas = _schemas(obj)
    overloads = []
    if schemas:
        def rename(n):
            return "input" if n == "self" else n

        default = _default_overload(schemas)
        dargs = [a for a in default.arguments if not (is_method and a.name == "self")]
        positional = [rename(a.name) for a in dargs if not a.kwarg_only]
        for s in schemas:
            if s is not default and _python_visible(s):
                overloads.append([rename(a.name) for a in s.arguments
                                  if not a.kwarg_only and not (is_method and a.name == "self")])
        known = {rename(a.name) for s in schemas if _python_visible(s) for a in s.arguments}
        keywords = (keywords & known) | {rename(a.name) for a in dargs}
        keywords |= {a.name for s in schemas for a in s.arguments if a.name in OPTION_NAMES}
        if "out" in keywords and not is_method and _probe_out(obj, default) is False:
            keywords.discard("out")  # an ATen out-variant that Python does not bind
        # the argument parser's NumPy names: axis= for dim, x= for input, ...
        for canon, alts in NUMPY_ALIASES.items():
            if canon in keywords and not (is_method and canon == "input"):
                keywords.update(alts)
    if is_method:
        keywords.discard("out")
        keywords.discard("input")
        keywords.difference_update(NUMPY_ALIASES["input"])
    return [positional, *overloads], keywords


def _probe_out(obj, schema=None) -> bool | None:
    """Whether the builtin ``obj`` binds ``out=``: called with plausible required arguments
    and an invalid ``out``, the argument parser names ``out`` either as a wrong type or as
    an unknown keyword, before anything runs. None when it stops at something else."""
    import torch

    if schema is None:  # a Python function of PyTorch's, or no schema: its own signature
        schemas = _schemas(obj)
        if not schemas:
            return None
        schema = _default_overload(schemas)
    z = torch.zeros(2)
    by_type = {"Tensor": z, "int": 0, "float": 1.0, "number": 1, "bool": False, "str": "mean",
               "List[int]": [0], "List[Tensor]": [z], "ScalarType": torch.float32}
    args = []
    for a in schema.arguments:
        if a.kwarg_only or a.default_value is not None:
            continue
        t = str(a.type)
        t = t[len("Optional["):-1] if t.startswith("Optional[") else t
        if t not in by_type:
            return None
        args.append(by_type[t])
    try:
        obj(*args, out=object())
    except TypeError as e:
        msg = str(e)
        if "unexpected keyword argument 'out'" in msg:
            return False
        if "argument 'out'" in msg:
            return True
    except Exception:  # a probe: any other refusal says nothing
        return None
    return None


def _python_visible(schema) -> bool:
    """Whether an overload is bound in Python: TorchScript's scalar overloads
    (``add.int(int a, int b)``) are not; theirs take no tensor."""
    return any(str(a.type).startswith("Tensor") for a in schema.arguments) or not any(
        a.name in ("a", "b", "x", "i") for a in schema.arguments)


def _default_overload(schemas):
    for s in schemas:
        if s.overload_name in ("", "Tensor", "input", "self") and _python_visible(s):
            return s
    return next((s for s in schemas if _python_visible(s)), schemas[0])


def _handles(fn, name: str, depth: int = 0) -> bool:
    """Whether ``fn``, which takes ``**kwargs``, handles the keyword ``name``: its source
    names it, or a function it wraps (``__wrapped__``, a callable in its closure: an in-place
    variant's op, a decorator's target) accepts or handles it."""
    if depth > 4:
        return False
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        src = ""
    if f"'{name}'" in src or f'"{name}"' in src or f"{name}=" in src:
        return True
    inner = [getattr(fn, "__wrapped__", None)]
    inner += [c.cell_contents for c in (getattr(fn, "__closure__", None) or ())
              if callable(getattr(c, "cell_contents", None))
              and not isinstance(c.cell_contents, type)]
    for g in inner:
        if g is None or g is fn:
            continue
        try:
            params = inspect.signature(g).parameters
        except (TypeError, ValueError):
            continue
        p = params.get(name)
        if p is not None and p.kind is not p.POSITIONAL_ONLY:
            return True
        if any(q.kind is q.VAR_KEYWORD for q in params.values()) and _handles(g, name, depth + 1):
            return True
    return False


def audit_one(path: str, torch_obj, lam, ember_obj) -> list[Gap]:
    """The gaps of one function."""
    from ember._front import aliases_of
    try:
        esig = inspect.signature(ember_obj)
    except (TypeError, ValueError):
        return []
    is_method = path.startswith("torch.Tensor.")
    eparams = list(esig.parameters.values())
    if is_method and eparams and eparams[0].kind is not eparams[0].VAR_POSITIONAL:
        eparams = eparams[1:]
    by_name = {p.name: p for p in eparams if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    ealiases = aliases_of(ember_obj)
    var_kw = any(p.kind is p.VAR_KEYWORD for p in eparams)
    overloads, keywords = torch_params(path, torch_obj, lam)
    positional = overloads[0]
    gaps = []
    for name in sorted(keywords):
        p = by_name.get(name)
        if (p is not None and p.kind is not p.POSITIONAL_ONLY) or name in ealiases:
            continue
        if p is None and var_kw:
            if not _handles(ember_obj, name):
                gaps.append(Gap(path, name, "kwargs", "taken by **kwargs, never named"))
            continue
        why = "positional-only in Ember" if p is not None else "no such parameter"
        gaps.append(Gap(path, name, "rejects", why))
    if ("out" in by_name and "out" not in keywords and not is_method
            and _probe_out(torch_obj, None) is False):
        gaps.append(Gap(path, "out", "extra", "Ember takes out=, PyTorch does not"))
    epos = [p.name for p in eparams if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not any(p.kind is p.VAR_POSITIONAL for p in eparams):
        for i, (t, e) in enumerate(zip(positional, epos)):
            if any(len(o) > i and o[i] == e for o in overloads) or ealiases.get(t) == e:
                continue  # the same name, or PyTorch's is a NumPy name that Ember's answers to
            if t in keywords and not any(g.param == t for g in gaps):
                gaps.append(Gap(path, t, "position", f"position {i} is {e!r} in Ember"))
    return gaps


def audit() -> tuple[list[Gap], int]:
    """All gaps, and how many functions were compared."""
    import ember  # noqa: F401  (installs the namespaces)

    gaps, compared = [], 0
    for path, obj, lam in torch_functions():
        ns_path, _, name = path.rpartition(".")
        ember_ns = dict(NAMESPACES)[ns_path]
        try:
            ens = _resolve(ember_ns)
        except (ImportError, AttributeError):
            continue
        eobj = getattr(ens, name, None)
        if eobj is None or not callable(eobj):
            continue
        compared += 1
        gaps.extend(audit_one(path, obj, lam, eobj))
    return gaps, compared


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the gaps as JSON")
    ap.add_argument("--kind", default="rejects,kwargs,extra,position",
                    help="comma-separated kinds to list (rejects, kwargs, extra, position)")
    ap.add_argument("--param", default=None, help="only this parameter name (e.g. out)")
    args = ap.parse_args(argv)
    kinds = set(args.kind.split(","))
    gaps, compared = audit()
    gaps = [g for g in gaps if g.kind in kinds and (args.param is None or g.param == args.param)]
    if args.json:
        json.dump([asdict(g) for g in gaps], sys.stdout, indent=1)
        print()
        return 0
    print(f"{compared} functions compared, {len(gaps)} gaps")
    for kind in ("rejects", "kwargs", "extra", "position"):
        sel = [g for g in gaps if g.kind == kind]
        if not sel:
            continue
        print(f"\n== {kind} ({len(sel)}) ==")
        for g in sel:
            print(f"{g.name}({g.param}=...): {g.detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
