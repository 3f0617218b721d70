"""Open a managed PE with dnfile under bounds, and name its metadata: types, members, tokens, signatures."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from typing import Any

from rea.plugin import Arguments
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import confirm_hashed
from rea.plugin import identify
from rea.plugin import open_regular
from rea.plugin import read_error
from rea_plugins.managed import signatures
from rea_plugins.managed.signatures import Blob
from rea_plugins.managed.signatures import Decoder
from rea_plugins.managed.signatures import SignatureError

# dnfile logs every tolerated defect; rea turns the ones that matter into typed errors instead.
logging.getLogger("dnfile").setLevel(logging.CRITICAL)

DEFAULT_BOUNDS = {
    "max_file_bytes": 256 << 20,
    "max_metadata_bytes": 64 << 20,
    "max_table_rows": 1 << 20,
    "max_heap_item_bytes": 1 << 16,
}
MAX_NESTING = 64
UNREADABLE = "<unreadable signature>"
TOKEN_TABLES = {
    0x01: "TypeRef",
    0x02: "TypeDef",
    0x04: "Field",
    0x06: "MethodDef",
    0x0A: "MemberRef",
    0x11: "StandAloneSig",
    0x1B: "TypeSpec",
    0x2B: "MethodSpec",
}
_TYPE_VISIBILITY = (
    "internal",
    "public",
    "nested public",
    "nested private",
    "nested protected",
    "nested internal",
    "nested private protected",
    "nested protected internal",
)
_MEMBER_ACCESS = (
    "compiler-controlled",
    "private",
    "private protected",
    "internal",
    "protected",
    "protected internal",
    "public",
    "public",
)


def malformed(structure: str, what: str) -> ReaError:
    """A hostile or damaged structure: typed, naming the structure, never a parser's text."""
    return ReaError(
        "unsupported_target",
        f"malformed managed metadata: {structure}: {what}",
        remediation="The file is not a well-formed .NET assembly; inspect it with the native tools.",
        details={"structure": structure, "reason": what},
    )


def too_large(structure: str, bound: str, value: int, limit: int) -> ReaError:
    return ReaError(
        "resource_constraint",
        f"{structure} exceeds {bound} ({value} > {limit})",
        remediation=f"Raise {bound} if the file is trusted, or inspect a smaller assembly.",
        details={"structure": structure, "bound": bound, "value": value, "limit": limit},
    )


# The largest bound a caller may set; a table can never have more rows than a token can name.
MAX_BOUNDS = {
    "max_file_bytes": 1 << 32,
    "max_metadata_bytes": 1 << 30,
    "max_table_rows": (1 << 24) - 1,
    "max_heap_item_bytes": 1 << 24,
}


def bounds(args: Arguments) -> dict[str, int]:
    return {k: min(arg_int(args, k, v), MAX_BOUNDS[k]) for k, v in DEFAULT_BOUNDS.items()}


def token_text(value: int) -> str:
    return f"0x{value:08x}"


class Image:
    """One parsed assembly with cached names. Every lookup is bounded and tolerant of damaged rows."""

    def __init__(self, data: bytes, limits: dict[str, int]) -> None:
        import dnfile
        import pefile  # type: ignore[import-untyped]

        self.data = data
        self.limits = limits
        try:
            self.pe = dnfile.dnPE(data=data, clr_lazy_load=True)  # type: ignore[no-untyped-call]
        except pefile.PEFormatError:
            raise ReaError(
                "unsupported_target",
                "not a PE file, so not a .NET assembly",
                remediation="Pass a .NET assembly (.dll or .exe).",
                details={"structure": "PE header", "reason": "not_pe"},
            ) from None
        except Exception:
            raise malformed("PE header", "unreadable") from None
        net = getattr(self.pe, "net", None)
        if net is None:
            raise ReaError(
                "unsupported_target",
                "the PE has no CLI header: it is a native binary, not a .NET assembly",
                remediation="Use open_binary and the native tools for native code.",
                details={"structure": "CLI header", "reason": "not_managed"},
            )
        self.net = net
        size = int(net.struct.MetaDataSize)
        if size > limits["max_metadata_bytes"]:
            raise too_large("metadata", "max_metadata_bytes", size, limits["max_metadata_bytes"])
        if net.metadata is None:
            raise malformed("metadata root", "missing, truncated or without the BSJB signature")
        self._check_streams(size)
        md = net.mdtables
        if md is None:
            raise malformed("#~ stream", "missing")
        for table in md.tables_list:
            if table.num_rows > limits["max_table_rows"]:
                raise too_large(f"{table.name} table", "max_table_rows", table.num_rows, limits["max_table_rows"])
        if any("Unable to parse stream" in str(w) for w in self.pe.get_warnings()):  # type: ignore[no-untyped-call]
            self._check_claimed_rows(md)
            raise malformed("#~ stream", "its tables do not fit in the stream")
        self.md = md
        self._rows: dict[str, list[Any]] = {}
        self._type_names: dict[tuple[int, int], str] = {}
        self._method_keys: dict[int, str] = {}
        self._method_sigs: dict[int, tuple[str, list[str], int] | None] = {}
        self._constants: dict[tuple[str, int], object] | None = None
        self._enums: dict[str, tuple[int | None, dict[int, str]]] | None = None
        self._index_owners()

    def _check_streams(self, size: int) -> None:
        for stream in self.net.metadata.streams_list:
            name = _stream_name(stream)
            offset, length = int(stream.struct.Offset), int(stream.struct.Size)
            if offset + length > size:
                raise malformed(f"{name} stream header", "offset and size point past the end of the metadata")

    def _check_claimed_rows(self, md: Any) -> None:
        """dnfile drops a table whose row count overflows the stream; a count past the bound is reported as such."""
        from dnfile.enums import MetadataTables

        header = getattr(md, "header", None)
        if header is None:
            return
        mask, at = int(header.MaskValid), int(md.rva) + int(header.sizeof())
        for number in range(64):
            if not mask >> number & 1:
                continue
            count = md.get_dword_at_rva(at)
            at += 4
            if isinstance(count, int) and count > self.limits["max_table_rows"]:
                try:
                    name = MetadataTables(number).name
                except ValueError:
                    name = f"table {number}"
                raise too_large(f"{name} table", "max_table_rows", count, self.limits["max_table_rows"])

    # -- rows ------------------------------------------------------------------------------------------------

    def rows(self, table: str) -> list[Any]:
        if table not in self._rows:
            found = getattr(self.md, table, None)
            try:
                self._rows[table] = list(found.rows) if found is not None and found.num_rows else []
            except Exception:
                raise malformed(f"{table} table", "rows do not decode") from None
        return self._rows[table]

    def row(self, table: str, rid: int) -> Any | None:
        rows = self.rows(table)
        return rows[rid - 1] if 0 < rid <= len(rows) else None

    def required(self, table: str, rid: int) -> Any:
        """A row the caller enumerated from the table itself; its absence is damage, not a lookup miss."""
        found = self.row(table, rid)
        if found is None:
            raise malformed(f"{table} table", f"row {rid} is missing")
        return found

    def text(self, row: Any, attr: str, table: str) -> str:
        """A #Strings value; an index past the heap is a typed error naming the table."""
        value = getattr(row, attr, None)
        raw = getattr(row.struct, attr + "_StringIndex", 0)
        if value is None:
            if raw:
                raise malformed("#Strings heap", f"index 0x{raw:x} of a {table} row is out of range")
            return ""
        out = value.value if hasattr(value, "value") else value
        if isinstance(out, bytes):
            out = out.decode("utf-8", "replace")
        if len(out) > self.limits["max_heap_item_bytes"]:
            raise too_large(
                f"#Strings item of a {table} row", "max_heap_item_bytes", len(out), self.limits["max_heap_item_bytes"]
            )
        return str(out)

    def blob(self, row: Any, attr: str, table: str) -> bytes | None:
        value = getattr(row, attr, None)
        raw = getattr(row.struct, attr + "_BlobIndex", 0)
        if value is None:
            if raw:
                raise malformed("#Blob heap", f"index 0x{raw:x} of a {table} row is out of range")
            return None
        data = value.value if hasattr(value, "value") else value
        if not isinstance(data, bytes) or len(data) > self.limits["max_heap_item_bytes"]:
            return None
        return data

    def user_string(self, rid: int) -> str | None:
        heap = self.net.user_strings
        if heap is None:
            return None
        try:
            item = heap.get(rid, errors="replace")
            value = item.value if item is not None else None
        except Exception:
            return None
        if not isinstance(value, str):
            return None
        return value[: self.limits["max_heap_item_bytes"]]

    def user_strings_all(self) -> list[tuple[int, str]]:
        """Every #US heap entry as (offset, text), in heap order; a damaged entry ends the walk."""
        heap = self.net.user_strings
        data = getattr(heap, "__data__", None) if heap is not None else None
        if not isinstance(data, bytes):
            return []
        out: list[tuple[int, str]] = []
        pos, limit = 1, self.limits["max_heap_item_bytes"]
        while pos < len(data):
            blob = Blob(data[pos : pos + 4])
            try:
                n = blob.compressed()
            except SignatureError:
                break
            if n == 0:  # padding at the end of the heap
                pos += 1
                continue
            start = pos + blob.pos
            if start + n > len(data):
                break
            raw = data[start : start + min(n - (n & 1), limit)]
            out.append((pos, raw.decode("utf-16-le", "replace")))
            pos = start + n
        return out

    def constants(self) -> dict[tuple[str, int], object]:
        """Default values of fields, parameters and properties (the Constant table), by (table, rid)."""
        if self._constants is None:
            found: dict[tuple[str, int], object] = {}
            for row in self.rows("Constant"):
                table, rid = _table_name(row.Parent), _rid(row.Parent)
                data = self.blob(row, "Value", "Constant")
                if table and rid:
                    found[(table, rid)] = signatures.constant_value(int(row.Type or 0), data)
            self._constants = found
        return self._constants

    def enum_info(self, name: str) -> tuple[int | None, dict[int, str]]:
        """An enum defined in this assembly, by name: its underlying element type and its members by value."""
        if self._enums is None:
            self._enums = {}
            consts = self.constants()
            for rid, row in enumerate(self.rows("TypeDef"), 1):
                if self.index_type(row.Extends) != "System.Enum":
                    continue
                underlying: int | None = None
                names: dict[int, str] = {}
                for index in row.FieldList or []:
                    frid = index.row_index
                    fd = self.row("Field", frid)
                    if fd is None:
                        continue
                    if int(fd.struct.Flags) & 0x10 == 0:  # the instance field value__ holds the value
                        sig = self.blob(fd, "Signature", "Field")
                        if sig is not None and len(sig) >= 2:
                            underlying = sig[1]
                    elif isinstance(value := consts.get(("Field", frid)), int):
                        names.setdefault(value, self.text(fd, "Name", "Field"))
                self._enums[self.typedef_name(rid)] = (underlying, names)
        return self._enums.get(name, (None, {}))

    def local_types(self, token: int | None, rid: int = 0) -> list[str]:
        """The local variable types of method ``rid`` its body's LocalVarSig token names (empty when none or
        unreadable)."""
        if not token or token >> 24 != 0x11:
            return []
        sig = self.row("StandAloneSig", token & 0xFFFFFF)
        data = self.blob(sig, "Signature", "StandAloneSig") if sig is not None else None
        if not data or data[0] != 0x07:
            return []
        blob = Blob(data)
        blob.byte()
        try:
            count = min(blob.compressed(), signatures.MAX_PARAMS * 64)
            owner = self.method_owner.get(rid, 0)
            dec = Decoder(self.coded_type, self.type_generics.get(owner), self.method_generics.get(rid))
            return [dec.type(blob) for _ in range(count)]
        except SignatureError:
            return []

    # -- ownership and generic parameters ------------------------------------------------------------------

    def _index_owners(self) -> None:
        self.method_owner: dict[int, int] = {}
        self.field_owner: dict[int, int] = {}
        for rid, td in enumerate(self.rows("TypeDef"), 1):
            for index in td.MethodList or []:
                self.method_owner[index.row_index] = rid
            for index in td.FieldList or []:
                self.field_owner[index.row_index] = rid
        self.enclosing: dict[int, int] = {}
        for nc in self.rows("NestedClass"):
            nested, outer = _rid(nc.NestedClass), _rid(nc.EnclosingClass)
            if nested and outer:
                self.enclosing[nested] = outer
        self.type_generics: dict[int, list[str]] = {}
        self.method_generics: dict[int, list[str]] = {}
        for gp in sorted(self.rows("GenericParam"), key=lambda g: int(g.Number or 0)):
            owner = gp.Owner
            table = _table_name(owner)
            name = self.text(gp, "Name", "GenericParam")
            if table == "TypeDef":
                self.type_generics.setdefault(_rid(owner), []).append(name)
            elif table == "MethodDef":
                self.method_generics.setdefault(_rid(owner), []).append(name)

    # -- names ---------------------------------------------------------------------------------------------

    def typedef_name(self, rid: int) -> str:
        return self._nested_name(
            0,
            "TypeDef",
            rid,
            ("NestedClass table", "enclosing types form a cycle"),
            lambda cur, _: self.enclosing.get(cur, 0),
        )

    def typeref_name(self, rid: int) -> str:
        def outer(_: int, tr: Any) -> int:
            scope = tr.ResolutionScope
            return _rid(scope) if _table_name(scope) == "TypeRef" else 0

        return self._nested_name(1, "TypeRef", rid, ("TypeRef table", "resolution scopes form a cycle"), outer)

    def _nested_name(
        self, kind: int, table: str, rid: int, cycle: tuple[str, str], outer_of: Callable[[int, Any], int]
    ) -> str:
        """A TypeDef's or TypeRef's full name: the outermost type's namespace and name, then each nested type's,
        joined with '/' (``outer_of`` gives the enclosing row, 0 at the outermost; ``cycle`` words the error)."""
        key = (kind, rid)
        if key in self._type_names:
            return self._type_names[key]
        parts: list[str] = []
        cur, seen = rid, set[int]()
        while cur:
            if cur in seen or len(seen) > MAX_NESTING:
                raise malformed(*cycle)
            seen.add(cur)
            row = self.row(table, cur)
            if row is None:
                return f"<{table} {cur}>"
            name = self.text(row, "TypeName", table)
            outer = outer_of(cur, row)
            if not outer:
                ns = self.text(row, "TypeNamespace", table)
                name = f"{ns}.{name}" if ns else name
            parts.append(name)
            cur = outer
        out = "/".join(reversed(parts))
        self._type_names[key] = out
        return out

    def typespec_name(self, rid: int, depth: int = 0) -> str:
        if depth > signatures.MAX_DEPTH // 2:
            raise malformed("TypeSpec table", "a type signature refers to itself")
        ts = self.row("TypeSpec", rid)
        data = self.blob(ts, "Signature", "TypeSpec") if ts is not None else None
        if data is None:
            return UNREADABLE
        try:
            return Decoder(self.coded_type).type(Blob(data), depth)
        except SignatureError:
            return UNREADABLE

    def coded_type(self, table: int, rid: int, depth: int = 0) -> str:
        if table == 0:
            return self.typedef_name(rid)
        if table == 1:
            return self.typeref_name(rid)
        if table == 2:
            return self.typespec_name(rid, depth)
        raise SignatureError("bad coded index")

    def index_type(self, index: Any) -> str | None:
        """The name behind a TypeDefOrRef coded index; None for a null index."""
        rid, table = _rid(index), _table_name(index)
        if not rid:
            return None
        return self.coded_type({"TypeDef": 0, "TypeRef": 1, "TypeSpec": 2}.get(table or "", 3), rid)

    def method_sig(self, rid: int) -> tuple[str, list[str], int] | None:
        if rid not in self._method_sigs:
            md = self.row("MethodDef", rid)
            data = self.blob(md, "Signature", "MethodDef") if md is not None else None
            owner = self.method_owner.get(rid, 0)
            sig = None
            if data is not None:
                try:
                    dec = Decoder(self.coded_type, self.type_generics.get(owner), self.method_generics.get(rid))
                    sig = dec.method(Blob(data))
                except SignatureError:
                    sig = None
            self._method_sigs[rid] = sig
        return self._method_sigs[rid]

    def method_name(self, rid: int) -> str:
        md = self.row("MethodDef", rid)
        return self.text(md, "Name", "MethodDef") if md is not None else f"<MethodDef {rid}>"

    def method_key(self, rid: int) -> str:
        """``Type::Name<generics>(parameter types)``: stable across rebuilds that only move tokens."""
        if rid in self._method_keys:
            return self._method_keys[rid]
        owner = self.method_owner.get(rid, 0)
        owner_name = self.typedef_name(owner) if owner else "<Module>"
        sig = self.method_sig(rid)
        generics = self.method_generics.get(rid)
        gtext = f"<{', '.join(generics)}>" if generics else ""
        params = ", ".join(sig[1]) if sig else UNREADABLE
        key = f"{owner_name}::{self.method_name(rid)}{gtext}({params})"
        self._method_keys[rid] = key
        return key

    def field_key(self, rid: int) -> str:
        fd = self.row("Field", rid)
        owner = self.field_owner.get(rid, 0)
        name = self.text(fd, "Name", "Field") if fd is not None else f"<Field {rid}>"
        return f"{self.typedef_name(owner) if owner else '<Module>'}::{name}"

    def field_type(self, rid: int) -> str:
        fd = self.row("Field", rid)
        data = self.blob(fd, "Signature", "Field") if fd is not None else None
        if data is None:
            return UNREADABLE
        try:
            return Decoder(self.coded_type, self.type_generics.get(self.field_owner.get(rid, 0))).field(Blob(data))
        except SignatureError:
            return UNREADABLE

    def member_ref(self, rid: int) -> tuple[str, str]:
        """(key, signature text) of a MemberRef."""
        mr = self.row("MemberRef", rid)
        if mr is None:
            return f"<MemberRef {rid}>", UNREADABLE
        name = self.text(mr, "Name", "MemberRef")
        parent = mr.Class
        ptable, prid = _table_name(parent), _rid(parent)
        if ptable == "ModuleRef":
            mod = self.row("ModuleRef", prid)
            owner = f"[{self.text(mod, 'Name', 'ModuleRef')}]" if mod is not None else "<ModuleRef>"
        elif ptable == "MethodDef":
            return self.method_key(prid), UNREADABLE
        else:
            owner = self.index_type(parent) or "<Module>"
        data = self.blob(mr, "Signature", "MemberRef")
        if data is None:
            return f"{owner}::{name}", UNREADABLE
        try:
            dec = Decoder(self.coded_type)
            if signatures.is_field_signature(data):
                ftype = dec.field(Blob(data))
                return f"{owner}::{name}", f"{ftype} {name}"
            ret, params, _ = dec.method(Blob(data))
        except SignatureError:
            return f"{owner}::{name}", UNREADABLE
        return f"{owner}::{name}({', '.join(params)})", f"{ret} {name}({', '.join(params)})"

    def token_name(self, value: int) -> str:
        """What a metadata token in an IL operand names; an invalid token is shown, never followed."""
        table, rid = value >> 24, value & 0xFFFFFF
        if table == 0x70:
            text = self.user_string(rid)
            return _quote(text) if text is not None else f"<string {token_text(value)}>"
        name = TOKEN_TABLES.get(table)
        if name is None or self.row(name, rid) is None:
            return f"<invalid token {token_text(value)}>"
        if table in (0x01, 0x02, 0x1B):
            return self.coded_type({0x02: 0, 0x01: 1, 0x1B: 2}[table], rid)
        if table == 0x04:
            return self.field_key(rid)
        if table == 0x06:
            return self.method_key(rid)
        if table == 0x0A:
            return self.member_ref(rid)[0]
        if table == 0x2B:
            spec = self.row("MethodSpec", rid)
            method = spec.Method if spec is not None else None
            mrid, mtable = _rid(method), _table_name(method)
            if mtable == "MethodDef":
                return self.method_key(mrid)
            if mtable == "MemberRef":
                return self.member_ref(mrid)[0]
            return f"<invalid token {token_text(value)}>"
        sig = self.row("StandAloneSig", rid)
        data = self.blob(sig, "Signature", "StandAloneSig") if sig is not None else None
        try:
            if data is None:
                return UNREADABLE
            ret, params, _ = Decoder(self.coded_type).method(Blob(data))
        except SignatureError:
            return UNREADABLE
        return f"{ret}({', '.join(params)})"

    # -- identity ------------------------------------------------------------------------------------------

    def assembly_name(self) -> str:
        rows = self.rows("Assembly")
        if rows:
            return self.text(rows[0], "Name", "Assembly")
        mods = self.rows("Module")
        return self.text(mods[0], "Name", "Module") if mods else ""

    def file_offset(self, rva: int) -> int | None:
        try:
            offset = self.pe.get_offset_from_rva(rva)
        except Exception:
            return None
        return offset if isinstance(offset, int) and 0 <= offset < len(self.data) else None


def _stream_name(stream: Any) -> str:
    raw = stream.struct.Name
    return raw.rstrip(b"\x00").decode("ascii", "replace") if isinstance(raw, bytes) else str(raw)


def _rid(index: Any) -> int:
    return int(getattr(index, "row_index", 0) or 0) if index is not None else 0


def _table_name(index: Any) -> str | None:
    table = getattr(index, "table", None) if index is not None else None
    return getattr(table, "name", None)


def _quote(text: str, limit: int = 200) -> str:
    import json

    short = text if len(text) <= limit else text[:limit] + "…"
    return json.dumps(short, ensure_ascii=False)


def public_key_token(key: bytes) -> str | None:
    if not key:
        return None
    if len(key) == 8:  # an AssemblyRef may carry the token itself
        return key.hex()
    return hashlib.sha1(key).digest()[-8:][::-1].hex()


def read_target(call: ToolCall, limits: dict[str, int]) -> tuple[Target, bytes]:
    """The file named by ``path``, or the open binary; bounded by ``max_file_bytes``."""
    path = arg_str(call.args, "path")
    target = identify(path, call.ctx) if path else call.session.require_target()
    if target.size > limits["max_file_bytes"]:
        raise too_large("file", "max_file_bytes", target.size, limits["max_file_bytes"])
    try:
        with os.fdopen(open_regular(target.resolved_path, code="unsupported_target", what="target"), "rb") as fh:
            data = fh.read(limits["max_file_bytes"] + 1)
    except OSError as exc:
        raise read_error(target.path, exc) from None
    if len(data) > limits["max_file_bytes"]:
        raise too_large("file", "max_file_bytes", len(data), limits["max_file_bytes"])
    return target, confirm_hashed(target, data)


def parse(data: bytes, limits: dict[str, int]) -> Image:
    """Parse under bounds: typed errors for every defect, never a parser's exception text."""
    try:
        return Image(data, limits)
    except ReaError:
        raise
    except (RecursionError, MemoryError):
        raise malformed("metadata", "structures nest or repeat beyond what can be read") from None
    except Exception:
        raise malformed("metadata", "a structure does not decode") from None


def type_flags(flags: int, base: str | None) -> list[str]:
    out = [_TYPE_VISIBILITY[flags & 7]]
    if flags & 0x20:
        out.append("interface")
    elif base in ("System.Enum",):
        out.append("enum")
    elif base in ("System.ValueType",):
        out.append("struct")
    elif base in ("System.MulticastDelegate",):
        out.append("delegate")
    else:
        out.append("class")
    if flags & 0x80 and not flags & 0x20:
        out.append("abstract")
    if flags & 0x100:
        out.append("sealed")
    return out


def member_flags(flags: int, method: bool) -> list[str]:
    out = [_MEMBER_ACCESS[flags & 7]]
    if flags & 0x10:
        out.append("static")
    if method:
        for bit, word in (
            (0x20, "final"),
            (0x40, "virtual"),
            (0x400, "abstract"),
            (0x800, "special-name"),
            (0x2000, "pinvoke"),
        ):
            if flags & bit:
                out.append(word)
    else:
        for bit, word in ((0x20, "readonly"), (0x40, "const")):
            if flags & bit:
                out.append(word)
    return out
