"""The ``wasm`` provider's analysis client: the module decoded by wasm-tools at open, as engine-neutral records."""

from __future__ import annotations

from rea.plugin import AnalysisClient
from rea.plugin import Answers
from rea.plugin import Arguments
from rea.plugin import Block
from rea.plugin import CallContext
from rea.plugin import CallSite
from rea.plugin import Detail
from rea.plugin import Document
from rea.plugin import Instruction as Insn
from rea.plugin import Inventory
from rea.plugin import Name
from rea.plugin import OperationResult
from rea.plugin import Procedure
from rea.plugin import ReaError
from rea.plugin import Reference
from rea.plugin import Segment
from rea.plugin import Snapshot
from rea.plugin import SnapshotSource
from rea.plugin import String
from rea.plugin import Target
from rea.plugin import answer
from rea.plugin import read_pinned
from rea_plugins.wasm import inspect
from rea_plugins.wasm.inspect import Model
from rea_plugins.wasm.inspect import Report
from rea_plugins.wasm.inspect import json_int
from rea_plugins.wasm.inspect import json_list
from rea_plugins.wasm.inspect import json_objects
from rea_plugins.wasm.limits import MAX_FILE_BYTES


def snapshot(report: Report, data: bytes, target: Target) -> Snapshot:
    """The records of a decoded module: functions as procedures, direct calls and string constants as references."""
    model = Model(report)
    imports = [f for f in model.functions if f.imported]
    address: dict[int, int] = {f.index: f.index for f in imports}
    ends: dict[int, int] = {f.index: f.index + 1 for f in imports}
    for index, body in model.bodies.items():
        listed = json_objects(body.get("instructions"))
        start = json_int(listed[0]["offset"]) if listed else json_int(body.get("offset", 0))
        address[index] = start
        # A body ends with its one-byte ``end`` opcode (the body size counts the locals' declarations too).
        ends[index] = json_int(listed[-1]["offset"]) + 1 if listed else start + 1
    procedures = [
        Procedure(
            address=address[f.index],
            name=f.name,
            end=ends[f.index],
            kind="import" if f.imported else "local",
            section="import" if f.imported else "code",
            signature=f.signature,
        )
        for f in model.functions
    ]
    strings = model.strings()
    string_at = {s.address: s for s in strings}
    details: dict[int, Detail] = {}
    incoming: dict[int, list[Reference]] = {}
    for index, body in model.bodies.items():
        rows = json_objects(body.get("instructions"))
        proc = address[index]
        insns: list[Insn] = []
        refs: list[Reference] = []
        calls: list[CallSite] = []
        for n, row in enumerate(rows):
            at = json_int(row.get("offset", 0))
            following = json_int(rows[n + 1]["offset"]) if n + 1 < len(rows) else ends[index]
            text = model.text(row)
            mnemonic, _, operands = text.partition(" ")
            insns.append(Insn(address=at, bytes=data[at:following].hex(), mnemonic=mnemonic, operands=operands))
            values = json_list(row.get("immediates"))
            opcode = row.get("opcode")
            if opcode in ("call", "return_call") and values and isinstance(values[0], int) and values[0] in address:
                callee = values[0]
                kind = "import" if callee in ends and callee < len(imports) else "direct"
                calls.append(CallSite(insn=at, target=address[callee], name=model.name(callee), kind=kind))
                refs.append(Reference(src=at, dst=address[callee], kind="call", from_procedure=proc))
            elif opcode in ("call_indirect", "return_call_indirect"):
                calls.append(CallSite(insn=at, target=None, name=None, kind="indirect"))
            elif opcode == "i32.const" and values and isinstance(values[0], int) and values[0] in string_at:
                refs.append(Reference(src=at, dst=values[0], kind="data", from_procedure=proc))
        details[proc] = Detail(
            blocks=(Block(start=proc, end=ends[index], instruction_count=len(insns)),),
            instructions=tuple(insns),
            outgoing=tuple(refs),
            calls=tuple(calls),
        )
        for r in refs:
            if r.dst is not None:
                incoming.setdefault(r.dst, []).append(r)
    code = next((s for s in json_objects(report.get("sections")) if s.get("id") == 10), None)
    segments = [Segment(name="import", start=0, end=len(imports), permissions="---", file_offset=None, file_size=0)]
    if code is not None:
        start, size = json_int(code["offset"]), json_int(code["size"])
        segments.append(
            Segment(name="code", start=start, end=start + size, permissions="r-x", file_offset=start, file_size=size)
        )
    for seg in json_objects(report.get("data_segments")):
        placed = seg.get("offset_value")
        if isinstance(placed, int) and placed >= 0:
            size = json_int(seg.get("size") or 0)
            name = f"data[{seg.get('index')}]"
            segments.append(
                Segment(name=name, start=placed, end=placed + size, permissions="rw-", file_offset=None, file_size=0)
            )
    names = [Name(address=address[i], name=n, kind="export") for i, n in model.exported.items() if i in address]
    names += [Name(address=f.index, name=f.name, kind="import", external=True) for f in imports]
    start_fn = report.get("start_function")
    inventory = Inventory(
        document=Document(
            name=target.name,
            format="wasm",
            architecture="wasm32",
            sha256=target.sha256,
            entry=address.get(start_fn) if isinstance(start_fn, int) else None,
            bits=32,
            endianness="little",
            engine_format="wasm-tools",
        ),
        segments=tuple(segments),
        procedures=tuple(procedures),
        names=tuple(names),
        strings=tuple(
            String(
                address=s.address,
                value=s.value,
                encoding="utf-8",
                byte_length=len(s.value.encode()),
                section=_section(segments, s.address),
            )
            for s in strings
        ),
    )
    return Snapshot(inventory=inventory, details=details, incoming={k: tuple(v) for k, v in incoming.items()})


def _section(segments: list[Segment], address: int) -> str | None:
    return next((s.name for s in segments if s.name.startswith("data") and s.start <= address < s.end), None)


class WasmClient(AnalysisClient):
    def __init__(self, answers: Answers) -> None:
        self.answers = answers

    def execute(self, operation: str, params: Arguments, ctx: CallContext) -> OperationResult:
        ctx.check(operation)
        normalized, raw = answer(self.answers, operation, params)
        return OperationResult(normalized=normalized, raw=raw)


def open_client(target: Target, ctx: CallContext) -> AnalysisClient:
    """The module decoded once, its records answered by the kernel's engine-neutral layer."""
    if target.size > MAX_FILE_BYTES:
        raise ReaError(
            "resource_constraint",
            f"{target.name} is larger than the {MAX_FILE_BYTES}-byte bound for a WebAssembly module",
            details={"resource": "file_size", "reported_limits": {"max_bytes": MAX_FILE_BYTES}},
        )
    data = read_pinned(target, 0, target.size)
    ctx.progress("wasm: decoding the module", done=0, total=1)
    report = inspect.parse(data, target.name)
    ctx.check("opening target")
    answers = Answers(SnapshotSource(snapshot(report, data, target)), decompiler="")
    ctx.progress("wasm: decoded", done=1, total=1)
    return WasmClient(answers)
