"""rea.runtime_observations: hits counted per target and static procedure address, the last one's arguments kept,
a procedure never seen left out of the answer, and the record bounded."""

from __future__ import annotations

from typing import Any

import msgspec

from rea import runtime_observations as ro
from rea.operations.shapes import ProcedureInfo
from rea.providers import OperationResult

SHA = "ab" * 32


def _info(address: str) -> ProcedureInfo:
    return ProcedureInfo(
        address=address,
        name="helper",
        size=16,
        end="0x1149",
        kind="local",
        section=".text",
        basic_block_count=1,
        instruction_count=5,
        signature=None,
        calling_convention=None,
    )


def test_hits_are_counted_per_procedure_and_target_and_shown_on_the_answer() -> None:
    state: dict[str, Any] = {}
    ro.record_hit(state, SHA, "0x1139", arguments={"rdi": "0x4"}, debug_session="dbg-1", evidence_id="e1")
    ro.record_hit(state, SHA, 0x1139, arguments={"rdi": "0x6"}, debug_session="dbg-2", evidence_id="e2")
    ro.record_hit(state, "cd" * 32, "0x1139", arguments={}, debug_session="dbg-3", evidence_id="e3")
    seen = ro.observed(state, SHA, "0x1139")
    assert seen == ro.RuntimeObservation(hits=2, last_arguments={"rdi": "0x6"}, debug_session="dbg-2", evidence_id="e2")

    shown = ro.with_runtime(state, SHA, OperationResult.located(_info("0x1139")))
    assert shown.normalized["runtime"] == msgspec.to_builtins(seen) and shown.normalized["name"] == "helper"
    assert shown.locations == [{"address": "0x1139"}]
    # Nothing seen: the very same result, so the answer stays as lean as before.
    lean = OperationResult.located(_info("0x2000"))
    assert ro.with_runtime(state, SHA, lean) is lean
    assert ro.with_runtime({}, SHA, lean) is lean


def test_the_record_is_bounded_forgetting_the_longest_unseen() -> None:
    state: dict[str, Any] = {}
    for address in range(ro.MAX_PROCEDURES + 1):
        ro.record_hit(state, SHA, address, arguments={}, debug_session="dbg-1", evidence_id="e")
    assert ro.observed(state, SHA, 0) is None and ro.observed(state, SHA, ro.MAX_PROCEDURES) is not None
