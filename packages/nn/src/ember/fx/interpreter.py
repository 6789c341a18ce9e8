"""``ember.fx.Interpreter`` and ``Transformer``: run a graph node by node, with a method per
opcode to override (``torch.fx.Interpreter``, ``torch.fx.Transformer``)."""

from __future__ import annotations

import inspect
from typing import Any

from .graph import Graph, _public_function
from .graph_module import GraphModule
from .node import Node, map_aggregate, map_arg
from .proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Runs ``module.graph`` one node at a time: ``run(*args)`` calls ``run_node`` for each
    node, which calls the method named by the node's opcode (``placeholder``, ``get_attr``,
    ``call_function``, ``call_module``, ``call_method``, ``output``) with the node's target
    and its arguments' values. Override those to change what a node does (a ShapeProp
    records each node's output in ``node.meta``). Values are freed after their last use
    (``garbage_collect_values``)."""

    def __init__(self, module, garbage_collect_values: bool = True,
                 graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env: dict[Node, Any] = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            self.user_to_last_uses: dict[Node, list[Node]] = {}
            seen: set[Node] = set()
            for node in reversed(self.graph.nodes):
                for n in node.all_input_nodes:
                    if n not in seen:
                        seen.add(n)
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env: dict | None = None,
            enable_io_processing: bool = True) -> Any:
        """Run the graph on ``args``; returns what its output node returns. With
        ``enable_io_processing`` the graph's codegen turns ``args`` into the graph's inputs
        (``graph.process_inputs``) and its output into the result (``process_outputs``), so
        that a graph with a custom :class:`~ember.fx.CodeGen` runs as its module does."""
        self.env = dict(initial_env) if initial_env is not None else {}
        if enable_io_processing:
            args = self.graph.process_inputs(*args)
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue  # given in initial_env
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    msg = f"While executing {node.format_node()}"
                    msg = f"{e.args[0]}\n\n{msg}" if e.args else msg
                    e.args = (msg, *e.args[1:])
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                output_val = self.env[node]
                return self.graph.process_outputs(output_val) if enable_io_processing \
                    else output_val
        return None

    def boxed_run(self, args_list: list) -> Any:
        """``run`` on the items of ``args_list``, which it empties."""
        args_iter = iter(args_list)
        env = {}
        for n in self.graph.nodes:
            if n.op == "placeholder":
                env[n] = next(args_iter)
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n: Node) -> Any:
        """Run one node: fetch its arguments' values and call the method of its opcode."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        target = _public_function(n.target) if n.op == "call_function" else n.target
        return getattr(self, n.op)(target, args, kwargs)

    # -- one method per opcode ---------------------------------------------------------
    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Any:
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as si:
            if len(args) > 0:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but "
                               "one was not passed in!") from si

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)

    def call_function(self, target, args: tuple, kwargs: dict) -> Any:
        return target(*args, **kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        self_obj, *args_tail = args
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: str, args: tuple, kwargs: dict) -> Any:
        return args[0]

    # -- helpers ------------------------------------------------------------------------
    def fetch_attr(self, target: str) -> Any:
        """The module's attribute at the dotted path ``target``."""
        atoms = target.split(".")
        attr_itr = self.module
        for i, atom in enumerate(atoms):
            if not hasattr(attr_itr, atom):
                raise RuntimeError("Node referenced nonexistent target "
                                   f"{'.'.join(atoms[:i + 1])}")
            attr_itr = getattr(attr_itr, atom)
        return attr_itr

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Any, n: Node) -> Any:
        def load_arg(n_arg: Node) -> Any:
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run "
                                   "Graph.lint() to diagnose such issues")
            return self.env[n_arg]

        return map_arg(args, load_arg)


class Transformer(Interpreter):
    """An Interpreter that builds a new graph instead of computing values: each opcode
    method returns a :class:`Proxy` in the new graph; ``transform()`` returns it as a new
    :class:`GraphModule`. Override ``call_function`` etc. to rewrite nodes."""

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        from ._symbolic_trace import Tracer

        self.new_graph = Graph()
        self.new_graph.set_codegen(module.graph._codegen)

        class TransformerTracer(Tracer):
            def __init__(self, graph: Graph) -> None:
                super().__init__()
                self.graph = graph
                self.tensor_attrs = {}

            def is_leaf_module(self, _, __) -> bool:
                return True

        self.tracer = TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        default = next(iter(args)) if args else inspect.Signature.empty
        node = self.new_graph.placeholder(
            target, default_value=... if default is inspect.Signature.empty else default)
        return Proxy(node, self.tracer)

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target, args: tuple, kwargs: dict) -> Any:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self) -> GraphModule:
        """Run the transformation; returns the new GraphModule."""
        from ._symbolic_trace import _KeepDispatch

        with _KeepDispatch():
            result = super().run(enable_io_processing=False)
        if result is not None:
            def strip_proxy(a):
                return a.node if isinstance(a, Proxy) else a

            self.new_graph.output(map_aggregate(result, strip_proxy))
        return GraphModule(self.module, self.new_graph)
