"""PNG: the header, and a decoder to 8-bit RGBA for local pixel comparison (standard library only).

Covers what browsers write (8-bit greyscale, RGB, RGBA, grey+alpha and palette, non-interlaced; 16-bit
samples are reduced to their high byte). Anything else is a typed ``invalid_request``, never a guess.
"""

from __future__ import annotations

import struct
import zlib

from rea.errors import ReaError

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def _bad(message: str, path: str) -> ReaError:
    return ReaError(
        "invalid_request",
        f"{path}: {message}",
        details={"issues": [{"path": path, "reason": "invalid_value", "message": message}]},
    )


def dimensions(data: bytes, path: str = "png") -> tuple[int, int]:
    """Width and height from the IHDR chunk."""
    if len(data) < 24 or not data.startswith(SIGNATURE) or data[12:16] != b"IHDR":
        raise _bad("not a PNG image", path)
    width, height = struct.unpack(">II", data[16:24])
    if width == 0 or height == 0:
        raise _bad("the PNG has no pixels", path)
    return width, height


def _chunks(data: bytes, path: str) -> tuple[bytes, bytes, bytes]:
    """IHDR body, concatenated IDAT, PLTE (may be empty)."""
    pos, ihdr, idat, plte = len(SIGNATURE), b"", bytearray(), b""
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if len(body) != length:
            raise _bad("the PNG is truncated", path)
        if kind == b"IHDR":
            ihdr = body
        elif kind == b"IDAT":
            idat += body
        elif kind == b"PLTE":
            plte = body
        elif kind == b"IEND":
            break
        pos += 12 + length
    if len(ihdr) != 13 or not idat:
        raise _bad("the PNG has no image data", path)
    return ihdr, bytes(idat), plte


def decode_rgba(data: bytes, max_pixels: int, path: str = "png") -> tuple[int, int, bytearray]:
    """Width, height and the pixels as RGBA rows; images over ``max_pixels`` are ``resource_constraint``."""
    width, height = dimensions(data, path)
    if width * height > max_pixels:
        raise ReaError(
            "resource_constraint",
            f"{path}: {width}x{height} exceeds maximum_pixels ({max_pixels})",
            details={"resource": "memory", "path": path, "pixels": width * height, "maximum_pixels": max_pixels},
        )
    ihdr, idat, plte = _chunks(data, path)
    depth, color, _, _, interlace = struct.unpack(">BBBBB", ihdr[8:13])
    if color not in _CHANNELS or depth not in (8, 16) or interlace != 0 or (color == 3 and depth != 8):
        raise _bad(f"unsupported PNG layout (bit depth {depth}, colour type {color}, interlace {interlace})", path)
    channels = _CHANNELS[color]
    bpp = channels * depth // 8
    stride = width * bpp
    try:
        raw = zlib.decompressobj().decompress(idat, (stride + 1) * height)
    except zlib.error:
        raise _bad("the PNG image data is corrupt", path) from None
    if len(raw) < (stride + 1) * height:
        raise _bad("the PNG image data is short", path)
    rows = _unfilter(raw, stride, bpp, height, path)
    return width, height, _to_rgba(rows, width, height, color, depth, plte, path)


def _unfilter(raw: bytes, stride: int, bpp: int, height: int, path: str) -> bytearray:
    out = bytearray(stride * height)
    prev = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 0xFF
        elif kind != 0:
            raise _bad(f"unknown PNG filter type {kind}", path)
        out[y * stride : (y + 1) * stride] = line
        prev = line
    return out


def _to_rgba(rows: bytearray, width: int, height: int, color: int, depth: int, plte: bytes, path: str) -> bytearray:
    if depth == 16:
        rows = rows[0::2]  # the high byte of each big-endian sample
    n = width * height
    if color == 6:
        return rows
    out = bytearray(n * 4)
    if color == 2:
        out[0::4], out[1::4], out[2::4] = rows[0::3], rows[1::3], rows[2::3]
        out[3::4] = b"\xff" * n
    elif color == 0:
        out[0::4] = out[1::4] = out[2::4] = rows
        out[3::4] = b"\xff" * n
    elif color == 4:
        out[0::4] = out[1::4] = out[2::4] = rows[0::2]
        out[3::4] = rows[1::2]
    else:
        if len(plte) % 3 or not plte:
            raise _bad("the PNG palette is malformed", path)
        table = [plte[i : i + 3] + b"\xff" for i in range(0, len(plte), 3)]
        try:
            out = bytearray(b"".join(table[i] for i in rows))
        except IndexError:
            raise _bad("a PNG pixel names a colour outside the palette", path) from None
    return out
