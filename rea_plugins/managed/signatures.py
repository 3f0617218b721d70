"""ECMA-335 II.23.2 signature and custom-attribute blobs as C#-like text (dnfile reads the blobs, not their grammar)."""

from __future__ import annotations

import struct
from collections.abc import Callable

# A custom attribute's decoded arguments are the assembly's data (JSON values), not rea records.
from rea.plugin import JSONObject
from rea.plugin import JSONValue

# A resolver names a TypeDefOrRefOrSpec coded token (table 0 TypeDef, 1 TypeRef, 2 TypeSpec; rid).
Resolver = Callable[[int, int, int], str]
MAX_DEPTH = 32
MAX_PARAMS = 1024

PRIMITIVES = {
    0x01: "void",
    0x02: "bool",
    0x03: "char",
    0x04: "sbyte",
    0x05: "byte",
    0x06: "short",
    0x07: "ushort",
    0x08: "int",
    0x09: "uint",
    0x0A: "long",
    0x0B: "ulong",
    0x0C: "float",
    0x0D: "double",
    0x0E: "string",
    0x16: "typedref",
    0x18: "nint",
    0x19: "nuint",
    0x1C: "object",
}
_FIXED = {
    0x02: "<?",
    0x03: "<H",
    0x04: "<b",
    0x05: "<B",
    0x06: "<h",
    0x07: "<H",
    0x08: "<i",
    0x09: "<I",
    0x0A: "<q",
    0x0B: "<Q",
    0x0C: "<f",
    0x0D: "<d",
}


class SignatureError(Exception):
    """A blob that does not follow the grammar; callers turn it into a marker, never a message."""


class Blob:
    """A bounded cursor over one blob."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise SignatureError("end of blob")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def peek(self) -> int:
        if self.pos >= len(self.data):
            raise SignatureError("end of blob")
        return self.data[self.pos]

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise SignatureError("end of blob")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def compressed(self) -> int:
        first = self.byte()
        if first & 0x80 == 0:
            return first
        if first & 0xC0 == 0x80:
            return ((first & 0x3F) << 8) | self.byte()
        if first & 0xE0 == 0xC0:
            rest = self.take(3)
            return ((first & 0x1F) << 24) | (rest[0] << 16) | (rest[1] << 8) | rest[2]
        raise SignatureError("bad compressed integer")

    def coded_type(self) -> tuple[int, int]:
        value = self.compressed()
        return value & 3, value >> 2


class Decoder:
    """Type text for signatures of one assembly; generic parameter names come from the declaring context."""

    def __init__(
        self, resolve: Resolver, type_params: list[str] | None = None, method_params: list[str] | None = None
    ) -> None:
        self.resolve = resolve
        self.type_params = type_params or []
        self.method_params = method_params or []

    def type(self, blob: Blob, depth: int = 0) -> str:
        if depth > MAX_DEPTH:
            raise SignatureError("type nesting too deep")
        code = blob.byte()
        if code in PRIMITIVES:
            return PRIMITIVES[code]
        if code == 0x0F:
            return self.type(blob, depth + 1) + "*"
        if code == 0x10:
            return "ref " + self.type(blob, depth + 1)
        if code in (0x11, 0x12):
            table, rid = blob.coded_type()
            return self.resolve(table, rid, depth + 1)
        if code == 0x13:
            n = blob.compressed()
            return self.type_params[n] if n < len(self.type_params) else f"!{n}"
        if code == 0x1E:
            n = blob.compressed()
            return self.method_params[n] if n < len(self.method_params) else f"!!{n}"
        if code == 0x1D:
            return self.type(blob, depth + 1) + "[]"
        if code == 0x14:
            inner = self.type(blob, depth + 1)
            rank = blob.compressed()
            for _ in range(blob.compressed()):
                blob.compressed()
            for _ in range(blob.compressed()):
                blob.compressed()
            return inner + "[" + "," * max(rank - 1, 0) + "]"
        if code == 0x15:
            blob.byte()  # CLASS or VALUETYPE
            table, rid = blob.coded_type()
            generic = self.resolve(table, rid, depth + 1).split("`", 1)[0]
            count = blob.compressed()
            if count > MAX_PARAMS:
                raise SignatureError("too many generic arguments")
            args = [self.type(blob, depth + 1) for _ in range(count)]
            return f"{generic}<{', '.join(args)}>"
        if code == 0x1B:
            ret, params, _ = self.method(blob, depth + 1)
            return f"delegate*<{', '.join([*params, ret])}>"
        if code in (0x1F, 0x20):  # custom modifiers do not change what a C# reader sees
            blob.coded_type()
            return self.type(blob, depth + 1)
        if code == 0x45:
            return self.type(blob, depth + 1)
        raise SignatureError("unknown element type")

    def method(self, blob: Blob, depth: int = 0) -> tuple[str, list[str], int]:
        """(return type, parameter types, generic parameter count) of a MethodDefSig/MethodRefSig."""
        conv = blob.byte()
        generic = blob.compressed() if conv & 0x10 else 0
        count = blob.compressed()
        if count > MAX_PARAMS:
            raise SignatureError("too many parameters")
        ret = self.type(blob, depth)
        params: list[str] = []
        for _ in range(count):
            if blob.peek() == 0x41:  # SENTINEL: the vararg part follows
                blob.byte()
                params.append("...")
            params.append(self.type(blob, depth))
        return ret, params, generic

    def field(self, blob: Blob) -> str:
        if blob.byte() != 0x06:
            raise SignatureError("not a field signature")
        return self.type(blob)


def is_field_signature(data: bytes) -> bool:
    return bool(data) and data[0] == 0x06


# An enum argument's underlying type, when the enum is defined elsewhere (its definition is not in this file): int
# first, as nearly every enum is; the other sizes are tried in turn when the blob then fails to end where it must.
UNKNOWN_ENUM_TYPES = (0x08, 0x05, 0x07, 0x0A)  # int, byte, ushort, long
ENUM_UNDERLYING = frozenset({0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B})
ENUM = 0x55
# One parameter of an attribute constructor: (element type, array element type or 0, the enum's type name or "").
Param = tuple[int, int, str]
# What the caller knows of an enum by its type name: (underlying element type or None, value -> member name).
EnumInfo = Callable[[str], tuple[int | None, dict[int, str]]]


def param_codes(data: bytes, resolve: Resolver | None = None) -> list[Param] | None:
    """The parameters of an attribute constructor's signature, for custom-attribute values."""
    blob = Blob(data)

    def enum_name(table: int, rid: int) -> str:
        if resolve is None:
            return ""
        try:
            return resolve(table, rid, 0)
        except SignatureError:
            return ""

    def element(code: int) -> tuple[int, str]:
        """An element type as custom-attribute values encode it, with the enum's name ("" for any other)."""
        if code == 0x11:
            # A value type in an attribute constructor is an enum.
            return ENUM, enum_name(*blob.coded_type())
        if code == 0x12:
            # A class argument is System.Type.
            blob.coded_type()
            return 0x50, ""
        return code, ""

    try:
        blob.byte()
        count = blob.compressed()
        if blob.byte() != 0x01:
            return None
        out: list[Param] = []
        for _ in range(min(count, MAX_PARAMS)):
            code = blob.byte()
            inner, name = 0, ""
            if code == 0x1D:  # an array: its element type
                inner, name = element(blob.byte())
            else:
                code, name = element(code)
            out.append((code, inner, name))
        return out
    except SignatureError:
        return None


def _ser_string(blob: Blob, max_bytes: int) -> str | None:
    if blob.peek() == 0xFF:
        blob.byte()
        return None
    n = blob.compressed()
    if n > max_bytes:
        raise SignatureError("string longer than the bound")
    return blob.take(n).decode("utf-8", "replace")


class _Values:
    """Reads custom-attribute values; ``guess`` is the size taken for an enum whose definition is elsewhere."""

    def __init__(self, max_bytes: int, enums: EnumInfo | None, guess: int) -> None:
        self.max_bytes = max_bytes
        self.enums = enums
        self.guess = guess
        self.guessed = False

    def enum(self, blob: Blob, name: str) -> JSONValue:
        short = _short_type(name)
        code, names = self.enums(short) if self.enums is not None and short else (None, {})
        if code not in ENUM_UNDERLYING:
            code, self.guessed = self.guess, True
        fmt = _FIXED[code]
        value = struct.unpack(fmt, blob.take(struct.calcsize(fmt)))[0]
        out: JSONObject = {"enum": short, "value": value}
        if value in names:
            out["name"] = names[value]
        return out

    def value(self, blob: Blob, code: int, inner: int, name: str = "") -> JSONValue:
        if code in _FIXED:
            fmt = _FIXED[code]
            value = struct.unpack(fmt, blob.take(struct.calcsize(fmt)))[0]
            return chr(value) if code == 0x03 else value
        if code in (0x0E, 0x50):
            return _ser_string(blob, self.max_bytes)
        if code == ENUM:
            return self.enum(blob, name)
        if code == 0x1D:
            n = struct.unpack("<I", blob.take(4))[0]
            if n == 0xFFFFFFFF:
                return None
            if n > MAX_PARAMS:
                raise SignatureError("array longer than the bound")
            return [self.value(blob, inner, 0, name) for _ in range(n)]
        if code == 0x51 or code == 0x1C:  # boxed: the type tag comes first
            tag, sub, tname = self.field_type(blob)
            return self.value(blob, tag, sub, tname)
        raise SignatureError("undecodable argument type")

    def field_type(self, blob: Blob) -> tuple[int, int, str]:
        """A FieldOrPropType: (element type, array element type, enum type name)."""
        code = blob.byte()
        inner, name = 0, ""
        if code == 0x1D:
            inner = blob.byte()
            if inner == ENUM:
                name = _ser_string(blob, self.max_bytes) or ""
        elif code == ENUM:
            name = _ser_string(blob, self.max_bytes) or ""
        return code, inner, name


def _short_type(name: str) -> str:
    """An enum's type name as rea writes it: without the assembly a named argument's carries, nested with '/'."""
    return name.split(",", 1)[0].strip().replace("+", "/")


def attribute_value(
    data: bytes, params: list[Param], max_bytes: int, enums: EnumInfo | None = None
) -> tuple[list[JSONValue], JSONObject] | None:
    """Fixed and named arguments of a custom attribute blob, or None where they do not decode.

    An enum argument reads ``{"enum": type, "value": n}`` (and ``"name"`` where the enum is defined in this
    assembly); the size of an enum defined elsewhere is the one with which the whole blob decodes, int32 first."""
    for guess in UNKNOWN_ENUM_TYPES:
        reader = _Values(max_bytes, enums, guess)
        decoded = _attribute_value(data, params, reader)
        if decoded is not None or not reader.guessed:
            return decoded
    return None


def _attribute_value(data: bytes, params: list[Param], reader: _Values) -> tuple[list[JSONValue], JSONObject] | None:
    blob = Blob(data)
    try:
        if blob.take(2) != b"\x01\x00":
            return None
        fixed = [reader.value(blob, code, inner, name) for code, inner, name in params]
        named: JSONObject = {}
        for _ in range(struct.unpack("<H", blob.take(2))[0]):
            blob.byte()  # FIELD or PROPERTY
            code, inner, tname = reader.field_type(blob)
            name = _ser_string(blob, reader.max_bytes) or ""
            named[name] = reader.value(blob, code, inner, tname)
        if reader.guessed and blob.pos != len(blob.data):
            return None  # bytes left over: the size taken for an enum defined elsewhere is wrong
        return fixed, named
    except (SignatureError, struct.error):
        return None


def constant_value(code: int, data: bytes | None) -> object:
    """A Constant table value: a number, a bool, a char, a string (UTF-16) or None (a null reference)."""
    if data is None:
        return None
    try:
        if code == 0x0E:
            return data.decode("utf-16-le", "replace")
        if code in _FIXED:
            fmt = _FIXED[code]
            value = struct.unpack(fmt, data[: struct.calcsize(fmt)])[0]
            return chr(value) if code == 0x03 else value
    except struct.error:
        return None
    return None
