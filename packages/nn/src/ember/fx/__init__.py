"""``ember.fx``: capture a program as a graph of Python-level operations, transform it, and
turn it back into a Module (``torch.fx``).

Symbolic tracing runs ``forward`` on :class:`Proxy` values: ember.nn's built-in modules
become ``call_module`` nodes, ember functions and Python operators ``call_function``
nodes, Tensor methods ``call_method`` nodes, parameters ``get_attr`` nodes::

    gm = ember.fx.symbolic_trace(model)
    print(gm.code)                         # the generated forward
    for node in gm.graph.nodes:            # edit the graph ...
        if node.op == "call_function" and node.target is ember.relu:
            node.target = ember.nn.functional.gelu
    gm.recompile()                         # ... and regenerate forward

A :class:`CodeGen` installed with ``graph.set_codegen`` changes the generated ``forward``
(its signature, return statement, extra globals, and how an :class:`Interpreter` maps
inputs and outputs); ``graph.on_generate_code`` transforms the body's lines.

It lives in ember-nn (a :class:`GraphModule` is an ``ember.nn.Module``).
"""

from . import immutable_collections, operator_schemas, passes
from ._symbolic_trace import PH, ProxyableClassMeta, Tracer, symbolic_trace, wrap
from .graph import CodeGen, Graph, PythonCode
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, has_side_effect, map_arg
from .proxy import Proxy, TraceError
from .subgraph_rewriter import replace_pattern

__version__ = "0.1.0"  # ember-nn's version (the distribution that ships ember.fx)

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Interpreter",
           "Transformer", "Node", "Proxy", "replace_pattern", "has_side_effect", "map_arg",
           "PH", "PythonCode", "TraceError", "CodeGen", "ProxyableClassMeta"]
