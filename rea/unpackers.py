"""The artifact-unpacker plugin kind: readers that list and open the entries of an archive format."""

from __future__ import annotations

import abc
from typing import Any

import msgspec

from rea.target import Target


class UnpackerDescriptor(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str
    version: str
    formats: tuple[str, ...]
    description: str = ""


class Unpacker(abc.ABC):
    """Reads one archive format. Concrete entry and reader types are defined by the artifact family."""

    descriptor: UnpackerDescriptor

    @abc.abstractmethod
    def claims(self, target: Target, head: bytes) -> bool:
        """Whether this unpacker reads ``target`` (from its identity and first bytes); no side effects."""

    @abc.abstractmethod
    def open(self, target: Target, options: dict[str, Any]) -> Any:
        """Open a reader over the archive."""
