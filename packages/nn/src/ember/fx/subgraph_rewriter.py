"""``replace_pattern``: find every occurrence of a pattern's graph and put a replacement's
graph in its place (``torch.fx.subgraph_rewriter``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .graph import _same_function
from .graph_module import GraphModule
from .node import Node, map_arg

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    #: the pattern node the match was found from (what the pattern returns)
    anchor: Node
    #: pattern node -> matched node of the graph
    nodes_map: dict[Node, Node]


def _as_graph_module(fn_or_gm: Callable | GraphModule) -> GraphModule:
    if isinstance(fn_or_gm, GraphModule):
        return fn_or_gm
    from ._symbolic_trace import symbolic_trace

    return symbolic_trace(fn_or_gm)


class _Matcher:
    """Matches a pattern graph at a node of a graph, following the pattern's arguments
    backwards from what it returns; a pattern placeholder matches any value (the same one
    wherever it is used)."""

    def __init__(self, pattern: GraphModule) -> None:
        self.placeholders = [n for n in pattern.graph.nodes if n.op == "placeholder"]
        output = next(n for n in pattern.graph.nodes if n.op == "output")
        if not isinstance(output.args[0], Node):
            raise NotImplementedError("ember.fx.replace_pattern: the pattern must return "
                                      "one value")
        self.anchor: Node = output.args[0]

    def match_at(self, node: Node) -> dict[Node, Node] | None:
        nodes_map: dict[Node, Node] = {}
        return nodes_map if self._match_node(self.anchor, node, nodes_map) else None

    def _match_node(self, pn: Node, gn: Node, nodes_map: dict) -> bool:
        if pn in nodes_map:
            return nodes_map[pn] is gn
        if pn.op == "placeholder":
            if gn in nodes_map.values():  # two pattern inputs cannot be one value
                return False
            nodes_map[pn] = gn
            return True
        if pn.op != gn.op or len(pn.args) != len(gn.args) or set(pn.kwargs) != set(gn.kwargs):
            return False
        if pn.op in ("call_function", "call_method"):
            if not _same_function(pn.target, gn.target) and pn.target != gn.target:
                return False
        elif pn.target != gn.target:
            return False
        nodes_map[pn] = gn
        snapshot = dict(nodes_map)
        ok = self._match_arg(pn.args, gn.args, nodes_map) and all(
            self._match_arg(pn.kwargs[k], gn.kwargs[k], nodes_map) for k in pn.kwargs)
        if not ok:
            nodes_map.clear()
            nodes_map.update(snapshot)
            del nodes_map[pn]
        return ok

    def _match_arg(self, pa: Any, ga: Any, nodes_map: dict) -> bool:
        if isinstance(pa, Node):
            return isinstance(ga, Node) and self._match_node(pa, ga, nodes_map)
        if isinstance(pa, (tuple, list)):
            return type(pa) is type(ga) and len(pa) == len(ga) and all(
                self._match_arg(p, g, nodes_map) for p, g in zip(pa, ga))
        if isinstance(pa, dict):
            return isinstance(ga, dict) and pa.keys() == ga.keys() and all(
                self._match_arg(pa[k], ga[k], nodes_map) for k in pa)
        return not isinstance(ga, Node) and type(pa) is type(ga) and pa == ga


def replace_pattern(gm: GraphModule, pattern: Callable | GraphModule,
                    replacement: Callable | GraphModule) -> list[Match]:
    """Replace every non-overlapping occurrence of ``pattern``'s graph in ``gm`` with
    ``replacement``'s graph (both are traced when they are functions; they take the same
    arguments, which match any values of ``gm``). An occurrence whose inner values are used
    outside it is left alone. Returns the matches; ``gm`` is recompiled."""
    pattern_gm = _as_graph_module(pattern)
    replacement_gm = _as_graph_module(replacement)
    matcher = _Matcher(pattern_gm)
    graph = gm.graph
    matches: list[Match] = []
    taken: set[Node] = set()
    for node in list(graph.nodes):
        nodes_map = matcher.match_at(node)
        if nodes_map is None:
            continue
        inner = {gn for pn, gn in nodes_map.items() if pn.op != "placeholder"}
        if inner & taken:
            continue
        used_outside = any(user not in inner for pn, gn in nodes_map.items()
                           if pn.op != "placeholder" and pn is not matcher.anchor
                           for user in gn.users)
        if used_outside:
            continue
        taken |= inner
        matches.append(Match(anchor=matcher.anchor, nodes_map=nodes_map))
    replacement_placeholders = [n for n in replacement_gm.graph.nodes
                                if n.op == "placeholder"]
    if len(replacement_placeholders) != len(matcher.placeholders):
        raise ValueError("replace_pattern: the pattern and the replacement must take the "
                         "same number of arguments")
    for match in matches:
        anchor = match.nodes_map[matcher.anchor]
        val_map = {rp: match.nodes_map[pp] for rp, pp in
                   zip(replacement_placeholders, matcher.placeholders) if pp in match.nodes_map}
        # where torch.fx puts it: before the first node that reads the matched value
        order = {n: i for i, n in enumerate(graph.nodes)}
        users = sorted(anchor.users, key=order.__getitem__)
        with graph.inserting_before(users[0] if users else anchor.next):
            for rn in replacement_gm.graph.nodes:
                if rn.op == "placeholder":
                    continue
                if rn.op == "output":
                    new_value = map_arg(rn.args[0], val_map.__getitem__)
                    break
                if rn.op in ("get_attr", "call_module") and not _has_attr(gm, rn.target):
                    _copy_into(replacement_gm, gm, rn.target)
                val_map[rn] = graph.node_copy(rn, val_map.__getitem__)
        anchor.replace_all_uses_with(new_value)
        for pn in match.nodes_map:  # the anchor first, then what it read
            gn = match.nodes_map[pn]
            if pn.op != "placeholder" and not gn.users:
                graph.erase_node(gn)
    gm.recompile()
    return matches


def _has_attr(gm: GraphModule, target: str) -> bool:
    obj: Any = gm
    for atom in target.split("."):
        if not hasattr(obj, atom):
            return False
        obj = getattr(obj, atom)
    return True


def _copy_into(src: GraphModule, dst: GraphModule, target: str) -> None:
    from .graph_module import _copy_attr

    _copy_attr(src, dst, target)
