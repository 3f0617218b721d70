"""Compare two ``inspect_artifact`` inventories by logical path; contradictions are never unchanged."""

from __future__ import annotations

from typing import Any

from rea.plugin import Evidence, ReaError

_FACTS = ("kind", "size", "sha256", "link", "executable", "unpacked")


def _inventory(ev: Evidence, side: str) -> dict[str, Any]:
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


def _index(result: dict[str, Any]) -> tuple[dict[tuple[str, int], dict[str, Any]], set[tuple[str, int]]]:
    entries = {(e["path"], e.get("ordinal", 0)): e for e in result["entries"]}
    contradicted = {(c["logical_path"], c.get("ordinal", 0)) for c in result.get("integrity_contradictions", [])}
    contradicted |= {k for k, e in entries.items() if e.get("integrity") == "contradicted"}
    return entries, contradicted


def _facts(e: dict[str, Any]) -> dict[str, Any]:
    return {k: e.get(k) for k in _FACTS}


def compare(left: Evidence, right: Evidence) -> dict[str, Any]:
    """Added, removed, changed, unchanged and contradicted entries, each sorted by logical path."""
    lres, rres = _inventory(left, "left"), _inventory(right, "right")
    lent, lbad = _index(lres)
    rent, rbad = _index(rres)
    added, removed, changed, unchanged, contradicted = [], [], [], [], []
    for key in sorted(set(lent) | set(rent)):
        path, ordinal = key
        label = {"path": path} if not ordinal else {"path": path, "ordinal": ordinal}
        a, b = lent.get(key), rent.get(key)
        if key in lbad or key in rbad:
            contradicted.append(
                {
                    **label,
                    "left": None if a is None else _facts(a),
                    "right": None if b is None else _facts(b),
                    "contradicted_in": [s for s, bad in (("left", lbad), ("right", rbad)) if key in bad],
                }
            )
        elif a is None:
            assert b is not None
            added.append({**label, **_facts(b)})
        elif b is None:
            removed.append({**label, **_facts(a)})
        elif _facts(a) != _facts(b) or (a.get("kind") == "file" and a.get("sha256") is None):
            # An entry whose bytes could not be read on a side cannot be shown unchanged.
            differing = sorted(k for k in _FACTS if a.get(k) != b.get(k)) or ["sha256"]
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


def _side(ev: Evidence, result: dict[str, Any]) -> dict[str, Any]:
    return {
        "evidence_id": ev.evidence_id,
        "format": result.get("format"),
        "sha256": ev.subject.digest.sha256 if ev.subject else None,
        "entry_count": len(result["entries"]),
        "coverage": result.get("coverage"),
    }
