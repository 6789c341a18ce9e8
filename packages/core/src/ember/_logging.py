"""``torch._logging``: ``set_logs``, PyTorch's switchboard for its compiler and runtime logs.

Ember has one of those logs: graph breaks of ``ember.compile`` (``set_logs(graph_breaks=True)``
reports each as a ``UserWarning`` naming its reason, as ``ember._dynamo.config.
warn_on_graph_break`` does; ``dynamo=logging.INFO`` or ``all=...`` at INFO or below turns it
on too). Every other of PyTorch's settings is accepted and changes nothing: Ember has no
such log (no bytecode, guards-as-code, inductor, AOT or distributed compiler logs).
``set_logs()`` with no arguments resets, as in PyTorch.
"""

from __future__ import annotations

import logging

__all__ = ["set_logs"]

#: PyTorch's ``set_logs`` keywords that take a level (the rest take a bool; ``modules`` a dict)
_LEVELS = ("all", "dynamo", "aot", "autograd", "dynamic", "inductor", "distributed", "c10d",
           "ddp", "fsdp", "dtensor", "onnx", "export")
_FLAGS = ("bytecode", "aot_graphs", "aot_joint_graph", "ddp_graphs", "graph", "graph_code",
          "graph_code_verbose", "graph_breaks", "side_effects", "graph_sizes", "guards",
          "recompiles", "recompiles_verbose", "trace_source", "trace_call", "trace_bytecode",
          "output_code", "kernel_code", "schedule", "perf_hints", "pre_grad_graphs",
          "post_grad_graphs", "ir_pre_fusion", "ir_post_fusion", "onnx_diagnostics", "fusion",
          "overlap", "cudagraphs", "sym_node", "compiled_autograd",
          "compiled_autograd_verbose", "cudagraph_static_inputs", "benchmarking",
          "autotuning", "incremental", "graph_region_expansion", "inductor_metrics",
          "hierarchical_compile", "compute_dependencies", "caching")


def set_logs(**kwargs) -> None:
    """Set the compiler and runtime logs (``torch._logging.set_logs``; see the module doc:
    only graph breaks have an Ember log). Unknown keywords raise PyTorch's TypeError."""
    from ._compile import config

    for key, value in kwargs.items():
        if key == "modules":
            if value is not None and not isinstance(value, dict):
                raise TypeError(f"modules must be a dict, got {type(value).__name__}")
        elif key not in _LEVELS and key not in _FLAGS:
            raise TypeError(f"set_logs() got an unexpected keyword argument '{key}'")
        elif key in _LEVELS and value is not None and not isinstance(value, int):
            raise TypeError(f"{key} must be a logging level (int), got {type(value).__name__}")
    on = bool(kwargs.get("graph_breaks"))
    for key in ("all", "dynamo"):
        level = kwargs.get(key)
        on = on or (level is not None and level <= logging.INFO)
    config.warn_on_graph_break = on
