"""Walk the inputs of a triage: files, folders and archives (through the registered unpackers), by SHA-256."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

import msgspec

from rea.plugin import NESTED_SEPARATOR
from rea.plugin import CallContext
from rea.plugin import IntegrityPolicy
from rea.plugin import Limits
from rea.plugin import ReaError
from rea.plugin import Registry
from rea.plugin import Target
from rea.plugin import Unpacker
from rea.plugin import identify
from rea.plugin import read_head
from rea.plugin import shown
from rea_plugins.corpus.model import TriageCounts


class Item(msgspec.Struct, frozen=True, kw_only=True):
    """One binary to analyse: where its bytes are (``path``), and every logical path it was found at."""

    sha256: str
    path: str
    format: str
    architecture: str | None
    size: int
    paths: tuple[str, ...]


class Problem(msgspec.Struct, frozen=True, kw_only=True):
    """An input that is not analysed: an unreadable file, or an archive that fails its integrity policy."""

    path: str
    sha256: str
    code: str
    message: str


class Walk:
    """Collects the items of a corpus; staged archive members live under ``staging`` until the run ends."""

    def __init__(
        self,
        registry: Registry,
        provider: str,
        staging: str,
        policy: IntegrityPolicy,
        ctx: CallContext,
        limits: Limits | None = None,
        on_file: Callable[[int], None] | None = None,
    ) -> None:
        self.registry = registry
        self.provider = registry.providers.get(provider) if provider != "auto" else None
        self.staging = staging
        self.policy = policy
        self.ctx = ctx
        self.limits = limits or Limits()
        self.on_file = on_file
        self.items: dict[str, Item] = {}
        self.problems: list[Problem] = []
        self.counts = TriageCounts()

    # -- inputs -------------------------------------------------------------------------------------------

    def add(self, root: str) -> None:
        """A file or a folder (walked without following links, in sorted order)."""
        if os.path.isdir(root):
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames.sort()
                for name in sorted(filenames):
                    full = os.path.join(dirpath, name)
                    if os.path.islink(full) or not os.path.isfile(full):
                        continue
                    self._file(full, shown(os.path.relpath(full, root)), 0)
        else:
            self._file(root, shown(os.path.basename(root)), 0)

    def _file(self, path: str, logical: str, depth: int) -> None:
        """One file: ``path`` is what is opened (a name that is not UTF-8 kept as Python's surrogateescape text),
        ``logical`` what is recorded and shown (``rea.fsnames.shown``: those bytes escaped, so SQLite and JSON
        carry it and one odd name never stops the rest)."""
        self.ctx.check("walking the corpus")
        self.counts.files_seen += 1
        if self.on_file is not None:
            self.on_file(self.counts.files_seen)
        try:
            target = identify(path, self.ctx)
        except ReaError as err:
            if err.code == "cancelled":
                raise
            self.counts.skipped_unreadable += 1
            self.problems.append(Problem(path=logical, sha256="", code=err.code, message=err.message))
            return
        if self._supported(target):
            self._binary(target, logical)
            return
        head = read_head(target)
        unpacker = self._unpacker(target, head)
        if unpacker is not None and depth < self.limits.max_depth:
            self._archive(unpacker, target, logical, depth)
            return
        self.counts.skipped_not_binary += 1

    def _supported(self, target: Target) -> bool:
        if target.format in ("unknown", "directory", "zip", "asar", "apk"):
            return False
        providers = [self.provider] if self.provider is not None else list(self.registry.providers.values())
        for p in providers:
            if p.descriptor.kind == "static" and target.format in p.descriptor.formats:
                return p.target_support(target).status != "unsupported"
        return False

    def _unpacker(self, target: Target, head: bytes) -> Unpacker | None:
        chosen = self.registry.pm.hook.rea_select_unpacker(target=target, head=head)
        return chosen if isinstance(chosen, Unpacker) else None

    def _binary(self, target: Target, logical: str) -> None:
        known = self.items.get(target.sha256)
        if known is not None:
            self.counts.duplicates += 1
            if logical not in known.paths:
                self.items[target.sha256] = msgspec.structs.replace(known, paths=(*known.paths, logical))
            return
        self.counts.binaries += 1
        self.items[target.sha256] = Item(
            sha256=target.sha256,
            path=target.resolved_path,
            format=target.format,
            architecture=target.architecture,
            size=target.size,
            paths=(logical,),
        )

    def _archive(self, unpacker: Unpacker, target: Target, logical: str, depth: int) -> None:
        self.counts.archives += 1
        try:
            reader = unpacker.open(target, self.limits, self.ctx)
        except ReaError as err:
            if err.code == "cancelled":
                raise
            self.problems.append(Problem(path=logical, sha256=target.sha256, code=err.code, message=err.message))
            return
        try:
            for entry in reader.entries():
                if entry.kind != "file" or entry.problem is not None:
                    continue
                fd, staged = tempfile.mkstemp(dir=self.staging, prefix="member-")
                try:
                    with os.fdopen(fd, "wb") as out:

                        def sink(chunk: bytes, out: Any = out) -> None:
                            out.write(chunk)

                        reader.stream(entry, sink, policy=self.policy, ctx=self.ctx)
                except ReaError as err:
                    os.unlink(staged)
                    if err.code == "cancelled":
                        raise
                    where = f"{logical}{NESTED_SEPARATOR}{entry.path}"
                    self.problems.append(Problem(path=where, sha256=target.sha256, code=err.code, message=err.message))
                    if err.code in ("artifact_integrity_mismatch", "resource_constraint"):
                        return
                    continue
                self._file(staged, f"{logical}{NESTED_SEPARATOR}{entry.path}", depth + 1)
        finally:
            reader.close()
