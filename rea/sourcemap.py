"""Source-map mappings decoded by Sentry's ``symbolic`` (its Rust ``sourcemap`` crate: VLQ segments, index maps
flattened): a generated line and column to the original source, line, column and name.

The one decoder of the static JavaScript tools (a bundle's functions given their original names) and the browser
tools (a page's runtime location traced back to its source), so both read a map the same way.
"""

from __future__ import annotations

import base64
import binascii
import urllib.parse
from dataclasses import dataclass
from typing import Any
from typing import Literal

MAX_MAP_BYTES = 64 << 20
# Counting the segments per source walks every token (about 3 µs each through symbolic's FFI): past this many a map
# gives its total only.
MAX_COUNTED_TOKENS = 1_000_000


class SourceMapError(Exception):
    """The map's mappings could not be decoded; the message says why (one line), ``kind`` what kind of reason."""

    def __init__(self, message: str, kind: Literal["limit", "source-map", "unavailable"] = "source-map") -> None:
        super().__init__(message)
        self.kind: Literal["limit", "source-map", "unavailable"] = kind


@dataclass
class Token:
    """A generated position's original: the map's source name (as written), its 0-based line and column, and the
    map's ``names`` entry there."""

    source: str
    line: int
    column: int
    name: str | None


class Decoded:
    """A source map's mappings, decoded: lookups from a generated position to the original one."""

    def __init__(self, view: Any) -> None:
        self.view = view
        self.tokens: int = len(view)

    def lookup(self, line: int, column: int) -> Token | None:
        """The original of a generated 0-based (line, column): the closest segment at or before it on its line."""
        match = self.view.lookup(line, column)
        if match is None or match.src is None or match.dst_line != line:
            return None
        return Token(source=match.src, line=match.src_line, column=match.src_col, name=match.name)

    def per_source(self) -> dict[str, int]:
        """Segments per source name; empty past ``MAX_COUNTED_TOKENS``."""
        counts: dict[str, int] = {}
        if self.tokens > MAX_COUNTED_TOKENS:
            return counts
        for token in self.view:
            if token.src is not None:
                counts[token.src] = counts.get(token.src, 0) + 1
        return counts

    def source_content(self, source: str) -> str | None:
        """The map's ``sourcesContent`` text of ``source`` (as the map names it), when it has one."""
        for index, name in self.view.iter_sources():
            if name == source:
                text = self.view.get_source_contents(index)
                return text if isinstance(text, str) else None
        return None


def decode(data: bytes) -> Decoded:
    """The decoded mappings of a source map; ``SourceMapError`` says why they cannot be decoded."""
    if len(data) > MAX_MAP_BYTES:
        raise SourceMapError(f"source map larger than {MAX_MAP_BYTES} bytes: mappings not decoded", "limit")
    try:
        from symbolic.exceptions import SymbolicError
        from symbolic.sourcemap import SourceMapView
    except ImportError as exc:  # pragma: no cover - symbolic is a dependency; a broken install says so
        raise SourceMapError(f"the source-map decoder (symbolic) does not load: {exc}", "unavailable") from None
    try:
        return Decoded(SourceMapView.from_json_bytes(data))
    except SymbolicError as exc:
        raise SourceMapError(f"mappings not decoded: {str(exc).splitlines()[0][:200]}") from None


def decode_data_url(url: str) -> bytes | None:
    """The payload of a ``data:`` URL (base64 or percent-encoded); ``None`` when malformed."""
    head, sep, payload = url[5:].partition(",")
    if not sep:
        return None
    if head.endswith(";base64"):
        try:
            return base64.b64decode(payload, validate=False)
        except (binascii.Error, ValueError):
            return None
    return urllib.parse.unquote_to_bytes(payload)
