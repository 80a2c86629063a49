"""The lineage graph: how sessions relate (forks, spawns, and the edges integrators add)."""

from ._errors import LineageEdgeError as LineageEdgeError
from ._graph import LineageGraph as LineageGraph
from ._render import render_lineage_tree as render_lineage_tree
from ._types import HOST_RELATIONS as HOST_RELATIONS
from ._types import NATIVE_ARTIFACT_TYPES as NATIVE_ARTIFACT_TYPES
from ._types import LineageArtifact as LineageArtifact
from ._types import LineageChain as LineageChain
from ._types import LineageEdge as LineageEdge
from ._types import LineageRelation as LineageRelation
from ._types import SessionMetrics as SessionMetrics
from ._types import SessionNode as SessionNode

__all__ = [
    "HOST_RELATIONS",
    "NATIVE_ARTIFACT_TYPES",
    "LineageArtifact",
    "LineageChain",
    "LineageEdge",
    "LineageEdgeError",
    "LineageGraph",
    "LineageRelation",
    "SessionMetrics",
    "SessionNode",
    "render_lineage_tree",
]
