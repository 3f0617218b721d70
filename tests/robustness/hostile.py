"""Hostile ZIP and ASAR archives, written from Python with a fixed seed.

Hand-written cases cover each named attack (traversal, absolute and colliding names, links, bombs,
truncated or lying directories and headers, invalid UTF-8, nesting, 50,000 entries sharing one offset);
seeded byte flips and cuts of valid archives make up the rest. Each case is an archive file plus, for
ASARs with unpacked entries, the files of its ``.asar.unpacked`` companion.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import random
import stat
import struct
import unicodedata
import warnings
import zipfile
from dataclasses import dataclass
from dataclasses import field
from typing import Any

BLOCK = 4 * 1024 * 1024
FIFO = "\0fifo"  # a companion value no symlink target can be (NUL is not allowed in paths)
SHARED_OFFSET_ENTRIES = 50_000


@dataclass
class ArchiveCase:
    """One hostile archive: its name, bytes, companion files, and the arguments each call gets."""

    name: str
    data: bytes
    description: str
    # str value: a symlink target; FIFO: a named pipe (a read of it would wait for a writer forever).
    companion: dict[str, bytes | str] = field(default_factory=dict)
    args: dict[str, Any] = field(default_factory=dict)


# -- ZIP ---------------------------------------------------------------------------------------------


def zip_bytes(
    members: list[tuple[str, bytes]],
    *,
    compression: int = zipfile.ZIP_DEFLATED,
    modes: dict[str, int] | None = None,
    extras: dict[str, bytes] | None = None,
) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are the point of some cases
        with zipfile.ZipFile(buf, "w", compression) as zf:
            for name, data in members:
                info = zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0))
                info.compress_type = compression
                mode = (modes or {}).get(name)
                if mode is not None:
                    info.create_system = 3
                    info.external_attr = mode << 16
                info.extra = (extras or {}).get(name, b"")
                zf.writestr(info, data)
    return buf.getvalue()


def _cd(data: bytes) -> list[int]:
    """Offsets of every central directory record."""
    out, at = [], data.find(b"PK\x01\x02")
    while at >= 0:
        out.append(at)
        at = data.find(b"PK\x01\x02", at + 4)
    return out


def _eocd(data: bytes) -> int:
    return data.rfind(b"PK\x05\x06")


def _patch(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    buf = bytearray(data)
    struct.pack_into(fmt, buf, offset, value & ((1 << (8 * struct.calcsize(fmt))) - 1))
    return bytes(buf)


def _rename_raw(data: bytes, placeholder: bytes, raw: bytes, *, utf8_flag: bool = True, where: str = "both") -> bytes:
    """Replace a same-length placeholder name by ``raw`` bytes in local header and/or directory."""
    assert len(placeholder) == len(raw)
    buf = bytearray(data)
    local, central = data.find(b"PK\x03\x04"), _cd(data)
    at = bytes(buf).find(placeholder)
    while at >= 0:
        buf[at : at + len(raw)] = raw
        at = bytes(buf).find(placeholder, at + 1)
    if utf8_flag:
        for rec in central:
            name_len = struct.unpack_from("<H", buf, rec + 28)[0]
            if raw in bytes(buf[rec + 46 : rec + 46 + name_len]) and where in ("both", "central"):
                struct.pack_into("<H", buf, rec + 8, struct.unpack_from("<H", buf, rec + 8)[0] | 0x800)
        at = local
        while at >= 0:
            name_len = struct.unpack_from("<H", buf, at + 26)[0]
            if raw in bytes(buf[at + 30 : at + 30 + name_len]) and where in ("both", "local"):
                struct.pack_into("<H", buf, at + 6, struct.unpack_from("<H", buf, at + 6)[0] | 0x800)
            at = bytes(buf).find(b"PK\x03\x04", at + 4)
    return bytes(buf)


def zip_cases() -> list[ArchiveCase]:
    out: list[ArchiveCase] = []

    def add(name: str, data: bytes, description: str, **args: Any) -> None:
        out.append(ArchiveCase(f"zip-{len(out):03d}-{name}.zip", data, description, args=args))

    ok = [("a.txt", b"alpha\n"), ("dir/b.txt", b"bravo\n" * 50), ("dir/sub/c.bin", bytes(range(256)) * 8)]
    base = zip_bytes(ok)
    # Names: traversal, absolute, Windows forms, NUL, control characters, very long.
    for bad in (
        "../evil.txt",
        "a/../../evil.txt",
        "./dot.txt",
        "a//b.txt",
        "..\\evil.txt",
        "a/..",
        "/etc/passwd",
        "C:/Windows/x.exe",
        "C:\\Windows\\x.exe",
        "\\\\server\\share\\x",
        "a\x00b.txt",
        "evil.txt\x00.png",
        "new\nline.txt",
        "\u202etxt.exe",
        "x" * 4000,
        "/".join(["d"] * 300) + "/deep.txt",
        "",
        ".",
        "..",
        "con/aux.txt",
        " space .txt",
    ):
        if "\x00" in bad:  # zipfile cuts a name at NUL: write a stand-in, then put the NUL in the bytes
            stand_in = bad.replace("\x00", "Q")
            data = _rename_raw(
                zip_bytes([*ok, (stand_in, b"payload")]), stand_in.encode(), bad.encode(), utf8_flag=False
            )
        else:
            data = zip_bytes([*ok, (bad, b"payload")])
        add("name", data, f"hostile name {bad[:40]!r}")
    # Duplicates and collisions.
    add("dup", zip_bytes([*ok, ("a.txt", b"second")]), "duplicate name")
    add("case", zip_bytes([("Readme.md", b"1"), ("README.md", b"2"), ("readme.MD", b"3")]), "case-colliding names")
    add(
        "nfc",
        zip_bytes(
            [
                (unicodedata.normalize("NFC", "caf\u00e9.txt"), b"1"),
                (unicodedata.normalize("NFD", "caf\u00e9.txt"), b"2"),
            ]
        ),
        "NFC/NFD-colliding names",
    )
    add("parentfile", zip_bytes([("a", b"file"), ("a/b.txt", b"beneath a file")]), "a file where a directory goes")
    add("dirfile", zip_bytes([("a/", b""), ("a", b"file")]), "a directory and a file of one name")
    add("dupdir", zip_bytes([("d/", b""), ("d/", b""), ("d/x", b"x")]), "duplicate directory entries")
    # Links and special files.
    link = stat.S_IFLNK | 0o777
    add("link-in", zip_bytes([*ok, ("l", b"a.txt")], modes={"l": link}), "inner symlink")
    add("link-out", zip_bytes([*ok, ("l", b"../../../etc")], modes={"l": link}), "escaping symlink")
    add("link-abs", zip_bytes([*ok, ("l", b"/etc/passwd")], modes={"l": link}), "absolute symlink")
    add(
        "link-then-file",
        zip_bytes([("l", b"/tmp"), ("l/x.txt", b"through the link")], modes={"l": link}),
        "a file beneath a symlink",
    )
    add("link-huge", zip_bytes([("l", b"a" * 10000)], modes={"l": link}), "a 10,000-byte link target")
    add("link-self", zip_bytes([("l", b"l")], modes={"l": link}), "a symlink to itself")
    add("fifo", zip_bytes([("p", b"")], modes={"p": stat.S_IFIFO | 0o644}), "a FIFO")
    add("chardev", zip_bytes([("c", b"")], modes={"c": stat.S_IFCHR | 0o644}), "a character device")
    add("setuid", zip_bytes([("s", b"#!/bin/sh\n")], modes={"s": stat.S_IFREG | 0o4755}), "a setuid file")
    # Bombs: by ratio, by declared sizes, by count, by nesting.
    add("bomb-ratio", zip_bytes([("zeros", bytes(24 << 20))]), "24 MiB of zeros, deflated (ratio past 1000:1)")
    add(
        "bomb-ratio-allowed",
        zip_bytes([("zeros", bytes(8 << 20))]),
        "8 MiB of zeros with a raised ratio",
        max_compression_ratio=100000,
        max_total_bytes=16 << 20,
    )
    lying = zip_bytes([("a.txt", b"x" * 100)], compression=zipfile.ZIP_STORED)
    for rec in _cd(lying):
        lying = _patch(lying, rec + 24, "<I", 0xFFFFFFFF)
    add("declared-size", lying, "central directory declares 4 GiB for 100 bytes")
    many = zip_bytes([(f"f{i}", b"") for i in range(300)], compression=zipfile.ZIP_STORED)
    add("count", many, "300 entries against max_entries 100", max_entries=100)
    inner = zip_bytes([("deep.txt", b"bottom")])
    for level in range(8):
        inner = zip_bytes([(f"level{level}.zip", inner)], compression=zipfile.ZIP_STORED)
    add("nest-deep", inner, "archives nested 9 deep (max_depth 4)")
    add(
        "nest-bomb",
        zip_bytes(
            [("inner.zip", zip_bytes([(f"z{i}", bytes(4 << 20)) for i in range(4)]))], compression=zipfile.ZIP_STORED
        ),
        "nested 16 MiB against max_total_bytes 8 MiB",
        max_total_bytes=8 << 20,
        max_compression_ratio=100000,
    )
    # Overlapping entries: every directory record points at the first local header.
    over = zip_bytes([(f"o{i}", b"Z" * 1000) for i in range(20)])
    for rec in _cd(over):
        over = _patch(over, rec + 42, "<I", 0)
    add("overlap", over, "20 directory records sharing one local header")
    # Truncated and lying directories.
    cd0, end = _cd(base)[0], _eocd(base)
    for cut in (cd0 + 10, cd0 + 46, (cd0 + end) // 2, end, end + 10, len(base) - 1):
        add("cut", base[:cut], f"cut at {cut} of {len(base)} (inside the central directory or end record)")
    add("eocd-offset", _patch(base, end + 16, "<I", 0x7FFFFFFF), "end record's directory offset past EOF")
    add("eocd-offset-ff", _patch(base, end + 16, "<I", 0xFFFFFFFF), "end record's directory offset 0xffffffff")
    add("eocd-offset-0", _patch(base, end + 16, "<I", 0), "end record's directory offset 0")
    add("eocd-size", _patch(base, end + 12, "<I", 0xFFFFFFF0), "end record's directory size past EOF")
    add("eocd-size-0", _patch(base, end + 12, "<I", 0), "end record's directory size 0")
    add("eocd-count", _patch(_patch(base, end + 8, "<H", 0xFFFF), end + 10, "<H", 0xFFFF), "entry counts 0xffff")
    add("eocd-comment", _patch(base, end + 20, "<H", 0xFFFF), "comment length past EOF")
    add("eocd-disk", _patch(base, end + 4, "<H", 7), "a multi-disk archive")
    add("two-eocd", base + base[end:], "two end records")
    add("no-eocd", base[:end], "no end record")
    locator = base[:end] + struct.pack("<4sIQI", b"PK\x06\x07", 0, 0xFFFFFFFFFFFF, 1) + base[end:]
    add("zip64-locator", locator, "a ZIP64 locator pointing past EOF")
    z64 = _patch(base, end + 16, "<I", 0xFFFFFFFF)
    add(
        "zip64-marker",
        z64[:end] + struct.pack("<4sIQI", b"PK\x06\x07", 0, 0, 1) + z64[end:],
        "ZIP64 markers with a locator at offset 0",
    )
    for rec in _cd(base)[:1]:
        add("cd-name-len", _patch(base, rec + 28, "<H", 0xFFFF), "directory name length past the directory")
        add("cd-extra-len", _patch(base, rec + 30, "<H", 0xFFFF), "directory extra length past the directory")
        add("cd-local-off", _patch(base, rec + 42, "<I", 0xFFFFFFF0), "local header offset past EOF")
        add("cd-version", _patch(base, rec + 6, "<H", 0x3FF), "extract version 102.3")
        add("cd-method-99", _patch(base, rec + 10, "<H", 99), "compression method 99 (AES marker)")
        add("cd-method-9", _patch(base, rec + 10, "<H", 9), "Deflate64")
        add("cd-method-14", _patch(base, rec + 10, "<H", 14), "LZMA over deflate bytes")
        add("cd-method-12", _patch(base, rec + 10, "<H", 12), "bzip2 over deflate bytes")
        add("cd-encrypted", _patch(base, rec + 8, "<H", 1), "encrypted flag")
        add("cd-strong", _patch(base, rec + 8, "<H", 0x40), "strong-encryption flag")
        add("cd-patched", _patch(base, rec + 8, "<H", 0x20), "compressed-patched-data flag")
    for extra, what in (
        (struct.pack("<HH", 1, 16) + bytes(8), "a ZIP64 extra field shorter than it says"),
        (struct.pack("<HH", 1, 8) + b"\xff" * 8, "a ZIP64 extra field declaring 2**64-1 bytes"),
        (struct.pack("<HH", 0x5455, 0xFFFF), "an extra field running past its record"),
    ):
        add("extra", zip_bytes([("x.txt", b"x")], extras={"x.txt": extra}), what)
    local = base.find(b"PK\x03\x04")
    add("local-name-len", _patch(base, local + 26, "<H", 0xFFFF), "local name length past EOF")
    add("local-magic", _patch(base, local, "<I", 0), "local header magic zeroed")
    add("local-name-differs", base.replace(b"a.txt", b"b.txt", 1), "local header names a different file")
    corrupt = bytearray(zip_bytes([("big.txt", bytes(range(256)) * 400)]))
    data_at = corrupt.find(b"big.txt") + 7
    corrupt[data_at + 20 : data_at + 40] = b"\xff" * 20
    add("deflate-corrupt", bytes(corrupt), "corrupt deflate stream")
    stored = zip_bytes([("a.txt", b"A" * 64), ("b.txt", b"B" * 64)], compression=zipfile.ZIP_STORED)
    crc = stored.replace(b"A" * 64, b"X" + b"A" * 63)
    add("crc", crc, "CRC-32 contradicted")
    add("crc-continue", crc, "CRC-32 contradicted, record-and-continue", integrity_policy="record-and-continue")
    add(
        "lzma-garbage",
        zip_bytes([("x", b"hello" * 100)], compression=zipfile.ZIP_LZMA).replace(b"hello", b"\xff\xfe\xfd\xfc\xfb", 3),
        "corrupt LZMA data",
    )
    add(
        "bz2-garbage",
        _patch(zip_bytes([("x", b"hello" * 100)], compression=zipfile.ZIP_BZIP2), 40, "<I", 0xFFFFFFFF),
        "corrupt bzip2 data",
    )
    # Invalid UTF-8 names flagged as UTF-8: in both records, only the local header, only the directory.
    for raw, where in (
        (b"bad\x98\x98.txt", "both"),
        (b"bad\xff\xfe.txt", "both"),
        (b"bad\xc0\xaf.txt", "both"),
        (b"bad\xed\xa0\x80.txt", "both"),
        (b"bad\x98\x98.txt", "local"),
        (b"bad\x98\x98.txt", "central"),
    ):
        placeholder = b"bad" + b"Q" * (len(raw) - 7) + b".txt"
        data = zip_bytes([*ok, (placeholder.decode(), b"named badly")], compression=zipfile.ZIP_STORED)
        add("utf8", _rename_raw(data, placeholder, raw, where=where), f"invalid UTF-8 name {raw!r} ({where})")
    many_bad = zip_bytes([(f"b{i}QQ.txt", b"x") for i in range(20)] + ok, compression=zipfile.ZIP_STORED)
    for i in range(0, 20, 2):
        many_bad = _rename_raw(many_bad, f"b{i}QQ.txt".encode(), f"b{i}\x98\x98.txt".encode("latin-1"))
    add("utf8-many", many_bad, "ten invalid UTF-8 names among valid ones")
    add(
        "cp437",
        _rename_raw(zip_bytes([("cpQQ.txt", b"x")]), b"cpQQ.txt", b"cp\x98\x99.txt", utf8_flag=False),
        "CP437 name (no UTF-8 flag)",
    )
    # Nested archives of both kinds, valid and broken.
    asar = asar_bytes(*build_asar({"main.js": b"console.log(1)\n"}))
    add("nest-asar", zip_bytes([("app.asar", asar), *ok], compression=zipfile.ZIP_STORED), "an ASAR inside a ZIP")
    add(
        "nest-bad-zip",
        zip_bytes([("inner.zip", base[: len(base) // 2]), *ok], compression=zipfile.ZIP_STORED),
        "a truncated ZIP inside a ZIP",
    )
    add(
        "nest-bad-asar",
        zip_bytes([("x.asar", asar[:30]), *ok], compression=zipfile.ZIP_STORED),
        "a truncated ASAR inside a ZIP",
    )
    add(
        "nest-self",
        zip_bytes([("self.zip", base), ("again.zip", base)], compression=zipfile.ZIP_STORED),
        "the same ZIP nested twice",
    )
    add(
        "apk",
        zip_bytes([("AndroidManifest.xml", b"\x03\x00"), ("classes.dex", b"dex\n035"), ("../x", b"")]),
        "an APK with a traversal entry",
    )
    add("empty", zip_bytes([]), "an empty archive")
    add("only-eocd", b"PK\x05\x06" + bytes(18), "only an end record")
    add("garbage", b"PK\x03\x04" + bytes(range(256)) * 4, "a local header magic and garbage")
    return out


# -- ASAR --------------------------------------------------------------------------------------------


def integrity(data: bytes, block: int = BLOCK) -> dict[str, Any]:
    blocks = [hashlib.sha256(data[i : i + block]).hexdigest() for i in range(0, len(data), block)] or [
        hashlib.sha256(b"").hexdigest()
    ]
    return {"algorithm": "SHA256", "hash": hashlib.sha256(data).hexdigest(), "blockSize": block, "blocks": blocks}


def asar_bytes(header: Any, data: bytes = b"", *, raw_json: bytes | None = None) -> bytes:
    """Serialize an ASAR the way Chromium's Pickle does: size pickle, header pickle, then data."""
    text = raw_json if raw_json is not None else json.dumps(header).encode()
    padded = text + b"\0" * (-len(text) % 4)
    header_pickle = struct.pack("<II", len(padded) + 4, len(text)) + padded
    return struct.pack("<II", 4, len(header_pickle)) + header_pickle + data


def build_asar(
    files: dict[str, bytes],
    *,
    unpacked: tuple[str, ...] = (),
    links: dict[str, str] | None = None,
    with_integrity: bool = True,
) -> tuple[dict[str, Any], bytes]:
    """A header and data region for ``files`` (nested directories from '/' in names)."""
    root: dict[str, Any] = {"files": {}}
    data = b""
    for rel in sorted(files):
        node = root
        parts = rel.split("/")
        for part in parts[:-1]:
            node = node["files"].setdefault(part, {"files": {}})
        content = files[rel]
        entry: dict[str, Any] = {"size": len(content)}
        if with_integrity:
            entry["integrity"] = integrity(content)
        if rel in unpacked:
            entry["unpacked"] = True
        else:
            entry["offset"] = str(len(data))
            data += content
        node["files"][parts[-1]] = entry
    for rel, target in (links or {}).items():
        node = root
        parts = rel.split("/")
        for part in parts[:-1]:
            node = node["files"].setdefault(part, {"files": {}})
        node["files"][parts[-1]] = {"link": target}
    return root, data


APP = {
    "package.json": b'{"name":"app","main":"main.js"}\n',
    "main.js": b"require('./lib/a.js')\n",
    "lib/a.js": b"module.exports = 1\n",
    "lib/b.js": b"exports.b = 2\n" * 40,
    "native/x.node": b"\x7fELF...",
}


def asar_cases() -> list[ArchiveCase]:
    out: list[ArchiveCase] = []

    def add(
        name: str, data: bytes, description: str, companion: dict[str, bytes | str] | None = None, **args: Any
    ) -> None:
        out.append(ArchiveCase(f"asar-{len(out):03d}-{name}.asar", data, description, companion or {}, args))

    header, data = build_asar(APP)
    good = asar_bytes(header, data)
    add("good", good, "a well-formed ASAR")
    # The prefix: size pickle, header size, payload and string lengths.
    for off, value, what in (
        (0, 8, "size pickle 8"),
        (4, 0xFFFFFFFF, "header size 0xffffffff"),
        (4, 1 << 27, "header size 128 MiB"),
        (4, 3, "header size 3"),
        (8, 0, "payload length 0"),
        (12, 0xFFFFFFF0, "string length past payload"),
        (12, 0, "string length 0"),
        (4, len(good), "header size past EOF"),
    ):
        add("prefix", _patch(good, off, "<I", value), what)
    for cut in (0, 7, 15, 16, 40, len(good) - len(data) - 1, len(good) - 1):
        add("cut", good[:cut], f"cut at {cut} of {len(good)}")
    # The header's JSON.
    for raw in (
        b"{",
        b"[]",
        b"null",
        b'"files"',
        b'{"files": []}',
        b'{"files": null}',
        b'{"nofiles": {}}',
        b'{"files": {"a": 1}}',
        b'{"files": {"a": {"size": -1, "offset": "0"}}}',
        b'{"files": {"a": {"size": "1", "offset": "0"}}}',
        b'{"files": {"a": {"size": 1.5, "offset": "0"}}}',
        b'{"files": {"a": {"size": 9007199254740993, "offset": "0"}}}',
        b'{"files": {"a": {"size": 1, "offset": "-1"}}}',
        b'{"files": {"a": {"size": 1, "offset": "1e3"}}}',
        b'{"files": {"a": {"size": 1, "offset": "0x10"}}}',
        b'{"files": {"a": {"size": 1, "offset": " 1"}}}',
        b'{"files": {"a": {"size": 1, "offset": "\xd9\xa1"}}}',
        b'{"files": {"a": {"size": 1, "offset": "99999999999999999999999999"}}}',
        b'{"files": {"a": {"size": 1}}}',
        b'{"files": {"a": {"offset": "0"}}}',
        b'{"files": {"a": {"files": {}, "size": 1, "offset": "0"}}}',
        b'{"files": {"a": {"size": 1, "offset": "0"}, "a": {"size": 1, "offset": "0"}}}',
        b'{"files": {"A.js": {"size": 1, "offset": "0"}, "a.js": {"size": 1, "offset": "0"}}}',
        b'{"files": {"a": {"link": 5}}}',
        b'{"files": {"a": {"link": "../../etc/passwd"}}}',
        b'{"files": {"a": {"link": "/etc/passwd"}}}',
        b'{"files": {"a": {"link": "a"}}}',
        b'{"files": {"a": {"link": "b"}, "b": {"link": "a"}}}',
        b'{"files": {"a": {"unpacked": "yes", "size": 1}}}',
        b'{"files": {"\\u0000": {"size": 1, "offset": "0"}}}',
        b'{"files": {"\\ud800": {"size": 1, "offset": "0"}}}',
        b"\xff\xfe{}",
        b'{"files": {}}  trailing',
        b'{"files": {"a": {"size": 1, "offset": "0", "executable": "yes"}}}',
        b'{"files": {"a": {"size": 1, "offset": "0", "integrity": {"algorithm": "MD5", "hash": "x"}}}}',
    ):
        add("json", asar_bytes(None, b"abcd", raw_json=raw), f"header {raw[:60]!r}")
    deep = b'{"files": {"d": ' * 2000 + b'{"files": {}}' + b"}}" * 2000
    add("deep", asar_bytes(None, b"", raw_json=deep), "directories nested 2000 deep")
    ok_deep: dict[str, Any] = {"files": {"leaf.txt": {"size": 1, "offset": "0"}}}
    for _ in range(300):
        ok_deep = {"files": {"d": ok_deep}}
    add("deep-valid", asar_bytes(ok_deep, b"x"), "a valid path 301 components deep")
    # Names.
    for bad in ("..", ".", "", "a/b", "a\\b", "C:", "con", "x" * 5000, "\n", "\u202e"):
        hdr = {"files": {bad: {"size": 1, "offset": "0"}, "ok.txt": {"size": 1, "offset": "1"}}}
        add("name", asar_bytes(hdr, b"ab"), f"entry name {bad[:30]!r}")
    hdr = {
        "files": {
            "..": {"files": {"evil.txt": {"size": 1, "offset": "0"}}},
            "x": {"files": {"y/../../z.txt": {"size": 1, "offset": "1"}}},
            "ok.txt": {"size": 1, "offset": "2"},
        }
    }
    add("traversal-dirs", asar_bytes(hdr, b"abc"), "traversal through directory names")
    hdr = {
        "files": {
            "Main.js": {"size": 1, "offset": "0"},
            "main.js": {"size": 1, "offset": "1"},
            unicodedata.normalize("NFD", "\u00e9.js"): {"size": 1, "offset": "0"},
            unicodedata.normalize("NFC", "\u00e9.js"): {"size": 1, "offset": "1"},
        }
    }
    add("collide", asar_bytes(hdr, b"ab"), "case- and normalization-colliding names")
    hdr = {
        "files": {
            "l": {"link": "lib"},
            "lib": {"files": {"a.js": {"size": 1, "offset": "0"}}},
            "esc": {"link": "../../../../etc"},
            "abs": {"link": "/etc"},
        }
    }
    add("links", asar_bytes(hdr, b"a"), "inner, escaping and absolute links")
    # Offsets and sizes that lie.
    for size, offset, what in (
        (1, str(1 << 40), "offset 2**40"),
        (1 << 40, "0", "size 2**40"),
        (10, "4", "runs past the data"),
        (0, "999999", "empty at a far offset"),
        (5, "0", "exact fit"),
    ):
        add("extent", asar_bytes({"files": {"a": {"size": size, "offset": offset}}}, b"hello"), what)
    # Integrity that lies.
    hdr, dat = build_asar({"a.js": b"A" * 100, "b.js": b"B" * 100})
    bad = dat.replace(b"A" * 100, b"X" + b"A" * 99)
    add("integrity", asar_bytes(hdr, bad), "a contradicted hash")
    add(
        "integrity-continue",
        asar_bytes(hdr, bad),
        "a contradicted hash, record-and-continue",
        integrity_policy="record-and-continue",
    )
    for mutate, what in (
        (lambda i: i.update(blockSize=0), "blockSize 0"),
        (lambda i: i.update(blockSize=-5), "blockSize negative"),
        (lambda i: i.update(blockSize=1), "blockSize 1 with one block"),
        (lambda i: i.update(blocks=[]), "no blocks"),
        (lambda i: i.update(blocks=["00" * 32] * 1000), "1000 blocks for 100 bytes"),
        (lambda i: i.update(hash="ZZ" * 32), "a non-hex hash"),
        (lambda i: i.update(hash="AB" * 32), "an upper-case hash"),
        (lambda i: i.update(hash="ab"), "a short hash"),
        (lambda i: i.update(blocks="abc"), "blocks not a list"),
        (lambda i: i.update(algorithm="SHA1"), "algorithm SHA1"),
        (lambda i: i.pop("hash"), "no hash"),
    ):
        hdr2 = json.loads(json.dumps(hdr))
        mutate(hdr2["files"]["a.js"]["integrity"])
        add("integrity-shape", asar_bytes(hdr2, dat), what, integrity_policy="record-and-continue")
    # Unpacked entries: missing companion, companion with a link out, companion that is a directory.
    hdr, dat = build_asar(APP, unpacked=("native/x.node",))
    packed = asar_bytes(hdr, dat)
    add("unpacked-missing", packed, "an unpacked entry without its companion")
    add("unpacked", packed, "an unpacked entry with its companion", {"native/x.node": APP["native/x.node"]})
    add("unpacked-link", packed, "a companion file that is a symlink out", {"native/x.node": "/etc/passwd"})
    add(
        "unpacked-wrong",
        packed,
        "a companion whose bytes contradict the header",
        {"native/x.node": b"tampered"},
        integrity_policy="record-and-continue",
    )
    add("unpacked-dirlink", packed, "a companion directory that is a symlink", {"native": "/etc"})
    add("unpacked-fifo", packed, "a companion file that is a FIFO (issue 24)", {"native/x.node": FIFO})
    fifo_hdr, fifo_dat = build_asar(APP, unpacked=("main.js", "lib/a.js"))
    add(
        "unpacked-fifos",
        asar_bytes(fifo_hdr, fifo_dat),
        "the main script and a module as FIFOs (issue 24)",
        {"main.js": FIFO, "lib/a.js": FIFO},
    )
    # Nested archives.
    zipped = zip_bytes([("inner.txt", b"inner")])
    nested_hdr, nested_data = build_asar({"app.zip": zipped, "inner.asar": good, "main.js": b"1"})
    add("nested", asar_bytes(nested_hdr, nested_data), "a ZIP and an ASAR inside an ASAR")
    # Many entries sharing one offset: cheap to list, expensive to write.
    shared = b"S" * 64
    tree: dict[str, Any] = {"files": {}}
    for i in range(SHARED_OFFSET_ENTRIES):
        folder = tree["files"].setdefault(f"d{i // 1000:02d}", {"files": {}})
        folder["files"][f"f{i:05d}.js"] = {"size": len(shared), "offset": "0"}
    add("shared-50k", asar_bytes(tree, shared), f"{SHARED_OFFSET_ENTRIES} entries sharing one offset")
    wide = {"files": {f"f{i}": {"size": 1, "offset": "0"} for i in range(3000)}}
    add("shared-3k-limit", asar_bytes(wide, b"x"), "3000 entries against max_entries 1000", max_entries=1000)
    return out


# -- seeded damage to valid archives -----------------------------------------------------------------


def damaged(seed: int, count: int) -> list[ArchiveCase]:
    """``count`` byte-flipped, cut or field-overwritten copies of a few valid archives."""
    rng = random.Random(seed)
    header, data = build_asar(APP)
    bases = {
        "zip": zip_bytes([(k, v) for k, v in APP.items()]),
        "zip-stored": zip_bytes([(k, v) for k, v in APP.items()], compression=zipfile.ZIP_STORED),
        "asar": asar_bytes(header, data),
        "zip-nested": zip_bytes(
            [("app.asar", asar_bytes(header, data)), ("x.zip", zip_bytes([("y", b"y")]))],
            compression=zipfile.ZIP_STORED,
        ),
    }
    out = []
    names = sorted(bases)
    for i in range(count):
        kind = names[i % len(names)]
        buf = bytearray(bases[kind])
        how = rng.randrange(4)
        if how == 0:
            n = rng.randint(1, 24)
            # Mostly where the structure is: the ZIP directory at the end, the ASAR header at the start.
            lo, hi = (0, min(len(buf), 600)) if kind == "asar" else (max(0, len(buf) - 400), len(buf))
            if rng.random() < 0.3:
                lo, hi = 0, len(buf)
            for _ in range(n):
                j = rng.randrange(lo, hi)
                buf[j] ^= 1 << rng.randrange(8)
            what = f"{n} bit flips"
        elif how == 1:
            cut = rng.randrange(1, len(buf))
            del buf[cut:]
            what = f"cut at {cut}"
        elif how == 2:
            j = rng.randrange(len(buf) - 4)
            value = rng.choice((0, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, len(buf), rng.getrandbits(32)))
            struct.pack_into("<I", buf, j, value)
            what = f"u32 at {j} := {value:#x}"
        else:
            j = rng.randrange(len(buf))
            n = rng.randint(2, 64)
            buf[j : j + n] = bytes(rng.getrandbits(8) for _ in range(min(n, len(buf) - j)))
            what = f"random run of {n} at {j}"
        ext = "asar" if kind == "asar" else "zip"
        policy = {"integrity_policy": "record-and-continue"} if rng.random() < 0.3 else {}
        out.append(ArchiveCase(f"damaged-{i:04d}-{kind}.{ext}", bytes(buf), f"{kind}: {what}", args=policy))
    return out


def all_cases(seed: int, total: int) -> list[ArchiveCase]:
    """The hand-written cases, then seeded damage up to ``total``."""
    named = zip_cases() + asar_cases() + issue24_cases()
    return named + damaged(seed, max(0, total - len(named)))


# -- issue 24: bombs that stay under the per-entry checks, and directories too large to materialize ---------

ISSUE24 = "[issue 24 bomb]"


def many_entries_zip(count: int, *, name_len: int = 8, last_declares: int = 0) -> bytes:
    """A ZIP of ``count`` empty stored files, packed directly (zipfile takes minutes for a million); the last
    may declare ``last_declares`` uncompressed bytes (a ratio bomb behind every other record)."""
    local, central = [], []
    offset = 0
    for i in range(count):
        name = (b"f%07d" % i).ljust(name_len, b"n")
        size = last_declares if i == count - 1 else 0
        header = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0x21, 0, 0, size, len(name), 0) + name
        central.append(
            struct.pack(
                "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0x21, 0, 0, size, len(name), 0, 0, 0, 0, 0, offset
            )
            + name
        )
        local.append(header)
        offset += len(header)
    directory = b"".join(central)
    count16 = min(count, 0xFFFF)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count16, count16, len(directory), offset, 0)
    return b"".join(local) + directory + end


def bzip2_lying_zip(expanded: int) -> bytes:
    """One bzip2 member whose directory declares its compressed size as its size; it expands to ``expanded``."""
    import bz2

    packed = bz2.compress(bytes(expanded), 9)
    data = zip_bytes([("b", b"A" * len(packed))], compression=zipfile.ZIP_STORED).replace(b"A" * len(packed), packed)
    for rec in _cd(data):
        data = _patch(data, rec + 10, "<H", zipfile.ZIP_BZIP2)
    return _patch(data, 8, "<H", zipfile.ZIP_BZIP2)


def overlapping_zip(copies: int, member: bytes) -> bytes:
    """``copies`` directory records of one deflated member: a bomb whose every entry is under the ratio limit."""
    one = zip_bytes([("k", member)])
    cd, end = _cd(one)[0], _eocd(one)
    records = one[cd:end] * copies
    tail = bytearray(one[end : end + 22])
    struct.pack_into("<HHII", tail, 8, copies, copies, len(records), cd)
    return one[:cd] + records + bytes(tail)


def nested_large_zip(inner_bytes: int) -> bytes:
    """A ZIP holding a stored ZIP of ``inner_bytes`` (deflated outside, under the ratio limit)."""
    chunk = bytes((1 << 20) - 256) + random.Random(24).randbytes(256)
    inner = zip_bytes([("z", chunk * (inner_bytes >> 20))], compression=zipfile.ZIP_STORED)
    return zip_bytes([("inner.zip", inner)])


def issue24_cases() -> list[ArchiveCase]:
    member = bytes(60 << 20) + random.Random(7).randbytes(4 << 10)  # 60 MiB at about 990:1 once deflated
    return [
        ArchiveCase(
            "bomb24-entries.zip",
            many_entries_zip(300_000),
            f"300,000 entries against the 200,000 limit, refused while the directory is read {ISSUE24}",
        ),
        ArchiveCase(
            "bomb24-entries-lying.zip",
            _patch(_patch(many_entries_zip(300_000), -22 + 8, "<H", 10), -22 + 10, "<H", 10),
            f"300,000 entries under an end record that declares 10 {ISSUE24}",
        ),
        ArchiveCase(
            "bomb24-bzip2.zip",
            bzip2_lying_zip(1 << 30),
            f"a 700-byte bzip2 member that expands to 1 GiB, sizes declared honest-looking {ISSUE24}",
        ),
        ArchiveCase(
            "bomb24-overlap.zip",
            overlapping_zip(60, member),
            f"60 directory records of one 60 MiB member (3.5 GiB from 70 KB) {ISSUE24}",
        ),
        ArchiveCase(
            "bomb24-nested.zip",
            nested_large_zip(300 << 20),
            f"a 300 MiB ZIP nested in a 0.5 MiB one, read without holding it in memory {ISSUE24}",
        ),
        # Formats no unpacker reads: refused at once, nothing decompressed.
        ArchiveCase(
            "bomb24-endless.gz", gzip.compress(b"") * 20_000, f"gzip of 20,000 concatenated empty members {ISSUE24}"
        ),
        ArchiveCase("bomb24-sparse.tar", sparse_tar(1 << 40), f"a tar declaring a 1 TiB sparse member {ISSUE24}"),
    ]


def sparse_tar(size: int) -> bytes:
    """A GNU tar header for a sparse member of ``size`` bytes (base-256 size field), and no data."""
    header = bytearray(512)
    header[:9] = b"huge.bin\0"
    header[100:108] = b"0000644\0"
    header[124:136] = b"\x80" + size.to_bytes(11, "big")
    header[156:157] = b"S"
    header[257:265] = b"ustar  \0"
    header[148:156] = b" " * 8
    header[148:155] = b"%06o\0" % sum(header)
    return bytes(header) + bytes(1024)
