"""Analysis views: summary, item, row page and text page projections of completed Evidence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from typing import Final

import msgspec

from rea import evidence as ev_mod
from rea.arguments import Arguments
from rea.arguments import arg_int
from rea.arguments import arg_str
from rea.bundle import procedure_metadata
from rea.canonical import canonical_digest
from rea.canonical import canonical_json
from rea.errors import IssueReason
from rea.errors import ReaError
from rea.errors import invalid_request
from rea.errors import issue
from rea.evidence import Evidence
from rea.evidence import as_object
from rea.records import JSONObject
from rea.records import next_offset

VIEW_OPERATION: Final = "inspect_analysis_view"
PAGE_DEFAULT_LIMIT: Final = 64
PAGE_MAX_LIMIT: Final = 256
# Objects up to this canonical size appear whole in a summary; larger ones are only described.
SUMMARY_OBJECT_BYTES: Final = 2048

# Where producers keep a native facet, in order of preference (first present key wins).
FACET_ALIASES: Final[dict[str, tuple[str, ...]]] = {
    "pseudocode": ("pseudocode", "pseudo_code", "decompilation", "text"),
    "assembly": ("assembly", "instructions", "disassembly"),
    "basic_blocks": ("basic_blocks", "blocks"),
    "high_pcode": ("high_pcode", "pcode"),
    "strings": ("referenced_strings", "strings"),
    "names": ("referenced_names", "names"),
    "unresolved_calls": ("unresolved_calls", "unresolved"),
    "api": ("api", "native_api"),
    "comments": ("comments",),
    "callers": ("callers",),
    "callees": ("callees",),
    "references": ("references",),
}
# The native facets the contract names: one a producer did not record is reported unavailable, not refused.
CONTRACT_FACETS: Final = frozenset(FACET_ALIASES) | {"procedure"}
# Keys that identify a row when an item is selected by ``key``.
ITEM_KEYS: Final = ("name", "path", "address", "id", "key", "specifier", "module", "value")


def _bad_view(field: str, message: str, reason: IssueReason = "invalid_value", **details: Any) -> ReaError:
    err = invalid_request(message, [issue(f"view/{field}", reason, message)])
    err.details.update(details)
    return err


def _lookup(normalized: Any, section: str) -> Any:
    """Follow a ``/``-separated section path through nested objects."""
    node = as_object(normalized)
    for part in section.split("/"):
        if not isinstance(node, dict) or part not in node:
            raise _bad_view(
                "section",
                f"the record has no section {section!r}",
                available_sections=sorted(list_sections(normalized)),
            )
        node = as_object(node[part])
    return node


def list_sections(normalized: Any, prefix: str = "", depth: int = 0) -> dict[str, int]:
    """Every list-valued section (nested objects joined with ``/``) with its row count."""
    out: dict[str, int] = {}
    normalized = as_object(normalized)
    if not isinstance(normalized, dict) or depth > 2:
        return out
    for key, value in normalized.items():
        name = f"{prefix}{key}"
        value = as_object(value)
        if isinstance(value, list):
            out[name] = len(value)
        elif isinstance(value, dict):
            out.update(list_sections(value, name + "/", depth + 1))
    return out


def _describe(value: Any) -> Any:
    """A summary entry: small values whole, rows and text by size, large objects by their members."""
    value = as_object(value)
    if isinstance(value, list):
        return {"kind": "rows", "count": len(value)}
    if isinstance(value, str):
        return {"kind": "text", "length_utf16": utf16_length(value)} if len(value) > 256 else value
    if not isinstance(value, dict) or len(canonical_json(value)) <= SUMMARY_OBJECT_BYTES:
        return value
    # Scalars (status, language, truncated, ...) stay visible; bulky members are counted.
    return {
        "kind": "object",
        "members": {
            k: _describe(v)
            if isinstance(v, list | str)
            else (v if not isinstance(v, dict) else {"kind": "object", "keys": len(v)})
            for k, v in sorted((k, as_object(v)) for k, v in value.items())
        },
    }


def summary(parent: Evidence) -> JSONObject:
    """Scalars, small objects, section counts and limitations of a record, without its rows."""
    normalized = as_object(parent.normalized_result)
    fields = (
        {k: _describe(v) for k, v in normalized.items()}
        if isinstance(normalized, dict)
        else {"value": _describe(normalized)}
    )
    facets = sorted(f for f in FACET_ALIASES if _find_facet(normalized, f) is not None)
    return {
        "operation": parent.operation,
        "target_sha256": None if parent.subject is None else parent.subject.digest.sha256,
        "provider": {
            "id": parent.provider.id,
            "name": parent.provider.name,
            "version": parent.provider.version,
        },
        "procedure": procedure_metadata(normalized),
        "fields": fields,
        "sections": [{"name": n, "count": c} for n, c in sorted(list_sections(normalized).items())],
        "native_facets": facets,
        "limitations": list(parent.limitations),
    }


# -- pages --------------------------------------------------------------------------------------


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _unit(data: bytes, i: int) -> int:
    return data[2 * i] | (data[2 * i + 1] << 8)


def text_page(text: str, offset: int, limit: int) -> JSONObject:
    """A page of ``text`` in UTF-16 code units whose bounds never fall inside a surrogate pair."""
    data = text.encode("utf-16-le", "surrogatepass")
    total = len(data) // 2
    if offset > total:
        raise _bad_view(
            "offset",
            f"offset {offset} is past the end ({total} UTF-16 code units)",
            "out_of_range",
            total=total,
        )
    start = offset
    # An offset on the low half of a pair moves back to the pair's start.
    if 0 < start < total and 0xDC00 <= _unit(data, start) <= 0xDFFF:
        start -= 1
    end = min(start + limit, total)
    if start < end < total and 0xD800 <= _unit(data, end - 1) <= 0xDBFF:
        end -= 1
        if end == start:  # limit 1 on a pair: deliver the whole pair so paging always advances
            end = start + 2
    chunk = data[2 * start : 2 * end].decode("utf-16-le", "surrogatepass")
    return {
        "unit": "utf-16-code-unit",
        "text": chunk,
        "offset": start,
        "limit": limit,
        "length": end - start,
        "total": total,
        "next_offset": next_offset(start, end - start, total),
    }


def row_page(rows: Sequence[object], offset: int, limit: int) -> JSONObject:
    total = len(rows)
    if offset > total:
        raise _bad_view("offset", f"offset {offset} is past the end ({total} rows)", "out_of_range", total=total)
    # A page of Struct rows is converted alone, never the whole section.
    items = msgspec.to_builtins(rows[offset : offset + limit])
    return {
        "unit": "row",
        "items": items,
        "offset": offset,
        "limit": limit,
        "total": total,
        "next_offset": next_offset(offset, len(items), total),
    }


# -- facets and items ---------------------------------------------------------------------------


def _find_facet(normalized: Any, facet: str) -> Any:
    normalized = as_object(normalized)
    if not isinstance(normalized, dict):
        return None
    for key in FACET_ALIASES.get(facet, (facet,)):
        if key in normalized and normalized[key] is not None:
            return as_object(normalized[key])
    return None


def _unwrap(value: Any) -> Any:
    """A facet stored as ``{"text": ...}`` or ``{"instructions"|"items": [...]}`` pages by that member."""
    value = as_object(value)
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return value["text"]
        for key in ("instructions", "items", "rows", "lines"):
            if isinstance(value.get(key), list):
                return value[key]
    return value


def facet_view(parent: Evidence, facet: str, offset: int, limit: int) -> JSONObject:
    normalized = as_object(parent.normalized_result)
    if facet == "procedure":
        found: Any = procedure_metadata(normalized)
    else:
        found = _find_facet(normalized, facet)
    if found is None:
        present = isinstance(normalized, dict) and any(k in normalized for k in FACET_ALIASES.get(facet, (facet,)))
        if present or facet in CONTRACT_FACETS:  # a contract fact the producer lacks: explicit, not an error
            provider = parent.provider.id if parent.provider else "the producer"
            return {
                "facet": facet,
                "status": "unavailable",
                "value": None,
                "reason": f"{provider} recorded no {facet.replace('_', ' ')} in this {parent.operation} Evidence",
                "limitations": list(parent.limitations),
            }
        available = sorted(f for f in FACET_ALIASES if _find_facet(normalized, f) is not None)
        if isinstance(normalized, dict):
            available += sorted(
                k for k, v in normalized.items() if isinstance(v, dict | list | str) and k not in available
            )
        raise _bad_view("facet", f"{parent.operation} Evidence has no {facet!r} facet", available_facets=available)
    if isinstance(found, dict) and found.get("status") in ("unavailable", "error"):
        # The producer recorded why this fact is missing; keep its reason explicit.
        return {
            "facet": facet,
            "status": found["status"],
            "value": found,
            "reason": str(found.get("reason") or f"the producer recorded {facet} as {found['status']}"),
            "limitations": list(parent.limitations),
        }
    body = _unwrap(found)
    if isinstance(body, str):
        return {"facet": facet, "status": "available", **text_page(body, offset, limit)}
    if isinstance(body, list):
        return {"facet": facet, "status": "available", **row_page(body, offset, limit)}
    return {"facet": facet, "status": "available", "value": msgspec.to_builtins(body)}


def _row_matches(row: Any, key: str) -> bool:
    row = as_object(row)
    return isinstance(row, dict) and any(row.get(k) == key for k in ITEM_KEYS)


def item_view(parent: Evidence, view: Arguments) -> JSONObject:
    section = arg_str(view, "section", "")
    value = _lookup(parent.normalized_result, section)
    selectors = [k for k in ("key", "node_id", "index") if k in view]
    if len(selectors) != 1:
        raise _bad_view("key", "an item view takes exactly one of key, node_id or index", "missing_argument")
    sel = selectors[0]
    if isinstance(value, dict):
        if sel != "key" or view["key"] not in value:
            raise _bad_view(
                sel,
                f"section {section!r} has no member {view.get(sel)!r}",
                available_keys=sorted(value)[:256],
            )
        return {"section": section, "key": view["key"], "item": msgspec.to_builtins(value[view["key"]])}
    if not isinstance(value, list):
        raise _bad_view("section", f"section {section!r} is neither a list nor an object")
    if sel == "index":
        index = arg_int(view, "index", 0)
        if index >= len(value):
            raise _bad_view(
                "index",
                f"index {index} is past the end ({len(value)} rows)",
                "out_of_range",
                total=len(value),
            )
        return {"section": section, "index": index, "item": msgspec.to_builtins(value[index])}
    if sel == "node_id":
        rows = [as_object(row) for row in value]
        hits = [
            i
            for i, row in enumerate(rows)
            if isinstance(row, dict) and view["node_id"] in (row.get("node_id"), row.get("id"))
        ]
    else:
        hits = [i for i, row in enumerate(value) if _row_matches(row, arg_str(view, "key", ""))]
    if not hits:
        raise _bad_view(sel, f"section {section!r} has no row with {sel} {view[sel]!r}")
    if len(hits) > 1:
        node_ids = [as_object(value[i]).get("node_id") for i in hits[:32]]
        raise _bad_view(
            sel,
            f"{view[sel]!r} matches {len(hits)} rows of {section!r}; select one by node_id or index",
            "invalid_value",
            matching_indexes=hits[:32],
            matching_node_ids=node_ids,
        )
    return {"section": section, sel: view[sel], "index": hits[0], "item": msgspec.to_builtins(value[hits[0]])}


# -- the view record ----------------------------------------------------------------------------


def normalize_view(view: Arguments | None) -> Arguments:
    """The view with its defaults filled in, as recorded in the view Evidence's parameters."""
    v = dict(view or {"kind": "summary"})
    if v["kind"] in ("page", "native", "facet"):
        v.setdefault("offset", 0)
        v.setdefault("limit", PAGE_DEFAULT_LIMIT)
        if not 1 <= arg_int(v, "limit", PAGE_DEFAULT_LIMIT) <= PAGE_MAX_LIMIT:
            raise _bad_view("limit", f"limit must be between 1 and {PAGE_MAX_LIMIT}", "out_of_range")
    return v


def select(parent: Evidence, view: Arguments) -> JSONObject:
    """The selected facts for ``view`` (already normalized)."""
    kind = view["kind"]
    if kind == "summary":
        return {"summary": summary(parent)}
    if kind == "item":
        return item_view(parent, view)
    offset, limit = arg_int(view, "offset", 0), arg_int(view, "limit", PAGE_DEFAULT_LIMIT)
    if kind == "page":
        section = arg_str(view, "section", "")
        rows = _lookup(parent.normalized_result, section)
        if isinstance(rows, str):
            return {"section": section, **text_page(rows, offset, limit)}
        if not isinstance(rows, list):
            raise _bad_view(
                "section",
                f"section {section!r} is not a list; use an item view",
                available_sections=sorted(list_sections(parent.normalized_result)),
            )
        return {"section": section, **row_page(rows, offset, limit)}
    return facet_view(parent, arg_str(view, "facet", ""), offset, limit)


def build_view(parent: Evidence, view: Arguments | None) -> Evidence:
    """A view Evidence of ``parent``: linked to it, carrying the selection and its digest."""
    v = normalize_view(view)
    selected = select(parent, v)
    normalized = {
        "parent_evidence_id": parent.evidence_id,
        "parent_operation": parent.operation,
        "view": v,
        "facts_digest": canonical_digest(selected),
        **selected,
    }
    return ev_mod.build(
        operation=VIEW_OPERATION,
        provider=parent.provider,
        subject=parent.subject,
        analysis_profile=parent.analysis_profile,
        parameters={"source": ev_mod.retained_reference(parent.evidence_id), "view": v},
        normalized_result=normalized,
        confidence=parent.confidence,
        authority=parent.authority,
        environment=parent.environment,
        limitations=list(parent.limitations),
        evidence_links=[parent.evidence_id],
    )
