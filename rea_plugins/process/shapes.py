"""The normalized results of the process tools: a capture and a comparison of two captures."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from rea.plugin import Isolation


class _S(msgspec.Struct, kw_only=True, omit_defaults=True):
    pass


class OutputStream(_S):
    """One output stream: its first bytes as text, its whole size and digest."""

    text: str
    bytes: int
    truncated: bool
    sha256: str


class ExitRecord(_S):
    observed: bool
    exit_code: int | None
    signal: str | None
    # bubblewrap reports a program killed by signal N as exit status 128 + N: the signal that implies.
    signal_inferred: str | None = None


class Lifecycle(_S):
    started_at: str
    end_reason: str
    elapsed_ms: int | None
    executable: str
    private_directory: str
    pid: int
    exit: ExitRecord
    # Each signal sent: at_ms, reason, signal, delivered and the pids it went to.
    signals: list[dict[str, Any]]
    phase_reached: str


class Terminal(_S):
    rows: int
    columns: int


class Checkpoint(_S):
    id: str
    reached: bool
    at_ms: int | None


class FileEntry(_S):
    root: int
    path: str
    kind: Literal["file", "directory", "symlink", "other"]
    size: int | None
    # Created and modified files up to the hash limit (null: larger, or unreadable).
    sha256: str | msgspec.UnsetType | None = msgspec.UNSET


class FileChanges(_S):
    created: list[FileEntry]
    modified: list[FileEntry]
    deleted: list[FileEntry]
    roots: list[str] = []
    truncated: bool = False


class ProcessFamily(_S):
    # pid, ppid, comm, role (program or sandbox), first/last seen, zombie, in_session.
    members: list[dict[str, Any]]
    program_process_count: int
    truncated: bool
    sampling: str
    outlived_leader: list[dict[str, Any]] = []
    # The lineage events of the owned leader (started, observed, exited, closed).
    lineage: list[dict[str, Any]] = []


class Cleanup(_S):
    cleanup: Literal["complete", "incomplete"]
    resources: list[str]


class ProcessCapture(_S):
    schema: Literal["rea.process_capture/1"]
    # The request as given (secret values never appear in it).
    request: dict[str, Any]
    isolation: Isolation
    lifecycle: Lifecycle
    output: dict[str, OutputStream]
    terminal: Terminal | None
    # Each event performed: index, action, checkpoint, at_ms and its delivery.
    interactions: list[dict[str, Any]]
    events_not_run: int
    checkpoints: list[Checkpoint]
    filesystem: FileChanges
    process_family: ProcessFamily
    cleanup: Cleanup


# -- comparison ------------------------------------------------------------------------------------

Status = Literal["match", "truncated", "unknown", "mismatch"]


class StreamComparison(_S):
    status: Status
    reason: str | None = None
    left_bytes: int | None = None
    right_bytes: int | None = None
    # A unified diff of the normalized texts (at most MAX_DIFF_LINES lines).
    diff: list[str] | None = None
    diff_truncated: bool | None = None


class OutputComparison(_S):
    status: Status
    streams: dict[str, StreamComparison]


class ExitFacts(_S):
    end_reason: str
    observed: bool
    exit_code: int | None
    signal: str | None
    signal_inferred: str | None = None


class ExitComparison(_S):
    status: Status
    left: ExitFacts
    right: ExitFacts


class FileKey(_S):
    change: Literal["created", "modified", "deleted"]
    root: int
    path: str


class FileDifference(FileKey):
    # (kind, sha256) on each side.
    left: tuple[str, str | None]
    right: tuple[str, str | None]


class FilesComparison(_S):
    status: Status
    only_left: list[FileKey]
    only_right: list[FileKey]
    changed: list[FileDifference]


class FamilyShape(_S):
    # Program processes by name, with their counts.
    programs: dict[str, int]
    outlived_leader: int


class FamilyComparison(_S):
    status: Status
    left: FamilyShape
    right: FamilyShape


class Dimensions(_S):
    output: OutputComparison
    exit: ExitComparison
    files: FilesComparison
    process_family: FamilyComparison


class CaptureSide(_S):
    evidence_id: str
    executable: str | None
    end_reason: str
    isolation: str | None


class Pair(_S):
    left: int | str | None
    right: int | str | None


class Volatile(_S):
    elapsed_ms: Pair
    started_at: Pair


class NormalizationApplied(_S):
    pids: bool
    times: bool
    paths: bool
    rules: list[dict[str, Any]]


class ProcessComparison(_S):
    left: CaptureSide
    right: CaptureSide
    verdict: Literal["same", "different", "unknown"]
    dimensions: Dimensions
    # What differs between any two runs and is not compared.
    volatile: Volatile
    normalization: NormalizationApplied
