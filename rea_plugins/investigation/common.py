"""What the investigation handlers share: identity, paging, input Evidence, derived Evidence and judgements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from typing import TypeVar

import msgspec

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import PageOf
from rea.plugin import ProviderIdentity
from rea.plugin import ToolCall
from rea.plugin import __version__ as rea_version
from rea.plugin import arg_int
from rea.plugin import arg_list
from rea.plugin import arg_str
from rea.plugin import evidence as ev_mod
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import shown_page
from rea_plugins.investigation.model import Judgement

T = TypeVar("T")
PROVIDER = ProviderIdentity(id="investigation", name="rea investigation records", version=rea_version)
DEFAULT_LIMIT = 50
MAX_LIMIT = 1000

# Words comparison tools use for what they found (verdict, status, outcome, result).
COMPLETE_WORDS = frozenset({"same", "unchanged", "match", "matched", "pass", "passed", "verified", "equal"})
CONTRADICTED_WORDS = frozenset(
    {"different", "changed", "mismatch", "fail", "failed", "contradicted", "added", "removed"}
)
VERDICT_KEYS = ("verdict", "status", "outcome", "result")


def page(items: Sequence[T], args: Arguments) -> PageOf[T]:
    """The page of ``items`` that ``args`` (a call's arguments, or its ``page`` object) asks for."""
    offset = arg_int(args, "offset", 0)
    limit = min(arg_int(args, "limit", DEFAULT_LIMIT), MAX_LIMIT)
    return shown_page(items[offset : offset + limit], offset=offset, limit=limit, total=len(items))


def paging(args: Arguments) -> JSONObject:
    """The paging a call asked for, as its Evidence records it (the limit as given, before ``page`` caps it)."""
    return {"offset": arg_int(args, "offset", 0), "limit": arg_int(args, "limit", DEFAULT_LIMIT)}


def sorted_by(objects: list[JSONObject], key: str) -> list[JSONObject]:
    """The user's ``objects`` ordered by their string ``key`` (an id), so a record does not depend on their order."""
    return sorted(objects, key=lambda o: arg_str(o, key, ""))


def resolve_all(call: ToolCall, key: str) -> list[Evidence]:
    """Every Evidence ``call.args[key]`` lists (inline or retained, authenticated), in order, once each."""
    out: dict[str, Evidence] = {}
    for i, value in enumerate(arg_list(call.args, key) or []):
        ev = call.session.resolve_evidence(value, f"{key}/{i}")
        out.setdefault(ev.evidence_id, ev)
    return list(out.values())


def target_of(ev: Evidence) -> str | None:
    return None if ev.subject is None else ev.subject.digest.sha256


def one_target(records: Sequence[Evidence], key: str) -> str | None:
    """The single target the records describe; records of two targets are refused."""
    targets = sorted({t for r in records if (t := target_of(r)) is not None})
    if len(targets) > 1:
        raise invalid_request(
            f"{key} describe {len(targets)} different targets",
            [issue(key, "invalid_value", "every record must describe the same target", targets=targets)],
        )
    return targets[0] if targets else None


def derived(
    call: ToolCall,
    operation: str,
    parameters: JSONObject,
    result: msgspec.Struct,
    inputs: Sequence[Evidence] | Sequence[str],
    limitations: list[str] | None = None,
) -> Evidence:
    """Evidence computed from other Evidence only, linked to it; a single target's subject carries over.
    Cancellation is honoured before anything is built (and the ledger records nothing after it)."""
    call.ctx.check(operation)
    records = [i for i in inputs if isinstance(i, Evidence)]
    subjects = {msgspec.json.encode(r.subject) for r in records if r.subject is not None}
    subject = next((r.subject for r in records if r.subject is not None), None) if len(subjects) == 1 else None
    links = [i.evidence_id if isinstance(i, Evidence) else i for i in inputs]
    return ev_mod.build(
        operation=operation,
        provider=PROVIDER,
        subject=subject,
        analysis_profile=None,
        parameters=parameters,
        normalized_result=msgspec.to_builtins(result),
        confidence="derived",
        authority="analyst-inference",
        limitations=list(limitations or []),
        evidence_links=links,
    )


def is_comparison(ev: Evidence) -> bool:
    return ev.operation.startswith(("compare_", "verify_")) and ev.provider.id != PROVIDER.id


def word_judgement(value: Any) -> Judgement | None:
    if isinstance(value, bool):
        return "complete" if value else "contradicted"
    if isinstance(value, str):
        word = value.lower()
        if word in COMPLETE_WORDS:
            return "complete"
        if word in CONTRADICTED_WORDS:
            return "contradicted"
        return "unknown"
    return None


def judge(result: Any) -> Judgement:
    """What a comparison result says overall: its verdict/status word, else its change counts, else unknown."""
    if not isinstance(result, dict):
        return "unknown"
    for key in VERDICT_KEYS:
        found = word_judgement(result.get(key))
        if found is not None:
            return found
    counts = result.get("counts")
    keys = ("added", "removed", "changed")
    if (
        isinstance(counts, dict)
        and any(k in counts for k in keys)
        and all(isinstance(counts.get(k, 0), int) for k in keys)
    ):
        changed = counts.get("added", 0) + counts.get("removed", 0) + counts.get("changed", 0)
        return "contradicted" if changed else "complete"
    return "unknown"


def dimensions(result: Any) -> dict[str, Judgement]:
    """Per-dimension judgements of a comparison: its ``dimensions`` object, or its ``facets`` list."""
    out: dict[str, Judgement] = {}
    if not isinstance(result, dict):
        return out
    dims = result.get("dimensions")
    if isinstance(dims, dict):
        for name, body in sorted(dims.items()):
            out[name] = judge(body) if isinstance(body, dict) else (word_judgement(body) or "unknown")
    facets = result.get("facets")
    if isinstance(facets, list):
        for facet in facets:
            if isinstance(facet, dict) and isinstance(facet.get("facet"), str) and facet.get("status") != "absent":
                out[facet["facet"]] = judge(facet)
    return out


def subject_label(ev: Evidence) -> str:
    """A comparison's subject: the procedure or executable it compared, else its operation."""
    body = ev.normalized_result if isinstance(ev.normalized_result, dict) else {}
    for side in ("left", "right"):
        part = body.get(side)
        if isinstance(part, dict):
            for key in ("procedure", "executable", "name", "path"):
                if isinstance(part.get(key), str):
                    return str(part[key])
    return ev.operation
