"""``torch.fx.experimental.optimization``: graph passes over a traced model for inference.

``fuse(model)`` traces the model with ``ember.fx`` and folds each batch norm that follows a
convolution (1-, 2- or 3-d) or a ``Linear`` into that layer's weight and bias, when the
layer's output feeds only the batch norm and the batch norm tracks running statistics: the
returned ``GraphModule`` computes what the model computes in eval mode with one op fewer per
pair (``nn.utils.fusion``'s formulas; the model must be in eval mode, as there).
"""

from __future__ import annotations

import copy

from ... import nn
from ...nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
from .. import GraphModule, Node, symbolic_trace

__all__ = ["fuse", "matches_module_pattern", "replace_node_module"]

#: (layer, the batch norm after it) pairs that fold
_PATTERNS = [(nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d),
             (nn.Conv3d, nn.BatchNorm3d), (nn.Linear, nn.BatchNorm1d)]


def _parent_name(target: str) -> tuple[str, str]:
    *parent, name = target.rsplit(".", 1)
    return (parent[0] if parent else ""), name


def matches_module_pattern(pattern, node: Node, modules: dict) -> bool:
    """Whether ``node`` calls a module of ``pattern[-1]``'s type on the output of a module
    of ``pattern[0]``'s (their exact types, as PyTorch checks)."""
    if not node.args:
        return False
    for expected, current in zip(pattern, (node.args[0], node)):
        if not isinstance(current, Node) or current.op != "call_module" \
                or not isinstance(current.target, str) or current.target not in modules \
                or type(modules[current.target]) is not expected:
            return False
    return True


def replace_node_module(node: Node, modules: dict, new_module) -> None:
    """Put ``new_module`` where ``node``'s module was, in ``modules`` and in its parent."""
    if not isinstance(node.target, str):
        raise TypeError(f"replace_node_module: node {node.name} calls no module by name")
    parent, name = _parent_name(node.target)
    modules[node.target] = new_module
    setattr(modules[parent], name, new_module)


def fuse(model, inplace: bool = False, no_trace: bool = False):
    """Fold the batch norms that follow convolutions and linear layers into them (see the
    module's docstring). ``inplace=False`` works on a deep copy of ``model``; ``no_trace``:
    ``model`` is an ``ember.fx.GraphModule`` already, used as it is."""
    if not inplace:
        model = copy.deepcopy(model)
    fx_model = model if no_trace and isinstance(model, GraphModule) else symbolic_trace(model)
    modules = dict(fx_model.named_modules())
    new_graph = copy.deepcopy(fx_model.graph)
    for pattern in _PATTERNS:
        for node in list(new_graph.nodes):
            if not matches_module_pattern(pattern, node, modules):
                continue
            first = node.args[0]
            if len(first.users) > 1:  # the layer's output is also used elsewhere
                continue
            layer, bn = modules[first.target], modules[node.target]
            if not bn.track_running_stats:
                continue
            fused = fuse_linear_bn_eval(layer, bn) if isinstance(layer, nn.Linear) \
                else fuse_conv_bn_eval(layer, bn)
            replace_node_module(first, modules, fused)
            node.replace_all_uses_with(first)
            new_graph.erase_node(node)
    return GraphModule(fx_model, new_graph)
