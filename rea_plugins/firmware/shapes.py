"""Result shapes of the firmware tools."""

from __future__ import annotations

from typing import Literal

from rea.plugin import Paged
from rea.plugin import Record
from rea.plugin import ToolStep


class Region(Record):
    """One stretch of the image: what unblob recognized there (its handler's name) or ``unknown``."""

    offset: int
    size: int
    kind: str
    # Shannon entropy in bits per byte (0-8): near 8 is compressed or encrypted, near 0 padding.
    entropy: float | None
    encrypted: bool = False


class EngineError(Record):
    type: str
    severity: str
    message: str


class FirmwareRegions(Paged):
    image_size: int
    regions: list[Region]
    # Bytes of the image no handler recognized.
    unknown_bytes: int
    errors: list[EngineError]
    sandbox: str


class ExtractedFile(Record):
    # Relative to output_directory.
    path: str
    size: int
    sha256: str
    # rea's sniff of its first bytes: elf, pe, mach-o, zip, ... or file.
    format: str
    architecture: str | None = None


class NativeBinary(Record):
    # Absolute: pass it to open_binary as it is.
    path: str
    format: str
    architecture: str | None = None


class Summary(Record):
    """What the unblob runner (in its sandbox) hands back: the top-level regions, unblob's errors, its task count;
    ``sandbox`` is added by the parent (what confined the runner)."""

    regions: list[Region] = []
    errors: list[EngineError] = []
    tasks: int = 0
    sandbox: str = "none"


class Listing(Record):
    status: Literal["complete", "bounded"]
    shown: int
    total: int
    # The kernel's retained reference to the complete record ({"kind": "retained-evidence", "evidence_id": ...}).
    complete_evidence: dict[str, str] | None = None
    page_with: ToolStep | None = None


class FirmwareExtraction(Record):
    output_directory: str
    file_count: int
    total_bytes: int
    files: list[ExtractedFile]
    native_binaries: list[NativeBinary]
    native_binary_count: int
    # Links and special files unblob wrote: counted, never listed as files nor followed.
    links: int
    regions: list[Region]
    errors: list[EngineError]
    listing: Listing
    next_steps: list[ToolStep]
    sandbox: str
