"""``ember.jit``: TorchScript's names over ``ember.export``'s capture.

``trace(model, example_inputs)`` records the ops the model runs (as ``torch.jit.trace`` does:
Python control flow is baked in, with a :class:`TracerWarning` where a tensor's value decided
it) into a :class:`ScriptModule` that runs without the model's Python class;
``save``/``load`` use the one ``.ember`` file of ``ember.export`` (any extension: ``m.pt``
works), so PyTorch deployment scripts port unchanged::

    traced = ember.jit.trace(model, torch.randn(1, 3, 224, 224))
    ember.jit.save(traced, "model.pt")
    model = ember.jit.load("model.pt", map_location="cpu")

Unlike ``export``, a trace checks no input shapes: sizes the code reads (``x.size(0)``) are
recorded as sizes of the run's tensors, so a model traced at batch 1 runs at any batch size
its code does not specialize. A traced or loaded module is an ``nn.Module`` when ember-nn is
installed (its parameters registered under their state-dict names), as a ``ScriptModule`` is
in PyTorch; its submodules are traced too, each at the shapes of its first call (``traced.
block.code``, ``traced.block(x)``), when first asked for.

``script`` gives TorchScript's results by running the Python of the scripted function or
module on every call (Ember does not compile Python source); its ``graph`` and ``save``
capture it on the inputs of its first call, keeping the ``if`` statements on tensors as selections
(``ember.jit._script``).
"""

from __future__ import annotations

import builtins
import collections.abc
import contextlib
import functools
import os
import sys
import types
import typing
import warnings

from .._tensor import Tensor
from ..export._capture import TracerWarning, is_tracing
from . import _script

__all__ = ["trace", "trace_module", "script", "script_method", "save", "load",
           "ScriptModule", "RecursiveScriptModule", "ScriptFunction", "TracedModule",
           "TopLevelTracedModule", "TracerWarning",
           "TracingCheckError", "is_tracing", "is_scripting", "ignore", "unused", "export",
           "annotate", "Final", "Attribute", "freeze", "optimize_for_inference", "fork", "wait",
           "interface", "enable_onednn_fusion", "onednn_fusion_enabled",
           "set_fusion_strategy", "strict_fusion", "script_if_tracing", "isinstance"]


class TracingCheckError(RuntimeError):
    """``check_trace`` found the traced function disagreeing with the Python function."""


def _deprecated(name: str, instead: str = "switch to `torch.compile` or `torch.export`") -> None:
    """PyTorch 2.13's ``DeprecationWarning`` for a TorchScript entry point, in its words
    (``torch.`` names, as a program written for PyTorch expects; attributed to this module,
    so Python's default filters show it only under test runners, as PyTorch's)."""
    if sys.version_info >= (3, 14) and instead.startswith("switch"):
        warnings.warn(f"`torch.jit.{name}` is not supported in Python 3.14+ and may break. "
                      f"Please {instead}.", DeprecationWarning, stacklevel=2)
    else:
        warnings.warn(f"`torch.jit.{name}` is deprecated. Please {instead}.",
                      DeprecationWarning, stacklevel=2)


_COMPILE_INSTEAD = "use `torch.compile` instead"


def is_scripting() -> bool:
    """False: Ember never compiles Python source (``torch.jit.is_scripting``)."""
    return False


# -- modules ----------------------------------------------------------------------------------

class _ScriptModuleType(type):
    """``ScriptModule``'s metaclass: a class a user derives from ``ScriptModule`` (PyTorch's
    first way to write TorchScript: ``forward`` marked ``@torch.jit.script_method``) is made
    an ``nn.Module`` too, found as ``ember.nn.Module`` (the ember-nn distribution, which such a
    class needs, as in PyTorch), with the surface of a scripted module."""

    def __new__(mcls, name, bases, namespace, **kwargs):
        if namespace.get("__module__", "").startswith("ember."):  # Ember's own classes
            return super().__new__(mcls, name, bases, namespace, **kwargs)
        if not any(callable(getattr(b, "named_parameters", None)) for b in bases):
            import ember

            bases = (*bases, ember.nn.Module)
        namespace = _script.subclass_namespace(name, bases, namespace)
        owner = namespace.pop("__ember_owner")
        cls = super().__new__(mcls, name, bases, namespace, **kwargs)
        owner.append(cls)
        return cls


class ScriptModule(metaclass=_ScriptModuleType):
    """The base of every module ``ember.jit`` makes (``torch.jit.ScriptModule``): traced
    programs (:class:`TracedModule`, :class:`ScriptFunction`) and scripted modules
    (:class:`RecursiveScriptModule`, which are also ``nn.Module`` instances). A user's
    subclass (``class Cell(torch.jit.ScriptModule)`` with ``@torch.jit.script_method``) is an
    ``nn.Module`` that runs its Python, as a scripted module does."""


class RecursiveScriptModule(_script.RecursiveScriptModule, ScriptModule):
    __doc__ = _script.RecursiveScriptModule.__doc__


class _TracedProgram(ScriptModule):
    """A traced program with ``Module``'s surface: call it like the original; ``graph``,
    ``code``, ``state_dict()``, ``parameters()``, ``eval()``...

    ``train()``/``eval()`` only set the flag, as in PyTorch: the graph keeps the mode it was
    traced in."""

    def __init__(self, program, original_name: str = "Module"):
        self._program = program
        from ..export._program import GraphModule

        self._runner = GraphModule(program)  # the plain runner: this module holds the weights
        self._runner.training = bool(program.training)
        self.original_name = original_name
        self.training = bool(program.training)

    # -- calling -------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        return self._runner.forward(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # -- introspection --------------------------------------------------------------------
    @property
    def graph(self):
        return self._program.graph

    inlined_graph = graph

    @property
    def code(self) -> str:
        return self._program.graph.python_code()

    @property
    def program(self):
        """The :class:`ember.export.ExportedProgram` behind this module."""
        return self._program

    # -- Module surface ------------------------------------------------------------------
    def state_dict(self, *args, **kwargs):
        return self._runner.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        return self._runner.load_state_dict(state_dict, strict, assign)

    def named_parameters(self, prefix: str = "", recurse: bool = True):
        return self._runner.named_parameters(prefix, recurse)

    def parameters(self, recurse: bool = True):
        return self._runner.parameters(recurse)

    def named_buffers(self, prefix: str = "", recurse: bool = True):
        return self._runner.named_buffers(prefix, recurse)

    def buffers(self, recurse: bool = True):
        return self._runner.buffers(recurse)

    def to(self, *args, **kwargs):
        self._runner.to(*args, **kwargs)
        return self

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else f"cuda:{int(device)}"
                       if builtins.isinstance(device, int) else device)

    def train(self, mode: bool = True):
        self.training = bool(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        self._runner.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.zero_()

    def save(self, f, _extra_files=None) -> None:
        """``torch.jit.ScriptModule.save``: :func:`ember.jit.save`."""
        _save(self, f, _extra_files)

    def _ember_program(self):
        return self._program

    def __repr__(self) -> str:
        return f"RecursiveScriptModule(original_name={self.original_name})"


class TracedModule(_TracedProgram):
    """What ``trace`` returns for a module (``torch.jit.TracedModule``)."""


class TopLevelTracedModule(TracedModule):
    """``torch.jit.TopLevelTracedModule``."""


class ScriptFunction(_TracedProgram):
    """A traced or scripted function (``torch.jit.ScriptFunction``)."""

    def __repr__(self) -> str:
        return f"<ember.jit.ScriptFunction {self.original_name}>"


# -- trace -------------------------------------------------------------------------------------

def trace(func, example_inputs=None, optimize=None, check_trace: bool = True,
          check_inputs=None, check_tolerance: float = 1e-5, strict: bool = True,
          _force_outplace: bool = False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs: bool = True):
    """Trace ``func`` (a module or a function) on ``example_inputs`` (``torch.jit.trace``).

    The model runs once; every op it calls is recorded. A Python value taken from a tensor
    (``bool(t)``, ``t.item()``, ...) is baked in with a :class:`TracerWarning` that names the
    line. With ``check_trace`` the trace runs again on ``check_inputs`` (default: the example
    inputs) and its outputs are compared with the Python function's within
    ``check_tolerance`` (a ``TracerWarning`` when they differ, as in PyTorch). ``strict``:
    a list or dict output raises (return a tuple). Returns a :class:`ScriptModule`
    (``TopLevelTracedModule``) or a :class:`ScriptFunction`.
    """
    _deprecated("trace")
    return _trace(func, example_inputs, check_trace, check_inputs, check_tolerance, strict,
                  example_kwarg_inputs)


def _trace(func, example_inputs, check_trace, check_inputs, check_tolerance, strict,
           example_kwarg_inputs):
    from ..export._export import _is_module, capture_program

    if builtins.isinstance(func, ScriptModule):
        warnings.warn("The input to trace is already a ScriptModule, tracing it is a no-op. "
                      "Returning the object as is.", stacklevel=2)
        return func
    if not callable(func):
        raise RuntimeError("Could not get name of python class object")
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("example_kwarg_inputs or example_inputs must be provided to trace")
    if example_kwarg_inputs is not None and not builtins.isinstance(example_kwarg_inputs, dict):
        raise RuntimeError("example_kwarg_inputs should be a dict")
    if example_kwarg_inputs is not None:
        # PyTorch traces on the keyword inputs alone (example_inputs is then ignored)
        args = ()
        kwargs = dict(example_kwarg_inputs)
        _check_kwarg_names(func, kwargs)
    else:
        args = _as_tuple(example_inputs)
        kwargs = {}
    calls = _script.SubmoduleCalls(func) if _is_module(func) else None
    if calls is not None:
        _deprecated("trace_method")  # (PyTorch traces a module through trace_module)
    try:
        program = capture_program(func, args, kwargs, None, "jit", check_strict_outputs=strict)
    finally:
        if calls is not None:
            calls.remove()
    name = type(func).__name__ if _is_module(func) else getattr(func, "__name__", "function")
    traced = _script.traced_module(TopLevelTracedModule, program, calls=calls) \
        if calls is not None else ScriptFunction(program, name)
    if check_trace:  # (PyTorch's check traces again, warning again)
        _deprecated("trace_method" if calls is not None else "trace")
        _check(func, traced, check_inputs or [(args, kwargs)], check_tolerance)
    return traced


def trace_module(mod, inputs: dict, optimize=None, check_trace: bool = True,
                 check_inputs=None, check_tolerance: float = 1e-5, strict: bool = True,
                 _force_outplace: bool = False, _module_class=None, _compilation_unit=None,
                 example_inputs_is_kwarg: bool = False, _store_inputs: bool = True):
    """``torch.jit.trace_module`` for the ``forward`` method (the one Ember traces)."""
    if not builtins.isinstance(inputs, dict) or set(inputs) != {"forward"}:
        raise RuntimeError("ember.jit.trace_module traces the forward method only: pass "
                           "inputs={'forward': example_inputs}")
    example = inputs["forward"]
    if example_inputs_is_kwarg:
        return _trace(mod, None, check_trace, check_inputs, check_tolerance, strict, example)
    return _trace(mod, example, check_trace, check_inputs, check_tolerance, strict, None)


def _as_tuple(example_inputs) -> tuple:
    """PyTorch's ``make_tuple``: a tensor or a dict is the one argument, a tuple the
    arguments, any other iterable (a list) its items."""
    if example_inputs is None:
        return ()
    if builtins.isinstance(example_inputs, tuple):
        return example_inputs
    if builtins.isinstance(example_inputs, (Tensor, dict)):
        return (example_inputs,)
    return tuple(example_inputs)


def _check(func, traced, check_inputs, tolerance: float) -> None:
    """Compare the trace with the Python function on each check input."""
    import ember

    for item in check_inputs:
        if builtins.isinstance(item, tuple) and len(item) == 2 \
                and builtins.isinstance(item[1], dict) and builtins.isinstance(item[0], tuple):
            args, kwargs = item
        else:
            args, kwargs = _as_tuple(item), {}
        with ember.no_grad():
            expected = func(*args, **kwargs)
            got = traced(*args, **kwargs)
        for i, (e, g) in enumerate(zip(_flat(expected), _flat(got))):
            if not builtins.isinstance(e, ember.Tensor):
                continue
            problem = None
            if tuple(e.shape) != tuple(g.shape) or e.dtype != g.dtype:
                problem = (f"shape/dtype {list(g.shape)} {g.dtype} instead of "
                           f"{list(e.shape)} {e.dtype}")
            elif e.numel() and not ember.allclose(g.detach(), e.detach(), rtol=tolerance,
                                                  atol=tolerance, equal_nan=True):
                diff = (g.detach().double() - e.detach().double()).abs().max().item()
                problem = f"values differ by up to {diff:g} (tolerance {tolerance:g})"
            if problem is not None:
                warnings.warn(f"Output nr {i + 1}. of the traced function does not match the "
                              f"corresponding output of the Python function. Detailed error:"
                              f"\n{problem}", TracerWarning, stacklevel=3)


def _flat(out):
    if builtins.isinstance(out, (list, tuple)):
        for x in out:
            yield from _flat(x)
    elif builtins.isinstance(out, dict):
        for x in out.values():
            yield from _flat(x)
    else:
        yield out


# -- script ------------------------------------------------------------------------------------

class _ScriptedFunction(_script.ScriptedFunction, ScriptFunction):
    __doc__ = _script.ScriptedFunction.__doc__


def _check_kwarg_names(func, kwargs) -> None:
    """PyTorch's NameError for an ``example_kwarg_inputs`` key that ``forward`` lacks."""
    import inspect

    from ..export._export import _is_module

    try:
        params = inspect.signature(func.forward if _is_module(func) else func).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    names = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for key in kwargs:
        if key not in names:
            raise NameError(f"""'{key}' is not in forward() method's arguments,
                         valid arguments name are [{",".join(names)}]""")


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """``torch.jit.script``: a module or function that runs its own Python on every call
    (TorchScript's results: control flow on tensor values, Python scalars, autograd), and
    whose ``graph`` and ``save`` capture it on the inputs of its first call or on
    ``example_inputs`` (a list of input tuples, PyTorch's form, or one tuple), keeping each
    ``if`` on a tensor as a selection (see ``ember.jit._script``).

    A module is scripted with its submodules into subclasses of their own classes that
    share the original parameters and buffers (``original_name``, ``code``, ``graph``,
    ``save``); a class (a TorchScript class), a list or a dict is returned as it is."""
    _deprecated("script")
    if builtins.isinstance(obj, ScriptModule):
        return obj
    if builtins.isinstance(obj, type):
        if hasattr(obj, "forward") and hasattr(obj, "named_parameters"):
            raise RuntimeError(f"Type '{obj}' cannot be compiled since it inherits from "
                               "nn.Module, pass an instance instead")
        return obj
    if builtins.isinstance(obj, (list, dict)):
        return obj
    from ..export._export import _is_module

    if _is_module(obj):
        return _script.script_module(obj, _script.example_spec(example_inputs))
    if not callable(obj):
        if type(obj).__module__ == "builtins":
            raise TypeError(f"{type(obj)} is a built-in class")
        raise RuntimeError(f"ember.jit.script expects a module, a function or a class, got "
                           f"{type(obj).__name__}")
    return _ScriptedFunction(obj, example_inputs)


def script_method(fn):
    """``@torch.jit.script_method``: the method itself (a scripted module runs its Python)."""
    _deprecated("script_method")
    return fn


def script_if_tracing(fn):
    """``@torch.jit.script_if_tracing``: ``fn`` itself outside a trace; while tracing, the
    scripted ``fn`` (which runs its Python, so its ops are recorded as they run)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not is_tracing():
            return fn(*args, **kwargs)
        return script(wrapper.__original_fn)(*args, **kwargs)

    wrapper.__original_fn = fn
    wrapper.__script_if_tracing_wrapper = True
    return wrapper


# (typing's spellings are what TorchScript code writes)
_RAW_CONTAINERS = {dict: "dict", list: "list", tuple: "tuple",
                   typing.Dict: "Dict", typing.List: "List",  # noqa: UP006
                   typing.Optional: "Optional", typing.Tuple: "Tuple"}  # noqa: UP006


def _check_args_exist(target_type) -> None:
    name = _RAW_CONTAINERS.get(target_type)
    if name is None:
        return
    if name.endswith("ict"):
        raise RuntimeError(f"Attempted to use {name} without contained types. Please add "
                           f"contained type, e.g. {name}[int, int]")
    raise RuntimeError(f"Attempted to use {name} without a contained type. Please add a "
                       f"contained type, e.g. {name}[int]")


def _check_empty(obj) -> None:
    if obj == [] or obj == {} or obj == ():
        warnings.warn("The inner type of a container is lost when calling torch.jit.isinstance "
                      "in eager mode. For example, List[int] would become list and therefore "
                      "falsely return True for List[float] or List[str].", stacklevel=3)


def _element_is(obj, target_type) -> bool:
    return _container_is(obj, target_type) if typing.get_origin(target_type) \
        else builtins.isinstance(obj, target_type)


def _container_is(obj, target_type) -> bool:
    origin = typing.get_origin(target_type)
    _check_args_exist(target_type)
    args = typing.get_args(target_type)
    if origin is list:
        _check_empty(obj)
        return builtins.isinstance(obj, list) and all(_element_is(e, args[0]) for e in obj)
    if origin is dict:
        _check_empty(obj)
        return builtins.isinstance(obj, dict) and all(
            builtins.isinstance(k, args[0]) and _element_is(v, args[1]) for k, v in obj.items())
    if origin is tuple:
        _check_empty(obj)
        return builtins.isinstance(obj, tuple) and len(obj) == len(args) and all(
            _element_is(e, t) for e, t in zip(obj, args))
    if origin is typing.Union or origin is types.UnionType:
        return obj is None or any(_element_is(obj, t) for t in args)
    return False


def isinstance(obj, target_type) -> bool:
    """``torch.jit.isinstance``: ``obj`` matches a parameterised container type
    (``List[Tensor]``, ``Dict[str, List[int]]``, ``Tuple[int, str]``, ``Optional[...]``),
    element by element, or a plain type (TorchScript's type refinement, run eagerly)."""
    if builtins.isinstance(target_type, collections.abc.Container):
        if not builtins.isinstance(target_type, tuple):
            raise RuntimeError("The second argument to `torch.jit.isinstance` must be a type "
                               "or a tuple of types")
        return any(isinstance(obj, t) for t in target_type)
    if typing.get_origin(target_type):
        return _container_is(obj, target_type)
    _check_args_exist(target_type)
    return builtins.isinstance(obj, target_type)


# -- save / load ------------------------------------------------------------------------------

def save(m, f, _extra_files=None) -> None:
    """Save a traced module to ``f`` (path or binary file object) in Ember's ``.ember``
    format (the same file as ``ember.export.save``; the extension is yours to choose)."""
    _deprecated("save", "switch to `torch.export`")
    _save(m, f, _extra_files)


def _save(m, f, _extra_files=None) -> None:
    """``save`` without its deprecation warning (``ScriptModule.save`` gives none)."""
    from ..export import save as export_save

    if not builtins.isinstance(m, ScriptModule):
        raise TypeError(f"ember.jit.save expects a module from ember.jit.trace or "
                        f"ember.jit.script, got {type(m).__name__}")
    if builtins.isinstance(f, (str, os.PathLike)):
        parent = os.path.dirname(os.fspath(f))
        if parent and not os.path.isdir(parent):
            raise RuntimeError(f"Parent directory {parent} does not exist.")
    export_save(m._ember_program(), f, extra_files=_extra_files)


def load(f, map_location=None, _extra_files=None, _restore_shapes: bool = False):
    """Load a module saved by :func:`save` (or ``ember.export.save``), its weights on
    ``map_location`` if given (``torch.jit.load``). Runs no code from the file."""
    from ..export import load as export_load

    _deprecated("load", "switch to `torch.export`")
    if builtins.isinstance(f, (str, os.PathLike)):
        if not os.path.exists(f):
            raise ValueError(f"The provided filename {f} does not exist")
        if os.path.isdir(f):
            raise ValueError(f"The provided filename {f} is a directory")
    program = export_load(f, extra_files=_extra_files, map_location=map_location)
    if program.training is not None:
        return _script.traced_module(TopLevelTracedModule, program, loaded=True)
    return ScriptFunction(program, "function")


# -- TorchScript's annotations, as the no-ops they are when tracing ---------------------------

def ignore(drop=False, **kwargs):
    """``@torch.jit.ignore``: a no-op marker (tracing runs Python anyway)."""
    if callable(drop):
        drop._torchscript_modifier = "ignore"
        return drop

    def decorator(fn):
        fn._torchscript_modifier = "ignore"
        return fn

    return decorator


def unused(fn):
    """``@torch.jit.unused``: a no-op marker."""
    fn._torchscript_modifier = "unused"
    return fn


#: ``_overload`` declarations by qualified name, ``_overload_method``'s by name and class
_OVERLOADED_FNS: dict = {}
_OVERLOADED_METHODS: dict = {}


def _check_overload_body(func) -> None:
    """PyTorch's rule: an overload declaration's body is ``pass`` or ``...`` (a docstring
    aside)."""
    import ast
    import inspect
    import textwrap

    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError):  # no source (built in an interpreter): nothing to check
        return
    tree = ast.parse(source)
    body = tree.body[0].body if tree.body and hasattr(tree.body[0], "body") else []
    stmts = [s for s in body if not (builtins.isinstance(s, ast.Expr)
                                     and builtins.isinstance(s.value, ast.Constant)
                                     and builtins.isinstance(s.value.value, str))]
    ok = all(builtins.isinstance(s, ast.Pass) or (
        builtins.isinstance(s, ast.Expr) and builtins.isinstance(s.value, ast.Constant)
        and s.value.value is Ellipsis) for s in stmts)
    if not ok:
        raise RuntimeError("Only `pass` statement or `...` can be the body of overload "
                           f"declaration:\n{source}")


def _overload(func):
    """``@torch.jit._overload``: records a typed declaration of a function that the next
    definition of the same name implements; TorchScript compiles each declaration, eager
    Python (and Ember, which has no TorchScript) calls the implementation."""
    _check_overload_body(func)
    name = f"{func.__module__}.{func.__qualname__}"
    _OVERLOADED_FNS.setdefault(name, []).append(func)
    return func


def _overload_method(func):
    """``@torch.jit._overload_method``: ``_overload`` for a method of a module class."""
    _check_overload_body(func)
    owner = func.__qualname__.rsplit(".", 1)[0]
    _OVERLOADED_METHODS.setdefault(func.__name__, {}).setdefault(owner, []).append(func)
    return func


def _get_overloads(obj) -> list | None:
    """The declarations ``_overload`` recorded for ``obj``'s name, or None."""
    return _OVERLOADED_FNS.get(f"{obj.__module__}.{obj.__qualname__}")


def export(fn):
    """``@torch.jit.export``: a no-op marker (only ``forward`` is traced)."""
    fn._torchscript_modifier = "export"
    return fn


def interface(obj):
    """``@torch.jit.interface``: a no-op marker on a class."""
    _deprecated("interface", _COMPILE_INSTEAD)
    if not builtins.isinstance(obj, type):
        raise RuntimeError("interface must be applied to a class")
    return obj


def annotate(the_type, the_value):
    """``torch.jit.annotate``: returns ``the_value``."""
    return the_value


class _FinalType:
    def __getitem__(self, item):
        return item

    def __repr__(self) -> str:
        return "ember.jit.Final"


#: ``torch.jit.Final[int]``: the type itself
Final = _FinalType()


def Attribute(value, type=None):
    """``torch.jit.Attribute``: returns ``value``."""
    return value


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True):
    """``torch.jit.freeze``: a traced module is already frozen; returns it (in eval mode)."""
    _deprecated("freeze", _COMPILE_INSTEAD)
    if not builtins.isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use "
                           "ember.jit.script or ember.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    return mod.eval()


def optimize_for_inference(mod, other_methods=None):
    """``torch.jit.optimize_for_inference``: returns the frozen module."""
    _deprecated("optimize_for_inference", _COMPILE_INSTEAD)
    if not builtins.isinstance(mod, ScriptModule):
        raise RuntimeError("optimize_for_inference expects a ScriptModule as input. Please use "
                           "ember.jit.script or ember.jit.trace to script your 'nn.Module'.")
    return freeze(mod) if mod.training is False else freeze(mod.eval())


def fork(func, *args, **kwargs):
    """``torch.jit.fork``: outside a TorchScript graph PyTorch runs ``func`` at once, on this
    thread, and returns a completed :class:`ember.futures.Future` of its result (an
    exception ``func`` raises propagates from ``fork``); ``wait`` returns the result."""
    from ..futures import Future

    _deprecated("fork", _COMPILE_INSTEAD)
    future = Future()
    future.set_result(func(*args, **kwargs))
    return future


def wait(future):
    """``torch.jit.wait``: the value of a :class:`ember.futures.Future` (blocks until it is
    complete)."""
    _deprecated("wait", _COMPILE_INSTEAD)
    return future.wait()


_ONEDNN = [False]


def enable_onednn_fusion(enabled: bool) -> None:
    _ONEDNN[0] = bool(enabled)


def onednn_fusion_enabled() -> bool:
    return _ONEDNN[0]


def set_fusion_strategy(strategy):
    """``torch.jit.set_fusion_strategy``: Ember does not fuse traced graphs; returns the
    strategy for PyTorch's sake."""
    _deprecated("set_fusion_strategy", _COMPILE_INSTEAD)
    return strategy


def strict_fusion():
    """``torch.jit.strict_fusion``: a context manager that does nothing here."""
    return contextlib.nullcontext()
