"""The files an application analysis reads: from a directory or an ASAR, bounded and integrity-aware."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from dataclasses import field
from typing import Literal

from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import Limits as ArchiveLimits
from rea.plugin import ReaError
from rea.plugin import Registry
from rea.plugin import Target
from rea.plugin import select_unpacker
from rea_plugins.javascript import syntax
from rea_plugins.javascript.model import Integrity
from rea_plugins.javascript.model import Limits
from rea_plugins.javascript.model import Skipped

DEFAULT_LIMITS = Limits(max_files=20_000, max_bytes_per_file=16 << 20, max_total_bytes=512 << 20, max_modules=100_000)
AUXILIARY_EXTENSIONS = (".map", ".html", ".htm")
Policy = Literal["fail", "record-and-continue"]
POLICIES: tuple[Policy, ...] = ("fail", "record-and-continue")


def wanted(path: str) -> bool:
    """Whether the analysis reads this logical path (scripts, source maps, HTML, package.json)."""
    lower = path.lower()
    base = lower.rsplit("/", 1)[-1]
    return base == "package.json" or lower.endswith(syntax.SOURCE_EXTENSIONS + AUXILIARY_EXTENSIONS)


@dataclass
class InputFile:
    path: str
    data: bytes
    integrity: Integrity
    # A directory's script is read only when it is parsed (``read_deferred``), so memory holds one script's bytes at
    # a time rather than the whole input: ``source`` is then its file and ``size`` the size it was admitted with.
    source: str | None = None
    size: int = 0


@dataclass
class Collected:
    format: Literal["directory", "asar"]
    files: list[InputFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    # The unpacker's contradiction records (JSON the kernel's EntryRead carries).
    contradictions: list[JSONObject] = field(default_factory=list)
    reasons: set[str] = field(default_factory=set)
    files_seen: int = 0
    total_bytes: int = 0


def choose_format(target: Target, requested: str) -> Literal["directory", "asar"]:
    if target.is_directory:
        if requested == "asar":
            raise ReaError(
                "unsupported_target",
                f"{target.path} is a directory, not an ASAR archive",
                remediation="Pass format 'directory' or 'auto', or the path of a .asar file.",
                details={"path": target.path, "format": "directory"},
            )
        return "directory"
    if requested == "directory":
        raise ReaError(
            "unsupported_target",
            f"{target.path} is a file, not a directory",
            remediation="Pass format 'asar' or 'auto' for an ASAR archive.",
            details={"path": target.path, "format": target.format},
        )
    if target.format == "asar" or requested == "asar" or target.resolved_path.lower().endswith(".asar"):
        return "asar"
    raise ReaError(
        "unsupported_target",
        f"{target.path} is neither a directory nor an ASAR archive (detected {target.format})",
        remediation="Pass an application directory or an Electron .asar archive.",
        details={"path": target.path, "format": target.format},
    )


class _Budget:
    def __init__(self, limits: Limits, out: Collected) -> None:
        self.limits = limits
        self.out = out

    def admit(self, path: str, size: int) -> bool:
        """Whether one more file of ``size`` bytes fits; records why not."""
        if size > self.limits.max_bytes_per_file:
            self.out.skipped.append(Skipped(path=path, reason=f"larger than max_bytes_per_file ({size} bytes)"))
            self.out.reasons.add("max_bytes_per_file")
            return False
        if len(self.out.files) >= self.limits.max_files:
            self.out.skipped.append(Skipped(path=path, reason="beyond max_files"))
            self.out.reasons.add("max_files")
            return False
        if self.out.total_bytes + size > self.limits.max_total_bytes:
            self.out.skipped.append(Skipped(path=path, reason="beyond max_total_bytes"))
            self.out.reasons.add("max_total_bytes")
            return False
        return True


def _walk_directory(root: str, out: Collected, ctx: CallContext) -> list[tuple[str, str]]:
    """(logical path, absolute path) of wanted regular files; symlinks are reported, never followed."""
    found: list[tuple[str, str]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        ctx.check("listing application files")
        kept = []
        for name in dirnames:
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                out.skipped.append(Skipped(path=rel, reason="symbolic link (not followed)"))
            else:
                kept.append(name)
        dirnames[:] = sorted(kept)
        for name in filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if not wanted(rel) and not ("." not in name and _node_script(full)):
                continue
            out.files_seen += 1
            try:
                st = os.lstat(full)
            except OSError:
                out.skipped.append(Skipped(path=rel, reason="unreadable"))
                continue
            if stat.S_ISLNK(st.st_mode):
                out.skipped.append(Skipped(path=rel, reason="symbolic link (not followed)"))
                continue
            if not stat.S_ISREG(st.st_mode):
                out.skipped.append(Skipped(path=rel, reason="not a regular file"))
                continue
            found.append((rel, full))
    found.sort()
    return found


def _node_script(full: str) -> bool:
    """An extensionless regular file whose ``#!`` line runs node (read without following links or blocking)."""
    try:
        fd = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and syntax.is_node_script(os.read(fd, 256))
    except OSError:
        return False
    finally:
        os.close(fd)


# O_NOFOLLOW closes the window between the listing's lstat and the open.
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def _read_regular(full: str, limit: int, size: int) -> bytes:
    """At most ``limit + 1`` bytes of a file listed with ``size``."""
    with os.fdopen(os.open(full, _READ_FLAGS), "rb") as fh:
        # A read sized by the listing, not by the limit: a buffer of the limit (16 MiB), shrunk to the file, leaves
        # the allocator's heap fragmented (34 MiB more resident at the end of a 49 MiB tree's graph).
        data = fh.read(min(size, limit) + 1)
        if len(data) > size and size < limit:
            data += fh.read(limit - size)  # it grew since it was listed
        return data


def _unreadable(rel: str, exc: OSError) -> Skipped:
    return Skipped(path=rel, reason="symbolic link (not followed)" if exc.errno == errno.ELOOP else "unreadable")


def _read(rel: str, full: str, limits: Limits, size: int) -> bytes | Skipped:
    """A listed file's bytes, or why it is skipped."""
    try:
        data = _read_regular(full, limits.max_bytes_per_file, size)
    except OSError as exc:
        return _unreadable(rel, exc)
    if len(data) > limits.max_bytes_per_file:
        return Skipped(path=rel, reason="grew beyond max_bytes_per_file while reading")
    return data


def read_deferred(
    f: InputFile, limits: Limits, out: Collected, skipped: list[Skipped], reasons: set[str]
) -> bytes | None:
    """A file's bytes, a deferred script's read now (``out.total_bytes`` then counts what was read); None, and the
    file in ``skipped``, when it can no longer be read as admitted."""
    data = fetch(f, limits)
    admitted = account(f, data, out, skipped, reasons)
    return data if admitted and not isinstance(data, Skipped) else None


def fetch(f: InputFile, limits: Limits) -> bytes | Skipped:
    """A file's bytes (a deferred script's read now), or why it can no longer be read; nothing is accounted yet."""
    return f.data if f.source is None else _read(f.path, f.source, limits, f.size)


def account(
    f: InputFile, read: bytes | int | Skipped, out: Collected, skipped: list[Skipped], reasons: set[str]
) -> bool:
    """Account a ``fetch`` (its bytes, or their size once parsed elsewhere) as ``read_deferred`` does; False, with
    the file in ``skipped``, when it could not be read."""
    if f.source is None:
        return True
    if isinstance(read, Skipped):
        skipped.append(read)
        if read.reason.startswith("grew"):
            reasons.add("max_bytes_per_file")
        out.total_bytes -= f.size
        return False
    out.total_bytes += (read if isinstance(read, int) else len(read)) - f.size
    return True


def collect_directory(target: Target, limits: Limits, ctx: CallContext) -> Collected:
    out = Collected(format="directory")
    budget = _Budget(limits, out)
    for rel, full in _walk_directory(target.resolved_path, out, ctx):
        ctx.check("reading application files")
        try:
            size = os.lstat(full).st_size
        except OSError:
            out.skipped.append(Skipped(path=rel, reason="unreadable"))
            continue
        if not budget.admit(rel, size):
            continue
        if syntax.language_of(rel) is not None:
            # A script is read when it is parsed; opening it now reports an unreadable one here, as reading would.
            try:
                os.close(os.open(full, _READ_FLAGS))
            except OSError as exc:
                out.skipped.append(_unreadable(rel, exc))
                continue
            out.total_bytes += size
            out.files.append(InputFile(path=rel, data=b"", integrity="not-declared", source=full, size=size))
        else:
            data = _read(rel, full, limits, size)
            if isinstance(data, Skipped):
                out.skipped.append(data)
                if data.reason.startswith("grew"):
                    out.reasons.add("max_bytes_per_file")
                continue
            out.total_bytes += len(data)
            out.files.append(InputFile(path=rel, data=data, integrity="not-declared"))
        if len(out.files) % 64 == 0:
            ctx.progress(f"read {len(out.files)} files")
    return out


def collect_asar(registry: Registry, target: Target, limits: Limits, policy: Policy, ctx: CallContext) -> Collected:
    # The ASAR reader is a registered unpacker declaring the format (the asar plugin, or a replacement); the
    # caller may have chosen format "asar" for a file whose head does not look like one.
    readers = [
        registry.unpackers[uid]
        for uid in sorted(registry.unpackers)
        if "asar" in registry.unpackers[uid].descriptor.formats
    ]
    if not readers:
        raise ReaError(
            "capability_unavailable",
            "no registered unpacker reads ASAR",
            remediation="Install rea with its asar plugin, or analyze an extracted directory.",
            details={"plugin": "asar"},
        )
    chosen = select_unpacker(registry, target) if target.format == "asar" else readers[0]
    unpacker = chosen if "asar" in chosen.descriptor.formats else readers[0]
    out = Collected(format="asar")
    budget = _Budget(limits, out)
    arc = unpacker.open(target, ArchiveLimits(), ctx)
    try:
        for entry in arc.entries():
            ctx.check("reading ASAR entries")
            if entry.kind == "link":
                if wanted(entry.path):
                    out.skipped.append(Skipped(path=entry.path, reason="link entry (not followed)"))
                continue
            if entry.kind != "file" or not wanted(entry.path):
                continue
            out.files_seen += 1
            problem = getattr(entry, "problem", None)
            if problem:
                # Names such as "../x.js" could alias other modules' paths; hostile entries stay out of the graph.
                out.skipped.append(Skipped(path=entry.path, reason=f"unsafe entry name ({problem})"))
                continue
            if not budget.admit(entry.path, entry.size):
                continue
            chunks: list[bytes] = []
            try:
                read = arc.stream(entry, chunks.append, policy=policy, ctx=ctx)
            except ReaError as exc:
                if policy == "record-and-continue" and exc.code == "target_unavailable":
                    out.skipped.append(Skipped(path=entry.path, reason="unpacked companion file is absent"))
                    out.reasons.add("unavailable")
                    continue
                if exc.code == "artifact_integrity_mismatch":
                    raise _integrity_error(exc) from None
                raise
            integrity: Integrity = (
                "contradicted" if read.contradiction is not None else "verified" if read.verified else "not-declared"
            )
            if read.contradiction is not None:
                out.contradictions.append(dict(read.contradiction))
                out.reasons.add("integrity_contradictions")
            data = b"".join(chunks)
            out.total_bytes += len(data)
            out.files.append(InputFile(path=entry.path, data=data, integrity=integrity))
            if len(out.files) % 64 == 0:
                ctx.progress(f"read {len(out.files)} ASAR entries")
    finally:
        arc.close()
    out.files.sort(key=lambda f: f.path)
    return out


def _integrity_error(exc: ReaError) -> ReaError:
    """Name the rerun option; unpacked entries also name their usual cause."""
    unpacked = bool(exc.details.get("unpacked"))
    cause = " Packaging tools often sign or strip .asar.unpacked files after writing the header." if unpacked else ""
    return ReaError(
        "artifact_integrity_mismatch",
        exc.message,
        remediation=(
            "Rerun analyze_javascript_application with integrity_policy 'record-and-continue' "
            "(CLI: --integrity-policy record-and-continue) to record the contradiction and continue." + cause
        ),
        details=exc.details,
    )


def collect(
    registry: Registry,
    target: Target,
    fmt: Literal["directory", "asar"],
    limits: Limits,
    policy: Policy,
    ctx: CallContext,
) -> Collected:
    if fmt == "directory":
        return collect_directory(target, limits, ctx)
    return collect_asar(registry, target, limits, policy, ctx)
