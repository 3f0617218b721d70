"""The load image's regions without an engine: the segments and sections every provider lists
(``list_segments``), the region that maps an address, and the target's own file bytes behind it."""

from __future__ import annotations

from typing import Literal
from typing import TypedDict
from typing import cast

from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import normalize_address
from rea.plugin import read_pinned
from rea_plugins.binary.core.schema import run

_SEGMENTS = "binary.segments"


class Region(TypedDict):
    """A region: the provider's ``list_segments`` row (the provider contract's ``SegmentItem``), copied and read by
    key. The rows are taken as the contract types them, not decoded: a row a malformed binary left odd is shown by
    the tools that name a region, never refused with a decoding error."""

    name: str
    start: str
    end: str
    size: int
    permissions: str
    file_offset: int | None
    file_size: int
    kind: Literal["segment", "section"]


class Mapped(TypedDict):
    """What maps an address (``require_mapped``): its segment and (smallest) section, and the one of them that
    ``region`` names (the segment when there is one)."""

    segment: Region | None
    section: Region | None
    region: Region


def regions(call: ToolCall) -> list[Region]:
    """Segments then sections of the open target (cached per target and provider)."""
    target = call.session.require_target()
    provider = call.session.provider.descriptor.id if call.session.provider else ""
    cached = call.session.state.get(_SEGMENTS)
    if isinstance(cached, dict) and cached.get("key") == (target.sha256, provider):
        found: list[Region] = cached["regions"]
        return found
    # The provider's rows, as the contract types them (see Region).
    listed = [cast(Region, dict(r)) for r in run(call, "list_segments", {}).normalized["segments"]]
    call.session.state[_SEGMENTS] = {"key": (target.sha256, provider), "regions": listed}
    return listed


def _contains(region: Region, address: int) -> bool:
    return int(region["start"], 16) <= address < int(region["end"], 16)


def locate(call: ToolCall, address: int) -> tuple[Region | None, Region | None]:
    """The segment and the (smallest) section containing ``address``; either may be None."""
    segment: Region | None = None
    section: Region | None = None
    for r in regions(call):
        if r.get("size", 0) <= 0 or not _contains(r, address):
            continue
        if r["kind"] == "segment":
            segment = segment or r
        elif section is None or r["size"] < section["size"]:
            section = r
    return segment, section


def require_mapped(call: ToolCall, text: str, path: str = "address") -> tuple[str, Mapped]:
    """The canonical address and the region that maps it; an unmapped address is ``invalid_request``."""
    address = normalize_address(text, path)
    segment, section = locate(call, int(address, 16))
    region = segment or section
    if region is None:
        raise invalid_request(
            f"{address} is not mapped by any segment or section of the open target",
            [issue(path, "invalid_value", "the address lies outside every segment and section")],
        )
    return address, Mapped(segment=segment, section=section, region=region)


def region_file_offset(region: Region, address: int) -> int | None:
    delta = address - int(region["start"], 16)
    offset, size = region.get("file_offset"), region.get("file_size")
    if not isinstance(offset, int) or not isinstance(size, int) or delta >= size:
        return None
    return offset + delta


def read_file(target: Target, offset: int, length: int) -> bytes:
    """File bytes of the open target, the ones it was hashed from (``artifact_changed`` once it was rewritten)."""
    return read_pinned(target, offset, length)
