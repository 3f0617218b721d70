"""A reader of hostile input fails with a typed error, never with a parser's traceback or exception text."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

from rea.errors import ReaError

A = TypeVar("A")
R = TypeVar("R")


def typed_failures(
    reader: Callable[[A], R], error: Callable[[A, str], ReaError], *, deep: str, broken: str
) -> Callable[[A], R]:
    """``reader`` (a tool's handler, a parser's entry) with its failures typed: its own ``ReaError`` passes as it is,
    a ``RecursionError`` or ``MemoryError`` (structures that nest or repeat beyond what can be read) becomes
    ``error(argument, deep)`` and any other exception ``error(argument, broken)``."""

    @functools.wraps(reader)
    def run(argument: A) -> R:
        try:
            return reader(argument)
        except ReaError:
            raise
        except (RecursionError, MemoryError):
            raise error(argument, deep) from None
        except Exception:
            raise error(argument, broken) from None

    return run
