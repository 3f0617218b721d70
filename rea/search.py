"""Text search for every provider and tool family: a literal substring, or an RE2 regular expression.

RE2 never backtracks, so any accepted pattern runs in time linear in the text: no fork, no deadline and
no shape heuristics. Constructs RE2 cannot express (backreferences, lookaround) are ``invalid_request``
on ``pattern`` naming the construct.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

from rea.errors import ReaError
from rea.errors import invalid_request
from rea.errors import issue

MAX_PATTERN_CHARS = 1000
# RE2's compiled-program memory; a pattern that needs more is refused, not slowed down.
MAX_PROGRAM_BYTES = 32 << 20
MODES = ("literal", "regex")

_BACKREFERENCE = re.compile(r"invalid escape sequence: \\[1-9]")
_UNSUPPORTED = (
    ("invalid escape sequence: \\k", "a named backreference (\\k<name>)"),
    ("invalid perl operator: (?=", "a lookahead (?=...)"),
    ("invalid perl operator: (?!", "a negative lookahead (?!...)"),
    ("invalid perl operator: (?<=", "a lookbehind (?<=...)"),
    ("invalid perl operator: (?<!", "a negative lookbehind (?<!...)"),
    ("invalid perl operator: (?>", "an atomic group (?>...)"),
    ("bad repetition operator: *+", "a possessive quantifier"),
    ("bad repetition operator: ++", "a possessive quantifier"),
)


def _bad(path: str, message: str, reason: str = "invalid_value") -> ReaError:
    return invalid_request(message, [issue(path, reason, message)])  # type: ignore[arg-type]


def compile_regex(pattern: str, case_sensitive: bool, path: str = "pattern") -> Callable[[str], bool]:
    """An RE2 search predicate; ``invalid_request`` on ``path`` for what RE2 cannot or will not run."""
    search = compile_pattern(pattern, case_sensitive, path).search
    return lambda s: search(s) is not None


def compile_pattern(pattern: str, case_sensitive: bool = True, path: str = "pattern") -> Any:
    """A compiled RE2 pattern (``search``, ``sub``, ...); ``invalid_request`` on ``path`` when RE2 refuses it."""
    import re2

    options = re2.Options()
    options.case_sensitive = case_sensitive
    options.log_errors = False
    options.max_mem = MAX_PROGRAM_BYTES
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as exc:
        text = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        if _BACKREFERENCE.search(text):
            raise _bad(
                path,
                f"{path} uses a backreference (\\1 ... \\9), which RE2 (linear-time matching) does "
                "not support; rewrite it without one, or use mode 'literal'",
            ) from None
        for needle, construct in _UNSUPPORTED:
            if needle in text:
                raise _bad(
                    path,
                    f"{path} uses {construct}, which RE2 (linear-time matching) does not support; "
                    "rewrite it without that construct, or use mode 'literal'",
                ) from None
        if "pattern too large" in text:
            raise _bad(
                path, f"{path} compiles to more than {MAX_PROGRAM_BYTES >> 20} MiB; simplify it", "out_of_range"
            ) from None
        raise _bad(path, f"{path} is not a valid RE2 regular expression: {text}", "invalid_format") from None
    return compiled


def matcher(params: Mapping[str, object]) -> Callable[[str], bool]:
    """The predicate of a search request: ``pattern``, ``mode`` (literal|regex), ``case_sensitive``."""
    pattern = params.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise _bad(
            "pattern", "pattern must be a non-empty string", "missing_argument" if pattern is None else "invalid_value"
        )
    if len(pattern) > MAX_PATTERN_CHARS:
        raise _bad("pattern", f"pattern is longer than {MAX_PATTERN_CHARS} characters", "out_of_range")
    mode = params.get("mode", "literal") or "literal"
    if mode not in MODES:
        raise _bad("mode", "mode must be 'literal' or 'regex'")
    case_sensitive = params.get("case_sensitive", False)
    if not isinstance(case_sensitive, bool):
        raise _bad("case_sensitive", "case_sensitive must be a boolean", "invalid_type")
    if mode == "regex":
        return compile_regex(pattern, case_sensitive)
    if case_sensitive:
        return lambda s: pattern in s
    folded = pattern.casefold()
    return lambda s: folded in s.casefold()
