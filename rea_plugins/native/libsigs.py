"""Library functions named by FLIRT signatures built from this machine's static libraries.

A statically linked runtime (glibc's ``libc.a`` in a ``gcc -static`` program, MinGW-w64's CRT in a PE) carries its
functions' bytes as the library's objects hold them, but for what the linker wrote at their relocations. So each
function of each object of the library becomes one FLIRT pattern line: its bytes, the relocated bytes as ``..``
(and, on x86-64, the opcode bytes the linker may rewrite when it relaxes a GOT or TLS access), the first 32 as the
pattern and the rest, up to ``MAX_PATTERN_BYTES``, as its footer; no CRC (the footer checks those bytes one by one).
python-flirt parses the lines, compiles them and matches procedure starts against them.

A library's patterns are built on first use, with progress, and kept in the analysis cache keyed by the library file's
SHA-256 (``SignatureSet``), so a new glibc builds new ones and an unchanged one is read back. The archives are read
with arpy, the objects (ELF or COFF) with LIEF.
"""

from __future__ import annotations

import glob
import hashlib
import os
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from typing import TYPE_CHECKING
from typing import Any
from typing import NamedTuple

import msgspec

from rea.plugin import AnalysisCache
from rea.plugin import CacheKey
from rea.plugin import ReaError
from rea.plugin import __version__
from rea.plugin import default_cache

if TYPE_CHECKING:
    from rea_plugins.native.model import Linkage

# /3: the symbols rel32 fields reach as references (``^offset name``), which tell identical wrappers apart; each
# function's section and offset in its object.
KIND = "native-library-signatures/3"
# A library file's SHA-256 under its stamp (path, device, inode, size, mtime, ctime).
DIGEST_KIND = "native-library-digest/1"
# The pattern (32 bytes) and footer a line holds at most: beyond that, a match is already certain.
MAX_PATTERN_BYTES = 1024
# A function shorter than this is not signed: a two-byte ``xor eax, eax; ret`` names nothing.
MIN_FUNCTION_BYTES = 6
# Fewer known (unmasked) bytes than this: a match is ``medium`` confidence unless its calls or place confirm it.
SURE_BYTES = 16
# How many procedures either side of an ambiguous one are looked at for a neighbour from the same object.
NEIGHBOURS = 8
# The procedures at each end of a binary matched first: none of them a library function, the rest are not tried.
SAMPLE = 128


class Library(NamedTuple):
    """A static library a runtime links from: where Debian installs it (globs, the newest first) and its package."""

    label: str
    patterns: tuple[str, ...]
    package: str
    # Signed only for a binary holding one of these byte strings (C++'s runtime type names for libstdc++): a C program
    # is spared the largest pattern set.
    markers: tuple[bytes, ...] = ()


# The names of the C++ runtime's own type information (std::exception, the ABI's type_info classes).
_CXX = (b"St9exception", b"N10__cxxabiv1")
# The runtimes a static program carries, by (format, architecture): glibc and GCC's own for a Linux ELF, MinGW-w64's
# CRT and GCC's for a PE. The first of each library's globs that finds a file is used.
LIBRARIES: dict[tuple[str, str], tuple[Library, ...]] = {
    ("elf", "x86_64"): (
        Library("libc.a", ("/usr/lib/x86_64-linux-gnu/libc.a",), "libc6-dev"),
        Library("libm.a", ("/usr/lib/x86_64-linux-gnu/libm-2.*.a", "/usr/lib/x86_64-linux-gnu/libm.a"), "libc6-dev"),
        Library("libgcc.a", ("/usr/lib/gcc/x86_64-linux-gnu/*/libgcc.a",), "libgcc-12-dev"),
        Library("libgcc_eh.a", ("/usr/lib/gcc/x86_64-linux-gnu/*/libgcc_eh.a",), "libgcc-12-dev"),
        Library("libstdc++.a", ("/usr/lib/gcc/x86_64-linux-gnu/*/libstdc++.a",), "libstdc++-12-dev", _CXX),
    ),
    ("pe", "x86_64"): (
        Library("crt2.o", ("/usr/x86_64-w64-mingw32/lib/crt2.o",), "mingw-w64-x86-64-dev"),
        Library("libmingw32.a", ("/usr/x86_64-w64-mingw32/lib/libmingw32.a",), "mingw-w64-x86-64-dev"),
        Library("libmingwex.a", ("/usr/x86_64-w64-mingw32/lib/libmingwex.a",), "mingw-w64-x86-64-dev"),
        Library("libmsvcrt.a", ("/usr/x86_64-w64-mingw32/lib/libmsvcrt.a",), "mingw-w64-x86-64-dev"),
        Library(
            "libgcc.a",
            ("/usr/lib/gcc/x86_64-w64-mingw32/*-win32/libgcc.a", "/usr/lib/gcc/x86_64-w64-mingw32/*/libgcc.a"),
            "gcc-mingw-w64-x86-64-win32",
        ),
        Library(
            "libgcc_eh.a",
            ("/usr/lib/gcc/x86_64-w64-mingw32/*-win32/libgcc_eh.a", "/usr/lib/gcc/x86_64-w64-mingw32/*/libgcc_eh.a"),
            "gcc-mingw-w64-x86-64-win32",
        ),
        Library(
            "crtbegin.o",
            ("/usr/lib/gcc/x86_64-w64-mingw32/*-win32/crtbegin.o", "/usr/lib/gcc/x86_64-w64-mingw32/*/crtbegin.o"),
            "gcc-mingw-w64-x86-64-win32",
        ),
        Library(
            "libstdc++.a",
            ("/usr/lib/gcc/x86_64-w64-mingw32/*-win32/libstdc++.a", "/usr/lib/gcc/x86_64-w64-mingw32/*/libstdc++.a"),
            "g++-mingw-w64-x86-64-win32",
            _CXX,
        ),
    ),
}
# The one library without which the feature has nothing to say, by format (the others only add names).
ESSENTIAL = {"elf": "libc.a", "pe": "libmingwex.a"}

# ELF x86-64 relocation types (psABI) whose bytes before the field the linker may rewrite, and how many before and
# after the field are masked with it: GOTPCRELX (mov/call/jmp through the GOT relaxed to lea or a direct call),
# REX_GOTPCRELX, GOTTPOFF (initial exec to local exec), TLSGD and TLSLD (general and local dynamic to local exec,
# a 16- or 12-byte sequence), GOTPC32_TLSDESC and TLSDESC_CALL.
_ELF_RELAX = {41: (2, 0), 42: (3, 0), 22: (3, 0), 19: (4, 8), 20: (3, 5), 34: (3, 0), 35: (0, 2)}
# ELF x86-64 relocation field sizes by type where LIEF gives none: R_X86_64_64, PC64, GOTOFF64, GOTPC64, SIZE64.
_ELF_WIDE = {1: 8, 24: 8, 25: 8, 26: 8, 33: 8}
# COFF AMD64 relocation field sizes by type: ADDR64, ADDR32, ADDR32NB, REL32..REL32_5, SECTION, SECREL, SECREL7.
_COFF_SIZES = {1: 8, 2: 4, 3: 4, 4: 4, 5: 4, 6: 4, 7: 4, 8: 4, 9: 4, 10: 2, 11: 4, 12: 1, 13: 4, 14: 4}
_COFF_CODE = 0x20  # IMAGE_SCN_CNT_CODE
_CALL_JUMP = (0xE8, 0xE9)  # x86 call rel32, jmp rel32
_COFF_EXECUTE = 0x20000000  # IMAGE_SCN_MEM_EXECUTE


class Origin(msgspec.Struct, array_like=True, frozen=True):
    """A signed function: its object (archive member), whether its symbol is global, its size and known bytes, and
    where it lies in its object (a section and offset: functions of one section are linked in that order)."""

    object: str
    global_: bool
    size: int
    known: int
    section: str
    offset: int


class SignatureSet(msgspec.Struct, frozen=True, kw_only=True):
    """One library's patterns: ``pat`` is a .pat file (one line per function, ``---`` last); ``origins`` the object of
    each line's first name, in line order."""

    library: str
    sha256: str
    pat: str
    origins: list[Origin]
    objects: int
    seconds: float


class Missing(NamedTuple):
    label: str
    package: str


def locate(fmt: str, arch: str, content: Any = None) -> tuple[list[tuple[Library, str]], list[Missing]]:
    """The runtime libraries for ``fmt``/``arch`` found on this machine (library, path) and those missing; given a
    binary's ``content``, only those it may hold (a library with markers where one is in it)."""
    found: list[tuple[Library, str]] = []
    missing: list[Missing] = []
    for lib in LIBRARIES.get((fmt, arch), ()):
        if content is not None and lib.markers and not any(content.find(m) >= 0 for m in lib.markers):
            continue
        path = next((p for g in lib.patterns for p in sorted(glob.glob(g), reverse=True) if _is_archive(p)), None)
        if path is None:
            missing.append(Missing(lib.label, lib.package))
        else:
            found.append((lib, path))
    return found, missing


def _is_archive(path: str) -> bool:
    """An ar archive or an object file (not glibc's ``libm.a`` linker script)."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return False
    return head == b"!<arch>\n" or head[:4] == b"\x7fELF" or head[:2] == b"\x64\x86"


def members(path: str) -> Iterator[tuple[str, bytes]]:
    """Each object of an ar archive (name, bytes), or the file itself when it is one object."""
    import arpy

    with open(path, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            f.seek(0)
            yield os.path.basename(path), f.read()
            return
    ar = arpy.Archive(path)
    try:
        for member in ar:  # the members only: the symbol index and the GNU name table are not listed
            yield member.header.name.decode("utf-8", "replace"), member.read()
    finally:
        ar.close()


def _pat_line(
    code: bytes,
    mask: bytearray,
    names: list[tuple[int, str]],
    refs: tuple[tuple[int, str], ...] | list[tuple[int, str]] = (),
) -> str | None:
    """One pattern line for a function's ``code`` (``mask``: 1 where a byte is relocated), named ``names``
    (offset, name; the first at 0), with the functions its direct calls and jumps reach (``refs``: the rel32's
    offset, the callee), or None when too few of its bytes are known."""
    n = len(code)
    if n < MIN_FUNCTION_BYTES or n - sum(mask) < 4:
        return None
    head = min(n, 32)
    size = min(n, MAX_PATTERN_BYTES)

    def text(lo: int, hi: int) -> str:
        return "".join(".." if mask[i] else f"{code[i]:02X}" for i in range(lo, hi))

    pattern = text(0, head) + ".." * (32 - head)
    symbols = " ".join(
        [f":{off:04X} {name}" for off, name in names if off < size]
        + [f"^{off:04X} {name}" for off, name in refs if off < size and name and not name.startswith(".")]
    )
    footer = text(head, size)
    return f"{pattern} 00 0000 {n:04X} {symbols}" + (f" {footer}" if footer else "")


def _elf_relocations(binary: Any) -> dict[str, list[Any]]:
    """An object's relocations by the name of the section they apply to."""
    out: dict[str, list[Any]] = {}
    for r in binary.object_relocations:
        if r.section is not None:
            out.setdefault(r.section.name, []).append(r)
    return out


def _elf_targets(relocations: list[Any]) -> dict[int, str]:
    """The rel32 fields that reach a named symbol from the end of their own field (R_X86_64_PC32 or PLT32 with
    addend -4: calls, jumps, ``lea``, a load with no immediate after it), and the symbols' names."""
    return {
        r.address: str(r.symbol.name)
        for r in relocations
        if int(r.type) & 0xFFFF in (2, 4) and r.addend == -4 and r.has_symbol and _named(str(r.symbol.name))
    }


def _coff_targets(relocations: list[Any], data: bytes) -> dict[int, str]:
    """The same for COFF: IMAGE_REL_AMD64_REL32 fields holding no addend of their own."""
    return {
        r.address: str(r.symbol.name)
        for r in relocations
        if int(r.type) & 0xFFFF == 4
        and r.symbol is not None
        and _named(str(r.symbol.name))
        and data[r.address : r.address + 4] == b"\0\0\0\0"
    }


def _named(name: str) -> bool:
    """A symbol a program can name (not a section symbol, a local label or the empty name)."""
    return bool(name) and not name.startswith((".", "$"))


def _masked_elf(relocations: list[Any], data: bytes) -> bytearray:
    mask = bytearray(len(data))
    for r in relocations:
        kind = int(r.type) & 0xFFFF
        width = r.size // 8 if r.size else _ELF_WIDE.get(kind, 4)
        before, after = _ELF_RELAX.get(kind, (0, 0))
        lo, hi = max(0, r.address - before), min(len(data), r.address + width + after)
        mask[lo:hi] = b"\x01" * (hi - lo)
    return mask


class Function(NamedTuple):
    """One function of an object: its bytes and relocation mask, names at offsets (aliases at 0), the symbols its
    rel32 fields reach (offset, name), whether it is global, and where it lies in its object (section, offset)."""

    code: bytes
    mask: bytearray
    names: list[tuple[int, str]]
    refs: list[tuple[int, str]]
    global_: bool
    section: str
    offset: int


def _elf_functions(binary: Any) -> Iterator[Function]:
    """An ELF object's functions: code, mask, names at offsets (aliases at the same start), global."""
    import lief

    by_section: dict[int, dict[int, list[Any]]] = {}
    for s in binary.symbols:
        if s.type == lief.ELF.Symbol.TYPE.FUNC and s.shndx not in (0, 0xFFF1, 0xFFF2) and s.size > 0:
            by_section.setdefault(s.shndx, {}).setdefault(s.value, []).append(s)
    sections = list(binary.sections)
    masks: dict[int, tuple[bytes, bytearray, dict[int, str]]] = {}
    relocations = _elf_relocations(binary) if by_section else {}
    for index, starts in by_section.items():
        if index >= len(sections):
            continue
        section = sections[index]
        if index not in masks:
            data = bytes(section.content)
            rels = relocations.get(section.name, [])
            masks[index] = (data, _masked_elf(rels, data), _elf_targets(rels))
        data, mask, calls = masks[index]
        for start, syms in starts.items():
            size = max(s.size for s in syms)
            ordered = sorted(syms, key=_preference_elf)
            names = [(0, s.name) for s in ordered]
            refs = [(off - start, callee) for off, callee in calls.items() if start <= off < start + size]
            code, masked = data[start : start + size], mask[start : start + size]
            yield Function(code, masked, names, refs, _global_elf(ordered[0]), section.name, start)


def _global_elf(s: Any) -> bool:
    import lief

    return bool(s.binding != lief.ELF.Symbol.BINDING.LOCAL)


def _preference_elf(s: Any) -> tuple[bool, bool, int, str]:
    """The name a function is shown by among its aliases: global, then without a leading underscore, shortest."""
    return (not _global_elf(s), s.name.startswith("_"), len(s.name), s.name)


def _coff_functions(binary: Any) -> Iterator[Function]:
    """A COFF object's functions (symbols typed as functions in a code section), each up to the next one."""
    sections = list(binary.sections)
    starts: dict[int, dict[int, list[Any]]] = {}
    for s in binary.symbols:
        if not s.is_function or s.section_idx < 1 or s.section_idx > len(sections):
            continue
        starts.setdefault(s.section_idx - 1, {}).setdefault(s.value, []).append(s)
    for index, by_start in starts.items():
        section = sections[index]
        if not section.characteristics & (_COFF_CODE | _COFF_EXECUTE):
            continue
        data = bytes(section.content)
        mask = bytearray(len(data))
        for r in section.relocations:
            width = _COFF_SIZES.get(int(r.type) & 0xFFFF, 4)
            mask[r.address : r.address + width] = b"\x01" * min(width, max(0, len(data) - r.address))
        calls = _coff_targets(list(section.relocations), data)
        order = sorted(by_start)
        for i, start in enumerate(order):
            end = order[i + 1] if i + 1 < len(order) else len(data)
            syms = sorted(by_start[start], key=_preference_coff)
            names = [(0, s.name) for s in syms]
            refs = [(off - start, callee) for off, callee in calls.items() if start <= off < end]
            external = bool(syms[0].is_external)
            yield Function(data[start:end], mask[start:end], names, refs, external, str(section.name), start)


def _preference_coff(s: Any) -> tuple[bool, bool, int, str]:
    return (not s.is_external, s.name.startswith("_"), len(s.name), s.name)


def build(
    library: str,
    path: str,
    sha256: str,
    progress: Callable[[int, int], None] | None = None,
    check: Callable[[], None] | None = None,
) -> SignatureSet:
    """The patterns of every function of every object of the library at ``path``."""
    import lief

    lief.logging.disable()
    started = time.monotonic()
    objects = list(members(path))
    lines: list[str] = []
    origins: list[Origin] = []
    seen: set[str] = set()
    for n, (name, data) in enumerate(objects):
        if check is not None:
            check()
        if progress is not None and (n % 64 == 0 or n == len(objects) - 1):
            progress(n + 1, len(objects))
        try:
            binary = lief.parse(data)
        except Exception:  # a member LIEF cannot read (an LTO object, a linker script) signs nothing
            binary = None
        if binary is None:
            continue
        if isinstance(binary, lief.ELF.Binary):
            functions = _elf_functions(binary)
        elif isinstance(binary, lief.COFF.Binary):
            if any(str(s.name).startswith(".idata$") for s in binary.sections):
                continue  # an import library's stub: native names those after their import already
            functions = _coff_functions(binary)
        else:
            continue
        for f in functions:
            line = _pat_line(f.code, f.mask, f.names, f.refs)
            if line is None or line in seen:
                continue
            seen.add(line)
            lines.append(line)
            origins.append(Origin(name, f.global_, len(f.code), len(f.code) - sum(f.mask), f.section, f.offset))
    return SignatureSet(
        library=library,
        sha256=sha256,
        pat="\n".join([*lines, "---"]),
        origins=origins,
        objects=len(objects),
        seconds=round(time.monotonic() - started, 3),
    )


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for piece in iter(lambda: f.read(1 << 20), b""):
            digest.update(piece)
    return digest.hexdigest()


_DIGESTS: dict[tuple[str, int, int, int], str] = {}
_LOCK = threading.Lock()
_HASHING = threading.Lock()


class LibraryDigest(msgspec.Struct, frozen=True, kw_only=True):
    """A library file's SHA-256, kept in the analysis cache under the file's stamp."""

    sha256: str


def _digest_key(path: str, st: os.stat_result) -> CacheKey:
    # The stamp names one version of the file: a rewrite in place moves its ctime even when its mtime is put back.
    stamp = f"{path}\0{st.st_dev}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}"
    return CacheKey(
        kind=DIGEST_KIND,
        target_sha256=hashlib.sha256(stamp.encode("utf-8", "surrogateescape")).hexdigest(),
        provider_id="native",
        provider_version=__version__,
        profile_digest="",
    )


def library_sha256(path: str) -> str:
    """The SHA-256 of a library file, computed once per (path, inode, size, mtime) in this process, and kept in the
    analysis cache under the file's stamp: every open names the libraries' digests in its analysis profile, and
    hashing libc.a again in each CLI process cost it about 20 ms."""
    st = os.stat(path)
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
    with _LOCK:
        known = _DIGESTS.get(key)
    if known is not None:
        return known
    with _HASHING:  # one thread hashes a file (the server's prewarm, or an open), the others wait for its digest
        with _LOCK:
            known = _DIGESTS.get(key)
        if known is not None:
            return known
        cache = _cache()
        kept_key = _digest_key(path, st)
        kept = cache.load(kept_key, LibraryDigest) if cache is not None else None
        if kept is not None:
            known = kept.sha256
        else:
            known = file_sha256(path)
            if cache is not None and _digest_key(path, os.stat(path)) == kept_key:  # one version was hashed: keep it
                cache.store(kept_key, LibraryDigest(sha256=known))
        with _LOCK:
            _DIGESTS[key] = known
    return known


def cache_key(sha256: str) -> CacheKey:
    return CacheKey(
        kind=KIND, target_sha256=sha256, provider_id="native", provider_version=__version__, profile_digest=""
    )


def _cache() -> AnalysisCache | None:
    try:
        return default_cache()
    except ReaError:  # invalid settings are reported by the front ends; here they only mean nothing is kept
        return None


def signatures(
    library: str,
    path: str,
    progress: Callable[[int, int], None] | None = None,
    check: Callable[[], None] | None = None,
) -> tuple[SignatureSet, bool]:
    """The library's patterns from the analysis cache, else built (and kept there); whether they were built now."""
    sha = library_sha256(path)
    with _LOCK:
        kept = _SETS.get(sha)
    if kept is not None:
        return kept, False
    cache = _cache()
    key = cache_key(sha)
    kept = cache.load(key, SignatureSet) if cache is not None else None
    fresh = kept is None
    if kept is None:
        kept = build(library, path, sha, progress, check)
        if cache is not None:
            cache.store(key, kept)
    with _LOCK:
        _SETS[sha] = kept
    return kept, fresh


# The sets this process read or built, by library SHA-256: a session opening many targets (each with its own cache
# settings, as tests do) reads or builds each once.
_SETS: dict[str, SignatureSet] = {}


class Match(NamedTuple):
    """A procedure named by a signature: the library and object it comes from, and how sure the match is."""

    name: str
    library: str
    object: str
    # high: one function of the libraries has these bytes, SURE_BYTES of them known (or its calls or its place
    # confirm it); medium: fewer known; low: several functions have the same bytes and nothing tells them apart (the
    # best placed, then a global one, is shown).
    confidence: str
    candidates: int
    aliases: tuple[str, ...] = ()
    section: str = ""
    offset: int = 0


# Scores a candidate: (the symbols its rel32 fields reach, by offset; its library; its origin) -> evidence.
Judge = Callable[[list[tuple[int, str]], str, Origin], int]


class Matcher:
    """python-flirt's compiled matcher over some libraries' patterns, with each pattern's origin by its names."""

    def __init__(self, sets: list[SignatureSet]) -> None:
        import flirt

        compiled: list[Any] = []
        # A hit's names (public names and references) find its line's origin; lines alike in those share the list.
        self.origins: dict[tuple[Any, ...], list[tuple[str, Origin]]] = {}
        for s in sets:
            parsed = flirt.parse_pat(s.pat)
            compiled.extend(parsed)
            for sig, origin in zip(parsed, s.origins, strict=True):
                self.origins.setdefault(tuple(sig.names), []).append((s.library, origin))
        self.matcher = flirt.compile(compiled)
        self.count = len(compiled)

    def match(self, code: bytes, judge: Judge | None = None) -> Match | None:
        """The library function ``code`` (a procedure's bytes from its start) begins with, if any. Where several
        have these bytes, ``judge`` weighs each (what its calls reach, where its object puts it)."""
        if len(code) < 32:
            code += bytes(32 - len(code))  # a short last procedure: the pattern's wildcards need bytes to read
        hits = self.matcher.match(code)
        if not hits:
            return None
        # The longest functions matched: (score, name, library, origin, aliases).
        best: list[tuple[int, str, str, Origin, tuple[str, ...]]] = []
        for hit in hits:
            names = hit.names
            aliases = tuple(n for n, kind, _ in names if kind == "public")
            refs = [(off, n) for n, kind, off in names if kind == "reference"]
            for library, origin in self.origins.get(tuple(names), ()):
                if best and origin.size < best[0][3].size:
                    continue
                if best and origin.size > best[0][3].size:
                    best = []
                score = judge(refs, library, origin) if judge is not None else 0
                best.append((score, aliases[0], library, origin, aliases))
        if not best:
            return None
        best.sort(key=lambda b: (-b[0], not b[3].global_, b[1].startswith("_"), len(b[1]), b[1]))
        score, name, library, origin, aliases = best[0]
        distinct = len({b[1] for b in best if b[0] == score})
        sure = score >= 0 and distinct == 1
        confidence = "low" if not sure else "high" if origin.known >= SURE_BYTES or score > 0 else "medium"
        return Match(name, library, origin.object, confidence, distinct, aliases, origin.section, origin.offset)


_MATCHERS: dict[tuple[str, ...], Matcher] = {}


def matcher(
    libraries: list[tuple[Library, str]],
    progress: Callable[[str, int, int], None] | None = None,
    check: Callable[[], None] | None = None,
) -> tuple[Matcher, list[SignatureSet]]:
    """The matcher over ``libraries`` (label, path), their patterns built where the analysis cache has none (kept
    per process once compiled); the sets built now are returned with it, to report their cost."""
    sets: list[SignatureSet] = []
    built: list[SignatureSet] = []
    for n, (lib, path) in enumerate(libraries):

        def step(done: int, total: int, label: str = lib.label, n: int = n) -> None:
            if progress is not None:
                progress(f"library signatures: {label} ({n + 1} of {len(libraries)}), object", done, total)

        made, fresh = signatures(lib.label, path, step, check)
        sets.append(made)
        if fresh:
            built.append(made)
    key = tuple(s.sha256 for s in sets)
    with _LOCK:
        found = _MATCHERS.get(key)
    if found is None:
        found = Matcher(sets)
        with _LOCK:
            _MATCHERS.clear()  # one set of libraries per host: the last one compiled is kept
            _MATCHERS[key] = found
    return found, built


def applies(fmt: str, arch: str, linkage: Linkage) -> bool:
    """Whether a binary may carry a runtime's static code: any PE, a static ELF (neither an interpreter nor a needed
    library: a shared library's libc is another file)."""
    if (fmt, arch) not in LIBRARIES:
        return False
    return fmt == "pe" or (linkage.interpreter is None and not linkage.needed)


def unavailable_note(fmt: str, missing: list[Missing]) -> str | None:
    """The limitation a target's answers carry when its runtime's essential library is missing (None otherwise)."""
    essential = ESSENTIAL.get(fmt)
    gone = [m for m in missing if m.label == essential]
    if not gone:
        return None
    return (
        f"library functions are not named: {gone[0].label} is not installed "
        f"(install Debian package {gone[0].package} to name the runtime's functions by signature)"
    )


def name_procedures(program: Any, ctx: Any = None) -> dict[int, Match]:
    """Name ``program``'s unnamed procedures (``sub_*``) after the library functions whose bytes they start with;
    a name from a symbol table, an import or the entry heuristic is never replaced. Each renamed procedure's
    ``name_source`` is ``signature``; its split-off parts (``sub_*.cold``) follow. Returns the matches by address."""
    model = program.model
    if not applies(model.format, model.arch, model.linkage):
        return {}
    procs = [p for p in program.an.procs if p.kind == "local" and p.name_source == "generated"]
    if not procs:
        return {}
    found, missing = locate(model.format, model.arch, program._data)
    note = unavailable_note(model.format, missing)
    if note is not None:
        program.limitations.append(note)
        return {}

    def progress(message: str, done: int, total: int) -> None:
        if ctx is not None:
            ctx.progress(message, done=done, total=total)

    def check() -> None:
        if ctx is not None:
            ctx.check("building library signatures")

    m, _ = matcher(found, progress, check)
    out: dict[int, Match] = {}
    by_addr = program.an.by_addr

    def names_at(target: int) -> frozenset[str]:
        hit = out.get(target)
        if hit is not None:
            return frozenset(hit.aliases or (hit.name,))
        q = by_addr.get(target)
        return frozenset((q.name,)) if q is not None and q.name_source != "generated" else frozenset()

    def code_of(p: Any) -> bytes:
        region = program.code_region_at(p.address)
        if region is None:
            return b""
        return program.read(p.address, min(MAX_PATTERN_BYTES + 32, region.start + region.file_size - p.address)) or b""

    def judge_for(i: int, p: Any, code: bytes) -> Judge:
        """Weighs a candidate for ``procs[i]``: +1 for each rel32 field reaching a function of its symbol's name, -4
        for one reaching another name; +3 where a neighbour named from the same object section sits where that
        section's layout puts it (the linker copies a section whole)."""
        neighbours = [
            (q.address, out[q.address])
            for q in procs[max(0, i - NEIGHBOURS) : i + NEIGHBOURS + 1]
            if q is not p and q.address in out and out[q.address].confidence != "low"
        ]

        def judge(refs: list[tuple[int, str]], library: str, origin: Origin) -> int:
            score = 0
            for off, name in refs:
                if off + 4 <= len(code):
                    rel = int.from_bytes(code[off : off + 4], "little", signed=True)
                    known = names_at(p.address + off + 4 + rel)
                    if known:
                        score += 1 if name in known else -4
            for address, hit in neighbours:
                same = hit.object == origin.object and hit.section == origin.section and hit.library == library
                if same and address - hit.offset == p.address - origin.offset:
                    score += 3
                    break
            return score

        return judge

    # Twice: what the first round names tells the second which of several identical functions a procedure is, and
    # confirms a short one by its calls and its place.
    def try_(n: int) -> None:
        p = procs[n]
        code = code_of(p)
        hit = m.match(code, judge_for(n, p, code)) if code else None
        if hit is not None:
            out[p.address] = hit

    # A binary without the runtime (an MSVC PE, a Go program) is given up on after a sample: the link puts the
    # runtime's objects first and last (crt2.o, libmingwex), around the entry point, or everywhere (glibc).
    entry = next((n for n, p in enumerate(procs) if p.address >= (model.entry or 0)), 0)
    sample = sorted({*range(min(SAMPLE, len(procs))), *range(max(0, len(procs) - SAMPLE), len(procs))})
    sample = sorted({*sample, *range(max(0, entry - 8), min(len(procs), entry + 8))})
    for n in sample:
        try_(n)
    if not out:
        return {}
    tried = set(sample)
    for round_ in range(2):
        for n, p in enumerate(procs):
            if n % 1024 == 0:
                check()
            if round_ == 0 and n in tried:
                continue
            if round_ and (p.address not in out or out[p.address].confidence == "high"):
                continue
            try_(n)
    by_name = program.an.by_name
    for addr, hit in out.items():
        p = by_addr[addr]
        p.name, p.name_source = hit.name, "signature"
        by_name.setdefault(hit.name, p)
    for p in program.an.procs:  # gcc's foo.cold parts found by structure: named after their parent again
        if p.part_of in out and p.name_source == "parent":
            base = out[p.part_of].name
            p.name = f"{base}{p.name[p.name.index('.cold') :]}" if ".cold" in p.name else f"{base}.cold"
            by_name.setdefault(p.name, p)
    if out:
        # The C runtime's start routine may be named now (__libc_start_main): main is the argument the entry passes it.
        program.an._name_main()
    if ctx is not None:
        ctx.progress(f"library signatures: {len(out)} of {len(procs)} unnamed procedures named")
    return out
