"""The native operations (docs/native-operations.md) answered from an engine's records (``records.Source``).

Engine-free: pages, selectors, searches and the normalized shapes are computed here once, for the Ghidra
worker and for the Hopper client alike.

An answer is JSON (``JSONObject``), not a Struct: the Ghidra worker sends it over its pipe as such, and the binary
plugin's tools read every provider's answer as the JSON object ``rea.operations.shapes`` describes to clients.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

from rea.arguments import Arguments
from rea.errors import ReaError
from rea.operations import ANSWER_OPERATIONS
from rea.operations import callgraph
from rea.operations.paging import DEFAULT_LIMIT as DEFAULT_LIMIT
from rea.operations.paging import MAX_LIMIT as MAX_LIMIT
from rea.operations.paging import WHOLE_PROGRAM_LIMIT as WHOLE_PROGRAM_LIMIT
from rea.operations.paging import WHOLE_PROGRAM_MAX_LIMIT as WHOLE_PROGRAM_MAX_LIMIT
from rea.operations.paging import T as T
from rea.operations.paging import bad as bad
from rea.operations.paging import hexa as hexa
from rea.operations.paging import int_param as int_param
from rea.operations.paging import page as page
from rea.operations.paging import page_fields as page_fields
from rea.operations.paging import paging as paging
from rea.operations.paging import whole_program_paging as whole_program_paging
from rea.operations.records import Detail
from rea.operations.records import Instruction as InstructionRecord
from rea.operations.records import Inventory
from rea.operations.records import Procedure
from rea.operations.records import Reference
from rea.operations.records import Source
from rea.operations.records import String as StringRecord
from rea.records import JSONObject
from rea.search import matcher

Answer = tuple[Any, Any]

MAX_ASSEMBLY_INSTRUCTIONS = 20_000
# Procedure bodies are searched backwards from an address at most this many ranges (nested bodies are rare).
_LOOKBACK = 64


def parse_address(value: Any, path: str = "address") -> int:
    """A ``0x`` hex (or decimal) string, or a non-negative integer."""
    if isinstance(value, bool):
        raise bad(path, f"{path} must be an address such as 0x401000", "invalid_type")
    if isinstance(value, int):
        if value < 0:
            raise bad(path, f"{path} must not be negative", "out_of_range")
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if re.fullmatch(r"0x[0-9a-f]{1,16}", text):
            return int(text, 16)
        if re.fullmatch(r"[0-9]{1,20}", text):
            return int(text, 10)
        raise bad(path, f"{path} {value!r} is not an address such as 0x401000", "invalid_format")
    if value is None:
        raise bad(path, f"{path} is required", "missing_argument")
    raise bad(path, f"{path} must be an address string such as 0x401000", "invalid_type")


def looks_like_address(value: Any) -> bool:
    """An integer, or a string that reads as a ``0x`` address rather than a name."""
    if isinstance(value, int) and not isinstance(value, bool):
        return True
    return isinstance(value, str) and re.fullmatch(r"\s*0[xX][0-9a-fA-F]{1,16}\s*", value) is not None


def unknown_procedure(value: Any) -> ReaError:
    return bad("procedure", f"no procedure named or starting at {value!r}")


def no_code_here(name: str, address: int, kind: str) -> ReaError:
    """The refusal to decompile an import or external: its code is in another binary."""
    return ReaError(
        "capability_unavailable",
        f"{name} is an import: its code is in another binary",
        remediation="Decompile a local procedure (list_procedures shows each kind).",
        details={"procedure": hex(address), "kind": kind},
    )


def search(items: Sequence[T], text: Callable[[T], str], params: Arguments) -> list[T]:
    """The items whose text matches a ``search_*`` request (literal, or RE2 in linear time)."""
    match = matcher(params)
    return [x for x in items if match(text(x))]


# The calling convention a format and architecture imply, where the engine names none of its own.
DEFAULT_ABI = {
    ("elf", "x86_64"): "sysv",
    ("mach-o", "x86_64"): "sysv",
    ("pe", "x86_64"): "ms-x64",
    ("elf", "arm64"): "aapcs64",
    ("mach-o", "arm64"): "darwin-aapcs64",
    ("pe", "arm64"): "aapcs64",
    ("elf", "x86"): "cdecl",
    ("pe", "x86"): "cdecl",
    ("elf", "arm"): "aapcs",
    ("pe", "arm"): "aapcs",
}


def string_type(encoding: str, byte_length: int) -> JSONObject:
    """``inspect_native_data_type``'s type of a string: an array of its code units, the terminator counted."""
    unit = 2 if encoding == "utf-16le" else 1
    count = byte_length // unit + 1
    name = "char16_t" if unit == 2 else "char"
    element: JSONObject = {"name": name, "kind": "integer", "size": unit}
    return {
        "name": f"{name}[{count}]",
        "kind": "string",
        "size": count * unit,
        "element": element,
        "count": count,
    }


class Answers:
    """Every native operation over one engine's ``Source``; details are cached per procedure."""

    def __init__(self, source: Source, decompiler: str) -> None:
        self.source = source
        self.decompiler = decompiler
        inv: Inventory = source.inventory()
        self.inv = inv
        self.procs = sorted(inv.procedures, key=lambda p: (p.address, p.name))
        self.by_addr: dict[int, Procedure] = {}
        self.by_name: dict[str, Procedure] = {}
        for p in self.procs:
            self.by_addr.setdefault(p.address, p)
            self.by_name.setdefault(p.name, p)
        extents = sorted(
            (start, end, p.address)
            for p in self.procs
            for start, end in (p.ranges or ((p.address, p.end),))
            if end > start
        )
        self._extents = extents
        self._starts = [e[0] for e in extents]
        self._sections = sorted((s.start, s.end, s.name) for s in inv.segments if s.kind == "section")
        self.names = sorted(inv.names, key=lambda n: (n.address, n.name, n.kind))
        self._names_at: dict[int, list[str]] = defaultdict(list)
        for n in self.names:
            self._names_at[n.address].append(n.name)
        self.strings = sorted(inv.strings, key=lambda s: (s.address, s.value))
        self._details: dict[int, Detail] = {}
        self._incoming: dict[int, list[Reference]] = {}
        self._pseudo: dict[int, str] = {}

    # -- lookups -------------------------------------------------------------------------------

    def containing(self, address: int) -> Procedure | None:
        """The procedure whose body covers ``address`` (the innermost when bodies nest)."""
        i = bisect.bisect_right(self._starts, address) - 1
        stop = max(-1, i - _LOOKBACK)
        while i > stop:
            start, end, owner = self._extents[i]
            if start <= address < end:
                return self.by_addr[owner]
            i -= 1
        return None

    def section_of(self, address: int) -> str | None:
        i = bisect.bisect_right(self._sections, (address, float("inf"), "")) - 1
        if i >= 0 and self._sections[i][0] <= address < self._sections[i][1]:
            return str(self._sections[i][2])
        return None

    def select(self, params: Arguments) -> Procedure:
        """The procedure a selector names: an exact name, or an address where one starts."""
        value = params.get("procedure")
        if value is None:
            raise bad("procedure", "procedure is required", "missing_argument")
        if isinstance(value, str) and value in self.by_name:
            return self.by_name[value]
        if looks_like_address(value):
            found = self.by_addr.get(parse_address(value, "procedure"))
            if found is not None:
                return found
        raise bad("procedure", f"no procedure named or starting at {value!r}")

    def name_at(self, address: int | None) -> str | None:
        if address is None:
            return None
        names = self._names_at.get(address)
        if names:
            return names[0]
        proc = self.by_addr.get(address)
        return None if proc is None else proc.name

    def _proc_name(self, address: int) -> str | None:
        proc = self.by_addr.get(address)
        return proc.name if proc is not None else self.name_at(address)

    def detail(self, proc: Procedure) -> Detail:
        if proc.address not in self._details:
            self._details[proc.address] = self.source.detail(proc)
        return self._details[proc.address]

    def incoming(self, address: int) -> list[Reference]:
        if address not in self._incoming:
            self._incoming[address] = sorted(
                self.source.incoming(address), key=lambda r: (r.src, -1 if r.dst is None else r.dst, r.kind)
            )
        return self._incoming[address]

    # -- items ---------------------------------------------------------------------------------

    @staticmethod
    def proc_item(p: Procedure) -> JSONObject:
        return {"address": hex(p.address), "name": p.name, "size": p.end - p.address, "kind": p.kind, "end": hex(p.end)}

    @staticmethod
    def proc_ref(p: Procedure) -> JSONObject:
        return {"address": hex(p.address), "name": p.name}

    @staticmethod
    def ref_item(r: Reference) -> JSONObject:
        return {
            "from": hex(r.src),
            "to": hexa(r.dst),
            "kind": r.kind,
            "from_procedure": hexa(r.from_procedure),
            "to_name": r.to_name,
        }

    # -- whole-program operations --------------------------------------------------------------

    def list_documents(self, params: Arguments) -> Answer:
        d = self.inv.document
        doc = {
            "name": d.name,
            "format": d.format,
            "architecture": d.architecture,
            "sha256": d.sha256,
            "entry": hexa(d.entry),
            "bits": d.bits,
            "endianness": d.endianness,
        }
        raw = {
            "engine_format": d.engine_format,
            "language": d.language,
            "compiler": d.compiler,
            "image_base": hex(d.image_base),
        }
        return {"documents": [doc]}, raw

    def list_segments(self, params: Arguments) -> Answer:
        items = [
            {
                "name": s.name,
                "start": hex(s.start),
                "end": hex(s.end),
                "size": s.end - s.start,
                "permissions": s.permissions,
                "file_offset": s.file_offset,
                "file_size": s.file_size,
                "kind": s.kind,
            }
            for s in sorted(self.inv.segments, key=lambda s: (s.kind != "segment", s.start, s.name))
        ]
        return {"segments": items}, None

    def list_procedures(self, params: Arguments) -> Answer:
        return page("procedures", self.procs, params, self.proc_item), None

    def search_procedures(self, params: Arguments) -> Answer:
        return page("procedures", search(self.procs, lambda p: p.name, params), params, self.proc_item), None

    def _string_item(self, s: StringRecord) -> JSONObject:
        return {
            "address": hex(s.address),
            "value": s.value,
            "encoding": s.encoding,
            "byte_length": s.byte_length,
            "truncated": s.truncated,
            "section": s.section,
        }

    def list_strings(self, params: Arguments) -> Answer:
        items = self.strings
        if params.get("address") is not None:
            at = parse_address(params["address"])
            items = [s for s in items if s.address <= at < s.address + max(s.byte_length, 1)]
        return page("strings", items, params, self._string_item), None

    def search_strings(self, params: Arguments) -> Answer:
        return page("strings", search(self.strings, lambda s: s.value, params), params, self._string_item), None

    def list_names(self, params: Arguments) -> Answer:
        items = self.names
        if params.get("address") is not None:
            at = parse_address(params["address"])
            items = [n for n in items if n.address == at]
        return page(
            "names",
            items,
            params,
            lambda n: {"address": hex(n.address), "name": n.name, "kind": n.kind, "external": n.external},
        ), None

    def address_name(self, params: Arguments) -> Answer:
        at = parse_address(params.get("address"))
        names = self._names_at.get(at, [])
        name = names[0] if names else self.name_at(at)
        return {"address": hex(at), "name": name}, {"names": list(names)}

    def procedure_address(self, params: Arguments) -> Answer:
        p = self.select(params)
        return {"procedure": params.get("procedure"), "address": hex(p.address), "name": p.name}, None

    def resolve_containing_procedure(self, params: Arguments) -> Answer:
        at = parse_address(params.get("address"))
        p = self.containing(at)
        proc = (
            None
            if p is None
            else {"address": hex(p.address), "name": p.name, "size": p.end - p.address, "end": hex(p.end)}
        )
        return {"address": hex(at), "procedure": proc}, None

    # -- procedure operations ------------------------------------------------------------------

    def procedure_info(self, params: Arguments) -> Answer:
        p = self.select(params)
        d = self.detail(p)
        result = {
            "address": hex(p.address),
            "name": p.name,
            "size": p.end - p.address,
            "end": hex(p.end),
            "kind": p.kind,
            "section": p.section if p.section is not None else self.section_of(p.address),
            "basic_block_count": len(d.blocks),
            "instruction_count": len(d.instructions),
            "signature": p.signature,
            "calling_convention": p.calling_convention,
        }
        raw = {"ranges": [[hex(s), hex(e)] for s, e in p.ranges], "thunk_of": p.thunk_of}
        return result, raw

    def procedure_blocks(self, params: Arguments) -> Answer:
        p = self.select(params)
        blocks, edges = [], []
        for b in self.detail(p).blocks:
            blocks.append(
                {
                    "start": hex(b.start),
                    "end": hex(b.end),
                    "instruction_count": b.instruction_count,
                    "successors": [hex(s) for s in b.successors],
                }
            )
            kinds = b.edge_kinds or ("jump",) * len(b.successors)
            for succ, kind in zip(b.successors, kinds, strict=False):
                edges.append({"from": hex(b.start), "to": hex(succ), "kind": kind})
        return {"address": hex(p.address), "name": p.name, "blocks": blocks, "edges": edges}, None

    @staticmethod
    def _insn_item(i: InstructionRecord) -> JSONObject:
        return {
            "address": hex(i.address),
            "bytes": i.bytes,
            "mnemonic": i.mnemonic,
            "operands": i.operands,
            "text": f"{i.mnemonic} {i.operands}".strip(),
        }

    def procedure_assembly(self, params: Arguments) -> Answer:
        p = self.select(params)
        cap = int_param(params, "max_instructions", MAX_ASSEMBLY_INSTRUCTIONS, 1, MAX_ASSEMBLY_INSTRUCTIONS)
        insns = self.detail(p).instructions
        return {
            "address": hex(p.address),
            "name": p.name,
            "instructions": [self._insn_item(i) for i in insns[:cap]],
            "truncated": len(insns) > cap,
        }, None

    def read_function_instructions(self, params: Arguments) -> Answer:
        p = self.select(params)
        result = page("instructions", self.detail(p).instructions, params, self._insn_item)
        return {"address": hex(p.address), "name": p.name, **result}, None

    def _call_refs(self, p: Procedure) -> list[Reference]:
        """Incoming calls to ``p``, and jumps to its start from another procedure (tail calls)."""
        out = []
        for r in self.incoming(p.address):
            if r.from_procedure is None or r.dst != p.address:
                continue
            if r.kind == "call" or (r.kind == "jump" and r.from_procedure != p.address):
                out.append(r)
        return out

    def procedure_callers(self, params: Arguments) -> Answer:
        p = self.select(params)
        sites: dict[int, set[int]] = defaultdict(set)
        for r in self._call_refs(p):
            assert r.from_procedure is not None
            sites[r.from_procedure].add(r.src)
        callers = [
            {"address": hex(c), "name": self._proc_name(c), "call_sites": [hex(s) for s in sorted(found)]}
            for c, found in sorted(sites.items())
        ]
        return {"procedure": self.proc_ref(p), "callers": callers}, None

    def procedure_callees(self, params: Arguments) -> Answer:
        p = self.select(params)
        groups: dict[tuple[str, int | None, str | None], set[int]] = defaultdict(set)
        for c in self.detail(p).calls:
            groups[c.kind, c.target, c.name].add(c.insn)
        ordered = sorted(groups.items(), key=lambda g: (min(g[1]), -1 if g[0][1] is None else g[0][1], g[0][0]))
        callees = [
            {"address": hexa(target), "name": name, "kind": kind, "call_sites": [hex(s) for s in sorted(found)]}
            for (kind, target, name), found in ordered
        ]
        return {"procedure": self.proc_ref(p), "callees": callees}, None

    def program_call_graph(self, params: Arguments) -> Answer:
        callgraph.check(params)
        edges = []
        for p in self.procs:
            edges.extend(
                callgraph.edges_of(p.address, self.procedure_callees({"procedure": hex(p.address)})[0]["callees"])
            )
        return callgraph.answer(edges, {p.address: p.name for p in self.procs}, len(self.procs), params), None

    def procedure_references(self, params: Arguments) -> Answer:
        p = self.select(params)
        direction = params.get("direction", "outgoing") or "outgoing"
        if direction not in ("incoming", "outgoing"):
            raise bad("direction", "direction must be 'incoming' or 'outgoing'")
        refs: Sequence[Reference] = self.detail(p).outgoing if direction == "outgoing" else self.incoming(p.address)
        result = page("references", refs, params, self.ref_item)
        return {"procedure": self.proc_ref(p), "direction": direction, **result}, None

    def xrefs(self, params: Arguments) -> Answer:
        at = parse_address(params.get("address"))
        refs = [
            {"from": hex(r.src), "from_procedure": hexa(r.from_procedure), "kind": r.kind, "to": hex(at)}
            for r in self.incoming(at)
        ]
        return {"address": hex(at), "references": refs}, None

    def procedure_pseudo_code(self, params: Arguments, timeout_s: int) -> Answer:
        p = self.select(params)
        if p.kind in ("import", "external"):
            raise no_code_here(p.name, p.address, p.kind)
        if p.address not in self._pseudo:
            self._pseudo[p.address] = self.source.pseudo_code(p, timeout_s)
        return {
            "address": hex(p.address),
            "name": p.name,
            "language": "c",
            "text": self._pseudo[p.address],
            "decompiler": self.decompiler,
        }, None


# operation -> method of Answers; procedure_pseudo_code also takes the decompile deadline.
OPERATIONS: tuple[str, ...] = ANSWER_OPERATIONS


def answer(answers: Answers, operation: str, params: Arguments, decompile_timeout_s: int = 30) -> Answer:
    """Dispatch one operation; ``capability_unavailable`` for one this layer does not implement."""
    if operation not in OPERATIONS:
        raise ReaError(
            "capability_unavailable",
            f"{operation} is not a native operation of this provider",
            details={"operation": operation},
        )
    if operation == "procedure_pseudo_code":
        return answers.procedure_pseudo_code(params, decompile_timeout_s)
    method: Callable[[Arguments], Answer] = getattr(answers, operation)
    return method(params)
