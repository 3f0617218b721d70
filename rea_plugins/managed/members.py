"""inspect_managed_members: types, fields, methods with hashed IL, member references and call edges."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import ToolCall
from rea.plugin import arg_int
from rea.plugin import shown_page
from rea_plugins.managed import common
from rea_plugins.managed import il
from rea_plugins.managed import reader
from rea_plugins.managed import sites
from rea_plugins.managed.model import MEMBERS_OPERATION
from rea_plugins.managed.model import SCHEMA_VERSION
from rea_plugins.managed.model import CallEdge
from rea_plugins.managed.model import FieldRecord
from rea_plugins.managed.model import MemberRefRecord
from rea_plugins.managed.model import MembersResult
from rea_plugins.managed.model import MethodRecord
from rea_plugins.managed.model import TypeRecord
from rea_plugins.managed.reader import Image
from rea_plugins.managed.reader import token_text

MAX_ANCHORS = 100_000
MAX_BODY_BYTES = 1 << 24
MAX_INSTRUCTIONS = 1 << 20


def types(image: Image) -> list[TypeRecord]:
    implemented: dict[int, list[str]] = {}
    for row in image.rows("InterfaceImpl"):
        owner = reader._rid(row.Class)
        name = image.index_type(row.Interface)
        if owner and name:
            implemented.setdefault(owner, []).append(name)
    out = []
    for rid, row in enumerate(image.rows("TypeDef"), 1):
        base = image.index_type(row.Extends)
        outer = image.enclosing.get(rid)
        out.append(
            TypeRecord(
                token=token_text(0x02000000 | rid),
                name=image.typedef_name(rid),
                flags=reader.type_flags(int(row.struct.Flags), base),
                base=base,
                interfaces=implemented.get(rid, []),
                enclosing=image.typedef_name(outer) if outer else None,
                generic_parameters=image.type_generics.get(rid, []),
            )
        )
    return out


def fields(image: Image, wanted: Sequence[int]) -> list[FieldRecord]:
    out = []
    consts = image.constants()
    for rid in wanted:
        row = image.required("Field", rid)
        value = consts.get(("Field", rid), msgspec.UNSET)
        out.append(
            FieldRecord(
                token=token_text(0x04000000 | rid),
                key=image.field_key(rid),
                field_type=image.field_type(rid),
                flags=reader.member_flags(int(row.struct.Flags), method=False),
                constant=value if value is None or isinstance(value, bool | int | float | str) else msgspec.UNSET,
            )
        )
    return out


def signature_text(image: Image, rid: int) -> str:
    """``ret Name<T>(type name, ...)`` with parameter names from the Param table."""
    sig = image.method_sig(rid)
    row = image.row("MethodDef", rid)
    name = image.method_name(rid)
    if sig is None or row is None:
        return f"{reader.UNREADABLE} {name}"
    names: dict[int, str] = {}
    for index in row.ParamList or []:
        param = image.row("Param", reader._rid(index))
        if param is not None and int(param.Sequence or 0) > 0:
            names[int(param.Sequence)] = image.text(param, "Name", "Param")
    params = [f"{t} {names[i]}" if names.get(i) else t for i, t in enumerate(sig[1], 1)]
    generics = image.method_generics.get(rid)
    gtext = f"<{', '.join(generics)}>" if generics else ""
    return f"{sig[0]} {name}{gtext}({', '.join(params)})"


def method(image: Image, rid: int, args: Arguments, edges: list[CallEdge]) -> MethodRecord:
    row = image.required("MethodDef", rid)
    rva = int(row.Rva or 0)
    body = il.decode(
        image,
        rva,
        min(arg_int(args, "max_method_body_bytes", 1 << 16), MAX_BODY_BYTES),
        min(arg_int(args, "max_method_instructions", 20_000), MAX_INSTRUCTIONS),
    )
    key = image.method_key(rid)
    for ins in body.instructions:
        if ins.opcode in il.CALL_OPCODES and ins.operand is not None:
            edges.append(CallEdge(caller=key, callee=ins.operand, opcode=ins.opcode, offset=ins.offset))
    anchors = min(arg_int(args, "instruction_anchor_limit", 0), MAX_ANCHORS)
    return MethodRecord(
        token=token_text(0x06000000 | rid),
        key=key,
        signature=signature_text(image, rid),
        flags=reader.member_flags(int(row.struct.Flags), method=True),
        rva=rva or None,
        body_size=body.code_size,
        il_sha256=body.il_sha256,
        instructions_sha256=body.instructions_sha256,
        instruction_count=len(body.instructions) if body.status in ("ok", "truncated") else None,
        body_status=body.status,
        instructions=body.instructions[:anchors],
    )


def build(image: Image, args: Arguments, ctx: Any) -> MembersResult:
    chosen = common.selection(args)
    keep = common.selector(chosen)
    all_types = types(image)
    type_page = common.paged([t for t in all_types if keep(t.name)] if chosen else all_types, args, "type", 50)
    nfields = len(image.rows("Field"))
    foff, flim = common.window(args, "field", 50)
    nmethods = len(image.rows("MethodDef"))
    moff, mlim = common.window(args, "method", 50)
    nrefs = len(image.rows("MemberRef"))
    roff, rlim = common.window(args, "member_ref", 50)
    if chosen is None:
        field_rids: list[int] | range = range(1, nfields + 1)
        method_rids: list[int] | range = range(1, nmethods + 1)
        ref_rids: list[int] | range = range(1, nrefs + 1)
    else:
        # Keys are read for every member (signatures only); bodies only for the listed methods.
        field_rids = [rid for rid in range(1, nfields + 1) if keep(image.field_key(rid))]
        method_rids = [rid for rid in range(1, nmethods + 1) if keep(image.method_key(rid))]
        ref_rids = [rid for rid in range(1, nrefs + 1) if keep(image.member_ref(rid)[0])]
    edges: list[CallEdge] = []
    methods = []
    # Only the listed methods are decoded: a page costs its own bodies, not the assembly's.
    for i, rid in enumerate(method_rids[moff : moff + mlim]):
        if i % 64 == 0:
            ctx.check(MEMBERS_OPERATION)
        methods.append(method(image, rid, args, edges))
    refs = []
    for rid in ref_rids[roff : roff + rlim]:
        key, sig = image.member_ref(rid)
        refs.append(MemberRefRecord(token=token_text(0x0A000000 | rid), key=key, signature=sig))
    return MembersResult(
        schema_version=SCHEMA_VERSION,
        assembly=image.assembly_name(),
        types=type_page,
        fields=shown_page(
            fields(image, field_rids[foff : foff + flim]), offset=foff, limit=flim, total=len(field_rids)
        ),
        methods=shown_page(methods, offset=moff, limit=mlim, total=len(method_rids)),
        member_refs=shown_page(refs, offset=roff, limit=rlim, total=len(ref_rids)),
        edges=common.paged(edges, args, "edge", 50),
        selection=chosen,
    )


@common.guarded
def handle(call: ToolCall) -> Evidence:
    with sites.opened(call) as (target, image, _):
        result = build(image, call.args, call.ctx)
    limitations = ["Call edges are those of the listed methods (method_offset/method_limit)."]
    if result.methods.total > len(result.methods.items):
        limitations.append("Methods are paged: compare_managed_members sees only the listed methods.")
    call.ctx.finish(f"read {len(result.methods.items)} of {result.methods.total} methods")
    return common.static_evidence(call, MEMBERS_OPERATION, target, result, limitations)
