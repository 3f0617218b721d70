"""The example third-party plugin, installed with pip: discovered, selectable by id, and answering."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from contrib_support import ROOT
from contrib_support import subprocess_env

from rea import registry as registry_mod
from rea.context import CallContext
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of

pytestmark = pytest.mark.usefixtures("example_on_path")

# Facts of conftest.TOY_SOURCE, sorted by address as the provider contract requires.
EXPECTED_PROCEDURES = [
    {"address": "0x800", "name": "init", "size": 8, "kind": "local", "end": "0x808"},
    {"address": "0x1000", "name": "main", "size": 32, "kind": "local", "end": "0x1020"},
    {"address": "0x1040", "name": "helper", "size": 16, "kind": "local", "end": "0x1050"},
]
EXPECTED_STRINGS = [
    {
        "address": "0x2000",
        "value": "hello toy",
        "encoding": "ascii",
        "byte_length": 9,
        "truncated": False,
        "section": None,
    },
    {"address": "0x2010", "value": "grüße", "encoding": "utf-8", "byte_length": 7, "truncated": False, "section": None},
]


def _cli(args: list[str], *paths: Path | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rea", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env=subprocess_env(*paths),
        timeout=120,
    )


@pytest.fixture
def registry() -> Registry:
    return registry_mod.load()


@pytest.fixture
def session(registry: Registry) -> Any:
    s = Session(registry)
    yield s
    s.close()


def test_cli_providers_list_shows_the_installed_plugin(example_site: Path | None) -> None:
    proc = _cli(["providers", "list", "--json"], example_site)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    plugin = next(p for p in doc["plugins"] if p["name"] == "example")
    assert plugin["distribution"] == "rea-example-provider"
    assert plugin["version"] == "0.1.0"
    assert plugin["module"] == "rea_example_provider"
    assert "rea_register_analysis_providers" in plugin["hooks"]
    toy = next(p for p in doc["providers"] if p["id"] == "toy")
    assert toy["plugin"] == "example"
    assert toy["kind"] == "static"
    assert toy["auto_priority"] == 1
    assert toy["formats"] == ["file"]
    assert toy["availability"]["status"] == "available"
    assert sorted(toy["operations"]) == ["list_documents", "list_procedures", "list_strings"]
    assert not [b for b in doc["broken_plugins"] if b["name"] == "example"]


def test_registry_owns_toy_through_the_entry_point(registry: Registry) -> None:
    assert registry.plugins["example"].distribution == "rea-example-provider"
    assert registry.owner[("provider", "toy")] == "example"


def test_open_binary_selects_toy_by_id_and_answers(session: Session, toy_file: Path) -> None:
    opened = result_of(session, "open_binary", {"path": str(toy_file), "provider_id": "toy"})
    binding = opened["analysis_provider_binding"]
    assert binding["provider"]["id"] == "toy"
    assert binding["selection_source"] == "request"
    ctx = CallContext()
    docs = session.execute("list_documents", {}, ctx).normalized["documents"]
    assert docs == [
        {
            "name": "program.toy",
            "format": "toy",
            "architecture": None,
            "sha256": opened["target"]["sha256"],
            "entry": "0x1000",
            "bits": None,
            "endianness": None,
        }
    ]
    procs = session.execute("list_procedures", {}, ctx).normalized
    assert procs == {"procedures": EXPECTED_PROCEDURES, "offset": 0, "limit": 100, "total": 3, "next_offset": None}
    strings = session.execute("list_strings", {}, ctx).normalized
    assert strings["strings"] == EXPECTED_STRINGS
    assert strings["total"] == 2


def test_toy_tools_answer_through_the_catalog(session: Session, toy_file: Path) -> None:
    call_tool(session, "open_binary", {"path": str(toy_file), "provider_id": "toy"})
    procs = call_tool(session, "list_procedures", {})
    assert procs.evidence is not None
    assert procs.evidence.provider.id == "toy"
    assert procs.evidence.normalized_result["procedures"] == EXPECTED_PROCEDURES
    strings = result_of(session, "list_strings", {})
    assert strings["strings"] == EXPECTED_STRINGS


def test_pages_follow_the_contract(session: Session, toy_file: Path) -> None:
    session.open(str(toy_file), "toy", CallContext())
    first = session.execute("list_procedures", {"offset": 0, "limit": 2}, CallContext()).normalized
    assert [p["name"] for p in first["procedures"]] == ["init", "main"]
    assert first["next_offset"] == 2 and first["total"] == 3
    rest = session.execute("list_procedures", {"offset": first["next_offset"], "limit": 2}, CallContext()).normalized
    assert [p["name"] for p in rest["procedures"]] == ["helper"]
    assert rest["next_offset"] is None
    with pytest.raises(ReaError) as err:
        session.execute("list_procedures", {"limit": 0}, CallContext())
    assert err.value.code == "invalid_request"
    assert err.value.details["issues"][0]["path"] == "limit"


def test_auto_picks_toy_for_a_toy_file(session: Session, toy_file: Path) -> None:
    opened = result_of(session, "open_binary", {"path": str(toy_file), "provider_id": "auto"})
    assert opened["analysis_provider_binding"]["provider"]["id"] == "toy"
    assert opened["analysis_provider_binding"]["selection_source"] == "auto"


def test_toy_refuses_a_real_elf(session: Session) -> None:
    with pytest.raises(ReaError) as err:
        call_tool(session, "open_binary", {"path": "/bin/ls", "provider_id": "toy"})
    assert err.value.code == "unsupported_target"
    assert err.value.details["selection_reason"] == "target_unsupported"
    assert err.value.details["rejections"][0]["code"] == "target_format_unsupported"


def test_toy_refuses_plain_text(session: Session, tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("TOYBIN2\nproc main 0x0 1\n")
    with pytest.raises(ReaError) as err:
        call_tool(session, "open_binary", {"path": str(text), "provider_id": "toy"})
    assert err.value.code == "unsupported_target"


@pytest.mark.parametrize(
    ("body", "line"),
    [
        ("proc main zz 4\n", 2),
        ("entry 0x10\nproc main 0x10\n", 3),
        ("\nlabel x 0x10\n", 3),
        ("str nothex text\n", 2),
    ],
)
def test_malformed_toy_file_is_a_typed_error(session: Session, tmp_path: Path, body: str, line: int) -> None:
    bad = tmp_path / "bad.toy"
    bad.write_text("TOYBIN1\n" + body)
    with pytest.raises(ReaError) as err:
        call_tool(session, "open_binary", {"path": str(bad), "provider_id": "toy"})
    assert err.value.code == "unsupported_target"
    assert err.value.details["line"] == line
    assert session.target is None


def test_non_utf8_toy_file_is_a_typed_error(session: Session, tmp_path: Path) -> None:
    bad = tmp_path / "latin1.toy"
    bad.write_bytes(b"TOYBIN1\nstr 0x10 gr\xfc\xdfe\n")
    with pytest.raises(ReaError) as err:
        call_tool(session, "open_binary", {"path": str(bad), "provider_id": "toy"})
    assert err.value.code == "unsupported_target"
    assert "UTF-8" in err.value.message


def test_cli_tool_command_runs_on_the_toy_provider(example_site: Path | None, toy_file: Path) -> None:
    proc = _cli(["list-strings", str(toy_file), "--provider", "toy", "--format", "json"], example_site)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert record["provider"]["id"] == "toy"
    assert record["operation"] == "list_strings"
    assert record["normalized_result"]["strings"] == EXPECTED_STRINGS
    assert record["evidence_id"].startswith("ev_")
