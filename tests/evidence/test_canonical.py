"""Canonical JSON equals the rfc8785 reference byte for byte; Evidence ids follow semantic content."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import msgspec
import pytest
import rfc8785
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from rea import canonical
from rea import evidence as ev_mod
from rea.canonical import CanonicalError
from rea.canonical import canonical_digest
from rea.canonical import canonical_json
from rea.errors import ReaError
from rea.evidence import Evidence

from .strategies import json_values
from .strategies import records
from .strategies import wide_values

PROFILE = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _outcome(fn: Any, value: Any) -> tuple[str, bytes | None]:
    try:
        return "ok", fn(value)
    except (CanonicalError, rfc8785.CanonicalizationError, ValueError, TypeError):
        return "rejected", None


@PROFILE
@given(json_values)
def test_canonical_json_equals_rfc8785(value: Any) -> None:
    assert canonical_json(value) == rfc8785.dumps(value)


@PROFILE
@given(wide_values)
def test_out_of_domain_values_are_rejected_by_both_or_agree(value: Any) -> None:
    assert _outcome(canonical_json, value) == _outcome(rfc8785.dumps, value)


@pytest.mark.parametrize(
    "value",
    [
        1.0,
        -0.0,
        1e21,
        1e-7,
        5e-324,
        2**53 - 1,
        -(2**53 - 1),
        {"\U0001f600": 1, "\uffff": 2, "\ue000": 3},
        ["\x00\x1f\x7f\u2028", "\ud7ff"],
        {"a": [1.5, {"b": 2.0e300}]},
    ],
)
def test_canonical_edge_values(value: Any) -> None:
    assert canonical_json(value) == rfc8785.dumps(value)


@pytest.mark.parametrize(
    "value", [2**53, -(2**53), 2**64, [float("-inf"), 1.5], {"x": [float("nan"), 0.5]}, "\ud800", {"k": [1, 2**60]}]
)
def test_values_outside_jcs_are_rejected(value: Any) -> None:
    with pytest.raises(CanonicalError):
        canonical_json(value)
    with pytest.raises((rfc8785.CanonicalizationError, ValueError)):
        rfc8785.dumps(value)


@pytest.mark.parametrize("value", [float("nan"), {"x": [float("inf")]}, {"a": None, "b": [-float("inf")]}])
def test_lone_non_finite_floats_are_rejected(value: Any) -> None:
    with pytest.raises(CanonicalError):
        canonical_json(value)


@PROFILE
@given(records())
def test_evidence_id_is_the_digest_of_the_semantic_projection(ev: Evidence) -> None:
    projection = ev_mod.to_builtins(ev)
    del projection["evidence_id"]
    if projection["subject"] is not None:
        del projection["subject"]["name"], projection["subject"]["local_path"]
    assert ev.evidence_id == "ev_" + canonical_digest(projection)
    assert ev.evidence_id == "ev_" + hashlib.sha256(rfc8785.dumps(projection)).hexdigest()


@PROFILE
@given(records())
def test_decode_encode_round_trip(ev: Evidence) -> None:
    back = ev_mod.decode(ev_mod.encode(ev))
    assert back == ev
    assert ev_mod.from_builtins(msgspec.json.decode(ev_mod.encode(ev))) == ev
    assert canonical_json(back) == canonical_json(ev)


# Each mutation changes one field's JSON value; display-only fields keep the id.
DISPLAY_ONLY = {("subject", "name"), ("subject", "local_path")}
FIELD_PATHS = [
    ("subject", "name"),
    ("subject", "local_path"),
    ("subject", "size"),
    ("subject", "format"),
    ("subject", "architecture"),
    ("subject", "digest", "sha256"),
    ("provider", "name"),
    ("provider", "version"),
    ("provider", "id"),
    ("predicate_type",),
    ("operation",),
    ("parameters",),
    ("raw_result",),
    ("normalized_result",),
    ("confidence",),
    ("authority",),
    ("environment",),
    ("limitations",),
    ("locations",),
    ("evidence_links",),
    ("analysis_profile",),
]


def _mutated(value: Any, path: tuple[str, ...]) -> Any:
    if path == ("confidence",):
        return "inferred" if value != "inferred" else "observed"
    if path == ("authority",):
        return "analyst-inference" if value != "analyst-inference" else "shipped-artifact"
    if path == ("subject", "size"):
        return value + 1
    if path == ("provider", "version"):
        return "9.9" if value != "9.9" else None
    if path == ("subject", "architecture"):
        return "arm" if value != "arm" else None
    if path == ("subject", "digest", "sha256"):
        return ("0" if value[0] != "0" else "1") + value[1:]
    if path == ("evidence_links",):
        return sorted([*value, "ev_" + "f" * 64]) if "ev_" + "f" * 64 not in value else []
    if path == ("locations",):
        return [*value, {"kind": "file-offset", "offset": 1}]
    if path == ("environment",):
        return (
            None
            if value is not None
            else {"id": "e", "platform": "linux", "architecture": "x86_64", "isolation": "none"}
        )
    if path == ("analysis_profile",):
        return None if value is not None else "unset-profile"
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [*value, "x"]
    if isinstance(value, dict):
        return {**value, "\x00mutation": 1}
    return [value]


@PROFILE
@given(records(), st.sampled_from(FIELD_PATHS))
def test_id_changes_iff_identity_bearing_content_changes(ev: Evidence, path: tuple[str, ...]) -> None:
    data = ev_mod.to_builtins(ev)
    if path[0] == "subject" and data["subject"] is None:
        return
    edited = copy.deepcopy(data)
    node = edited
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = _mutated(node[path[-1]], path)
    if path == ("analysis_profile",) and edited["analysis_profile"] == "unset-profile":
        edited["analysis_profile"] = msgspec.to_builtins(ev_mod.make_profile(ev.provider, {"k": 1}))
    if path[0] == "provider" and edited["analysis_profile"] is not None:
        # The profile commits to its provider; rebuild it so only the provider identity differs.
        prov = ev_mod.ProviderIdentity(**edited["provider"])
        edited["analysis_profile"] = msgspec.to_builtins(
            ev_mod.make_profile(prov, edited["analysis_profile"]["parameters"])
        )
    edited_ev = msgspec.convert({**edited, "evidence_id": ""}, Evidence)
    new_id = ev_mod.compute_evidence_id(edited_ev)
    if path in DISPLAY_ONLY:
        assert new_id == ev.evidence_id
        # The edited record still authenticates under the original id.
        assert ev_mod.from_builtins({**edited, "evidence_id": ev.evidence_id}).evidence_id == ev.evidence_id
    else:
        assert new_id != ev.evidence_id
        with pytest.raises(ReaError) as info:
            ev_mod.from_builtins({**edited, "evidence_id": ev.evidence_id})
        assert info.value.code == "evidence_integrity_mismatch"


@PROFILE
@given(records())
def test_id_is_stable_across_rebuilds_and_paths(ev: Evidence) -> None:
    again = ev_mod.build(
        operation=ev.operation,
        provider=ev.provider,
        subject=ev.subject,
        analysis_profile=ev.analysis_profile,
        parameters=copy.deepcopy(ev.parameters),
        normalized_result=copy.deepcopy(ev.normalized_result),
        raw_result=copy.deepcopy(ev.raw_result),
        confidence=ev.confidence,
        authority=ev.authority,
        environment=ev.environment,
        limitations=list(ev.limitations),
        locations=copy.deepcopy(ev.locations),
        evidence_links=list(reversed(ev.evidence_links)),
    )
    assert again.evidence_id == ev.evidence_id
    if ev.subject is not None:
        moved = msgspec.structs.replace(
            ev, subject=msgspec.structs.replace(ev.subject, name="elsewhere", local_path="/another/place/elsewhere")
        )
        assert ev_mod.compute_evidence_id(moved) == ev.evidence_id


def _reference_digest(value: Any, builtins: Any) -> str | None:
    """The SHA-256 of the reference implementation's RFC 8785 form of ``builtins`` (``value`` as builtins); None
    when the reference refuses it, after checking that rea refuses ``value`` too."""
    try:
        return hashlib.sha256(rfc8785.dumps(builtins)).hexdigest()
    except rfc8785.CanonicalizationError:
        with pytest.raises(CanonicalError):
            canonical_digest(value)
        return None


def _large_digest_is_the_reference(rows: list[Any], tail: Any) -> bool:
    """``rows`` with ``tail`` last, over 1 MiB: rea's digest is the reference's (True), or both refuse it (False)."""
    rows.append({"tail": tail})
    assert len(msgspec.json.encode(rows)) > 1 << 20
    expected = _reference_digest(rows, rows)
    if expected is None:
        return False
    assert canonical_digest(rows) == expected
    return True


@pytest.mark.parametrize("tail", [None, 0.5, 2**60, {"\U0001f600": 1, "\uffff": 2}, -(2**53 - 1)])
def test_large_values_take_the_overlapped_digest_path(tail: Any) -> None:
    # Over 1 MiB the hash runs beside the divergence scan; a divergent token at the very end must still count.
    rows: list[Any] = [{"address": hex(0x401000 + i), "name": f"sub_{i:x}", "size": i} for i in range(30_000)]
    _large_digest_is_the_reference(rows, tail)


@pytest.mark.parametrize("tail", [None, 0.25, 2**60, [{"deep": [1, {"x": 1e21}]}], True])
def test_large_documents_with_number_like_strings_are_exact(tail: Any) -> None:
    # Minified code in strings (",e", ":.5", "[1.5") fools the byte scan; a large document then walks the value.
    rows: list[Any] = [
        {"text": f"f(a,e{i});x={{k:.5}};g([1.5,{i}e3])", "line": i, "ok": i % 2 == 0} for i in range(25_000)
    ]
    if _large_digest_is_the_reference(rows, tail):
        assert canonical_json(rows) == rfc8785.dumps(rows)


_MODULE_SPOTS = [
    None,  # nothing divergent: the list is hashed a slice at a time
    ("item", 0.5),
    ("item", 2**60),
    ("item", {"\U0001f600": 1, "\uffff": 2}),
    ("item", float("nan")),
    ("rest", 1.25),
    ("rest", {"\U0001f600": 1, "a": 2}),
    ("rest", float("inf")),
    ("rest", -(2**53 - 1)),
    # A string equal to the placeholder the float formatting splits on, beside a float: the exact path.
    ("rest", {"f": 1.5, "s": "\x00rea-list\x00"}),
]


@pytest.mark.parametrize("spot", _MODULE_SPOTS)
def test_a_document_with_a_long_list_is_hashed_in_slices_yet_exact(spot: Any) -> None:
    # An application's facts: a Struct holding a dict whose "modules" list is long (streamed and scanned in slices);
    # a divergent value in any slice, or beside the list, must give the reference digest or the reference's refusal.
    modules: list[Any] = [
        {"path": f"node_modules/m{i}/index.js", "calls": [{"callee": "f(a,e1);x={k:.5}" * 24, "line": i}], "ok": True}
        for i in range(3000)
    ]
    document: dict[str, Any] = {"modules": modules, "summary": {"files": 3000}}
    if spot is not None:
        where, odd = spot
        if where == "item":
            modules[2100]["odd"] = odd
        else:
            document["summary"]["odd"] = odd
    value = ev_mod._EvidenceIdentity(
        subject=None,
        provider=ev_mod.ProviderIdentity(id="javascript", name="JavaScript", version="1"),
        analysis_profile=None,
        predicate_type="rea.analysis",
        operation="analyze_javascript_application",
        parameters={},
        raw_result=None,
        normalized_result=document,
        confidence="observed",
        authority="shipped-artifact",
        environment=None,
        limitations=[],
        locations=[],
        evidence_links=[],
    )
    found = canonical._largest_list(value, canonical._SCAN_STREAM_MIN, records=False)
    assert found is not None and found[1] is modules
    sliced = canonical._scanned_stream_digest(value, found, None)
    if spot is None:
        assert sliced is not None  # hashed a slice at a time
    elif spot[0] == "item" and type(spot[1]) is not int:
        assert sliced is None  # the divergent slice sends the whole value down the exact path
    elif spot == ("rest", 1.25):
        assert sliced is not None  # a float beside the list (an analysis profile's) is formatted around it
    builtins = msgspec.to_builtins(value)
    expected = _reference_digest(value, builtins)
    if expected is None:
        return
    assert sliced in (None, expected)
    stats: list[int] = []
    assert canonical_digest(value, stats) == expected
    if spot is None:
        whole = rfc8785.dumps(builtins)
        assert len(whole) > 1 << 20
        assert stats == [len(whole), whole.count(b'"') + whole.count(b"\\")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.floats(allow_nan=False, allow_infinity=False), st.text(alphabet=',:[0123456789.eE-x"'))
def test_the_float_scan_never_misses_a_float_token(value: Any, number: float, noise: str) -> None:
    # Strings shaped like numbers may make it suspect a float that is not there, never the other way round.
    for doc in ([value, noise, number], {"k": [noise, {"n": number}], "v": value}, [noise, value]):
        if any(type(leaf) is float for leaf in _leaves(doc)):
            assert canonical._may_have_floats(msgspec.json.encode(doc, order="sorted"))


def _leaves(value: Any) -> list[Any]:
    stack, out = [value], []
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            stack.extend(cur.values())
        elif isinstance(cur, list):
            stack.extend(cur)
        else:
            out.append(cur)
    return out


@pytest.mark.parametrize("spot", ["small", "large", "both", "nested"])
def test_an_object_is_float_formatted_member_by_member_yet_exact(spot: str) -> None:
    # Only the members that may hold a float are re-read (a record's floats sit in its small profile); the large
    # member's number-like strings and real floats must still come out as the reference writes them.
    large: dict[str, Any] = {
        "rows": [{"text": f"x:{i}.5,[1e{i % 9}", "n": i} for i in range(4000)],
        "inner": {"deep": 2.5 if spot in ("large", "both") else 2},
    }
    value: dict[str, Any] = {"big": large, "profile": {"deadline_s": 300.0 if spot in ("small", "both") else 300}}
    if spot == "nested":
        value = {"outer": value, "z": 1e21}
    fast = msgspec.json.encode(value, order="sorted")
    assert len(fast) > canonical._SPLIT_BYTES
    assert canonical_json(value) == rfc8785.dumps(value)
    assert canonical_digest(value) == hashlib.sha256(rfc8785.dumps(value)).hexdigest()
