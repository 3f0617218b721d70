"""RFC 8785 (JCS) canonical JSON: msgspec on the hot path, the reference encoder where they differ."""

from __future__ import annotations

import hashlib
import threading
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


# Digits and "-" deleted: a float token collapses to ":." (its "." or exponent right after the start).
_FLOAT_CLASSES = _table({b":,[": b":", b".eE": b"."})
# Digits kept as "0", "-" deleted: an unsafe integer shows 16 or more digits after its start.
_INT_CLASSES = _table({b":,[": b":", _DIGITS: b"0"})
_LONG_INT = b":" + b"0" * 16
_ASTRAL_LEADS = tuple(bytes([b]) for b in range(0xF0, 0xF5))
_NUMBER_START = frozenset(b"-0123456789")


def _has_astral_key(value: Any) -> bool:
    """Whether any object key holds a character beyond the BMP (only keys change JCS ordering)."""
    stack = [value]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            for key, sub in cur.items():
                if isinstance(key, str) and not key.isascii() and any(ord(c) > 0xFFFF for c in key):
                    return True
                if isinstance(sub, (dict, list, tuple, msgspec.Struct)):
                    stack.append(sub)
        elif isinstance(cur, (list, tuple)):
            stack.extend(x for x in cur if isinstance(x, (dict, list, tuple, msgspec.Struct)))
        elif isinstance(cur, msgspec.Struct):
            stack.extend(getattr(cur, f) for f in cur.__struct_fields__)
    return False


def _needs_reference(fast: bytes, value: Any) -> bool:
    if fast[0] in _NUMBER_START:
        return True  # a bare number document: let the reference format it
    # Astral characters in string values (emoji in JavaScript, say) are encoded identically; only keys matter.
    if not fast.isascii() and any(lead in fast for lead in _ASTRAL_LEADS) and _has_astral_key(value):
        return True
    if b":." in fast.translate(_FLOAT_CLASSES, _DIGITS + b"-"):
        return True
    return _LONG_INT in fast.translate(_INT_CLASSES, b"-")


class CanonicalError(ValueError):
    """A value that has no RFC 8785 form (non-finite or out-of-range numbers, non-JSON types)."""


def _encode(value: Any) -> bytes:
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise CanonicalError(str(exc)) from None


def _slow(value: Any) -> bytes:
    # to_builtins keeps floats as floats, so non-finite values reach the reference encoder and fail there.
    return _reference(msgspec.to_builtins(value))


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical JSON bytes of ``value`` (msgspec Structs and builtins)."""
    fast = _encode(value)
    return _slow(value) if _needs_reference(fast, value) else fast


def _reference(value: Any) -> bytes:
    import rfc8785  # imported lazily: only records with floats or astral keys need it

    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise CanonicalError(str(exc)) from None


# Above this size the hash runs in a thread beside the scan: hashlib releases the GIL while hashing.
_OVERLAP_BYTES = 1 << 20


def canonical_digest(value: Any) -> str:
    """Lowercase hex SHA-256 of the canonical JSON of ``value``."""
    fast = _encode(value)
    if len(fast) < _OVERLAP_BYTES:
        return hashlib.sha256(_slow(value) if _needs_reference(fast, value) else fast).hexdigest()
    digest = hashlib.sha256()
    worker = threading.Thread(target=digest.update, args=(fast,), daemon=True)
    worker.start()
    try:
        slow = _needs_reference(fast, value)
    finally:
        worker.join()
    return hashlib.sha256(_slow(value)).hexdigest() if slow else digest.hexdigest()
