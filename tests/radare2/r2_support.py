"""Helpers for the radare2 provider tests: opening a target on radare2 (the rest is tests/engine_lifecycle.py)."""

from __future__ import annotations

from rea.session import Session
from tests.engine_lifecycle import open_with


def open_r2(session: Session, path: str) -> None:
    open_with(session, path, "radare2")
