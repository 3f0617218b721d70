"""The CLI's argument parser: argparse whose usage errors are canonical errors."""

from __future__ import annotations

import argparse
from typing import NoReturn

from rea.errors import ReaError


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are canonical ``invalid_request`` errors (exit 1, JSON with --json)."""

    def error(self, message: str) -> NoReturn:
        raise ReaError(
            "invalid_request",
            f"{self.prog}: {message}",
            remediation=f"Run `{self.prog} --help` for the arguments.",
            details={"issues": [{"path": "argv", "reason": "invalid_value", "message": message}]},
        )
