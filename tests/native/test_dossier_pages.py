"""analyze_function answers with a page of a dossier too large for one, the complete record one reference away."""

from __future__ import annotations

import pytest

from rea import evidence as ev_mod
from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of

SMALL = {"limit": 2, "max_instructions": 5}


def test_a_dossier_that_fits_is_the_complete_record(native: Session) -> None:
    ev = call_tool(
        native, "analyze_function", {"procedure": "dispatch", "max_instructions": 20000, "limit": 1000}
    ).evidence
    assert ev is not None
    assert "pages" not in ev.normalized_result and "complete_evidence_id" not in ev.normalized_result
    # Page arguments that cut nothing do not shape the record: its id is the default call's.
    assert ev.parameters == {"procedure": "dispatch"}


def test_a_larger_dossier_answers_with_its_page_and_names_the_complete_record(native: Session) -> None:
    page = call_tool(native, "analyze_function", {"procedure": "dispatch", **SMALL}).evidence
    assert page is not None
    body = page.normalized_result
    complete = native.resolve_evidence(ev_mod.retained_reference(body["complete_evidence_id"]))
    assert page.evidence_links == [complete.evidence_id] and complete.operation == "analyze_function"
    whole = complete.normalized_result
    assert len(body["assembly"]["instructions"]) == 5 and body["assembly"]["truncated"] is True
    assert body["assembly"]["instructions"] == whole["assembly"]["instructions"][:5]
    assert body["pages"]["assembly"]["total"] == len(whole["assembly"]["instructions"]) > 5
    for name in ("references", "cfg_edges", "basic_blocks"):
        assert body[name] == whole[name][:2]
        assert body["pages"][name]["total"] == len(whole[name])
    # The next page of one collection, and of the assembly.
    nxt = result_of(
        native,
        "analyze_function",
        {"procedure": "dispatch", **SMALL, "assembly_offset": 5, "collection_offset": {"references": 2}},
    )
    assert nxt["assembly"]["instructions"] == whole["assembly"]["instructions"][5:10]
    assert nxt["references"] == whole["references"][2:4] and nxt["cfg_edges"] == whole["cfg_edges"][:2]
    assert nxt["complete_evidence_id"] == complete.evidence_id
    # The complete record reads through inspect_analysis_view, and compares as the dossier it is.
    view = result_of(
        native,
        "inspect_analysis_view",
        {
            "source": {"kind": "retained-evidence", "evidence_id": complete.evidence_id},
            "view": {"kind": "native", "facet": "assembly", "offset": 5, "limit": 5},
        },
    )
    assert view["items"] == nxt["assembly"]["instructions"]
    same = result_of(
        native,
        "compare_functions",
        {"left": ev_mod.to_builtins(page), "right": {"kind": "retained-evidence", "evidence_id": complete.evidence_id}},
    )
    facets = {f["facet"]: f for f in same["facets"]}
    assert "changed" not in {f["status"] for f in facets.values()}
    # Compared from the complete dossier, not from the page's two blocks.
    assert facets["basic_block_count"]["left"] == len(whole["basic_blocks"]) > 2


def test_an_offset_past_the_end_is_out_of_range(native: Session) -> None:
    with pytest.raises(ReaError) as info:
        call_tool(native, "analyze_function", {"procedure": "dispatch", "collection_offset": {"references": 10**6}})
    assert info.value.code == "invalid_request"
    assert info.value.details["issues"][0]["path"] == "collection_offset/references"
