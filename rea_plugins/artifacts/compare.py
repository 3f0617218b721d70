"""Compare two ``inspect_artifact`` inventories by logical path; contradictions are never unchanged.

Each side is an Evidence record's normalized result as JSON (``JSONObject``): a retained record, or one an imported
bundle brought, so every part is checked for its kind before it is read. The answer is built as JSON too: its rows
put the logical path first, where ``ArtifactComparison``'s rows (which describe it) declare the entry's facts first.
"""

from __future__ import annotations

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import ReaError

_FACTS = ("kind", "size", "sha256", "link", "executable", "unpacked")


def _inventory(ev: Evidence, side: str) -> JSONObject:
    result = ev.normalized_result
    if (
        ev.operation != "inspect_artifact"
        or not isinstance(result, dict)
        or not isinstance(result.get("entries"), list)
    ):
        raise ReaError(
            "invalid_request",
            f"{side} must be inspect_artifact Evidence (got {ev.operation})",
            details={
                "issues": [
                    {
                        "path": side,
                        "reason": "invalid_value",
                        "message": "expected Evidence produced by inspect_artifact",
                    }
                ]
            },
        )
    return result


def _rows(value: JSONValue) -> list[JSONObject]:
    return [row for row in value if isinstance(row, dict)] if isinstance(value, list) else []


def _key(row: JSONObject, path: str) -> tuple[str, int]:
    """An entry's (logical path, ordinal): the ordinal tells apart entries an archive holds under one path."""
    ordinal = row.get("ordinal", 0)
    return str(row.get(path)), ordinal if isinstance(ordinal, int) else 0


def _index(result: JSONObject) -> tuple[dict[tuple[str, int], JSONObject], set[tuple[str, int]]]:
    entries = {_key(e, "path"): e for e in _rows(result["entries"])}
    contradicted = {_key(c, "logical_path") for c in _rows(result.get("integrity_contradictions", []))}
    contradicted |= {k for k, e in entries.items() if e.get("integrity") == "contradicted"}
    return entries, contradicted


def _facts(e: JSONObject) -> JSONObject:
    return {k: e.get(k) for k in _FACTS}


def compare(left: Evidence, right: Evidence) -> JSONObject:
    """Added, removed, changed, unchanged and contradicted entries, each sorted by logical path."""
    lres, rres = _inventory(left, "left"), _inventory(right, "right")
    lent, lbad = _index(lres)
    rent, rbad = _index(rres)
    added: list[JSONValue] = []
    removed: list[JSONValue] = []
    changed: list[JSONValue] = []
    unchanged: list[JSONValue] = []
    contradicted: list[JSONValue] = []
    for key in sorted(set(lent) | set(rent)):
        path, ordinal = key
        label: JSONObject = {"path": path} if not ordinal else {"path": path, "ordinal": ordinal}
        a, b = lent.get(key), rent.get(key)
        if key in lbad or key in rbad:
            contradicted.append(
                {
                    **label,
                    "left": None if a is None else _facts(a),
                    "right": None if b is None else _facts(b),
                    "contradicted_in": [side for side, bad in (("left", lbad), ("right", rbad)) if key in bad],
                }
            )
        elif a is None:
            assert b is not None
            added.append({**label, **_facts(b)})
        elif b is None:
            removed.append({**label, **_facts(a)})
        elif _facts(a) != _facts(b) or (a.get("kind") == "file" and a.get("sha256") is None):
            # An entry whose bytes could not be read on a side cannot be shown unchanged.
            differing: list[JSONValue] = [k for k in sorted(_FACTS) if a.get(k) != b.get(k)] or ["sha256"]
            changed.append({**label, "fields": differing, "left": _facts(a), "right": _facts(b)})
        else:
            unchanged.append(label)
    partial = "partial" in (lres.get("coverage"), rres.get("coverage"))
    return {
        "left": _side(left, lres),
        "right": _side(right, rres),
        "summary": {
            "added": len(added),
            "removed": len(removed),
            "changed": len(changed),
            "unchanged": len(unchanged),
            "contradicted": len(contradicted),
        },
        "added": added,
        "removed": removed,
        "changed": changed,
        "unchanged": unchanged,
        "contradicted": contradicted,
        "coverage": "partial" if partial else "complete",
    }


def _side(ev: Evidence, result: JSONObject) -> JSONObject:
    entries = result["entries"]
    return {
        "evidence_id": ev.evidence_id,
        "format": result.get("format"),
        "sha256": ev.subject.digest.sha256 if ev.subject else None,
        "entry_count": len(entries) if isinstance(entries, list) else 0,
        "coverage": result.get("coverage"),
    }
