"""Engine-free helpers of the operations contract: pages, address parsing, selectors, search."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from rea.errors import ReaError, invalid_request, issue
from rea.search import matcher

T = TypeVar("T")

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


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


def unknown_procedure(value: Any) -> ReaError:
    return bad("procedure", f"no procedure named or starting at {value!r}")


def search(items: Sequence[T], text: Callable[[T], str], params: dict[str, Any]) -> list[T]:
    """The items whose text matches a ``search_*`` request (literal, or RE2: linear time, no budget needed)."""
    match = matcher(params)
    return [x for x in items if match(text(x))]
