"""The contract's pages, addresses and selectors: the kernel's helpers (rea.operations) plus search."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from rea.errors import ReaError
from rea.operations.answers import bad, int_param, page, parse_address
from rea.operations.answers import hexa as hx
from rea.search import matcher

__all__ = ["bad", "hx", "int_param", "looks_like_address", "page", "parse_address", "search", "unknown_procedure"]

T = TypeVar("T")
_ADDRESS = re.compile(r"\s*0[xX][0-9a-fA-F]{1,16}\s*")


def looks_like_address(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, str) and _ADDRESS.fullmatch(value) is not None)


def unknown_procedure(value: Any) -> ReaError:
    return bad("procedure", f"no procedure named or starting at {value!r}")


def search(items: Sequence[T], text: Callable[[T], str], params: dict[str, Any]) -> list[T]:
    """The items whose text matches a ``search_*`` request (literal, or RE2 in linear time)."""
    match = matcher(params)
    return [x for x in items if match(text(x))]
