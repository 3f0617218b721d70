"""The CLI's argument parser: argparse whose usage errors are canonical errors."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from collections.abc import Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from typing import NoReturn

from rea.errors import ReaError

# While set, a parser hands itself over instead of parsing (``collecting``): shell completion and the --help walk
# read every command's real parser without running the command.
_COLLECTING: ContextVar[bool] = ContextVar("rea_cli_collecting", default=False)


class Collected(Exception):  # a control-flow signal carrying a parser, not an error
    """Raised by ``parse_args`` while collecting: the parser the command built."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


@contextmanager
def collecting() -> Iterator[None]:
    token = _COLLECTING.set(True)
    try:
        yield
    finally:
        _COLLECTING.reset(token)


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are canonical ``invalid_request`` errors (exit 1, JSON with --json)."""

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        if _COLLECTING.get():
            raise Collected(self)
        return super().parse_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        raise ReaError(
            "invalid_request",
            f"{self.prog}: {message}",
            remediation=f"Run `{self.prog} --help` for the arguments.",
            details={"issues": [{"path": "argv", "reason": "invalid_value", "message": message}]},
        )
