"""Import thunks (``jmp [__imp_f]``, a PLT entry): the code that calls an import calls its thunk, so the callers
of an import are found one step further, through the thunk, which is listed once as such."""

from __future__ import annotations

from typing import Any

import msgspec
from rea_plugins.binary.schema import check_document, evidence, params_of, run

from rea.catalog.tool import ToolCall
from rea.evidence import Evidence

_THUNK_BYTES = 16  # a thunk's one jump sits within its first 16 bytes (after endbr64 or bti)


def is_thunk(call: ToolCall, procedure: str) -> bool:
    """A procedure whose whole body is one jump (an import's stub: ``jmp [slot]``, a PLT entry's ``br x17``)."""
    if not call.session.supports("read_function_instructions"):
        return False
    rows = run(call, "read_function_instructions", {"procedure": procedure, "offset": 0, "limit": 4}).normalized
    insns = [r for r in rows["instructions"] if r.get("mnemonic") not in ("endbr64", "nop", "bti")]
    return len(insns) == 1 and (insns[0].get("mnemonic") or "").startswith(("jmp", "br", "b"))


def _maybe_thunk(caller: dict[str, Any]) -> bool:
    """Cheap shape test before reading instructions: one site, at the caller's start."""
    sites = caller.get("call_sites") or []
    if len(sites) != 1 or not caller.get("address"):
        return False
    return 0 <= int(sites[0], 16) - int(caller["address"], 16) < _THUNK_BYTES


def handle_callers(call: ToolCall) -> Evidence:
    """``procedure_callers``: a caller that is the procedure's thunk gets ``kind: thunk``, and the procedures
    calling the thunk follow it with ``via_thunk``."""
    check_document(call)
    result = run(call, "procedure_callers", params_of(call.args))
    body = result.normalized
    out: list[dict[str, Any]] = []
    listed = {c["address"] for c in body["callers"]}
    for c in body["callers"]:
        if not _maybe_thunk(c) or c["address"] == body["procedure"]["address"] or not is_thunk(call, c["address"]):
            out.append(c)
            continue
        out.append({**c, "kind": "thunk"})
        through = run(call, "procedure_callers", {"procedure": c["address"]}).normalized["callers"]
        out.extend({**t, "via_thunk": c["address"]} for t in through if t["address"] not in listed)
    return evidence(call, msgspec.structs.replace(result, normalized={**body, "callers": out}))
