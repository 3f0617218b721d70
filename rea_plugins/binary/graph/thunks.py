"""Import thunks (``jmp [__imp_f]``, a PLT entry): the code that calls an import calls its thunk, so the callers
of an import are found one step further, through the thunk, which is listed once as such. A function the binary
defines and calls through its own PLT (a shared library's export, open to interposition) has a stub named
``name@plt`` on every provider: its callers are the function's, through that hop."""

from __future__ import annotations

import msgspec

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import ProcedureRef
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea_plugins.binary.core.schema import PROCEDURE_INPUT
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import operation_tool
from rea_plugins.binary.core.schema import params_of
from rea_plugins.binary.core.schema import run

_THUNK_BYTES = 16  # a thunk's one jump sits within its first 16 bytes (after endbr64 or bti)
# What may precede a stub's jump: landing pads, and arm64's load of the slot (adrp x16; ldr x17; add x16).
_BEFORE_JUMP = frozenset({"endbr64", "endbr32", "nop", "bti", "adrp", "ldr", "add"})
# What may follow it in a lazily bound PLT entry: the push of the relocation index and the jump to PLT0, run once.
_AFTER_JUMP = frozenset({"push", "jmp"})


def _jump(mnemonic: str) -> bool:
    return mnemonic in ("jmp", "br", "b", "bx")


def is_thunk(call: ToolCall, procedure: str) -> bool:
    """A procedure whose work is one jump: an import's stub (``jmp [slot]``), a lazily bound PLT entry (``jmp
    [slot]; push n; jmp PLT0``), an arm64 PLT entry (``adrp; ldr; add; br x17``)."""
    if not call.session.supports("read_function_instructions"):
        return False
    rows = run(call, "read_function_instructions", {"procedure": procedure, "offset": 0, "limit": 6}).normalized
    mnemonics = [(r.get("mnemonic") or (r.get("text") or "").partition(" ")[0]).lower() for r in rows["instructions"]]
    first = next((i for i, m in enumerate(mnemonics) if _jump(m)), None)
    if first is None or not all(m in _BEFORE_JUMP for m in mnemonics[:first]):
        return False
    tail = mnemonics[first + 1 :]
    return not tail or (tail[0] == "push" and all(m in _AFTER_JUMP for m in tail) and len(tail) == 2)


def _maybe_thunk(caller: JSONObject) -> bool:
    """Cheap shape test before reading instructions (``caller``: the provider's row): one site, at its start."""
    sites, address = caller.get("call_sites") or [], caller.get("address")
    if not isinstance(sites, list) or len(sites) != 1 or not isinstance(address, str) or not address:
        return False
    site = sites[0]
    return isinstance(site, str) and 0 <= int(site, 16) - int(address, 16) < _THUNK_BYTES


def own_stub(call: ToolCall, name: str | None, listed: set[str]) -> ProcedureRef | None:
    """The function's own PLT stub (``name@plt``) when the provider has one that is not listed yet."""
    if not name or name.endswith("@plt"):
        return None
    try:
        stub = run(call, "procedure_address", {"procedure": f"{name}@plt"}).normalized
    except ReaError:
        return None
    return None if stub["address"] in listed else ProcedureRef(address=stub["address"], name=stub["name"])


def function_of_stub(call: ToolCall, stub_name: str) -> ProcedureRef | None:
    """The procedure ``name@plt`` stands for, when the target defines it (an import's stub stands for none)."""
    if not stub_name.endswith("@plt"):
        return None
    try:
        found = run(call, "procedure_address", {"procedure": stub_name.removesuffix("@plt")}).normalized
    except ReaError:
        return None
    return ProcedureRef(address=found["address"], name=found["name"])


def handle_callers(call: ToolCall) -> Evidence:
    """``procedure_callers``: a caller that is the procedure's thunk gets ``kind: thunk``, and the procedures
    calling the thunk follow it with ``via_thunk``."""
    check_document(call)
    result = run(call, "procedure_callers", params_of(call.args))
    body = result.normalized
    # The provider's caller rows, as its answer's JSON, with kind and via_thunk added.
    out: list[JSONObject] = []
    listed = {c["address"] for c in body["callers"]}
    stubs: list[JSONObject] = []
    for c in body["callers"]:
        if not _maybe_thunk(c) or c["address"] == body["procedure"]["address"] or not is_thunk(call, c["address"]):
            out.append(c)
        else:
            stubs.append(c)
    own = own_stub(call, body["procedure"].get("name"), listed | {body["procedure"]["address"]})
    if own is not None:
        stubs.append({"address": own.address, "name": own.name})
        listed.add(own.address)
    for c in stubs:
        out.append({**c, "kind": "thunk"})
        through = run(call, "procedure_callers", {"procedure": c["address"]}).normalized["callers"]
        out.extend({**t, "via_thunk": c["address"]} for t in through if t["address"] not in listed)
    return evidence(call, msgspec.structs.replace(result, normalized={**body, "callers": out}))


def tools() -> list[ToolDef]:
    return [
        operation_tool(
            "procedure_callers",
            description="Procedures that call this one, with call sites; an import's callers through its thunk.",
            input_schema=PROCEDURE_INPUT,
            handler=handle_callers,
            cli_subject="procedure",
            examples=({"procedure": "main"},),
        ),
    ]
