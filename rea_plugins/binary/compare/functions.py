"""compare_functions: two analyze_function Evidence records (inline or retained), fact by fact."""

from __future__ import annotations

import hashlib
from typing import Literal

import msgspec

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import evidence as ev_mod
from rea.plugin import evidence_input
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import with_evidence_defs
from rea_plugins.binary.core.schema import IDENTITY
from rea_plugins.binary.core.schema import binary_tool
from rea_plugins.binary.core.schema import object_of
from rea_plugins.binary.core.schema import objects_in
from rea_plugins.binary.core.shapes import ComparedDossier
from rea_plugins.binary.core.shapes import FacetComparison
from rea_plugins.binary.core.shapes import FunctionComparison

_REF = evidence_input("analyze_function Evidence: inline, or a retained reference.")


def _dossier(call: ToolCall, path: str) -> Evidence:
    ev = call.session.resolve_evidence(call.args[path], path)
    if ev.operation != "analyze_function":
        raise invalid_request(
            f"{path} is {ev.operation} Evidence, not analyze_function",
            [issue(path, "invalid_value", "expected analyze_function Evidence")],
        )
    complete = ev.normalized_result.get("complete_evidence_id") if isinstance(ev.normalized_result, dict) else None
    if isinstance(complete, str):
        # A paged answer: compare the complete dossier it names (retained when the page was made).
        return call.session.resolve_evidence(ev_mod.retained_reference(complete), path)
    return ev


# A dossier is an Evidence record's normalized result as JSON (possibly an inline record the client sent), and its
# facts are facet -> that JSON's value: compared and echoed as they are.


def _facts(body: JSONObject) -> JSONObject:
    """Address-independent facts of one dossier; None where the dossier lacks the facet."""
    info = object_of(body.get("procedure", {}))
    asm = body.get("assembly")
    blocks = body.get("basic_blocks")
    mnemonics = None
    if isinstance(asm, dict) and not asm.get("truncated"):
        # Lean rows say the mnemonic as the first word of their text (records before them split it out).
        words = (str(i.get("mnemonic") or str(i["text"]).split(" ", 1)[0]) for i in objects_in(asm.get("instructions")))
        mnemonics = hashlib.sha256(" ".join(words).encode()).hexdigest()
    pseudo = body.get("pseudocode", {})
    callees: list[JSONValue] = [*sorted(str(c["name"]) for c in objects_in(body.get("callees")) if c.get("name"))]
    strings: list[JSONValue] = [*sorted(str(s["value"]) for s in objects_in(body.get("referenced_strings")))]
    return {
        "size": info.get("size"),
        "instruction_count": info.get("instruction_count"),
        "basic_block_count": len(blocks) if isinstance(blocks, list) else None,
        "callees": callees,
        "referenced_strings": strings,
        "mnemonic_digest": mnemonics,
        "pseudocode_digest": hashlib.sha256(str(pseudo["text"]).encode()).hexdigest()
        if isinstance(pseudo, dict) and pseudo.get("status") == "ok"
        else None,
    }


def _callee_key(c: JSONObject) -> str:
    """A callee's identity within one target: its address, else its kind and name (an unresolved site)."""
    return str(c["address"]) if c.get("address") else f"{c.get('kind') or 'indirect'}:{c.get('name') or '?'}"


def _target_facts(body: JSONObject) -> JSONObject:
    """Facts that only compare within one target (two providers, or two profiles): addresses and call targets."""
    info = object_of(body.get("procedure", {}))
    callers = body.get("callers")
    targets: list[JSONValue] = [*sorted({_callee_key(c) for c in objects_in(body.get("callees"))})]
    return {
        "address": info.get("address"),
        "end": info.get("end"),
        "kind": info.get("kind"),
        "callee_targets": targets,
        "callers": [*sorted({str(c["address"]) for c in objects_in(callers) if c.get("address")})]
        if isinstance(callers, list)
        else None,
    }


def _dossier_named(ev: Evidence) -> ComparedDossier:
    procedure = object_of(object_of(ev.normalized_result).get("procedure", {})).get("name")
    return ComparedDossier(
        evidence_id=ev.evidence_id,
        provider=ev.provider.id,
        procedure=procedure if isinstance(procedure, str) else None,
    )


def _sha256(ev: Evidence) -> str | None:
    return ev.subject.digest.sha256 if ev.subject is not None and ev.subject.digest is not None else None


def _compare(call: ToolCall) -> Evidence:
    left, right = _dossier(call, "left"), _dossier(call, "right")
    lf, rf = _facts(left.normalized_result), _facts(right.normalized_result)
    same_target = _sha256(left) is not None and _sha256(left) == _sha256(right)
    providers = left.provider.id != right.provider.id
    lims: list[str] = []
    if same_target:
        # One binary read twice (two providers, or two profiles): addresses and call targets are comparable too.
        lf = {**_target_facts(left.normalized_result), **lf}
        rf = {**_target_facts(right.normalized_result), **rf}
    if same_target and providers:
        # Two engines' pseudocode never matches as text; comparing its digest would only ever say "changed".
        del lf["pseudocode_digest"], rf["pseudocode_digest"]
        lims.append("the pseudocode digest is not compared between providers (their output never matches as text)")
    facets: list[FacetComparison] = []
    for key in lf:
        a, b = lf[key], rf[key]
        status: Literal["unchanged", "changed", "unknown", "absent"]
        if a is None and b is None:
            # Neither dossier has the facet (native has no pseudocode): nothing to compare, nothing unknown.
            status = "absent"
        else:
            status = "unknown" if a is None or b is None else ("unchanged" if a == b else "changed")
        facets.append(FacetComparison(facet=key, status=status, left=a, right=b))
    statuses = {f.status for f in facets}
    overall: Literal["unchanged", "changed", "unknown"] = (
        "changed" if "changed" in statuses else ("unknown" if "unknown" in statuses else "unchanged")
    )
    body = FunctionComparison(
        status=overall,
        facets=facets,
        comparison=("providers" if providers else "same_target") if same_target else "versions",
        left=_dossier_named(left),
        right=_dossier_named(right),
    )
    if overall == "unknown":
        lims.append("a facet is missing from one side; its status is unknown")
    return ev_mod.build(
        operation="compare_functions",
        provider=IDENTITY,
        subject=None,
        analysis_profile=None,
        parameters={"left": left.evidence_id, "right": right.evidence_id},
        normalized_result=msgspec.to_builtins(body),
        confidence="derived",
        authority="analyst-inference",
        limitations=lims,
        evidence_links=[left.evidence_id, right.evidence_id],
    )


def tools() -> list[ToolDef]:
    return [
        binary_tool(
            name="compare_functions",
            result_type=FunctionComparison,
            description=(
                "Compare two analyze_function Evidence records (inline or retained): size, blocks, callees, "
                "strings, instruction and pseudocode digests; status unchanged, changed or unknown. Two "
                "dossiers of the same binary (e.g. from two providers) also compare start, end, kind, callee "
                "targets and callers, so engine disagreements show; compare_provider_results runs both sides."
            ),
            input_schema=with_evidence_defs(
                {
                    "type": "object",
                    "properties": {"left": _REF, "right": _REF},
                    "required": ["left", "right"],
                    "additionalProperties": False,
                }
            ),
            handler=_compare,
            requires_target=False,
            examples=(
                {
                    "left": {"kind": "retained-evidence", "evidence_id": "ev_" + "a" * 64},
                    "right": {"kind": "retained-evidence", "evidence_id": "ev_" + "b" * 64},
                },
            ),
        )
    ]
