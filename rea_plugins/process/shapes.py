"""The normalized results of the process tools: a capture and a comparison of two captures."""

from __future__ import annotations

from typing import Literal

import msgspec

from rea.plugin import Isolation
from rea.plugin import JSONObject
from rea.plugin import Record


class OutputStream(Record):
    """One output stream: its first bytes as text, its whole size and digest."""

    text: str
    bytes: int
    truncated: bool
    sha256: str


class ExitRecord(Record):
    observed: bool
    exit_code: int | None
    signal: str | None
    # bubblewrap reports a program killed by signal N as exit status 128 + N: the signal that implies.
    signal_inferred: str | None = None


# One signal sent: when, why, and its delivery as the kernel reported it (the pids it went to).
class Signal(Record):
    at_ms: int
    # "event", "finalization", or why a process that left the session was killed; the kernel's own reason
    # (e.g. "no process in the group") where the signal was not delivered.
    reason: str
    signal: str
    delivered: bool
    scope: str | None = None
    pids: list[int] | None = None


class Lifecycle(Record):
    started_at: str
    end_reason: str
    elapsed_ms: int | None
    executable: str
    private_directory: str
    pid: int
    exit: ExitRecord
    signals: list[Signal]
    phase_reached: str


class Terminal(Record):
    rows: int
    columns: int


class Checkpoint(Record):
    id: str
    reached: bool
    at_ms: int | None


class FileEntry(Record):
    root: int
    path: str
    kind: Literal["file", "directory", "symlink", "other"]
    size: int | None
    # Created and modified files up to the hash limit (null: larger, or unreadable).
    sha256: str | msgspec.UnsetType | None = msgspec.UNSET


class FileChanges(Record):
    created: list[FileEntry]
    modified: list[FileEntry]
    deleted: list[FileEntry]
    roots: list[str] = []
    truncated: bool = False


# One process of the capture's family, as last sampled.
class FamilyMember(Record):
    pid: int
    ppid: int
    comm: str | None
    role: Literal["program", "sandbox"]
    first_seen_ms: int
    last_seen_ms: int
    zombie: bool
    in_session: bool


class ProcessFamily(Record):
    members: list[FamilyMember]
    program_process_count: int
    truncated: bool
    sampling: str
    outlived_leader: list[FamilyMember] = []
    # The lineage events of the owned leader (started, observed, exited, closed): the kernel's snapshots
    # (OwnedProcess.observe), which it hands out as JSON objects of its own shape, not this plugin's.
    lineage: list[JSONObject] = []


class Cleanup(Record):
    cleanup: Literal["complete", "incomplete"]
    resources: list[str]


# One event performed: when, and its delivery (a signal's as the kernel reported it).
class Interaction(Record):
    index: int
    action: str
    checkpoint: str | None
    at_ms: int
    signal: str | None = None
    delivered: bool
    reason: str | None = None
    scope: str | None = None
    pids: list[int] | None = None
    # The input's length in bytes (action "input").
    bytes: int | None = None


class ProcessCapture(Record):
    schema: Literal["rea.process_capture/1"]
    # The request as given (secret values never appear in it): the caller's JSON, which the input schema shapes.
    request: JSONObject
    isolation: Isolation
    lifecycle: Lifecycle
    output: dict[str, OutputStream]
    terminal: Terminal | None
    interactions: list[Interaction]
    events_not_run: int
    checkpoints: list[Checkpoint]
    filesystem: FileChanges
    process_family: ProcessFamily
    cleanup: Cleanup


# -- comparison ------------------------------------------------------------------------------------

Status = Literal["match", "truncated", "unknown", "mismatch"]


class StreamComparison(Record):
    status: Status
    reason: str | None = None
    left_bytes: int | None = None
    right_bytes: int | None = None
    # A unified diff of the normalized texts (at most MAX_DIFF_LINES lines).
    diff: list[str] | None = None
    diff_truncated: bool | None = None


class OutputComparison(Record):
    status: Status
    streams: dict[str, StreamComparison]


class ExitFacts(Record):
    end_reason: str
    observed: bool
    exit_code: int | None
    signal: str | None
    signal_inferred: str | None = None


class ExitComparison(Record):
    status: Status
    left: ExitFacts
    right: ExitFacts


class FileKey(Record):
    change: Literal["created", "modified", "deleted"]
    root: int
    path: str


class FileDifference(FileKey):
    # (kind, sha256) on each side.
    left: tuple[str, str | None]
    right: tuple[str, str | None]


class FilesComparison(Record):
    status: Status
    only_left: list[FileKey]
    only_right: list[FileKey]
    changed: list[FileDifference]


class FamilyShape(Record):
    # Program processes by name, with their counts.
    programs: dict[str, int]
    outlived_leader: int


class FamilyComparison(Record):
    status: Status
    left: FamilyShape
    right: FamilyShape


class Dimensions(Record):
    output: OutputComparison
    exit: ExitComparison
    files: FilesComparison
    process_family: FamilyComparison


class CaptureSide(Record):
    evidence_id: str
    executable: str | None
    end_reason: str
    isolation: str | None


class Pair(Record):
    left: int | str | None
    right: int | str | None


class Volatile(Record):
    elapsed_ms: Pair
    started_at: Pair


class NormalizationApplied(Record):
    pids: bool
    times: bool
    paths: bool
    # The caller's rules as given (pattern, replacement): JSON the input schema shapes.
    rules: list[JSONObject]


class ProcessComparison(Record):
    left: CaptureSide
    right: CaptureSide
    verdict: Literal["same", "different", "unknown"]
    dimensions: Dimensions
    # What differs between any two runs and is not compared.
    volatile: Volatile
    normalization: NormalizationApplied
