"""The load image without an engine: address to file offset, bounded byte reads, load-image facts.

Every provider reports segments and sections with their file extents (``list_segments``); these
tools map addresses with them and read the target's own bytes, so they work on any provider.
"""

from __future__ import annotations

from typing import Literal
from typing import NamedTuple

import msgspec
from msgspec import UNSET
from msgspec import UnsetType

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import OperationResult
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea_plugins.binary.core.regions import Region
from rea_plugins.binary.core.regions import locate
from rea_plugins.binary.core.regions import read_file
from rea_plugins.binary.core.regions import region_file_offset
from rea_plugins.binary.core.regions import regions
from rea_plugins.binary.core.regions import require_mapped
from rea_plugins.binary.core.schema import ADDRESS
from rea_plugins.binary.core.schema import ADDRESS_INPUT
from rea_plugins.binary.core.schema import DOCUMENT
from rea_plugins.binary.core.schema import binary_tool
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.core.schema import run
from rea_plugins.binary.core.shapes import BytesRead
from rea_plugins.binary.core.shapes import EntryPlace
from rea_plugins.binary.core.shapes import Extent
from rea_plugins.binary.core.shapes import FileOffset
from rea_plugins.binary.core.shapes import LoadImage
from rea_plugins.binary.core.shapes import LoadUnit
from rea_plugins.binary.core.shapes import RegionBrief

MAX_READ = 4096
DEFAULT_READ = 256
ZERO_FILLED = "the address is in the zero-filled part of its region (no file bytes back it)"


# RegionBrief's fields are filled from the provider's row as it gave them (replace, not convert: a row a malformed
# binary left odd is shown, not refused with a decoding error).
_NO_REGION = RegionBrief(name="", kind="segment", start="", end="", permissions="", file_offset=None, file_size=None)


def region_brief(region: Region) -> RegionBrief:
    """The region as the answers name it; ``region`` is the provider's ``list_segments`` row (the provider contract's
    ``SegmentItem``, whose keys these are; a key it leaves out reads as null)."""
    return msgspec.structs.replace(_NO_REGION, **{k: region.get(k) for k in RegionBrief.__struct_fields__})


class Backed(NamedTuple):
    """What lies at a mapped address: the file's bytes behind it (fewer than ``backed`` only when the file is shorter
    than its segments say), how many bytes the region holds from there (``held``), how many of those the file backs,
    and the file offset (None in the zero-filled part)."""

    data: bytes
    held: int
    backed: int
    offset: int | None


def file_backed(call: ToolCall, address: str, region: Region, size: int) -> Backed:
    """At most ``size`` bytes of ``region`` (the provider's row of the region mapping ``address``) from ``address``."""
    brief, start = region_brief(region), int(address, 16)
    count = max(0, min(size, int(brief.end, 16) - start))
    backed = max(0, min(count, (brief.file_size or 0) - (start - int(brief.start, 16))))
    offset = region_file_offset(region, start)
    data = read_file(call.session.require_target(), offset, backed) if backed and offset is not None else b""
    return Backed(data, count, backed, offset)


def _result(call: ToolCall, body: object, limitations: list[str] | None = None) -> Evidence:
    """Evidence of ``body``: a FileOffset or BytesRead, or the load image's body around the provider's document."""
    return evidence(call, OperationResult(normalized=body, limitations=limitations or []))


# -- address_to_file_offset ---------------------------------------------------------------------------


def _address_to_file_offset(call: ToolCall) -> Evidence:
    check_document(call)
    address, where = require_mapped(call, arg_str(call.args, "address", ""))  # required by the schema
    region = where["region"]
    offset = region_file_offset(region, int(address, 16))
    body = FileOffset(
        address=address,
        file_offset=offset,
        file_offset_hex=None if offset is None else f"0x{offset:x}",
        backed_by_file=offset is not None,
        region=region_brief(region),
        section=where["section"]["name"] if where["section"] else None,
        reason=None if offset is not None else ZERO_FILLED,
    )
    return _result(call, body)


# -- read_bytes ---------------------------------------------------------------------------------------


def _read_bytes(call: ToolCall) -> Evidence:
    check_document(call)
    target = call.session.require_target()
    address, where = require_mapped(call, arg_str(call.args, "address", ""))  # required by the schema
    length = arg_int(call.args, "length", DEFAULT_READ)
    region = where["region"]
    data, count, backed, offset = file_backed(call, address, region, length)
    if len(data) < backed:
        raise ReaError(
            "artifact_changed",
            f"{target.resolved_path} is shorter than its segments say",
            details={"path": target.resolved_path, "file_offset": offset},
        )
    data += b"\0" * (count - len(data))
    body = BytesRead(
        address=address,
        length=length,
        bytes_read=count,
        hex=data.hex(),
        ascii="".join(chr(b) if 0x20 <= b < 0x7F else "." for b in data),
        file_offset=offset,
        zero_filled=count - backed,
        truncated=count < length,
        region=region_brief(region),
        section=where["section"]["name"] if where["section"] else None,
    )
    lims = [f"the read stops at the end of {region['name']} ({region['end']})"] if count < length else []
    if count - backed:
        lims.append(
            f"{count - backed} bytes past the file-backed part of {region['name']} read as zero (their load-time value)"
        )
    return _result(call, body, lims)


# -- inspect_native_load_image ------------------------------------------------------------------------


class _LoadImage(Record):
    """The answer (``LoadImage``'s keys in the order it had as a dict): every key said, null where it is null; linkage
    and mitigations only where the provider's binary_layout has them."""

    # The provider's document and binary_layout parts go in as it gave them (an engine's JSON, null where it said
    # null).
    document: JSONObject
    file_size: int
    image_base: JSONValue
    mapped_extent: Extent | None
    units: Literal["segments", "sections"]
    segments: list[LoadUnit]
    section_count: int
    entry: EntryPlace | None
    writable_and_executable: list[str]
    file_bytes_after_last_unit: int
    linkage: JSONValue | UnsetType = UNSET
    mitigations: JSONValue | UnsetType = UNSET


def _load_image(call: ToolCall) -> Evidence:
    check_document(call)
    target = call.session.require_target()
    doc = dict(run(call, "list_documents", {}).normalized["documents"][0])
    listed = regions(call)
    segments = [r for r in listed if r["kind"] == "segment"]
    sections = [r for r in listed if r["kind"] == "section"]
    # PE images have sections only: they are the mapped units.
    units = segments or sections
    mapped = [u for u in units if u["size"] > 0 and u["permissions"] != "---"]
    # The provider's binary_layout answer (an engine's JSON): its linkage and mitigations go in as it gave them.
    layout: JSONObject = {}
    lims: list[str] = []
    if call.session.supports("binary_layout"):
        layout = run(call, "binary_layout", {}).normalized
    else:
        lims.append(
            "the bound provider offers no binary_layout: image base, linkage and mitigations are omitted "
            "or derived from segments"
        )
    out_units = []
    for u in units:
        start, end = int(u["start"], 16), int(u["end"], 16)
        inner = [s["name"] for s in sections if u is not s and start <= int(s["start"], 16) < end] if segments else []
        out_units.append(
            LoadUnit(
                **msgspec.structs.asdict(region_brief(u)),
                size=u["size"],
                zero_fill=max(0, u["size"] - (u.get("file_size") or 0)),
                sections=inner,
            )
        )
    file_end = max(
        (
            offset + u["file_size"]
            for u in units
            if isinstance(offset := u.get("file_offset"), int) and isinstance(u.get("file_size"), int)
        ),
        default=0,
    )
    entry = doc.get("entry")
    entry_info = None
    if isinstance(entry, str):
        seg, sec = locate(call, int(entry, 16))
        host = seg or sec
        entry_info = EntryPlace(
            address=entry,
            region=host["name"] if host else None,
            section=sec["name"] if sec else None,
            executable=bool(host and "x" in host["permissions"]),
        )
    first = min(mapped, key=lambda u: int(u["start"], 16)) if mapped else None
    body = _LoadImage(
        document=doc,
        file_size=target.size,
        image_base=layout.get("image_base") or (first["start"] if first else None),
        mapped_extent=(
            Extent(start=first["start"], end=max(mapped, key=lambda u: int(u["end"], 16))["end"]) if first else None
        ),
        units="segments" if segments else "sections",
        segments=out_units,
        section_count=len(sections),
        entry=entry_info,
        writable_and_executable=[u["name"] for u in units if "w" in u["permissions"] and "x" in u["permissions"]],
        file_bytes_after_last_unit=max(0, target.size - file_end),
        linkage=layout.get("linkage", UNSET),
        mitigations=layout.get("mitigations", UNSET),
    )
    return _result(call, body, lims)


def tools() -> list[ToolDef]:
    length = prop(
        "integer", f"Bytes to read (1-{MAX_READ}, default {DEFAULT_READ}).", [64], minimum=1, maximum=MAX_READ
    )
    return [
        binary_tool(
            name="read_bytes",
            result_type=BytesRead,
            description=(
                f"Read at most {MAX_READ} bytes of the load image at a virtual address (hex and an "
                "ASCII rendering); stops at the end of the containing segment, zero-fill read as zero."
            ),
            input_schema=obj({"address": ADDRESS, "length": length, "document": DOCUMENT}, ("address",)),
            handler=_read_bytes,
            requires_operations=("list_segments",),
            cli_subject="address",
            examples=({"address": "0x401136"}, {"address": "0x402004", "length": 32}),
        ),
        binary_tool(
            name="address_to_file_offset",
            result_type=FileOffset,
            description=(
                "Map a virtual address to its file offset through the segment that loads it (null "
                "in zero-filled memory such as .bss)."
            ),
            input_schema=ADDRESS_INPUT,
            handler=_address_to_file_offset,
            requires_operations=("list_segments",),
            cli_subject="address",
            examples=({"address": "0x401136"},),
        ),
        binary_tool(
            name="inspect_native_load_image",
            result_type=LoadImage,
            description=(
                "The target's load image: base, mapped extent and segments (file extents, zero fill, "
                "sections). Also the entry point's segment, writable+executable segments, trailing file "
                "bytes, and linkage and mitigations where the provider reports them."
            ),
            input_schema=obj({"document": DOCUMENT}),
            handler=_load_image,
            requires_operations=("list_documents", "list_segments"),
            examples=({},),
        ),
    ]
