"""Where a binary's loader would find its needed libraries, by the rules of the binary's own format.

ELF follows ld.so: DT_RPATH (when there is no DT_RUNPATH), DT_RUNPATH, the directories of /etc/ld.so.conf, then
the default directories, ``$ORIGIN`` being the program's folder; a candidate of another ELF class or machine is
skipped as ld.so skips it. LD_LIBRARY_PATH is the server's environment, not the program's, so it is not read. PE
looks in the program's folder (the Windows system folders do not exist here). Mach-O resolves an install name:
absolute, ``@rpath/`` through each LC_RPATH, ``@loader_path/`` and ``@executable_path/`` from the program's folder.
Only files that exist are reported; nothing is guessed from a name.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any
from typing import NamedTuple

from rea.errors import ReaError
from rea.files import open_regular

LD_SO_CONF = "/etc/ld.so.conf"
DEFAULT_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64")
_MAX_CONF_FILES = 256
# Characters read of one loader configuration file (a real one is a few lines).
_MAX_CONF_BYTES = 1 << 20


class Found(NamedTuple):
    """A needed library: its name, the file the loader would load (None: not found here) and by which rule."""

    name: str
    path: str | None
    rule: str | None
    searched: tuple[str, ...]


def _elf_identity(path: str) -> tuple[int, int, int] | None:
    """(class, data encoding, machine) of an ELF file, or None for anything else."""
    try:
        # A candidate in a folder the binary names (RPATH, $ORIGIN) may be a FIFO: never wait on it.
        with os.fdopen(open_regular(path, what="library"), "rb") as f:
            head = f.read(20)
    except (OSError, ReaError):
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    return head[4], head[5], int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")


def ld_so_conf_dirs(conf: str = LD_SO_CONF) -> list[str]:
    """The directories /etc/ld.so.conf lists (its ``include`` globs followed, bounded), in order."""
    out: list[str] = []
    seen: set[str] = set()

    def read(path: str) -> None:
        if path in seen or len(seen) >= _MAX_CONF_FILES:
            return
        seen.add(path)
        try:
            with os.fdopen(open_regular(path, what="loader configuration"), encoding="utf-8", errors="replace") as f:
                lines = f.read(_MAX_CONF_BYTES).splitlines()
        except (OSError, ReaError):
            return
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if line.startswith("include "):
                pattern = line[len("include ") :].strip()
                pattern = pattern if os.path.isabs(pattern) else os.path.join(os.path.dirname(path), pattern)
                for each in sorted(glob.glob(pattern)):
                    read(each)
            elif line.startswith("/") and line not in out:
                out.append(line)

    read(conf)
    return out


def _expand(entry: str, origin: str, bits: int) -> str:
    lib = "lib64" if bits == 64 else "lib"
    for token, value in (("$ORIGIN", origin), ("${ORIGIN}", origin), ("$LIB", lib), ("${LIB}", lib)):
        entry = entry.replace(token, value)
    return entry


def _split(paths: Iterable[str]) -> list[str]:
    return [p for entry in paths for p in str(entry).split(":") if p]


def elf_search(program: str, linkage: Mapping[str, Any], conf: str = LD_SO_CONF) -> list[tuple[str, str]]:
    """The (directory, rule) list ld.so searches for ``program``'s needed libraries, in order."""
    ident = _elf_identity(program)
    bits = 64 if ident is not None and ident[0] == 2 else 32
    origin = os.path.dirname(os.path.abspath(program))
    runpath = _split(linkage.get("runpath") or [])
    rpath = [] if runpath else _split(linkage.get("rpath") or [])
    dirs = [(_expand(d, origin, bits), "rpath") for d in rpath]
    dirs += [(_expand(d, origin, bits), "runpath") for d in runpath]
    dirs += [(d, "ld.so.conf") for d in ld_so_conf_dirs(conf)]
    dirs += [(d, "default") for d in DEFAULT_DIRS]
    return dirs


def _elf(program: str, needed: list[str], linkage: Mapping[str, Any], conf: str) -> list[Found]:
    want = _elf_identity(program)
    dirs = elf_search(program, linkage, conf)
    out = []
    for name in needed:
        if "/" in name:  # a path names the file itself
            path = os.path.join(os.path.dirname(os.path.abspath(program)), name) if not os.path.isabs(name) else name
            ok = os.path.isfile(path) and _elf_identity(path) == want
            out.append(Found(name, os.path.realpath(path) if ok else None, "path" if ok else None, (path,)))
            continue
        found = None
        for d, rule in dirs:
            path = os.path.join(d, name)
            if os.path.isfile(path) and _elf_identity(path) == want:
                found = Found(name, os.path.realpath(path), rule, ())
                break
        out.append(found or Found(name, None, None, tuple(dict.fromkeys(d for d, _ in dirs))))
    return out


def _pe(program: str, needed: list[str]) -> list[Found]:
    folder = os.path.dirname(os.path.abspath(program))
    try:
        entries = {e.lower(): e for e in os.listdir(folder)}
    except OSError:
        entries = {}
    out = []
    for name in needed:
        hit = entries.get(name.lower())  # Windows file names compare caselessly
        path = os.path.join(folder, hit) if hit else None
        ok = path is not None and os.path.isfile(path)
        out.append(Found(name, path if ok else None, "program folder" if ok else None, () if ok else (folder,)))
    return out


def _macho(program: str, needed: list[str], linkage: Mapping[str, Any]) -> list[Found]:
    folder = os.path.dirname(os.path.abspath(program))

    def local(entry: str) -> str:
        for token in ("@loader_path", "@executable_path"):
            if entry.startswith(token):
                return folder + entry[len(token) :]
        return entry

    rpaths = [local(r) for r in _split(linkage.get("rpath") or [])]
    out = []
    for name in needed:
        if name.startswith("@rpath/"):
            tried = [os.path.join(r, name[len("@rpath/") :]) for r in rpaths]
            rule = "rpath"
        else:
            tried = [local(name)]
            rule = "install name"
        hit = next((p for p in tried if os.path.isfile(p)), None)
        out.append(
            Found(name, os.path.realpath(hit) if hit else None, rule if hit else None, () if hit else tuple(tried))
        )
    return out


def resolve(program: str, file_format: str, linkage: Mapping[str, Any], conf: str = LD_SO_CONF) -> list[Found]:
    """Each library ``program`` needs (``linkage`` as binary_layout reports it), where its loader would find it."""
    needed = [str(n) for n in linkage.get("needed") or []]
    if file_format == "elf":
        return _elf(program, needed, linkage, conf)
    if file_format == "pe":
        return _pe(program, needed)
    if file_format == "mach-o":
        return _macho(program, needed, linkage)
    return [Found(n, None, None, ()) for n in needed]
