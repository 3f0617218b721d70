"""The terminal experience: one flag rule over every tool, text that hides nothing, Evidence across commands."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea.cache import AnalysisCache
from rea.cache import CacheKey
from rea.catalog.schemas import flatten_root_union
from rea.cli import tools as cli_tools
from rea.cli.output import render_text
from rea.registry import Registry
from rea.registry import default_registry
from rea.session import Session
from rea.testing import call_tool
from tests.mcp.harness import server_env


def rea(*args: str, cache: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rea", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=server_env(REA_CACHE_DIR=str(cache), COLUMNS="200"),
        timeout=300,
    )


@pytest.fixture(scope="module")
def registry() -> Registry:
    return default_registry()


# -- one flag rule, walked over every tool ----------------------------------------------------------------


def _json_valued(parser: Any) -> dict[str, Any]:
    """Flag -> action of every flag that takes JSON text."""
    return {
        a.option_strings[0]: a
        for a in parser._actions
        if a.option_strings
        and a.type is not None
        and isinstance(a.type, type)
        and issubclass(a.type, cli_tools._JsonValue)
    }


def test_every_flag_is_its_property_and_every_json_flag_takes_a_file(registry: Registry, tmp_path: Path) -> None:
    checked = 0
    for tool in sorted(registry.tools.values(), key=lambda t: t.name):
        parser = cli_tools.build_parser(tool, "rea")
        properties = flatten_root_union(tool.input_schema).get("properties", {})
        own = {"-h", "--provider", "--output-format", "--json"}
        own |= set() if "format" in properties else {"--format"}
        own |= {"--render"} if cli_tools.draws(tool) else set()  # a picture drawn through Graphviz
        # A boolean property is its flag and that flag's --no- form.
        flags = {s for a in parser._actions for s in a.option_strings[:1]} - own
        assert flags == {cli_tools.flag_name(p) for p in properties}, tool.name
        for flag, action in _json_valued(parser).items():
            name = action.dest.removeprefix("opt_")
            value = {"from_file": name, "nested": [1, {"two": None}]}
            path = tmp_path / f"{tool.name}.{name}.json"
            path.write_text(json.dumps(value))
            argv = (["/bin/true"] if tool.requires_target else []) + [flag, "@" + str(path)]
            args = cli_tools.collect_arguments(tool, parser.parse_args(argv))
            assert args[name] == value, f"{tool.name} {flag}"
            checked += 1
    assert checked >= 20  # the JSON-valued flags of the catalog (Evidence inputs, limits, seeds, ...)


def test_an_evidence_flag_takes_a_bare_evidence_id(registry: Registry) -> None:
    tool = registry.tools["trace_application_feature"]
    eid = "ev_" + "ab" * 32
    ns = cli_tools.build_parser(tool, "rea").parse_args(
        ["--application", eid, "--seed", '{"kind": "module", "value": "m"}']
    )
    assert cli_tools.collect_arguments(tool, ns)["application"] == {"kind": "retained-evidence", "evidence_id": eid}


def test_positionals_say_what_they_are(registry: Registry) -> None:
    for tool in registry.tools.values():
        parser = cli_tools.build_parser(tool, "rea")
        for action in parser._actions:
            if not action.option_strings:
                assert action.help and not re.search(r"\bthe \w+ argument\b", action.help), (tool.name, action.help)
                if action.dest == "subject":
                    assert action.help.startswith(tool.cli_subject + ": ") and len(action.help) > 40, tool.name


# -- vocabulary ---------------------------------------------------------------------------------------------

# Names REA's tools already use for an idea rea names otherwise elsewhere (kept so REA workflows carry over).
REA_NAMES = {
    ("get_call_graph", "depth"),
    ("capture_web_screenshot", "maximum_image_bytes"),
    ("compare_web_screenshots", "maximum_pixels"),
}


def test_one_name_per_idea(registry: Registry) -> None:
    """A bound is max_* (a depth max_depth), a page offset/limit: REA's own names are the only exceptions."""
    for tool in registry.tools.values():
        for name in flatten_root_union(tool.input_schema).get("properties", {}):
            if (tool.name, name) in REA_NAMES:
                continue
            assert not name.startswith("maximum_"), f"{tool.name}.{name}: max_ is the prefix"
            assert name.startswith("max_") or not name.endswith("depth"), f"{tool.name}.{name}: a depth bound is max_"
            assert name not in ("page_size", "count", "skip", "start_index"), f"{tool.name}.{name}: offset/limit"


# -- text output hides nothing -----------------------------------------------------------------------------


def _table_rows(text: str, key: str) -> int:
    """Data rows of the table printed under ``key: N items`` (a row may wrap onto more lines)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(rf"^\s*{re.escape(key)}: \d+ items?$", line))
    indent = len(lines[start]) - len(lines[start].lstrip()) + 2
    rows = 0
    for line in lines[start + 3 :]:  # heading, column names, rule
        if not line.strip() or len(line) - len(line.lstrip()) < indent:
            break
        rows += not line[indent].isspace()
    return rows


@pytest.mark.parametrize(
    ("tool", "args", "key"),
    [
        ("list_procedures", {"limit": 7}, "procedures"),
        ("list_strings", {"limit": 5}, "strings"),
        ("list_names", {"limit": 6}, "names"),
        ("search_procedures", {"pattern": "_", "limit": 4}, "procedures"),
        ("read_function_instructions", {"procedure": "main", "limit": 9}, "instructions"),
        ("binary_overview", {"limit": 3}, "procedures_sample"),
    ],
)
def test_text_prints_as_many_rows_as_the_result_holds(
    hello_elf: Path, tool: str, args: dict[str, Any], key: str
) -> None:
    session = Session(default_registry())
    try:
        call_tool(session, "open_binary", {"path": str(hello_elf)})
        ev = call_tool(session, tool, args).evidence
        assert ev is not None
        doc = msgspec.to_builtins(ev)
        rows = doc["normalized_result"][key]
        assert 0 < len(rows) <= args["limit"]
        for width in (60, 100, 400):
            text = render_text(doc, width=width)
            assert _table_rows(text, key) == len(rows), (width, text)
            assert "more (use" not in text and "..." not in text
    finally:
        session.close()


def test_text_shows_nested_rows_and_wraps_long_values_without_cutting() -> None:
    long_value = "call path " * 40
    doc = {
        "matches": [
            {
                "address": "0x1",
                "name": "getenv",
                "references": [{"from": hex(0x100 + i), "kind": "call"} for i in range(15)],
            }
        ],
        "note": long_value,
        "text": "line one\nline two",
        "empty": [],
        "none": None,
    }
    text = render_text(doc, width=60)
    assert len(re.findall(r"^\s+0x1[0-9a-f]{2}\s+call$", text, re.M)) == 15
    assert "".join(text.split()).count("".join(long_value.split())) == 1
    assert all(len(line) <= 60 for line in text.splitlines())
    assert "  line two" in text and "empty: (none)" in text and "none: null" in text


# -- Evidence across commands -----------------------------------------------------------------------------


def test_a_cli_evidence_id_is_used_by_a_later_command(hello_elf: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = rea("list-procedures", str(hello_elf), "--limit", "3", "--json", cache=cache)
    assert first.returncode == 0, first.stderr
    eid = json.loads(first.stdout)["evidence_id"]
    view = rea(
        "inspect-analysis-view",
        json.dumps(
            {
                "source": {"kind": "retained-evidence", "evidence_id": eid},
                "view": {"kind": "page", "section": "procedures"},
            }
        ),
        "--json",
        cache=cache,
    )
    assert view.returncode == 0, view.stderr
    body = json.loads(view.stdout)["normalized_result"]
    assert body["parent_evidence_id"] == eid and body["total"] == 3

    # A cached record that no longer matches its id is refused like an edited import, and removed.
    store = AnalysisCache(str(cache), 1 << 30)
    record = store.load_evidence(eid)
    assert record is not None
    store.store(CacheKey.for_evidence(eid), msgspec.structs.replace(record, parameters={"limit": 4}))
    tampered = rea(
        "inspect-analysis-view",
        json.dumps({"source": {"kind": "retained-evidence", "evidence_id": eid}}),
        "--json",
        cache=cache,
    )
    error = json.loads(tampered.stdout)["error"]
    assert tampered.returncode == 1 and error["code"] == "evidence_integrity_mismatch"
    assert not os.path.exists(store.path(CacheKey.for_evidence(eid)))

    missing = rea(
        "inspect-analysis-view",
        json.dumps({"source": {"kind": "retained-evidence", "evidence_id": eid}}),
        "--json",
        cache=cache,
    )
    error = json.loads(missing.stdout)["error"]
    assert error["code"] == "target_unavailable"
    assert error["details"]["evidence_id"] == eid and error["details"]["reason"] == "missing"

    info = rea("cache", "info", "--json", cache=cache)
    assert json.loads(info.stdout)["kinds"][0]["kind"] == "evidence/1"
    cleared = rea("cache", "clear", "--json", cache=cache)
    assert json.loads(cleared.stdout)["removed_entries"] >= 1
    assert json.loads(rea("cache", "info", "--json", cache=cache).stdout)["entries"] == 0


def test_application_follow_ups_name_the_retained_record_across_commands(tmp_path: Path) -> None:
    app = tmp_path / "app"
    (app / "src").mkdir(parents=True)
    (app / "package.json").write_text('{"name": "tiny", "version": "1.0.0", "main": "src/main.js"}')
    (app / "src" / "main.js").write_text('import { search } from "./search.js";\nconsole.log(search("q"));\n')
    (app / "src" / "search.js").write_text('export function search(q) { return "search:" + q; }\n')
    cache = tmp_path / "cache"
    summary = rea("analyze-javascript-application", str(app), "--detail", "summary", "--json", cache=cache)
    assert summary.returncode == 0, summary.stderr
    parent = json.loads(summary.stdout)["normalized_result"]["complete_evidence_id"]
    traced = rea(
        "trace-application-feature",
        "--application",
        parent,
        "--seed",
        '{"kind": "module", "value": "src/search.js", "match": "exact"}',
        "--json",
        cache=cache,
    )
    assert traced.returncode == 0, traced.stderr
    result = json.loads(traced.stdout)
    assert result["evidence_links"] == [parent]
    assert {n["node_id"] for n in result["normalized_result"]["nodes"]} >= {"mod:src/search.js", "mod:src/main.js"}
