"""The result of recover_javascript_sources (its output schema comes from these; no engine imported here)."""

from __future__ import annotations

from rea.plugin import Isolation
from rea.plugin import Paged
from rea.plugin import Record


class RecoveredModule(Record):
    # Relative to output_directory.
    path: str
    sha256: str
    bytes: int
    # [start, end) byte ranges of the bundle this module came from.
    ranges: list[list[int]]
    extraction: str | None


class Unbundler(Record):
    name: str
    version: str | None
    executable: str


class RecoveredSources(Paged):
    """recover_javascript_sources: the modules an unbundler recovered, each linked to its bytes in the bundle."""

    schema_version: int
    unbundler: Unbundler
    input_path: str
    input_sha256: str
    input_bytes: int
    output_directory: str
    format: str
    strategy: str | None
    modules: list[RecoveredModule]
    isolation: Isolation
    limitations: list[str]
