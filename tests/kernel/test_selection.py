"""Provider selection: parser, precedence, auto policy and typed errors, through API, CLI and env."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rea import registry as registry_mod
from rea.errors import ReaError
from rea.selection import candidates
from rea.selection import parse_provider_choice
from rea.selection import requested_choice
from rea.selection import select
from rea.session import Session
from rea.target import identify
from rea.testing import call_tool
from rea_plugins import discovery
from rea_plugins import session as session_plugin
from tests.kernel.fakes import DeclaredProvider
from tests.kernel.fakes import ProviderPlugin


def make_registry(*providers: DeclaredProvider) -> registry_mod.Registry:
    return registry_mod.load(
        entry_points=False,
        extra=[("fakes", ProviderPlugin(*providers)), ("session", session_plugin), ("discovery", discovery)],
    )


@pytest.mark.parametrize("value", ["auto", "native", "a", "ghidra-12", "x" * 64])
def test_parser_accepts_auto_and_ids(value: str) -> None:
    assert parse_provider_choice(value) == value


@pytest.mark.parametrize("value", ["", "Auto", "x ", " x", "ghidra_1", "1abc", "x" * 65, None, 3, "-a"])
def test_parser_rejects_everything_else(value: object) -> None:
    with pytest.raises(ReaError) as info:
        parse_provider_choice(value)
    assert info.value.code == "invalid_request"
    assert info.value.details["issues"][0]["path"] == "provider_id"


def test_environment_value_is_validated_as_configuration(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("REA_ANALYSIS_PROVIDER", "Auto")
    with pytest.raises(ReaError) as info:
        requested_choice(None)
    assert info.value.code == "configuration_invalid"
    assert info.value.details["settings"][0]["setting"] == "REA_ANALYSIS_PROVIDER"


def test_precedence_request_then_environment_then_auto(clean_env: pytest.MonkeyPatch) -> None:
    assert requested_choice(None) == ("auto", "auto")
    clean_env.setenv("REA_ANALYSIS_PROVIDER", "beta")
    assert requested_choice(None) == ("beta", "environment")
    assert requested_choice("alpha") == ("alpha", "request")
    # An explicit request for auto overrides a concrete environment value.
    assert requested_choice("auto") == ("auto", "auto")


def test_auto_with_zero_candidates_is_typed(hello_elf: Path, clean_env: pytest.MonkeyPatch) -> None:
    reg = make_registry(DeclaredProvider("alpha", 5, formats=("pe",)), DeclaredProvider("beta", 5, available=False))
    with pytest.raises(ReaError) as info:
        select(reg, identify(str(hello_elf)), None)
    assert info.value.code == "provider_unavailable"
    d = info.value.details
    assert d["selection_reason"] == "provider_unavailable" and d["candidate_ids"] == ["beta"]
    assert d["requested_provider_id"] == "auto"
    assert {(r["provider_id"], r["code"]) for r in d["rejections"]} == {
        ("alpha", "target_format_unsupported"),
        ("beta", "executable_missing"),
    }
    only_pe = make_registry(DeclaredProvider("alpha", 5, formats=("pe",)))
    with pytest.raises(ReaError) as info:
        select(only_pe, identify(str(hello_elf)), None)
    assert info.value.code == "unsupported_target"
    assert info.value.details["selection_reason"] == "target_unsupported"


def test_auto_with_one_candidate(hello_elf: Path, clean_env: pytest.MonkeyPatch) -> None:
    reg = make_registry(DeclaredProvider("alpha", 5), DeclaredProvider("beta", 9, available=False))
    sel = select(reg, identify(str(hello_elf)), None)
    assert (sel.provider_id, sel.selection_source) == ("alpha", "auto")


def test_auto_takes_highest_priority_regardless_of_registration_order(
    hello_elf: Path, clean_env: pytest.MonkeyPatch
) -> None:
    target = identify(str(hello_elf))
    for order in (
        (DeclaredProvider("alpha", 1), DeclaredProvider("zeta", 7)),
        (DeclaredProvider("zeta", 7), DeclaredProvider("alpha", 1)),
    ):
        assert select(make_registry(*order), target, None).provider_id == "zeta"


def test_tie_at_the_top_is_ambiguous(hello_elf: Path, clean_env: pytest.MonkeyPatch) -> None:
    reg = make_registry(DeclaredProvider("beta", 7), DeclaredProvider("alpha", 7), DeclaredProvider("gamma", 2))
    with pytest.raises(ReaError) as info:
        select(reg, identify(str(hello_elf)), None)
    assert info.value.code == "capability_unavailable"
    assert info.value.details["selection_reason"] == "ambiguous"
    assert info.value.details["candidate_ids"] == ["alpha", "beta"]


def test_explicit_unknown_unavailable_unsupported(hello_elf: Path, clean_env: pytest.MonkeyPatch) -> None:
    reg = make_registry(DeclaredProvider("alpha", 5, formats=("pe",)), DeclaredProvider("beta", 5, available=False))
    target = identify(str(hello_elf))
    cases = {
        "nope": ("invalid_request", "unknown_provider"),
        "beta": ("provider_unavailable", "provider_unavailable"),
        "alpha": ("unsupported_target", "target_unsupported"),
    }
    for pid, (code, reason) in cases.items():
        with pytest.raises(ReaError) as info:
            select(reg, target, pid)
        assert (info.value.code, info.value.details["selection_reason"]) == (code, reason)
        assert info.value.details["requested_provider_id"] == pid
        assert info.value.remediation


def test_discovery_is_target_free_and_sorted() -> None:
    reg = make_registry(DeclaredProvider("zeta", 1), DeclaredProvider("alpha", 2, available=False))
    found = candidates(reg)
    assert [c.provider_id for c in found] == ["alpha", "zeta"]
    assert {c.target_support.status for c in found} == {"unknown"}
    assert found[0].availability.status == "unavailable"


def test_binding_records_selection_source(hello_elf: Path, clean_env: pytest.MonkeyPatch) -> None:
    reg = make_registry(DeclaredProvider("alpha", 5), DeclaredProvider("beta", 1))
    session = Session(reg)
    out = call_tool(session, "open_binary", {"path": str(hello_elf)}).structured
    assert out is not None
    assert out["analysis_provider_binding"]["selection_source"] == "auto"
    assert out["analysis_provider_binding"]["provider"]["id"] == "alpha"
    clean_env.setenv("REA_ANALYSIS_PROVIDER", "beta")
    out = call_tool(session, "open_binary", {"path": str(hello_elf)}).structured
    assert out is not None
    assert out["analysis_provider_binding"]["selection_source"] == "environment"
    out = call_tool(session, "open_binary", {"path": str(hello_elf), "provider_id": "alpha"}).structured
    assert out is not None
    assert out["analysis_provider_binding"]["selection_source"] == "request"
    assert out["analysis_run"]["run_id"].startswith("run_")
    session.close()


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    full_env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "rea.cli.main", *args], capture_output=True, text=True, env=full_env, timeout=120
    )


def test_same_selection_error_through_flag_env_and_api(hello_elf: Path, clean_env: pytest.MonkeyPatch) -> None:
    """An unknown id gives one typed error whichever way it arrives."""
    flag = _cli("open-binary", str(hello_elf), "--provider-id", "no-such-engine", "--format", "json")
    env = _cli("open-binary", str(hello_elf), "--format", "json", env={"REA_ANALYSIS_PROVIDER": "no-such-engine"})
    assert flag.returncode == env.returncode == 1
    e1, e2 = json.loads(flag.stdout)["error"], json.loads(env.stdout)["error"]
    session = Session(registry_mod.load())
    with pytest.raises(ReaError) as info:
        call_tool(session, "open_binary", {"path": str(hello_elf), "provider_id": "no-such-engine"})
    e3 = info.value.projection_dict()
    for e in (e1, e2, e3):
        assert e["code"] == "invalid_request"
        assert e["details"]["selection_reason"] == "unknown_provider"
        assert e["details"]["requested_provider_id"] == "no-such-engine"
    bad = _cli("open-binary", str(hello_elf), "--format", "json", env={"REA_ANALYSIS_PROVIDER": "Auto"})
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["error"]["code"] == "configuration_invalid"


def test_an_empty_provider_choice_is_an_error_everywhere(hello_elf: Path, clean_env: pytest.MonkeyPatch) -> None:
    """``--provider ''`` and ``provider_id: ""`` are typed errors; an empty variable is configuration_invalid."""
    flag = _cli("binary-overview", str(hello_elf), "--provider", "", "--json")
    assert flag.returncode == 1
    err = json.loads(flag.stdout)["error"]
    assert err["code"] == "invalid_request"
    assert err["details"]["selection_reason"] == "invalid_options"
    assert err["details"]["issues"][0]["path"] == "--provider"
    analyze = _cli("analyze", str(hello_elf), "--provider", "", "--json")
    assert analyze.returncode == 1 and json.loads(analyze.stdout)["error"]["code"] == "invalid_request"
    session = Session(registry_mod.load())
    with pytest.raises(ReaError) as info:
        call_tool(session, "open_binary", {"path": str(hello_elf), "provider_id": ""})
    assert info.value.code == "invalid_request"
    assert info.value.details["issues"][0]["path"] == "provider_id"
    env = _cli("binary-overview", str(hello_elf), "--json", env={"REA_ANALYSIS_PROVIDER": ""})
    assert env.returncode == 1
    err = json.loads(env.stdout)["error"]
    assert err["code"] == "configuration_invalid"
    assert err["details"]["settings"][0]["setting"] == "REA_ANALYSIS_PROVIDER"
