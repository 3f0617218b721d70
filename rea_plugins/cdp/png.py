"""PNG screenshots through Pillow: the size, and the pixels as 8-bit RGBA for local comparison.

Pillow decodes every PNG layout (interlaced, palette with transparency, 16-bit samples: reduced to their high
byte, as before). What it cannot read, or what is not a PNG, is a typed ``invalid_request``; an image over the
caller's pixel bound is ``resource_constraint`` before any pixel is decoded (the header gives the size).
"""

from __future__ import annotations

import io
import warnings
from typing import TYPE_CHECKING

from rea.plugin import ReaError

if TYPE_CHECKING:
    from PIL.Image import Image

SIGNATURE = b"\x89PNG\r\n\x1a\n"
# What Pillow raises on damaged image data (its decoders use all of these).
_DAMAGED = (OSError, SyntaxError, ValueError, EOFError, IndexError, MemoryError)


def _bad(message: str, path: str) -> ReaError:
    return ReaError(
        "invalid_request",
        f"{path}: {message}",
        details={"issues": [{"path": path, "reason": "invalid_value", "message": message}]},
    )


def _too_large(path: str, pixels: int, max_pixels: int) -> ReaError:
    return ReaError(
        "resource_constraint",
        f"{path}: {pixels} pixels exceeds maximum_pixels ({max_pixels})",
        details={"resource": "memory", "path": path, "pixels": pixels, "maximum_pixels": max_pixels},
    )


def _open(data: bytes, path: str) -> Image:
    """The image, header read only (no pixel decoded yet)."""
    from PIL import Image as PILImage

    if not data.startswith(SIGNATURE):
        raise _bad("not a PNG image", path)
    with warnings.catch_warnings():
        # rea bounds pixels itself (maximum_pixels); Pillow's own bomb check is only a second fence.
        warnings.simplefilter("ignore", PILImage.DecompressionBombWarning)
        try:
            image = PILImage.open(io.BytesIO(data), formats=["PNG"])
        except PILImage.DecompressionBombError:
            raise _too_large(path, 0, PILImage.MAX_IMAGE_PIXELS or 0) from None
        except _DAMAGED:
            raise _bad("not a readable PNG image", path) from None
    width, height = image.size
    if width == 0 or height == 0:
        raise _bad("the PNG has no pixels", path)
    return image


def dimensions(data: bytes, path: str = "png") -> tuple[int, int]:
    """Width and height, from the header."""
    width, height = _open(data, path).size
    return width, height


def open_rgba(data: bytes, max_pixels: int, path: str = "png") -> Image:
    """The image as 8-bit RGBA; images over ``max_pixels`` are ``resource_constraint`` before decoding."""
    image = _open(data, path)
    width, height = image.size
    if width * height > max_pixels:
        raise _too_large(path, width * height, max_pixels)
    try:
        image.load()
        if image.mode in ("I;16", "I;16B", "I;16L", "I"):
            # 16-bit greyscale: the high byte of each sample (Pillow's conversion to L would clip instead).
            image = image.convert("I").point(lambda v: v / 256).convert("L")
        return image.convert("RGBA")
    except _DAMAGED:
        raise _bad("the PNG image data is corrupt", path) from None


def decode_rgba(data: bytes, max_pixels: int, path: str = "png") -> tuple[int, int, bytes]:
    """Width, height and the pixels as RGBA rows."""
    image = open_rgba(data, max_pixels, path)
    return image.width, image.height, image.tobytes()
