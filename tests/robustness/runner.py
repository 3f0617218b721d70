"""Run the whole corpus through one ``rea serve`` and collect what the robustness tests assert on.

Every call has a deadline; every answer is checked for the canonical error shape, for Python exception
names in what a person reads (message, remediation, limitations and recorded reasons), for files outside
extraction output directories (the server's TMPDIR, HOME and working directory are private and watched),
and for processes the server left behind.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import time
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea.cache_key import KEY_FILE
from rea.errors import CODES
from rea.errors import ReaError
from rea.process import procfs
from rea.session import Session
from rea.testing import call_tool
from tests.robustness.corpus import Case
from tests.robustness.hostile import ISSUE24
from tests.robustness.server import Reply
from tests.robustness.server import Server
from tests.robustness.server import alive
from tests.robustness.server import environ_value
from tests.robustness.server import proc_children
from tests.robustness.server import status_kib

# A Python exception's name, or the text Python's own exceptions carry (which reads as one to a user).
EXCEPTION_NAME = re.compile(
    r"\b[A-Z][A-Za-z]*(?:Error|Exception|Warning)\b|Traceback|\[Errno \d+\]"
    r"|\b(?:BadZipFile|LargeZipFile|StopIteration|KeyboardInterrupt|SystemExit)\b"
    r"|codec can't (?:de|en)code|object has no attribute|is not subscriptable"
    r"|index out of range|unsupported operand type|positional arguments? but"
    r"|object is not (?:callable|iterable)|invalid literal for int\(\)|\bNoneType\b"
)
CALL_DEADLINE_S = 90
# The native provider's parse worker and its two decompile workers are the only processes these calls may own.
MAX_CHILDREN = 3
ERROR_KEYS = {"code", "category", "message", "retryable", "remediation", "details"}
BINARY_EXTRA = (
    ("list_procedures", {"limit": 20}),
    ("list_strings", {"limit": 20}),
    ("list_segments", {}),
    ("inspect_binary_layout", {}),
    ("inspect_native_load_image", {}),
    ("list_names", {"limit": 20}),
)
EXTRACT_ARGS = ("integrity_policy", "max_entries", "max_total_bytes", "max_compression_ratio")


@dataclass
class Finding:
    case: str
    description: str
    tool: str
    detail: str

    def __str__(self) -> str:
        return f"{self.case} [{self.description}] {self.tool}: {self.detail}"


@dataclass
class Run:
    """Everything observed; ``findings`` maps a check to its violations."""

    cases: Counter[str] = field(default_factory=Counter)
    calls: int = 0
    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)  # (corpus kind, "ok" or error code)
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    seconds: float = 0.0
    peak_rss_kib: int = 0
    worker_peak_kib: int = 0
    restarts: int = 0
    slowest: tuple[float, str] = (0.0, "")
    seconds_by_tool: Counter[str] = field(default_factory=Counter)  # where the run's time goes
    calls_by_tool: Counter[str] = field(default_factory=Counter)
    # Issue 24's bomb cases: outcomes ("ok" or error code; "hang"/"crash") and their slowest call.
    issue24: Counter[str] = field(default_factory=Counter)
    issue24_slowest: float = 0.0

    def add(self, check: str, finding: Finding) -> None:
        self.findings.setdefault(check, []).append(finding)

    def of(self, check: str) -> list[Finding]:
        return self.findings.get(check, [])


def untyped(payload: Any) -> str | None:
    """Why ``payload`` is not the canonical ``{"error": ...}`` with a code from the closed set, or None."""
    if not isinstance(payload, dict) or set(payload) != {"error"} or not isinstance(payload["error"], dict):
        return f"not a canonical error document: {str(payload)[:200]}"
    err = payload["error"]
    if set(err) != ERROR_KEYS:
        return f"error keys {sorted(err)}"
    if err["code"] not in CODES:
        return f"unknown code {err['code']!r}"
    if (err["category"], err["retryable"]) != CODES[err["code"]]:
        return f"{err['code']} with category {err['category']!r}, retryable {err['retryable']!r}"
    if not isinstance(err["message"], str) or not err["message"]:
        return "empty message"
    if not isinstance(err["remediation"], dict) or not isinstance(err["remediation"].get("action"), str):
        return "remediation without an action"
    if not isinstance(err["details"], dict):
        return "details is not an object"
    return None


def readable_texts(reply: Reply) -> list[str]:
    """What a person reads in a reply: message and remediation, limitations, recorded reasons."""
    out: list[str] = []
    payload = reply.payload
    if reply.status == "error":
        err = payload.get("error", {}) if isinstance(payload, dict) else {}
        out += [str(err.get("message", "")), str((err.get("remediation") or {}).get("action", ""))]
        inner = (err.get("details") or {}).get("execution_failure")
        if isinstance(inner, dict):
            out.append(str(inner.get("message", "")))
        return out
    if isinstance(payload, dict):
        out += [str(x) for x in payload.get("limitations", [])]
        result = payload.get("normalized_result")
        if isinstance(result, dict):
            out += [str(x) for x in result.get("partial_reasons", [])]
            for entry in result.get("entries", []) if isinstance(result.get("entries"), list) else []:
                if isinstance(entry, dict):
                    out.append(str(entry.get("unavailable_reason") or ""))
                    nested = entry.get("nested_archive")
                    if isinstance(nested, dict):
                        out.append(str(nested.get("error") or ""))
    return [t for t in out if t]


def judge(reply: Reply, label: str, problems: list[str]) -> str | None:
    """One hostile call's reply: a hang or a crash fails the test; an RPC error, an untyped error or exception text a
    person would read is a problem named by ``label``. The outcome: ``ok`` or the error's code (None for an RPC
    error)."""
    if reply.status in ("hang", "crash"):
        pytest.fail(f"{label}: {reply.status}", pytrace=False)
    if reply.status == "rpc_error":
        problems.append(f"{label}: {str(reply.payload)[:200]}")
        return None
    outcome = "ok"
    if reply.status == "error":
        why = untyped(reply.payload)
        if why:
            problems.append(f"{label}: {why}")
        outcome = reply.payload["error"]["code"]
    for text in readable_texts(reply):
        if EXCEPTION_NAME.search(text):
            problems.append(f"{label}: exception text in {text[:200]!r}")
    return outcome


def answer_or_refusal(
    session: Session, tool: str, args: dict[str, Any], codes: Collection[str], parser_words: Collection[str]
) -> dict[str, Any] | None:
    """An in-process call's result, or None after a refusal with one of ``codes`` whose message names none of the
    parser's internals (``parser_words``)."""
    try:
        out = call_tool(session, tool, args)
    except ReaError as exc:
        assert exc.code in codes, (tool, exc.code, exc.message)
        assert not any(word in exc.message for word in parser_words), exc.message
        return None
    assert out.evidence is not None
    return dict(msgspec.to_builtins(out.evidence.normalized_result))


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` (links not followed): (mode, size)."""
    out: dict[str, tuple[int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            out[os.path.relpath(full, root)] = (st.st_mode, st.st_size if stat.S_ISREG(st.st_mode) else 0)
    return out


class Runner:
    """Drives the cases; restarts the server only after a crash or a hang (each one a finding)."""

    def __init__(self, work: Path, corpus_root: Path) -> None:
        self.tmp, self.home, self.cwd = work / "tmp", work / "home", work / "cwd"
        self.cache = work / "analysis-cache"  # the one place rea keeps analyses across sessions, by design
        for d in (self.tmp, self.home, self.cwd, self.cache):
            d.mkdir()
        self.stderr = work / "server.stderr"
        self.corpus_root = corpus_root
        self.run = Run()
        self.seen: dict[int, str] = {}
        self.server = self._start()
        self._last_inspect: dict[str, Any] | None = None

    def _start(self) -> Server:
        return Server(self.tmp, self.home, self.cwd, self.cache, self.stderr)

    # -- one call ------------------------------------------------------------------------------

    def call(self, case: Case, tool: str, args: dict[str, Any]) -> Reply:
        reply = self.server.call(tool, args, CALL_DEADLINE_S)
        self.run.calls += 1
        self.run.seconds_by_tool[tool] += reply.seconds
        self.run.calls_by_tool[tool] += 1
        if reply.seconds > self.run.slowest[0]:
            self.run.slowest = (reply.seconds, f"{case.id} {tool}")
        where = Finding(case.id, case.description, tool, "")
        if ISSUE24 in case.description:
            self.run.issue24_slowest = max(self.run.issue24_slowest, reply.seconds)
            code = (
                reply.payload.get("error", {}).get("code")
                if reply.status == "error" and isinstance(reply.payload, dict)
                else None
            )
            self.run.issue24[code or reply.status] += 1
        if reply.status in ("hang", "crash"):
            self.run.add(
                reply.status,
                Finding(where.case, where.description, tool, f"after {reply.seconds:.1f} s (exit {reply.payload})"),
            )
            self._restart(reply.status)
            return reply
        if reply.status == "rpc_error":
            self.run.add("untyped", Finding(where.case, where.description, tool, f"JSON-RPC error {reply.payload}"))
            return reply
        if reply.status == "error":
            why = untyped(reply.payload)
            if why is not None:
                self.run.add("untyped", Finding(where.case, where.description, tool, why))
                self.run.outcomes[(case.kind, "untyped")] += 1
            else:
                self.run.outcomes[(case.kind, reply.payload["error"]["code"])] += 1
        else:
            self.run.outcomes[(case.kind, "ok")] += 1
        for text in readable_texts(reply):
            if EXCEPTION_NAME.search(text):
                check = "exception_name_native" if case.kind == "binary" else "exception_name_artifacts"
                self.run.add(check, Finding(where.case, where.description, tool, text[:300]))
        return reply

    def _restart(self, why: str) -> None:
        self.run.peak_rss_kib = max(self.run.peak_rss_kib, self.server.peak_rss_kib())
        self._note_children()
        self.server.kill()
        self.server.close(5)
        self.run.restarts += 1
        self.server = self._start()

    # -- cases ---------------------------------------------------------------------------------

    def binary(self, case: Case, index: int) -> None:
        opened = self.call(case, "open_binary", {"path": case.path, "provider_id": "native"})
        if opened.status != "ok":
            return
        overview = self.call(case, "binary_overview", {})
        if overview.status in ("hang", "crash"):
            return
        tool, args = BINARY_EXTRA[index % len(BINARY_EXTRA)]
        if self.call(case, tool, args).status in ("hang", "crash"):
            return
        entry = overview.payload["normalized_result"].get("entry") if overview.status == "ok" else None
        if index % 2 == 0 and isinstance(entry, str):  # code at the (possibly mutated) entry point
            self.call(case, "procedure_assembly", {"procedure": entry, "max_instructions": 64})
        if index % 16 == 4 and isinstance(entry, str):  # the decompiler over a mutated image, a few per base binary
            self.call(case, "procedure_pseudo_code", {"procedure": entry})
        if index % 16 == 8 and isinstance(entry, str):  # the emulator from the (possibly mutated) entry, bounded
            self.call(case, "emulate_procedure", {"procedure": entry, "max_instructions": 20000, "timeout_ms": 500})
        if index % 100 == 99:
            self.call(case, "close_binary", {})

    def archive(self, case: Case, index: int) -> None:
        folder = Path(case.path).parent
        before = tree(folder)
        inspected = self.call(case, "inspect_artifact", {"path": case.path, **case.args})
        extract_args = {k: v for k, v in case.args.items() if k in EXTRACT_ARGS}
        self._extract(case, {"path": case.path, **extract_args})
        if inspected.status == "ok":
            entries = [
                e["path"]
                for e in inspected.payload["normalized_result"]["entries"]
                if e["kind"] == "file" and "!/" not in e["path"]
            ]
            if index % 4 == 0 and entries:  # a selection, hostile names included
                self._extract(case, {"path": case.path, "paths": entries[:3], **extract_args})
            if index % 5 == 0 and self._last_inspect is not None:
                self.call(
                    case,
                    "compare_artifacts",
                    {
                        "left": self._last_inspect,
                        "right": {"kind": "retained-evidence", "evidence_id": inspected.payload["evidence_id"]},
                    },
                )
            self._last_inspect = {"kind": "retained-evidence", "evidence_id": inspected.payload["evidence_id"]}
        if tree(folder) != before:
            self.run.add("outside", Finding(case.id, case.description, "-", "the archive's folder changed"))

    def _extract(self, case: Case, args: dict[str, Any]) -> None:
        reply = self.call(case, "extract_artifact", args)
        if reply.status != "ok":
            return
        result = reply.payload["normalized_result"]
        out = Path(result["output_directory"])
        problem = None
        if out.parent != self.tmp or not out.name.startswith("rea-extract-"):
            problem = f"output directory {out} is not a fresh directory of the server's TMPDIR"
        else:
            found = tree(out)
            files = {p for p, (mode, _) in found.items() if not stat.S_ISDIR(mode)}
            odd = [p for p, (mode, _) in found.items() if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode))]
            # A contradicted file (record-and-continue) lies in quarantine, where its row says, not at its path.
            listed = {f.get("quarantined_to") or f["path"] for f in result["files"]}
            if odd:
                problem = f"non-regular files written: {odd[:5]}"
            elif len(files) != result["file_count"]:
                problem = f"{len(files)} files written, {result['file_count']} reported"
            elif result.get("listing", {}).get("status", "complete") == "complete" and files != listed:
                problem = f"written files differ from the listing: {sorted(files ^ listed)[:5]}"
        if problem:
            self.run.add("outside", Finding(case.id, case.description, "extract_artifact", problem))
        shutil.rmtree(out, ignore_errors=True)

    # -- observations after each case ---------------------------------------------------------

    def _note_children(self) -> tuple[dict[int, str], dict[int, str]]:
        """The server's children, and all its descendants two levels down (remembered for the end)."""
        table = procfs.scan()  # one scan per case: /proc is read once, not once per child
        direct = self.server.children(table)
        children = dict(direct)
        for pid in direct:
            children.update(proc_children(pid, table))
        self.seen.update(children)
        for pid in children:
            self.run.worker_peak_kib = max(self.run.worker_peak_kib, status_kib(pid, "VmHWM"))
        return direct, children

    def after(self, case: Case) -> None:
        direct, children = self._note_children()
        if len(direct) > MAX_CHILDREN:
            self.run.add(
                "processes",
                Finding(case.id, case.description, "-", f"{len(direct)} live children of the server: {sorted(direct)}"),
            )
        # An owned process's private directory (its TMPDIR is "<private>/tmp") lives as long as it does.
        private = {os.path.dirname(t) for t in (environ_value(pid, "TMPDIR") for pid in children) if t}
        for name in os.listdir(self.tmp):
            # The ledger's spill directory holds refused oversized results until the session closes.
            if str(self.tmp / name) not in private and not name.startswith("rea-ledger-"):
                self.run.add("outside", Finding(case.id, case.description, "-", f"left in TMPDIR: {name}"))
                shutil.rmtree(self.tmp / name, ignore_errors=True)

    def finish(self) -> None:
        """Close the session and check that the server left nothing: files, directories, processes."""
        self.run.peak_rss_kib = max(self.run.peak_rss_kib, self.server.peak_rss_kib())
        self._note_children()
        code = self.server.close()
        if code != 0:
            self.run.add("crash", Finding("(session end)", "", "-", f"rea serve exited with {code}"))
        deadline = time.monotonic() + 10
        while any(alive(pid, start) for pid, start in self.seen.items()) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid, start in self.seen.items():
            if alive(pid, start):
                self.run.add("processes", Finding("(session end)", "", "-", f"pid {pid} outlived rea serve"))
        for where in (self.tmp, self.home, self.cwd):
            left = sorted(tree(where))
            if left:
                self.run.add("outside", Finding("(session end)", "", "-", f"left in {where.name}: {left[:10]}"))
        strays = sorted(
            p for p in tree(self.cache) if not p.startswith(("entries", ".usage", ".lock")) and p != KEY_FILE
        )
        if strays:
            self.run.add("outside", Finding("(session end)", "", "-", f"not cache entries in the cache: {strays[:10]}"))


def run_all(cases: list[Case], work: Path, corpus_root: Path) -> Run:
    start = time.monotonic()
    before = tree(corpus_root)
    runner = Runner(work, corpus_root)
    for index, case in enumerate(cases):
        runner.run.cases[case.kind] += 1
        if "FIFO" in case.description:
            runner.run.cases["fifo"] += 1
        if ISSUE24 in case.description:
            runner.run.cases["issue24"] += 1
        if case.kind == "binary":
            runner.binary(case, index)
        else:
            runner.archive(case, index)
        runner.after(case)
    runner.finish()
    if tree(corpus_root) != before:
        runner.run.add("outside", Finding("(session end)", "", "-", "the corpus directory changed"))
    runner.run.seconds = time.monotonic() - start
    return runner.run


# Lines the terminal summary prints (tests/robustness/conftest.py), filled by the suite's fixture.
REPORT: list[str] = []
CHECKS = ("crash", "hang", "untyped", "exception_name_artifacts", "exception_name_native", "outside", "processes")


def figures(run: Run) -> list[str]:
    """The suite's figures, one line each, for pasting."""
    lines = [
        f"cases: {run.cases['binary']} mutated binaries, {run.cases['archive']} hostile archives "
        f"({run.cases['fifo']} with FIFOs where files are expected); "
        f"{run.calls} tool calls in {run.seconds:.1f} s ({run.calls / max(run.seconds, 1e-9):.0f} calls/s) "
        f"through one rea serve (restarts: {run.restarts})"
    ]
    for kind in ("binary", "archive"):
        codes = sorted(((code, n) for (k, code), n in run.outcomes.items() if k == kind), key=lambda x: -x[1])
        lines.append(f"{kind} calls by outcome: " + ", ".join(f"{code} {n}" for code, n in codes))
    lines.append(
        f"issue 24 bomb archives: {run.cases['issue24']} cases, calls by outcome: "
        + ", ".join(f"{code} {n}" for code, n in run.issue24.most_common())
        + f"; slowest {run.issue24_slowest:.1f} s"
    )
    lines.append(
        f"peak RSS (VmHWM): rea serve {run.peak_rss_kib / 1024:.0f} MiB, "
        f"native worker {run.worker_peak_kib / 1024:.0f} MiB; slowest call {run.slowest[0]:.1f} s "
        f"({run.slowest[1]})"
    )
    lines.append(
        "seconds by tool: "
        + ", ".join(
            f"{tool} {seconds:.1f} ({run.calls_by_tool[tool]} calls)"
            for tool, seconds in run.seconds_by_tool.most_common(6)
        )
    )
    lines.append("findings: " + ", ".join(f"{c} {len(run.of(c))}" for c in CHECKS))
    return lines
