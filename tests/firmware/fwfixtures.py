"""A firmware image assembled in the session: an ext2 file system (mke2fs -d), a gzip and an xz (LZMA) stream and
an ELF at known offsets, padded with 0xff as flash is, and a decompression bomb."""

from __future__ import annotations

import gzip
import lzma
import subprocess
from pathlib import Path

import pytest

from tests import toolchains

PROGRAM_C = "int firmware_main(void) { return 42; }\nint main(void) { return firmware_main(); }\n"
VERSION_TEXT = b"fw-version 1.2.3\n"
GZIP_TEXT = b"gzip payload of the image\n" * 64
XZ_TEXT = b"xz payload of the image\n" * 64
FS_SIZE = 512 << 10
GZIP_AT = 0x80000
XZ_AT = 0xA0000
ELF_AT = 0xC0000
IMAGE_SIZE = 0x100000
# Decompresses to this many zero bytes from about a quarter of a megabyte.
BOMB_BYTES = 256 << 20


def assemble(out: Path) -> dict[str, Path]:
    """The image (and its parts) and the bomb in ``out``; skips without unblob or the tools it and the image need."""
    pytest.importorskip("unblob", reason="unblob is not installed: pip install 'rea-reverse[firmware]'")
    tools = toolchains.require_all(["gcc", "mke2fs", "debugfs", "7z"])
    root = out / "rootfs"
    (root / "bin").mkdir(parents=True)
    (root / "etc").mkdir()
    (out / "program.c").write_text(PROGRAM_C)
    subprocess.run(
        [tools["gcc"], "-O0", "-o", str(root / "bin" / "program"), str(out / "program.c")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (root / "etc" / "version").write_bytes(VERSION_TEXT)
    fs = out / "rootfs.ext2"
    subprocess.run(
        [tools["mke2fs"], "-q", "-F", "-t", "ext2", "-b", "1024", "-d", str(root), str(fs), str(FS_SIZE >> 10)],
        check=True,
        capture_output=True,
        timeout=120,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "E2FSPROGS_FAKE_TIME": "1700000000"},
    )
    elf = (root / "bin" / "program").read_bytes()
    image = bytearray(b"\xff" * IMAGE_SIZE)
    parts = {
        0: fs.read_bytes(),
        GZIP_AT: gzip.compress(GZIP_TEXT, mtime=0),
        XZ_AT: lzma.compress(XZ_TEXT, format=lzma.FORMAT_XZ),
        ELF_AT: elf,
    }
    for at, data in parts.items():
        assert len(data) < IMAGE_SIZE - at
        image[at : at + len(data)] = data
    (out / "firmware.bin").write_bytes(bytes(image))
    bomb = gzip.compress(b"\0" * BOMB_BYTES, compresslevel=9, mtime=0)
    (out / "bomb.bin").write_bytes(b"\xff" * 4096 + bomb + b"\xff" * 4096)
    return {"image": out / "firmware.bin", "elf": root / "bin" / "program", "bomb": out / "bomb.bin", "dir": out}
