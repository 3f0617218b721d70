"""What a debugger saw at a target's procedures during one MCP session, for the static tools to show.

The debugger plugin records a stop at a procedure's entry (its arguments, its debug session, the Evidence id of
the stop); ``procedure_info`` shows the record as its ``runtime`` field. The record lives in the MCP session's
state, keyed by the target's SHA-256 and the procedure's static address, so two plugins share it without
importing each other, and it ends with the session.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from collections.abc import MutableMapping
from typing import Any

import msgspec

from rea.evidence import as_object
from rea.providers import OperationResult

STATE_KEY = "rea.runtime_observations"
# Procedures remembered per MCP session; past it the one observed longest ago is forgotten.
MAX_PROCEDURES = 4096


class RuntimeObservation(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What this MCP session's debug sessions saw at a procedure's entry: how often it was hit, and the last hit."""

    hits: int
    # The calling convention's integer argument registers at the last hit, as hex.
    last_arguments: dict[str, str] = {}
    debug_session: str
    # The Evidence record of the last stop there (its id, for get_evidence).
    evidence_id: str


class _Record:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: OrderedDict[tuple[str, int], RuntimeObservation] = OrderedDict()


def _record(state: MutableMapping[str, Any]) -> _Record:
    found = state.get(STATE_KEY)
    if isinstance(found, _Record):
        return found
    # setdefault is atomic: two first hits in parallel share one record.
    made: _Record = state.setdefault(STATE_KEY, _Record())
    return made


def _address(procedure: int | str) -> int:
    return procedure if isinstance(procedure, int) else int(procedure, 16)


def record_hit(
    state: MutableMapping[str, Any],
    sha256: str,
    procedure: int | str,
    *,
    arguments: Mapping[str, str],
    debug_session: str,
    evidence_id: str,
) -> RuntimeObservation:
    """Count one stop at the entry of ``procedure`` (a static address) of the target ``sha256``."""
    record = _record(state)
    key = (sha256, _address(procedure))
    with record.lock:
        before = record.seen.pop(key, None)
        now = RuntimeObservation(
            hits=(before.hits if before else 0) + 1,
            last_arguments=dict(arguments),
            debug_session=debug_session,
            evidence_id=evidence_id,
        )
        record.seen[key] = now
        while len(record.seen) > MAX_PROCEDURES:
            record.seen.popitem(last=False)
    return now


def observed(state: Mapping[str, Any], sha256: str, procedure: int | str) -> RuntimeObservation | None:
    """What was seen at ``procedure`` of ``sha256`` in this session, or None."""
    record = state.get(STATE_KEY)
    if not isinstance(record, _Record):
        return None
    with record.lock:
        return record.seen.get((sha256, _address(procedure)))


def with_runtime(state: Mapping[str, Any], sha256: str, result: OperationResult) -> OperationResult:
    """``result`` (a procedure's answer with a top-level ``address``) with ``runtime`` added when a debugger
    stopped there; unchanged otherwise, so an answer about code never run stays as lean as before."""
    top = as_object(result.normalized)
    address = top.get("address") if isinstance(top, dict) else None
    if not isinstance(address, str):
        return result
    seen = observed(state, sha256, address)
    if seen is None:
        return result
    return OperationResult(
        normalized={**top, "runtime": msgspec.to_builtins(seen)},
        raw=result.raw,
        limitations=list(result.limitations),
        locations=list(result.locations),
        confidence=result.confidence,
    )
