"""identify_crypto: which cryptographic primitives a binary holds, and the procedures that use each.

Two kinds of evidence, both from ``cryptotables``: tables and constants in the file's mapped bytes (found in one
YARA pass over the segments, through the yara-python engine scan_yara uses), attributed to the procedures whose
instructions reference them (a symbolized operand, an address operand or a displacement inside the table); and
constants used as instruction operands (an unrolled SHA-256 round's ``lea 0x428a2f98(...)``, an init function
storing MD5's state), attributed to the procedure holding enough of them.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from typing import Any
from typing import Literal

from rea.plugin import Evidence
from rea.plugin import OperationResult
from rea.plugin import Page
from rea.plugin import ProcedureRef
from rea.plugin import Shape
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import arg_choice
from rea.plugin import int_param
from rea_plugins.binary.core.regions import locate
from rea_plugins.binary.core.schema import DOCUMENT
from rea_plugins.binary.core.schema import LIMIT
from rea_plugins.binary.core.schema import OFFSET
from rea_plugins.binary.core.schema import binary_tool
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.search import program
from rea_plugins.binary.search.cryptotables import Signature
from rea_plugins.binary.search.cryptotables import encodings
from rea_plugins.binary.search.cryptotables import signatures
from rea_plugins.binary.search.program import Procedure
from rea_plugins.binary.search.program import Row
from rea_plugins.binary.search.program import containing
from rea_plugins.binary.search.program import procedures
from rea_plugins.binary.search.program import program_rows
from rea_plugins.binary.search.program import units

MAX_USERS = 16  # procedures listed per finding (the count is always whole)
MAX_SITES = 8  # instruction addresses listed per procedure
MAX_FINDINGS = 10_000
YARA_TIMEOUT_S = 60
# What to do when the constant scan times out.
ONE_AT_A_TIME = "Search one constant at a time with search_immediates."
CAPA_NOTE = (
    "capabilities beyond constants (flare-capa) are not reported: the flare-capa package in our registries "
    "ships no rules"
)


class CryptoUser(Shape):
    """A procedure using a constant, and (at most 8 of) the instructions where it does."""

    procedure: ProcedureRef
    sites: list[str]


class CryptoFinding(Shape):
    """One known constant found: in data (a table at ``address``) or in one procedure's instruction operands."""

    primitive: str
    constant: str
    kind: str
    standard: str
    where: Literal["data", "code"]
    # The values of the constant found: consecutive from the table's start in data, distinct operands in code.
    matched: int
    total: int
    address: str | None = None
    section: str | None = None
    encoding: str | None = None
    users: list[CryptoUser] = []
    users_total: int = 0


class CryptoPrimitive(Shape):
    """A primitive named by at least one finding, with every procedure any of its findings attributes."""

    primitive: str
    findings: int
    procedures: list[ProcedureRef]


class CryptoIdentification(Page, kw_only=True):
    where: Literal["code", "data", "both"]
    primitives: list[CryptoPrimitive]
    findings: list[CryptoFinding]
    truncated: bool = False


_RULES: Any = None
_BRANCH = re.compile(r"^(j\w*|call\w*|loop\w*|b|bl|br|blr|b\.\w+|cbn?z|tbn?z|bx|blx)$")
_ADD = re.compile(r"^add\s+([xw]\d+),\s*([xw]\d+),\s*#?(0x[0-9a-f]+|\d+)\b")
_PIECE = re.compile(r"^(mov|movz|movk)\s+([wx])(\d+),\s*#?(0x[0-9a-f]+|[0-9]+)(?:,\s*lsl\s*#?(\d+))?\s*(?:;|$)")
_WRITES = re.compile(r"^\S+\s+([xw]\d+)\b")
# An operand number is read as an address only from here up: a position-independent image's addresses are as small
# as the offsets and displacements in its code, and the provider's resolved references name those.
_ABSOLUTE = 0x10000
_RIP = re.compile(r"\[rip ([+-]) (0x[0-9a-f]+)\]")
_NUMBER = re.compile(r"(?<![\w.$])(-\s*)?#?(0x[0-9a-f]+|[0-9]+)\b")


def _rules() -> Any:
    """One rule per signature and byte order, compiled once: YARA finds every head in one pass."""
    global _RULES
    if _RULES is None:
        import yara

        sources = []
        for n, sig in enumerate(signatures()):
            for k, (_, raw) in enumerate(encodings(sig)):
                sources.append(f"rule c{n}_{k} {{ strings: $h = {{ {raw.hex(' ')} }} condition: $h }}")
        _RULES = yara.compile(source="\n".join(sources))
    return _RULES


def numbers(text: str) -> set[int]:
    """Every number an instruction's operands hold, displacements included, as 32- and 64-bit values (a
    negative displacement ``- 0x3e9...`` is the same bits as the constant); a branch's target is none."""
    body = text.split(";", 1)[0].strip().lower()
    mnemonic, _, operands = body.partition(" ")
    if _BRANCH.match(mnemonic):
        return set()
    out: set[int] = set()
    for sign, digits in _NUMBER.findall(operands):
        n = int(digits, 0)
        if n < 0x100:
            continue
        if sign:
            out.update(((-n) & 0xFFFFFFFF, (-n) & 0xFFFFFFFFFFFFFFFF))
        else:
            out.update((n, n & 0xFFFFFFFF))
    return out


def _ref(p: Procedure) -> ProcedureRef:
    return ProcedureRef(address=hex(p.start), name=p.name)


def _users(sites: dict[Procedure, set[int]]) -> tuple[list[CryptoUser], int]:
    ordered = sorted(sites, key=lambda p: p.start)
    return [
        CryptoUser(procedure=_ref(p), sites=[hex(a) for a in sorted(sites[p])[:MAX_SITES]]) for p in ordered[:MAX_USERS]
    ], len(ordered)


def _run_length(sig: Signature, data: bytes, at: int, order: str) -> int:
    """How many of the signature's values follow one another in ``data`` from ``at``."""
    n = 0
    for v in sig.values:
        raw = bytes([v]) if sig.width == 1 else v.to_bytes(sig.width, order)  # type: ignore[arg-type]
        if data[at + n * sig.width : at + (n + 1) * sig.width] != raw:
            break
        n += 1
    return n


class _Table:
    __slots__ = ("encoding", "end", "file_offset", "matched", "sig", "start")

    def __init__(self, sig: Signature, encoding: str, file_offset: int, start: int, matched: int) -> None:
        self.sig, self.encoding, self.file_offset, self.start, self.matched = sig, encoding, file_offset, start, matched
        self.end = start + matched * sig.width


def _tables(call: ToolCall, data: bytes) -> list[_Table]:
    """Every signature's head in the mapped bytes, with the length of the run that follows it."""
    mapped = units(call)
    found: dict[tuple[int, str], _Table] = {}
    for start, end in program.ranges(call, "segments", len(data)):
        call.ctx.check("identify_crypto")
        matches = program.yara_match(_rules(), data[start:end], YARA_TIMEOUT_S, "constant scan", ONE_AT_A_TIME)
        for m in matches:
            n, k = (int(part) for part in m.rule[1:].split("_"))
            sig = signatures()[n]
            label = encodings(sig)[k][0]
            order = "big" if label == "big-endian" else "little"
            for s in m.strings:
                for inst in s.instances:
                    at = start + inst.offset
                    address = program.address_of(mapped, at)
                    if address is None or (at, sig.name) in found:
                        continue
                    run = _run_length(sig, data, at, order)
                    found[at, sig.name] = _Table(sig, label, at, address, max(run, 1))
    tables = sorted(found.values(), key=lambda t: (t.start, -t.matched * t.sig.width))
    # A match inside a longer one of another constant (MD5's state words at the head of SHA-1's) is that one.
    kept: list[_Table] = []
    for t in tables:
        if any(o.start <= t.start and t.end <= o.end and o.end - o.start > t.end - t.start for o in tables):
            continue
        kept.append(t)
    return kept


def _derived(rows: list[Row], lengths: dict[int, int]) -> set[tuple[int, int]]:
    """References that name a table but use none: an anchor register (``add x9, x9, #0x440`` holding one table's
    start only to reach another, ``add x9, x9, #0x100``) and a loop's end pointer (a table's start plus its
    length, which is where the next table starts). Both are read off arm64's base-plus-offset additions."""
    out: set[tuple[int, int]] = set()
    bases: dict[str, tuple[int, int]] = {}  # register -> (row address, the address it holds)
    owner = None
    for row in rows:
        if row.procedure != owner:
            bases, owner = {}, row.procedure
        m = _ADD.match(row.text)
        if m is None:
            written = _WRITES.match(row.text)
            if written is not None:
                bases.pop(written.group(1), None)
            continue
        dest, src, offset = m.group(1), m.group(2), int(m.group(3), 0)
        base = bases.get(src)
        if base is not None and base[1] + offset in row.refs:
            if dest == src:
                out.add(base)  # the base held the first table's start only on the way to the second
            elif lengths.get(base[1]) == offset:
                out.add((row.address, base[1] + offset))  # one past the end of the first table, kept beside it
        held = next(iter(row.refs), None)
        if held is None:
            bases.pop(dest, None)
        else:
            bases[dest] = (row.address, held)
    return out


def _data_findings(call: ToolCall, rows: list[Row], procs: list[Procedure], data: bytes) -> list[CryptoFinding]:
    tables = _tables(call, data)
    if not tables:
        return []
    starts = [t.start for t in tables]
    sites: list[dict[Procedure, set[int]]] = [defaultdict(set) for _ in tables]

    def hit(address: int, row: Row) -> None:
        i = bisect.bisect_right(starts, address) - 1
        while i >= 0 and starts[i] > address - 0x10000:
            t = tables[i]
            if t.start <= address < max(t.end, t.start + 1):
                owner = containing(procs, row.address)
                if owner is not None:
                    sites[i][owner].add(row.address)
            i -= 1

    ignored = _derived(rows, {t.start: t.end - t.start for t in tables})
    for n, row in enumerate(rows):
        if n % 65536 == 0:
            call.ctx.check("identify_crypto")
        for address in row.refs:
            if (row.address, address) not in ignored:
                hit(address, row)
        if not row.text.startswith(("adrp", "lea")):  # a page, or a displacement from the next instruction
            for value in numbers(row.text):
                if value >= _ABSOLUTE:
                    hit(value, row)
        relative = _RIP.search(row.text)
        if relative is not None and n + 1 < len(rows) and rows[n + 1].procedure == row.procedure:
            # A provider that leaves ``[rip + d]`` as it is: the address is the next instruction's plus d.
            d = int(relative.group(2), 16)
            hit(rows[n + 1].address + (-d if relative.group(1) == "-" else d), row)
    out = []
    for t, users in zip(tables, sites, strict=True):
        listed, count = _users(users)
        _, section = locate(call, t.start)
        out.append(
            CryptoFinding(
                primitive=t.sig.primitive,
                constant=t.sig.name,
                kind=t.sig.kind,
                standard=t.sig.standard,
                where="data",
                matched=t.matched,
                total=len(t.sig.values),
                address=hex(t.start),
                section=section["name"] if section else None,
                encoding=t.encoding,
                users=listed,
                users_total=count,
            )
        )
    return out


def _pieces(rows: list[Row]) -> dict[int, int]:
    """arm64 builds a wide constant from 16-bit pieces (``mov w6, #0x2f98; movk w6, #0x428a, lsl #16``): each
    ``movk``'s address and the whole value its register then holds, followed within one procedure."""
    out: dict[int, int] = {}
    held: dict[str, int] = {}
    owner = None
    for row in rows:
        if row.procedure != owner:
            held, owner = {}, row.procedure
        m = _PIECE.match(row.text)
        if m is None:
            written = _WRITES.match(row.text)
            if written is not None:
                held.pop(written.group(1)[1:], None)
            continue
        op, size, reg, piece, shift = m.group(1), m.group(2), m.group(3), int(m.group(4), 0), int(m.group(5) or 0)
        mask = (1 << (32 if size == "w" else 64)) - 1
        if op != "movk":
            held[reg] = (piece << shift) & mask
        elif reg in held:
            held[reg] = (held[reg] & ~(0xFFFF << shift) | piece << shift) & mask
            out[row.address] = held[reg]
    return out


def _code_findings(call: ToolCall, rows: list[Row], procs: list[Procedure]) -> list[CryptoFinding]:
    """Per procedure, each signature whose operands it holds at least ``min_immediates`` distinct values of."""
    index: dict[int, list[int]] = defaultdict(list)
    for n, sig in enumerate(signatures()):
        if sig.immediates:
            for v in set(sig.values):
                index[v].append(n)
    seen: dict[tuple[int, int], dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    owners: dict[int, Procedure] = {}
    wide = _pieces(rows)
    for n, row in enumerate(rows):
        if n % 65536 == 0:
            call.ctx.check("identify_crypto")
        values = numbers(row.text)
        if row.address in wide:
            values.add(wide[row.address])
        for value in values:
            for s in index.get(value, ()):
                owner = containing(procs, row.address)
                if owner is not None:
                    owners[owner.start] = owner
                    seen[owner.start, s][value].add(row.address)
    out = []
    for (start, s), found in sorted(seen.items()):
        sig = signatures()[s]
        if len(found) < min(sig.min_immediates, len(sig.values)):
            continue
        # Fewer values of a constant than another holds in the same place (MD5's state inside SHA-1's) name that one.
        if any(other != s and set(found) < set(more) for (where, other), more in seen.items() if where == start):
            continue
        owner = owners[start]
        addresses = {a for sites in found.values() for a in sites}
        listed, count = _users({owner: addresses})
        out.append(
            CryptoFinding(
                primitive=sig.primitive,
                constant=sig.name,
                kind=sig.kind,
                standard=sig.standard,
                where="code",
                matched=len(found),
                total=len(set(sig.values)),
                users=listed,
                users_total=count,
            )
        )
    return out


def _summary(findings: list[CryptoFinding]) -> list[CryptoPrimitive]:
    by: dict[str, tuple[int, dict[str, ProcedureRef]]] = {}
    for f in findings:
        count, procs = by.get(f.primitive, (0, {}))
        procs.update((u.procedure.address, u.procedure) for u in f.users)
        by[f.primitive] = (count + 1, procs)
    return [
        CryptoPrimitive(
            primitive=name, findings=count, procedures=sorted(procs.values(), key=lambda p: int(p.address, 16))
        )
        for name, (count, procs) in sorted(by.items())
    ]


def _identify(call: ToolCall) -> Evidence:
    check_document(call)
    where = arg_choice(call.args, "where", program.WHERE, "both")
    offset = int_param(call.args, "offset", 0, 0)
    limit = int_param(call.args, "limit", 100, 1, 1000)
    procs = procedures(call)
    rows = program_rows(call) if procs and call.session.supports("read_function_instructions") else []
    findings: list[CryptoFinding] = []
    if where in ("data", "both"):
        findings += _data_findings(call, rows, procs, program.file_bytes(call))
    if where in ("code", "both"):
        findings += _code_findings(call, rows, procs)
    findings.sort(key=lambda f: (f.primitive, f.where, int(f.address, 16) if f.address else 0, f.constant))
    capped = len(findings) > MAX_FINDINGS
    findings = findings[:MAX_FINDINGS]
    end = min(len(findings), offset + limit)
    body = CryptoIdentification(
        where=where,
        primitives=_summary(findings),
        findings=findings[offset:end],
        offset=offset,
        limit=limit,
        total=len(findings),
        next_offset=end if end < len(findings) else None,
        truncated=capped,
    )
    limitations = [CAPA_NOTE]
    if not rows:
        limitations.append("the provider lists no instructions: constants in code and table users are not known")
    if capped:
        limitations.append(f"the search stopped at {MAX_FINDINGS} findings")
    return evidence(call, OperationResult(normalized=body, limitations=limitations, confidence="derived"))


def tools() -> list[ToolDef]:
    return [
        binary_tool(
            name="identify_crypto",
            result_type=CryptoIdentification,
            description=(
                "Names the cryptographic primitives in the binary (AES, SHA-1/2, MD5, BLAKE2, ChaCha20, CRC-32, "
                "Curve25519, P-256) from their standard tables and constants in data and in instruction operands, "
                "each with the procedures that use it."
            ),
            input_schema=obj(
                {
                    "where": prop(
                        "string",
                        "Where to look: data tables, code operands, or both (default).",
                        ["both"],
                        enum=["code", "data", "both"],
                    ),
                    "offset": OFFSET,
                    "limit": LIMIT,
                    "document": DOCUMENT,
                }
            ),
            handler=_identify,
            requires_operations=("list_segments", "list_procedures"),
            examples=({}, {"where": "code"}),
        )
    ]
