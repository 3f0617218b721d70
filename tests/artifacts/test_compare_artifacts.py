"""compare_artifacts over inline and retained inspect_artifact Evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea import evidence as ev_mod
from rea.errors import ReaError
from rea.evidence import Evidence
from rea.session import Session
from rea.testing import call_tool


def _inspect(session: Session, path: Path, **args: Any) -> Evidence:
    ev = call_tool(session, "inspect_artifact", {"path": str(path), **args}).evidence
    assert ev is not None
    return ev


def _ref(ev: Evidence) -> dict[str, str]:
    return ev_mod.retained_reference(ev.evidence_id)


def _compare(session: Session, left: Any, right: Any) -> Evidence:
    ev = call_tool(session, "compare_artifacts", {"left": left, "right": right}).evidence
    assert ev is not None
    return ev


def test_added_removed_changed_unchanged(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    v1 = kit.write_tree(tmp_path / "v1", {"same.js": b"s", "gone.js": b"g", "edit.js": b"1"})
    v2 = kit.write_tree(tmp_path / "v2", {"same.js": b"s", "new.js": b"n", "edit.js": b"22"})
    left, right = _inspect(rea_session, v1), _inspect(rea_session, v2)
    ev = _compare(rea_session, _ref(left), msgspec.to_builtins(right))  # one retained, one inline
    res = ev.normalized_result
    assert [e["path"] for e in res["added"]] == ["new.js"]
    assert [e["path"] for e in res["removed"]] == ["gone.js"]
    assert [(e["path"], e["fields"]) for e in res["changed"]] == [("edit.js", ["sha256", "size"])]
    assert res["unchanged"] == [{"path": "same.js"}]
    assert res["contradicted"] == []
    assert res["summary"] == {"added": 1, "removed": 1, "changed": 1, "unchanged": 1, "contradicted": 0}
    assert sorted(ev.evidence_links) == sorted([left.evidence_id, right.evidence_id])
    assert res["left"]["evidence_id"] == left.evidence_id


def test_contradicted_entries_are_never_unchanged(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    files = {"a.js": b"same bytes", "b.js": b"b"}
    header, data = kit.build_asar(files)
    good = tmp_path / "good.asar"
    good.write_bytes(kit.asar_bytes(header, data))
    # Declared hash of a.js no longer matches; its bytes stay identical to the good archive's.
    header["files"]["a.js"]["integrity"]["hash"] = "0" * 64
    bad = tmp_path / "bad.asar"
    bad.write_bytes(kit.asar_bytes(header, data))
    left = _inspect(rea_session, good)
    right = _inspect(rea_session, bad, integrity_policy="record-and-continue")
    res = _compare(rea_session, _ref(left), _ref(right)).normalized_result
    assert [c["path"] for c in res["contradicted"]] == ["a.js"]
    assert res["contradicted"][0]["contradicted_in"] == ["right"]
    assert res["contradicted"][0]["left"]["sha256"] == res["contradicted"][0]["right"]["sha256"]
    assert {"path": "a.js"} not in res["unchanged"] and {"path": "b.js"} in res["unchanged"]
    assert res["coverage"] == "partial"


def test_wrong_operation_is_invalid_request(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    d = kit.write_tree(tmp_path / "d", {"x": b"x"})
    inv = _inspect(rea_session, d)
    cmp_ev = _compare(rea_session, _ref(inv), _ref(inv))
    with pytest.raises(ReaError) as err:
        _compare(rea_session, _ref(cmp_ev), _ref(inv))
    assert err.value.code == "invalid_request" and err.value.details["issues"][0]["path"] == "left"


def test_missing_reference_and_tampered_inline(rea_session: Session, tmp_path: Path, kit: Any) -> None:
    d = kit.write_tree(tmp_path / "d", {"x": b"x"})
    inv = _inspect(rea_session, d)
    with pytest.raises(ReaError) as err:
        _compare(rea_session, ev_mod.retained_reference("ev_" + "a" * 64), _ref(inv))
    assert err.value.code == "target_unavailable" and err.value.details["reason"] == "missing"
    forged = msgspec.to_builtins(inv)
    forged["normalized_result"]["entries"][0]["sha256"] = "f" * 64
    with pytest.raises(ReaError) as err:
        _compare(rea_session, forged, _ref(inv))
    assert err.value.code == "evidence_integrity_mismatch"
