"""``split_module``: cut a GraphModule into submodules, one per partition of its nodes
(``torch.fx.passes.split_module``)."""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from typing import Any

from ..graph import Graph
from ..graph_module import GraphModule
from ..node import Node, map_arg

__all__ = ["Partition", "split_module"]


class Partition:
    """One partition: its nodes' names, the values it reads (``inputs``) and the values
    other partitions or the output read from it (``outputs``), and its graph."""

    def __init__(self, name: str) -> None:
        self.name: str = name
        self.submod_name = f"submod_{name}"
        self.node_names: list[str] = []
        self.inputs: dict[str, None] = {}
        self.outputs: dict[str, None] = {}
        self.dependencies: dict[str, None] = {}
        self.dependents: dict[str, None] = {}
        self.graph: Graph = Graph()
        self.environment: dict[Node, Node] = {}
        self.targets: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (f"name: {self.name},\n"
                f" nodes: {self.node_names},\n"
                f" inputs: {self.inputs},\n"
                f" outputs: {self.outputs},\n"
                f" partitions depended on: {self.dependencies},\n"
                f" partition dependents: {self.dependents}")


def _get_attr_from_qualname(mod, qualname: str) -> Any:
    attr_val = mod
    for atom in qualname.split("."):
        if not hasattr(attr_val, atom):
            raise AttributeError(f"Node target {qualname} not found!")
        attr_val = getattr(attr_val, atom)
    return attr_val


def split_module(m: GraphModule, root_m, split_callback: Callable[[Node], int],
                 qualname_map: dict[str, str] | None = None,
                 keep_original_order: bool | None = False,
                 keep_original_node_name: bool | None = False,
                 keep_original_input_name: bool = True, *,
                 partition_affix: str | None = None,
                 tuple_return: bool = False) -> GraphModule:
    """Split ``m`` into one ``GraphModule`` per partition: ``split_callback(node)`` gives the
    partition number of each computing node (``placeholder``/``get_attr``/``output`` stay in
    the top graph). The result calls ``submod_<n>`` in dependency order (in first-seen
    order with ``keep_original_order``), each returning the values that later partitions or
    the output use (a tuple when several, or always with ``tuple_return``), and computes
    what ``m`` computes. ``qualname_map`` (an output) maps each submodule's new target
    ``submod_<n>.<a_b>`` to its original path ``a.b``. ``root_m`` is unused, as in PyTorch.
    ``keep_original_node_name`` keeps the nodes' names in the partitions;
    ``keep_original_input_name=False`` names the partitions' inputs ``arg_0``, ``arg_1``...;
    ``partition_affix`` names the submodules ``submod_<affix>_<n>``.

    A cycle between partitions raises ``RuntimeError("cycle exists between partitions!")``.
    """
    partitions: dict[str, Partition] = {}
    orig_nodes: dict[str, Node] = {}
    node_partition: dict[Node, str] = {}

    def record_cross_partition_use(def_node: Node, use_node: Node | None) -> None:
        defined = node_partition.get(def_node)
        used = node_partition.get(use_node) if use_node is not None else None
        if defined == used:
            return
        if defined is not None:
            def_partition = partitions[defined]
            def_partition.outputs.setdefault(def_node.name)
            if used is not None:
                def_partition.dependents.setdefault(used)
        if used is not None:
            use_partition = partitions[used]
            use_partition.inputs.setdefault(def_node.name)
            if defined is not None:
                use_partition.dependencies.setdefault(defined)

    for node in m.graph.nodes:
        if node.op in ("placeholder", "get_attr", "output"):
            continue
        name = str(split_callback(node))
        if partition_affix is not None:
            name = f"{partition_affix}_{name}"
        partition = partitions.get(name)
        if partition is None:
            partitions[name] = partition = Partition(name)
        partition.node_names.append(node.name)
        node_partition[node] = name

    for node in m.graph.nodes:
        orig_nodes[node.name] = node
        if node.op in ("placeholder", "get_attr"):
            continue
        if node.op == "output":
            map_arg(node.args[0], lambda n: record_cross_partition_use(n, None))
            continue
        map_arg(node.args, lambda d, node=node: record_cross_partition_use(d, node))
        map_arg(node.kwargs, lambda d, node=node: record_cross_partition_use(d, node))

    original_partition_order = list(partitions)
    # Kahn's algorithm over the partitions' dependencies
    root_partitions = [name for name, p in partitions.items() if not p.dependencies]
    sorted_partitions: list[str] = []
    while root_partitions:
        root_partition = root_partitions.pop()
        sorted_partitions.append(root_partition)
        for dependent in partitions[root_partition].dependents:
            partitions[dependent].dependencies.pop(root_partition)
            if not partitions[dependent].dependencies:
                root_partitions.append(dependent)
    if len(sorted_partitions) != len(partitions):
        raise RuntimeError("cycle exists between partitions!")

    # each partition's inputs: placeholders, or get_attr of a module it calls through
    from ember.nn import Module

    for partition_name in sorted_partitions:
        partition = partitions[partition_name]
        new_inputs: dict[str, None] = {}
        counter = 0
        is_module_attr = lambda n: n.op == "get_attr" and isinstance(
            _get_attr_from_qualname(m, n.target), Module)
        ordered = [i for i in partition.inputs if not is_module_attr(orig_nodes[i])] + \
                  [i for i in partition.inputs if is_module_attr(orig_nodes[i])]
        for inp in ordered:
            orig_node = orig_nodes[inp]
            if is_module_attr(orig_node):
                placeholder = partition.graph.get_attr(orig_node.target)
                partition.targets[orig_node.target] = _get_attr_from_qualname(
                    m, orig_node.target)
            else:
                if keep_original_input_name:
                    name = inp
                else:
                    name = f"arg_{counter}"
                    counter += 1
                placeholder = partition.graph.placeholder(name, type_expr=orig_node.type)
                new_inputs[inp] = None
            placeholder.meta = orig_node.meta.copy()
            partition.environment[orig_node] = placeholder
        partition.inputs = new_inputs

    # copy each node into its partition
    for node in m.graph.nodes:
        partition_name = node_partition.get(node)
        if partition_name is None:
            continue
        partition = partitions[partition_name]
        environment = partition.environment
        gathered_args = map_arg(node.args, environment.__getitem__)
        gathered_kwargs = map_arg(node.kwargs, environment.__getitem__)
        if node.op not in ("call_module", "get_attr"):
            target = node.target
        else:
            target_attr = _get_attr_from_qualname(m, node.target)
            target = node.target.replace(".", "_")
            partition.targets[target] = target_attr
            if qualname_map is not None:
                qualname_map[f"{partition.submod_name}.{target}"] = node.target
        new_node = partition.graph.create_node(
            node.op, target, gathered_args, gathered_kwargs,
            name=node.name if keep_original_node_name else None, type_expr=node.type)
        new_node.meta = node.meta.copy()
        partition.environment[node] = new_node

    base_mod_env: dict[str, Node] = {}
    base_mod_graph = Graph()
    base_mod_attrs: dict[str, Any] = {}

    def construct_graph(node: Node) -> None:
        if node.op == "placeholder":
            default = node.args[0] if len(node.args) > 0 else inspect.Signature.empty
            if keep_original_node_name:
                args = () if default is inspect.Signature.empty else (default,)
                base_mod_env[node.name] = base_mod_graph.create_node(
                    "placeholder", node.name, args=args, type_expr=node.type)
            else:
                base_mod_env[node.name] = base_mod_graph.placeholder(
                    node.target, type_expr=node.type,
                    default_value=... if default is inspect.Signature.empty else default)
            base_mod_env[node.name].meta = node.meta.copy()
        elif node.op == "get_attr":
            base_mod_env[node.name] = base_mod_graph.get_attr(node.target)
            base_mod_env[node.name].meta = node.meta.copy()
            base_mod_attrs[node.target] = _get_attr_from_qualname(m, node.target)

    if not keep_original_order:
        for node in m.graph.nodes:
            construct_graph(node)
    constructed: set[Node] = set()
    original_order = [node for node in m.graph.nodes if node.op == "placeholder"]
    for partition_name in (sorted_partitions if not keep_original_order
                           else original_partition_order):
        partition = partitions[partition_name]
        output_vals = tuple(partition.environment[orig_nodes[name]]
                            for name in partition.outputs)
        if len(output_vals) == 1 and not tuple_return:
            partition.graph.output(output_vals[0])
        else:
            partition.graph.output(output_vals)
        if keep_original_order:
            # placeholders first, then the attributes this partition reads, as they come
            for node in [*original_order,
                         *(orig_nodes[k] for k in partition.inputs
                           if orig_nodes[k] not in original_order)]:
                if node not in constructed:
                    construct_graph(node)
                    constructed.add(node)
        base_mod_attrs[partition.submod_name] = GraphModule(partition.targets,
                                                            partition.graph)
        output_val = base_mod_graph.call_module(
            partition.submod_name, tuple(base_mod_env[name] for name in partition.inputs))
        num_outputs = len(partition.outputs)
        if num_outputs > 1 or (num_outputs == 1 and tuple_return):
            for i, output_name in enumerate(partition.outputs):
                base_mod_env[output_name] = base_mod_graph.call_function(
                    operator.getitem, (output_val, i))
        elif num_outputs == 1:
            base_mod_env[next(iter(partition.outputs))] = output_val
    if keep_original_order and not base_mod_env:
        for node in m.graph.nodes:
            construct_graph(node)
    for node in m.graph.nodes:
        if node.op == "output":
            base_mod_graph.output(map_arg(node.args[0], lambda n: base_mod_env[n.name]))
    ret = GraphModule(base_mod_attrs, base_mod_graph)
    ret.meta["partition_names"] = {p.submod_name for p in partitions.values()}
    return ret
