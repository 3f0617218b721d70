"""File names as text: a POSIX name is bytes, and a name that is not UTF-8 must still be shown, stored and sent.

Python hands back the bytes of a name that are not UTF-8 as lone surrogates (``os.fsdecode``, surrogateescape), so
opening the ``str`` it gave works; msgspec, json and sqlite refuse to encode them. What rea shows, records or sends
is ``shown(name)``; what it opens is the original.
"""

from __future__ import annotations


def shown(path: str) -> str:
    """``path`` as text any JSON, SQLite row or terminal can carry: bytes of a file name that are not UTF-8.

    POSIX file names are bytes; Python hands back the ones that are not UTF-8 as lone surrogates
    (surrogateescape), which msgspec, json and sqlite refuse to encode. They are shown as ``\\xNN`` escapes
    (``b"\\xff\\xfe.bin"`` reads ``\\xff\\xfe.bin``); a name that is UTF-8 is returned as it is. Display only: open
    the original ``str`` (or ``os.fsencode`` of it), never the shown form.
    """
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        pass
    # An escaped byte (U+DC80..U+DCFF) reads as the byte; any other lone surrogate (JSON can spell one) as itself.
    return "".join(
        f"\\x{ord(ch) - 0xDC00:02x}"
        if 0xDC80 <= ord(ch) <= 0xDCFF
        else f"\\u{ord(ch):04x}"
        if 0xD800 <= ord(ch) <= 0xDFFF
        else ch
        for ch in path
    )
