"""``list_strings`` and ``search_strings`` with ``min_length``: the engine's strings, and the short ones code loads.

Engines scan for strings of at least four characters. A shorter one is still a string when code references it
(``"-t"`` or ``"man"`` in an option parser): every address an instruction operand names is read from the file,
and a printable, NUL-terminated run of 1-3 characters there (or one a data pointer names, as in a getopt option
table) is listed with ``referenced: true``, as is a referenced string of any length that begins inside another
(the linker's tail merging: ``"xml"`` inside ``"--to-xml"``). Below the default floor, ``min_length`` also lists
unreferenced NUL-delimited runs of that length from data sections.
"""

from __future__ import annotations

import re

import msgspec

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import int_param
from rea.plugin import matcher
from rea.plugin import page
from rea.plugin import parse_address
from rea_plugins.binary.core.regions import read_file
from rea_plugins.binary.core.schema import ADDRESS
from rea_plugins.binary.core.schema import DOCUMENT
from rea_plugins.binary.core.schema import LIMIT
from rea_plugins.binary.core.schema import MIN_LENGTH
from rea_plugins.binary.core.schema import OFFSET
from rea_plugins.binary.core.schema import SEARCH
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import operation_tool
from rea_plugins.binary.core.schema import params_of
from rea_plugins.binary.core.schema import run
from rea_plugins.binary.search import program

ENGINE_FLOOR = 4
MAX_MIN_LENGTH = 64
# Gathering every instruction to find referenced short strings is bounded by the procedure count.
MAX_PROCEDURES_FOR_REFERENCES = 10_000
# Short runs no instruction names are each looked up in xrefs (data pointers), up to this many.
MAX_DATA_REFERENCE_LOOKUPS = 4096
_SHORT = re.compile(rb"(?<=\x00)[\x20-\x7e]{1,3}(?=\x00)")
# A referenced string inside another (the linker merges "xml" into the tail of "--to-xml"): text up to its NUL.
MAX_REFERENCED_TAIL = 1024
_TAIL = re.compile(rb"[\x20-\x7e\t\n\r]{1,%d}" % MAX_REFERENCED_TAIL)
_CACHE = "binary.strings.short"


class _Short(Record):
    """A string the engine's scan does not list, in the provider contract's ``StringItem`` keys (and order);
    ``referenced`` said only when code or a data pointer names it."""

    address: str
    value: str
    encoding: str
    byte_length: int
    truncated: bool
    section: str
    referenced: bool = False


def _data_sections(call: ToolCall) -> list[program.Unit]:
    return [s for s in program.sections(call) if "x" not in s.permissions]


def _short_strings(call: ToolCall, limitations: list[str]) -> list[_Short]:
    """NUL-delimited printable runs of 1-3 characters in data sections (marked where code references them), and
    referenced strings that begin inside another."""
    key = program.cache_key(call)
    cached = call.session.state.get(_CACHE)
    if isinstance(cached, tuple) and cached[0] == key:
        found: list[_Short] = cached[1]
        limitations.extend(cached[2])
        return found
    notes: list[str] = []
    referenced: set[int] = set()
    if not call.session.supports("list_segments"):
        return []
    if not call.session.supports("read_function_instructions"):
        notes.append(
            f"strings under {ENGINE_FLOOR} characters that code references are not listed: the provider "
            "reads no instructions"
        )
    elif len(program.procedures(call)) <= MAX_PROCEDURES_FOR_REFERENCES:
        try:
            for row in program.program_rows(call):
                referenced.update(row.refs)
        except ReaError as exc:
            if exc.code != "resource_constraint":
                raise
            notes.append(f"strings under {ENGINE_FLOOR} characters that code references are not listed: {exc.message}")
    else:
        notes.append(
            f"strings under {ENGINE_FLOOR} characters that code references are not listed: the program has "
            f"more than {MAX_PROCEDURES_FOR_REFERENCES} procedures (search_bytes finds them)"
        )
    target = call.session.require_target()
    found = []
    for s in _data_sections(call):
        size = min(s.file_size, max(0, target.size - s.file_offset))
        # One byte before the section lets a run at its very start count as NUL-preceded.
        blob = b"\x00" + read_file(target, s.file_offset, size)
        for m in _SHORT.finditer(blob):
            address = s.start + m.start() - 1
            found.append(
                _Short(
                    address=hex(address),
                    value=m.group(0).decode("ascii"),
                    encoding="ascii",
                    byte_length=len(m.group(0)),
                    truncated=False,
                    section=s.name,
                    referenced=address in referenced,
                )
            )
        found.extend(_referenced_tails(blob, s.start, s.name, referenced))
    pointed = _data_referenced(call, [s.address for s in found if not s.referenced], notes)
    found = [msgspec.structs.replace(s, referenced=True) if s.address in pointed else s for s in found]
    call.session.state[_CACHE] = (key, found, notes)
    limitations.extend(notes)
    return found


def _data_referenced(call: ToolCall, candidates: list[str], notes: list[str]) -> set[str]:
    """The candidates' addresses a data pointer names (an option table's ``{"to", ...}``): a short string there is
    referenced too (``xrefs`` of each)."""
    if not call.session.supports("xrefs"):
        return set()
    if len(candidates) > MAX_DATA_REFERENCE_LOOKUPS:
        notes.append(
            f"strings under {ENGINE_FLOOR} characters that only data pointers reference are not listed: "
            f"more than {MAX_DATA_REFERENCE_LOOKUPS} candidates (min_length lists them)"
        )
        return set()
    return {
        address
        for address in candidates
        if call.session.execute("xrefs", {"address": address}, call.ctx).normalized.get("references")
    }


def _referenced_tails(blob: bytes, start: int, section: str, referenced: set[int]) -> list[_Short]:
    """Strings code references that begin inside another string (no NUL before them), so no scan starts there."""
    out = []
    for address in sorted(a for a in referenced if start <= a < start + len(blob) - 1):
        at = address - start + 1  # blob starts with one added NUL
        if blob[at - 1] == 0:
            continue  # a NUL-preceded string: the engine's scan or _SHORT lists it
        m = _TAIL.match(blob, at)
        if m is None:
            continue
        after = blob[m.end() : m.end() + 1]
        truncated = after != b"\x00"
        if truncated and (not after or _TAIL.match(after) is None):
            continue  # the text does not end in NUL: not a C string
        value = m.group(0).decode("ascii")
        out.append(
            _Short(
                address=hex(address),
                value=value,
                encoding="ascii",
                byte_length=len(value),
                truncated=truncated,
                section=section,
                referenced=True,
            )
        )
    return out


def _listing(call: ToolCall, operation: str, params: Arguments) -> tuple[list[JSONObject], list[str]]:
    """The engine's strings (every page: its rows, an engine's JSON) merged with the short ones that ``min_length``
    admits, by address."""
    min_length = int_param(params, "min_length", ENGINE_FLOOR, 1, MAX_MIN_LENGTH)
    engine_params = {k: v for k, v in params.items() if k not in ("min_length", "offset", "limit")}
    items: list[JSONObject] = []
    limitations: list[str] = []
    offset: int | None = 0
    while offset is not None:
        result = run(call, operation, {**engine_params, "offset": offset, "limit": 1000})
        items.extend(result.normalized["strings"])
        limitations.extend(x for x in result.limitations if x not in limitations)
        offset = result.normalized.get("next_offset")
    items = [s for s in items if len(str(s["value"])) >= min_length or s.get("truncated")]
    known = {str(s["address"]) for s in items}
    # A referenced string is listed at any length unless min_length asks for longer ones.
    any_referenced = min_length <= ENGINE_FLOOR
    short = [
        s
        for s in _short_strings(call, limitations)
        if s.address not in known and (len(s.value) >= min_length or s.truncated or (any_referenced and s.referenced))
    ]
    if operation == "search_strings":
        match = matcher(params)
        short = [s for s in short if match(s.value)]
    if params.get("address") is not None:
        at = parse_address(params["address"])
        short = [s for s in short if int(s.address, 16) <= at < int(s.address, 16) + s.byte_length]
    # Listed beside the engine's rows, as JSON of the same keys.
    items.extend(msgspec.to_builtins(s) for s in short)
    items.sort(key=lambda s: int(str(s["address"]), 16))
    return items, limitations


def handle(call: ToolCall) -> Evidence:
    check_document(call)
    params = params_of(call.args)
    items, limitations = _listing(call, call.tool.name, params)
    return evidence(call, OperationResult(normalized=page("strings", items, params, dict), limitations=limitations))


def tools() -> list[ToolDef]:
    return [
        operation_tool(
            "list_strings",
            description="Page through strings: address, value, encoding, byte length, truncation, section; address "
            "selects one.",
            input_schema=obj(
                {"offset": OFFSET, "limit": LIMIT, "address": ADDRESS, "min_length": MIN_LENGTH, "document": DOCUMENT}
            ),
            handler=handle,
            examples=({}, {"address": "0x402004"}),
        ),
        operation_tool(
            "search_strings",
            description="Find strings matching a literal substring or a regex (bounded, paged).",
            input_schema=obj(
                {
                    **SEARCH,
                    "min_length": MIN_LENGTH,
                    "document": DOCUMENT,
                },
                ("pattern",),
            ),
            handler=handle,
            cli_subject="pattern",
            examples=({"pattern": "usage"}, {"pattern": "^%s", "mode": "regex", "case_sensitive": True}),
        ),
    ]
