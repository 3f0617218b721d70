"""The Mach-O code signature: the SuperBlob in __LINKEDIT (LC_CODE_SIGNATURE) and the blobs it indexes.

No maintained Python library parses these (LIEF hands over the raw bytes only), so they are read here, once. The
layout is Apple's (xnu ``osfmk/kern/cs_blobs.h``, Security framework ``CodeDirectory.h``), all big-endian:

- SuperBlob: ``magic 0xfade0cc0, length, count``, then ``count`` index entries ``(type, offset)``; every offset
  points to a Blob ``(magic, length, payload)`` inside the SuperBlob.
- CodeDirectory (``0xfade0c02``): ``version, flags, hashOffset, identOffset, nSpecialSlots, nCodeSlots, codeLimit,
  hashSize, hashType, platform, pageSize (log2), spare2``; from version 0x20100 ``scatterOffset``, 0x20200
  ``teamOffset``, 0x20300 ``spare3, codeLimit64``, 0x20400 ``execSegBase, execSegLimit, execSegFlags``. Code slot
  ``i`` (at ``hashOffset + i*hashSize``) is the hash of page ``i`` of the file up to ``codeLimit``; special slot
  ``-n`` (at ``hashOffset - n*hashSize``) the hash of another blob (2 requirements, 5 entitlements, 7 DER
  entitlements) or of a bundle file (1 Info.plist, 3 CodeResources).
- Requirements (``0xfade0c01``), entitlements (``0xfade7171``, an XML plist), DER entitlements (``0xfade7172``),
  and the CMS signature (``0xfade0b01``, a PKCS #7 SignedData over the CodeDirectory).

Every length and offset is checked against what holds it: a bad one is ``SignatureError``, never an exception of
``struct`` or an out-of-range slice.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Literal

import msgspec

SUPERBLOB = 0xFADE0CC0
CODEDIRECTORY = 0xFADE0C02
REQUIREMENTS = 0xFADE0C01
ENTITLEMENTS = 0xFADE7171
DER_ENTITLEMENTS = 0xFADE7172
CMS = 0xFADE0B01

SLOT_NAMES = {
    0: "code_directory",
    1: "info_slot",
    2: "requirements",
    3: "resource_directory",
    4: "application",
    5: "entitlements",
    7: "der_entitlements",
    0x10000: "cms_signature",
}
SPECIAL_SLOTS = {
    1: "info_plist",
    2: "requirements",
    3: "code_resources",
    4: "application",
    5: "entitlements",
    7: "der_entitlements",
}
HASH_TYPES = {1: ("sha1", 20), 2: ("sha256", 32), 3: ("sha256", 20), 4: ("sha384", 48)}
HASH_NAMES = {1: "sha1", 2: "sha256", 3: "sha256-truncated", 4: "sha384"}
FLAGS = {
    0x1: "valid",
    0x2: "adhoc",
    0x4: "get_task_allow",
    0x8: "installer",
    0x10: "forced_lv",
    0x20: "invalid_allowed",
    0x100: "hard",
    0x200: "kill",
    0x400: "check_expiration",
    0x800: "restrict",
    0x1000: "enforcement",
    0x2000: "require_lv",
    0x4000: "entitlements_validated",
    0x8000: "nvram_unrestricted",
    0x10000: "runtime",
    0x20000: "linker_signed",
}
EXEC_SEG_FLAGS = {
    0x1: "main_binary",
    0x10: "allow_unsigned",
    0x20: "debugger",
    0x40: "jit",
    0x80: "skip_lv",
    0x100: "can_load_cdhash",
    0x200: "can_exec_cdhash",
}
RUNTIME = 0x10000
MAX_SLOTS = 1 << 22  # 16 GiB of 4 KiB pages: past any real file


class SignatureError(Exception):
    """A SuperBlob or blob whose lengths, offsets or counts do not fit what holds them."""


class CodeDirectory(msgspec.Struct, frozen=True, kw_only=True):
    offset: int  # inside the SuperBlob
    raw: bytes
    version: int
    flags: int
    identifier: str
    team_id: str | None
    hash_type: int
    hash_size: int
    page_size: int
    code_limit: int
    special_slots: int
    code_slots: int
    hash_offset: int
    exec_seg_flags: int

    def slot(self, index: int) -> bytes:
        """The hash in slot ``index`` (negative: a special slot)."""
        at = self.hash_offset + index * self.hash_size
        return self.raw[at : at + self.hash_size]

    def digest(self, data: bytes) -> bytes:
        name, _ = HASH_TYPES[self.hash_type]
        return hashlib.new(name, data).digest()[: self.hash_size]

    @property
    def cd_hash(self) -> str:
        name, _ = HASH_TYPES[self.hash_type]
        return hashlib.new(name, self.raw).hexdigest()[:40]


class Blob(msgspec.Struct, frozen=True):
    slot: int
    magic: int
    offset: int
    raw: bytes  # the whole blob, header included (what a special slot hashes)

    @property
    def payload(self) -> bytes:
        return self.raw[8:]


class Signature(msgspec.Struct, frozen=True, kw_only=True):
    blobs: list[Blob]
    code_directories: list[CodeDirectory]


def _u32(data: bytes, at: int, what: str) -> int:
    if at < 0 or at + 4 > len(data):
        raise SignatureError(f"{what} lies past the end of its blob")
    return int(struct.unpack_from(">I", data, at)[0])


def _cstring(data: bytes, at: int, what: str) -> str:
    if not 0 < at < len(data):
        raise SignatureError(f"{what} lies outside the code directory")
    end = data.find(b"\0", at)
    if end < 0:
        raise SignatureError(f"{what} is not terminated")
    return data[at:end].decode("utf-8", "replace")


def parse(data: bytes) -> Signature:
    """The SuperBlob at the start of ``data`` (LC_CODE_SIGNATURE's bytes), every index entry checked."""
    if _u32(data, 0, "the SuperBlob header") != SUPERBLOB:
        raise SignatureError("the signature does not start with a SuperBlob")
    length = _u32(data, 4, "the SuperBlob length")
    count = _u32(data, 8, "the SuperBlob count")
    if length < 12 or length > len(data):
        raise SignatureError(f"the SuperBlob claims {length} bytes of {len(data)}")
    if count > 64 or 12 + count * 8 > length:
        raise SignatureError(f"the SuperBlob claims {count} entries")
    body = data[:length]
    blobs: list[Blob] = []
    cds: list[CodeDirectory] = []
    for i in range(count):
        slot = _u32(body, 12 + i * 8, "an index entry")
        off = _u32(body, 16 + i * 8, "an index entry")
        if off < 12 + count * 8 or off + 8 > length:
            raise SignatureError(f"blob {i} (slot {slot:#x}) starts outside the SuperBlob")
        magic = _u32(body, off, "a blob header")
        blen = _u32(body, off + 4, "a blob header")
        if blen < 8 or off + blen > length:
            raise SignatureError(f"blob {i} (slot {slot:#x}) claims {blen} bytes past the SuperBlob's end")
        raw = body[off : off + blen]
        blobs.append(Blob(slot, magic, off, raw))
        if magic == CODEDIRECTORY:
            cds.append(code_directory(raw, off))
    return Signature(blobs=blobs, code_directories=cds)


def code_directory(raw: bytes, offset: int = 0) -> CodeDirectory:
    """One CodeDirectory blob (header included), its hash slots checked to lie inside it."""
    if len(raw) < 44:
        raise SignatureError("the code directory is shorter than its header")
    version, flags, hash_offset, ident_offset, n_special, n_code, code_limit = struct.unpack_from(">7I", raw, 8)
    hash_size, hash_type, _platform, page_log = struct.unpack_from(">4B", raw, 36)
    if hash_type not in HASH_TYPES or HASH_TYPES[hash_type][1] < hash_size or hash_size == 0:
        raise SignatureError(f"hash type {hash_type} with {hash_size}-byte hashes is not one rea knows")
    if n_code > MAX_SLOTS or n_special > 64:
        raise SignatureError(f"the code directory claims {n_code} code and {n_special} special slots")
    if hash_offset < n_special * hash_size or hash_offset + n_code * hash_size > len(raw):
        raise SignatureError("the code directory's hash slots lie outside it")
    if page_log and not 9 <= page_log <= 24:
        raise SignatureError(f"page size 2**{page_log} is not one a signer writes")
    team = None
    if version >= 0x20200 and len(raw) >= 52:
        team_offset = _u32(raw, 48, "the team id offset")
        team = _cstring(raw, team_offset, "the team id") if team_offset else None
    if version >= 0x20300 and len(raw) >= 64:
        limit64 = struct.unpack_from(">Q", raw, 56)[0]
        code_limit = limit64 or code_limit
    exec_flags = 0
    if version >= 0x20400 and len(raw) >= 88:
        exec_flags = struct.unpack_from(">Q", raw, 80)[0]
    return CodeDirectory(
        offset=offset,
        raw=raw,
        version=version,
        flags=flags,
        identifier=_cstring(raw, ident_offset, "the identifier"),
        team_id=team,
        hash_type=hash_type,
        hash_size=hash_size,
        page_size=(1 << page_log) if page_log else 0,
        code_limit=code_limit,
        special_slots=n_special,
        code_slots=n_code,
        hash_offset=hash_offset,
        exec_seg_flags=exec_flags,
    )


def verify_pages(cd: CodeDirectory, image: bytes) -> tuple[Literal["valid", "mismatch"], list[int]]:
    """Each code slot against its page of ``image`` (the slice's bytes) up to the code limit."""
    page = cd.page_size or cd.code_limit or 1
    expected_pages = (cd.code_limit + page - 1) // page if cd.code_limit else 0
    bad: list[int] = []
    if cd.code_limit > len(image) or expected_pages != cd.code_slots:
        bad.append(-1)  # the directory does not cover the file it signs
    for i in range(min(cd.code_slots, expected_pages)):
        start = i * page
        chunk = image[start : min(start + page, cd.code_limit)]
        if cd.digest(chunk) != cd.slot(i):
            bad.append(i)
    return ("mismatch" if bad else "valid"), bad


def verify_special(
    cd: CodeDirectory, blobs: list[Blob], files: dict[int, bytes] | None = None
) -> dict[str, Literal["valid", "mismatch", "absent"]]:
    """The special slots that hash another blob of the signature (requirements, entitlements), and those that hash a
    bundle file the caller read (``files``: slot 1 Info.plist, 3 CodeResources), each against what it hashes."""
    by_slot = {b.slot: b.raw for b in blobs if b.slot in (2, 5, 7)}
    by_slot.update(files or {})
    out: dict[str, Literal["valid", "mismatch", "absent"]] = {}
    for n in sorted(by_slot.keys() | {2, 5, 7}):
        if n > cd.special_slots:
            continue
        want = cd.slot(-n)
        data = by_slot.get(n)
        if not any(want):
            if data is not None and n in (2, 5, 7):
                out[SPECIAL_SLOTS[n]] = "mismatch"  # a blob the directory does not vouch for
            elif data is not None:
                out[SPECIAL_SLOTS[n]] = "absent"
            continue
        if data is None:
            if n in (2, 5, 7):
                out[SPECIAL_SLOTS[n]] = "mismatch"
            continue
        out[SPECIAL_SLOTS[n]] = "valid" if cd.digest(data) == want else "mismatch"
    return out


def flag_names(flags: int, table: dict[int, str] = FLAGS) -> list[str]:
    return [name for bit, name in sorted(table.items()) if flags & bit]


# -- building (fixtures and fuzzing use the same layout) --------------------------------------------


def build_code_directory(
    image: bytes,
    identifier: str,
    *,
    flags: int = 0x2,
    team_id: str | None = None,
    page_log: int = 12,
    specials: dict[int, bytes] | None = None,
) -> bytes:
    """A version 0x20400 SHA-256 CodeDirectory over ``image`` (``specials``: slot number to the blob it hashes)."""
    page = 1 << page_log
    n_code = (len(image) + page - 1) // page
    n_special = max(specials or {0: b""}) if specials else 0
    header = 88
    ident = identifier.encode() + b"\0"
    team = (team_id.encode() + b"\0") if team_id else b""
    ident_off = header
    team_off = header + len(ident) if team else 0
    hash_off = header + len(ident) + len(team) + n_special * 32
    total = hash_off + n_code * 32
    out = bytearray(total)
    struct.pack_into(
        ">9I", out, 0, CODEDIRECTORY, total, 0x20400, flags, hash_off, ident_off, n_special, n_code, len(image)
    )
    struct.pack_into(">4B", out, 36, 32, 2, 0, page_log)
    struct.pack_into(">II", out, 44, 0, team_off)
    struct.pack_into(">IQ", out, 52, 0, 0)
    struct.pack_into(">QQQ", out, 64, 0, len(image), 1)
    out[ident_off : ident_off + len(ident)] = ident
    if team:
        out[team_off : team_off + len(team)] = team
    for n, blob in (specials or {}).items():
        at = hash_off - n * 32
        out[at : at + 32] = hashlib.sha256(blob).digest()
    for i in range(n_code):
        at = hash_off + i * 32
        out[at : at + 32] = hashlib.sha256(image[i * page : (i + 1) * page]).digest()
    return bytes(out)


def blob(magic: int, payload: bytes) -> bytes:
    return struct.pack(">II", magic, 8 + len(payload)) + payload


def build_superblob(entries: list[tuple[int, bytes]]) -> bytes:
    """A SuperBlob of ``(slot, blob)`` entries, laid out in order."""
    head = 12 + 8 * len(entries)
    index = bytearray()
    body = bytearray()
    for slot, b in entries:
        index += struct.pack(">II", slot, head + len(body))
        body += b
    return struct.pack(">III", SUPERBLOB, head + len(body), len(entries)) + bytes(index) + bytes(body)
