"""What a process capture observes besides its lifecycle: bounded output, the process family, files."""

from __future__ import annotations

import hashlib
import os
import stat
from typing import Literal

import msgspec

from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import confine
from rea.plugin import open_regular
from rea.plugin import procfs
from rea_plugins.process.shapes import FamilyMember
from rea_plugins.process.shapes import FileEntry
from rea_plugins.process.shapes import OutputStream
from rea_plugins.process.shapes import ProcessFamily

LINEAGE_SNAPSHOT_LIMIT = 16


class Stream:
    """One output stream: the first ``limit`` bytes kept, every byte counted and hashed."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.head = bytearray()
        self.total = 0
        self.digest = hashlib.sha256()

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        self.digest.update(data)
        room = self.limit - len(self.head)
        if room > 0:
            self.head.extend(data[:room])

    def record(self) -> OutputStream:
        return OutputStream(
            text=self.head.decode("utf-8", "replace"),
            bytes=self.total,
            truncated=self.total > len(self.head),
            sha256=self.digest.hexdigest(),
        )


def _comm(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm", "rb") as fh:
            return fh.read().decode("utf-8", "replace").strip()
    except OSError:
        return None


class Family:
    """Every process seen in the capture's session, under its leader or in its pids cgroup, sampled while it runs."""

    def __init__(self, leader: int, sandboxed: bool, limit: int, cgroup: str | None = None) -> None:
        self.leader = leader
        self.sandboxed = sandboxed
        self.limit = limit
        self.cgroup = cgroup
        self.members: dict[tuple[int, int], FamilyMember] = {}
        self.seen: dict[tuple[int, int], procfs.ProcInfo] = {}
        self.truncated = False

    def sample(self, at_ms: int) -> list[FamilyMember]:
        """Record processes seen now; returns the program members seen for the first time."""
        table = procfs.scan()
        tree = {i.pid: i for i in procfs.descendants(self.leader, table)}
        for info in table.values():
            if info.sid == self.leader and info.pid != self.leader:
                tree.setdefault(info.pid, info)
        # The cgroup holds what left both the session and the tree (a double-forked setsid daemon).
        for pid in confine.members(self.cgroup) if self.cgroup else []:
            if pid in table:
                tree.setdefault(pid, table[pid])
        me = table.get(self.leader)
        if me is not None:
            tree[self.leader] = me
        return self._merge(list(tree.values()), at_ms)

    def add(self, infos: list[procfs.ProcInfo], at_ms: int) -> None:
        """Record processes found another way (e.g. by their cgroup at the end)."""
        self._merge(infos, at_ms)

    def infos(self) -> list[procfs.ProcInfo]:
        """Every process recorded, as first seen (pid and start time: enough to recognise it later)."""
        return list(self.seen.values())

    def _merge(self, infos: list[procfs.ProcInfo], at_ms: int) -> list[FamilyMember]:
        fresh = []
        for info in infos:
            key = (info.pid, info.start)
            known = self.members.get(key)
            if known is not None:
                # The name changes at exec (the launch shim becomes the program).
                comm = _comm(info.pid) or known.comm
                self.members[key] = msgspec.structs.replace(
                    known, last_seen_ms=at_ms, zombie=info.state == "Z", comm=comm, role=self._role(info, comm)
                )
                continue
            if len(self.members) >= self.limit:
                self.truncated = True
                continue
            comm = _comm(info.pid)
            self.seen[key] = info
            entry = FamilyMember(
                pid=info.pid,
                ppid=info.ppid,
                comm=comm,
                role=self._role(info, comm),
                first_seen_ms=at_ms,
                last_seen_ms=at_ms,
                zombie=info.state == "Z",
                in_session=info.sid == self.leader,
            )
            self.members[key] = entry
            if entry.role == "program" and info.pid != self.leader:
                fresh.append(entry)
        return fresh

    def _role(self, info: procfs.ProcInfo, comm: str | None) -> Literal["program", "sandbox"]:
        if not self.sandboxed:
            return "program"
        # bubblewrap runs as the leader and as the sandbox's init; everything it starts is the program.
        return "sandbox" if info.pid == self.leader or comm == "bwrap" else "program"

    def alive_after_exit(self) -> list[FamilyMember]:
        """Members other than the leader still running (not zombies) now."""
        out = []
        for (pid, start), entry in self.members.items():
            if pid == self.leader:
                continue
            now = procfs.read(pid)
            if now is not None and now.start == start and now.state != "Z":
                out.append(entry)
        return out

    def record(self, outlived: list[FamilyMember], lineage: list[JSONObject]) -> ProcessFamily:
        members = sorted(self.members.values(), key=lambda e: (e.first_seen_ms, e.pid))
        program = [m for m in members if m.role == "program"]
        return ProcessFamily(
            members=members,
            program_process_count=len(program),
            truncated=self.truncated,
            sampling="polled from /proc about every 50 ms: a process that lived shorter may be missing",
            outlived_leader=outlived,
            lineage=lineage,
        )


def snapshot(roots: list[str], limit: int) -> tuple[dict[str, tuple[int, int, int, int]], bool]:
    """(root index/relative path -> (mode, size, mtime_ns, inode)) of every entry under ``roots``, bounded."""
    out: dict[str, tuple[int, int, int, int]] = {}
    for index, root in enumerate(roots):
        for folder, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if len(out) >= limit:
                    return out, True
                out[f"{index}:{os.path.relpath(path, root)}"] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)
    return out, False


def _digest(path: str, limit: int) -> str | None:
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        # The program wrote here: a file it swapped for a FIFO after the lstat is refused, never waited on.
        with os.fdopen(open_regular(path, follow=False, what="written file"), "rb") as fh:
            return hashlib.sha256(fh.read(limit + 1)).hexdigest()
    except (OSError, ReaError):
        return None


def file_changes(
    roots: list[str],
    before: dict[str, tuple[int, int, int, int]],
    after: dict[str, tuple[int, int, int, int]],
    hash_limit: int,
) -> tuple[list[FileEntry], list[FileEntry], list[FileEntry]]:
    """Created, modified and deleted entries under the roots, created/modified files with their SHA-256."""

    def describe(key: str, facts: tuple[int, int, int, int], digest: bool) -> FileEntry:
        index, rel = key.split(":", 1)
        mode = facts[0]
        kind: Literal["file", "directory", "symlink", "other"] = (
            "directory"
            if stat.S_ISDIR(mode)
            else "symlink"
            if stat.S_ISLNK(mode)
            else "file"
            if stat.S_ISREG(mode)
            else "other"
        )
        return FileEntry(
            root=int(index),
            path=rel,
            kind=kind,
            size=facts[1] if kind == "file" else None,
            sha256=_digest(os.path.join(roots[int(index)], rel), hash_limit)
            if digest and kind == "file"
            else msgspec.UNSET,
        )

    created = [describe(k, after[k], True) for k in sorted(set(after) - set(before))]
    deleted = [describe(k, before[k], False) for k in sorted(set(before) - set(after))]
    modified = [
        describe(k, after[k], True)
        for k in sorted(set(before) & set(after))
        if before[k][1:] != after[k][1:] and not stat.S_ISDIR(after[k][0])
    ]
    return created, modified, deleted
