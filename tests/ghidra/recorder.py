"""Record a model of a compiled fixture for the fake Ghidra engine.

Ghidra cannot be installed here, so the fake answers from a model recorded in the test session: the
``native`` provider's normalized answers for the fixture, turned into the records (``rea.operations.records``)
a real Ghidra worker fills. The fake then serves them through the plugin's real query layer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from rea.context import CallContext
from rea.operations.records import Block
from rea.operations.records import CallSite
from rea.operations.records import Detail
from rea.operations.records import Document
from rea.operations.records import Instruction
from rea.operations.records import Inventory
from rea.operations.records import Name
from rea.operations.records import Procedure
from rea.operations.records import Reference
from rea.operations.records import Segment
from rea.operations.records import Snapshot
from rea.operations.records import String
from rea.registry import Registry
from rea.session import Session


def _int(value: str | None) -> int | None:
    return None if value is None else int(value, 16)


def _all(session: Session, op: str, key: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        body = session.execute(op, {**(params or {}), "offset": offset, "limit": 1000}, CallContext()).normalized
        items.extend(body[key])
        offset = body["next_offset"]
    return items


def record(registry: Registry, path: str) -> Snapshot:
    """The model of ``path`` as the native provider reads it."""
    session = Session(registry)
    try:
        session.open(path, "native", CallContext())

        def run(op: str, params: dict[str, Any] | None = None) -> Any:
            return session.execute(op, params or {}, CallContext()).normalized

        doc = run("list_documents")["documents"][0]
        document = Document(
            name=doc["name"],
            format=doc["format"],
            architecture=doc["architecture"],
            sha256=doc["sha256"],
            entry=_int(doc["entry"]),
            bits=doc["bits"],
            endianness=doc["endianness"],
            engine_format="recorded by rea's fake Ghidra engine",
        )
        segments = tuple(
            Segment(
                name=s["name"],
                start=int(s["start"], 16),
                end=int(s["end"], 16),
                permissions=s["permissions"],
                file_offset=s["file_offset"],
                file_size=s["file_size"],
                kind=s["kind"],
            )
            for s in run("list_segments")["segments"]
        )
        procs = _all(session, "list_procedures", "procedures")
        procedures = tuple(
            Procedure(address=int(p["address"], 16), name=p["name"], end=int(p["end"], 16), kind=p["kind"])
            for p in procs
        )
        names = tuple(
            Name(address=int(n["address"], 16), name=n["name"], kind=n["kind"], external=n["external"])
            for n in _all(session, "list_names", "names")
        )
        strings = tuple(
            String(
                address=int(s["address"], 16),
                value=s["value"],
                encoding=s["encoding"],
                byte_length=s["byte_length"],
                truncated=s["truncated"],
                section=s["section"],
            )
            for s in _all(session, "list_strings", "strings")
        )
        details: dict[int, Detail] = {}
        incoming: dict[int, list[Reference]] = {}
        pseudo: dict[int, str] = {}
        for p in procedures:
            if p.kind != "local":
                continue
            sel = {"procedure": hex(p.address)}
            blocks_doc = run("procedure_blocks", sel)
            edges: dict[str, list[tuple[int, str]]] = {}
            for e in blocks_doc["edges"]:
                edges.setdefault(e["from"], []).append((int(e["to"], 16), e["kind"]))
            blocks = tuple(
                Block(
                    start=int(b["start"], 16),
                    end=int(b["end"], 16),
                    instruction_count=b["instruction_count"],
                    successors=tuple(t for t, _ in edges.get(b["start"], [])),
                    edge_kinds=tuple(k for _, k in edges.get(b["start"], [])),
                )
                for b in blocks_doc["blocks"]
            )
            insns = tuple(
                Instruction(
                    address=int(i["address"], 16), bytes=i["bytes"], mnemonic=i["mnemonic"], operands=i["operands"]
                )
                for i in _all(session, "read_function_instructions", "instructions", sel)
            )
            outgoing = tuple(
                Reference(
                    src=int(r["from"], 16),
                    dst=_int(r["to"]),
                    kind=r["kind"],
                    from_procedure=_int(r["from_procedure"]),
                    to_name=r["to_name"],
                )
                for r in _all(session, "procedure_references", "references", {**sel, "direction": "outgoing"})
            )
            calls = tuple(
                CallSite(insn=int(site, 16), target=_int(c["address"]), name=c["name"], kind=c["kind"])
                for c in run("procedure_callees", sel)["callees"]
                for site in c["call_sites"]
            )
            details[p.address] = Detail(blocks=blocks, instructions=insns, outgoing=outgoing, calls=calls)
            for r in outgoing:
                if r.dst is not None:
                    incoming.setdefault(r.dst, []).append(r)
            pseudo[p.address] = (
                f"/* recorded by rea's fake Ghidra engine: {len(insns)} instructions */\nvoid {p.name}(void)\n{{\n}}\n"
            )
        return Snapshot(
            inventory=Inventory(
                document=document, segments=segments, procedures=procedures, names=names, strings=strings
            ),
            details=details,
            incoming={k: tuple(v) for k, v in incoming.items()},
            pseudo_code=pseudo,
            engine_version="fake",
        )
    finally:
        session.close()


def write(snapshot: Snapshot, out: Path) -> Path:
    out.write_bytes(msgspec.json.encode(snapshot))
    return out
