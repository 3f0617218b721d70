"""The analyst's notebook tools: names, comments, bookmarks and function annotations.

Writes go to the kernel's annotation store (``rea.annotations``), keyed by the target's SHA-256, so
they outlive the connection and apply to every provider. Each write answers with what the store
holds afterwards (read back under its lock) and the new annotation revision.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import msgspec

from rea.plugin import LIMITS
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import Note
from rea.plugin import Notebook
from rea.plugin import OperationResult
from rea.plugin import ProcedureRef
from rea.plugin import ReaError
from rea.plugin import Shape
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import arg_object
from rea.plugin import arg_str
from rea.plugin import check_field
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import normalize_address
from rea_plugins.binary.core import annotate
from rea_plugins.binary.core.regions import require_mapped
from rea_plugins.binary.core.schema import ADDRESS
from rea_plugins.binary.core.schema import ADDRESS_INPUT
from rea_plugins.binary.core.schema import ADDRESS_PATTERN
from rea_plugins.binary.core.schema import DOCUMENT
from rea_plugins.binary.core.schema import PROCEDURE
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import notebook_tool
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.core.schema import run
from rea_plugins.binary.core.shapes import AnnotatedProcedure
from rea_plugins.binary.core.shapes import AnnotationChange
from rea_plugins.binary.core.shapes import AnnotationField
from rea_plugins.binary.core.shapes import Bookmark
from rea_plugins.binary.core.shapes import Bookmarks
from rea_plugins.binary.core.shapes import CommentAt
from rea_plugins.binary.core.shapes import FieldChange
from rea_plugins.binary.core.shapes import FunctionAnnotation
from rea_plugins.binary.core.shapes import InlineCommentAt
from rea_plugins.binary.core.shapes import NameChange
from rea_plugins.binary.core.shapes import NamesChange
from rea_plugins.binary.navigation.cursor import cursor

MAX_NAMES = 1000
MAX_BOOKMARK_PROCEDURES = 1000
# Writes change a file outside the target (the store) and may overwrite or clear what was there.
WRITE = ToolEffects(mutates_session=True, writes_filesystem=True, may_discard_data=True)
# The two comment fields (comment, inline_comment), read and set alike.
CommentField = Literal["comment", "inline_comment"]
READ_LIMITATION = "annotations come from rea's annotation store (keyed by the target's SHA-256), not from the engine"


def analyst_evidence(
    call: ToolCall, body: msgspec.Struct, limitations: list[str] | None = None, *, write: bool = False
) -> Evidence:
    """Evidence of a notebook answer (names, comments, types): what the analyst wrote is their inference, whatever
    the binary says. A write's parameters are its arguments as sent, a read's the annotation revision it reflects."""
    return call.session.evidence(
        call.tool.name,
        dict(call.args) if write else annotate.parameters(call),
        OperationResult(normalized=body, limitations=limitations or [READ_LIMITATION]),
        authority="analyst-inference",
    )


def _write_evidence(call: ToolCall, body: Shape) -> Evidence:
    return analyst_evidence(call, body, write=True)


def _address_or_cursor(call: ToolCall) -> str:
    given = arg_str(call.args, "address")
    if given is not None:
        return normalize_address(given)
    here = cursor(call)
    if here is None:
        raise invalid_request(
            "the cursor has no address yet; pass address",
            [issue("address", "missing_argument", "give the address to read")],
        )
    return here


def _procedure_of(call: ToolCall, address: str) -> ProcedureRef | None:
    if not call.session.supports("resolve_containing_procedure"):
        return None
    found = run(call, "resolve_containing_procedure", {"address": address}).normalized["procedure"]
    return ProcedureRef(address=found["address"], name=found["name"]) if found else None


def _write(
    call: ToolCall, changes: dict[str, dict[str, str | None]], names: dict[str, str] | None = None
) -> tuple[Notebook, dict[str, Note]]:
    """Apply field changes at once under the store's lock; a user name taken elsewhere refuses all of them."""
    target = call.session.require_target()
    before: dict[str, Note] = {}

    def change(addresses: dict[str, Note]) -> None:
        taken = {n.name: a for a, n in addresses.items() if n.name is not None and a not in (names or {})}
        for address, name in (names or {}).items():
            owner = taken.get(name)
            if owner is not None and owner != address:
                raise invalid_request(
                    f"{name!r} already names {owner}; names are unique within a target",
                    [issue(_name_path(call, address), "invalid_value", f"the name is given to {owner}")],
                )
        for address, fields in changes.items():
            prior = addresses.get(address, Note())
            before[address] = prior
            addresses[address] = msgspec.structs.replace(prior, **fields)

    nb = call.session.annotations.update(target.sha256, change, call.ctx)
    annotate.refresh(call, nb)
    return nb, before


def _name_path(call: ToolCall, address: str) -> str:
    return f"names/{address}" if call.tool.name == "set_addresses_names" else "name"


def _engine_collision(call: ToolCall, address: str, name: str, path: str) -> None:
    """A user name must not select another procedure the engine already calls by that name."""
    if not call.session.supports("procedure_address"):
        return
    try:
        found = call.session.execute("procedure_address", {"procedure": name}, call.ctx).normalized
    except ReaError as exc:
        if exc.code == "invalid_request":
            return
        raise
    if found.get("address") not in (None, address):
        raise invalid_request(
            f"{name!r} already names the procedure at {found['address']}",
            [issue(path, "invalid_value", f"the binary's procedure {found['address']} has it")],
        )


# -- reads ----------------------------------------------------------------------------------------------


def _read_field(field: CommentField) -> Callable[[ToolCall], Evidence]:
    def handle(call: ToolCall) -> Evidence:
        check_document(call)
        address = _address_or_cursor(call)
        value = getattr(annotate.notebook(call).note(address), field)
        procedure = _procedure_of(call, address)
        if field == "comment":
            return analyst_evidence(call, CommentAt(address=address, comment=value, procedure=procedure))
        return analyst_evidence(call, InlineCommentAt(address=address, inline_comment=value, procedure=procedure))

    return handle


def _list_bookmarks(call: ToolCall) -> Evidence:
    check_document(call)
    nb = annotate.notebook(call)
    marks = [(a, n.bookmark) for a, n in nb.addresses.items() if n.bookmark is not None]
    items = []
    for i, (address, label) in enumerate(marks):
        call.ctx.check("list_bookmarks")
        procedure = _procedure_of(call, address) if i < MAX_BOOKMARK_PROCEDURES else None
        items.append(Bookmark(address=address, name=label, procedure=procedure))
    lims = [READ_LIMITATION]
    if len(marks) > MAX_BOOKMARK_PROCEDURES:
        lims.append(f"procedures are given for the first {MAX_BOOKMARK_PROCEDURES} bookmarks only")
    return analyst_evidence(call, Bookmarks(bookmarks=items, total=len(items)), lims)


# -- writes ---------------------------------------------------------------------------------------------


def _changed(
    call: ToolCall, address: str, field: AnnotationField, value: str | None, names: dict[str, str] | None = None
) -> Evidence:
    """Write one field at an address (None clears it) and answer what it holds now and held before."""
    nb, before = _write(call, {address: {field: value}}, names)
    previous = getattr(before[address], field)
    return _write_evidence(
        call,
        AnnotationChange(
            address=address,
            field=field,
            value=getattr(nb.note(address), field),
            previous=previous,
            changed=previous != value,
            annotation_revision=nb.revision,
        ),
    )


def _set_field(field: AnnotationField, argument: str) -> Callable[[ToolCall], Evidence]:
    """The handler that sets ``field`` at ``address`` to the argument ``argument`` (set_comment, set_bookmark, ...)."""

    def handle(call: ToolCall) -> Evidence:
        check_document(call)
        address, _ = require_mapped(call, arg_str(call.args, "address", ""))  # required by the schema
        # "" clears a field (a bookmark keeps it as its label); a bookmark's label is optional.
        value = check_field(field, arg_str(call.args, argument, ""), argument)
        names = None
        if field == "name" and value is not None:
            _engine_collision(call, address, value, argument)
            names = {address: value}
        return _changed(call, address, field, value, names)

    return handle


def _unset_bookmark(call: ToolCall) -> Evidence:
    check_document(call)
    return _changed(call, normalize_address(arg_str(call.args, "address", "")), "bookmark", None)  # address: required


def _set_addresses_names(call: ToolCall) -> Evidence:
    check_document(call)
    given = arg_object(call.args, "names") or {}  # required by the schema
    wanted: dict[str, str | None] = {}
    for raw, name in given.items():
        address, _ = require_mapped(call, raw, f"names/{raw}")
        if address in wanted:
            raise invalid_request(
                f"{raw} and another key name the same address {address}",
                [issue(f"names/{raw}", "invalid_value", "one entry per address")],
            )
        wanted[address] = check_field("name", str(name), f"names/{raw}")
    chosen = [n for n in wanted.values() if n is not None]
    if len(set(chosen)) != len(chosen):
        dup = next(n for n in chosen if chosen.count(n) > 1)
        raise invalid_request(
            f"{dup!r} is given to more than one address",
            [issue("names", "invalid_value", "names are unique within a target")],
        )
    for address, name in wanted.items():
        if name is not None:
            _engine_collision(call, address, name, f"names/{address}")
    nb, before = _write(
        call, {a: {"name": n} for a, n in wanted.items()}, {a: n for a, n in wanted.items() if n is not None}
    )
    rows = [
        NameChange(address=a, name=nb.note(a).name, previous=before[a].name, changed=before[a].name != n)
        for a, n in sorted(wanted.items(), key=lambda kv: int(kv[0], 16))
    ]
    return _write_evidence(
        call, NamesChange(names=rows, changed_count=sum(r.changed for r in rows), annotation_revision=nb.revision)
    )


_FUNCTION_FIELDS = ("name", "comment", "inline_comment", "signature", "notes")


def _annotate_function(call: ToolCall) -> Evidence:
    check_document(call)
    fields = {f: text for f in _FUNCTION_FIELDS if (text := arg_str(call.args, f)) is not None}
    if not fields:
        raise invalid_request(
            "annotate_native_function needs at least one of " + ", ".join(_FUNCTION_FIELDS),
            [issue("(root)", "missing_argument", "give name, comment, inline_comment, signature or notes")],
        )
    info = run(call, "procedure_info", {"procedure": call.args["procedure"]}).normalized
    if info.get("kind") not in (None, "local"):
        kind = str(info["kind"])
        raise invalid_request(
            f"{call.args['procedure']} is {'an' if kind[:1] in 'aeiou' else 'a'} {kind} procedure; "
            "only local functions are annotated",
            [issue("procedure", "invalid_value", "expected a local function")],
        )
    address = info["address"]
    values = {f: check_field(f, v, f) for f, v in fields.items()}
    names = None
    if values.get("name") is not None:
        _engine_collision(call, address, str(values["name"]), "name")
        names = {address: str(values["name"])}
    nb, before = _write(call, {address: values}, names)
    note = nb.note(address)
    changed = {f: FieldChange(value=getattr(note, f), previous=getattr(before[address], f)) for f in values}
    original = info.get("original_name") or info["name"]
    return _write_evidence(
        call,
        FunctionAnnotation(
            procedure=AnnotatedProcedure(address=address, name=note.name or original, original_name=original),
            fields=changed,
            annotation_revision=nb.revision,
        ),
    )


def tools() -> list[ToolDef]:
    optional_address = prop(
        "string", "Address (0x hex); the cursor when omitted.", ["0x401136"], pattern=ADDRESS_PATTERN
    )

    def text(what: str, field: str) -> JSONObject:
        return prop(
            "string",
            f'{what} (at most {LIMITS[field]} characters; "" clears it).',
            ["checks the licence"],
            maxLength=LIMITS[field],
        )

    name = prop(
        "string",
        'An identifier (letters, digits, _ . $ @, :: scopes; at most 255); "" removes the user name.',
        ["parse_options"],
        maxLength=LIMITS["name"],
    )
    names: JSONObject = {
        "type": "object",
        "description": 'Address (0x hex) to identifier; "" removes that user name.',
        "propertyNames": {"pattern": ADDRESS_PATTERN},
        "additionalProperties": {"type": "string", "maxLength": LIMITS["name"]},
        "minProperties": 1,
        "maxProperties": MAX_NAMES,
        "examples": [{"0x401136": "parse_options", "0x401200": "usage"}],
    }
    read_schema = obj({"address": optional_address, "document": DOCUMENT})
    target_ops = ("list_documents",)
    write_ops = ("list_segments",)
    # The two comments, read (comment, inline_comment) and written (set_comment, set_inline_comment) alike: the
    # field, its reader's shape, its label, the setter's description and example.
    comments: tuple[tuple[CommentField, type[Shape], str, str, str], ...] = (
        (
            "comment",
            CommentAt,
            "Comment",
            'Set (or with "" clear) the comment at an address; kept per target across connections and providers.',
            "validates the licence key",
        ),
        (
            "inline_comment",
            InlineCommentAt,
            "Inline comment",
            'Set (or with "" clear) the inline comment shown beside the instruction at an address.',
            "key length",
        ),
    )
    return [
        *(
            notebook_tool(
                name=field,
                result_type=shape,
                description=f"The analyst's {label.lower()} at an address (or the cursor).",
                input_schema=read_schema,
                handler=_read_field(field),
                requires_operations=target_ops,
                cli_subject="address",
                examples=({}, {"address": "0x401136"}),
            )
            for field, shape, label, _, _ in comments
        ),
        notebook_tool(
            name="list_bookmarks",
            result_type=Bookmarks,
            description="Every bookmark of the open target, by address, with its label and procedure.",
            input_schema=obj({"document": DOCUMENT}),
            handler=_list_bookmarks,
            requires_operations=target_ops,
            examples=({},),
        ),
        *(
            notebook_tool(
                name=f"set_{field}",
                result_type=AnnotationChange,
                description=setter,
                input_schema=obj(
                    {"address": ADDRESS, "comment": text(label, field), "document": DOCUMENT}, ("address", "comment")
                ),
                handler=_set_field(field, "comment"),
                effects=WRITE,
                requires_operations=write_ops,
                cli_subject="address",
                examples=({"address": "0x401136", "comment": example},),
            )
            for field, _, label, setter, example in comments
        ),
        notebook_tool(
            name="set_address_name",
            result_type=AnnotationChange,
            description=(
                "Name an address (a procedure, a datum, a label); every read tool then shows the name "
                "(name_source user) and accepts it as a procedure selector."
            ),
            input_schema=obj({"address": ADDRESS, "name": name, "document": DOCUMENT}, ("address", "name")),
            handler=_set_field("name", "name"),
            effects=WRITE,
            requires_operations=write_ops,
            cli_subject="address",
            examples=({"address": "0x401136", "name": "parse_options"},),
        ),
        notebook_tool(
            name="set_addresses_names",
            result_type=NamesChange,
            description=f"Name up to {MAX_NAMES} addresses at once (all or none are written).",
            input_schema=obj({"names": names, "document": DOCUMENT}, ("names",)),
            handler=_set_addresses_names,
            effects=WRITE,
            requires_operations=write_ops,
            examples=({"names": {"0x401136": "parse_options", "0x401200": "usage"}},),
        ),
        notebook_tool(
            name="set_bookmark",
            result_type=AnnotationChange,
            description="Bookmark an address, with an optional label (replaces the label of an existing one).",
            input_schema=obj(
                {
                    "address": ADDRESS,
                    "name": prop(
                        "string", "Bookmark label (at most 255).", ["licence check"], maxLength=LIMITS["bookmark"]
                    ),
                    "document": DOCUMENT,
                },
                ("address",),
            ),
            handler=_set_field("bookmark", "name"),
            effects=WRITE,
            requires_operations=write_ops,
            cli_subject="address",
            examples=({"address": "0x401136"}, {"address": "0x401136", "name": "licence check"}),
        ),
        notebook_tool(
            name="unset_bookmark",
            result_type=AnnotationChange,
            description="Remove the bookmark at an address.",
            input_schema=ADDRESS_INPUT,
            handler=_unset_bookmark,
            effects=WRITE,
            requires_operations=target_ops,
            cli_subject="address",
            examples=({"address": "0x401136"},),
        ),
        notebook_tool(
            name="annotate_native_function",
            result_type=FunctionAnnotation,
            description=(
                "Annotate a local function's entry at once: name, comment, inline comment, signature "
                'and notes ("" clears a field); kept in rea\'s annotation store, the binary is never '
                "modified."
            ),
            input_schema=obj(
                {
                    "procedure": PROCEDURE,
                    "name": name,
                    "comment": text("Comment", "comment"),
                    "inline_comment": text("Inline comment", "inline_comment"),
                    "signature": prop(
                        "string",
                        "C prototype as the analyst reads it (one line, at most 1024).",
                        ["int parse_options(int argc, char **argv)"],
                        maxLength=LIMITS["signature"],
                    ),
                    "notes": text("Free-form notes", "notes"),
                    "document": DOCUMENT,
                },
                ("procedure",),
            ),
            handler=_annotate_function,
            effects=WRITE,
            requires_operations=("procedure_info",),
            cli_subject="procedure",
            examples=(
                {"procedure": "main", "signature": "int main(int argc, char **argv)"},
                {"procedure": "0x401136", "name": "parse_options", "notes": "reads argv"},
            ),
        ),
    ]
