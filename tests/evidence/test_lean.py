"""The lean presentation of a record (rea.evidence.LeanEvidence): what it keeps, its provenance id, and how the
ledger takes one back."""

from __future__ import annotations

from typing import Any

import jsonschema
import msgspec
import pytest

from rea import evidence as ev_mod
from rea.errors import ReaError
from rea.evidence import Digest
from rea.evidence import Environment
from rea.evidence import Evidence
from rea.evidence import ProviderIdentity
from rea.evidence import Subject
from rea.ledger import Ledger
from rea.presentation import lean_evidence_output_schema
from rea.presentation import present

PROVIDER = ProviderIdentity(id="fixture-static", name="Fixture static reader", version="1.0.0")
SUBJECT = Subject(
    name="prog", local_path="/tmp/prog", digest=Digest(sha256="a" * 64), size=10, format="elf", architecture="x86_64"
)
PROFILE = ev_mod.make_profile(PROVIDER, {"engine": "fixture", "limit": 5})


def _record(**overrides: Any) -> Evidence:
    fields: dict[str, Any] = {
        "operation": "list_procedures",
        "provider": PROVIDER,
        "subject": SUBJECT,
        "analysis_profile": PROFILE,
        "parameters": {"limit": 1},
        "normalized_result": {"procedures": [{"name": "main"}]},
    }
    return ev_mod.build(**{**fields, **overrides})


def _lean(ev: Evidence) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(present(ev, "lean"))
    return out


def test_a_lean_record_keeps_only_what_says_something() -> None:
    ev = _record()
    doc = _lean(ev)
    assert doc == {
        "evidence_id": ev.evidence_id,
        "operation": "list_procedures",
        "provenance": ev_mod.provenance_id(SUBJECT, PROVIDER, PROFILE),
        "normalized_result": {"procedures": [{"name": "main"}]},
    }
    jsonschema.validate(doc, lean_evidence_output_schema())
    # A value other than the default is kept, whatever string object holds it.
    env = Environment(id="e1", platform="linux", architecture="x86_64", isolation="process")
    told = _record(
        confidence="inferred",
        authority="".join(["historical-", "reference"]),
        limitations=["partial"],
        evidence_links=["ev_" + "1" * 64],
        environment=env,
        raw_result={"engine": "text"},
    )
    kept = _lean(told)
    assert kept["confidence"] == "inferred" and kept["authority"] == "historical-reference"
    assert kept["limitations"] == ["partial"] and kept["evidence_links"] == ["ev_" + "1" * 64]
    assert kept["environment"]["isolation"] == "process" and kept["raw_result"] == {"engine": "text"}
    assert "locations" not in kept and "parameters" not in kept and "predicate_type" not in kept
    jsonschema.validate(kept, lean_evidence_output_schema())
    # "shipped-artifact" built at run time is still the default, and left out.
    assert "authority" not in _lean(_record(authority="".join(["shipped-", "artifact"])))
    # The same record as builtins (the CLI's form) presents alike.
    assert present(msgspec.to_builtins(told), "lean") == kept


def test_the_provenance_id_is_bound_to_artifact_provider_and_profile() -> None:
    pid = ev_mod.provenance_id(SUBJECT, PROVIDER, PROFILE)
    assert ev_mod.PROVENANCE_ID.match(pid)
    # Display-only fields are not identity: the same bytes under another name share the provenance.
    moved = msgspec.structs.replace(SUBJECT, name="other", local_path="/srv/other")
    assert ev_mod.provenance_id(moved, PROVIDER, PROFILE) == pid
    other_profile = ev_mod.make_profile(PROVIDER, {"engine": "fixture", "limit": 6})
    other_bytes = msgspec.structs.replace(SUBJECT, digest=Digest(sha256="b" * 64))
    other_view = msgspec.structs.replace(SUBJECT, format="dotnet")
    other_provider = ProviderIdentity(id="fixture-static", name="Fixture static reader", version="1.0.1")
    others = {
        ev_mod.provenance_id(SUBJECT, PROVIDER, other_profile),
        ev_mod.provenance_id(other_bytes, PROVIDER, PROFILE),
        ev_mod.provenance_id(other_view, PROVIDER, PROFILE),
        ev_mod.provenance_id(SUBJECT, other_provider, PROFILE),
        ev_mod.provenance_id(None, PROVIDER, None),
    }
    assert pid not in others and len(others) == 5
    assert ev_mod.provenance(_record()).id == pid


def test_the_ledger_takes_a_lean_record_back_as_its_retained_original() -> None:
    ledger = Ledger()
    ev = _record()
    ledger.record(ev)
    assert ledger.resolve(_lean(ev), "left") is ev
    with pytest.raises(ReaError) as edited:
        ledger.resolve({**_lean(ev), "normalized_result": {"procedures": []}}, "left")
    assert edited.value.code == "evidence_integrity_mismatch"
    assert edited.value.details["reason"] == "lean_record_mismatch"
    with pytest.raises(ReaError) as missing:
        Ledger().resolve(_lean(ev), "left")
    assert missing.value.code == "target_unavailable" and missing.value.details["reason"] == "not_retained"
    assert missing.value.remediation and "REA_RESULT_PRESENTATION=complete" in missing.value.remediation
    # A ledger with a fallback (the CLI's analysis cache) finds it there.
    cached = Ledger(fallback=lambda eid: ev if eid == ev.evidence_id else None)
    assert cached.resolve(_lean(ev), "left") is ev
    with pytest.raises(ReaError) as malformed:
        ledger.resolve({"evidence_id": "ev_1", "provenance": "pv_0"}, "left")
    assert malformed.value.code == "invalid_request"
