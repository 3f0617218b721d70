"""Helpers shared by the JavaScript tests: run the analysis, pass Evidence inline or retained."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from rea.evidence import Evidence
from rea.evidence import to_builtins
from rea.session import Session
from rea.testing import call_tool


def analyze(session: Session, path: Path | str, **extra: Any) -> Evidence:
    out = call_tool(session, "analyze_javascript_application", {"input_path": str(path), "detail": "complete", **extra})
    assert out.evidence is not None
    return out.evidence


def graph(ev: Evidence) -> dict[str, Any]:
    """An analysis's result as the JSON a client decodes (the Evidence holds the Application Struct)."""
    out: dict[str, Any] = msgspec.to_builtins(ev.normalized_result)
    return out


def inline(ev: Evidence) -> dict[str, Any]:
    return to_builtins(ev)


def retained(session: Session, ev: Evidence) -> dict[str, str]:
    session.ledger.record(ev)
    return {"kind": "retained-evidence", "evidence_id": ev.evidence_id}


def modules_by_id(ev: Evidence) -> dict[str, dict[str, Any]]:
    return {m["node_id"]: m for m in graph(ev)["modules"]}
