"""The lineage graph's data: session nodes, typed edges, artifacts, metrics, and chains.

The records themselves (nodes, edges, artifacts, metrics, relations) live with what a store
keeps, in `host_sim.stores._records`, the bottom floor, so stores never import lineage;
they are re-exported here. Edges point from the parent (or source) session to the child:
``branched_from`` goes from the forked session's parent to the fork, ``spawned_by`` from
the spawner to the spawn.
"""

from __future__ import annotations

import attrs

from ..stores._records import HOST_RELATIONS as HOST_RELATIONS
from ..stores._records import NATIVE_ARTIFACT_TYPES as NATIVE_ARTIFACT_TYPES
from ..stores._records import LineageArtifact as LineageArtifact
from ..stores._records import LineageEdge as LineageEdge
from ..stores._records import LineageRelation as LineageRelation
from ..stores._records import SessionMetrics as SessionMetrics
from ..stores._records import SessionNode as SessionNode

__all__ = [
    "HOST_RELATIONS",
    "NATIVE_ARTIFACT_TYPES",
    "LineageArtifact",
    "LineageChain",
    "LineageEdge",
    "LineageRelation",
    "SessionMetrics",
    "SessionNode",
]


@attrs.frozen(kw_only=True)
class LineageChain:
    """A session with its ancestors and descendants, and the edges between them."""

    nodes: tuple[SessionNode, ...]
    edges: tuple[LineageEdge, ...]
