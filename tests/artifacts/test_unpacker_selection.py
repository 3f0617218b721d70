"""Unpackers are chosen through the ``rea_select_unpacker`` hook: a plugin can add a format."""

from __future__ import annotations

import hashlib
from pathlib import Path

from rea import hookimpl
from rea.context import CallContext
from rea.registry import Registry
from rea.session import Session
from rea.target import Target
from rea.testing import registered
from rea.testing import result_of
from rea.unpackers import ArchiveEntry
from rea.unpackers import ArchiveReader
from rea.unpackers import EntryRead
from rea.unpackers import IntegrityPolicy
from rea.unpackers import Limits
from rea.unpackers import Sink
from rea.unpackers import Unpacker
from rea.unpackers import UnpackerDescriptor


class _ToyReader(ArchiveReader):
    """A format whose lines are ``name=content`` after a ``TOY!`` magic line."""

    format = "toy"

    def __init__(self, path: str) -> None:
        lines = Path(path).read_bytes().split(b"\n")[1:]
        self.items = dict(line.decode().split("=", 1) for line in lines if line)

    def entries(self) -> list[ArchiveEntry]:
        return [ArchiveEntry(path=k, kind="file", size=len(v)) for k, v in sorted(self.items.items())]

    def stream(
        self, entry: ArchiveEntry, sink: Sink, *, policy: IntegrityPolicy, ctx: CallContext | None = None
    ) -> EntryRead:
        data = self.items[entry.path].encode()
        sink(data)
        return EntryRead(sha256=hashlib.sha256(data).hexdigest(), size=len(data), verified=None)


class _ToyUnpacker(Unpacker):
    descriptor = UnpackerDescriptor(id="toy", name="Toy", version="1", formats=("toy",))

    def claims(self, target: Target, head: bytes) -> bool:
        return head.startswith(b"TOY!")

    def open(self, target: Target, options: Limits, ctx: CallContext | None = None) -> ArchiveReader:
        return _ToyReader(target.resolved_path)


class _ToyPlugin:
    unpacker = _ToyUnpacker()

    @hookimpl
    def rea_select_unpacker(self, target: Target, head: bytes) -> Unpacker | None:
        return self.unpacker if self.unpacker.claims(target, head) else None


def test_a_plugin_adds_an_archive_format(rea_registry: Registry, rea_session: Session, tmp_path: Path) -> None:
    path = tmp_path / "bundle.toy"
    path.write_bytes(b"TOY!\nb.txt=beta\na.txt=alpha\n")
    with registered(rea_registry.pm, _ToyPlugin(), "toy-test-plugin"):
        res = result_of(rea_session, "inspect_artifact", {"path": str(path)})
    assert res["format"] == "toy"
    assert [(e["path"], e["sha256"]) for e in res["entries"]] == [
        ("a.txt", hashlib.sha256(b"alpha").hexdigest()),
        ("b.txt", hashlib.sha256(b"beta").hexdigest()),
    ]
