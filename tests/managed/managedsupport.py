"""Helpers of the managed tests: run a tool in a session and read its result."""

from __future__ import annotations

from typing import Any

from rea.errors import ReaError
from rea.evidence import Evidence
from rea.session import Session
from rea.testing import call_tool


def run(session: Session, tool: str, args: dict[str, Any]) -> Evidence:
    out = call_tool(session, tool, args)
    assert out.evidence is not None
    session.ledger.record(out.evidence)
    return out.evidence


def fails(session: Session, tool: str, args: dict[str, Any]) -> ReaError:
    try:
        call_tool(session, tool, args)
    except ReaError as exc:
        return exc
    raise AssertionError(f"{tool} did not fail")
