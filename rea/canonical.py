"""RFC 8785 (JCS) canonical JSON: msgspec on the hot path, the reference encoder where they differ."""

from __future__ import annotations

import copy
import hashlib
import queue
import re
import threading
from collections.abc import Callable
from collections.abc import Iterator
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
# Digits kept as "0" too: a float token is ":" then "0"s then "." (what _FLOAT_CLASSES finds, minus most strings).
_FLOAT_SHAPE = _table({b":,[": b":", _DIGITS: b"0", b".eE": b"."})
_FLOAT_SUSPECTS = 4096
# The float shape with "-" read as a separator instead of deleted: a translation without deletions runs twice as
# fast, and a negative number still shows as a separator, then digits.
_ODD_SHAPE = _table({b":,[-": b":", _DIGITS: b"0", b".eE": b"."})
# Digits kept as "0", "-" deleted: an unsafe integer shows 16 or more digits after its start.
_INT_CLASSES = _table({b":,[": b":", _DIGITS: b"0"})
_LONG_INT = b":" + b"0" * 16
_ASTRAL_LEADS = tuple(bytes([b]) for b in range(0xF0, 0xF5))
_NUMBER_START = frozenset(b"-0123456789")


def _members(value: Any) -> Any:
    """The values a JSON container holds (a dict's values, a list's or tuple's items, a Struct's fields), or
    None for a scalar."""
    t = type(value)
    if t is dict:
        return value.values()
    if t is list or t is tuple:
        return value
    if isinstance(value, msgspec.Struct):
        return [getattr(value, f) for f in value.__struct_fields__]
    return None


def _has_astral_key(value: Any) -> bool:
    """Whether any object key holds a character beyond the BMP (only keys change JCS ordering)."""
    stack = [value]
    while stack:
        cur = stack.pop()
        if type(cur) is dict:
            for key in cur:
                if type(key) is str and not key.isascii() and any(ord(c) > 0xFFFF for c in key):
                    return True
        items = _members(cur)
        if items is None:
            continue
        # Exact types first: the common containers never reach the isinstance check.
        stack.extend(
            [
                x
                for x in items
                if type(x) is dict or type(x) is list or type(x) is tuple or isinstance(x, msgspec.Struct)
            ]
        )
    return False


def _has_astral_leads(fast: bytes) -> bool:
    return not fast.isascii() and any(lead in fast for lead in _ASTRAL_LEADS)


def _may_have_floats(fast: bytes) -> bool:
    """Whether ``fast`` may hold a float token: a separator, digits, then "." or an exponent. Strings make false
    positives (a JavaScript record's ",e" and "0,1.5"), so the digit run before each suspect is checked; past
    _FLOAT_SUSPECTS of them the caller's walk decides."""
    if b":." not in fast.translate(_FLOAT_CLASSES, _DIGITS + b"-"):
        return False
    return _float_in_shape(fast.translate(_FLOAT_SHAPE, b"-"))


def _float_in_shape(shape: bytes) -> bool:
    """``_may_have_floats`` over the ``_FLOAT_SHAPE`` translation of a document."""
    at = shape.find(b"0.")
    for _ in range(_FLOAT_SUSPECTS):
        if at == -1:
            return False
        start = at
        while start > 0 and shape[start - 1] == 0x30:  # back over the digits
            start -= 1
        if start == 0 or shape[start - 1] == 0x3A:  # a separator (or the start) before them: a number token
            return True
        at = shape.find(b"0.", at + 1)
    return True


def _may_have_unsafe_ints(fast: bytes) -> bool:
    return _LONG_INT in fast.translate(_INT_CLASSES, b"-")


def _may_have_odd_numbers(fast: bytes) -> bool:
    """``_may_have_floats(fast) or _may_have_unsafe_ints(fast)`` from one pass over the bytes: the float shape keeps
    what the integer classes show (separators, digits as "0"), so a 16-digit run shows in it too."""
    shape = fast.translate(_ODD_SHAPE)
    return _LONG_INT in shape or _float_in_shape(shape)


# Above this size a number the byte scan suspects is looked for in the value itself: in a large document (a
# JavaScript application's facts) the scan's matches are mostly inside strings (",e" and ":." in minified code).
_WALK_BYTES = 1 << 20


def _has_unsafe_numbers(value: Any) -> bool:
    """Whether ``value`` holds a float or an integer beyond 2**53 (what JCS formats otherwise than msgspec)."""
    stack = [value]
    while stack:
        cur = stack.pop()
        items = _members(cur)
        for sub in (cur,) if items is None else items:
            st = type(sub)
            if st is str or st is bool or sub is None:
                continue
            if st is int:
                if not -_SAFE_INT < sub < _SAFE_INT:
                    return True
            elif st is float:
                return True
            elif st is dict or st is list or st is tuple or isinstance(sub, msgspec.Struct):
                stack.append(sub)
            elif isinstance(sub, float | int) and not isinstance(sub, bool):
                return True  # a subclass: let the exact path decide
    return False


def _needs_reference(fast: bytes, value: Any, astral: bool) -> bool:
    """Whether msgspec's sorted bytes may differ from JCS (false positives only cost time); ``astral``: whether
    a key holds a character beyond the BMP (``_astral``)."""
    if fast[0] in _NUMBER_START or astral:
        return True  # a bare number document, or UTF-16 key order: let the reference format it
    if not _may_have_odd_numbers(fast):
        # msgspec writes NaN and infinities as null; MessagePack keeps them as float64 bit patterns.
        return b"null" in fast and _NON_FINITE.search(_MSGPACK.encode(value)) is not None
    return len(fast) < _WALK_BYTES or _has_unsafe_numbers(value)


def _astral(fast: bytes, value: Any) -> bool:
    # Astral characters in string values (emoji in JavaScript, say) are encoded identically; only keys matter.
    return _has_astral_leads(fast) and _has_astral_key(value)


class CanonicalError(ValueError):
    """A value that has no RFC 8785 form (non-finite or out-of-range numbers, non-JSON types)."""


def _encode(value: Any) -> bytes:
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise CanonicalError(str(exc)) from None


_SAFE_INT = 2**53


def _jcs_float(value: float) -> bytes:
    """ECMAScript Number::toString of ``value`` (what RFC 8785 mandates), from Python's shortest repr."""
    if value != value or value in (float("inf"), float("-inf")):
        raise CanonicalError(f"{value!r} has no JSON form")
    if value == 0:
        return b"0"
    text = repr(value)
    if "e" not in text:
        # Positional repr (1e-4 <= |x| < 1e16) is already the ECMAScript form, but for a trailing ".0".
        return (text[:-2] if text.endswith(".0") else text).encode()
    text = repr(abs(value))
    mantissa, _, exp_text = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    if frac == "0":
        frac = ""
    raw = whole + frac
    stripped = raw.lstrip("0")
    n = len(whole) + int(exp_text or 0) - (len(raw) - len(stripped))
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * -n + digits
    else:
        exp = n - 1
        out = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if exp > 0 else "-") + str(abs(exp))
    return (("-" if value < 0 else "") + out).encode()


def _jcs_numbers(value: Any) -> Any:
    """Replace floats (and reject unsafe integers) with their exact RFC 8785 text as ``msgspec.Raw``."""
    if isinstance(value, float):
        return msgspec.Raw(_jcs_float(value))
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _SAFE_INT:
        return msgspec.Raw(_reference(value))  # raises: JCS has no exact form for it
    if isinstance(value, dict):
        return {k: _jcs_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jcs_numbers(v) for v in value]
    return value


def _float_hook(text: str) -> msgspec.Raw:
    return msgspec.Raw(_jcs_float(float(text)))


_JCS_FLOAT_DECODER = msgspec.json.Decoder(float_hook=_float_hook)
_MSGPACK = msgspec.msgpack.Encoder()
# A float64 whose exponent bits are all ones (NaN or infinity); a match inside a string only costs time.
_NON_FINITE = re.compile(rb"\xcb[\x7f\xff][\xf0-\xff]")


def _slow(value: Any, fast: bytes, astral: bool) -> bytes:
    """The exact JCS bytes when the fast encoding may differ: fix numbers, or defer to the reference."""
    if fast[0] in _NUMBER_START or astral:
        # UTF-16 key order (and bare numbers): only the reference encoder does exactly that.
        return _reference(msgspec.to_builtins(value))
    if _may_have_unsafe_ints(fast):
        # Rare: walk the value to format floats and reject integers JCS cannot represent.
        return _encode(_jcs_numbers(msgspec.to_builtins(value)))
    # msgspec's JSON writes NaN and infinities as null; its MessagePack keeps them as float64 bit patterns.
    if _NON_FINITE.search(_MSGPACK.encode(value)):
        return _encode(_jcs_numbers(msgspec.to_builtins(value)))  # raises for the non-finite value
    # Floats only: re-read the fast bytes with every float replaced by its ECMAScript form (in C).
    return _floats_formatted(fast)


# From this size an object's members are re-read one by one, and only those that may hold a float: an Evidence
# record's floats sit in its small analysis profile, and re-reading a 400 KB page of call edges for them made
# the record's hash ten times slower than its encoding.
_SPLIT_BYTES = 1 << 16
_RAW_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])


def _floats_formatted(fast: bytes) -> bytes:
    """``fast`` (msgspec's sorted bytes, with no astral key, unsafe integer or non-finite float) with each float
    in its ECMAScript form. The members of a large object keep their bytes unless they may hold a float."""
    if len(fast) < _SPLIT_BYTES or fast[:1] != b"{":
        return _encode(_JCS_FLOAT_DECODER.decode(fast))
    # The decoded dict keeps the document's (already sorted) key order; each member's bytes are its slice.
    members = _RAW_MEMBERS.decode(fast)
    parts = []
    for key, raw in members.items():
        member = bytes(raw)
        # The scan looks for a number after a separator, as the member stands in its object.
        if _may_have_floats(b":" + member):
            # A bare number is re-read inside an array: the float hook formats only numbers within a document.
            member = _floats_formatted(member) if member[:1] == b"{" else _encode(_in_array(member))[1:-1]
        parts.append(_encode(key) + b":" + member)
    return b"{" + b",".join(parts) + b"}"


def _in_array(member: bytes) -> Any:
    return _JCS_FLOAT_DECODER.decode(b"[" + member + b"]")


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical JSON bytes of ``value`` (msgspec Structs and builtins)."""
    fast = _encode(value)
    if _proved(value):
        return fast
    astral = _astral(fast, value)
    return _slow(value, fast, astral) if _needs_reference(fast, value, astral) else fast


def _reference(value: Any) -> bytes:
    import rfc8785  # imported lazily: only records with floats or astral keys need it

    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise CanonicalError(str(exc)) from None


# Above this size the hash runs in a thread beside the scan: hashlib releases the GIL while hashing.
_OVERLAP_BYTES = 1 << 20


def canonical_digest(value: Any, stats: list[int] | None = None, measured: list[int] | None = None) -> str:
    """Lowercase hex SHA-256 of the canonical JSON of ``value``.

    ``stats``, when given, receives the length and the count of quotes and backslashes of a document of at
    least 1 MiB whose canonical form is msgspec's own (no floats or astral keys), which other encodings
    of the same value then match but for key order. ``measured``, when given, receives the length of the
    document hashed, at any size.
    """
    if _proved(value):
        return _streamed_digest(value, stats, measured)
    found = _largest_list(value, _SCAN_STREAM_MIN, records=False)
    if found is not None:
        streamed = _scanned_stream_digest(value, found, stats, measured)
        if streamed is not None:
            return streamed
    fast = _encode(value)
    if len(fast) < _OVERLAP_BYTES:
        astral = _astral(fast, value)
        document = _slow(value, fast, astral) if _needs_reference(fast, value, astral) else fast
        if measured is not None:
            measured[:] = [len(document)]
        return hashlib.sha256(document).hexdigest()
    digest = hashlib.sha256()
    worker = threading.Thread(target=digest.update, args=(fast,), daemon=True)
    worker.start()
    astral = False
    try:
        astral = _astral(fast, value)
        slow = _needs_reference(fast, value, astral)
        if stats is not None and not slow:
            stats[:] = [len(fast), fast.count(b'"') + fast.count(b"\\")]
    finally:
        worker.join()
    if not slow:
        if measured is not None:
            measured[:] = [len(fast)]
        return digest.hexdigest()
    document = _slow(value, fast, astral)
    if measured is not None:
        measured[:] = [len(document)]
    return hashlib.sha256(document).hexdigest()


# -- records proved canonical by construction -----------------------------------------------------
#
# A JcsRecord holds no float, no integer beyond 2**53 and no key outside the Basic Multilingual Plane
# (checked when one is built), so its sorted msgspec JSON is its RFC 8785 form without a scan.
# A value made of such records, plus a few other small parts checked value by value (a Struct's other
# fields, parameters, locations), is proved without encoding it; its digest then streams: the largest
# list of records is encoded in slices while a helper thread hashes the slices already encoded.

_MAX_SAFE = _SAFE_INT - 1
_SMALL = 256  # values checked one by one before the proof gives up (and the document is scanned)
_STREAM_ITEMS = 4096  # records per encoded slice (about 1 MB for typical records)
_STREAM_MIN = 4 * _STREAM_ITEMS
# Raw bytes msgspec never writes (it escapes control characters), marking where the list goes.
_HOLE = b'"\x00rea-list\x00"'


class JcsRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A record whose canonical JSON is msgspec's sorted JSON, proved when it is built.

    Construction checks every field value: str, bool, None, an integer within 2**53, a list or tuple
    of these, or another JcsRecord; anything else (a float, a dict) raises CanonicalError. Field names
    must lie within the Basic Multilingual Plane. Lists inside must not change after construction.
    """

    def __post_init__(self) -> None:
        if not _bmp_names(type(self)):
            raise CanonicalError(f"{type(self).__name__} has a field name beyond the Basic Multilingual Plane")
        for value in msgspec.structs.astuple(self):
            _check_value(value)


_STRUCT_NAMES: dict[type, bool] = {}


def _check_value(value: Any) -> None:
    t = type(value)
    if t is str or t is bool or value is None:
        return
    if t is int:
        if -_MAX_SAFE <= value <= _MAX_SAFE:
            return
        raise CanonicalError(f"{value} is beyond the integers canonical JSON represents (2**53)")
    if t is list or t is tuple:
        for item in value:
            _check_value(item)
        return
    if isinstance(value, JcsRecord):
        return  # checked when it was built
    raise CanonicalError(f"a {t.__name__} has no proved canonical form in a JcsRecord")


def _bmp_names(cls: type) -> bool:
    ok = _STRUCT_NAMES.get(cls)
    if ok is None:
        ok = _STRUCT_NAMES[cls] = all(ord(c) <= 0xFFFF for f in msgspec.structs.fields(cls) for c in f.encode_name)
    return ok


def _records(items: list[Any] | tuple[Any, ...]) -> bool:
    """A long list proved without looking inside: records of one JcsRecord type."""
    first = type(items[0])
    return isinstance(items[0], JcsRecord) and all(type(x) is first for x in items)


def _proved(value: Any) -> bool:
    """Whether ``value`` (a Struct holding JcsRecords) has msgspec's sorted JSON as its canonical form.

    Proved records are not looked into; the few other parts (a Struct's other fields, small dicts and
    lists) are checked value by value, within a small budget. False means: scan the encoded document.
    """
    if not isinstance(value, msgspec.Struct):
        return False
    stack: list[Any] = [value]
    visits = 0
    while stack:
        v = stack.pop()
        visits += 1
        if visits > _SMALL:
            return False
        t = type(v)
        if v is None or t is str or t is bool:
            continue
        if t is int:
            if not -_MAX_SAFE <= v <= _MAX_SAFE:
                return False
        elif isinstance(v, JcsRecord):
            continue
        elif isinstance(v, msgspec.Struct):
            if not _bmp_names(t):
                return False
            stack.extend(getattr(v, f) for f in v.__struct_fields__)
        elif t is list or t is tuple:
            if len(v) >= _SMALL:
                if not _records(v):
                    return False
            else:
                stack.extend(v)
        elif t is dict and len(v) < _SMALL:
            if not all(type(k) is str and (k.isascii() or all(ord(c) <= 0xFFFF for c in k)) for k in v):
                return False
            stack.extend(v.values())
        else:
            return False  # floats, large dicts and anything else: the scan decides
    return True


def _largest_list(
    value: Any, minimum: int = _STREAM_MIN, records: bool = True
) -> tuple[list[tuple[Any, Any]], list[Any]] | None:
    """The path ((parent, field or key), ...) to the longest list of at least ``minimum`` items under ``value``'s
    Structs (and, unless ``records``, its dicts too), and that list."""
    best: tuple[list[tuple[Any, Any]], list[Any]] | None = None
    stack: list[tuple[Any, list[tuple[Any, Any]]]] = [(value, [])]
    while stack:
        v, path = stack.pop()
        if type(v) is dict:
            # A map keyed by data (a call graph's callers) is no record: its lists are parts of its rows, and walking
            # thousands of its entries would cost more than streaming saves (any list chosen gives the same digest).
            members: Any = v.items() if len(v) <= _SMALL and all(type(k) is str for k in v) else ()
        elif isinstance(v, msgspec.Struct):
            members = ((name, getattr(v, name)) for name in v.__struct_fields__)
        else:
            continue
        for name, item in members:
            if type(item) is list and len(item) >= minimum and (best is None or len(item) > len(best[1])):
                best = ([*path, (v, name)], item)
            elif isinstance(item, msgspec.Struct) or (not records and type(item) is dict and len(path) < _SCAN_DEPTH):
                stack.append((item, [*path, (v, name)]))
    return best


def _hollow(path: list[tuple[Any, Any]], hole: bytes = _HOLE) -> Any:
    """The value at the top of ``path`` with the list at its end replaced by a placeholder (nothing is mutated)."""
    hollow: Any = msgspec.Raw(hole)
    for parent, name in reversed(path):
        if type(parent) is dict:
            hollow = {**parent, name: hollow}
        else:
            twin = copy.copy(parent)  # not structs.replace: a JcsRecord would refuse the Raw placeholder
            msgspec.structs.force_setattr(twin, name, hollow)
            hollow = twin
    return hollow


def _hashed(pieces: Iterator[bytes], stats: list[int] | None, measured: list[int] | None) -> str:
    """SHA-256 of the concatenated ``pieces``, hashed in a thread while the next ones are made (hashlib releases
    the GIL); ``stats`` and ``measured`` as ``canonical_digest`` says."""
    digest = hashlib.sha256()
    pending: queue.Queue[bytes | None] = queue.Queue(maxsize=2)

    def hash_pieces() -> None:
        while (piece := pending.get()) is not None:
            digest.update(piece)

    worker = threading.Thread(target=hash_pieces, daemon=True)
    worker.start()
    length, escapes = 0, 0
    try:
        for piece in pieces:
            pending.put(piece)
            length += len(piece)
            if stats is not None:
                escapes += piece.count(b'"') + piece.count(b"\\")
    finally:
        pending.put(None)
        worker.join()
    if measured is not None:
        measured[:] = [length]
    if stats is not None and length >= _OVERLAP_BYTES:
        stats[:] = [length, escapes]
    return digest.hexdigest()


def _streamed_digest(value: Any, stats: list[int] | None, measured: list[int] | None) -> str:
    """SHA-256 of a proved value's sorted JSON; a long list is encoded in slices as a thread hashes."""
    found = _largest_list(value)
    if found is None:
        fast = _encode(value)
        if measured is not None:
            measured[:] = [len(fast)]
        if stats is not None and len(fast) >= _OVERLAP_BYTES:
            stats[:] = [len(fast), fast.count(b'"') + fast.count(b"\\")]
        return hashlib.sha256(fast).hexdigest()
    path, items = found
    head, tail = _encode(_hollow(path)).split(_HOLE)
    return _hashed(_list_pieces(head, items, tail, _STREAM_ITEMS), stats, measured)


# A value that is not proved but holds a long list (a JavaScript application's modules) is encoded and scanned
# a slice at a time, so no whole document is held and only a suspect slice is walked; any slice whose bytes may
# differ from JCS sends the whole value down the exact path instead.
_SCAN_STREAM_MIN = 1024
# How deep into dicts the long list is looked for (an Evidence's result is two levels down): a large document
# made of dicts is not walked whole before it is encoded.
_SCAN_DEPTH = 3
_SCAN_STREAM_ITEMS = 128


class _Divergent(Exception):
    """A slice whose msgspec bytes may differ from its RFC 8785 form."""


def _scanned_stream_digest(
    value: Any,
    found: tuple[list[tuple[Any, Any]], list[Any]],
    stats: list[int] | None,
    measured: list[int] | None = None,
) -> str | None:
    """The digest of ``value`` with its longest list encoded and scanned in slices, or None when a part may
    diverge from JCS (the caller then takes the whole-document path)."""
    path, items = found
    hollow = _hollow(path)
    head, tail = _encode(hollow).split(_HOLE)
    rest = head + tail  # everything but the list: its keys, numbers and non-finite floats are checked as a whole
    if _astral(rest, hollow):
        return None
    if _needs_reference(rest, hollow, False):
        around = _formatted_around(path, rest, hollow)
        if around is None:
            return None
        head, tail = around

    try:
        return _hashed(_list_pieces(head, items, tail, _SCAN_STREAM_ITEMS, _check_slice), stats, measured)
    except _Divergent:
        return None


# The placeholder as valid JSON (an escaped string), so the float formatting can re-read the document around it.
_TEXT_HOLE = b'"\\u0000rea-list\\u0000"'


def _formatted_around(path: list[tuple[Any, Any]], rest: bytes, hollow: Any) -> tuple[bytes, bytes] | None:
    """The canonical bytes before and after the long list when only floats outside it differ from msgspec's
    (an Evidence record's analysis profile), or None when something else may differ."""
    if _may_have_unsafe_ints(rest) or (b"null" in rest and _NON_FINITE.search(_MSGPACK.encode(hollow))):
        return None
    pieces = _floats_formatted(_encode(_hollow(path, _TEXT_HOLE))).split(_TEXT_HOLE)
    # A string equal to the placeholder elsewhere in the record would split it more than once.
    return (pieces[0], pieces[1]) if len(pieces) == 2 else None


def _check_slice(body: bytes, part: list[Any]) -> None:
    """Raise ``_Divergent`` when a slice's bytes may differ from JCS: an astral key, a real float or unsafe
    integer, or a non-finite float msgspec wrote as null (``_needs_reference``'s scan, with the walk at any size)."""
    if _astral(body, part):
        raise _Divergent
    if _may_have_odd_numbers(body):
        if _has_unsafe_numbers(part):
            raise _Divergent
    elif b"null" in body and _NON_FINITE.search(_MSGPACK.encode(part)) is not None:
        raise _Divergent


def _list_pieces(
    head: bytes, items: list[Any], tail: bytes, step: int, check: Callable[[bytes, list[Any]], None] | None = None
) -> Iterator[bytes]:
    """The document's bytes with ``items`` encoded ``step`` at a time between ``head`` and ``tail``; ``check``
    sees each slice's encoding first (and may raise)."""
    yield head + b"["
    for start in range(0, len(items), step):
        part = items[start : start + step]
        body = _encode(part)
        if check is not None:
            check(body, part)
        yield body[1:-1] if start == 0 else b"," + body[1:-1]
    yield b"]" + tail
