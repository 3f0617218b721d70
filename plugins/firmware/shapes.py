"""Result shapes of the firmware tools."""

from __future__ import annotations

from typing import Any, Literal

from rea.plugin import Page, Shape


class Region(Shape):
    """One stretch of the image: what unblob recognized there (its handler's name) or ``unknown``."""

    offset: int
    size: int
    kind: str
    # Shannon entropy in bits per byte (0-8): near 8 is compressed or encrypted, near 0 padding.
    entropy: float | None
    encrypted: bool = False


class EngineError(Shape):
    type: str
    severity: str
    message: str


class FirmwareRegions(Page):
    image_size: int
    regions: list[Region]
    # Bytes of the image no handler recognized.
    unknown_bytes: int
    errors: list[EngineError]
    sandbox: str


class ExtractedFile(Shape):
    # Relative to output_directory.
    path: str
    size: int
    sha256: str
    # rea's sniff of its first bytes: elf, pe, mach-o, zip, ... or file.
    format: str
    architecture: str | None = None


class NativeBinary(Shape):
    # Absolute: pass it to open_binary as it is.
    path: str
    format: str
    architecture: str | None = None


class Listing(Shape):
    status: Literal["complete", "bounded"]
    shown: int
    total: int
    complete_evidence: dict[str, Any] | None = None
    page_with: dict[str, Any] | None = None


class FirmwareExtraction(Shape):
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
    next_steps: list[dict[str, Any]]
    sandbox: str
