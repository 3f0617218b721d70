"""Session-contract regressions found by an audit, each checked through the SDK client over stdio."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from tests.mcp.harness import connect

CLOSE_PROBE = {"REA_PLUGIN_MODULES": "tests.cli.close_probe"}


def structured(result: Any) -> dict[str, Any]:
    assert result.is_error is False, result.content
    doc: dict[str, Any] = result.structured_content
    return doc


def test_switching_targets_reports_what_closing_the_previous_one_left(hello_elf: Path, tmp_path: Path) -> None:
    second = tmp_path / "second"
    shutil.copyfile(hello_elf, second)

    async def main() -> None:
        async with connect(**CLOSE_PROBE, REA_TEST_CLOSE_LEAVES="probe-worker") as client:
            first = structured(
                await client.call_tool("open_binary", {"path": str(hello_elf), "provider_id": "close-probe"})
            )
            assert "previous_target_cleanup" not in first
            switched = structured(
                await client.call_tool("open_binary", {"path": str(second), "provider_id": "close-probe"})
            )
            assert switched["previous_target_cleanup"] == {"cleanup": "incomplete", "resources": ["probe-worker"]}

    anyio.run(main)


def test_analysis_run_ends_with_close_and_with_a_failed_open(hello_elf: Path, tmp_path: Path) -> None:
    async def main() -> None:
        async with connect(**CLOSE_PROBE) as client:
            opened = structured(await client.call_tool("open_binary", {"path": str(hello_elf)}))
            run_id = opened["analysis_run"]["run_id"]
            session = structured(await client.call_tool("binary_session", {}))
            assert session["analysis_run"]["run_id"] == run_id
            await client.call_tool("close_binary", {})
            after_close = structured(await client.call_tool("binary_session", {}))
            assert after_close["analysis_run"]["run_id"] is None and after_close["target"] is None
            await client.call_tool("open_binary", {"path": str(hello_elf)})
            # Selection passes, then the provider's open fails mid-transition.
            broken = tmp_path / "target.fail"
            shutil.copyfile(hello_elf, broken)
            failed = await client.call_tool("open_binary", {"path": str(broken), "provider_id": "close-probe"})
            assert failed.is_error
            after_failure = structured(await client.call_tool("binary_session", {}))
            assert after_failure["target"] is None and after_failure["analysis_run"]["run_id"] is None
            assert after_failure["analysis_provider_binding"] is None

    anyio.run(main)


@pytest.mark.parametrize("provider", ["native", "angr"])
def test_contract_facets_of_a_dossier_are_explicit_never_errors(provider: str, hello_elf: Path) -> None:
    if provider == "angr" and importlib.util.find_spec("angr") is None:
        pytest.skip("angr is not installed (pip install 'rea-reverse[angr]')")

    async def main() -> None:
        async with connect() as client:
            await client.call_tool("open_binary", {"path": str(hello_elf), "provider_id": provider})
            dossier = structured(await client.call_tool("analyze_function", {"procedure": "compute"}))
            ref = {"kind": "retained-evidence", "evidence_id": dossier["evidence_id"]}
            for facet in ("comments", "unresolved_calls", "api", "high_pcode", "pseudocode", "assembly"):
                view = await client.call_tool(
                    "inspect_analysis_view", {"source": ref, "view": {"kind": "native", "facet": facet}}
                )
                result = structured(view)["normalized_result"]
                assert result["status"] in ("available", "unavailable"), (facet, result)
                if result["status"] == "unavailable":
                    assert result["reason"]
            unknown = await client.call_tool(
                "inspect_analysis_view", {"source": ref, "view": {"kind": "native", "facet": "no_such_facet"}}
            )
            assert unknown.is_error and json.loads(unknown.content[0].text)["error"]["code"] == "invalid_request"

    anyio.run(main)


def test_summary_records_state_their_retention(hello_elf: Path) -> None:
    async def main() -> None:
        async with connect() as client:
            await client.call_tool("open_binary", {"path": str(hello_elf)})
            await client.call_tool("list_procedures", {"limit": 3})
            summary = structured(await client.call_tool("get_evidence_bundle", {"detail": "summary"}))
            records = summary["records"] if "records" in summary else summary["normalized_result"]["records"]
            assert records and all(r["retention"] == "complete-record" for r in records)

    anyio.run(main)


def test_root_unions_keep_group_dependencies_and_errors_name_the_groups() -> None:
    async def main() -> None:
        async with connect(REA_MCP_TOOLSETS="all") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            schema = tools["compare_source_to_bundle"].input_schema
            assert not {"anyOf", "oneOf", "allOf"} & set(schema)
            assert schema["dependentRequired"] == {"bundle": ["source"], "source": ["bundle"]}
            ref = {"kind": "retained-evidence", "evidence_id": "ev_" + "0" * 64}
            # The advertised schema now refuses {"source": ref} too; the server names both accepted groups.
            jsonschema.validate({"source": ref, "bundle": ref}, schema)
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate({"source": ref}, schema)
            res = await client.call_tool("compare_source_to_bundle", {"source": ref})
            err = json.loads(res.content[0].text)["error"]
            assert err["code"] == "invalid_request"
            assert "accepted input groups" in err["message"] and "source, bundle" in err["message"].replace(
                "bundle, source", "source, bundle"
            )
            assert [g["required"] for g in err["details"]["accepted_groups"]] == [["application"], ["bundle", "source"]]

    anyio.run(main)


PROBE = {"REA_PLUGIN_MODULES": "tests.mcp.probe_plugin"}


def test_availability_reports_modes_and_client_features(hello_elf: Path) -> None:
    async def sampler(*_args: Any) -> Any:
        raise AssertionError("never called")

    async def main(sampling: Any) -> dict[str, Any]:
        async with connect(sampling=sampling, **PROBE) as client:
            await client.call_tool("open_binary", {"path": str(hello_elf)})
            # Every page of the tool availability (100 tools a page).
            entries: dict[str, Any] = {}
            cursor: int | None = 0
            while cursor is not None:
                doc = structured(await client.call_tool("binary_session", {"detail": "tools", "offset": cursor}))
                entries.update((t["name"], t) for t in doc["tool_availability"])
                cursor = doc["tool_page"]["next_offset"]
            called = await client.call_tool("probe_sampling", {})
            assert called.is_error is (sampling is None)
            return entries

    without = anyio.run(main, None)
    probe = without["probe_sampling"]
    assert probe["available"] is False and probe["reason"] == "client_capability_missing"
    assert probe["client_requirements"] == {"required": ["sampling"], "optional": ["progress"], "missing": ["sampling"]}
    modes = {m["name"]: m for m in without["get_navigation_context"]["modes"]}
    assert set(modes) == {"current_selection", "explicit_document"}
    assert all(m["available"] for m in modes.values())
    assert modes["explicit_document"]["requires_arguments"] == ["document"]
    with_sampling = anyio.run(main, sampler)
    assert with_sampling["probe_sampling"]["available"] is True
    assert with_sampling["probe_sampling"]["client_requirements"]["missing"] == []


def test_evidence_inputs_advertise_the_reference_and_the_record(hello_elf: Path) -> None:
    async def main() -> None:
        async with connect(REA_MCP_TOOLSETS="all") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            await client.call_tool("open_binary", {"path": str(hello_elf)})
            dossier = structured(await client.call_tool("analyze_function", {"procedure": "compute"}))
            ref = {"kind": "retained-evidence", "evidence_id": dossier["evidence_id"]}
            seed = {"kind": "module", "value": "main.js", "match": "exact"}
            for name, field, other in (
                ("compare_functions", "left", {"right": ref}),
                ("trace_application_feature", "application", {"seed": seed}),
                ("compare_artifacts", "right", {"left": ref}),
            ):
                schema = tools[name].input_schema
                prop = schema["properties"][field]
                # Both forms are advertised (the record by its type: the server validates it whole).
                assert "anyOf" in prop and '\\"kind\\": \\"retained-evidence' in json.dumps(prop), name
                validator = jsonschema.Draft202012Validator(schema)
                assert not list(validator.iter_errors({**other, field: ref}))
                # The complete record returned by a tool is an accepted inline value.
                assert not list(validator.iter_errors({**other, field: dossier})), name
                refused = await client.call_tool(name, {**other, field: {"kind": "retained-evidence"}})
                assert refused.is_error and "invalid_request" in refused.content[0].text, name

    anyio.run(main)


PATH_TOOLS = {
    "open_binary": {"path": None},
    "inspect_artifact": {"path": None},
    "extract_artifact": {"path": None},
    "export_evidence_bundle": {"path": None},
    "import_evidence_bundle": {"path": None},
    "inspect_evidence_bundle": {"path": None},
    "analyze_javascript_application": {"input_path": None},
}


def test_one_path_rule_for_every_path_taking_tool(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()

    async def main() -> None:
        async with connect(HOME=str(home)) as client:
            for tool, template in PATH_TOOLS.items():
                field = next(iter(template))
                for bad, reason in (
                    ("/bin/ls\u0000.txt", "NUL"),
                    ("C:\\Windows\\x.exe", "Windows"),
                    ("\\\\server\\share\\x", "Windows"),
                ):
                    res = await client.call_tool(tool, {field: bad})
                    err = json.loads(res.content[0].text)["error"]
                    assert err["code"] == "invalid_request", (tool, bad, err)
                    assert err["details"]["issues"][0]["path"] == field and reason in err["message"], (tool, err)
                    assert "Error" not in err["message"]
            await client.call_tool("open_binary", {"path": "/bin/true"})
            exported = structured(await client.call_tool("export_evidence_bundle", {"path": "~/bundle.json"}))
            assert (home / "bundle.json").exists()
            assert str(home / "bundle.json") in json.dumps(exported)

    anyio.run(main)
    assert not (Path.cwd() / "~").exists()


def test_the_binding_says_which_candidates_were_usable_and_why_one_won(hello_elf: Path) -> None:
    async def main() -> None:
        async with connect() as client:
            opened = structured(await client.call_tool("open_binary", {"path": str(hello_elf)}))
            binding = opened["analysis_provider_binding"]
            assert binding["selection_source"] == "auto" and "native" in binding["usable_candidates"]
            # Why one won is binary_session's to say: open_binary leaves the sentence out under the lean default.
            session = structured(await client.call_tool("binary_session", {}))
            assert "highest auto_priority" in session["analysis_provider_binding"]["selection_reason"]
            assert session["analysis_provider_binding"]["provenance"] == binding["provenance"]
            explicit = structured(
                await client.call_tool("open_binary", {"path": str(hello_elf), "provider_id": "native"})
            )
            assert explicit["analysis_provider_binding"]["usable_candidates"] == ["native"]
            session = structured(await client.call_tool("binary_session", {}))
            assert "named by the request" in session["analysis_provider_binding"]["selection_reason"]
        async with connect(REA_RESULT_PRESENTATION="complete") as client:
            opened = structured(await client.call_tool("open_binary", {"path": str(hello_elf)}))
            assert "highest auto_priority" in opened["analysis_provider_binding"]["selection_reason"]

    anyio.run(main)
