"""compare_managed_members: what changed between two builds of an assembly, members matched by signature.

Each side is an assembly file (``left_path``/``right_path``: every member is read) or an ``inspect_managed_members``
record (``left_evidence_id``/``right_evidence_id``: the members it lists). Types match by name, fields by
``Type::Name``, methods by ``Type::Name(parameter types)`` (and the return type where that alone tells two apart),
never by metadata token. A method whose IL bytes differ while its decoded instructions, each operand named, are the
same is a renumbering (``tokens_only``), not a change; a real change says what changed and, for a body, which IL
lines (from files, or from records that list every instruction).
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import msgspec

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import arg_int
from rea.plugin import arg_object
from rea.plugin import evidence as ev_mod
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.managed import artifact
from rea_plugins.managed import common
from rea_plugins.managed import il
from rea_plugins.managed import members
from rea_plugins.managed import reader
from rea_plugins.managed import sites
from rea_plugins.managed.model import COMPARE_OPERATION
from rea_plugins.managed.model import MEMBERS_OPERATION
from rea_plugins.managed.model import SCHEMA_VERSION
from rea_plugins.managed.model import ChangeKind
from rea_plugins.managed.model import CompareCounts
from rea_plugins.managed.model import CompareResult
from rea_plugins.managed.model import MemberChange
from rea_plugins.managed.model import MembersResult
from rea_plugins.managed.model import Version
from rea_plugins.managed.reader import Image
from rea_plugins.managed.reader import token_text

DEFAULT_LIMIT = 50
DEFAULT_DIFF_LINES = 12
MAX_DIFF_LINES = 1000
MAX_LINE_CHARS = 160
MAX_BODY_BYTES = 1 << 24


@dataclass
class MethodFacts:
    token: str
    signature: str
    flags: list[str]
    il_sha256: str | None
    instructions_sha256: str | None
    status: str
    rid: int = 0  # the MethodDef row, when read from a file (its IL is decoded again for the diff)
    lines: list[str] | None = None  # the decoded instructions, when a record lists them all


@dataclass
class FieldFacts:
    token: str
    field_type: str
    flags: list[str]
    constant: object = None
    has_constant: bool = False


@dataclass
class TypeFacts:
    token: str
    base: str | None
    interfaces: list[str]
    flags: list[str]


@dataclass
class Side:
    """One version: its members by identity, and where they came from."""

    version: Version
    complete: bool
    types: dict[str, TypeFacts] = field(default_factory=dict)
    fields: dict[str, FieldFacts] = field(default_factory=dict)
    methods: dict[str, MethodFacts] = field(default_factory=dict)
    image: Image | None = None
    evidence: Evidence | None = None
    target: Target | None = None


def _identities(keys: Sequence[str], returns: Sequence[str]) -> list[str]:
    """Each method's identity: its key, and its return type where two methods share the key (conversions)."""
    seen: dict[str, int] = {}
    for key in keys:
        seen[key] = seen.get(key, 0) + 1
    return [f"{key} -> {ret}" if seen[key] > 1 else key for key, ret in zip(keys, returns, strict=True)]


def _lines(instructions: Sequence[Any]) -> list[str]:
    return [f"IL_{i.offset:04x}: {i.opcode}" + (f" {i.operand}" if i.operand else "") for i in instructions]


def _from_file(image: Image, target: Target, args: Arguments, ctx: Any) -> Side:
    ident = artifact.identity(image)
    side = Side(
        version=Version(
            assembly=image.assembly_name(),
            version=ident.version if ident else None,
            sha256=target.sha256,
            file=target.path.rsplit("/", 1)[-1],
        ),
        complete=True,
        image=image,
        target=target,
    )
    for t in members.types(image):
        side.types[t.name] = TypeFacts(t.token, t.base, sorted(t.interfaces), t.flags)
    consts = image.constants()
    for rid in range(1, len(image.rows("Field")) + 1):
        row = image.required("Field", rid)
        side.fields[image.field_key(rid)] = FieldFacts(
            token=token_text(0x04000000 | rid),
            field_type=image.field_type(rid),
            flags=reader.member_flags(int(row.struct.Flags), method=False),
            constant=consts.get(("Field", rid)),
            has_constant=("Field", rid) in consts,
        )
    bound = min(arg_int(args, "max_method_body_bytes", 1 << 20), MAX_BODY_BYTES)
    rows = image.rows("MethodDef")
    keys = [image.method_key(rid) for rid in range(1, len(rows) + 1)]
    returns = [(sig[0] if (sig := image.method_sig(rid)) else reader.UNREADABLE) for rid in range(1, len(rows) + 1)]
    for rid, (row, ident_key) in enumerate(zip(rows, _identities(keys, returns), strict=True), 1):
        if rid % 256 == 0:
            ctx.check(COMPARE_OPERATION)
            ctx.progress(f"reading {side.version.assembly}: {rid} of {len(rows)} methods", done=rid, total=len(rows))
        body = il.decode(image, int(row.Rva or 0), bound, 1 << 20)
        side.methods[ident_key] = MethodFacts(
            token=token_text(0x06000000 | rid),
            signature=members.signature_text(image, rid),
            flags=reader.member_flags(int(row.struct.Flags), method=True),
            il_sha256=body.il_sha256,
            instructions_sha256=body.instructions_sha256,
            status=body.status,
            rid=rid,
        )
    return side


def _from_record(ev: Evidence, record: MembersResult) -> Side:
    complete = all(len(p.items) == p.total for p in (record.types, record.fields, record.methods))
    side = Side(
        version=Version(
            assembly=record.assembly,
            version=None,
            sha256=ev.subject.digest.sha256 if ev.subject is not None and ev.subject.digest is not None else None,
            file=ev.subject.name if ev.subject is not None else None,
        ),
        complete=complete and record.selection is None,
        evidence=ev,
    )
    for t in record.types.items:
        side.types[t.name] = TypeFacts(t.token, t.base, sorted(t.interfaces), t.flags)
    for f in record.fields.items:
        has = f.constant is not msgspec.UNSET
        side.fields[f.key] = FieldFacts(f.token, f.field_type, f.flags, f.constant if has else None, has)
    returns = [m.signature.split(" ", 1)[0] for m in record.methods.items]
    for m, ident_key in zip(
        record.methods.items, _identities([m.key for m in record.methods.items], returns), strict=True
    ):
        listed = m.instruction_count is not None and len(m.instructions) == m.instruction_count
        side.methods[ident_key] = MethodFacts(
            token=m.token,
            signature=m.signature,
            flags=m.flags,
            il_sha256=m.il_sha256,
            instructions_sha256=m.instructions_sha256,
            status=m.body_status,
            lines=_lines(m.instructions) if listed else None,
        )
    return side


def _side(call: ToolCall, name: str, stack: contextlib.ExitStack) -> Side:
    path_key, ev_key = f"{name}_path", f"{name}_evidence_id"
    has_path, has_ev = call.args.get(path_key) is not None, call.args.get(ev_key) is not None
    if has_path == has_ev:
        message = f"give {path_key} (an assembly file) or {ev_key} (inspect_managed_members Evidence), one of them"
        raise invalid_request(
            message, [issue(path_key, "missing_argument" if not has_path else "invalid_value", message)]
        )
    if has_ev:
        ev, record = common.load(call, ev_key, MEMBERS_OPERATION, MembersResult)
        return _from_record(ev, record)
    # sites.opened reads ``path``: a call of the same session and context with that side's file as its path.
    side_call = ToolCall(call.tool, {**call.args, "path": call.args[path_key]}, call.session, call.ctx)
    target, image, _ = stack.enter_context(sites.opened(side_call))
    return _from_file(image, target, call.args, call.ctx)


def _diff(left: list[str], right: list[str], budget: int) -> list[str]:
    """The IL lines that differ, ``-`` left and ``+`` right, at most ``budget`` of them (then how many more)."""
    strip = [line.split(": ", 1)[-1] for line in left], [line.split(": ", 1)[-1] for line in right]
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, strip[0], strip[1], autojunk=False).get_opcodes():
        if op == "equal":
            continue
        out.extend("-" + line for line in left[i1:i2])
        out.extend("+" + line for line in right[j1:j2])
    shown = [line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…" for line in out[:budget]]
    if len(out) > budget:
        shown.append(f"… {len(out) - budget} more lines differ (inspect_managed_method shows each version whole)")
    return shown


def _method_lines(side: Side, facts: MethodFacts) -> list[str] | None:
    if facts.lines is not None:
        return facts.lines
    if side.image is None or not facts.rid:
        return None
    row = side.image.required("MethodDef", facts.rid)
    body = il.decode(side.image, int(row.Rva or 0), MAX_BODY_BYTES, 1 << 20)
    return _lines(body.instructions)


def _flags_detail(left: list[str], right: list[str]) -> str:
    return f"flags: {' '.join(left)} -> {' '.join(right)}"


def _changed(member: MemberChange, *facets: tuple[ChangeKind, bool, str]) -> list[MemberChange]:
    """``member`` with each facet that differs (its kind and detail line), or nothing when none does."""
    differing = [(kind, detail) for kind, differs, detail in facets if differs]
    if not differing:
        return []
    return [msgspec.structs.replace(member, changes=[k for k, _ in differing], detail=[d for _, d in differing])]


def _compare(left: Side, right: Side, budget: int) -> tuple[list[str], list[str], list[MemberChange], list[str], int]:
    added = sorted(
        [f"type {k}" for k in right.types.keys() - left.types.keys()]
        + [f"field {k}" for k in right.fields.keys() - left.fields.keys()]
        + [f"method {k}" for k in right.methods.keys() - left.methods.keys()]
    )
    removed = sorted(
        [f"type {k}" for k in left.types.keys() - right.types.keys()]
        + [f"field {k}" for k in left.fields.keys() - right.fields.keys()]
        + [f"method {k}" for k in left.methods.keys() - right.methods.keys()]
    )
    changed: list[MemberChange] = []
    for name in sorted(left.types.keys() & right.types.keys()):
        a, b = left.types[name], right.types[name]
        found = _changed(
            MemberChange(member=f"type {name}", changes=[], left_token=a.token, right_token=b.token),
            ("base", a.base != b.base, f"base: {a.base} -> {b.base}"),
            (
                "interfaces",
                a.interfaces != b.interfaces,
                f"interfaces: {', '.join(a.interfaces) or '-'} -> {', '.join(b.interfaces) or '-'}",
            ),
            ("flags", a.flags != b.flags, _flags_detail(a.flags, b.flags)),
        )
        changed.extend(found)
    for name in sorted(left.fields.keys() & right.fields.keys()):
        fa, fb = left.fields[name], right.fields[name]
        same_constant = (fa.has_constant, fa.constant) == (fb.has_constant, fb.constant)
        constant = (fa.has_constant or fb.has_constant) and not same_constant
        found = _changed(
            MemberChange(member=f"field {name}", changes=[], left_token=fa.token, right_token=fb.token),
            ("field-type", fa.field_type != fb.field_type, f"type: {fa.field_type} -> {fb.field_type}"),
            ("constant", constant, f"constant: {_value(fa)} -> {_value(fb)}"),
            ("flags", fa.flags != fb.flags, _flags_detail(fa.flags, fb.flags)),
        )
        changed.extend(found)
    tokens_only: list[str] = []
    unchanged = 0
    for name in sorted(left.methods.keys() & right.methods.keys()):
        ma, mb = left.methods[name], right.methods[name]
        kinds: list[ChangeKind] = []
        detail: list[str] = []
        if ma.signature != mb.signature:
            kinds.append("signature")
            detail.append(f"signature: {ma.signature} -> {mb.signature}")
        if ma.flags != mb.flags:
            kinds.append("flags")
            detail.append(_flags_detail(ma.flags, mb.flags))
        body = (ma.instructions_sha256, ma.status) != (mb.instructions_sha256, mb.status) or (
            ma.instructions_sha256 is None and ma.il_sha256 != mb.il_sha256
        )
        if body:
            kinds.append("body")
            if budget:
                la, lb = _method_lines(left, ma), _method_lines(right, mb)
                if la is not None and lb is not None:
                    detail.extend(_diff(la, lb, budget))
        if kinds:
            changed.append(
                MemberChange(
                    member=f"method {name}", changes=kinds, left_token=ma.token, right_token=mb.token, detail=detail
                )
            )
        elif ma.il_sha256 != mb.il_sha256:
            tokens_only.append(name)
        else:
            unchanged += 1
    return added, removed, changed, tokens_only, unchanged


def _value(facts: FieldFacts) -> str:
    if not facts.has_constant:
        return "(none)"
    return repr(facts.constant) if isinstance(facts.constant, str) else str(facts.constant)


@common.guarded
def handle(call: ToolCall) -> Evidence:
    budget = min(arg_int(call.args, "max_diff_lines", DEFAULT_DIFF_LINES), MAX_DIFF_LINES)
    limits = arg_object(call.args, "limits") or {}
    with contextlib.ExitStack() as stack:
        left = _side(call, "left", stack)
        right = _side(call, "right", stack)
        added, removed, changed, tokens_only, unchanged = _compare(left, right, budget)
    complete = left.complete and right.complete
    result = CompareResult(
        schema_version=SCHEMA_VERSION,
        complete=complete,
        counts=CompareCounts(
            added=len(added),
            removed=len(removed),
            changed=len(changed),
            unchanged_methods=unchanged,
            tokens_only=len(tokens_only),
        ),
        added=common.paged(added, limits, default=DEFAULT_LIMIT),
        removed=common.paged(removed, limits, default=DEFAULT_LIMIT),
        changed=common.paged(changed, limits, default=DEFAULT_LIMIT),
        tokens_only=common.paged(tokens_only, limits, default=DEFAULT_LIMIT),
        left=left.version,
        right=right.version,
    )
    limitations = (
        []
        if complete
        else ["An input lists a page of its types, fields or methods: members outside the pages are not compared."]
    )
    call.ctx.finish(
        f"{len(added)} added, {len(removed)} removed, {len(changed)} changed, {len(tokens_only)} renumbered only"
    )
    return _evidence(call, result, left, right, limits, budget, limitations)


def _evidence(
    call: ToolCall,
    result: CompareResult,
    left: Side,
    right: Side,
    limits: JSONObject,
    budget: int,
    limitations: list[str],
) -> Evidence:
    # The Evidence's parameters: the call's own arguments (JSON) and the inputs' ids.
    params: JSONObject = {"limits": limits, "max_diff_lines": budget}
    for name, side in (("left", left), ("right", right)):
        if side.evidence is not None:
            params[f"{name}_evidence_id"] = side.evidence.evidence_id
        else:
            params[f"{name}_sha256"] = side.version.sha256
    params.update({k: v for k, v in call.args.items() if k in reader.DEFAULT_BOUNDS or k == "max_method_body_bytes"})
    inputs = [s.evidence for s in (left, right) if s.evidence is not None]
    if not inputs:
        # Both files were read here: the record is of the newer one, the older one named by its digest.
        assert right.target is not None
        return ev_mod.build(
            operation=COMPARE_OPERATION,
            provider=common.PROVIDER,
            subject=call.session.subject_for(right.target),
            analysis_profile=common.profile(),
            parameters=params,
            normalized_result=msgspec.to_builtins(result),
            limitations=[common.STATIC, *limitations],
        )
    return common.derived(COMPARE_OPERATION, params, result, inputs, limitations)
