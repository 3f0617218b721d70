"""RFC 8785 (JCS) canonical JSON: msgspec on the hot path, the reference encoder where they differ."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

_ENCODER = msgspec.json.Encoder(order="sorted")

# msgspec's sorted output equals JCS except for floats (JCS uses ECMAScript number form), integers
# beyond 2**53 (JCS cannot represent them), and keys with astral characters (JCS sorts by UTF-16
# code units). _needs_reference finds every such token with bytes.translate and substring search,
# which run at memory speed where a regex scan is ~10x slower; a false positive inside a string only
# costs time. Number tokens in msgspec output always follow ":", "," or "[" (or open the document).
_DIGITS = b"0123456789"


def _table(mapping: dict[bytes, bytes]) -> bytes:
    table = bytearray(b"x" * 256)
    for chars, cls in mapping.items():
        for c in chars:
            table[c] = cls[0]
    return bytes(table)


# Digits deleted: a float token collapses to ":." or ":-." (its "." or exponent right after the start).
_FLOAT_CLASSES = _table({b":,[": b":", b".eE": b".", b"-": b"-"})
# Digits kept as "0": an unsafe integer has at least 16 digits after its start.
_INT_CLASSES = _table({b":,[": b":", b"-": b"-", _DIGITS: b"0"})
_LONG_INT = b":" + b"0" * 16
_ASTRAL_LEADS = tuple(bytes([b]) for b in range(0xF0, 0xF5))


def _needs_reference(fast: bytes) -> bool:
    if fast[:1] in (b"-", *(bytes([d]) for d in _DIGITS)):
        return True  # a bare number document: let the reference format it
    if not fast.isascii() and any(lead in fast for lead in _ASTRAL_LEADS):
        return True
    floats = fast.translate(_FLOAT_CLASSES, _DIGITS)
    if b":." in floats or b":-." in floats:
        return True
    del floats
    ints = fast.translate(_INT_CLASSES)
    return _LONG_INT in ints or b":-" + b"0" * 16 in ints


class CanonicalError(ValueError):
    """A value that has no RFC 8785 form (non-finite or out-of-range numbers, non-JSON types)."""


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical JSON bytes of ``value`` (msgspec Structs and builtins)."""
    try:
        fast = _ENCODER.encode(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise CanonicalError(str(exc)) from None
    if not _needs_reference(fast):
        return fast
    # to_builtins keeps floats as floats, so non-finite values reach the reference encoder and fail there.
    return _reference(msgspec.to_builtins(value))


def _reference(value: Any) -> bytes:
    import rfc8785  # imported lazily: only records with floats or astral keys need it

    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise CanonicalError(str(exc)) from None


def canonical_digest(value: Any) -> str:
    """Lowercase hex SHA-256 of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json(value)).hexdigest()
