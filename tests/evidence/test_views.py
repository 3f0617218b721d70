"""inspect_analysis_view: summary, item, page and native text views of retained or inline Evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rea import evidence as ev_mod
from rea.canonical import canonical_digest
from rea.errors import ReaError
from rea.evidence import Evidence
from rea.session import Session
from rea.testing import call_tool

from .support import PROVIDER
from .support import SOURCE_FUNCTIONS
from .support import compile_fixture
from .support import procedure_records
from .support import subject_of

# Pseudocode with astral characters so pages must step around surrogate pairs.
PSEUDO = 'int main(void) {\n  puts("\U0001f600 ok \U0001f680");\n  return 0; /* \U00010348 */\n}\n' * 3


def _view(session: Session, source: dict[str, Any], view: dict[str, Any] | None = None) -> Evidence:
    args: dict[str, Any] = {"source": source}
    if view is not None:
        args["view"] = view
    out = call_tool(session, "inspect_analysis_view", args)
    assert out.evidence is not None
    return out.evidence


def _ref(ev: Evidence) -> dict[str, str]:
    return ev_mod.retained_reference(ev.evidence_id)


@pytest.fixture
def function_ev(rea_session: Session, tmp_path: Path) -> Evidence:
    binary = compile_fixture(tmp_path)
    ev = ev_mod.build(
        operation="analyze_function",
        provider=PROVIDER,
        subject=subject_of(binary),
        analysis_profile=ev_mod.make_profile(PROVIDER, {"fixture": True}),
        parameters={"procedure": "main"},
        normalized_result={
            "procedure": {"address": "0x1149", "name": "main"},
            "pseudocode": {"text": PSEUDO},
            "assembly": [{"address": hex(0x1149 + i), "text": f"nop ; {i}"} for i in range(300)],
            "callees": [{"name": "puts", "kind": "import"}],
            "value_flow": None,
        },
    )
    rea_session.ledger.record(ev)
    return ev


def test_pseudocode_pages_never_split_surrogate_pairs(rea_session: Session, function_ev: Evidence) -> None:
    units = len(PSEUDO.encode("utf-16-le")) // 2
    for limit in (1, 2, 7, 64):
        offset: int | None = 0
        pieces = []
        while offset is not None:
            page = _view(
                rea_session,
                _ref(function_ev),
                {"kind": "native", "facet": "pseudocode", "offset": offset, "limit": limit},
            ).normalized_result
            assert page["total"] == units and page["unit"] == "utf-16-code-unit"
            text = page["text"]
            text.encode("utf-8")  # raises on a lone surrogate
            assert page["length"] == len(text.encode("utf-16-le")) // 2 <= max(limit, 2)
            pieces.append(text)
            assert page["next_offset"] is None or page["next_offset"] > offset
            offset = page["next_offset"]
        assert "".join(pieces) == PSEUDO


def test_rows_page_summary_and_item(rea_session: Session, function_ev: Evidence) -> None:
    page = _view(rea_session, _ref(function_ev), {"kind": "native", "facet": "assembly", "offset": 256})
    n = page.normalized_result
    assert n["total"] == 300 and len(n["items"]) == 44 and n["next_offset"] is None and n["limit"] == 64
    assert n["facts_digest"] == canonical_digest(
        {k: v for k, v in n.items() if k not in ("parent_evidence_id", "parent_operation", "view", "facts_digest")}
    )
    assert page.evidence_links == [function_ev.evidence_id] and page.operation == "inspect_analysis_view"
    assert n["parent_evidence_id"] == function_ev.evidence_id and page.subject == function_ev.subject
    assert page.analysis_profile == function_ev.analysis_profile
    summary = _view(rea_session, _ref(function_ev)).normalized_result["summary"]
    assert summary["procedure"] == {"address": "0x1149", "name": "main"}
    assert {"name": "assembly", "count": 300} in summary["sections"]
    assert set(summary["native_facets"]) >= {"pseudocode", "assembly"}
    item = _view(rea_session, _ref(function_ev), {"kind": "item", "section": "callees", "key": "puts"})
    assert item.normalized_result["item"] == {"name": "puts", "kind": "import"}
    unavailable = _view(rea_session, _ref(function_ev), {"kind": "native", "facet": "value_flow"})
    assert unavailable.normalized_result["status"] == "unavailable"


def test_inline_and_retained_sources_give_the_same_view(rea_session: Session, function_ev: Evidence) -> None:
    view = {"kind": "page", "section": "assembly", "offset": 10, "limit": 5}
    retained = _view(rea_session, _ref(function_ev), view)
    inline = _view(Session(rea_session.registry), {"kind": "inline", "evidence": ev_mod.to_builtins(function_ev)}, view)
    assert inline.evidence_id == retained.evidence_id
    assert rea_session.ledger.get(retained.evidence_id) == retained  # the view itself is retained


def test_module_items_by_node_id_and_ambiguity(rea_session: Session) -> None:
    modules = [
        {"node_id": "m1", "path": "src/a.js", "kind": "source"},
        {"node_id": "m2", "path": "src/b.js", "kind": "bundled"},
        {"node_id": "m3", "path": "src/b.js", "kind": "asset"},
    ]
    app = ev_mod.build(
        operation="analyze_javascript_application",
        provider=PROVIDER,
        subject=None,
        analysis_profile=None,
        parameters={},
        normalized_result={"application": {"name": "demo"}, "modules": modules},
    )
    rea_session.ledger.record(app)
    got = _view(rea_session, _ref(app), {"kind": "item", "section": "modules", "node_id": "m3"})
    assert got.normalized_result["item"] == modules[2]
    with pytest.raises(ReaError) as info:
        _view(rea_session, _ref(app), {"kind": "item", "section": "modules", "key": "src/b.js"})
    assert info.value.code == "invalid_request" and info.value.details["matching_node_ids"] == ["m2", "m3"]
    with pytest.raises(ReaError) as info:
        _view(rea_session, _ref(app), {"kind": "page", "section": "nope"})
    assert info.value.details["available_sections"] == ["modules"]
    with pytest.raises(ReaError) as info:
        _view(rea_session, _ref(app), {"kind": "page", "section": "modules", "limit": 257})
    assert info.value.code == "invalid_request"
    summary = _view(rea_session, _ref(app)).normalized_result["summary"]
    assert summary["fields"]["application"] == {"name": "demo"}


def test_layout_facets_and_generic_sections(rea_session: Session, tmp_path: Path) -> None:
    binary = compile_fixture(tmp_path)
    layout = ev_mod.build(
        operation="inspect_binary_layout",
        provider=PROVIDER,
        subject=subject_of(binary),
        analysis_profile=None,
        parameters={},
        normalized_result={
            "mitigations": {"nx": True, "pie": True, "relro": "full"},
            "linkage": {"interpreter": "/lib64/ld-linux-x86-64.so.2", "needed": ["libc.so.6"]},
        },
    )
    rea_session.ledger.record(layout)
    mit = _view(rea_session, _ref(layout), {"kind": "facet", "facet": "mitigations"}).normalized_result
    assert mit["value"] == {"nx": True, "pie": True, "relro": "full"}
    link = _view(rea_session, _ref(layout), {"kind": "page", "section": "linkage/needed"}).normalized_result
    assert link["items"] == ["libc.so.6"]
    listing = procedure_records(binary)[-1]
    rea_session.ledger.record(listing)
    page = _view(rea_session, _ref(listing), {"kind": "page", "section": "procedures", "limit": 2})
    names = [row["name"] for row in page.normalized_result["items"]]
    assert page.normalized_result["total"] == len(SOURCE_FUNCTIONS) and len(names) == 2


def test_views_of_real_analyze_function_evidence(rea_session: Session, tmp_path: Path) -> None:
    if "analyze_function" not in rea_session.registry.tools or "native" not in rea_session.registry.providers:
        pytest.skip("the binary tools or the native provider are not installed")
    from .support import functions_of

    binary = compile_fixture(tmp_path)
    call_tool(rea_session, "open_binary", {"path": str(binary), "provider_id": "native"})
    parent = call_tool(rea_session, "analyze_function", {"procedure": "checksum"}).evidence
    assert parent is not None
    expected_addr = functions_of(binary)["checksum"]["address"]
    summary = _view(rea_session, _ref(parent)).normalized_result["summary"]
    assert summary["procedure"]["name"] == "checksum" and summary["procedure"]["address"] == expected_addr
    instructions = parent.normalized_result["assembly"]["instructions"]
    assert {"name": "assembly/instructions", "count": len(instructions)} in summary["sections"]
    page = _view(rea_session, _ref(parent), {"kind": "native", "facet": "assembly", "limit": 5}).normalized_result
    assert page["items"] == instructions[:5] and page["items"][0]["address"] == expected_addr
    assert page["total"] == len(instructions)
    pseudo = parent.normalized_result["pseudocode"]
    got = _view(rea_session, _ref(parent), {"kind": "native", "facet": "pseudocode"}).normalized_result
    if pseudo.get("status") == "ok":
        assert got["status"] == "available" and got["text"] == pseudo["text"][: len(got["text"])]
    else:  # the provider has no decompiler: the view says so instead of failing
        assert got["status"] == pseudo["status"] and got["value"] == pseudo
    found = call_tool(
        rea_session, "get_evidence_bundle", {"detail": "summary", "filters": {"procedure_address": expected_addr}}
    ).structured
    assert found is not None
    assert parent.evidence_id in {r["evidence_id"] for r in found["records"]}
    assert all(r["procedure"]["address"] == expected_addr for r in found["records"])
