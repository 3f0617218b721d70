"""Compare two process captures dimension by dimension, after normalising volatile values."""

from __future__ import annotations

import collections
import difflib
from collections.abc import Iterable
from re import Pattern
from typing import Literal

import msgspec
import re2

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import arg_bool
from rea.plugin import arg_objects
from rea.plugin import arg_str
from rea.plugin import compile_pattern
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.process.shapes import CaptureSide
from rea_plugins.process.shapes import Dimensions
from rea_plugins.process.shapes import ExitComparison
from rea_plugins.process.shapes import ExitFacts
from rea_plugins.process.shapes import FamilyComparison
from rea_plugins.process.shapes import FamilyShape
from rea_plugins.process.shapes import FileDifference
from rea_plugins.process.shapes import FileKey
from rea_plugins.process.shapes import FilesComparison
from rea_plugins.process.shapes import NormalizationApplied
from rea_plugins.process.shapes import OutputComparison
from rea_plugins.process.shapes import Pair
from rea_plugins.process.shapes import ProcessCapture
from rea_plugins.process.shapes import ProcessComparison
from rea_plugins.process.shapes import Status
from rea_plugins.process.shapes import StreamComparison
from rea_plugins.process.shapes import Volatile

MAX_DIFF_LINES = 200
Change = Literal["created", "modified", "deleted"]
_CHANGES: tuple[Change, ...] = ("created", "modified", "deleted")
_TIMES = (
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?",
    r"\b\d{2}:\d{2}:\d{2}(?:\.\d+)?\b",
)


def capture_of(ev: Evidence, side: str) -> ProcessCapture:
    """The capture an Evidence record holds (retained or imported: its JSON is decoded and checked here)."""
    result = ev.normalized_result
    if isinstance(result, ProcessCapture):
        return result
    if ev.operation != "capture_process_scenario" or not isinstance(result, dict) or "lifecycle" not in result:
        raise invalid_request(
            f"{side} must be capture_process_scenario Evidence (got {ev.operation})",
            [issue(side, "invalid_value", "expected Evidence produced by capture_process_scenario")],
        )
    try:
        return msgspec.convert(result, ProcessCapture)
    except msgspec.ValidationError as exc:
        raise ReaError(
            "invalid_request",
            "a capture lacks a field every capture has",
            details={"issues": [issue(side, "invalid_value", f"a malformed capture: {str(exc)[:200]}")]},
        ) from None


class Normalizer:
    """Replaces one capture's volatile values (its pids, times, paths) and the caller's patterns."""

    def __init__(self, capture: ProcessCapture, options: JSONObject) -> None:
        # ``options``: the call's normalization argument, as the input schema shapes it.
        self.steps: list[tuple[re2._Regexp | Pattern[str], str]] = []
        if arg_bool(options, "paths", True):
            paths = [(capture.lifecycle.private_directory, "<private>")]
            paths += [(root, f"<root{i}>") for i, root in enumerate(capture.filesystem.roots)]
            working_directory = capture.request.get("working_directory")
            if isinstance(working_directory, str):
                paths.append((working_directory, "<cwd>"))
            for path, token in sorted((p for p in paths if p[0]), key=lambda p: -len(p[0])):
                self.steps.append((re2.compile(re2.escape(path)), token))
        if arg_bool(options, "pids", True):
            family = capture.process_family
            pids = {m.pid for m in family.members}
            pids |= {pid for s in family.lineage if isinstance(pid := s.get("pid"), int)}
            for pid in sorted(pids, key=lambda p: -len(str(p))):
                self.steps.append((re2.compile(rf"\b{pid}\b"), "<pid>"))
        if arg_bool(options, "times", True):
            for pattern in _TIMES:
                self.steps.append((re2.compile(pattern), "<time>"))
        for index, rule in enumerate(arg_objects(options, "rules") or []):
            self.steps.append(
                (
                    compile_pattern(arg_str(rule, "pattern", ""), path=f"normalization/rules/{index}/pattern"),
                    arg_str(rule, "replacement", "<volatile>"),
                )
            )

    def __call__(self, text: str) -> str:
        for pattern, token in self.steps:
            text = pattern.sub(token.replace("\\", "\\\\"), text)
        return text


def _status(same: bool, unknown: bool = False) -> Status:
    if unknown:
        return "truncated"
    return "match" if same else "mismatch"


def _output(left: ProcessCapture, right: ProcessCapture, nl: Normalizer, nr: Normalizer) -> OutputComparison:
    streams = {}
    for name in sorted(set(left.output) | set(right.output)):
        a, b = left.output.get(name), right.output.get(name)
        if a is None or b is None:
            streams[name] = StreamComparison(status="unknown", reason=f"only one capture has {name}")
            continue
        ta, tb = nl(a.text), nr(b.text)
        truncated = a.truncated or b.truncated
        diff = None
        if ta != tb:
            diff = list(difflib.unified_diff(ta.splitlines(), tb.splitlines(), "left", "right", lineterm="", n=1))
        streams[name] = StreamComparison(
            status=_status(ta == tb, truncated and ta == tb),
            left_bytes=a.bytes,
            right_bytes=b.bytes,
            diff=None if diff is None else diff[:MAX_DIFF_LINES],
            diff_truncated=None if diff is None else len(diff) > MAX_DIFF_LINES,
        )
    return OutputComparison(status=_worst(s.status for s in streams.values()), streams=streams)


def _exit(left: ProcessCapture, right: ProcessCapture) -> ExitComparison:
    def facts(c: ProcessCapture) -> ExitFacts:
        life = c.lifecycle
        return ExitFacts(end_reason=life.end_reason, **msgspec.structs.asdict(life.exit))

    a, b = facts(left), facts(right)
    unknown = not a.observed or not b.observed
    return ExitComparison(status="unknown" if unknown and a != b else _status(a == b), left=a, right=b)


def _files(left: ProcessCapture, right: ProcessCapture, nl: Normalizer, nr: Normalizer) -> FilesComparison:
    def index(c: ProcessCapture, norm: Normalizer) -> dict[tuple[Change, int, str], tuple[str, str | None]]:
        out: dict[tuple[Change, int, str], tuple[str, str | None]] = {}
        for change in _CHANGES:
            for e in getattr(c.filesystem, change):
                out[(change, e.root, norm(e.path))] = (e.kind, e.sha256)
        return out

    a, b = index(left, nl), index(right, nr)

    only_left = [FileKey(change=k[0], root=k[1], path=k[2]) for k in sorted(set(a) - set(b))]
    only_right = [FileKey(change=k[0], root=k[1], path=k[2]) for k in sorted(set(b) - set(a))]
    changed = [
        FileDifference(change=k[0], root=k[1], path=k[2], left=a[k], right=b[k])
        for k in sorted(set(a) & set(b))
        if a[k] != b[k]
    ]
    truncated = left.filesystem.truncated or right.filesystem.truncated
    same = not (only_left or only_right or changed)
    return FilesComparison(
        status=_status(same, bool(truncated) and same), only_left=only_left, only_right=only_right, changed=changed
    )


def _family(left: ProcessCapture, right: ProcessCapture) -> FamilyComparison:
    def shape(c: ProcessCapture) -> FamilyShape:
        fam = c.process_family
        names = collections.Counter(m.comm or "?" for m in fam.members if m.role == "program")
        return FamilyShape(programs=dict(sorted(names.items())), outlived_leader=len(fam.outlived_leader))

    a, b = shape(left), shape(right)
    truncated = left.process_family.truncated or right.process_family.truncated
    return FamilyComparison(status=_status(a == b, bool(truncated) and a == b), left=a, right=b)


_RANK = {"match": 0, "truncated": 1, "unknown": 2, "mismatch": 3}


def _worst(statuses: Iterable[Status]) -> Status:
    found: list[Status] = list(statuses)
    return max(found, key=lambda s: _RANK[s]) if found else "match"


def compare(left: Evidence, right: Evidence, options: JSONObject) -> ProcessComparison:
    """``options``: the call's normalization argument (JSON the input schema shapes)."""
    a, b = capture_of(left, "left"), capture_of(right, "right")
    nl, nr = Normalizer(a, options), Normalizer(b, options)
    dims = Dimensions(
        output=_output(a, b, nl, nr), exit=_exit(a, b), files=_files(a, b, nl, nr), process_family=_family(a, b)
    )
    worst = _worst((dims.output.status, dims.exit.status, dims.files.status, dims.process_family.status))
    verdict: Literal["same", "different", "unknown"] = (
        "same" if worst == "match" else "different" if worst == "mismatch" else "unknown"
    )

    def side(ev: Evidence, c: ProcessCapture) -> CaptureSide:
        executable = c.request.get("executable")
        return CaptureSide(
            evidence_id=ev.evidence_id,
            executable=executable if isinstance(executable, str) else None,
            end_reason=c.lifecycle.end_reason,
            isolation=c.isolation.sandbox,
        )

    return ProcessComparison(
        left=side(left, a),
        right=side(right, b),
        verdict=verdict,
        dimensions=dims,
        volatile=Volatile(
            elapsed_ms=Pair(left=a.lifecycle.elapsed_ms, right=b.lifecycle.elapsed_ms),
            started_at=Pair(left=a.lifecycle.started_at, right=b.lifecycle.started_at),
        ),
        normalization=NormalizationApplied(
            pids=arg_bool(options, "pids", True),
            times=arg_bool(options, "times", True),
            paths=arg_bool(options, "paths", True),
            rules=arg_objects(options, "rules") or [],
        ),
    )
