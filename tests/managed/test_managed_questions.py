"""Issue 47 (.NET): questions answered by searching, not listing, each right and in a few KB.

Over the MCP SDK client: every question of managedquestions.py answered right by the tool it names, within 64 KB.
In a session: what each of the new answers says besides (paging with totals, the namespace and kind filters, the
errors that name what to do), the version diff from files and from records, the IL view, and what the native
provider says of an IL-only assembly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from managedquestions import BUDGET
from managedquestions import QUESTIONS
from managedquestions import ask
from managedsupport import fails
from managedsupport import run

from rea.errors import ReaError
from rea.evidence import retained_reference
from rea.evidence import to_builtins
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea_plugins.managed.tools import TOOLS
from tests.mcp.harness import connect
from tests.robustness.test_managed_hostile import CASES
from tests.robustness.test_managed_hostile import PARSER_WORDS


def test_each_question_is_answered_right_within_64_kb(managed_build: dict[str, Path]) -> None:
    async def main() -> list[tuple[dict[str, Any], int]]:
        out = []
        async with connect() as client:
            # A direct call of an on-demand tool enables its toolset: no enable_toolsets first.
            for q in QUESTIONS:
                out.append(await ask(client, q, managed_build))
        return out

    answers = anyio.run(main)
    for (result, size), q in zip(answers, QUESTIONS, strict=True):
        assert q.right(result), f"{q.tool} answered {q.question!r} wrongly: {result}"
        assert size <= BUDGET, f"{q.tool} used {size} bytes for {q.question!r}"
    # Searches answer in a few KB; the median answer is within the 4 KB goal.
    sizes = sorted(size for _, size in answers)
    assert sizes[len(sizes) // 2] <= 4 * 1024, sizes


def test_no_managed_argument_is_advertised_as_a_bare_object() -> None:
    """Issue 47 item 12: every argument states its type; an object argument its properties (an Evidence input,
    whose advertised form is the kernel's, is a union of references and records, each branch described)."""

    async def main() -> list[Any]:
        async with connect() as client:
            await client.call_tool("enable_toolsets", {"toolsets": ["managed"]})
            return [t for t in (await client.list_tools()).tools if t.name in {d.name for d in TOOLS}]

    listed = anyio.run(main)
    assert len(listed) == len(TOOLS)
    for tool in listed:
        for name, prop in tool.input_schema["properties"].items():
            where = f"{tool.name}.{name}"
            assert prop.get("description"), f"{where} says nothing of what it takes"
            if "anyOf" in prop:
                assert all(b.get("description") for b in prop["anyOf"]), where
                continue
            assert "type" in prop, f"{where} has no type"
            if prop["type"] == "object":
                assert prop.get("properties"), f"{where} is a bare object"
            if prop["type"] == "array":
                items = prop["items"]
                if "anyOf" in items:
                    assert all(b.get("description") for b in items["anyOf"]), where
                    continue
                assert "type" in items and (items["type"] != "object" or items.get("properties")), where


def test_strings_page_with_totals_and_narrow_by_namespace(
    managed_session: Session, managed_build: dict[str, Path]
) -> None:
    lib = str(managed_build["lib_v1"])
    everything = run(managed_session, "search_managed_strings", {"path": lib}).normalized_result
    assert everything["heap_strings"] == everything["strings"]["total"] == 5
    assert "selection" not in everything
    by_value = {s["value"]: s for s in everything["strings"]["items"]}
    assert by_value["hi "]["sites"] == [{"method": "Demo.Lib.Calculator::Greet(string)", "offset": 0}]
    assert by_value["hi "]["token"].startswith("0x70") and by_value["hi "]["loads"] == 1
    page = run(managed_session, "search_managed_strings", {"path": lib, "offset": 1, "limit": 2}).normalized_result
    assert page["strings"]["total"] == 5 and page["strings"]["offset"] == 1 and len(page["strings"]["items"]) == 2
    # Case-insensitive by default; case_sensitive narrows; a namespace keeps the strings its methods load.
    assert (
        run(managed_session, "search_managed_strings", {"path": lib, "pattern": "TOTAL"}).normalized_result["strings"][
            "total"
        ]
        == 1
    )
    exact = {"path": lib, "pattern": "TOTAL", "case_sensitive": True}
    assert run(managed_session, "search_managed_strings", exact).normalized_result["strings"]["total"] == 0
    scoped = run(managed_session, "search_managed_strings", {"path": lib, "namespace": "Demo.Lib"}).normalized_result
    assert scoped["strings"]["total"] == 5 and scoped["selection"] == {"namespace": "Demo.Lib"}
    other = run(managed_session, "search_managed_strings", {"path": lib, "namespace": "Demo.App"}).normalized_result
    assert other["strings"]["total"] == 0
    short = run(
        managed_session, "search_managed_strings", {"path": lib, "pattern": "total", "max_value_chars": 5}
    ).normalized_result["strings"]["items"][0]
    assert short["value"] == "total" and short["truncated"] is True and short["length"] == len("total over the limit")
    err = fails(managed_session, "search_managed_strings", {"path": lib, "pattern": "(a)\\1", "mode": "regex"})
    assert err.code == "invalid_request" and "backreference" in err.message


def test_references_by_kind_namespace_and_pattern(managed_session: Session, managed_build: dict[str, Path]) -> None:
    lib = str(managed_build["lib_v1"])
    total = run(managed_session, "managed_references_to", {"path": lib, "name": "Demo.Lib.Calculator::Total"})
    doc = total.normalized_result
    assert doc["counts"] == {"read": 2, "write": 2} and doc["methods"] == 2
    assert doc["matched"]["items"] == ["Demo.Lib.Calculator::Total"]
    reads = run(
        managed_session, "managed_references_to", {"path": lib, "name": "Calculator::Total", "kinds": ["read"]}
    ).normalized_result
    assert {(r["method"], r["opcode"]) for r in reads["references"]["items"]} == {
        ("Demo.Lib.Calculator::Add(int, int)", "ldfld"),
        ("Demo.Lib.Calculator::Reset()", "ldfld"),
    }
    # A method by name alone (every overload), a type (every member and the type itself), an external member.
    api = run(managed_session, "managed_references_to", {"path": lib, "name": "Endpoints::Api"}).normalized_result
    assert {r["method"] for r in api["references"]["items"]} == {
        "Demo.Lib.Endpoints::Status()",
        "Demo.Lib.Endpoints::Login()",
    }
    concat = run(
        managed_session, "managed_references_to", {"path": lib, "name": "System.String::Concat(string, string)"}
    ).normalized_result
    assert {r["method"] for r in concat["references"]["items"]} == {
        "Demo.Lib.Calculator::Greet(string)",
        "Demo.Lib.Endpoints::Api(string)",
    }
    paged = run(
        managed_session, "managed_references_to", {"path": lib, "name": "Demo.Lib.Calculator", "limit": 1}
    ).normalized_result
    assert paged["references"]["total"] > 1 and len(paged["references"]["items"]) == 1
    regex = run(
        managed_session,
        "managed_references_to",
        {"path": lib, "name": "^System\\.Runtime\\.InteropServices\\.Marshal::", "mode": "regex"},
    ).normalized_result
    (site,) = regex["references"]["items"]
    assert site["method"] == "Demo.Lib.Native::ViaPointer(nint)" and site["kind"] == "call"
    assert regex["counts"] == {"call": 1}
    none = run(managed_session, "managed_references_to", {"path": lib, "name": "Demo.Lib.Missing::Nothing"})
    assert none.normalized_result["references"]["total"] == 0
    assert any("inspect_managed_members" in lim for lim in none.limitations)
    app = str(managed_build["app_exe"])
    native = run(
        managed_session, "managed_references_to", {"path": app, "name": "Demo.Lib.Native", "namespace": "Demo.App"}
    ).normalized_result
    assert [r["target"] for r in native["references"]["items"]] == ["Demo.Lib.Native::NativeAdd(int, int)"]
    elsewhere = {"path": app, "name": "Demo.Lib.Native", "namespace": "Other"}
    assert run(managed_session, "managed_references_to", elsewhere).normalized_result["references"]["total"] == 0


def test_member_listings_narrow_by_name_and_namespace(managed_session: Session, managed_build: dict[str, Path]) -> None:
    lib = str(managed_build["lib_v1"])
    doc = run(managed_session, "inspect_managed_members", {"path": lib, "namespace": "Demo"}).normalized_result
    whole = run(managed_session, "inspect_managed_members", {"path": lib}).normalized_result
    # Demo takes Demo.Lib; the TagAttribute's namespace (System.Runtime.InteropServices) is not Demo's.
    assert doc["types"]["total"] == whole["types"]["total"] - 2  # <Module> and LibraryImportAttribute
    assert doc["selection"] == {"namespace": "Demo"}
    assert all(m["key"].startswith("Demo.") for m in doc["methods"]["items"])
    assert all(r["key"].startswith("Demo.") for r in doc["member_refs"]["items"])
    box = run(managed_session, "inspect_managed_members", {"path": lib, "pattern": "box"}).normalized_result
    assert [t["name"] for t in box["types"]["items"]] == ["Demo.Lib.Box`1"]
    assert {m["key"] for m in box["methods"]["items"]} == {
        "Demo.Lib.Box`1::.ctor()",
        "Demo.Lib.Box`1::Get()",
        "Demo.Lib.Box`1::With(T)",
        "Demo.Lib.Box`1::Map<U>(System.Func<T, U>, T)",
    }
    assert box["fields"]["items"][0]["key"] == "Demo.Lib.Box`1::Value" and box["fields"]["total"] == 1
    second = run(
        managed_session,
        "inspect_managed_members",
        {"path": lib, "pattern": "box", "method_offset": 1, "method_limit": 1},
    ).normalized_result
    assert second["methods"]["total"] == 4 and [m["key"] for m in second["methods"]["items"]] == [
        [m["key"] for m in box["methods"]["items"]][1]
    ]
    err = fails(managed_session, "inspect_managed_members", {"path": lib, "pattern": "(?=x)", "mode": "regex"})
    assert err.code == "invalid_request" and "lookahead" in err.message


def test_compare_two_paths_says_what_changed(managed_session: Session, managed_build: dict[str, Path]) -> None:
    v1, v2 = str(managed_build["lib_v1"]), str(managed_build["lib_v2"])
    ev = run(managed_session, "compare_managed_members", {"left_path": v1, "right_path": v2})
    doc = ev.normalized_result
    assert doc["complete"] is True and doc["counts"]["added"] == 1 and doc["counts"]["changed"] == 4
    changed = {c["member"]: c for c in doc["changed"]["items"]}
    assert changed["method Demo.Lib.Calculator::Clamp(int)"]["detail"] == [
        "-IL_0001: ldc.i4.s 10",
        "+IL_0001: ldc.i4.s 20",
        "-IL_0008: ldc.i4.s 10",
        "+IL_0008: ldc.i4.s 20",
    ]
    assert changed["method Demo.Lib.Calculator::Twice(int)"]["detail"] == [
        "-IL_0001: ldc.i4.2",
        "-IL_0002: mul",
        "+IL_0001: ldarg.0",
        "+IL_0002: add",
    ]
    assert doc["left"]["sha256"] != doc["right"]["sha256"] and doc["right"]["version"] == "1.2.3.4"
    assert ev.subject is not None and ev.subject.name == "Lib.dll" and ev.evidence_links == []
    assert ev.parameters["left_sha256"] == doc["left"]["sha256"]
    # Diff lines are bounded per method, and the rest counted.
    cut = run(managed_session, "compare_managed_members", {"left_path": v1, "right_path": v2, "max_diff_lines": 1})
    clamp = next(c for c in cut.normalized_result["changed"]["items"] if c["member"].endswith("Clamp(int)"))
    assert clamp["detail"][0] == "-IL_0001: ldc.i4.s 10" and clamp["detail"][1].startswith("… 3 more lines")
    # The same file on both sides: nothing changed, nothing renumbered.
    same = run(managed_session, "compare_managed_members", {"left_path": v1, "right_path": v1}).normalized_result
    assert same["counts"]["changed"] == same["counts"]["tokens_only"] == same["counts"]["added"] == 0
    # A file on one side, a members record on the other: the record's instructions are not listed, so a changed body
    # is named without its lines.
    left = run(managed_session, "inspect_managed_members", {"path": v1})
    mixed = run(
        managed_session,
        "compare_managed_members",
        {"left_evidence_id": retained_reference(left.evidence_id), "right_path": v2},
    )
    assert mixed.evidence_links == [left.evidence_id]
    assert mixed.normalized_result["counts"] == doc["counts"]
    err = fails(managed_session, "compare_managed_members", {"left_path": v1})
    assert err.code == "invalid_request" and "right_path" in err.message
    err = fails(
        managed_session,
        "compare_managed_members",
        {"left_path": v1, "left_evidence_id": to_builtins(left), "right_path": v2},
    )
    assert err.code == "invalid_request"


def test_compare_records_that_list_every_instruction_shows_the_lines(
    managed_session: Session, managed_build: dict[str, Path]
) -> None:
    records = [
        run(
            managed_session,
            "inspect_managed_members",
            {"path": str(managed_build[v]), "instruction_anchor_limit": 1000},
        )
        for v in ("lib_v1", "lib_v2")
    ]
    doc = run(
        managed_session,
        "compare_managed_members",
        {"left_evidence_id": retained_reference(records[0].evidence_id), "right_evidence_id": to_builtins(records[1])},
    ).normalized_result
    twice = next(c for c in doc["changed"]["items"] if c["member"] == "method Demo.Lib.Calculator::Twice(int)")
    assert "+IL_0002: add" in twice["detail"]


def test_method_view_is_il_with_names_and_says_so(managed_session: Session, managed_build: dict[str, Path]) -> None:
    lib = str(managed_build["lib_v1"])
    ev = run(managed_session, "inspect_managed_method", {"path": lib, "method": "Demo.Lib.Calculator::Combined(int)"})
    doc = ev.normalized_result
    assert doc["language"] == "il" and any("no maintained C# decompiler" in lim for lim in ev.limitations)
    assert doc["signature"] == "int Combined(int a)" and doc["instructions"] == 8
    assert doc["text"].splitlines()[2:] == [
        "IL_0000: ldarg.0 // this",
        "IL_0001: ldarg.1 // a",
        "IL_0002: ldarg.1 // a",
        "IL_0003: call int Demo.Lib.Calculator::Add(int, int)",
        "IL_0008: ldarg.1 // a",
        "IL_0009: call int Demo.Lib.Calculator::Twice(int)",
        "IL_000e: add",
        "IL_000f: ret",
    ]
    # By token, a page of instructions; a body-less method; a name with overloads; an unknown name.
    token = doc["token"]
    page = run(managed_session, "inspect_managed_method", {"path": lib, "method": token, "offset": 6, "limit": 1})
    assert page.normalized_result["text"].splitlines()[-1] == "IL_000e: add"
    assert page.normalized_result["next_offset"] == 7
    native = run(managed_session, "inspect_managed_method", {"path": lib, "method": "NativeAdd"}).normalized_result
    assert native["body_status"] == "none" and "pinvoke" in native["text"]
    ctor = run(managed_session, "inspect_managed_method", {"path": lib, "method": ".ctor"}).normalized_result
    assert len(ctor["overloads"]) >= 5 and "::.ctor(" in ctor["method"]
    assert any(
        "overloads lists the rest" in lim
        for lim in run(managed_session, "inspect_managed_method", {"path": lib, "method": ".ctor"}).limitations
    )
    err = fails(managed_session, "inspect_managed_method", {"path": lib, "method": "Calculator::add"})
    assert err.code == "invalid_request" and "Demo.Lib.Calculator::Add(int, int)" in err.message
    app = run(managed_session, "inspect_managed_method", {"path": str(managed_build["app_exe"]), "method": "Main"})
    text = app.normalized_result["text"]
    assert ".locals (" in text and "Demo.Lib.Calculator" in text and 'ldstr "result {0}"' in text


@pytest.mark.parametrize("fixture", ["lib_v1", "app_exe"])
def test_an_il_only_assembly_opened_natively_lists_no_invented_procedures(
    rea_registry: Registry, managed_build: dict[str, Path], fixture: str
) -> None:
    session = Session(rea_registry)
    try:
        call_tool(session, "open_binary", {"path": str(managed_build[fixture]), "provider_id": "native"})
        out = call_tool(session, "list_procedures", {"limit": 100})
        assert out.evidence is not None
        procs = out.evidence.normalized_result["procedures"]
        # The loader stub (jmp [_CorExeMain] or [_CorDllMain]) and its import slot, nothing decoded from IL.
        assert {p["name"] for p in procs} <= {"_CorExeMain", "_CorDllMain"} and len(procs) == 2
        note = " ".join(out.evidence.limitations)
        assert ".NET assembly with IL only" in note and "inspect_managed_members" in note
        assert "managed_references_to" in note
    finally:
        session.close()


@pytest.mark.parametrize("case", CASES, ids=[c[0].__name__ for c in CASES])
def test_the_new_tools_answer_damage_with_a_typed_error(
    managed_session: Session, managed_build: dict[str, Path], tmp_path: Path, case: Any
) -> None:
    """The damaged assemblies of tests/robustness: a typed error naming the structure, or an answer."""
    mutate, _, _ = case
    path = tmp_path / "Lib.dll"
    path.write_bytes(mutate(managed_build["lib_v1"].read_bytes()))
    for tool, args in (
        ("search_managed_strings", {"path": str(path)}),
        ("managed_references_to", {"path": str(path), "name": "Demo.Lib.Calculator"}),
        ("inspect_managed_method", {"path": str(path), "method": "Demo.Lib.Calculator::Add(int, int)"}),
        ("compare_managed_members", {"left_path": str(managed_build["lib_v1"]), "right_path": str(path)}),
    ):
        try:
            call_tool(managed_session, tool, args)
        except ReaError as err:
            assert err.code in ("unsupported_target", "resource_constraint"), (tool, err.projection_dict())
            assert err.details.get("structure") and err.remediation, (tool, err.projection_dict())
            assert not any(word in err.message for word in PARSER_WORDS), err.message
