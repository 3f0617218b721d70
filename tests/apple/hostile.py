"""Hostile Apple inputs mutated from the session's fixtures (fixed seed): Mach-O headers and load commands, universal
headers, code signatures, Objective-C metadata, keyed archives and plists."""

from __future__ import annotations

import io
import plistlib
import random
import struct
import zipfile

from tests.apple import applefixtures as fx

SEED = 50


def _signature_offset(data: bytes) -> int:
    """Where the SuperBlob of a thin Mach-O lies (LC_CODE_SIGNATURE's dataoff)."""
    ncmds, _ = struct.unpack_from("<II", data, 16)
    at = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        if cmd == 0x1D:
            return int(struct.unpack_from("<I", data, at + 8)[0])
        at += size
    raise ValueError("no LC_CODE_SIGNATURE")


def _zip(entries: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return buf.getvalue()


def cases(built: fx.Built) -> dict[str, tuple[bytes, str]]:
    """name -> (bytes, the structure it damages)."""
    rng = random.Random(SEED)
    ios, fat, signed = built.ios.read_bytes(), built.fat.read_bytes(), built.signed.read_bytes()
    out: dict[str, tuple[bytes, str]] = {}

    def put(name: str, data: bytes | bytearray, what: str) -> None:
        out[name] = (bytes(data), what)

    # Load commands: sizeofcmds and ncmds past the end, the file cut inside them.
    for value in (0x7FFFFFFF, len(ios), 0xFFFFFFFF):
        b = bytearray(ios)
        struct.pack_into("<I", b, 20, value)
        put(f"sizeofcmds-{value:#x}.macho", b, "load commands past the end")
    b = bytearray(ios)
    struct.pack_into("<I", b, 16, 0xFFFF)
    put("ncmds-ffff.macho", b, "load command count")
    for cut in (28, 40, 600, 2000):
        put(f"cut-{cut}.macho", ios[:cut], "cut inside the load commands")
    b = bytearray(ios)
    struct.pack_into("<I", b, 32 + 4, 0)  # the first command's cmdsize 0: a loop that never advances
    put("cmdsize-zero.macho", b, "load command size")
    # Universal headers: overlapping slices, a slice past the end, a huge count.
    b = bytearray(fat)
    first_offset = struct.unpack_from(">I", b, 8 + 8)[0]
    struct.pack_into(">I", b, 8 + 20 + 8, first_offset)
    put("fat-overlap.macho", b, "overlapping fat slices")
    b = bytearray(fat)
    struct.pack_into(">I", b, 8 + 20 + 12, 0x7FFFFFFF)
    put("fat-slice-past-end.macho", b, "fat slice size")
    b = bytearray(fat)
    struct.pack_into(">I", b, 4, 0xFFFFFFFF)
    put("fat-count.macho", b, "fat slice count")
    put("fat-header-only.macho", fat[:48], "fat file cut after its header")
    # Code signatures: SuperBlob length, count, index offsets, a blob's length, the CodeDirectory's slots.
    sig = _signature_offset(signed)
    for name, at, value in (
        ("superblob-length", 4, 0x7FFFFFFF),
        ("superblob-count", 8, 0x10000),
        ("index-offset", 16, 0xFFFFFFF0),
        ("cd-length", 20 + 4, 0x7FFFFFFF),  # the first blob's own length (its offset is index 0's value)
    ):
        b = bytearray(signed)
        if name == "cd-length":
            blob = struct.unpack_from(">I", b, sig + 16)[0]
            struct.pack_into(">I", b, sig + blob + 4, value)
        else:
            struct.pack_into(">I", b, sig + at, value)
        put(f"sig-{name}.macho", b, "code signature blob lengths")
    b = bytearray(signed)
    blob = struct.unpack_from(">I", b, sig + 16)[0]
    struct.pack_into(">I", b, sig + blob + 28, 0x7FFFFFFF)  # nCodeSlots
    put("sig-cd-slots.macho", b, "code directory slot count")
    # Byte flips anywhere in the first 64 KiB of a slice (headers, code, Objective-C metadata, linkedit).
    for i in range(30):
        b = bytearray(ios)
        for _ in range(rng.randrange(1, 24)):
            b[rng.randrange(0x20, min(len(b), 1 << 16))] = rng.randrange(256)
        put(f"flip-{i}.macho", b, "byte flips")
    # Objective-C lists with hostile counts: every 4-byte word of __objc_const set to a huge value, in turn.
    for i in range(12):
        b = bytearray(ios)
        at = 0xC120 + 4 * rng.randrange(0, 200)
        struct.pack_into("<I", b, at, rng.choice((0xFFFFFFFF, 0x7FFFFFFF, 0x10000)))
        put(f"objc-word-{i}.macho", b, "Objective-C metadata")
    # Swift type records: words of the Swift sections set to hostile values (relative offsets, counts, sizes).
    swift = built.swift.read_bytes()
    start = swift.find(b"\x51\x00\x00\x00")  # Demo.Point's descriptor flags: the records follow it
    for i in range(16):
        b = bytearray(swift)
        at = start + 4 * rng.randrange(0, 60)
        struct.pack_into("<I", b, at, rng.choice((0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0x10000, 1)))
        put(f"swift-word-{i}.macho", b, "Swift type metadata")
    # .ipa files: no Payload folder, a damaged executable, a cut archive.
    ipa = built.ipa.read_bytes()
    put("no-payload.ipa", _zip([("Demo.app/Demo", ios)]), "an .ipa without Payload/")
    put("bad-exe.ipa", _zip([("Payload/X.app/X", fat[:5000]), ("Payload/X.app/Info.plist", b"<plist")]), "damaged")
    put("cut.ipa", ipa[: len(ipa) // 2], "a cut .ipa")
    # Keyed archives and plists.
    put("recursive.plist", fx.recursive_archive(), "recursive keyed archive")
    arch = plistlib.loads(built.keyed_archive.read_bytes())
    arch["$objects"][1] = {"NS.keys": [plistlib.UID(999)], "NS.objects": [], "$class": plistlib.UID(1)}
    put("dangling.plist", plistlib.dumps(arch, fmt=plistlib.FMT_BINARY), "keyed archive reference past the objects")
    deep: object = "leaf"
    for _ in range(5000):
        deep = [deep]
    try:
        put("deep.plist", plistlib.dumps(deep, fmt=plistlib.FMT_BINARY), "plist nesting")
    except RecursionError:
        pass
    put("cut.plist", built.keyed_archive.read_bytes()[:40], "cut binary plist")
    # Interface Builder documents: an entity bomb, a cut document, a NIBArchive, another XML root.
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa">'
        + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8))
        + "]><document>&i;</document>"
    )
    put("bomb.xib", bomb.encode(), "entity expansion")
    put("cut.xib", built.xib.read_bytes()[:700], "cut XIB")
    put("nibarchive.nib", b"NIBArchive\x01\x00\x00\x00" + bytes(64), "compiled NIBArchive")
    put("other-root.storyboard", b"<?xml version='1.0'?><plist><dict/></plist>", "not a document")
    b = bytearray(built.storyboard.read_bytes())
    for _ in range(20):
        b[rng.randrange(len(b))] = rng.randrange(32, 127)
    put("flip.storyboard", b, "byte flips in a storyboard")
    put("notaplist.plist", b"<?xml version='1.0'?><plist><dict><key>a</key>", "cut XML plist")
    return out
