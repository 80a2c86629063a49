"""Provenance answers as JSON data: one shape for ``host-sim lineage --json`` and the MCP server."""

from __future__ import annotations

from ._provenance import ErasurePlan, Provenance, RecordOrigin, RecordRef, TurnOrigin, TurnRef
from ._types import LineageEdge

__all__ = ["origin_data", "plan_data", "provenance_data", "record_origin_data"]


def _ref_data(ref: TurnRef | RecordRef) -> dict[str, object]:
    if isinstance(ref, RecordRef):
        return {"session_id": ref.session_id, "record_id": ref.record_id, "kind": ref.kind}
    return {"session_id": ref.session_id, "turn_id": ref.turn_id, "ordinal": ref.ordinal}


def _edge_data(edge: LineageEdge) -> dict[str, object]:
    artifact = edge.artifact
    return {
        "from": edge.from_session_id,
        "to": edge.to_session_id,
        "relation": edge.relation,
        "artifact": None
        if artifact is None
        else {"type": artifact.type, "source_id": artifact.source_id, "label": artifact.label},
    }


def provenance_data(p: Provenance) -> dict[str, object]:
    """``lineage.forward``'s answer as JSON data."""
    return {
        "of": _ref_data(p.of),
        "sessions": list(p.sessions),
        "turns": [_ref_data(r) for r in p.turns],
        "spawns": list(p.spawns),
        "edges": [_edge_data(e) for e in p.edges],
        "records": [_ref_data(r) for r in p.records],
    }


def record_origin_data(o: RecordOrigin) -> dict[str, object]:
    """``lineage.backward``'s answer for a memory record as JSON data."""
    return {
        "of": _ref_data(o.of),
        "read_from": [_ref_data(r) for r in o.read_from],
        "passages": [{"first": w.first, "last": w.last} for w in o.passages],
        "records": [_ref_data(r) for r in o.records],
    }


def origin_data(o: TurnOrigin) -> dict[str, object]:
    """``lineage.backward``'s answer as JSON data."""
    return {"of": _ref_data(o.of), "read_from": [_ref_data(r) for r in o.read_from], "sessions": list(o.sessions)}


def plan_data(p: ErasurePlan) -> dict[str, object]:
    """``lineage.forget``'s plan as JSON data."""
    return {
        "of": _ref_data(p.of),
        "erased": p.erased,
        "turns": [_ref_data(r) for r in p.turns],
        "sessions": list(p.sessions),
        "spawns": list(p.spawns),
        "edges": [_edge_data(e) for e in p.edges],
        "records": [_ref_data(r) for r in p.records],
    }
