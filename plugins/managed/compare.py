"""compare_managed_members: members added, removed and changed between two inspect_managed_members records."""

from __future__ import annotations

from rea_plugins.managed import common
from rea_plugins.managed.model import (
    COMPARE_OPERATION,
    MEMBERS_OPERATION,
    SCHEMA_VERSION,
    CompareCounts,
    CompareResult,
    MembersResult,
    MethodChange,
    MethodRecord,
)

from rea.catalog.tool import ToolCall
from rea.evidence import Evidence


def _complete(members: MembersResult) -> bool:
    return all(len(p.items) == p.total for p in (members.types, members.fields, members.methods))


def _keys(members: MembersResult) -> set[str]:
    """Every member's identity: type names, field keys and method keys."""
    return (
        {f"type {t.name}" for t in members.types.items}
        | {f"field {f.key}" for f in members.fields.items}
        | {f"method {m.key}" for m in members.methods.items}
    )


def _changed(left: MethodRecord, right: MethodRecord) -> MethodChange | None:
    il = left.il_sha256 != right.il_sha256
    decoded = left.instructions_sha256 != right.instructions_sha256
    if not (il or decoded):
        return None
    return MethodChange(
        key=left.key, il_changed=il, instructions_changed=decoded, left_token=left.token, right_token=right.token
    )


def handle(call: ToolCall) -> Evidence:
    left_ev, left = common.load(call, "left_evidence_id", MEMBERS_OPERATION, MembersResult)
    right_ev, right = common.load(call, "right_evidence_id", MEMBERS_OPERATION, MembersResult)
    lk, rk = _keys(left), _keys(right)
    lm = {m.key: m for m in left.methods.items}
    rm = {m.key: m for m in right.methods.items}
    changes = [c for k in sorted(set(lm) & set(rm)) if (c := _changed(lm[k], rm[k])) is not None]
    added, removed = sorted(rk - lk), sorted(lk - rk)
    limits = call.args.get("limits") or {}
    complete = _complete(left) and _complete(right)
    result = CompareResult(
        schema_version=SCHEMA_VERSION,
        complete=complete,
        counts=CompareCounts(
            added=len(added),
            removed=len(removed),
            changed=len(changes),
            unchanged_methods=len(set(lm) & set(rm)) - len(changes),
            tokens_only=sum(1 for c in changes if not c.instructions_changed),
        ),
        added=common.page_of(added, limits),
        removed=common.page_of(removed, limits),
        changed=common.page_of(changes, limits),
    )
    limitations = (
        []
        if complete
        else ["An input lists a page of its types, fields or methods: members outside the pages are not compared."]
    )
    params = {"left_evidence_id": left_ev.evidence_id, "right_evidence_id": right_ev.evidence_id, "limits": limits}
    return common.derived(COMPARE_OPERATION, params, result, [left_ev, right_ev], limitations)
