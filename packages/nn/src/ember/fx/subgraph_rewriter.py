"""``replace_pattern``: find every occurrence of a pattern's graph and put a replacement's
graph in its place (``torch.fx.subgraph_rewriter``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from .graph import Graph, _same_function
from .graph_module import GraphModule
from .node import Node, map_arg

__all__ = ["Match", "replace_pattern", "replace_pattern_with_filters", "ReplacedPatterns"]


class Match(NamedTuple):
    #: the pattern node the match was found from (what the pattern returns)
    anchor: Node
    #: pattern node -> matched node of the graph
    nodes_map: dict[Node, Node]


@dataclass
class ReplacedPatterns:
    """One replacement made by :func:`replace_pattern_with_filters`."""

    #: the pattern node the match was found from
    anchor: Node
    #: pattern node -> matched node of the graph
    nodes_map: dict[Node, Node]
    #: the nodes added into the graph
    replacements: list[Node]


def _as_graph(fn_or_graph: Callable | GraphModule | Graph) -> Graph:
    if isinstance(fn_or_graph, GraphModule):
        return fn_or_graph.graph
    if isinstance(fn_or_graph, Graph):
        return fn_or_graph
    from ._symbolic_trace import symbolic_trace

    return symbolic_trace(fn_or_graph).graph


class _Matcher:
    """Matches a pattern graph at a node of a graph, following the pattern's arguments
    backwards from what it returns; a pattern placeholder matches any value (the same one
    wherever it is used); with ``ignore_literals`` a pattern's literal matches any literal;
    a graph node whose name holds ``node_name_match`` matches any pattern node."""

    def __init__(self, pattern: Graph, ignore_literals: bool = False,
                 node_name_match: str = "") -> None:
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]
        output = next(n for n in pattern.nodes if n.op == "output")
        if not isinstance(output.args[0], Node):
            raise NotImplementedError("ember.fx.replace_pattern: the pattern must return "
                                      "one value")
        self.anchor: Node = output.args[0]
        self.ignore_literals = ignore_literals
        self.node_name_match = node_name_match

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
        if len(pn.args) != len(gn.args) or set(pn.kwargs) != set(gn.kwargs):
            return False
        if not (self.node_name_match and self.node_name_match in gn.name):
            if pn.op != gn.op:
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
        if self.ignore_literals and not isinstance(ga, (Node, tuple, list, dict)):
            return True
        return not isinstance(ga, Node) and type(pa) is type(ga) and pa == ga


def replace_pattern(gm: GraphModule, pattern: Callable | GraphModule | Graph,
                    replacement: Callable | GraphModule | Graph) -> list[Match]:
    """Replace every non-overlapping occurrence of ``pattern``'s graph in ``gm`` with
    ``replacement``'s graph (both are traced when they are functions; they take the same
    arguments, which match any values of ``gm``). An occurrence whose inner values are used
    outside it is left alone. Returns the matches; ``gm`` is recompiled."""
    return [Match(anchor=r.anchor, nodes_map=r.nodes_map)
            for r in _replace_pattern(gm, pattern, replacement)]


def replace_pattern_with_filters(
        gm: GraphModule, pattern: Callable | GraphModule | Graph,
        replacement: Callable | GraphModule | Graph | None = None,
        match_filters: list[Callable] | None = None, ignore_literals: bool = False,
        replacement_callback: Callable | None = None,
        node_name_match: str = "") -> list[ReplacedPatterns]:
    """:func:`replace_pattern` with more control: only the matches for which every
    ``match_filters`` function ``f(match, original_graph, pattern_graph)`` is true are
    replaced (``match`` is an :class:`~ember.fx.passes.utils.matcher_utils.InternalMatch`);
    ``ignore_literals`` lets the pattern's constants match any constant;
    ``replacement_callback(match, original_graph, pattern_graph)`` returns the replacement
    graph of each match (instead of ``replacement``); a graph node whose name contains
    ``node_name_match`` matches any pattern node. Returns a :class:`ReplacedPatterns` per
    replacement, with the nodes it added."""
    return _replace_pattern(gm, pattern, replacement, match_filters, ignore_literals,
                            replacement_callback, node_name_match)


def _replace_pattern(gm: GraphModule, pattern, replacement, match_filters=None,
                     ignore_literals: bool = False, replacement_callback=None,
                     node_name_match: str = "") -> list[ReplacedPatterns]:
    from .passes.utils.matcher_utils import InternalMatch

    pattern_graph = _as_graph(pattern)
    matcher = _Matcher(pattern_graph, ignore_literals, node_name_match)
    graph = gm.graph
    matches: list[InternalMatch] = []
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
        match = InternalMatch(
            anchors=[matcher.anchor], nodes_map=nodes_map,
            placeholder_nodes=[nodes_map[p] for p in matcher.placeholders if p in nodes_map],
            returning_nodes=[nodes_map[matcher.anchor]])
        if not all(f(match, graph, pattern_graph) for f in match_filters or ()):
            continue
        taken |= inner
        matches.append(match)
    if replacement is None and replacement_callback is None:
        raise AssertionError("Must provide either a replacement GraphModule or a replacement "
                             "callback")
    common = _as_graph(replacement) if replacement is not None else None
    results: list[ReplacedPatterns] = []
    for match in matches:
        replacement_graph = replacement_callback(match, graph, pattern_graph) \
            if replacement_callback is not None else common
        replacement_placeholders = [n for n in replacement_graph.nodes
                                    if n.op == "placeholder"]
        if len(replacement_placeholders) != len(matcher.placeholders):
            raise ValueError("replace_pattern: the pattern and the replacement must take the "
                             "same number of arguments")
        anchor = match.nodes_map[matcher.anchor]
        val_map = {rp: match.nodes_map[pp] for rp, pp in
                   zip(replacement_placeholders, matcher.placeholders) if pp in match.nodes_map}
        # where torch.fx puts it: before the first node that reads the matched value
        order = {n: i for i, n in enumerate(graph.nodes)}
        users = sorted(anchor.users, key=order.__getitem__)
        added: list[Node] = []
        owner = replacement_graph.owning_module
        with graph.inserting_before(users[0] if users else anchor.next):
            for rn in replacement_graph.nodes:
                if rn.op == "placeholder":
                    continue
                if rn.op == "output":
                    new_value = map_arg(rn.args[0], val_map.__getitem__)
                    break
                if rn.op in ("get_attr", "call_module") and not _has_attr(gm, rn.target) \
                        and owner is not None:
                    _copy_into(owner, gm, rn.target)
                val_map[rn] = graph.node_copy(rn, val_map.__getitem__)
                added.append(val_map[rn])
        anchor.replace_all_uses_with(new_value)
        for pn in match.nodes_map:  # the anchor first, then what it read
            gn = match.nodes_map[pn]
            if pn.op != "placeholder" and not gn.users:
                graph.erase_node(gn)
        results.append(ReplacedPatterns(anchor=matcher.anchor, nodes_map=match.nodes_map,
                                        replacements=added))
    gm.recompile()
    return results


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
