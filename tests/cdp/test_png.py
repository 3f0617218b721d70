"""The screenshot PNG reader (Pillow): every PNG layout a browser or a tool writes, damaged data as typed
errors, and the pixel comparison's answer pixel for pixel (benchmarks/screenshot_compare.py has the speed)."""

from __future__ import annotations

import io
import random

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from PIL import Image

from rea.context import CallContext
from rea.errors import ReaError
from rea_plugins.cdp import png
from rea_plugins.cdp.compare import compare_pngs


def _encode(image: Image.Image, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG", **options)
    return out.getvalue()


def test_interlaced_sixteen_bit_and_transparent_palette_images_decode() -> None:
    rgba = Image.new("RGBA", (7, 5), (10, 20, 30, 40))
    rgba.putpixel((3, 2), (200, 100, 50, 255))
    # Adam7 interlacing (the former decoder refused it).
    _, _, pixels = png.decode_rgba(_encode(rgba, interlace=1), 100)
    assert pixels == rgba.tobytes()
    # 16-bit greyscale: each sample's high byte.
    grey16 = Image.new("I;16", (2, 1))
    grey16.putpixel((0, 0), 0x1234)
    grey16.putpixel((1, 0), 0xFF01)
    assert png.decode_rgba(_encode(grey16), 10)[2] == b"\x12\x12\x12\xff\xff\xff\xff\xff"
    # A palette with a transparent entry keeps its alpha.
    palette = Image.new("P", (2, 1))
    palette.putpalette([255, 0, 0, 0, 0, 255])
    palette.putpixel((1, 0), 1)
    assert png.decode_rgba(_encode(palette, transparency=0), 10)[2] == b"\xff\x00\x00\x00\x00\x00\xff\xff"


def test_not_a_png_damaged_and_too_large_are_typed() -> None:
    data = _encode(Image.new("RGB", (20, 20), (1, 2, 3)))
    for bad in (b"GIF89a" + data[6:], data[:40], data[:-20] + b"\x00" * 20):
        with pytest.raises(ReaError) as err:
            png.decode_rgba(bad, 1000)
        assert err.value.code == "invalid_request", bad[:8]
    with pytest.raises(ReaError) as err:
        png.decode_rgba(data, 399)
    assert err.value.code == "resource_constraint" and err.value.details["pixels"] == 400


@given(st.binary(max_size=300), st.integers(min_value=0, max_value=400))
@settings(max_examples=200, deadline=None)
def test_any_bytes_after_the_signature_decode_or_fail_typed(tail: bytes, cut: int) -> None:
    data = _encode(Image.new("RGBA", (9, 9), (5, 6, 7, 8)))
    spliced = png.SIGNATURE + (data[8 : 8 + cut] + tail)
    try:
        png.decode_rgba(spliced, 10_000)
    except ReaError as err:
        assert err.code in ("invalid_request", "resource_constraint")


def test_the_comparison_counts_what_a_pixel_loop_counts() -> None:
    rng = random.Random(7)
    width, height = 31, 17
    before = Image.new("RGBA", (width, height))
    before.putdata([tuple(rng.randrange(256) for _ in range(4)) for _ in range(width * height)])
    after = before.copy()
    for _ in range(40):
        x, y = rng.randrange(width), rng.randrange(height)
        after.putpixel((x, y), tuple(rng.randrange(256) for _ in range(4)))
    a, b = before.tobytes(), after.tobytes()
    for threshold in (0, 60, 200):
        got = compare_pngs(_encode(before), _encode(after), threshold, width * height, CallContext())
        # The reference: every pixel, every channel, by hand.
        changed, boxes, sums, highs = 0, [], [0] * 4, [0] * 4
        for i in range(width * height):
            deltas = [abs(a[4 * i + c] - b[4 * i + c]) for c in range(4)]
            sums = [s + d for s, d in zip(sums, deltas, strict=True)]
            highs = [max(h, d) for h, d in zip(highs, deltas, strict=True)]
            if max(deltas) > threshold:
                changed += 1
                boxes.append((i % width, i // width))
        assert got.changed_pixels == changed
        high = got.max_channel_delta
        assert high is not None and [high.r, high.g, high.b, high.a] == highs
        assert got.mean_channel_delta is not None and got.mean_channel_delta.r == sums[0] / (width * height)
        if boxes:
            xs, ys = [x for x, _ in boxes], [y for _, y in boxes]
            assert got.changed_bounds is not None
            assert (got.changed_bounds.x, got.changed_bounds.y) == (min(xs), min(ys))
            assert (got.changed_bounds.width, got.changed_bounds.height) == (
                max(xs) - min(xs) + 1,
                max(ys) - min(ys) + 1,
            )
        else:
            assert got.changed_bounds is None
