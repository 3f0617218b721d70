"""The analyst's C types: a per-target type library, function prototypes and typed data.

Declarations, prototypes and data types live in the kernel's annotation store (``rea.annotations``,
per target SHA-256), so they travel in Evidence bundles and change the annotation revision that
Evidence carries: a decompilation made before a type changed is never shown as current. Parsing and
layout are the kernel's (``rea.typelib``, pycparser); the engines that can use types get them before
they render (angr's decompiler, radare2's ``td``/``afs``), and every provider shows a prototype in
``procedure_info`` and a typed view of the bytes in ``inspect_native_data_type``.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from rea.plugin import LIMITS
from rea.plugin import MAX_TYPE_DECLARATION
from rea.plugin import DataInspection
from rea.plugin import Evidence
from rea.plugin import Note
from rea.plugin import Notebook
from rea.plugin import ProcedureRef
from rea.plugin import ReaError
from rea.plugin import Shape
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import TypeEntry
from rea.plugin import arg_float
from rea.plugin import arg_str
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import typelib
from rea_plugins.binary.core import annotate
from rea_plugins.binary.core.regions import Mapped
from rea_plugins.binary.core.regions import Region
from rea_plugins.binary.core.regions import require_mapped
from rea_plugins.binary.core.schema import ADDRESS
from rea_plugins.binary.core.schema import DOCUMENT
from rea_plugins.binary.core.schema import LIMIT
from rea_plugins.binary.core.schema import OFFSET
from rea_plugins.binary.core.schema import PROCEDURE
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import notebook_tool
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.core.schema import run
from rea_plugins.binary.navigation.image import file_backed
from rea_plugins.binary.notebook.notes import WRITE
from rea_plugins.binary.notebook.notes import analyst_evidence

LIMITATION = "types come from rea's annotation store (keyed by the target's SHA-256), not from the engine"
MAX_ARRAY_COUNT = 1 << 20
MAX_TYPED_BYTES = 1 << 16


# -- result shapes ---------------------------------------------------------------------------------------


class DeclaredType(Shape):
    name: str
    kind: str
    changed: bool


class TypesDeclared(Shape):
    """What declare_c_types added or replaced, the library's size after it, and the store's revision."""

    declared: list[DeclaredType]
    type_count: int
    annotation_revision: str | None


class PrototypeChange(Shape):
    """A procedure's prototype now (null when cleared) and before, and the store's revision."""

    procedure: ProcedureRef
    prototype: typelib.Prototype | None
    previous: str | None
    changed: bool
    annotation_revision: str | None


class DataTypeChange(Shape):
    """The type of the datum at an address now (null when cleared) and before, its size, the revision."""

    address: str
    type: str | None
    size: int | None
    previous: str | None
    changed: bool
    annotation_revision: str | None


class TypeItem(Shape):
    name: str
    kind: str
    size: int | None
    alignment: int | None


class TypeList(Shape):
    """A page of the target's type library, by name, with sizes under the target's ABI."""

    types: list[TypeItem]
    abi: str
    offset: int
    limit: int
    total: int
    next_offset: int | None


class TypedData(Shape):
    """The datum's bytes read as the analyst's type: each member's path, type, offset, size and value."""

    type: str
    size: int
    abi: str
    values: list[typelib.TypedValue]
    truncated: bool = False


class TypedDataInspection(DataInspection):
    """inspect_native_data_type with the analyst's type at the address, read from the bytes."""

    user_type: TypedData | None = None


# -- helpers ------------------------------------------------------------------------------------------------


def abi(call: ToolCall) -> typelib.Abi:
    target = call.session.require_target()
    return typelib.abi_for(target.format, target.architecture)


def _write(
    call: ToolCall, change: Callable[[dict[str, Note], dict[str, TypeEntry]], None], sha256: str | None = None
) -> Notebook:
    target = call.session.require_target()
    nb = call.session.annotations.update_all(sha256 or target.sha256, change, call.ctx)
    annotate.refresh(call, nb)
    return nb


def _evidence(call: ToolCall, body: msgspec.Struct, *, write: bool = False) -> Evidence:
    return analyst_evidence(call, body, [LIMITATION], write=write)


def _text_arg(call: ToolCall, name: str, limit: int) -> str:
    value = arg_str(call.args, name, "")
    if "\0" in value or len(value) > limit:
        raise invalid_request(
            f"{name}: at most {limit} characters, no NUL", [issue(name, "out_of_range", f"at most {limit}")]
        )
    return str(value)


# -- declare_c_types -----------------------------------------------------------------------------------------


def _declare(call: ToolCall) -> Evidence:
    check_document(call)
    source = _text_arg(call, "declarations", typelib.MAX_SOURCE)
    rows: list[DeclaredType] = []

    def change(_addresses: dict[str, Note], types: dict[str, TypeEntry]) -> None:
        # Parsed under the lock, against the library as it is now: a concurrent declaration is never lost.
        found = typelib.declare(source, types)
        for name, entry in sorted(found.items()):
            rows.append(DeclaredType(name=name, kind=entry.kind, changed=types.get(name) != entry))
            types[name] = entry
        typelib.Layout(types, abi(call))  # the whole library still parses

    nb = _write(call, change)
    return _evidence(
        call, TypesDeclared(declared=rows, type_count=len(nb.types), annotation_revision=nb.revision), write=True
    )


# -- set_function_prototype ----------------------------------------------------------------------------------


def _set_prototype(call: ToolCall) -> Evidence:
    check_document(call)
    info = run(call, "procedure_info", {"procedure": call.args["procedure"]}).normalized
    address = str(info["address"])
    given = arg_str(call.args, "prototype")
    parsed: list[typelib.Prototype | None] = []
    before: dict[str, str | None] = {}

    def change(addresses: dict[str, Note], types: dict[str, TypeEntry]) -> None:
        note = addresses.get(address, Note())
        before["prototype"] = note.prototype
        text = given
        path = "prototype"
        if text is None:
            if note.signature is None:
                raise invalid_request(
                    f"{address} has no signature note to make a prototype of; pass prototype",
                    [issue("prototype", "missing_argument", "give the C prototype")],
                )
            text, path = note.signature, "signature"
        if text.strip() == "":
            parsed.append(None)
            addresses[address] = msgspec.structs.replace(note, prototype=None)
            return
        if len(text) > LIMITS["prototype"] or "\0" in text:
            raise invalid_request(
                "prototype: too long", [issue(path, "out_of_range", f"at most {LIMITS['prototype']} characters")]
            )
        proto = typelib.prototype(text, types, path)
        parsed.append(proto)
        # The signature note becomes the prototype: one place says what the function takes.
        addresses[address] = msgspec.structs.replace(note, prototype=proto.text, signature=None)

    nb = _write(call, change)
    proto = parsed[0] if parsed else None
    return _evidence(
        call,
        PrototypeChange(
            procedure=ProcedureRef(address=address, name=str(info["name"])),
            prototype=proto,
            previous=before.get("prototype"),
            changed=before.get("prototype") != (None if proto is None else proto.text),
            annotation_revision=nb.revision,
        ),
        write=True,
    )


# -- set_data_type ------------------------------------------------------------------------------------------


def _set_data_type(call: ToolCall) -> Evidence:
    check_document(call)
    address, _ = require_mapped(call, arg_str(call.args, "address", ""))  # required by the schema
    given = _text_arg(call, "type", LIMITS["data_type"]).strip()
    # A number: the schema's integer admits 4.0, read as 4.
    count = arg_float(call.args, "array_length")
    chosen: list[str | None] = []
    before: dict[str, str | None] = {}
    size: list[int | None] = []

    def change(addresses: dict[str, Note], types: dict[str, TypeEntry]) -> None:
        note = addresses.get(address, Note())
        before["type"] = note.data_type
        if not given:
            chosen.append(None)
            size.append(None)
            addresses[address] = msgspec.structs.replace(note, data_type=None)
            return
        name = typelib.type_name(given, types, "type")
        if count is not None:
            name = typelib.type_name(f"{name}[{int(count)}]", types, "array_length")
        layout = typelib.Layout(types, abi(call)).of_name(name, "type")
        if layout.size is None:
            raise invalid_request(
                f"{name} has no size (a function or an incomplete type)",
                [issue("type", "invalid_value", "the type of a datum needs a size")],
            )
        chosen.append(name)
        size.append(layout.size)
        addresses[address] = msgspec.structs.replace(note, data_type=name)

    nb = _write(call, change)
    return _evidence(
        call,
        DataTypeChange(
            address=address,
            type=chosen[0],
            size=size[0],
            previous=before.get("type"),
            changed=before.get("type") != chosen[0],
            annotation_revision=nb.revision,
        ),
        write=True,
    )


# -- list_types / inspect_type -------------------------------------------------------------------------------


def _list_types(call: ToolCall) -> Evidence:
    check_document(call)
    nb = annotate.notebook(call)
    kind = arg_str(call.args, "kind")
    names = [n for n, e in sorted(nb.types.items()) if kind is None or e.kind == kind]
    # Numbers: the schema's integer admits 20.0, read as 20.
    start, limit = int(arg_float(call.args, "offset", 0)), int(arg_float(call.args, "limit", 100))
    page = names[start : start + limit]
    layout = typelib.Layout(nb.types, abi(call)) if page else None
    items = []
    for name in page:
        call.ctx.check("list_types")
        size = align = None
        if layout is not None:
            try:
                found = layout.of_name(name)
                size, align = found.size, found.alignment
            except ReaError:
                pass
        items.append(TypeItem(name=name, kind=nb.types[name].kind, size=size, alignment=align))
    end = start + limit
    return _evidence(
        call,
        TypeList(
            types=items,
            abi=abi(call).name,
            offset=start,
            limit=limit,
            total=len(names),
            next_offset=end if end < len(names) else None,
        ),
    )


def _inspect_type(call: ToolCall) -> Evidence:
    check_document(call)
    nb = annotate.notebook(call)
    name = arg_str(call.args, "name", "").strip()  # required by the schema
    given = arg_str(call.args, "abi")
    chosen = typelib.ABIS[given] if given else abi(call)
    found = typelib.Layout(nb.types, chosen).of_name(name, "name")
    if found.incomplete and name not in nb.types:
        raise invalid_request(
            f"{name} is not declared in the target's type library",
            [issue("name", "invalid_value", "declare it with declare_c_types, or list_types to see the library")],
        )
    return _evidence(call, found)


# -- what other tools show ------------------------------------------------------------------------------------


def prototype_of(nb: Notebook, address: str) -> typelib.Prototype | None:
    """The analyst's prototype of the procedure at ``address``, parsed (None when none, or it no longer parses)."""
    text = nb.note(address).prototype
    if text is None:
        return None
    try:
        return typelib.prototype(text, nb.types)
    except ReaError:
        return None


def read_mapped(call: ToolCall, address: str, region: Region, size: int) -> bytes:
    """``size`` bytes at a mapped address as the file holds them (zero past its file-backed part); ``region`` is the
    provider's row of the region that maps it."""
    data, count, _, _ = file_backed(call, address, region, size)
    return data + b"\0" * (count - len(data))


def typed_data(call: ToolCall, address: str, where: Mapped) -> TypedData | None:
    """The datum at ``address`` read as the type the analyst set there (None when none is set); ``where`` is
    ``require_mapped``'s: the provider's rows of the segment, the section and the region that map it."""
    nb = annotate.notebook(call)
    name = nb.note(address).data_type
    region = where["region"]
    if name is None or region is None:
        return None
    chosen = abi(call)
    try:
        layout = typelib.Layout(nb.types, chosen)
        size = layout.of_name(name).size or 0
        data = read_mapped(call, address, region, min(size, MAX_TYPED_BYTES))
        values, truncated = typelib.typed_view(layout, name, data, int(address, 16))
    except ReaError as exc:
        if exc.code != "invalid_request":
            raise
        # The type no longer lays out (a type it uses was redeclared): the datum is shown untyped.
        return None
    return TypedData(type=name, size=size, abi=chosen.name, values=values, truncated=truncated or len(data) < size)


# -- tool definitions ------------------------------------------------------------------------------------------


def tools() -> list[ToolDef]:
    kinds = ["struct", "union", "enum", "typedef"]
    return [
        notebook_tool(
            name="declare_c_types",
            result_type=TypesDeclared,
            description=(
                "Add C structs, unions, enums and typedefs to the open target's type library (a name "
                "declared again is replaced); errors give line and column."
            ),
            input_schema=obj(
                {
                    "declarations": prop(
                        "string",
                        "C type declarations (no preprocessor; stdint names are known).",
                        ["struct opts { int verbose; const char *extensions; };"],
                        minLength=1,
                        maxLength=typelib.MAX_SOURCE,
                    ),
                    "document": DOCUMENT,
                },
                ("declarations",),
            ),
            handler=_declare,
            effects=WRITE,
            requires_operations=("list_segments",),
            examples=({"declarations": "typedef struct opts { int verbose; const char *extensions; } opts_t;"},),
        ),
        notebook_tool(
            name="set_function_prototype",
            result_type=PrototypeChange,
            description=(
                "Give a procedure a C prototype over the type library (omitted: its signature note; "
                '"" clears); decompilers that take types use it.'
            ),
            input_schema=obj(
                {
                    "procedure": PROCEDURE,
                    "prototype": prop(
                        "string",
                        "C prototype; omit to parse the signature note.",
                        ["int apply_opts(struct opts *opts)"],
                        maxLength=LIMITS["prototype"],
                    ),
                    "document": DOCUMENT,
                },
                ("procedure",),
            ),
            handler=_set_prototype,
            effects=WRITE,
            requires_operations=("procedure_info",),
            cli_subject="procedure",
            examples=({"procedure": "0x401136", "prototype": "int apply_opts(struct opts *opts)"},),
        ),
        notebook_tool(
            name="set_data_type",
            result_type=DataTypeChange,
            description=(
                'Type the datum at an address with a library type, or an array of array_length of them ("" clears); '
                "inspect_native_data_type then reads its fields."
            ),
            input_schema=obj(
                {
                    "address": ADDRESS,
                    "type": prop(
                        "string",
                        "C type name from the library or a base type.",
                        ["struct opts", "uint32_t"],
                        maxLength=LIMITS["data_type"],
                    ),
                    "array_length": prop(
                        "integer", "An array of this many elements of type.", [4], minimum=1, maximum=MAX_ARRAY_COUNT
                    ),
                    "document": DOCUMENT,
                },
                ("address", "type"),
            ),
            handler=_set_data_type,
            effects=WRITE,
            requires_operations=("list_segments",),
            cli_subject="address",
            examples=({"address": "0x404040", "type": "struct opts"},),
        ),
        notebook_tool(
            name="list_types",
            result_type=TypeList,
            description="Page through the open target's type library: name, kind, size and alignment.",
            input_schema=obj(
                {
                    "kind": prop("string", "Only types of this kind.", ["struct"], enum=kinds),
                    "offset": OFFSET,
                    "limit": LIMIT,
                    "document": DOCUMENT,
                }
            ),
            handler=_list_types,
            requires_operations=("list_segments",),
            examples=({}, {"kind": "struct"}),
        ),
        notebook_tool(
            name="inspect_type",
            result_type=typelib.TypeLayout,
            description="A C type's size, alignment and member offsets for the target's ABI (or abi).",
            input_schema=obj(
                {
                    "name": prop(
                        "string",
                        "Type name: a library type or any C type name.",
                        ["struct opts", "opts_t *"],
                        minLength=1,
                        maxLength=MAX_TYPE_DECLARATION,
                    ),
                    "abi": prop(
                        "string", "Data model instead of the target's.", ["ilp32-i386"], enum=list(typelib.ABIS)
                    ),
                    "document": DOCUMENT,
                },
                ("name",),
            ),
            handler=_inspect_type,
            requires_operations=("list_segments",),
            cli_subject="name",
            examples=({"name": "struct opts"},),
        ),
    ]
