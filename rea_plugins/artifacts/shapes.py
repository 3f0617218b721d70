"""Result shapes of the artifact tools (inspect_artifact's inventory)."""

from __future__ import annotations

from typing import Literal

from rea.plugin import DeclaredIntegrity
from rea.plugin import JSONObject
from rea.plugin import Record
from rea.plugin import TargetView
from rea.plugin import ToolStep


class NestedArchive(Record):
    """An archive inside the archive: expanded (its entries follow, ``outer!/inner``), unreadable, or not opened
    (deeper than max_depth); ``format`` is the reader's once opened, the sniffed one otherwise."""

    format: str
    status: Literal["expanded", "unreadable", "not-expanded"]
    entry_count: int | None = None
    error_code: str | None = None
    error: str | None = None


class ArtifactEntry(Record):
    path: str
    ordinal: int
    kind: Literal["file", "directory", "link", "special"]
    size: int | None
    sha256: str | None
    executable: bool
    unpacked: bool
    link: str | None
    declared_integrity: DeclaredIntegrity | None
    integrity: Literal["verified", "undeclared", "contradicted", "unavailable", "not-applicable"]
    compressed_size: int | None
    depth: int
    nested_archive: NestedArchive | None
    problem: str | None
    unavailable_reason: str | None = None


class Totals(Record):
    files: int
    directories: int
    links: int
    special: int
    # Bytes of the outer archive's files (nested entries excluded).
    bytes: int


class ArtifactInventory(Record):
    format: str
    entry_count: int
    totals: Totals
    entries: list[ArtifactEntry]
    integrity_policy: Literal["fail", "record-and-continue"]
    # The unpacker's contradiction records: JSON the kernel's EntryRead carries, their fields each unpacker's.
    integrity_contradictions: list[JSONObject]
    coverage: Literal["complete", "partial"]
    partial_reasons: list[str]
    limits: dict[str, int | float]
    # What else the archive is (an Android package, ...) and the tools that read it.
    views: list[TargetView] = []


class EntryFacts(Record):
    """What compare_artifacts compares of an entry."""

    kind: str | None
    size: int | None
    sha256: str | None
    link: str | None
    executable: bool | None
    unpacked: bool | None


class EntryLabel(Record):
    path: str
    # Only where an archive holds the same path more than once.
    ordinal: int = 0


class ListedEntry(EntryFacts):
    path: str
    ordinal: int = 0


class ChangedEntry(Record):
    path: str
    fields: list[str]
    left: EntryFacts
    right: EntryFacts
    ordinal: int = 0


class ContradictedEntry(Record):
    path: str
    left: EntryFacts | None
    right: EntryFacts | None
    contradicted_in: list[Literal["left", "right"]]
    ordinal: int = 0


class ComparedSide(Record):
    evidence_id: str
    format: str | None
    sha256: str | None
    entry_count: int
    coverage: str | None


class ComparisonSummary(Record):
    added: int
    removed: int
    changed: int
    unchanged: int
    contradicted: int


class ArtifactComparison(Record):
    left: ComparedSide
    right: ComparedSide
    summary: ComparisonSummary
    added: list[ListedEntry]
    removed: list[ListedEntry]
    changed: list[ChangedEntry]
    unchanged: list[EntryLabel]
    contradicted: list[ContradictedEntry]
    coverage: Literal["complete", "partial"]


class ExtractedFile(Record):
    path: str
    size: int
    sha256: str
    unpacked: bool
    executable: bool
    integrity: Literal["verified", "undeclared", "contradicted"]
    # A contradicted file (record-and-continue) lies here, under the output directory, never at its own path.
    quarantined_to: str | None = None


class RefusedEntry(Record):
    """A selected entry not written, and why (not_found, not_a_file, case_collision, parent_is_a_file, ...)."""

    path: str
    ordinal: int
    kind: str | None
    reason: str


class Listing(Record):
    """complete: every row is listed; bounded: the first rows, the retained complete record named and pageable."""

    status: Literal["complete", "bounded"]
    shown: dict[str, int] = {}
    total: dict[str, int] = {}
    # The kernel's retained reference to the complete record ({"kind": "retained-evidence", "evidence_id": ...}).
    complete_evidence: dict[str, str] | None = None
    page_with: ToolStep | None = None


class Extraction(Record):
    format: str
    integrity_policy: Literal["fail", "record-and-continue"]
    output_directory: str
    files: list[ExtractedFile]
    refused: list[RefusedEntry]
    # The unpacker's contradiction records (as in ArtifactInventory), each with where its bytes were quarantined.
    integrity_contradictions: list[JSONObject]
    file_count: int
    total_bytes: int
    refused_count: int
    contradiction_count: int
    listing: Listing
