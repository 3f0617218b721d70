"""The decompiler's C, named from native's view and the analyst's notebook.

flatline takes a memory image and an entry, nothing else: no symbols, no types, no prototypes reach the engine.
So what its text names by address is named here, token by token (never a text search): its function names
(``func_0x1030``: the callee at 0x1030), its globals (``iRam0000000000004014``: the datum at 0x4014,
``DAT_00004014`` without a name; a GOT or IAT slot is the import it holds), the constants the procedure's own
instructions reference where a string is (the literal), and its storage-type vocabulary (``int4``, ``xunknown8``)
in Ghidra's display names. A declared prototype replaces the signature, names the parameters by their position in
the engine's own parameter records, and turns the engine's accesses through a struct pointer
(``*(int4 *)(param_1 + 2)``, ``param_1[1]``) into ``p->field`` by the declared layout, where offset and width agree;
anything else is left as the engine wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import msgspec

from rea.plugin import ReaError
from rea.plugin import typelib
from rea_plugins.native.decompile_worker import Decompiled

_TOKENS = re.compile(
    r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|//[^\n]*|/\*.*?\*/|\b0x[0-9a-fA-F]+\b|[A-Za-z_][A-Za-z0-9_]*",
    re.S,
)
_FUNC = re.compile(r"func_(?:0x)?([0-9a-f]+)")
_GLOBAL = re.compile(r"[a-z]{0,6}Ram([0-9a-f]{4,16})")
_SIZED = re.compile(r"(x?unknown|int|uint|float|wchar)([0-9]+)")
_MAX_STRING = 120


class Field(msgspec.Struct, frozen=True):
    name: str
    size: int


class Prototype(msgspec.Struct, frozen=True, kw_only=True):
    """A declared prototype as the rewrite uses it: the declaration text, parameter names, struct-pointer layouts."""

    text: str
    names: list[str | None]
    # parameter index -> offset -> field, for a parameter declared as a pointer to a struct or union
    fields: dict[int, dict[int, Field]] = {}


def type_name(engine: str, lp64: bool) -> str:
    """An engine storage type (``int4``, ``xunknown8``) by Ghidra's display name; others unchanged."""
    m = _SIZED.fullmatch(engine)
    if m is None:
        return engine
    base, size = m.group(1), int(m.group(2))
    if base in ("xunknown", "unknown"):
        return "undefined" if size == 1 else f"undefined{size}"
    if base == "float":
        return {4: "float", 8: "double"}.get(size, engine)
    if base == "wchar":
        return f"wchar{size * 8}"
    signed = base == "int"
    plain = {1: "char", 2: "short", 4: "int", 8: "long" if lp64 else "longlong"}.get(size)
    if plain is None:
        return engine
    if size == 1:
        return "char" if signed else "uchar"
    return plain if signed else "u" + plain


def _size_of(engine_type: str) -> int | None:
    m = _SIZED.fullmatch(engine_type)
    if m is not None:
        return int(m.group(2))
    return {"char": 1, "bool": 1, "code": None}.get(engine_type)


def c_literal(text: str) -> str:
    out = []
    for ch in text[:_MAX_STRING]:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + ('..."' if len(text) > _MAX_STRING else '"')


def prototype(text: str, declarations: list[str], fmt: str, arch: str) -> Prototype:
    """A notebook prototype against the notebook's type library (its C ``declarations``); its struct pointers'
    fields by offset."""
    library = typelib.declare("\n".join(declarations), {}) if declarations else {}
    proto = typelib.prototype(text, library)
    layout = typelib.Layout(library, typelib.abi_for(fmt, arch))
    fields: dict[int, dict[int, Field]] = {}
    for i, param in enumerate(proto.parameters):
        t = " ".join(w for w in param.type.replace("*", " * ").split() if w not in ("const", "volatile", "restrict"))
        if not t.endswith("*") or t.count("*") != 1:
            continue
        try:
            target = layout.of_name(t[:-1].strip())
        except ReaError:
            continue
        if target.kind not in ("struct", "union", "typedef") or not target.fields:
            continue
        by_offset: dict[int, Field] = {}
        for f in target.fields:
            if f.name and f.bit_size is None and f.offset not in by_offset:
                by_offset[f.offset] = Field(f.name, f.size)
        fields[i] = by_offset
    return Prototype(text=proto.text.rstrip(";").strip(), names=[p.name for p in proto.parameters], fields=fields)


class Names:
    """What the rewrite asks native for, by address."""

    def __init__(
        self,
        name_at: Callable[[int], str | None],
        import_slots: dict[int, str],
        strings: dict[int, str],
        slot_target: Callable[[int], str | None] | None = None,
    ) -> None:
        """``strings``: address -> the literal's prefix, a double quote, then its text (``u"wide``, ``"narrow``)."""
        self.name_at = name_at
        self.import_slots = import_slots
        self.strings = strings
        # A GOT slot (relocated) that holds one of this binary's own functions: that function's name.
        self.slot_target = slot_target or (lambda _: None)


def rewrite(out: Decompiled, name: str, address: int, names: Names, lp64: bool, proto: Prototype | None) -> str:
    """The engine's text for the function ``name`` at ``address``, named as described in the module docstring."""
    text = (out.text or "").strip("\n")
    engine_params = [p[0] for p in out.parameters]
    renamed = _display_names([v[0] for v in (*out.parameters, *out.locals)])
    if proto is not None:
        for i, given in enumerate(proto.names):
            if given and i < len(engine_params):
                renamed[engine_params[i]] = given
    pointee: dict[str, int] = {}
    if proto is not None and proto.fields:
        pointee = _pointee_sizes(text, engine_params)

    held: set[str] = set()  # functions named for the GOT slots that hold them

    def token(m: re.Match[str]) -> str:
        tok = m.group(0)
        first = tok[0]
        if first in "\"'/":
            return tok
        if first == "0":
            value = int(tok, 16)
            literal = names.strings.get(value)
            if literal is None:
                return tok
            prefix, _, body = literal.partition('"')
            return prefix + c_literal(body)
        if tok in renamed:
            return renamed[tok]
        f = _FUNC.fullmatch(tok)
        if f is not None:
            at = int(f.group(1), 16)
            if at == address:
                return name
            return names.name_at(at) or tok
        g = _GLOBAL.fullmatch(tok)
        if g is not None:
            at = int(g.group(1), 16)
            # A global native has no name for: Ghidra's DAT_ name, by address.
            named = names.import_slots.get(at) or names.name_at(at)
            if named is None:
                named = names.slot_target(at)
                if named is not None:
                    held.add(named)
            return named or f"DAT_{at:08x}"
        return type_name(tok, lp64)

    text = _TOKENS.sub(token, text)
    # A call through an import's slot reads as the call: (*puts)(s) -> puts(s).
    for called in {*names.import_slots.values(), *held}:
        text = text.replace(f"(*{called})(", f"{called}(")
    if proto is not None:
        text = _signature(text, name, proto)
        head, brace, body = text.partition("{")  # the fields are read in the body only, never the declaration
        for i, fields in proto.fields.items():
            if i < len(engine_params):
                var = renamed.get(engine_params[i], engine_params[i])
                body = _fields(body, var, fields, pointee.get(engine_params[i], 1), lp64)
        text = head + brace + body
    return text


_UNDEFINED_VAR = re.compile(r"([a-z]*)x((?:Var|Stack_|Var_)[0-9A-Za-z_]+)")


def _display_names(names: list[str]) -> dict[str, str]:
    """The engine's names of variables of an undefined type (``xVar1``, ``pxStack_28``) as Ghidra shows them
    (``uVar1``, ``puStack_28``), from its own variable records; a name that would collide keeps its own."""
    taken = set(names)
    out: dict[str, str] = {}
    for name in names:
        m = _UNDEFINED_VAR.fullmatch(name)
        if m is not None:
            shown = f"{m.group(1)}u{m.group(2)}"
            if shown not in taken:
                out[name] = shown
                taken.add(shown)
    return out


def _pointee_sizes(text: str, params: list[str]) -> dict[str, int]:
    """The element size of each pointer parameter as the engine declared it (``xunknown4 *param_1``: 4)."""
    head = text.split("{", 1)[0]
    out: dict[str, int] = {}
    for engine_param in params:
        m = re.search(rf"([A-Za-z_][A-Za-z0-9_]*)\s*\*\s*{re.escape(engine_param)}\b", head)
        if m is not None:
            out[engine_param] = _size_of(m.group(1)) or 1
    return out


def _signature(text: str, name: str, proto: Prototype) -> str:
    """The engine's signature line replaced by the declared prototype (under the function's current name)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip() and not line.startswith((" ", "\t", "/")):
            declared = re.sub(rf"\b{re.escape(_declared_name(proto.text))}\s*\(", f"{name}(", proto.text, count=1)
            lines[i] = declared
            break
    return "\n".join(lines)


def _declared_name(text: str) -> str:
    m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", text)
    return m.group(1) if m else ""


def _fields(text: str, var: str, fields: dict[int, Field], element: int, lp64: bool) -> str:
    """Accesses through ``var`` at a declared field's offset, with the field's width, as ``var->field``."""
    v = re.escape(var)
    cast = r"\*\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\*\s*\)\s*"

    def width(engine: str) -> int | None:
        sizes = {"char": 1, "uchar": 1, "short": 2, "ushort": 2, "int": 4, "uint": 4, "float": 4, "double": 8}
        sizes.update({"long": 8 if lp64 else 4, "ulong": 8 if lp64 else 4, "longlong": 8, "ulonglong": 8})
        if engine.startswith("undefined"):
            return int(engine[9:] or 1)
        return sizes.get(engine)

    def at(offset: int, size: int | None) -> str | None:
        f = fields.get(offset)
        if f is None or (size is not None and size != f.size):
            return None
        return f"{var}->{f.name}"

    def cast_plus(m: re.Match[str]) -> str:
        return at(int(m.group(2), 0) * element, width(m.group(1))) or m.group(0)

    def cast_only(m: re.Match[str]) -> str:
        return at(0, width(m.group(1))) or m.group(0)

    def index(m: re.Match[str]) -> str:
        return at(int(m.group(1), 0) * element, element) or m.group(0)

    def deref(m: re.Match[str]) -> str:
        return at(0, element) or m.group(0)

    text = re.sub(rf"{cast}\(\s*{v}\s*\+\s*(0x[0-9a-fA-F]+|\d+)\s*\)", cast_plus, text)
    text = re.sub(rf"{cast}{v}\b(?!\s*[\[(])", cast_only, text)
    text = re.sub(rf"(?<![\w>.]){v}\[(0x[0-9a-fA-F]+|\d+)\]", index, text)
    return re.sub(rf"(?<![\w)\]])\*{v}\b(?!\s*[\[(+])", deref, text)
