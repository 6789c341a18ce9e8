"""``ember.fx.GraphModule``: a Module whose ``forward`` is the Python code generated from a
:class:`Graph` (``torch.fx.GraphModule``)."""

from __future__ import annotations

import copy
import itertools
import linecache
import sys
import traceback
from typing import Any

import ember

from ..nn import Module
from ..nn.modules.module import _addindent
from .graph import BUILTIN_GLOBAL_NAMES, Graph, _builtin_globals

__all__ = ["GraphModule"]

_eval_counter = itertools.count()

#: what ``recompile`` derives from the graph: not copied or pickled with the module's state
_GENERATED = ("_graph", "_code", "_code_globals", "_lineno_map", "_prologue_start")


def _exec_forward(src: str, globals_: dict):
    """Compile the generated ``forward`` under a name that tracebacks can show."""
    key = f"<eval_with_key>.{next(_eval_counter)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    namespace = dict(globals_)
    exec(compile(src, key, "exec"), namespace)
    return namespace["forward"]


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    """Copy ``from_module``'s attribute at the dotted path ``target`` into ``to_module``
    (plain tensors become buffers; missing intermediate modules empty Modules)."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:  # the whole submodule is already there
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, ember.Tensor) and not isinstance(orig, ember.nn.Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj: Any, to_module: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(from_obj, ember.Tensor) and not isinstance(from_obj, ember.nn.Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


class _WrappedCall:
    """A GraphModule's ``__call__``: an exception raised by a line of the generated
    ``forward`` itself prints that line with two lines of context to stderr ("Call using an
    FX-traced Module, line N of the traced Module's generated forward function:") and is
    re-raised, as torch.fx does."""

    def __init__(self, cls: type, cls_call) -> None:
        self.cls = cls
        self.cls_call = cls_call

    @staticmethod
    def _generate_error_message(frame_summary: traceback.FrameSummary) -> str:
        err_lineno = frame_summary.lineno
        line = frame_summary.line or ""
        all_src_lines = linecache.getlines(frame_summary.filename)
        custom_msg = ("Call using an FX-traced Module, "
                      f"line {err_lineno} of the traced Module's generated forward function:")
        before_err = "".join(all_src_lines[err_lineno - 2:err_lineno])
        marker = "~" * len(line) + "~~~ <--- HERE"
        err_and_after_err = "\n".join(all_src_lines[err_lineno:err_lineno + 2])
        return "\n".join([traceback.format_exc(), custom_msg, before_err, marker,
                          err_and_after_err])

    def __call__(self, obj, *args, **kwargs):
        try:
            if self.cls_call is not None:
                return self.cls_call(obj, *args, **kwargs)
            return super(self.cls, obj).__call__(*args, **kwargs)
        except Exception as e:
            top = traceback.StackSummary.extract(traceback.walk_tb(e.__traceback__))[-1]
            if "eval_with_key" in top.filename:
                print(_WrappedCall._generate_error_message(top), file=sys.stderr)
                raise e.with_traceback(None)  # noqa: B904 (torch.fx's)
            raise


class GraphModule(Module):
    """A Module built from a :class:`Graph`: it holds the submodules, parameters and
    tensors the graph's ``call_module``/``get_attr`` nodes name (copied from ``root``, a
    Module or a dict), and its ``forward`` is ``graph``'s generated code (``gm.code``).
    Change ``gm.graph`` and call ``recompile()`` to update ``forward``."""

    def __new__(cls, *args, **kwargs):
        # each instance gets its own class, so that its forward (a class attribute, as
        # Module's call path expects) and class name are its own
        if cls.__name__ != "GraphModuleImpl":
            cls = type("GraphModuleImpl", (cls,), {})
        return super().__new__(cls)

    def __init__(self, root: Module | dict, graph: Graph,
                 class_name: str = "GraphModule") -> None:
        super().__init__()
        self.__class__.__name__ = class_name
        self.__class__.__qualname__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but "
                                           "that target was not provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.meta: dict[str, Any] = {}
        self._tracer_cls = getattr(graph, "_tracer_cls", None)
        self.graph = graph

    # -- the graph and its code -----------------------------------------------------------
    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The generated source of ``forward``."""
        if "_code" not in self.__dict__:
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self):
        """Regenerate ``forward`` from ``self.graph`` (after editing the graph)."""
        python_code = self._graph.python_code(root_module="self")
        self.__dict__["_code"] = python_code.src
        self.__dict__["_code_globals"] = python_code.globals
        self.__dict__["_lineno_map"] = python_code._lineno_map
        self.__dict__["_prologue_start"] = python_code._prologue_start
        cls = type(self)
        cls.forward = _exec_forward(python_code.src, python_code.globals)
        # calls go through _WrappedCall, which points at the generated line an error came
        # from; it calls Module.__call__ as looked up at call time (a trace patches it)
        cls_call = cls.__call__ if "__call__" in vars(cls) else None
        if "_wrapped_call" not in vars(cls):
            cls._wrapped_call = _WrappedCall(cls, cls_call)

        def call_wrapped(self, *args, **kwargs):
            return self._wrapped_call(self, *args, **kwargs)

        cls.__call__ = call_wrapped
        return python_code

    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False, *,
                       fast_sympy_print: bool = False, expanded_def: bool = False,
                       additional_meta: list[str] | None = None) -> str:
        """The module as Python source: a class whose ``forward`` is the verbose code of the
        graph (each value annotated with the dtype and shape in ``node.meta``, as
        ``ShapeProp`` records them), with its GraphModule children's classes nested.
        (``fast_sympy_print`` is PyTorch's printer of symbolic sizes; ember's sizes are
        plain ints, so it changes nothing.)"""
        return _print_readable(self, type(self).__name__, print_output, include_stride,
                               include_device, colored, expanded_def, additional_meta)

    def __str__(self) -> str:
        return "\n".join([super().__repr__(), self._code,
                          "# To see more debug info, please use "
                          "`graph_module.print_readable()`"])

    # -- submodules ---------------------------------------------------------------------
    def add_submodule(self, target: str, m: Module) -> bool:
        """Install ``m`` at the dotted path ``target``, making empty parent modules where
        missing; False when a parent in the path is not a Module."""
        *prefix, field = target.split(".")
        mod: Module = self
        for item in prefix:
            submod = getattr(mod, item, None)
            if submod is None:
                submod = Module()
                setattr(mod, item, submod)
            if not isinstance(submod, Module):
                return False
            mod = submod
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at ``target``; False when there is none."""
        *path, field = target.split(".")
        mod: Module = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, field) or not isinstance(getattr(mod, field), Module):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove the submodules no ``call_module`` or ``get_attr`` node uses."""
        used: set[str] = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = node.target.split(".")
                used.update(".".join(atoms[:i]) for i in range(1, len(atoms) + 1))
                if node.op == "call_module":  # a called module's own children stay too
                    sub = self.get_submodule(node.target)
                    used.update(f"{node.target}.{n}" for n, _ in sub.named_modules() if n)
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    def to_folder(self, folder, module_name: str = "FxModule") -> None:
        """Write this module as a package: ``module.py`` (a class whose ``__init__`` loads
        the submodules and state pickled beside it) and ``state_dict.pt``."""
        import os
        import pickle

        os.makedirs(folder, exist_ok=True)
        ember.save(self.state_dict(), os.path.join(folder, "state_dict.pt"))
        layout = {"modules": dict(self.named_children()),
                  "parameters": [k for k, v in self._parameters.items() if v is not None],
                  "buffers": [k for k, v in self._buffers.items() if v is not None]}
        with open(os.path.join(folder, "submodules.pkl"), "wb") as f:
            pickle.dump(layout, f)
        extra = {k: v for k, v in self._code_globals.items()
                 if k not in BUILTIN_GLOBAL_NAMES}
        header = ["import operator", "import pickle", "from math import inf, nan",
                  "from pathlib import Path", "", "import ember",
                  "from ember import device", "", "NoneType = type(None)", "torch = ember"]
        imports = {name: _import_statement(name, obj) for name, obj in extra.items()}
        missing = sorted(name for name, stmt in imports.items() if stmt is None)
        if missing:
            raise RuntimeError(f"to_folder cannot write the globals {missing} the code uses")
        header += sorted(imports.values())
        body = self._code.lstrip("\n").rstrip()
        source = "\n".join([*header, "", "",
                            f"class {module_name}(ember.nn.Module):",
                            "    def __init__(self):",
                            "        super().__init__()",
                            "        here = Path(__file__).parent",
                            "        with open(here / 'submodules.pkl', 'rb') as f:",
                            "            layout = pickle.load(f)",
                            "        for name, child in layout['modules'].items():",
                            "            setattr(self, name, child)",
                            "        state = ember.load(here / 'state_dict.pt')",
                            "        for name in layout['parameters']:",
                            "            self.register_parameter(name, "
                            "ember.nn.Parameter(state[name]))",
                            "        for name in layout['buffers']:",
                            "            self.register_buffer(name, state[name])",
                            "        self.load_state_dict(state)",
                            "",
                            *("    " + line if line.strip() else "" for line in
                              body.split("\n")), ""])
        with open(os.path.join(folder, "module.py"), "w") as f:
            f.write(source)
        with open(os.path.join(folder, "__init__.py"), "w") as f:
            f.write(f"from .module import {module_name}\n")

    # -- copying and pickling -----------------------------------------------------------
    def __deepcopy__(self, memo):
        state = {k: v for k, v in self.__dict__.items()
                 if k not in _GENERATED}
        res = type(self).__bases__[0].__new__(type(self).__bases__[0])
        memo[id(self)] = res
        fake = Module()
        fake.__dict__.update(copy.deepcopy(state, memo))
        graph = copy.deepcopy(self._graph)
        GraphModule.__init__(res, fake, graph, type(self).__name__)
        for k, v in fake.__dict__.items():  # hooks, meta, flags: what __init__ did not copy
            res.__dict__.setdefault(k, v)
        res.meta = copy.deepcopy(self.meta, memo)
        return res

    def __copy__(self):
        res = GraphModule(self, self.graph, type(self).__name__)
        res.meta = copy.copy(self.meta)
        return res

    def __reduce__(self):
        state = {k: v for k, v in self.__dict__.items()
                 if k not in _GENERATED}
        extra = {k: v for k, v in self._code_globals.items()
                 if k not in BUILTIN_GLOBAL_NAMES}
        return _reduce_graph_module, (state, self._code, extra, type(self).__name__)


def _import_statement(name: str, obj: Any) -> str | None:
    """``from module import attr as name`` for a global of generated code that a module
    binds at top level (a function, a class, ``typing.List``), ``name = '...'`` for a
    string annotation; None for anything else."""
    import importlib

    if isinstance(obj, str):  # a string annotation (``from __future__ import annotations``)
        return f"{name} = {obj!r}"
    module = getattr(obj, "__module__", None)
    attr = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not module or not attr or "." in attr or "<" in attr or module == "__main__":
        return None
    try:
        found = getattr(importlib.import_module(module), attr, None)
    except ImportError:
        return None
    return f"from {module} import {attr} as {name}" if found is obj else None


def _print_readable(module: GraphModule, module_name: str, print_output: bool = True,
                    include_stride: bool = False, include_device: bool = False,
                    colored: bool = False, expanded_def: bool = False,
                    additional_meta: list[str] | None = None) -> str:
    code = module.graph.python_code(
        root_module="self", verbose=True, include_stride=include_stride,
        include_device=include_device, colored=colored, expanded_def=expanded_def,
        additional_meta=additional_meta).src
    module_code = _addindent(f"class {module_name}(ember.nn.Module):\n" + code.lstrip("\n"),
                             4)
    submodule_code = [""]
    for child_name, child in module.named_children():
        if isinstance(child, GraphModule):
            submodule_code.append(_print_readable(
                child, child_name, False, include_stride, include_device, colored,
                additional_meta=additional_meta))
    output = module_code + _addindent("\n".join(submodule_code), 4)
    if print_output:
        print(output)
    return output


def _reduce_graph_module(state: dict, code: str, extra_globals: dict, class_name: str):
    """Rebuild a pickled GraphModule: run its code's ``forward`` on a module holding its
    state, tracing with every submodule a leaf."""
    from ._symbolic_trace import Tracer

    globals_ = {**_builtin_globals(), **extra_globals}
    forward = _exec_forward(code, globals_)
    holder_cls = type(class_name, (Module,), {"forward": forward})
    holder = holder_cls.__new__(holder_cls)
    holder.__dict__.update(state)

    class KeepModules(Tracer):
        def is_leaf_module(self, m, module_qualified_name) -> bool:
            return True

    graph = KeepModules().trace(holder)
    gm = GraphModule(holder, graph, class_name)
    for k, v in state.items():
        gm.__dict__.setdefault(k, v)
    return gm
