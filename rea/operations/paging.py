"""Paging and argument checks every answer shares: offsets, limits, integers and the contract's page fields."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import TypeVar

from rea.errors import ReaError
from rea.errors import invalid_request
from rea.errors import issue
from rea.records import next_offset

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
WHOLE_PROGRAM_LIMIT = 500
WHOLE_PROGRAM_MAX_LIMIT = 5000


def bad(path: str, message: str, reason: str = "invalid_value") -> ReaError:
    return invalid_request(message, [issue(path, reason, message)])  # type: ignore[arg-type]


def hexa(value: int | None) -> str | None:
    return None if value is None else hex(value)


def int_param(params: Mapping[str, object], name: str, default: int, lo: int, hi: int | None = None) -> int:
    value = params.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(name, f"{name} must be an integer", "invalid_type")
    if value < lo or (hi is not None and value > hi):
        bound = f"from {lo} to {hi}" if hi is not None else f"at least {lo}"
        raise bad(name, f"{name} must be {bound}", "out_of_range")
    return value


def paging(params: Mapping[str, object], default: int = DEFAULT_LIMIT, maximum: int = MAX_LIMIT) -> tuple[int, int]:
    """A request's ``offset`` and ``limit``, checked (validate before costly work, then page with ``page``)."""
    return int_param(params, "offset", 0, 0), int_param(params, "limit", default, 1, maximum)


def whole_program_paging(params: Mapping[str, object]) -> tuple[int, int]:
    """``paging`` for the whole-program answers (every call edge, every procedure's fingerprint): larger pages."""
    return paging(params, WHOLE_PROGRAM_LIMIT, WHOLE_PROGRAM_MAX_LIMIT)


def page_fields(offset: int, limit: int, shown: int, total: int) -> dict[str, int | None]:
    """The paging fields of a page of ``shown`` items from ``offset``, of ``total``."""
    return {"offset": offset, "limit": limit, "total": total, "next_offset": next_offset(offset, shown, total)}


def page(
    key: str, items: Sequence[T], params: Mapping[str, object], render: Callable[[T], R]
) -> dict[str, list[R] | int | None]:
    """One page of ``items`` (already in stable order) as the contract's page object; ``render`` gives a row
    (a dict or a Struct, encoded as it is)."""
    offset, limit = paging(params)
    window = items[offset : offset + limit]
    return {key: [render(x) for x in window], **page_fields(offset, limit, len(window), len(items))}
