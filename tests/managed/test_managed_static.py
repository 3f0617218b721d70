"""The managed tools on assemblies compiled from C# in this session, checked against the C# sources."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import csfixtures as csharp
from managedsupport import fails
from managedsupport import run

from rea.evidence import Evidence
from rea.evidence import retained_reference
from rea.evidence import to_builtins
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool


def _by(items: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    return {item[key]: item for item in items}


def test_artifact_identity_references_resources_and_attributes(
    managed_session: Session, managed_build: dict[str, Path]
) -> None:
    ev = run(managed_session, "inspect_managed_artifact", {"path": str(managed_build["lib_v1"])})
    doc = ev.normalized_result
    assert doc["identity"]["name"] == "Lib" and doc["identity"]["version"] == "1.2.3.4"
    assert doc["identity"]["culture"] == "neutral" and doc["module"] == "Lib.dll"
    assert doc["runtime"]["metadata_version"].startswith("v4.0")
    assert doc["cli_flags"]["il_only"] and not doc["cli_flags"]["strong_name_signed"]
    assert doc["entry_point"] is None
    assert doc["tables"]["TypeDef"] == 11 and doc["tables"]["ImplMap"] == 4
    refs = doc["references"]["items"]
    mscorlib = next(r for r in refs if r["name"] == "mscorlib")
    assert mscorlib["kind"] == "assembly" and mscorlib["public_key_token"] == "b77a5c561934e089"
    assert {r["name"] for r in refs if r["kind"] == "module"} == {"libnative.so", "native", "libmissing.so"}
    (resource,) = doc["resources"]["items"]
    assert resource == {
        "name": "Demo.data.txt",
        "visibility": "public",
        "location": "embedded",
        "size": len(csharp.RESOURCE),
        "sha256": hashlib.sha256(csharp.RESOURCE).hexdigest(),
    }
    title = next(a for a in doc["attributes"]["items"] if a["type"] == "System.Reflection.AssemblyTitleAttribute")
    assert title["parent"] == "assembly" and title["arguments"] == ["Demo Library"]
    # Enum arguments: one of an enum defined here (its member named), one of mscorlib's (its size found by the blob).
    tag = next(a for a in doc["attributes"]["items"] if a["type"] == "Demo.Lib.TagAttribute")
    assert tag["parent"] == "Demo.Lib.Calculator"
    assert tag["arguments"] == [{"enum": "Demo.Lib.Level", "value": 2, "name": "High"}]
    assert tag["named"] == {"Other": {"enum": "Demo.Lib.Level", "value": 1, "name": "Low"}}
    usage = next(
        a
        for a in doc["attributes"]["items"]
        if a["type"] == "System.AttributeUsageAttribute" and a["parent"] == "Demo.Lib.TagAttribute"
    )
    assert usage["arguments"] == [{"enum": "System.AttributeTargets", "value": 4 | 64}]  # Class | Method
    assert ev.subject is not None and ev.subject.name == "Lib.dll"


def test_artifact_entry_point_and_paging(managed_session: Session, managed_build: dict[str, Path]) -> None:
    doc = run(
        managed_session,
        "inspect_managed_artifact",
        {"path": str(managed_build["app_exe"]), "reference_limit": 1, "reference_offset": 1},
    ).normalized_result
    assert doc["entry_point"] == "Demo.App.Program::Main(string[])"
    assert doc["references"]["total"] == 2 and doc["references"]["offset"] == 1
    (second,) = doc["references"]["items"]
    first = run(
        managed_session, "inspect_managed_artifact", {"path": str(managed_build["app_exe"]), "reference_limit": 1}
    ).normalized_result["references"]["items"]
    assert {second["name"], first[0]["name"]} == {"Lib", "mscorlib"}


def test_members_types_signatures_and_generics(managed_session: Session, managed_build: dict[str, Path]) -> None:
    doc = run(managed_session, "inspect_managed_members", {"path": str(managed_build["lib_v1"])}).normalized_result
    types = _by(doc["types"]["items"], "name")
    assert types["Demo.Lib.Calculator"]["interfaces"] == ["Demo.Lib.IShape"]
    assert types["Demo.Lib.Calculator"]["base"] == "System.Object"
    assert types["Demo.Lib.Calculator/Inner"]["enclosing"] == "Demo.Lib.Calculator"
    assert "nested public" in types["Demo.Lib.Calculator/Inner"]["flags"]
    assert types["Demo.Lib.Box`1"]["generic_parameters"] == ["T"]
    assert "interface" in types["Demo.Lib.IShape"]["flags"] and "delegate" in types["Demo.Lib.BinOp"]["flags"]
    methods = _by(doc["methods"]["items"], "key")
    add = methods["Demo.Lib.Calculator::Add(int, int)"]
    assert add["signature"] == "int Add(int a, int b)" and "public" in add["flags"]
    assert add["body_status"] == "ok" and add["token"].startswith("0x06")
    assert methods["Demo.Lib.Calculator::Twice(int)"]["flags"] == ["public", "static"]
    assert methods["Demo.Lib.Box`1::With(T)"]["signature"] == "Demo.Lib.Box<T> With(T v)"
    mapped = methods["Demo.Lib.Box`1::Map<U>(System.Func<T, U>, T)"]
    assert mapped["signature"] == "U Map<U>(System.Func<T, U> f, T v)"
    assert methods["Demo.Lib.Native::NativeAdd(int, int)"]["body_status"] == "none"
    assert "pinvoke" in methods["Demo.Lib.Native::NativeAdd(int, int)"]["flags"]
    fields = _by(doc["fields"]["items"], "key")
    assert (
        fields["Demo.Lib.Calculator::Total"]["field_type"] == "int"
        and "constant" not in fields["Demo.Lib.Calculator::Total"]
    )
    assert (
        fields["Demo.Lib.Calculator::Limit"]["constant"] == 10
        and "const" in fields["Demo.Lib.Calculator::Limit"]["flags"]
    )
    assert fields["Demo.Lib.Box`1::Value"]["field_type"] == "T"


def test_members_il_listing_hashes_and_call_edges(managed_session: Session, managed_build: dict[str, Path]) -> None:
    doc = run(
        managed_session,
        "inspect_managed_members",
        {"path": str(managed_build["lib_v1"]), "instruction_anchor_limit": 100},
    ).normalized_result
    methods = _by(doc["methods"]["items"], "key")
    twice = methods["Demo.Lib.Calculator::Twice(int)"]
    assert [i["opcode"] for i in twice["instructions"]] == ["ldarg.0", "ldc.i4.2", "mul", "ret"]
    assert twice["body_size"] == 4 and twice["instruction_count"] == 4
    assert len(twice["il_sha256"]) == 64 and len(twice["instructions_sha256"]) == 64
    greet = methods["Demo.Lib.Calculator::Greet(string)"]["instructions"]
    assert greet[0] == {"offset": 0, "opcode": "ldstr", "operand": '"hi "'}
    assert greet[2]["operand"] == "System.String::Concat(string, string)"
    add = methods["Demo.Lib.Calculator::Add(int, int)"]["instructions"]
    assert {"offset": 4, "opcode": "stfld", "operand": "Demo.Lib.Calculator::Total"} in add
    edges = {(e["caller"], e["callee"], e["opcode"]) for e in doc["edges"]["items"]}
    assert ("Demo.Lib.Calculator::Combined(int)", "Demo.Lib.Calculator::Add(int, int)", "call") in edges
    assert ("Demo.Lib.Calculator::Combined(int)", "Demo.Lib.Calculator::Twice(int)", "call") in edges
    app = run(
        managed_session,
        "inspect_managed_members",
        {"path": str(managed_build["app_exe"]), "instruction_anchor_limit": 0},
    ).normalized_result
    (main,) = app["methods"]["items"]
    assert "instructions" not in main and main["instruction_count"] > 10  # none listed: left out
    callees = [e["callee"] for e in app["edges"]["items"]]
    assert callees[:3] == [
        "Demo.Lib.Calculator::.ctor()",
        "Demo.Lib.Calculator::Add(int, int)",
        "Demo.Lib.Calculator::Twice(int)",
    ]
    assert "Demo.Lib.Box<int>::With(!0)" in callees and "Demo.Lib.Native::NativeAdd(int, int)" in callees
    refs = _by(app["member_refs"]["items"], "key")
    assert refs["System.Console::WriteLine(string, object)"]["signature"] == "void WriteLine(string, object)"


def test_members_pages_each_collection(managed_session: Session, managed_build: dict[str, Path]) -> None:
    doc = run(
        managed_session,
        "inspect_managed_members",
        {
            "path": str(managed_build["lib_v1"]),
            "method_offset": 2,
            "method_limit": 3,
            "type_limit": 1,
            "edge_limit": 0,
            "field_limit": 0,
            "member_ref_offset": 100,
        },
    ).normalized_result
    assert doc["methods"]["offset"] == 2 and len(doc["methods"]["items"]) == 3 and doc["methods"]["total"] > 20
    assert len(doc["types"]["items"]) == 1 and doc["types"]["total"] == 11
    assert doc["edges"]["items"] == [] and doc["fields"]["items"] == [] and doc["member_refs"]["items"] == []


def test_native_boundaries(managed_session: Session, managed_build: dict[str, Path]) -> None:
    doc = run(
        managed_session, "inspect_managed_native_boundaries", {"path": str(managed_build["lib_v1"])}
    ).normalized_result
    imports = _by(doc["imports"]["items"], "method")
    add = imports["Demo.Lib.Native::NativeAdd(int, int)"]
    assert add == {
        "method": "Demo.Lib.Native::NativeAdd(int, int)",
        "token": add["token"],
        "declared_by": "DllImport",
        "module": "libnative.so",
        "entry_point": "native_add",
        "calling_convention": "winapi",
        "charset": "ansi",
        "set_last_error": True,
    }
    mul = imports["Demo.Lib.Native::native_mul(int, int)"]
    assert mul["module"] == "native" and mul["calling_convention"] == "cdecl" and not mul["set_last_error"]
    assert imports["Demo.Lib.Native::Missing()"]["module"] == "libmissing.so"
    generated = imports["Demo.Lib.Native::Multiply(int, int)"]
    assert generated["declared_by"] == "LibraryImport" and generated["module"] == "libnative.so"
    assert generated["entry_point"] == "native_mul" and generated["set_last_error"] is True
    assert {m["name"]: m["imports"] for m in doc["module_refs"]["items"]} == {
        "libnative.so": 2,
        "native": 1,
        "libmissing.so": 1,
    }
    (site,) = doc["implementations"]["items"]
    assert site["kind"] == "delegate-for-function-pointer" and site["method"] == "Demo.Lib.Native::ViaPointer(nint)"
    assert doc["mixed_mode"] == {"native_code": False, "vtable_fixups": False, "pe_imports": []}


def test_compare_versions_by_il_and_decoded_hashes(managed_session: Session, managed_build: dict[str, Path]) -> None:
    left = run(managed_session, "inspect_managed_members", {"path": str(managed_build["lib_v1"])})
    right = run(managed_session, "inspect_managed_members", {"path": str(managed_build["lib_v2"])})
    ev = run(
        managed_session,
        "compare_managed_members",
        {"left_evidence_id": ref(left), "right_evidence_id": ref(right)},
    )
    doc = ev.normalized_result
    assert doc["complete"] is True
    assert doc["added"]["items"] == ["method Demo.Lib.Calculator::Sub(int, int)"] and doc["removed"]["items"] == []
    changed = _by(doc["changed"]["items"], "member")
    # Real changes only: Twice's body, and the constant Limit the compiler copied into Clamp and Reset.
    assert set(changed) == {
        "field Demo.Lib.Calculator::Limit",
        "method Demo.Lib.Calculator::Twice(int)",
        "method Demo.Lib.Calculator::Clamp(int)",
        "method Demo.Lib.Calculator::Reset()",
    }
    assert changed["field Demo.Lib.Calculator::Limit"]["detail"] == ["constant: 10 -> 20"]
    # A record lists no instructions by default: the change is named, its lines are not.
    assert changed["method Demo.Lib.Calculator::Twice(int)"] == {
        "member": "method Demo.Lib.Calculator::Twice(int)",
        "changes": ["body"],
        "left_token": "0x06000007",
        "right_token": "0x06000008",
    }
    # Combined's IL names Add and Twice by tokens that moved (so do the callers of Api, and ViaPointer's of
    # BinOp::Invoke): renumbered, not changed.
    assert doc["tokens_only"]["items"] == [
        "Demo.Lib.Calculator::Combined(int)",
        "Demo.Lib.Endpoints::Login()",
        "Demo.Lib.Endpoints::Status()",
        "Demo.Lib.Native::ViaPointer(nint)",
    ]
    assert (
        doc["counts"]["tokens_only"] == 4 and doc["counts"]["changed"] == 4 and doc["counts"]["unchanged_methods"] > 10
    )
    assert set(ev.evidence_links) == {left.evidence_id, right.evidence_id} and ev.confidence == "derived"
    paged = run(
        managed_session,
        "compare_managed_members",
        {
            "left_evidence_id": ref(left),
            "right_evidence_id": ref(right),
            "limits": {"offset": 1, "limit": 1},
        },
    ).normalized_result
    assert paged["changed"]["total"] == 4 and len(paged["changed"]["items"]) == 1


def test_evidence_inputs_inline_retained_or_by_id(managed_session: Session, managed_build: dict[str, Path]) -> None:
    left = run(managed_session, "inspect_managed_members", {"path": str(managed_build["lib_v1"])})
    right = run(managed_session, "inspect_managed_members", {"path": str(managed_build["lib_v2"])})
    retained = {"left_evidence_id": ref(left), "right_evidence_id": ref(right)}
    inline = {"left_evidence_id": to_builtins(left), "right_evidence_id": to_builtins(right)}
    # A record is its content: inline (in a session that never retained it) or retained, the same inputs make the
    # same Evidence.
    fresh = Session(managed_session.registry)
    try:
        by_reference = run(managed_session, "compare_managed_members", retained)
        assert run(fresh, "compare_managed_members", inline).evidence_id == by_reference.evidence_id
        boundaries = run(managed_session, "inspect_managed_native_boundaries", {"path": str(managed_build["lib_v1"])})
        names = managed_session.ledger.get(native_names(managed_session, managed_build["native"])["evidence_id"])
        assert names is not None
        doc = run(
            fresh,
            "verify_managed_native_boundaries",
            {
                "managed_boundaries_evidence_id": to_builtins(boundaries),
                "native_observation_evidence_ids": [to_builtins(names)],
            },
        ).normalized_result
        assert doc["counts"] == {"resolved": 3, "missing": 1, "unknown": 1}
        token = left.normalized_result["methods"]["items"][0]["token"]
        recon = run(
            fresh,
            "import_managed_reconstruction",
            {
                "static_members_evidence_id": to_builtins(left),
                "decompiler": {"name": "ILSpy", "version": "9.0"},
                "methods": [{"method_token": token, "csharp": "{ }"}],
            },
        )
    finally:
        fresh.close()
    assert recon.evidence_links == [left.evidence_id] and recon.normalized_result["methods"][0]["link"] == "matched"
    edited = to_builtins(left)
    edited["normalized_result"]["assembly"] = "Other"
    err = fails(
        managed_session, "compare_managed_members", {"left_evidence_id": edited, "right_evidence_id": ref(right)}
    )
    assert err.code == "evidence_integrity_mismatch", err.message
    # A bare id is the CLI's shorthand, not an argument: the schema asks for a reference or a record.
    err = fails(
        managed_session,
        "compare_managed_members",
        {"left_evidence_id": left.evidence_id, "right_evidence_id": right.evidence_id},
    )
    assert err.code == "invalid_request"


def test_compare_refuses_other_evidence(managed_session: Session, managed_build: dict[str, Path]) -> None:
    art = run(managed_session, "inspect_managed_artifact", {"path": str(managed_build["lib_v1"])})
    err = fails(
        managed_session,
        "compare_managed_members",
        {"left_evidence_id": ref(art), "right_evidence_id": ref(art)},
    )
    assert err.code == "invalid_request" and "inspect_managed_members" in err.message


def test_verify_against_native_exports(managed_session: Session, managed_build: dict[str, Path]) -> None:
    boundaries = run(managed_session, "inspect_managed_native_boundaries", {"path": str(managed_build["lib_v1"])})
    names = native_names(managed_session, managed_build["native"])
    doc = run(
        managed_session,
        "verify_managed_native_boundaries",
        {"managed_boundaries_evidence_id": ref(boundaries), "native_observation_evidence_ids": [names]},
    ).normalized_result
    verdicts = _by(doc["imports"]["items"], "method")
    assert verdicts["Demo.Lib.Native::NativeAdd(int, int)"]["status"] == "resolved"
    assert verdicts["Demo.Lib.Native::native_mul(int, int)"]["status"] == "resolved"  # "native" probes libnative.so
    assert verdicts["Demo.Lib.Native::NativeSub(int, int)"]["status"] == "missing"
    missing_lib = verdicts["Demo.Lib.Native::Missing()"]
    assert missing_lib["status"] == "unknown" and "libmissing.so" in missing_lib["reason"]
    assert verdicts["Demo.Lib.Native::Multiply(int, int)"]["status"] == "resolved"
    assert doc["counts"] == {"resolved": 3, "missing": 1, "unknown": 1}


def native_names(session: Session, library: Path) -> dict[str, str]:
    """list_names Evidence of a native library, through the native provider, by retained reference."""
    call_tool(session, "open_binary", {"path": str(library)})
    out = call_tool(session, "list_names", {"limit": 1000})
    assert out.evidence is not None
    session.ledger.record(out.evidence)
    return ref(out.evidence)


def ref(ev: Evidence) -> dict[str, str]:
    return retained_reference(ev.evidence_id)


def test_reconstruction_links_by_token_and_il_hash(managed_session: Session, managed_build: dict[str, Path]) -> None:
    members = run(managed_session, "inspect_managed_members", {"path": str(managed_build["lib_v1"])})
    twice = next(m for m in members.normalized_result["methods"]["items"] if m["key"].endswith("::Twice(int)"))
    ev = run(
        managed_session,
        "import_managed_reconstruction",
        {
            "static_members_evidence_id": ref(members),
            "decompiler": {"name": "ILSpy", "version": "9.0"},
            "methods": [
                {
                    "method_token": twice["token"],
                    "il_sha256": twice["il_sha256"],
                    "csharp": "public static int Twice(int x) { return x * 2; }",
                },
                {"method_token": twice["token"], "il_sha256": "0" * 64, "csharp": "stale"},
                {"method_token": "0x06ffffff", "csharp": "?"},
            ],
            "notes": ["decompiled by hand"],
        },
    )
    assert ev.authority == "historical-reference" and ev.evidence_links == [members.evidence_id]
    links = [m["link"] for m in ev.normalized_result["methods"]]
    assert links == ["matched", "il-mismatch", "unknown-method"]
    assert ev.normalized_result["methods"][0]["key"] == "Demo.Lib.Calculator::Twice(int)"


def test_application_graph(managed_session: Session, managed_build: dict[str, Path]) -> None:
    ev = run(managed_session, "project_managed_application_graph", {"application_path": str(managed_build["app"])})
    doc = ev.normalized_result
    nodes = _by(doc["nodes"], "node_id")
    assert doc["main"] == "asm:App.exe" and nodes["asm:App.exe"]["main"] is True
    assert nodes["asm:Lib.dll"]["sha256"] == hashlib.sha256(managed_build["lib_v1"].read_bytes()).hexdigest()
    assert nodes["native:libnative.so"]["kind"] == "native-library"
    assert nodes["res:Lib.dll!Demo.data.txt"]["sha256"] == hashlib.sha256(csharp.RESOURCE).hexdigest()
    edges = {(e["source"], e["target"], e["kind"]) for e in doc["edges"]}
    assert ("asm:App.exe", "asm:Lib.dll", "references") in edges
    assert ("asm:Lib.dll", "native:libnative.so", "p-invokes") in edges
    assert ("asm:Lib.dll", "unresolved-native:libmissing.so", "p-invokes") in edges
    assert ("asm:Lib.dll", "res:Lib.dll!Demo.data.txt", "embeds") in edges
    assert ("asm:App.exe", "unresolved:mscorlib", "references") in edges
    assert doc["coverage"] == "complete" and len(doc["graph_sha256"]) == 64
    again = run(managed_session, "project_managed_application_graph", {"application_path": str(managed_build["app"])})
    assert again.evidence_id == ev.evidence_id
    assert "picture" not in doc
    drawn = run(
        managed_session,
        "project_managed_application_graph",
        {"application_path": str(managed_build["app"]), "format": "mermaid"},
    ).normalized_result
    text = drawn["picture"]["text"]
    assert text.startswith('flowchart TB\n  n0(["App"])\n')  # the main assembly first, emphasised
    assert '-->|"p-invokes"|' in text and "libmissing.so (unresolved-native)" in text
    assert drawn["picture"]["nodes"] == len(doc["nodes"]) and drawn["picture"]["edges"] == len(doc["edges"])


def test_application_graph_sets_aside_a_damaged_assembly(
    managed_session: Session, managed_build: dict[str, Path], tmp_path: Path
) -> None:
    app = tmp_path / "app"
    shutil.copytree(managed_build["app"], app)
    lib = managed_build["lib_v2"].read_bytes()
    (app / "Broken.dll").write_bytes(lib[: len(lib) // 2])
    doc = run(
        managed_session, "project_managed_application_graph", {"application_path": str(app), "main_assembly": "App.exe"}
    ).normalized_result
    assert doc["coverage"] == "partial" and doc["unreadable"] == ["Broken.dll"]
    assert "asm:Lib.dll" in {n["node_id"] for n in doc["nodes"]}
    err = fails(
        managed_session,
        "project_managed_application_graph",
        {"application_path": str(app), "main_assembly": "Missing.exe"},
    )
    assert err.code == "invalid_request"


def test_inspect_tools_read_the_open_binary_without_path(
    rea_registry: Registry, managed_build: dict[str, Path]
) -> None:
    session = Session(rea_registry)
    try:
        call_tool(session, "open_binary", {"path": str(managed_build["app_exe"])})  # the native provider sees a PE
        doc = run(session, "inspect_managed_artifact", {}).normalized_result
        assert doc["entry_point"] == "Demo.App.Program::Main(string[])"
        # The overview says what else the PE is, and names the managed tools (rea_target_views).
        views = run(session, "binary_overview", {}).normalized_result["views"]
        assert [v["kind"] for v in views] == ["managed-assembly"]
        assert {"inspect_managed_artifact", "inspect_managed_members"} <= set(views[0]["tools"])
    finally:
        session.close()
    err = fails(Session(rea_registry), "inspect_managed_members", {})
    assert err.code == "target_unavailable"
