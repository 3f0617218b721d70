"""Engine-free helpers of the operations contract: pages, address parsing, selectors, search."""

from __future__ import annotations

import os
import re
import select
import signal
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import msgspec

from rea.errors import ReaError, invalid_request, issue

T = TypeVar("T")

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
MAX_PATTERN_CHARS = 1000
# A regular expression may backtrack catastrophically; its matching runs in a forked child under this budget
# (the client passes its configured budget as ``regex_budget_ms``).
REGEX_BUDGET_MS = 5000


def bad(path: str, message: str, reason: str = "invalid_value") -> ReaError:
    return invalid_request(message, [issue(path, reason, message)])  # type: ignore[arg-type]


def int_param(params: dict[str, Any], name: str, default: int, lo: int, hi: int | None = None) -> int:
    value = params.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(name, f"{name} must be an integer", "invalid_type")
    if value < lo or (hi is not None and value > hi):
        bound = f"from {lo} to {hi}" if hi is not None else f"at least {lo}"
        raise bad(name, f"{name} must be {bound}", "out_of_range")
    return value


def page(key: str, items: Sequence[T], params: dict[str, Any],
         render: Callable[[T], dict[str, Any]]) -> dict[str, Any]:
    """One page of ``items`` (already in stable order), as the contract's page object."""
    offset = int_param(params, "offset", 0, 0)
    limit = int_param(params, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    window = items[offset:offset + limit]
    end = offset + len(window)
    return {key: [render(x) for x in window], "offset": offset, "limit": limit, "total": len(items),
            "next_offset": end if end < len(items) else None}


def parse_address(value: Any, path: str = "address") -> int:
    """``0x``-hex (or decimal) string, or a non-negative integer."""
    if isinstance(value, bool):
        raise bad(path, f"{path} must be an address such as 0x401000", "invalid_type")
    if isinstance(value, int):
        if value < 0:
            raise bad(path, f"{path} must not be negative", "out_of_range")
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        try:
            if re.fullmatch(r"0x[0-9a-f]{1,16}", text):
                return int(text, 16)
            if re.fullmatch(r"[0-9]{1,20}", text):
                return int(text, 10)
        except ValueError:
            pass
        raise bad(path, f"{path} {value!r} is not an address such as 0x401000", "invalid_format")
    raise bad(path, f"{path} must be an address string such as 0x401000", "invalid_type")


def looks_like_address(value: str) -> bool:
    return re.fullmatch(r"\s*0[xX][0-9a-fA-F]{1,16}\s*", value) is not None


def matcher(params: dict[str, Any]) -> Callable[[str], bool]:
    """The predicate of a ``search_*`` request (literal substring or regex, optionally case-blind)."""
    pattern = params.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise bad("pattern", "pattern must be a non-empty string", "missing_argument" if pattern is None
                  else "invalid_value")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise bad("pattern", f"pattern is longer than {MAX_PATTERN_CHARS} characters", "out_of_range")
    mode = params.get("mode", "literal") or "literal"
    if mode not in ("literal", "regex"):
        raise bad("mode", "mode must be 'literal' or 'regex'")
    case_sensitive = params.get("case_sensitive", False)
    if not isinstance(case_sensitive, bool):
        raise bad("case_sensitive", "case_sensitive must be a boolean", "invalid_type")
    if mode == "literal":
        if case_sensitive:
            return lambda s: pattern in s
        folded = pattern.casefold()
        return lambda s: folded in s.casefold()
    try:
        compiled = re.compile(pattern, 0 if case_sensitive else re.IGNORECASE)
    except re.error as exc:
        raise bad("pattern", f"pattern is not a valid regular expression: {exc}") from None
    return lambda s: compiled.search(s) is not None


def unknown_procedure(value: Any) -> ReaError:
    return bad("procedure", f"no procedure named or starting at {value!r}")


def search(items: Sequence[T], text: Callable[[T], str], params: dict[str, Any]) -> list[T]:
    """The items whose text matches a ``search_*`` request; regex matching is time-bounded."""
    match = matcher(params)
    if params.get("mode", "literal") != "regex" or not hasattr(os, "fork"):
        return [x for x in items if match(text(x))]
    budget = int_param(params, "regex_budget_ms", REGEX_BUDGET_MS, 1)
    return [items[i] for i in _bounded_matches([text(x) for x in items], match, budget)]


def _bounded_matches(texts: list[str], match: Callable[[str], bool], budget_ms: int) -> list[int]:
    """Indices of matching texts, computed in a forked child so a runaway pattern costs only the child."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: match, report, exit without running any parent cleanup
        code = 0
        try:
            os.close(rfd)
            data = msgspec.msgpack.encode([i for i, t in enumerate(texts) if match(t)])
            view = memoryview(data)
            while view:
                view = view[os.write(wfd, view):]
        except BaseException:
            code = 1
        os._exit(code)
    os.close(wfd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + budget_ms / 1000
    timed_out = False
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                os.kill(pid, signal.SIGKILL)
                break
            ready, _, _ = select.select([rfd], [], [], remaining)
            if ready:
                chunk = os.read(rfd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(rfd)
        _, status = os.waitpid(pid, 0)
    if timed_out:
        raise ReaError("provider_timeout", f"the regular expression did not finish within {budget_ms} ms",
                       remediation="Simplify the pattern (avoid nested quantifiers) or use mode 'literal'.",
                       details={"timeout_ms": budget_ms, "phase": "regex search", "reason": "regex_budget"})
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        raise ReaError("execution_failure", "the regular expression search failed",
                       details={"phase": "regex search", "reason": "matcher_failed"})
    indices: list[int] = msgspec.msgpack.decode(b"".join(chunks), type=list[int])
    return indices
