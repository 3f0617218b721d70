"""Search inside code and data on any provider: byte patterns, constants, instruction text and YARA rules.

Bytes are the target file's (``program.file_bytes``), placed through the segments every provider lists;
instruction text is each procedure's symbolized rows (``program.program_rows``).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any
from typing import Generic
from typing import Literal
from typing import TypedDict
from typing import TypeVar

import msgspec

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import OperationResult
from rea.plugin import ProcedureRef
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import arg_bool
from rea.plugin import arg_choice
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import compile_regex
from rea.plugin import int_param
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import matcher
from rea_plugins.binary.core.operands import numbers
from rea_plugins.binary.core.schema import DOCUMENT
from rea_plugins.binary.core.schema import LIMIT
from rea_plugins.binary.core.schema import OFFSET
from rea_plugins.binary.core.schema import binary_tool
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.core.schema import run
from rea_plugins.binary.core.shapes import ByteHit
from rea_plugins.binary.core.shapes import ByteSearch
from rea_plugins.binary.core.shapes import CodeHit
from rea_plugins.binary.core.shapes import Constant
from rea_plugins.binary.core.shapes import ConstantSearch
from rea_plugins.binary.core.shapes import InstructionSearch
from rea_plugins.binary.core.shapes import Placed
from rea_plugins.binary.core.shapes import YaraScan
from rea_plugins.binary.search import program
from rea_plugins.binary.search.program import Procedure
from rea_plugins.binary.search.program import Row
from rea_plugins.binary.search.program import containing
from rea_plugins.binary.search.program import procedures
from rea_plugins.binary.search.program import program_rows
from rea_plugins.binary.search.program import units

MAX_PATTERN_BYTES = 256
MAX_HITS = 100_000
MAX_RULES_CHARS = 64 * 1024
MAX_YARA_MATCHES = 10_000
MATCHED_HEX_BYTES = 32
DEFAULT_YARA_TIMEOUT_S = 60


def _bad(path: str, message: str, reason: str = "invalid_value") -> ReaError:
    return invalid_request(message, [issue(path, reason, message)])  # type: ignore[arg-type]


H = TypeVar("H")


class _Bounds(TypedDict):
    """A page's fields in a search's answer, and the bound that stopped the search when one did."""

    offset: int
    limit: int
    total: int
    next_offset: int | None
    truncated: bool
    bound: str | None


class _Found(Record, Generic[H]):
    """A search's answer as it is sent (``ByteSearch``, ``ConstantSearch``, ``InstructionSearch``, ``YaraScan``): the
    request it answers, the page of its hits, and the bound that stopped it. Each search fills its own request fields
    (the others are left out), so one order serves them all: the order each had as a dict."""

    pattern: str | None = None
    constant: Constant | None = None
    scope: str | None = None
    where: str | None = None
    mode: str | None = None
    rules_matched: list[str] | None = None
    hits: list[H] | None = None
    matches: list[H] | None = None
    offset: int
    limit: int
    total: int
    next_offset: int | None
    truncated: bool = False
    bound: str | None = None
    hint: str | None = None


def _window(args: Arguments, total: int, capped: bool, bound: str) -> tuple[slice, _Bounds]:
    """The page the call asks for of ``total`` hits, and its fields (``bound`` names the cap, said when it was hit)."""
    offset = int_param(args, "offset", 0, 0)
    limit = int_param(args, "limit", 100, 1, 1000)
    end = min(total, offset + limit)
    return slice(offset, offset + limit), _Bounds(
        offset=offset,
        limit=limit,
        total=total,
        next_offset=end if end < total else None,
        truncated=capped,
        bound=bound if capped else None,
    )


# -- search_bytes ----------------------------------------------------------------------------------------------


def byte_pattern(text: JSONValue) -> tuple[bytes, bool]:
    """An RE2 (Latin-1) pattern for hex bytes with ``??`` (and ``4?``-style nibble) wildcards; has wildcards."""
    if not isinstance(text, str) or not text.strip():
        raise _bad("pattern", "pattern must be hex bytes such as '48 8B ?? ?? E8'", "missing_argument")
    compact = re.sub(r"\s+", "", text).lower()
    if len(compact) % 2 or not re.fullmatch(r"[0-9a-f?]+", compact):
        raise _bad(
            "pattern", "pattern must be whole hex bytes (two digits each), with ?? for any byte", "invalid_format"
        )
    tokens = [compact[i : i + 2] for i in range(0, len(compact), 2)]
    if len(tokens) > MAX_PATTERN_BYTES:
        raise _bad("pattern", f"pattern is longer than {MAX_PATTERN_BYTES} bytes", "out_of_range")
    if all("?" in t for t in tokens):
        raise _bad("pattern", "pattern must fix at least one byte (every byte is a wildcard)")
    parts = []
    for t in tokens:
        if t == "??":
            parts.append(rb"(?s:.)")
        elif t[0] == "?":
            parts.append(b"[" + b"".join(b"\\x%x%s" % (hi, t[1].encode()) for hi in range(16)) + b"]")
        elif t[1] == "?":
            parts.append(b"[\\x" + t[0].encode() + b"0-\\x" + t[0].encode() + b"f]")
        else:
            parts.append(b"\\x" + t.encode())
    return b"".join(parts), any("?" in t for t in tokens)


def _compile_bytes(pattern: bytes) -> Any:
    import re2

    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1
    options.log_errors = False
    return re2.compile(pattern, options)


def find_all(
    call: ToolCall, compiled: Any, data: bytes, ranges: list[tuple[int, int]], aligned: int = 1
) -> tuple[list[tuple[int, int]], bool]:
    """(file offset, length) of every match, overlapping ones included, up to ``MAX_HITS``; capped or not."""
    found: list[tuple[int, int]] = []
    for start, end in ranges:
        pos = start
        while pos < end:
            m = compiled.search(data, pos, end)
            if m is None:
                break
            at = m.start()
            if at % aligned == 0:
                found.append((at, m.end() - at))
                if len(found) >= MAX_HITS:
                    return found, True
                if len(found) % 4096 == 0:
                    call.ctx.check("search")
            pos = at + 1
    return found, False


def _search_bytes(call: ToolCall) -> Evidence:
    check_document(call)
    pattern = arg_str(call.args, "pattern", "")  # required by the schema
    regex, wildcards = byte_pattern(pattern)
    scope = arg_str(call.args, "scope", "segments")
    data = program.file_bytes(call)
    found, capped = find_all(call, _compile_bytes(regex), data, program.ranges(call, scope, len(data)))
    procs, mapped = procedures(call), units(call)
    window, bounds = _window(call.args, len(found), capped, f"max_hits={MAX_HITS}")
    hits = []
    for at, length in found[window]:
        placed = msgspec.structs.asdict(program.place(call, procs, mapped, at))
        matched = data[at : at + min(length, MATCHED_HEX_BYTES)].hex() if wildcards else None
        hits.append(ByteHit(**placed, bytes=matched))
    body = _Found(pattern=re.sub(r"\s+", " ", pattern.strip()).upper(), scope=scope, hits=hits, **bounds)
    return evidence(call, OperationResult(normalized=body, limitations=_capped_note(capped)))


def _capped_note(capped: bool) -> list[str]:
    return [f"the search stopped at {MAX_HITS} hits: total counts those; narrow the pattern"] if capped else []


# -- constants -----------------------------------------------------------------------------------------------


def parse_constant(value: JSONValue, path: str) -> int:
    if isinstance(value, bool):
        raise _bad(path, f"{path} must be an integer or a string such as '0x9e3779b1' or '-14'", "invalid_type")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and re.fullmatch(r"\s*-?(0x[0-9a-fA-F]+|[0-9]+)\s*", value):
        number = int(value.strip(), 0)
    else:
        raise _bad(path, f"{path} must be an integer or a string such as '0x9e3779b1' or '-14'", "invalid_format")
    if not -(1 << 63) <= number < (1 << 64):
        raise _bad(path, f"{path} must fit in 64 bits", "out_of_range")
    return number


def equivalents(value: int) -> set[int]:
    """The operand values that mean ``value``: itself and its two's complement at 8, 16, 32 and 64 bits."""
    out = {value}
    for width in (8, 16, 32, 64):
        if -(1 << (width - 1)) <= value < 0:
            out.add(value + (1 << width))
        elif (1 << (width - 1)) <= value < (1 << width):
            out.add(value - (1 << width))
    return out


def _signed_readings(number: int) -> tuple[int, ...]:
    readings = [number]
    for width in (32, 64):
        if (1 << (width - 1)) <= number < (1 << width):
            readings.append(number - (1 << width))
    return tuple(readings)


# arm64 builds wide constants from 16-bit pieces: mov/movz sets a register, each movk replaces one halfword; ARM
# (32-bit) sets the low half with mov/movw and the high half with movt.
_PIECE = re.compile(
    r"^(mov|movz|movk|movw|movt)(?:\.w)?\s+([wxr])(\d+),\s*#?(0x[0-9a-f]+|[0-9]+)(?:,\s*lsl\s*#?(\d+))?$"
)
_WRITES = re.compile(r"^\S+\s+[wxr](\d+)\b")


def composed(rows: list[Row]) -> Iterator[tuple[Row, int]]:
    """Each movk (or movt) and the whole value its register then holds (pieces followed within one procedure)."""
    for row, value, _form in composed_forms(rows):
        yield row, value


def composed_forms(rows: list[Row]) -> Iterator[tuple[Row, int, Literal["movk", "movt"]]]:
    """Each movk or movt, the whole value its register then holds, and which of the two it was."""
    held: dict[str, int] = {}
    owner = None
    for row in rows:
        if row.procedure != owner:
            held, owner = {}, row.procedure
        body = row.text.split(";", 1)[0].strip().lower()
        m = _PIECE.match(body)
        if m is None:
            written = _WRITES.match(body)
            if written is not None:
                held.pop(written.group(1), None)
            continue
        op, size, reg, piece, shift = m.group(1), m.group(2), m.group(3), int(m.group(4), 0), int(m.group(5) or 0)
        mask = (1 << (64 if size == "x" else 32)) - 1
        if op == "movt":
            if reg in held:
                held[reg] = (held[reg] & 0xFFFF) | (piece & 0xFFFF) << 16
                yield row, held[reg], "movt"
        elif op != "movk":
            held[reg] = (piece << shift) & mask
        elif reg in held:
            held[reg] = (held[reg] & ~(0xFFFF << shift) | piece << shift) & mask
            yield row, held[reg], "movk"


# A load of a constant word: AArch64 ``ldr x0, #0x5f0`` (the pool's address), ARM ``ldr r0, [pc, #0x10]`` (pc
# reads 8 ahead in ARM mode, word-aligned), or a load whose address the provider resolved (``adrp`` + ``ldr``).
_LITERAL = re.compile(r"^(ldr|ldrsw|ldr\.w|vldr)\s+([a-z]+)(\d+),\s*#?(0x[0-9a-f]+|[0-9]+)$")
_LOAD = re.compile(r"^(ldr|ldrsw|ldr\.w|vldr)\s+([a-z]+)(\d+),\s*\[(\w+)(?:,\s*#(-?0x[0-9a-f]+|-?[0-9]+))?\]$")
_WIDTH = {"x": 8, "d": 8, "w": 4, "r": 4, "s": 4}


def literal_loads(rows: list[Row]) -> Iterator[tuple[Row, int, int]]:
    """(row, address of the word, width) of each load of a word at a known address."""
    for row in rows:
        body = row.text.split(";", 1)[0].strip().lower()
        m = _LITERAL.match(body) or _LOAD.match(body)
        if m is None or m.group(2) not in _WIDTH:
            continue
        width = 4 if m.group(1) == "ldrsw" else _WIDTH[m.group(2)]
        if m.re is _LITERAL:
            yield row, int(m.group(4), 0), width
        elif len(row.refs) == 1:
            yield row, row.refs[0], width
        elif m.group(4) == "pc":
            yield row, ((row.address + 8) & ~3) + int(m.group(5) or "0", 0), width


def _code_hit(procs: list[Procedure], row: Row) -> CodeHit:
    owner = containing(procs, row.procedure) if procs else None
    procedure = None if owner is None else ProcedureRef(address=hex(owner.start), name=owner.name)
    return CodeHit(address=hex(row.address), text=row.text, procedure=procedure)


def _constant_request(args: Arguments) -> tuple[int | None, int | None, int | None]:
    value, low, high = args.get("value"), args.get("min"), args.get("max")
    if value is not None and (low is not None or high is not None):
        raise _bad("value", "give value, or min and/or max, not both")
    if value is not None:
        return parse_constant(value, "value"), None, None
    if low is None and high is None:
        raise _bad("value", "value (or a range: min and/or max) is required", "missing_argument")
    lo = None if low is None else parse_constant(low, "min")
    hi = None if high is None else parse_constant(high, "max")
    if lo is not None and hi is not None and lo > hi:
        raise _bad("min", "min must not be greater than max", "out_of_range")
    return None, lo, hi


def _data_needles(value: int, endian: str) -> list[tuple[bytes, int]]:
    """The constant's encodings at 4 and 8 bytes (where it fits), each searched at its natural alignment."""
    out = []
    order: Literal["little", "big"] = "big" if endian == "big" else "little"
    for width in (4, 8):
        bits = width * 8
        if -(1 << (bits - 1)) <= value < (1 << bits):
            out.append(((value % (1 << bits)).to_bytes(width, order), width))
    return out


def _search_immediates(call: ToolCall) -> Evidence:
    check_document(call)
    value, lo, hi = _constant_request(call.args)
    where = arg_choice(call.args, "where", program.WHERE, "both")
    procs = procedures(call)
    hits: list[_CodeConstant | _DataConstant] = []
    limitations: list[str] = []
    if where in ("code", "both"):
        wanted = equivalents(value) if value is not None else set()

        def fits(number: int) -> bool:
            if value is not None:
                return number in wanted
            return any((lo is None or r >= lo) and (hi is None or r <= hi) for r in _signed_readings(number))

        rows = program_rows(call)
        found = _code_constants(call, rows, fits)
        hits.extend(
            _CodeConstant(**msgspec.structs.asdict(_code_hit(procs, found[a][0])), where="code", form=found[a][1])
            for a in sorted(found)[:MAX_HITS]
        )
    if where in ("data", "both") and len(hits) < MAX_HITS:
        if value is None:
            limitations.append("a range is searched in instruction operands only (data would match most words)")
        else:
            # A data word inside an instruction already listed is that instruction's operand (a movabs constant's
            # bytes in .text): one hit per instruction.
            spans = _instruction_spans(call, [h for h in hits if isinstance(h, _CodeConstant)])
            hits.extend(
                h for h in _data_hits(call, procs, value, MAX_HITS - len(hits)) if not _inside(spans, h.address)
            )
    capped = len(hits) >= MAX_HITS
    window, bounds = _window(call.args, len(hits), capped, f"max_hits={MAX_HITS}")
    body = _Found(
        constant=Constant(value=hex(value) if value >= 0 else str(value))
        if value is not None
        else Constant(min=lo, max=hi),
        where=where,
        hits=hits[window],
        **bounds,
    )
    return evidence(call, OperationResult(normalized=body, limitations=limitations + _capped_note(capped)))


CodeForm = Literal["immediate", "displacement", "movk", "movt", "literal_pool"]


# A constant search's hits (``ConstantHit``), each in the order its keys had as a dict: the instruction's or the
# place's, then the hit's.


class _CodeConstant(CodeHit, kw_only=True):
    where: Literal["code"]
    form: CodeForm


class _DataConstant(Placed, kw_only=True):
    where: Literal["data"]
    width: int


def _code_constants(call: ToolCall, rows: list[Row], fits: Callable[[int], bool]) -> dict[int, tuple[Row, CodeForm]]:
    """address -> (instruction, form) of each instruction holding a fitting constant, once per instruction."""
    found: dict[int, tuple[Row, CodeForm]] = {}
    for i, row in enumerate(rows):
        if i % 65536 == 0:
            call.ctx.check("search_immediates")
        for number, form in numbers(row.text, refs=row.refs):
            if fits(number):
                found[row.address] = (row, form)
                break
    for row, number, piece in composed_forms(rows):
        if fits(number):
            found.setdefault(row.address, (row, piece))
    pools = list(literal_loads(rows))
    if pools:
        data, mapped = program.file_bytes(call), units(call)
        endian = run(call, "list_documents", {}).normalized["documents"][0].get("endianness", "little")
        order: Literal["little", "big"] = "big" if endian == "big" else "little"
        for row, address, width in pools:
            unit = next((u for u in mapped if u.start <= address < u.start + u.file_size), None)
            # A word in writable memory is a variable's first value, not a constant the code loads.
            if unit is None or "w" in unit.permissions:
                continue
            at = unit.file_offset + address - unit.start
            if at + width > len(data):
                continue
            if fits(int.from_bytes(data[at : at + width], order)):
                found.setdefault(row.address, (row, "literal_pool"))
    return found


def _instruction_spans(call: ToolCall, hits: list[_CodeConstant]) -> list[tuple[int, int]]:
    """[start, end) of each listed instruction: from its address to the next instruction's."""
    if not hits:
        return []
    rows = program_rows(call)
    starts = [r.address for r in rows]
    spans = []
    for h in hits:
        at = int(h.address, 16)
        i = bisect.bisect_right(starts, at)
        spans.append((at, starts[i] if i < len(starts) else at + 16))
    return spans


def _inside(spans: list[tuple[int, int]], address: str | None) -> bool:
    return address is not None and any(lo <= int(address, 16) < hi for lo, hi in spans)


def _data_hits(call: ToolCall, procs: list[Procedure], value: int, room: int) -> list[_DataConstant]:
    """Aligned words equal to ``value`` in mapped sections: data sections, and code too for 64-bit constants."""
    endian = run(call, "list_documents", {}).normalized["documents"][0].get("endianness", "little")
    data = program.file_bytes(call)
    mapped = units(call)
    sections = [s for s in program.sections(call) if s.permissions != "---"]
    wide = not -(1 << 31) <= value < (1 << 32)
    chosen = [s for s in sections if "x" not in s.permissions or wide]
    ranges = sorted({(s.file_offset, min(len(data), s.file_offset + s.file_size)) for s in chosen})
    if not sections:
        ranges = program.ranges(call, "segments", len(data))
    hits: list[_DataConstant] = []
    seen: set[int] = set()
    for needle, width in _data_needles(value, endian):
        found, _ = find_all(call, _compile_bytes(b"".join(b"\\x%02x" % b for b in needle)), data, ranges)
        for at, _length in found:
            placed = program.place(call, procs, mapped, at)
            if placed.address is None or int(placed.address, 16) % width or at in seen:
                continue
            seen.add(at)
            hits.append(_DataConstant(**msgspec.structs.asdict(placed), where="data", width=width))
            if len(hits) >= room:
                return hits
    return sorted(hits, key=lambda h: h.file_offset)


# -- search_instructions ----------------------------------------------------------------------------------------


# What marks a pattern as written for a regex engine: anchors, wildcards, classes, groups and alternation. A bare
# ``[`` or ``+`` or ``*`` is not one: instruction text has them literally (``[rax + rdi*8]``).
_REGEX_SYNTAX = re.compile(r"^\^|(?<!\\)\$$|\.[*+?]|\\[bBsSdDwW.()\[\]|+*?{}]|\|(?!\|)|\(\?|\{\d+(,\d*)?\}|\[\^")


_MODES: tuple[Literal["literal", "regex"], ...] = ("literal", "regex")


def regex_syntax(pattern: str) -> list[str]:
    """The regex constructs a pattern uses (none for plain text)."""
    return [m.group(0) for m in _REGEX_SYNTAX.finditer(pattern)]


def _search_instructions(call: ToolCall) -> Evidence:
    check_document(call)
    match = matcher(call.args)
    procs = procedures(call)
    rows = program_rows(call)
    pattern = arg_str(call.args, "pattern", "")  # required by the schema
    mode = arg_choice(call.args, "mode", _MODES, "literal")
    hits = _matching(procs, rows, match)
    hint = None
    syntax = regex_syntax(pattern) if mode == "literal" else []
    if syntax and not hits:
        # A literal pattern written as a regex finds nothing as text: run it as the regex it is, and say so.
        shown = ", ".join(repr(s) for s in dict.fromkeys(syntax))
        try:
            as_regex = compile_regex(pattern, arg_bool(call.args, "case_sensitive"))
        except ReaError as exc:
            hint = (
                f"The literal pattern found nothing and has regex syntax ({shown}), but is no valid RE2 pattern: "
                f"{exc.message}"
            )
        else:
            hits, mode = _matching(procs, rows, as_regex), "regex"
            hint = (
                f"The literal pattern found nothing and has regex syntax ({shown}): it was run as a regular "
                "expression; pass mode 'regex' to ask for that, or escape the syntax to search the text."
            )
    capped = len(hits) >= MAX_HITS
    window, bounds = _window(call.args, len(hits), capped, f"max_hits={MAX_HITS}")
    body = _Found(pattern=pattern, mode=mode, hits=hits[window], hint=hint, **bounds)
    return evidence(call, OperationResult(normalized=body, limitations=_capped_note(capped)))


def _matching(procs: list[Procedure], rows: list[Row], match: Callable[[str], bool]) -> list[CodeHit]:
    hits = []
    for row in rows:
        if match(row.text):
            hits.append(_code_hit(procs, row))
            if len(hits) >= MAX_HITS:
                break
    return hits


# -- scan_yara ---------------------------------------------------------------------------------------------------


def _compile_rules(text: JSONValue) -> Any:
    import yara

    if not isinstance(text, str) or not text.strip():
        raise _bad("rules", "rules must be YARA rule text", "missing_argument")
    if len(text) > MAX_RULES_CHARS:
        raise _bad("rules", f"rules are longer than {MAX_RULES_CHARS} characters", "out_of_range")
    try:
        return yara.compile(source=text, includes=False)
    except yara.SyntaxError as exc:
        raise _bad("rules", f"the YARA rules do not compile: {exc}", "invalid_format") from None
    except yara.Error as exc:
        raise _bad("rules", f"the YARA rules were refused: {exc}") from None


class _YaraRow(Record):
    """A string match (``YaraMatch``) in the order its keys had as a dict: the rule's, the place's, the match's."""

    rule: str
    string_id: str
    file_offset: int
    address: str | None = None
    segment: str | None = None
    section: str | None = None
    procedure: ProcedureRef | None = None
    length: int
    bytes: str


def _scan_yara(call: ToolCall) -> Evidence:
    import yara

    check_document(call)
    rules = _compile_rules(call.args.get("rules"))
    scope = arg_str(call.args, "scope", "file")
    timeout = arg_int(call.args, "timeout_s", DEFAULT_YARA_TIMEOUT_S)
    data = program.file_bytes(call)
    procs, mapped = procedures(call), units(call)
    spans = [] if scope == "segments" else [(0, len(data))]
    if scope != "file":
        spans += program.ranges(call, "segments", len(data))
    found: dict[tuple[str, str, int], bytes] = {}
    rules_matched: set[str] = set()
    capped = False
    for start, end in spans:
        call.ctx.check("scan_yara")
        try:
            matches = program.yara_match(
                rules, data[start:end], timeout, "YARA scan", "Narrow the rules or raise timeout_s."
            )
        except yara.Error as exc:
            raise ReaError("execution_failure", f"the YARA scan failed: {exc}") from None
        rules_matched.update(m.rule for m in matches)
        # A match the file scan and a segment scan both see is one match.
        instances = (
            (m.rule, s.identifier, start + i.offset, bytes(i.matched_data))
            for m in matches
            for s in m.strings
            for i in s.instances
        )
        for rule, sid, at, matched in instances:
            if (rule, sid, at) in found:
                continue
            if len(found) >= MAX_YARA_MATCHES:
                capped = True
                break
            found[rule, sid, at] = matched
        if capped:
            break
    ordered = sorted(found.items(), key=lambda f: (f[0][2], f[0][0], f[0][1]))
    window, bounds = _window(call.args, len(ordered), capped, f"max_matches={MAX_YARA_MATCHES}")
    rows = [
        _YaraRow(
            rule=rule,
            string_id=sid,
            **msgspec.structs.asdict(program.place(call, procs, mapped, at)),
            length=len(matched),
            bytes=matched[:MATCHED_HEX_BYTES].hex(),
        )
        for (rule, sid, at), matched in ordered[window]
    ]
    body = _Found(scope=scope, rules_matched=sorted(rules_matched), matches=rows, **bounds)
    limits = [f"the scan stopped at {MAX_YARA_MATCHES} string matches"] if capped else []
    return evidence(call, OperationResult(normalized=body, limitations=limits))


# -- tool definitions -------------------------------------------------------------------------------------------


def tools() -> list[ToolDef]:
    scope = prop(
        "string", "segments (mapped file bytes, default) or file (every byte).", ["segments"], enum=["segments", "file"]
    )
    constant: JSONObject = {
        "anyOf": [{"type": "integer"}, {"type": "string", "pattern": r"^\s*-?(0x[0-9a-fA-F]+|[0-9]+)\s*$"}],
        "description": "A constant: an integer, or '0x9e3779b185ebca87' or '-14' as text.",
        "examples": ["0x9e3779b185ebca87"],
    }
    page = {"offset": OFFSET, "limit": LIMIT, "document": DOCUMENT}
    code_ops = ("list_segments", "list_procedures", "read_function_instructions", "list_documents")
    return [
        binary_tool(
            name="search_bytes",
            result_type=ByteSearch,
            description=(
                "Find a hex byte pattern with ?? wildcards ('48 8B ?? ?? E8') in the mapped segments "
                "or the whole file. Each hit has its address, file offset, segment, section and "
                "procedure."
            ),
            input_schema=obj(
                {
                    "pattern": prop(
                        "string", "Hex bytes; ?? matches any byte.", ["48 8B ?? ?? E8"], minLength=1, maxLength=1024
                    ),
                    "scope": scope,
                    **page,
                },
                ("pattern",),
            ),
            handler=_search_bytes,
            requires_operations=("list_segments",),
            cli_subject="pattern",
            examples=({"pattern": "48 8B ?? ?? E8"},),
        ),
        binary_tool(
            name="search_immediates",
            result_type=ConstantSearch,
            description=(
                "Find a constant (value, or a min/max range) in instruction operands (immediates, displacements, "
                "movk/movt pairs, literal pools) and aligned data words; each hit once, with its form."
            ),
            input_schema=obj(
                {
                    "value": constant,
                    "min": constant,
                    "max": constant,
                    "where": prop("string", "code, data or both (default).", ["both"], enum=["code", "data", "both"]),
                    **page,
                }
            ),
            handler=_search_immediates,
            requires_operations=code_ops,
            cli_subject="value",
            examples=({"value": "0x9e3779b185ebca87"}, {"min": -16, "max": -1}),
        ),
        binary_tool(
            name="search_instructions",
            result_type=InstructionSearch,
            description=(
                "Find instructions whose symbolized text matches a literal or RE2 pattern "
                "('^call .*malloc'), over every procedure; a literal in regex syntax that finds nothing runs as a "
                "regex, and the hint says so."
            ),
            input_schema=obj(
                {
                    "pattern": prop(
                        "string",
                        "Text or RE2 pattern over the symbolized instruction.",
                        ["^call .*malloc"],
                        minLength=1,
                        maxLength=1000,
                    ),
                    "mode": prop("string", "literal (default) or regex.", ["regex"], enum=["literal", "regex"]),
                    "case_sensitive": prop("boolean", "Match case exactly (default false).", [False]),
                    **page,
                },
                ("pattern",),
            ),
            handler=_search_instructions,
            requires_operations=code_ops,
            cli_subject="pattern",
            examples=({"pattern": "^call .*malloc", "mode": "regex"},),
        ),
        binary_tool(
            name="scan_yara",
            result_type=YaraScan,
            description=(
                "Scan the target file (or each mapped segment) with YARA rules given as text: every "
                "string match with rule, string id, file offset, address and procedure."
            ),
            input_schema=obj(
                {
                    "rules": prop(
                        "string",
                        "YARA rule source.",
                        ['rule r { strings: $a = "abc" condition: $a }'],
                        minLength=1,
                        maxLength=MAX_RULES_CHARS,
                    ),
                    "scope": prop(
                        "string", "file (default), segments or both.", ["file"], enum=["file", "segments", "both"]
                    ),
                    "timeout_s": prop(
                        "integer", "Scan deadline in seconds (1-600, default 60).", [60], minimum=1, maximum=600
                    ),
                    **page,
                },
                ("rules",),
            ),
            handler=_scan_yara,
            requires_operations=("list_segments",),
            cli_subject="rules",
            examples=({"rules": 'rule r { strings: $a = "abc" condition: $a }'},),
        ),
    ]
