"""The type stubs of ember-core (``tools/gen_stubs.py`` writes them from the runtime).

They are current (a fresh generation equals the committed files), they parse, they declare
every public name of ``ember`` and ``Tensor`` and nothing that is not there, and they agree
with what the ops do: every sample call of the op database (``ember.ops.opdb``) fits the
declared parameter types of the function and of the Tensor method, and its result is of the
declared return type. ``nox -s typecheck`` runs mypy over them.
"""

from __future__ import annotations

import ast
import collections.abc
import importlib
import inspect
import json
import runpy
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import ember
from ember.ops import opdb
from ember.ops.registry import OPS

ROOT = Path(__file__).resolve().parents[2]
EMBER_DIR = Path(ember.__file__).resolve().parent  # packages/core/src/ember (editable install)
STUBS = ("__init__.pyi", "_tensor.pyi", "return_types.pyi")
# what ``ember/__init__.py`` imports for itself, not for its users (``ember``: the package
# itself, bound by its ``import ember.utils.data``)
NOT_API = {"annotations", "extend_path", "ember"}


def _tree(name: str) -> ast.Module:
    return ast.parse((EMBER_DIR / name).read_text(), name, feature_version=(3, 10))


def _fresh(code: str):
    """What ``code`` prints as JSON in a fresh interpreter (no test has touched its ember)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    return json.loads(out)


def test_stubs_are_current():
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_stubs.py"), "--check",
                          "--out", str(EMBER_DIR)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}"


@pytest.mark.parametrize("name", STUBS)
def test_stub_parses(name):
    tree = _tree(name)
    assert tree.body
    compile(tree, name, "exec", dont_inherit=True)


def _declared(body: list[ast.stmt]) -> set[str]:
    """The names a stub's module or class body declares (``import a as a`` re-exports)."""
    names = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(a.asname for a in node.names if a.asname == a.name)
    return names


def test_init_stub_declares_the_public_namespace():
    public = set(_fresh("import ember, json; "
                        "print(json.dumps([n for n in vars(ember) if n[0] != '_']))"))
    public |= {n for n in ember._LAZY_SUBMODULES if not n.startswith("_")} \
        | {n for n in ember._SUBPACKAGES if "." not in n}
    declared = {n for n in _declared(_tree("__init__.pyi").body) if not n.startswith("_")}
    assert sorted(public - NOT_API - declared) == []
    assert sorted(n for n in declared if not hasattr(ember, n)) == []


def _tensor_class(tree: ast.Module) -> ast.ClassDef:
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")


def test_tensor_stub_declares_every_member():
    runtime = set(_fresh("import ember, json; "
                         "print(json.dumps([n for n in dir(ember.Tensor) if n[0] != '_']))"))
    declared = _declared(_tensor_class(_tree("_tensor.pyi")).body)
    assert sorted(runtime - declared) == []
    assert sorted(n for n in declared if not hasattr(ember.Tensor, n)) == []


def test_return_types_stub_has_the_runtime_fields():
    tree = _tree("return_types.pyi")
    classes = {n.name: [f.target.id for f in n.body if isinstance(f, ast.AnnAssign)]
               for n in tree.body if isinstance(n, ast.ClassDef)}
    runtime = _fresh("import ember, json; rt = ember.return_types; print(json.dumps("
                     "{n: getattr(rt, n)._fields for n in rt.__all__ if n != 'make'}))")
    assert classes == runtime


# -- the declared types against the op database's sample calls -------------------------------
class _Types:
    """Evaluates the stubs' annotations (their aliases and imports) into runtime checks."""

    def __init__(self):
        self.names: dict[str, object] = {"Tensor": ember.Tensor}
        self.fields = {n.name: {f.target.id: f.annotation for f in n.body
                                if isinstance(f, ast.AnnAssign)}
                       for n in _tree("return_types.pyi").body if isinstance(n, ast.ClassDef)}
        for name in ("_tensor.pyi", "__init__.pyi"):
            for node in _tree(name).body:
                if isinstance(node, ast.ImportFrom) and node.module != "typing":
                    base = "ember" if node.level else ""
                    module = ".".join(p for p in (base, node.module or "") if p)
                    for a in node.names:
                        if a.asname and a.asname.startswith("_"):
                            mod = importlib.import_module(module)
                            self.names[a.asname] = getattr(mod, a.name, None) or \
                                importlib.import_module(f"{module}.{a.name}")
                elif (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                      and node.value is not None):
                    self.names[node.target.id] = node.value

    def accepts(self, ann: ast.expr | None, value) -> bool:
        if ann is None:
            return True
        if isinstance(ann, ast.Constant) and ann.value is None:
            return value is None
        if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
            return self.accepts(ann.left, value) or self.accepts(ann.right, value)
        if isinstance(ann, ast.Subscript):
            return self._generic(ann, value)
        target = self._resolve(ann)
        if isinstance(target, ast.expr):
            return self.accepts(target, value)
        if target is float:
            return isinstance(value, (int, float))
        if target is complex:
            return isinstance(value, (int, float, complex))
        if target is collections.abc.Callable:
            return callable(value)
        if isinstance(target, type) and target.__module__ == "ember.return_types":
            fields = self.fields[target.__name__]
            return isinstance(value, target) and all(
                self.accepts(a, getattr(value, f)) for f, a in fields.items())
        if isinstance(target, type):
            return isinstance(value, target)
        raise AssertionError(f"cannot check {ast.unparse(ann)}")

    def _resolve(self, ann: ast.expr):
        if isinstance(ann, ast.Name):
            if ann.id == "Any":
                return object
            if ann.id in self.names:
                return self.names[ann.id]
            return {"Sequence": collections.abc.Sequence, "Callable": collections.abc.Callable,
                    "Iterator": collections.abc.Iterator}[ann.id]
        if isinstance(ann, ast.Attribute):
            owner = ann.value.id
            base = __import__("builtins") if owner == "builtins" else self.names[owner]
            return getattr(base, ann.attr)
        raise AssertionError(f"cannot check {ast.unparse(ann)}")

    def _generic(self, ann: ast.Subscript, value) -> bool:
        base = ann.value.id if isinstance(ann.value, ast.Name) else ast.unparse(ann.value)
        args = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        if base == "Literal":
            return any(type(value) is type(a.value) and value == a.value for a in args)
        if base == "Callable":
            return callable(value)
        if base == "tuple":
            if not isinstance(value, tuple):
                return False
            if len(args) == 2 and isinstance(args[1], ast.Constant) and args[1].value is ...:
                return all(self.accepts(args[0], v) for v in value)
            return len(value) == len(args) and all(map(self.accepts, args, value))
        if base in ("Sequence", "list"):
            kind = collections.abc.Sequence if base == "Sequence" else list
            return isinstance(value, kind) and all(self.accepts(args[0], v) for v in value)
        if base == "dict":
            return isinstance(value, dict)
        if base == "builtins.type":
            return isinstance(value, type)
        raise AssertionError(f"cannot check {ast.unparse(ann)}")


def _signatures(body: list[ast.stmt]) -> dict[str, list[ast.FunctionDef]]:
    defs: dict[str, list[ast.FunctionDef]] = {}
    for node in body:
        if isinstance(node, ast.FunctionDef):
            defs.setdefault(node.name, []).append(node)
    return defs


def _as_signature(fn: ast.FunctionDef) -> tuple[inspect.Signature, dict[str, ast.expr]]:
    P = inspect.Parameter
    a = fn.args
    params, anns = [], {}
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for i, (arg, d) in enumerate(zip(positional, defaults)):
        kind = P.POSITIONAL_ONLY if i < len(a.posonlyargs) else P.POSITIONAL_OR_KEYWORD
        params.append(P(arg.arg, kind, default=P.empty if d is None else d))
        anns[arg.arg] = arg.annotation
    if a.vararg:
        params.append(P(a.vararg.arg, P.VAR_POSITIONAL))
        anns[a.vararg.arg] = a.vararg.annotation
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append(P(arg.arg, P.KEYWORD_ONLY, default=P.empty if d is None else d))
        anns[arg.arg] = arg.annotation
    if a.kwarg:
        params.append(P(a.kwarg.arg, P.VAR_KEYWORD))
        anns[a.kwarg.arg] = a.kwarg.annotation
    return inspect.Signature(params), anns


def _fits(types: _Types, overloads: list[ast.FunctionDef], args, kwargs, result) -> str | None:
    """None when one overload takes the call and declares the result's type, else why not."""
    why = []
    for fn in overloads:
        sig, anns = _as_signature(fn)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            why.append(f"({exc})")
            continue
        bad = []
        for name, value in bound.arguments.items():
            kind = sig.parameters[name].kind
            values = value if kind is inspect.Parameter.VAR_POSITIONAL else \
                value.values() if kind is inspect.Parameter.VAR_KEYWORD else [value]
            if not all(types.accepts(anns[name], v) for v in values):
                bad.append(f"{name}: {ast.unparse(anns[name])} got {_short(value)}")
        if not bad and not types.accepts(fn.returns, result):
            bad.append(f"-> {ast.unparse(fn.returns)} got {_short(result)}")
        if not bad:
            return None
        why.append("; ".join(bad))
    return " | ".join(why)


def _short(value) -> str:
    if isinstance(value, ember.Tensor):
        return "Tensor"
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__}[{', '.join(_short(v) for v in value[:4])}]"
    return f"{type(value).__name__}({value!r})"[:60]


def test_op_samples_fit_the_declared_types():
    types = _Types()
    functions = _signatures(_tree("__init__.pyi").body)
    methods = _signatures(_tensor_class(_tree("_tensor.pyi")).body)
    entries = opdb.entries()
    failures = []
    for name, info in sorted(OPS.items()):
        entry = entries.get(name)
        if entry is None or not (info.function or info.method):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for sample in info.sample_inputs(None, entry.dtypes[0]):
                try:
                    result = sample.call(info.fn)
                except Exception:  # a sample of an error case: nothing to type
                    continue
                args, kwargs = (sample.input, *sample.args), sample.kwargs
                if info.function:
                    why = _fits(types, functions[name], args, kwargs, result)
                    if why:
                        failures.append(f"ember.{name}{_short(args)}: {why}")
                if info.method:
                    why = _fits(types, methods[name], args, kwargs, result)
                    if why:
                        failures.append(f"Tensor.{name}{_short(args)}: {why}")
    assert failures == [], "\n".join(failures[:60]) + f"\n({len(failures)} in all)"


def test_typed_usage_example_runs():
    """tools/typecheck/public_api.py, which ``nox -s typecheck`` type-checks, is real code."""
    pytest.importorskip("ember.nn")
    runpy.run_path(str(ROOT / "tools" / "typecheck" / "public_api.py"), run_name="__main__")


# Tensor members that change the tensor, its device or its graph, or wait for arguments
_NOT_CALLED = {"backward", "cuda", "xpu", "pin_memory", "retain_grad", "record_stream",
               "share_memory_", "__iter__", "__reversed__", "__deepcopy__", "__setstate__"}


def test_tensor_member_results_fit_the_declared_types():
    """Every attribute and property, and every method that needs no argument, of a float
    tensor (and of one that is an autograd result) is of the declared type."""
    types = _Types()
    cls = _tensor_class(_tree("_tensor.pyi"))
    members = _signatures(cls.body)
    attributes = {n.target.id: n.annotation for n in cls.body if isinstance(n, ast.AnnAssign)}
    for name, overloads in members.items():
        if any(isinstance(x, ast.Name) and x.id == "property"
               for d in overloads for x in d.decorator_list):
            attributes[name] = overloads[0].returns
    failures = []
    for t in (ember.ones(2, 3), (ember.ones(2, 3, requires_grad=True) * 2)):
        for name, ann in sorted(attributes.items()):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    value = getattr(t, name)
                except RuntimeError:  # not for this tensor (``imag`` of a real one)
                    continue
            if not types.accepts(ann, value):
                failures.append(f"Tensor.{name}: {ast.unparse(ann)} got {_short(value)}")
        for name, overloads in sorted(members.items()):
            if name in attributes:
                continue
            if name in _NOT_CALLED or name.endswith("_") and not name.endswith("__"):
                continue
            if not _takes_no_arguments(overloads):
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    result = getattr(t, name)()
                except Exception:  # removed (eig, ...), or not for this tensor (item)
                    continue
            why = _fits(types, overloads, (t,), {}, result)
            if why:
                failures.append(f"Tensor.{name}(): {why}")
    assert failures == [], "\n".join(failures)


def _takes_no_arguments(overloads: list[ast.FunctionDef]) -> bool:
    for fn in overloads:
        sig, _ = _as_signature(fn)
        try:
            sig.bind(None)
        except TypeError:
            continue
        return not any(isinstance(d, ast.Name) and d.id in ("classmethod", "staticmethod")
                       for d in fn.decorator_list) and fn.name != "__new__"
    return False
