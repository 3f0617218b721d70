"""The load image's regions without an engine: the segments and sections every provider lists
(``list_segments``), the region that maps an address, and the target's own file bytes behind it."""

from __future__ import annotations

from typing import Any

from rea.plugin import Target, ToolCall, invalid_request, issue, normalize_address, read_pinned
from rea_plugins.binary.core.schema import run

_SEGMENTS = "binary.segments"

# A region is the provider's list_segments row (``SegmentItem``'s JSON), copied and read by key. It stays an untyped
# dict for now: navigation (image, stepping), search (strings, program, codesearch) and notebook (types) read its
# fields as the typed values they are, so typing it JSONObject, or as a TypedDict, moves a narrowing or a signature
# into each of those rooms; that change is made with them, in one commit (see the report of issue 43).


def regions(call: ToolCall) -> list[dict[str, Any]]:
    """Segments then sections of the open target (cached per target and provider)."""
    target = call.session.require_target()
    provider = call.session.provider.descriptor.id if call.session.provider else ""
    cached = call.session.state.get(_SEGMENTS)
    if isinstance(cached, dict) and cached.get("key") == (target.sha256, provider):
        found: list[dict[str, Any]] = cached["regions"]
        return found
    listed = [dict(r) for r in run(call, "list_segments", {}).normalized["segments"]]
    call.session.state[_SEGMENTS] = {"key": (target.sha256, provider), "regions": listed}
    return listed


def _contains(region: dict[str, Any], address: int) -> bool:
    return int(region["start"], 16) <= address < int(region["end"], 16)


def locate(call: ToolCall, address: int) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The segment and the (smallest) section containing ``address``; either may be None."""
    segment = section = None
    for r in regions(call):
        if r.get("size", 0) <= 0 or not _contains(r, address):
            continue
        if r["kind"] == "segment":
            segment = segment or r
        elif section is None or r["size"] < section["size"]:
            section = r
    return segment, section


def require_mapped(call: ToolCall, text: str, path: str = "address") -> tuple[str, dict[str, Any]]:
    """The canonical address and the region that maps it; an unmapped address is ``invalid_request``."""
    address = normalize_address(text, path)
    segment, section = locate(call, int(address, 16))
    region = segment or section
    if region is None:
        raise invalid_request(
            f"{address} is not mapped by any segment or section of the open target",
            [issue(path, "invalid_value", "the address lies outside every segment and section")],
        )
    return address, {"segment": segment, "section": section, "region": region}


def region_file_offset(region: dict[str, Any], address: int) -> int | None:
    delta = address - int(region["start"], 16)
    offset, size = region.get("file_offset"), region.get("file_size")
    if not isinstance(offset, int) or not isinstance(size, int) or delta >= size:
        return None
    return offset + delta


def read_file(target: Target, offset: int, length: int) -> bytes:
    """File bytes of the open target, the ones it was hashed from (``artifact_changed`` once it was rewritten)."""
    return read_pinned(target, offset, length)
