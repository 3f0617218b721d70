"""RFC 8785 (JCS) canonical JSON: msgspec on the hot path, the reference encoder where they differ."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import msgspec

_ENCODER = msgspec.json.Encoder(order="sorted")

# msgspec's sorted output equals JCS except for floats (JCS uses ECMAScript number form), integers
# beyond 2**53 (JCS cannot represent them), and keys with astral characters (JCS sorts by UTF-16
# code units). This pattern finds every such token; a false positive inside a string only costs time.
_NEEDS_REFERENCE = re.compile(rb"(?:^|[:,\[])-?[0-9]+[.eE]|(?:^|[:,\[])-?[0-9]{16}|[\xf0-\xf4]")


class CanonicalError(ValueError):
    """A value that has no RFC 8785 form (non-finite or out-of-range numbers, non-JSON types)."""


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical JSON bytes of ``value`` (msgspec Structs and builtins)."""
    try:
        fast = _ENCODER.encode(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise CanonicalError(str(exc)) from None
    if _NEEDS_REFERENCE.search(fast) is None:
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
