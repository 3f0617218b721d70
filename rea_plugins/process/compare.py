"""Compare two process captures dimension by dimension, after normalising volatile values."""

from __future__ import annotations

import collections
import difflib
from typing import Any, Literal

import msgspec
import re2

from rea.plugin import Evidence, ReaError, compile_pattern, invalid_request, issue
from rea_plugins.process.shapes import (
    CaptureSide,
    Dimensions,
    ExitComparison,
    ExitFacts,
    FamilyComparison,
    FamilyShape,
    FileDifference,
    FileKey,
    FilesComparison,
    NormalizationApplied,
    OutputComparison,
    Pair,
    ProcessComparison,
    Status,
    StreamComparison,
    Volatile,
)

MAX_DIFF_LINES = 200
Change = Literal["created", "modified", "deleted"]
_CHANGES: tuple[Change, ...] = ("created", "modified", "deleted")
_TIMES = (
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?",
    r"\b\d{2}:\d{2}:\d{2}(?:\.\d+)?\b",
)


def capture_of(ev: Evidence, side: str) -> dict[str, Any]:
    result = ev.normalized_result
    if ev.operation != "capture_process_scenario" or not isinstance(result, dict) or "lifecycle" not in result:
        raise invalid_request(
            f"{side} must be capture_process_scenario Evidence (got {ev.operation})",
            [issue(side, "invalid_value", "expected Evidence produced by capture_process_scenario")],
        )
    return result


class Normalizer:
    """Replaces one capture's volatile values (its pids, times, paths) and the caller's patterns."""

    def __init__(self, capture: dict[str, Any], options: dict[str, Any]) -> None:
        self.steps: list[tuple[Any, str]] = []
        request = capture.get("request", {})
        if options.get("paths", True):
            paths = [(capture.get("lifecycle", {}).get("private_directory"), "<private>")]
            paths += [(root, f"<root{i}>") for i, root in enumerate(capture.get("filesystem", {}).get("roots", []))]
            paths.append((request.get("working_directory"), "<cwd>"))
            for path, token in sorted((p for p in paths if p[0]), key=lambda p: -len(p[0])):
                self.steps.append((re2.compile(re2.escape(path)), token))
        if options.get("pids", True):
            family = capture.get("process_family", {})
            pids = {m["pid"] for m in family.get("members", [])}
            pids |= {s["pid"] for s in family.get("lineage", []) if isinstance(s.get("pid"), int)}
            for pid in sorted(pids, key=lambda p: -len(str(p))):
                self.steps.append((re2.compile(rf"\b{pid}\b"), "<pid>"))
        if options.get("times", True):
            for pattern in _TIMES:
                self.steps.append((re2.compile(pattern), "<time>"))
        for index, rule in enumerate(options.get("rules", [])):
            self.steps.append(
                (
                    compile_pattern(rule["pattern"], path=f"normalization/rules/{index}/pattern"),
                    rule.get("replacement", "<volatile>"),
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


def _output(left: dict[str, Any], right: dict[str, Any], nl: Normalizer, nr: Normalizer) -> OutputComparison:
    streams = {}
    for name in sorted(set(left.get("output", {})) | set(right.get("output", {}))):
        a, b = left["output"].get(name), right["output"].get(name)
        if a is None or b is None:
            streams[name] = StreamComparison(status="unknown", reason=f"only one capture has {name}")
            continue
        ta, tb = nl(a["text"]), nr(b["text"])
        truncated = a["truncated"] or b["truncated"]
        diff = None
        if ta != tb:
            diff = list(difflib.unified_diff(ta.splitlines(), tb.splitlines(), "left", "right", lineterm="", n=1))
        streams[name] = StreamComparison(
            status=_status(ta == tb, truncated and ta == tb),
            left_bytes=a["bytes"],
            right_bytes=b["bytes"],
            diff=None if diff is None else diff[:MAX_DIFF_LINES],
            diff_truncated=None if diff is None else len(diff) > MAX_DIFF_LINES,
        )
    return OutputComparison(status=_worst(s.status for s in streams.values()), streams=streams)


def _exit(left: dict[str, Any], right: dict[str, Any]) -> ExitComparison:
    def facts(c: dict[str, Any]) -> ExitFacts:
        life = c["lifecycle"]
        return msgspec.convert({"end_reason": life["end_reason"], **life["exit"]}, ExitFacts)

    a, b = facts(left), facts(right)
    unknown = not a.observed or not b.observed
    return ExitComparison(status="unknown" if unknown and a != b else _status(a == b), left=a, right=b)


def _files(left: dict[str, Any], right: dict[str, Any], nl: Normalizer, nr: Normalizer) -> FilesComparison:
    def index(c: dict[str, Any], norm: Normalizer) -> dict[tuple[Change, int, str], tuple[str, str | None]]:
        out = {}
        for change in _CHANGES:
            for e in c.get("filesystem", {}).get(change, []):
                out[(change, e["root"], norm(e["path"]))] = (e["kind"], e.get("sha256"))
        return out

    a, b = index(left, nl), index(right, nr)

    only_left = [FileKey(change=k[0], root=k[1], path=k[2]) for k in sorted(set(a) - set(b))]
    only_right = [FileKey(change=k[0], root=k[1], path=k[2]) for k in sorted(set(b) - set(a))]
    changed = [
        FileDifference(change=k[0], root=k[1], path=k[2], left=a[k], right=b[k])
        for k in sorted(set(a) & set(b))
        if a[k] != b[k]
    ]
    truncated = left.get("filesystem", {}).get("truncated") or right.get("filesystem", {}).get("truncated")
    same = not (only_left or only_right or changed)
    return FilesComparison(
        status=_status(same, bool(truncated) and same), only_left=only_left, only_right=only_right, changed=changed
    )


def _family(left: dict[str, Any], right: dict[str, Any]) -> FamilyComparison:
    def shape(c: dict[str, Any]) -> FamilyShape:
        fam = c.get("process_family", {})
        names = collections.Counter(m.get("comm") or "?" for m in fam.get("members", []) if m.get("role") == "program")
        return FamilyShape(programs=dict(sorted(names.items())), outlived_leader=len(fam.get("outlived_leader", [])))

    a, b = shape(left), shape(right)
    truncated = left.get("process_family", {}).get("truncated") or right.get("process_family", {}).get("truncated")
    return FamilyComparison(status=_status(a == b, bool(truncated) and a == b), left=a, right=b)


_RANK = {"match": 0, "truncated": 1, "unknown": 2, "mismatch": 3}


def _worst(statuses: Any) -> Status:
    found: list[Status] = list(statuses)
    return max(found, key=lambda s: _RANK[s]) if found else "match"


def compare(left: Evidence, right: Evidence, options: dict[str, Any]) -> ProcessComparison:
    a, b = capture_of(left, "left"), capture_of(right, "right")
    nl, nr = Normalizer(a, options), Normalizer(b, options)
    try:
        dims = Dimensions(
            output=_output(a, b, nl, nr), exit=_exit(a, b), files=_files(a, b, nl, nr), process_family=_family(a, b)
        )
    except (KeyError, msgspec.ValidationError) as exc:
        raise ReaError(
            "invalid_request",
            "a capture lacks a field every capture has",
            details={"issues": [issue("left", "invalid_value", _missing(exc))]},
        ) from None
    worst = _worst((dims.output.status, dims.exit.status, dims.files.status, dims.process_family.status))
    verdict: Literal["same", "different", "unknown"] = (
        "same" if worst == "match" else "different" if worst == "mismatch" else "unknown"
    )

    def side(ev: Evidence, c: dict[str, Any]) -> CaptureSide:
        return CaptureSide(
            evidence_id=ev.evidence_id,
            executable=c.get("request", {}).get("executable"),
            end_reason=c["lifecycle"]["end_reason"],
            isolation=c.get("isolation", {}).get("sandbox"),
        )

    def pair(field: str) -> Pair:
        return Pair(left=a["lifecycle"].get(field), right=b["lifecycle"].get(field))

    return ProcessComparison(
        left=side(left, a),
        right=side(right, b),
        verdict=verdict,
        dimensions=dims,
        volatile=Volatile(elapsed_ms=pair("elapsed_ms"), started_at=pair("started_at")),
        normalization=NormalizationApplied(
            pids=options.get("pids", True),
            times=options.get("times", True),
            paths=options.get("paths", True),
            rules=options.get("rules", []),
        ),
    )


def _missing(exc: Exception) -> str:
    return f"missing {exc.args[0]!r}" if isinstance(exc, KeyError) else f"a malformed lifecycle: {str(exc)[:200]}"
