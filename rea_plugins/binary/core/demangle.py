"""Demangled names in the binary family's results, whichever provider produced them.

A provider returns names as the binary spells them; every named result passes through ``apply`` (from
``annotate.apply``), which shows a C++ (Itanium, MSVC) or Rust symbol demangled and keeps the symbol as
``mangled_name``. The demangler is LLVM's, through ``pydemumble`` (demumble's Python build; LIEF's own demangler is
in LIEF's extended edition only). A procedure selector may name the demangled form: ``selector`` maps it to the
procedure's address, from the provider's own listing, read once per target.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import msgspec

from rea.plugin import Arguments
from rea.plugin import ToolCall

# Itanium (``_Z``, Mach-O's ``__Z``), MSVC (``?``), Rust v0 (``_R``); Rust's legacy scheme is Itanium's form. Swift
# (``$s``, ``_$s``, Swift 4's ``$S``/``_T0``), which demumble also demangles.
_MANGLED = re.compile(r"^(?:_{1,2}Z|\?|_{1,2}R[A-Z]|_?\$[sS][0-9A-Za-z_]|_T0)")
# A mangled identifier inside instruction text.
_TOKEN = re.compile(r"(?<![\w$.])(_{1,2}Z[\w$.]+|_{1,2}R[A-Z][\w$.]*|_?\$s[0-9A-Za-z_][\w$.]*)")
# What every mangled symbol holds, in an encoded answer (a superset: a hit only means the walk runs); fixed
# substrings, which ``in`` finds at memory speed where a regular expression over a page took milliseconds.
_MARKS = (b"_Z", b'"?', b"$s", b"$S", b"_T0")
_SUFFIX = "@plt"
_BY_NAME = "binary.demangled_names"
_PAGE = 1000
MAX_NAMES = 500_000  # a listing this large is not read to resolve one demangled selector


@functools.lru_cache(maxsize=65536)
def demangle(name: str) -> str | None:
    """``name`` demangled, or None when it is no mangled symbol (or the demangler is not installed)."""
    base = name.removesuffix(_SUFFIX)
    if not _MANGLED.match(base):
        return None
    try:
        import pydemumble  # type: ignore[import-untyped]
    except ImportError:  # the demangler is a dependency; a broken install shows names as the binary spells them
        return None
    out = str(pydemumble.demangle(base))
    if not out or out == base:
        return None
    return out + _SUFFIX if base != name else out


def _walk(value: Any) -> Any:
    if isinstance(value, list):
        return [_walk(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _walk(v) for k, v in value.items()}
    name = out.get("name")
    if isinstance(name, str) and "mangled_name" not in out:
        shown = demangle(name)
        if shown is not None:
            out["mangled_name"] = name
            out["name"] = shown
    for key in ("to_name", "callee_name"):
        text = out.get(key)
        if isinstance(text, str):
            out[key] = demangle(text) or text
    symbolized = out.get("symbolized")
    if isinstance(symbolized, str) and ("_Z" in symbolized or "_R" in symbolized):
        out["symbolized"] = _TOKEN.sub(lambda m: demangle(m.group(1)) or m.group(1), symbolized)
    return out


def apply(normalized: Any) -> Any:
    """``normalized`` with every mangled ``name`` shown demangled (the symbol kept as ``mangled_name``): a new value,
    or ``normalized`` itself when no string in it can hold a mangled symbol."""
    try:
        encoded = msgspec.json.encode(normalized)
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError):
        return _walk(normalized)
    # Most programs (C, and every page without a C++ or Rust symbol) have nothing to demangle: one C-speed scan of
    # the encoded answer saves rebuilding every row of it (the walk was most of list_procedures' time in process).
    if not _may_hold_mangled(encoded):
        return normalized
    return _walk(normalized)


def _may_hold_mangled(encoded: bytes) -> bool:
    if any(mark in encoded for mark in _MARKS):
        return True
    at = encoded.find(b"_R")  # Rust v0: _R then an uppercase letter
    while at != -1:
        if encoded[at + 2 : at + 3].isupper():
            return True
        at = encoded.find(b"_R", at + 2)
    return False


def selector(call: ToolCall, params: Arguments) -> Arguments:
    """A procedure selector naming a demangled name selects its procedure's address (engines know symbols)."""
    chosen = params.get("procedure")
    if not isinstance(chosen, str) or not any(c in chosen for c in ":(<~ "):
        return params
    address = _demangled_names(call).get(chosen)
    return params if address is None else {**params, "procedure": address}


def _demangled_names(call: ToolCall) -> dict[str, str]:
    """Demangled name -> procedure address, from the provider's listing (cached per target and provider)."""
    target = call.session.require_target()
    provider = call.session.provider.descriptor.id if call.session.provider else ""
    key = (target.sha256, provider)
    cached = call.session.state.get(_BY_NAME)
    if isinstance(cached, tuple) and cached[0] == key:
        found: dict[str, str] = cached[1]
        return found
    names: dict[str, str] = {}
    offset: int | None = 0
    seen = 0
    while offset is not None and seen < MAX_NAMES and call.session.supports("list_procedures"):
        call.ctx.check("demangled names")
        page = call.session.execute("list_procedures", {"offset": offset, "limit": _PAGE}, call.ctx).normalized
        for p in page["procedures"]:
            shown = demangle(p.get("name") or "")
            if shown is not None:
                names.setdefault(shown, p["address"])
        seen += len(page["procedures"])
        offset = page.get("next_offset")
    call.session.state[_BY_NAME] = (key, names)
    return names
