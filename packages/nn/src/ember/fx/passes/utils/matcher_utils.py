"""What a subgraph match is (``torch.fx.passes.utils.matcher_utils.InternalMatch``): the
value ``replace_pattern_with_filters`` hands its ``match_filters`` and
``replacement_callback``."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...node import Node

__all__ = ["InternalMatch"]


@dataclass
class InternalMatch:
    #: the pattern nodes the match was found from (what the pattern returns)
    anchors: list[Node]
    #: pattern node -> matched node of the graph
    nodes_map: dict[Node, Node] = field(default_factory=dict)
    #: the graph's nodes matched to the pattern's placeholders, in the pattern's order
    placeholder_nodes: list[Node] = field(default_factory=list)
    #: the graph's nodes matched to what the pattern returns
    returning_nodes: list[Node] = field(default_factory=list)
    #: name -> graph node (for named patterns; empty here)
    name_node_map: dict[str, Node] = field(default_factory=dict)

    def __copy__(self) -> InternalMatch:
        return InternalMatch(anchors=self.anchors, nodes_map=self.nodes_map.copy(),
                             placeholder_nodes=self.placeholder_nodes.copy(),
                             returning_nodes=self.returning_nodes.copy())
