"""``ember.jit.script``: TorchScript's semantics by running the Python itself.

A scripted function or module runs its own Python on every call, so its results are the
Python's (what TorchScript promises for the code it accepts, and what PyTorch runs under
``PYTORCH_JIT=0``): control flow on tensor values, Python scalars, any input shape or dtype,
autograd. Ember does not compile Python source into a TorchScript IR.

Its ``graph`` and ``save`` come from a capture (``ember.export``'s, kind ``"jit"``) on the
inputs of its first call (or ``example_inputs=``), with the scripted functions and the
scripted modules' own methods (``forward`` and what it calls) rewritten (:func:`convert`):
an ``if`` statement or ``a if c else b`` whose condition is a one-element tensor runs both
branches and selects each value the branches assign (or return) with ``where``, so the
saved program follows the condition at run time;
``not``/``and``/``or`` on tensors in such a condition become logical ops. Any other Python
decision on a tensor's value (a loop condition, ``.item()``, ``bool()``) cannot be kept in a
graph and is an error naming the line, never a branch silently baked in. The rewrite also
applies under ``jit.trace``, ``export``, ``onnx.export`` and ``compile`` of a program that
calls scripted code, as PyTorch keeps a scripted submodule's control flow inside a trace.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import itertools
import textwrap
import threading
import warnings
import weakref

from .._tensor import Tensor
from ..export import _capture

__all__ = ["RecursiveScriptModule", "ScriptedFunction", "script_module", "convert"]


# -- runtime helpers the converted code calls ------------------------------------------------

class _Undefined:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<unassigned>"


_UNDEF = _Undefined()


def _vals(frame_locals: dict, names: tuple) -> tuple:
    return tuple(frame_locals.get(n, _UNDEF) for n in names)


def _symbolic(cond) -> bool:
    return isinstance(cond, Tensor) and _capture.current() is not None


def _pred(cond: Tensor, where: str) -> Tensor:
    if cond.numel() != 1:
        raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous "
                           f"(the condition of the if at {where})")
    from .. import _dtype

    p = cond.reshape(())
    return p if p.dtype is _dtype.bool else p != 0


def _run_branch(fn, values, where: str, which: str):
    cap = _capture.current()
    start = len(cap.nodes)
    try:
        out = fn(*values)
    except Exception as exc:
        raise RuntimeError(
            f"the {which} branch of the if on a tensor at {where} raised {exc!r} while the "
            "capture ran both branches (a captured program holds both and selects with "
            "where, so neither may raise, and it cannot raise on tensor values)") from exc
    made = set()
    for node in cap.nodes[start:]:
        outside = [m for m in node.mutates if m not in made]
        if outside:
            raise RuntimeError(
                f"the {which} branch of the if on a tensor at {where} writes "
                f"{', '.join(outside)} in place ({node.op} at {node.source}); a captured "
                "program runs both branches and selects with where, so a branch may not "
                "write tensors made outside it: assign a new tensor instead (x = x + 1)")
        made.update(node.output_names())
    return out


def _sif(cond, true_fn, false_fn, values: tuple, names, where: str):
    """``if cond:`` over the branch functions; names: the variables they return (None: a
    branch's return value)."""
    if not _symbolic(cond):
        return true_fn(*values) if cond else false_fn(*values)
    p = _pred(cond, where)
    a = _run_branch(true_fn, values, where, "true")
    b = _run_branch(false_fn, values, where, "false")
    if names is None:
        return _merge(p, a, b, "the value returned", where)
    return tuple(_merge(p, x, y, f"{n!r}", where) for n, x, y in zip(names, a, b))


def _sifx(cond, true_fn, false_fn, where: str):
    """``a if cond else b``."""
    if not _symbolic(cond):
        return true_fn() if cond else false_fn()
    p = _pred(cond, where)
    return _merge(p, _run_branch(true_fn, (), where, "true"),
                  _run_branch(false_fn, (), where, "false"), "the value", where)


def _snot(v):
    if _symbolic(v):
        import ember

        return ember.logical_not(_pred(v, "a 'not'"))
    return not v


def _sand(a, rest):
    if _symbolic(a):
        import ember

        b = rest()
        if _symbolic(b):
            return ember.logical_and(_pred(a, "an 'and'"), _pred(b, "an 'and'"))
        return _pred(a, "an 'and'") if b else False
    return a and rest()


def _sor(a, rest):
    if _symbolic(a):
        import ember

        b = rest()
        if _symbolic(b):
            return ember.logical_or(_pred(a, "an 'or'"), _pred(b, "an 'or'"))
        return True if b else _pred(a, "an 'or'")
    return a or rest()


def _merge(p, x, y, what: str, where: str):
    if x is y:
        return x
    if x is _UNDEF or y is _UNDEF:
        return _UNDEF  # assigned in one branch only: unbound after the if
    if isinstance(x, Tensor) or isinstance(y, Tensor):
        if not (isinstance(x, Tensor) and isinstance(y, Tensor)):
            raise RuntimeError(f"{what} is a tensor in one branch of the if on a tensor at "
                               f"{where} and {type(y if isinstance(x, Tensor) else x).__name__}"
                               " in the other")
        if tuple(x.shape) != tuple(y.shape) or x.dtype != y.dtype:
            raise RuntimeError(
                f"{what} differs in shape or dtype between the branches of the if on a tensor "
                f"at {where} ({list(x.shape)} {x.dtype} and {list(y.shape)} {y.dtype}): a "
                "captured program selects between them with where, which needs them equal")
        import ember

        return ember.where(p, x, y)
    if isinstance(x, (tuple, list)) and type(x) is type(y) and len(x) == len(y):
        items = [_merge(p, a, b, f"{what}[{i}]", where) for i, (a, b) in
                 enumerate(zip(x, y))]
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
    if isinstance(x, dict) and isinstance(y, dict) and x.keys() == y.keys():
        return {k: _merge(p, x[k], y[k], f"{what}[{k!r}]", where) for k in x}
    try:
        same = type(x) is type(y) and bool(x == y)
    except Exception:  # values that cannot be compared are not the same value
        same = False
    if same:
        return x
    raise RuntimeError(f"{what} differs between the branches of the if on a tensor at "
                       f"{where} ({x!r} and {y!r}): a captured program selects only tensors "
                       "with the condition; make it a tensor, or the same in both branches")


def _sidx(n, where: str):
    """An argument of ``range()``: a size computed from an input's shape is fixed to its
    value here with a guard (a graph holds no loop: TorchScript keeps the loop, a captured
    program is unrolled for this count and refuses inputs that would change it)."""
    from ..export._symbolic import SymInt

    if isinstance(n, SymInt):
        cap = _capture.current()
        if cap is not None:
            cap.specialize(n, f"a loop's count (range() at {where})")
        return int(n)
    return n


_HELPERS = {"__ember_vals": _vals, "__ember_sif": _sif, "__ember_sifx": _sifx,
            "__ember_snot": _snot, "__ember_sand": _sand, "__ember_sor": _sor,
            "__ember_sidx": _sidx, "__ember_UNDEF": _UNDEF}


# -- the source rewrite -----------------------------------------------------------------------

def _always_exits(stmts: list) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    return isinstance(last, ast.If) and _always_exits(last.body) \
        and _always_exits(last.orelse)


def _returns(stmts: list) -> bool:
    return any(isinstance(n, ast.Return) for n in _walk_same_scope(stmts))


def _walk_same_scope(nodes):
    """The nodes under ``nodes``, not entering nested functions, lambdas, classes or
    comprehensions."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                      ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp,
                                      ast.GeneratorExp)):
                stack.append(child)


def _loop_escapes(stmts: list) -> bool:
    """A break/continue of an enclosing loop inside ``stmts``."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Break, ast.Continue)):
            return True
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            stack.extend(node.orelse)  # a loop's own body may break itself
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                             ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def _assigned(stmts: list) -> list:
    names: list = []
    for node in _walk_same_scope(stmts):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            name = node.id
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = node.name
        elif isinstance(node, ast.alias):
            name = (node.asname or node.name).partition(".")[0]
        elif isinstance(node, ast.ExceptHandler) and node.name:
            name = node.name
        else:
            continue
        if name not in names:
            names.append(name)
    return sorted(names)


def _blocked(stmts: list, allow_return: bool) -> bool:
    for node in _walk_same_scope(stmts):
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal)):
            return True
        if isinstance(node, ast.Return) and not allow_return:
            return True
    return _loop_escapes(stmts)


class _Converter:
    def __init__(self, filename: str):
        self.filename = filename
        self.ids = itertools.count()
        self.changed = False

    def where(self, node) -> str:
        return f"{self.filename}:{node.lineno}"

    # -- expressions -----------------------------------------------------------------------
    def test(self, node):
        """A condition: not/and/or become helpers that keep tensors as tensors."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.call("__ember_snot", [self.test(node.operand)], node)
        if isinstance(node, ast.BoolOp):
            fn = "__ember_sand" if isinstance(node.op, ast.And) else "__ember_sor"
            out = self.test(node.values[-1])
            for value in reversed(node.values[:-1]):
                out = self.call(fn, [self.test(value), self.thunk(out)], node)
            return out
        return self.expr(node)

    def expr(self, node):
        return _IfExpRewriter(self).visit(node)

    def thunk(self, body):
        return ast.Lambda(args=_arguments(), body=body)

    def call(self, fn: str, args: list, at):
        return ast.copy_location(ast.Call(func=ast.Name(fn, ast.Load()), args=args,
                                          keywords=[]), at)

    # -- statements --------------------------------------------------------------------------
    def body(self, stmts: list, top: bool) -> list:
        """``stmts`` rewritten; ``top``: falling off their end returns from the function."""
        out: list = []
        for i, s in enumerate(stmts):
            if isinstance(s, ast.If):
                rest = stmts[i + 1:]
                if top and _returns(s.body + s.orelse) and not _blocked(
                        s.body + s.orelse + rest, allow_return=True):
                    out.extend(self.returning_if(s, rest))
                    return out
                if not _blocked(s.body + s.orelse, allow_return=False):
                    out.extend(self.assigning_if(s))
                    continue
                s.body = self.body(s.body, False)
                s.orelse = self.body(s.orelse, False)
                s.test = self.expr(s.test)
                out.append(s)
                continue
            out.append(self.stmt(s))
        return out

    def stmt(self, s):
        if isinstance(s, (ast.For, ast.AsyncFor, ast.While)):
            s.body = self.body(s.body, False)
            s.orelse = self.body(s.orelse, False)
            if isinstance(s, ast.While):
                s.test = self.expr(s.test)
            else:
                s.iter = self.expr(s.iter)
            return s
        if isinstance(s, (ast.With, ast.AsyncWith)):
            s.body = self.body(s.body, False)
            return s
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Try)):
            return s
        return self.expr(s)

    def branch_fns(self, s, params: list, body_t: list, body_f: list, tail: list):
        n = next(self.ids)
        names = (f"__ember_true_{n}", f"__ember_false_{n}")
        args = _arguments(params)
        fns = []
        for name, body in zip(names, (body_t, body_f)):
            fn = _function_def(name, args, (body + tail) or [ast.Pass()])
            fns.append(ast.copy_location(fn, s))
        return fns, names

    def vals(self, params: list, at):
        return self.call("__ember_vals", [
            ast.Call(func=ast.Name("locals", ast.Load()), args=[], keywords=[]),
            ast.Tuple([ast.Constant(p) for p in params], ast.Load())], at)

    def assigning_if(self, s) -> list:
        self.changed = True
        params = _assigned(s.body + s.orelse)
        ret = [ast.Return(ast.Tuple([ast.Name(p, ast.Load()) for p in params], ast.Load()))]
        fns, (t, f) = self.branch_fns(s, params, self.body(s.body, False),
                                      self.body(s.orelse, False), ret)
        call = self.call("__ember_sif", [
            self.test(s.test), ast.Name(t, ast.Load()), ast.Name(f, ast.Load()),
            self.vals(params, s), ast.Tuple([ast.Constant(p) for p in params], ast.Load()),
            ast.Constant(self.where(s))], s)
        if not params:
            return fns + [ast.copy_location(ast.Expr(call), s)]
        target = ast.Tuple([ast.Name(p, ast.Store()) for p in params], ast.Store())
        out = fns + [ast.copy_location(ast.Assign(targets=[target], value=call), s)]
        for p in params:  # a name only one branch assigned is unbound after, as in Python
            out.append(ast.copy_location(ast.If(
                test=ast.Compare(ast.Name(p, ast.Load()), [ast.Is()],
                                 [ast.Name("__ember_UNDEF", ast.Load())]),
                body=[ast.Delete([ast.Name(p, ast.Del())])], orelse=[]), s))
        return out

    def returning_if(self, s, rest: list) -> list:
        """An ``if`` with a ``return`` in it, at the function's top level: the rest of the
        function runs at the end of each branch that does not always return, and both
        branches return."""
        self.changed = True
        body_t = s.body if _always_exits(s.body) else s.body + rest
        body_f = s.orelse if _always_exits(s.orelse) else s.orelse + rest
        params = _assigned(body_t + body_f)
        fns, (t, f) = self.branch_fns(s, params, self.body(body_t, True),
                                      self.body(body_f, True), [])
        call = self.call("__ember_sif", [
            self.test(s.test), ast.Name(t, ast.Load()), ast.Name(f, ast.Load()),
            self.vals(params, s), ast.Constant(None), ast.Constant(self.where(s))], s)
        return fns + [ast.copy_location(ast.Return(call), s)]


class _IfExpRewriter(ast.NodeTransformer):
    """``a if c else b`` -> ``__ember_sifx(c, lambda: a, lambda: b)`` (not inside lambdas or
    comprehensions, whose scopes the thunks would change)."""

    def __init__(self, conv: _Converter):
        self.conv = conv

    def visit_IfExp(self, node):
        if any(isinstance(n, ast.NamedExpr) for n in ast.walk(node)):
            return node
        self.conv.changed = True
        body, orelse = self.visit(node.body), self.visit(node.orelse)
        return self.conv.call("__ember_sifx", [
            self.conv.test(node.test), self.conv.thunk(body), self.conv.thunk(orelse),
            ast.Constant(self.conv.where(node))], node)

    def visit_Call(self, node):
        """``range(n)``: ``n`` through ``__ember_sidx``, which guards a size-derived count."""
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "range" and not node.keywords:
            self.conv.changed = True
            node.args = [self.conv.call("__ember_sidx", [a, ast.Constant(self.conv.where(node))],
                                        a) for a in node.args]
        return node

    def visit_Lambda(self, node):
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda


def _function_def(name: str, args, body: list):
    fn = ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None)
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        fn.type_params = []
    return fn


def _arguments(names=()):
    """Positional parameters ``names`` of a generated function or lambda."""
    return ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in names], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


class _SuperAndMangling(ast.NodeTransformer):
    """What compiling a method outside its class would lose: zero-argument ``super()`` and
    private-name mangling."""

    def __init__(self, self_name, class_name):
        self.self_name = self_name
        self.prefix = "_" + class_name.lstrip("_") if class_name else None

    def mangle(self, name: str) -> str:
        if self.prefix and name.startswith("__") and not name.endswith("__") \
                and self.prefix != "_":
            return self.prefix + name
        return name

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "super" and not node.args \
                and self.self_name:
            node.args = [ast.Name("__class__", ast.Load()), ast.Name(self.self_name,
                                                                   ast.Load())]
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        node.attr = self.mangle(node.attr)
        return node

    def visit_Name(self, node):
        node.id = self.mangle(node.id)
        return node


_CONVERTED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CONVERT_LOCK = threading.Lock()
_NONE = object()


def convert(fn):
    """``fn`` with its ``if``s on tensors rewritten for a capture (see the module's doc), or
    None when there is nothing to rewrite or its source cannot be read."""
    raw = getattr(fn, "__func__", fn)
    with _CONVERT_LOCK:
        got = _CONVERTED.get(raw, _NONE)
    if got is _NONE:
        try:
            got = _convert(raw)
        except (OSError, TypeError, SyntaxError, ValueError):
            got = None  # no source (a lambda, the REPL, a C function): run it as it is
        with _CONVERT_LOCK:
            _CONVERTED[raw] = got
    if got is None or raw is fn:
        return got
    return got.__get__(fn.__self__)


def _convert(fn):
    code = fn.__code__
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef) or fdef.name != code.co_name:
        return None
    ast.increment_lineno(tree, code.co_firstlineno - 1)
    fdef.decorator_list = []
    for a in fdef.args.posonlyargs + fdef.args.args + fdef.args.kwonlyargs + \
            [fdef.args.vararg, fdef.args.kwarg]:
        if a is not None:
            a.annotation = None
    fdef.returns = None
    qual = fn.__qualname__.split(".")
    class_name = qual[-2] if len(qual) > 1 and qual[-2] != "<locals>" else None
    first = (fdef.args.posonlyargs + fdef.args.args)[:1]
    _SuperAndMangling(first[0].arg if first and "__class__" in code.co_freevars else None,
                      class_name).visit(fdef)  # before the rewrite adds its own names
    conv = _Converter(code.co_filename)
    fdef.body = conv.body(fdef.body, True)
    if not conv.changed:
        return None
    freevars = list(code.co_freevars)
    params = freevars + list(_HELPERS)
    factory = _function_def("__ember_factory", _arguments(params),
                            [fdef, ast.Return(ast.Name(fdef.name, ast.Load()))])
    module = ast.Module(body=[ast.copy_location(factory, fdef)], type_ignores=[])
    ast.fix_missing_locations(module)
    namespace: dict = {}
    exec(compile(module, code.co_filename, "exec", dont_inherit=True), fn.__globals__,
         namespace)
    cells = [c.cell_contents for c in fn.__closure__ or ()]  # ValueError: an empty cell
    new = namespace["__ember_factory"](*cells, *_HELPERS.values())
    new.__defaults__ = fn.__defaults__
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__wrapped__ = fn
    return new


# -- inputs for the capture -------------------------------------------------------------------

class _TensorSpec:
    __slots__ = ("shape", "dtype", "device")

    def __init__(self, t: Tensor):
        t = getattr(t, "_real", t)  # a graph value of a running capture: its tensor
        self.shape, self.dtype, self.device = tuple(t.shape), t.dtype, t.device


def _spec(v):
    """``v`` (a call's arguments) with each tensor replaced by its shape, dtype and device."""
    from ..utils._pytree import tree_map

    return tree_map(lambda x: _TensorSpec(x) if isinstance(x, Tensor) else x, v)


def _materialize(s):
    """Zeros with a recorded input's shape, dtype and device (a capture needs values; with
    the ``if``s rewritten, none of them decides the graph)."""
    import ember

    from ..utils._pytree import tree_map

    return tree_map(lambda x: ember.zeros(x.shape, dtype=x.dtype, device=x.device)
                    if isinstance(x, _TensorSpec) else x, s)


def example_spec(example_inputs):
    """PyTorch's ``example_inputs`` (a list of input tuples, or one tuple) as a call spec."""
    if example_inputs is None:
        return None
    first = example_inputs[0] if isinstance(example_inputs, list) else example_inputs
    args = first if isinstance(first, tuple) else (first,)
    return _spec((args, {}))


def _not_called(kind: str, name: str) -> RuntimeError:
    return RuntimeError(
        f"this {kind} from ember.jit.script ({name}) has not been called yet: Ember runs "
        "the Python of a scripted module and captures its graph from the inputs of its first "
        "call; call it once, or script it with example_inputs=[(x,)], before reading "
        ".graph or saving it")


def _capture_program(obj, spec):
    from ..export._export import capture_program

    args, kwargs = _materialize(spec)
    return capture_program(obj, tuple(args), dict(kwargs), None, "jit", script=True)


def _source(fn) -> str:
    try:
        return textwrap.dedent(inspect.getsource(getattr(fn, "__func__", fn)))
    except (OSError, TypeError):
        return f"# the source of {getattr(fn, '__qualname__', fn)!r} is not available\n"


# -- scripted functions ----------------------------------------------------------------------

class ScriptedFunction:  # made a subclass of ScriptFunction in ember.jit's __init__
    """What ``script`` returns for a function: it runs the function's Python."""

    def __init__(self, fn, example_inputs=None):
        functools.update_wrapper(self, fn)
        self._fn = fn
        self.original_name = getattr(fn, "__name__", "function")
        self.training = False
        self._spec = example_spec(example_inputs)
        self._captured = None

    def __call__(self, *args, **kwargs):
        if _capture.current() is not None:
            fn = convert(self._fn) or self._fn
            return fn(*args, **kwargs)
        if self._spec is None:
            self._spec = _spec((args, kwargs))
        return self._fn(*args, **kwargs)

    forward = __call__

    def _ember_program(self):
        if self._spec is None:
            raise _not_called("function", self.original_name)
        if self._captured is None:
            @functools.wraps(self._fn)
            def run(*args, **kwargs):  # a plain function to capture (not a module)
                return self(*args, **kwargs)

            self._captured = _capture_program(run, self._spec)
        return self._captured

    @property
    def _program(self):
        return self._ember_program()

    @property
    def graph(self):
        return self._ember_program().graph

    inlined_graph = graph

    @property
    def code(self) -> str:
        return _source(self._fn)

    @property
    def schema(self) -> str:
        return f"{self.original_name}{inspect.signature(self._fn)}"

    def __repr__(self) -> str:
        return f"<ember.jit.ScriptFunction {self.original_name}>"


# -- scripted modules ------------------------------------------------------------------------

class RecursiveScriptModule:  # made a subclass of ScriptModule in ember.jit's __init__
    """The base of the classes ``script`` makes for modules (``torch.jit.RecursiveScriptModule``):
    each is a subclass of the module's own class, so the scripted module is an ``nn.Module``
    that shares the original's parameters and buffers and runs its Python."""


_CLASSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _own_methods(cls) -> dict:
    """name -> function: the plain methods of ``cls`` written outside Ember (``forward`` and
    helpers; Ember's own layers decide nothing on tensor values)."""
    methods: dict = {}
    for klass in cls.__mro__:
        for name in vars(klass):
            if name in methods or name.startswith("__") and name != "forward":
                continue
            value = inspect.getattr_static(cls, name)
            if inspect.isfunction(value) and not (value.__module__ or "").startswith("ember."):
                methods[name] = value
    return methods


def _dispatching(fn):
    """``fn`` as a method that runs its rewritten source (:func:`convert`) in a capture."""

    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        if _capture.current() is not None:
            converted = convert(fn)
            if converted is not None:
                return converted(self, *args, **kwargs)
        return fn(self, *args, **kwargs)

    return method


def _surface(owner: list) -> dict:
    """The methods that make a class of modules scripted ones; ``owner[0]``: that class
    (set once it is made, for ``super``)."""

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        if d.get("_ember_script_spec") is None and _capture.current() is None:
            d["_ember_script_spec"] = _spec((args, kwargs))
        return super(owner[0], self).__call__(*args, **kwargs)

    def __getattr__(self, name):
        try:  # the module's own parameter, buffer or submodule of that name comes first
            return super(owner[0], self).__getattr__(name)
        except AttributeError:
            if name in ("graph", "inlined_graph"):
                return self._ember_program().graph
            if name == "code":
                return _source(type(self).forward)
            raise

    def _ember_program(self):
        spec = self.__dict__.get("_ember_script_spec")
        if spec is None:
            raise _not_called("module", self.original_name)
        return _capture_program(self, spec)

    def save(self, f, _extra_files=None):
        from . import _save

        _save(self, f, _extra_files)

    def __copy__(self):
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo):
        new = object.__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    def __reduce_ex__(self, protocol):
        raise RuntimeError("ScriptModules cannot be deepcopied using copy.deepcopy or saved "
                           "using torch.save. Mixed serialization of script and non-script "
                           "modules is not supported. For purely script modules use "
                           "my_script_module.save(<filename>) instead.")

    return {"__call__": __call__, "__getattr__": __getattr__,
            "_ember_program": _ember_program, "save": save, "__copy__": __copy__,
            "__deepcopy__": __deepcopy__, "__reduce_ex__": __reduce_ex__,
            "_ember_script_surface": True}


def _cached_class(table, cls, make):
    """``table[cls]``, made by ``make(cls)`` the first time (the lock is not held while a
    class is made: a race makes two, and keeps the first)."""
    with _CONVERT_LOCK:
        dyn = table.get(cls)
    if dyn is None:
        dyn = make(cls)
        with _CONVERT_LOCK:
            dyn = table.setdefault(cls, dyn)
    return dyn


def _scripted_class(cls):
    return _cached_class(_CLASSES, cls, _make_scripted_class)


def _make_scripted_class(cls):
    from . import RecursiveScriptModule as base

    owner: list = []
    # forward and the methods it may call, rewritten in a capture
    namespace = {name: _dispatching(fn) for name, fn in _own_methods(cls).items()}

    def extra_repr(self) -> str:
        return f"original_name={self.original_name}"

    namespace.update(_surface(owner))
    namespace.update({"__module__": "ember.jit", "__qualname__": "RecursiveScriptModule",
                      "extra_repr": extra_repr})
    try:
        dyn = type("RecursiveScriptModule", (cls, base), namespace)
    except TypeError as exc:
        raise RuntimeError(f"ember.jit.script cannot script a {cls.__qualname__}: {exc}") \
            from exc
    owner.append(dyn)
    return dyn


def subclass_namespace(name: str, bases: tuple, namespace: dict) -> dict:
    """A user's subclass of ``ScriptModule`` (PyTorch's first way of writing TorchScript,
    ``forward`` marked ``@script_method``): its own methods dispatch to their rewritten
    source in a capture; the first such class in a hierarchy gets the scripted surface
    (``graph``, ``code``, ``save``...). Returns the namespace and, in ``"__ember_owner"``,
    the list to put the made class in."""
    namespace = dict(namespace)
    for key, value in list(namespace.items()):
        if inspect.isfunction(value) and (key == "forward" or not key.startswith("__")):
            namespace[key] = _dispatching(value)
    owner: list = []
    if not any(getattr(b, "_ember_script_surface", False) for b in bases):
        for key, value in _surface(owner).items():
            namespace.setdefault(key, value)
    namespace.setdefault("original_name", name)
    namespace["__ember_owner"] = owner
    return namespace


def script_module(mod, spec=None, memo=None):
    """A scripted copy of ``mod`` (and of its submodules, recursively) sharing its parameters
    and buffers."""
    from . import RecursiveScriptModule as base

    memo = {} if memo is None else memo
    if isinstance(mod, base):
        return mod
    if id(mod) in memo:
        return memo[id(mod)]
    new = object.__new__(_scripted_class(type(mod)))
    memo[id(mod)] = new
    d = dict(mod.__dict__)
    for key, value in d.items():  # the module's own dicts (hooks, parameters...) copied
        if key.startswith("_") and isinstance(value, (dict, set)):
            d[key] = copy.copy(value)
    modules = d.get("_modules")
    if isinstance(modules, dict):
        for key, child in modules.items():
            if child is not None:
                modules[key] = script_module(child, None, memo)
    d["original_name"] = type(mod).__name__
    d["_ember_script_spec"] = spec
    new.__dict__.update(d)
    return new


# -- traced programs as modules ----------------------------------------------------------------

_TRACED_CLASSES: dict = {}


class SubmoduleCalls:
    """The first call of each submodule while ``jit.trace`` runs a module: the submodule and
    its arguments' specs (tensors by shape, dtype and device; other values as they are), from
    which the traced program's submodules are traced when first asked for (PyTorch traces
    every submodule the run calls)."""

    def __init__(self, root):
        self.calls: dict = {}
        self.handles = []
        for path, module in root.named_modules():
            if path and hasattr(module, "register_forward_pre_hook"):
                self.handles.append(module.register_forward_pre_hook(
                    functools.partial(self._first_call, path), with_kwargs=True))

    def _first_call(self, path, module, args, kwargs):
        if path not in self.calls:
            self.calls[path] = (module, _spec((args, kwargs)))

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def example(self, path):
        """``(module, args, kwargs)`` with zeros for the tensors, or None if not called."""
        call = self.calls.get(path)
        if call is None:
            return None
        module, spec = call
        return (module, *_materialize(spec))


def traced_module(cls, program, loaded: bool = False, calls: SubmoduleCalls | None = None):
    """A traced (or loaded) program of a module: an instance of ``cls`` that is also an
    ``nn.Module`` when ember-nn is installed (``torch.jit.ScriptModule`` is one), with the
    traced module's tree of submodules (each with its ``original_name``) and its parameters
    and buffers registered under their state-dict names in it, so that it is a submodule
    like any other (``nn.Sequential(traced, head)``, a parent's ``parameters()``, ``to()``,
    ``state_dict()``). The graph reads the registered tensors at each call, so whatever
    replaces them (``to()``, ``load_state_dict(assign=True)``, an assignment) is what runs.
    ``loaded``: from ``jit.load``, printed ``RecursiveScriptModule`` as PyTorch prints it."""
    names = dict(program.module_names or [])
    original_name = names.get("", "Module")
    try:
        import ember

        module_base = ember.nn.Module
    except ImportError:  # ember-core alone: the program with Module's names, not a Module
        return cls(program, original_name)
    dyn = _cached_class(_TRACED_CLASSES, cls, lambda c: _traced_class(c, module_base))
    return dyn(program, original_name, loaded, calls)


def _traced_class(cls, module_base):
    def __init__(self, program, original_name: str = "Module", loaded: bool = False,
                 calls: SubmoduleCalls | None = None):
        module_base.__init__(self)
        cls.__init__(self, program, original_name)
        self.__dict__["_ember_loaded"] = loaded
        _register_submodules(self, program, module_base, loaded, calls)
        self.__dict__["_ember_slots"] = _register_weights(self, program, module_base)

    def forward(self, *args, **kwargs):
        sync_weights(self._program, self._ember_slots)
        return self._runner.forward(*args, **kwargs)

    def extra_repr(self) -> str:
        return f"original_name={self.original_name}"

    def _get_name(self) -> str:
        return "RecursiveScriptModule" if self._ember_loaded else self.original_name

    namespace = {"__module__": "ember.jit", "__qualname__": cls.__qualname__,
                 "__init__": __init__, "forward": forward, "extra_repr": extra_repr,
                 "_get_name": _get_name}
    return type(cls.__name__, (module_base, cls), namespace)


_SUBMODULE_CLASSES: dict = {}


def _submodule_class(module_base):
    """The class of a traced program's submodules: an ``nn.Module`` holding its part of the
    weights, printed as PyTorch prints a traced (``Linear(original_name=Linear)``) or loaded
    (``RecursiveScriptModule(original_name=Linear)``) submodule. A traced one has its own
    program, traced when first asked for (``code``, ``graph``, a call) from the original
    submodule at zeros of the shapes of its first call in the trace; a loaded one has none
    (the file holds the top-level module's graph)."""
    def __init__(self, original_name: str, loaded: bool = False, example=None):
        module_base.__init__(self)
        self.original_name = original_name
        self.__dict__["_ember_loaded"] = loaded
        self.__dict__["_ember_example"] = example  # calls.example(path), made on demand
        self.__dict__["_ember_traced"] = None

    def _own_program(self):
        traced = self.__dict__["_ember_traced"]
        if traced is None:
            example = self._ember_example() if self._ember_example is not None else None
            if example is None:
                where = ("a loaded program's submodule: the file holds the top-level "
                         "module's graph only") if self._ember_loaded else \
                    "this submodule was not called while the module was traced"
                raise RuntimeError(f"{self.original_name} has no traced program of its own "
                                   f"({where}); call the top-level module")
            module, args, kwargs = example
            import ember.jit

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the top-level trace warned already
                traced = ember.jit.trace(module, args, check_trace=False,
                                         example_kwarg_inputs=kwargs or None, strict=False)
            self.__dict__["_ember_traced"] = traced
        return traced

    def forward(self, *args, **kwargs):
        return self._own_program()(*args, **kwargs)

    def code(self) -> str:
        return self._own_program().code

    def graph(self):
        return self._own_program().graph

    def extra_repr(self) -> str:
        return f"original_name={self.original_name}"

    def _get_name(self) -> str:
        return "RecursiveScriptModule" if self._ember_loaded else self.original_name

    namespace = {"__module__": "ember.jit", "__qualname__": "TracedModule",
                 "__init__": __init__, "_own_program": _own_program, "forward": forward,
                 "code": property(code), "graph": property(graph),
                 "extra_repr": extra_repr, "_get_name": _get_name}
    return type("TracedModule", (module_base,), namespace)


def _register_submodules(root, program, module_base, loaded: bool,
                         calls: SubmoduleCalls | None) -> None:
    """The traced module's submodules (those without weights too), by path, with their
    original class names, as children of ``root``."""
    sub_cls = _cached_class(_SUBMODULE_CLASSES, module_base, _submodule_class)
    for path, name in program.module_names or []:
        if not path:
            continue
        *parents, leaf = path.split(".")
        owner = root
        for part in parents:
            owner = owner._modules.get(part) or owner._modules.setdefault(
                part, sub_cls("Module", loaded))
        example = None if calls is None or path not in calls.calls else \
            functools.partial(calls.example, path)
        owner._modules.setdefault(leaf, sub_cls(name, loaded, example))


def sync_weights(program, slots) -> None:
    """Put the tensors now registered in ``slots`` (``_register_weights``) into ``program``'s
    stores: whatever replaced them (``to()``, an assignment) is what the graph reads."""
    for store, target, owner, kind, name in slots:
        value = getattr(owner, kind).get(name)
        if value is not None:
            getattr(program, store)[target] = value


def _register_weights(root, program, module_base) -> list:
    """Register the program's parameters and buffers on ``root`` (plain modules for the
    dotted prefixes); ``[(store, target, owner, kind, name)]`` to read them back."""
    import ember

    slots = []
    for spec in program.graph.inputs:
        if spec.kind not in ("parameter", "buffer") or spec.target is None:
            continue
        store = "state_dict" if spec.kind == "parameter" or spec.persistent else "constants"
        tensor = getattr(program, store).get(spec.target)
        if tensor is None:
            continue
        *path, name = spec.target.split(".")
        owner = root
        for part in path:  # into the dicts: a name such as "graph" is the model's own
            child = owner._modules.get(part)
            if child is None:
                child = owner._modules[part] = module_base()
            owner = child
        if spec.kind == "parameter":
            if not isinstance(tensor, ember.nn.Parameter):
                tensor = ember.nn.Parameter(tensor.detach(), requires_grad=tensor.requires_grad)
                getattr(program, store)[spec.target] = tensor
            owner._parameters.setdefault(name, tensor)
            slots.append((store, spec.target, owner, "_parameters", name))
        else:
            owner._buffers.setdefault(name, tensor)
            if not spec.persistent:
                owner._non_persistent_buffers_set.add(name)
            slots.append((store, spec.target, owner, "_buffers", name))
    return slots
