"""Every metadata token the IL of an assembly names, found once per assembly and kept for the next question.

One pass decodes each method body with dncil and keeps, for each instruction whose operand is a token (a method,
a field, a type, a string or a signature), the method, the offset, the opcode and the token, as compact columns.
``search_managed_strings`` reads the ``ldstr`` rows, ``managed_references_to`` the others. The parsed image and its
sites are kept for the last few assemblies this process read (keyed by content digest and bounds), so the
questions an agent asks one after another about one assembly parse and decode it once.
"""

from __future__ import annotations

import contextlib
import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from dncil.cil.body import CilMethodBody  # type: ignore[import-untyped]
from dncil.cil.error import MethodBodyFormatError  # type: ignore[import-untyped]
from dncil.clr.token import Token  # type: ignore[import-untyped]

from rea.plugin import Target
from rea.plugin import ToolCall
from rea_plugins.managed import il
from rea_plugins.managed import reader
from rea_plugins.managed.model import ReferenceKind
from rea_plugins.managed.reader import Image

# A body larger than this is not scanned (counted in ``undecoded``); the members listing's default bound.
MAX_SCAN_BODY_BYTES = 1 << 20
KEPT_ASSEMBLIES = 2
# What an opcode does to the member or type its token names.
KINDS: dict[str, ReferenceKind] = {
    "call": "call",
    "callvirt": "call",
    "jmp": "call",
    "newobj": "construct",
    "ldfld": "read",
    "ldsfld": "read",
    "stfld": "write",
    "stsfld": "write",
    "ldflda": "address",
    "ldsflda": "address",
    "ldftn": "function-pointer",
    "ldvirtftn": "function-pointer",
    "ldtoken": "token",
    "calli": "signature",
}
# box, castclass, isinst, newarr, initobj, sizeof, ldelem and the other type operands.
TYPE_USE: ReferenceKind = "type-use"


class Sites:
    """The token operands of every method body: parallel columns, one row per instruction that names a token."""

    def __init__(self) -> None:
        self.method = array("I")
        self.offset = array("I")
        self.opcode = array("H")
        self.token = array("I")
        self.opcodes: list[str] = []
        self._codes: dict[str, int] = {}
        self.scanned = 0  # bodies decoded
        self.undecoded = 0  # bodies that did not decode or were over the bound
        self._names: dict[int, str] = {}

    def add(self, rid: int, offset: int, opcode: str, token: int) -> None:
        code = self._codes.get(opcode)
        if code is None:
            code = self._codes[opcode] = len(self.opcodes)
            self.opcodes.append(opcode)
        self.method.append(rid)
        self.offset.append(offset)
        self.opcode.append(code)
        self.token.append(token)

    def __len__(self) -> int:
        return len(self.token)

    def name(self, image: Image, token: int) -> str:
        """What a token names (cached: most tokens are named by many sites)."""
        found = self._names.get(token)
        if found is None:
            found = self._names[token] = image.token_name(token)
        return found


def scan(image: Image, ctx: Any) -> Sites:
    """Decode every method body and keep its token operands."""
    out = Sites()
    rows = image.rows("MethodDef")
    total = len(rows)
    data = memoryview(image.data)  # a body's window is a view, not a copy of up to MAX_SCAN_BODY_BYTES
    for rid, row in enumerate(rows, 1):
        if rid % 256 == 0:
            ctx.check("reading method bodies")
            ctx.progress(f"reading method bodies: {rid} of {total}", done=rid, total=total)
        rva = int(row.Rva or 0)
        if not rva:
            continue
        start = image.file_offset(rva)
        if start is None:
            out.undecoded += 1
            continue
        try:
            body = CilMethodBody(il._Reader(data[start : start + MAX_SCAN_BODY_BYTES + 12]))
        except (MethodBodyFormatError, ValueError, IndexError, KeyError, TypeError, AttributeError, OverflowError):
            out.undecoded += 1
            continue
        if body.code_size > MAX_SCAN_BODY_BYTES:
            out.undecoded += 1
            continue
        out.scanned += 1
        base = body.header_size
        for insn in body.instructions:
            operand = insn.operand
            if isinstance(operand, Token):
                out.add(rid, int(insn.offset) - base, str(insn.opcode.name), int(operand.value) & 0xFFFFFFFF)
    return out


class _Entry:
    def __init__(self, image: Image) -> None:
        self.image = image
        self.sites: Sites | None = None


_KEPT: OrderedDict[tuple[Any, ...], _Entry] = OrderedDict()
_KEPT_LOCK = threading.Lock()
# dnfile reads tables lazily and the image caches names: one call reads kept images at a time (a comparison holds
# two, so one lock for all, never a lock per image taken in two orders).
_READING = threading.RLock()


@contextlib.contextmanager
def opened(call: ToolCall) -> Iterator[tuple[Target, Image, _Entry]]:
    """The assembly ``path`` names (or the open binary), parsed once per content and bounds, for one reader at a
    time (the caller reads it inside the block)."""
    limits = reader.bounds(call.args)
    target, data = reader.read_target(call, limits)
    key = (target.sha256, tuple(sorted(limits.items())))
    with _KEPT_LOCK:
        entry = _KEPT.get(key)
        if entry is not None:
            _KEPT.move_to_end(key)
    if entry is None:
        entry = _Entry(reader.parse(data, limits))
        with _KEPT_LOCK:
            entry = _KEPT.setdefault(key, entry)
            _KEPT.move_to_end(key)
            while len(_KEPT) > KEPT_ASSEMBLIES:
                _KEPT.popitem(last=False)
    del data
    with _READING:
        yield target, entry.image, entry


def sites(entry: _Entry, ctx: Any) -> Sites:
    """The entry's token sites, scanned on first use (inside ``opened``)."""
    if entry.sites is None:
        entry.sites = scan(entry.image, ctx)
    return entry.sites


def kind_of(opcode: str) -> ReferenceKind:
    return KINDS.get(opcode, TYPE_USE)


def forget() -> None:
    """Drop every kept assembly (tests that measure a cold read)."""
    with _KEPT_LOCK:
        _KEPT.clear()
