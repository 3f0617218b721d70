"""The angr provider without a worker: descriptor, availability, settings, profile, answers."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from rea.errors import ReaError
from rea.operations import answers
from rea.process import WorkerChannel
from rea.process import python_worker_spec
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea_plugins.angr.options import Timeouts
from rea_plugins.angr.options import timeouts_from_env
from rea_plugins.angr.provider import AngrProvider
from tests.engine_lifecycle import check_worker_answers_ping_and_refuses_queries_before_a_load
from tests.engine_lifecycle import worker_pid
from tests.engine_operations import CONTRACT_OPERATIONS


def test_importing_the_plugin_does_not_import_angr() -> None:
    code = (
        "import sys, rea_plugins.angr, rea_plugins.angr.provider, rea_plugins.angr.client; "
        "print('angr' in sys.modules, 'cle' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["False", "False"]


def test_descriptor_declares_the_contract(rea_registry: Registry) -> None:
    provider = rea_registry.providers["angr"]
    d = provider.descriptor
    assert (d.id, d.kind, d.auto_priority) == ("angr", "deep", 5)
    assert set(d.formats) == {"elf", "pe", "mach-o"}
    assert set(d.architectures) == {"x86", "x86_64", "arm", "arm64"}
    assert set(d.operations) == CONTRACT_OPERATIONS
    native = rea_registry.providers.get("native")
    if native is not None:
        assert native.descriptor.auto_priority > d.auto_priority


def test_availability_without_importing_angr(monkeypatch: pytest.MonkeyPatch) -> None:
    provider = AngrProvider()
    assert provider.availability().status == ("available" if importlib.util.find_spec("angr") else "unavailable")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "angr" else real(name, *a))
    missing = provider.availability()
    assert (missing.status, missing.code) == ("unavailable", "runtime_missing")
    assert missing.remediation == "pip install 'rea-reverse[angr]'"


def test_analysis_profile_records_version_and_options(angr_programs: dict[str, Path], rea_registry: Registry) -> None:
    session = Session(rea_registry)
    try:
        out = call_tool(session, "open_binary", {"path": str(angr_programs["nopie"]), "provider_id": "angr"})
        assert out.structured is not None
        binding = out.structured["analysis_provider_binding"]
        params = binding["analysis_profile"]["parameters"]
        assert binding["provider"]["id"] == "angr"
        assert params["angr_version"] == binding["provider"]["version"] != "not-installed"
        assert params["loader"]["auto_load_libs"] is False
        assert params["cfg"]["analysis"] == "CFGFast" and params["cfg"]["normalize"] is True
        assert params["decompiler"]["analysis"] == "Decompiler"
        # open binds the provider but starts no worker: the first query does.
        assert worker_pid(session) is None
    finally:
        assert session.close() == []


def test_timeouts_from_environment() -> None:
    t = timeouts_from_env({"REA_ANGR_CFG_TIMEOUT_MS": "2500", "REA_ANGR_DECOMPILE_TIMEOUT_MS": "9"})
    assert (t.cfg_ms, t.decompile_ms, t.load_ms, t.query_ms) == (2500, 9, Timeouts().load_ms, Timeouts().query_ms)
    assert Timeouts().cfg_ms == 120_000 and Timeouts().decompile_ms == 60_000
    assert timeouts_from_env({"REA_ANGR_MEMORY_LIMIT_MB": "4096"}).address_space_mb == 4096
    with pytest.raises(ReaError):
        timeouts_from_env({"REA_ANGR_MEMORY_LIMIT_MB": "255"})
    for bad in ("0", "-1", "1.5", "abc", "", "2147483648", " 5"):
        with pytest.raises(ReaError) as info:
            timeouts_from_env({"REA_ANGR_CFG_TIMEOUT_MS": bad})
        assert info.value.code == "configuration_invalid"
        assert info.value.details["settings"][0]["setting"] == "REA_ANGR_CFG_TIMEOUT_MS"


def test_invalid_timeout_setting_fails_the_open(
    angr_programs: dict[str, Path], rea_registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REA_ANGR_QUERY_TIMEOUT_MS", "soon")
    session = Session(rea_registry)
    with pytest.raises(ReaError) as info:
        call_tool(session, "open_binary", {"path": str(angr_programs["nopie"]), "provider_id": "angr"})
    assert info.value.code == "configuration_invalid"
    assert session.target is None


def test_non_binary_is_rejected_before_any_worker(tmp_path: Path, rea_registry: Registry) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a binary\n")
    session = Session(rea_registry)
    with pytest.raises(ReaError) as info:
        call_tool(session, "open_binary", {"path": str(text), "provider_id": "angr"})
    assert info.value.code == "unsupported_target"
    assert info.value.details["rejections"][0]["code"] == "target_format_unsupported"


def test_paging_and_search_helpers() -> None:
    page = answers.page("items", list(range(5)), {"offset": 3, "limit": 10}, lambda i: {"i": i})
    assert page == {"items": [{"i": 3}, {"i": 4}], "offset": 3, "limit": 10, "total": 5, "next_offset": None}
    page = answers.page("items", list(range(5)), {"limit": 2}, lambda i: {"i": i})
    assert (page["next_offset"], page["total"]) == (2, 5)
    for params, path in (({"limit": 0}, "limit"), ({"limit": 1001}, "limit"), ({"offset": -1}, "offset")):
        with pytest.raises(ReaError) as info:
            answers.page("items", [], params, lambda i: {})
        assert info.value.details["issues"][0]["path"] == path
    assert answers.parse_address("0x401000") == 0x401000 and answers.parse_address(16) == 16
    for bad in ("main", "0x", "-5", True, None, "0x" + "f" * 17):
        with pytest.raises(ReaError):
            answers.parse_address(bad)
    assert answers.matcher({"pattern": "GREET"})("rea-angr greeting")
    assert not answers.matcher({"pattern": "GREET", "case_sensitive": True})("rea-angr greeting")
    assert answers.matcher({"pattern": r"^add_\w+$", "mode": "regex"})("add_numbers")
    with pytest.raises(ReaError) as info:
        answers.matcher({"pattern": "(", "mode": "regex"})
    assert info.value.details["issues"][0]["path"] == "pattern"


def test_worker_module_answers_ping_over_its_pipes() -> None:
    check_worker_answers_ping_and_refuses_queries_before_a_load(
        WorkerChannel(python_worker_spec("rea_plugins.angr.worker", resource="angr-worker", owner="angr"), label="angr")
    )
