"""Plugin loading: entry points, broken plugins, duplicates, blocking and allow-lists."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rea import hookimpl
from rea import hookspecs
from rea import registry as registry_mod
from rea.config import integer_setting
from rea.config import load_settings
from rea.errors import ReaError
from rea.session import Session
from rea.target import TargetView
from rea.testing import result_of
from rea_plugins import projections
from rea_plugins import session as session_plugin
from tests.kernel.fakes import DeclaredProvider
from tests.kernel.fakes import ProviderPlugin


def test_first_party_plugins_load_through_entry_points(clean_env: pytest.MonkeyPatch) -> None:
    reg = registry_mod.load()
    for name in (
        "session",
        "discovery",
        "evidence",
        "projections",
        "binary",
        "native",
        "angr",
        "artifacts",
        "asar",
        "javascript",
    ):
        assert name in reg.plugins, name
        assert reg.plugins[name].distribution == "rea-reverse"
    assert reg.broken == []
    assert reg.errors == []
    assert {"full", "compact"} <= set(reg.projections)


def test_load_is_idempotent_per_manager(clean_env: pytest.MonkeyPatch) -> None:
    pm = registry_mod.make_plugin_manager()
    first = registry_mod.load(pm)
    second = registry_mod.load(pm)
    assert sorted(first.plugins) and second.plugins == {}
    assert len(pm.get_plugins()) == len(first.plugins)


def test_duplicate_provider_id_names_both_plugins() -> None:
    reg = registry_mod.load(
        entry_points=False,
        extra=[
            ("one", ProviderPlugin(DeclaredProvider("dup", 1))),
            ("two", ProviderPlugin(DeclaredProvider("dup", 2))),
        ],
    )
    assert len(reg.errors) == 1
    err = reg.errors[0]
    assert err.code == "configuration_invalid"
    assert err.details["plugins"] == ["two", "one"] or err.details["plugins"] == ["one", "two"]
    assert "one" in err.message and "two" in err.message
    assert "dup" in reg.providers


class _RaisingHook:
    @hookimpl
    def rea_register_analysis_providers(self, register: Any) -> None:
        raise RuntimeError("engine table corrupt")


def test_hook_that_raises_is_reported_and_others_keep_working() -> None:
    reg = registry_mod.load(
        entry_points=False,
        extra=[
            ("bad", _RaisingHook()),
            ("good", ProviderPlugin(DeclaredProvider("fine", 1))),
            ("session", session_plugin),
        ],
    )
    assert [b.name for b in reg.broken] == ["bad"]
    assert reg.broken[0].stage == "rea_register_analysis_providers"
    assert "engine table corrupt" in reg.broken[0].error
    assert "fine" in reg.providers
    assert "open_binary" in reg.tools


def test_disable_and_allow_lists(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("REA_DISABLE_PLUGINS", "projections, asar")
    reg = registry_mod.load()
    assert "projections" not in reg.plugins and "asar" not in reg.plugins
    assert reg.projections == {}
    clean_env.delenv("REA_DISABLE_PLUGINS")
    clean_env.setenv("REA_LOAD_PLUGINS", "session")
    reg = registry_mod.load()
    assert sorted(reg.plugins) == ["session"]
    clean_env.setenv("REA_LOAD_PLUGINS", "")
    assert registry_mod.load().plugins == {}


def test_misspelled_hook_fails_loudly() -> None:
    class Typo:
        @hookimpl
        def rea_register_provider(self, register: Any) -> None:  # not a hook
            pass

    with pytest.raises(Exception, match="unknown hook"):
        registry_mod.load(entry_points=False, extra=[("typo", Typo())])


def test_invalid_provider_id_is_a_registry_error() -> None:
    reg = registry_mod.load(entry_points=False, extra=[("p", ProviderPlugin(DeclaredProvider("Bad_Id", 1)))])
    assert reg.providers == {}
    assert "Bad_Id" in reg.errors[0].message


def test_every_hookspec_is_documented_and_prefixed() -> None:
    names = [n for n in dir(hookspecs) if n.startswith("rea_")]
    assert set(names) == {
        "rea_register_analysis_providers",
        "rea_register_unpackers",
        "rea_register_scenario_drivers",
        "rea_register_projections",
        "rea_register_tools",
        "rea_register_settings",
        "rea_register_prompts",
        "rea_register_resources",
        "rea_select_unpacker",
        "rea_target_views",
    }
    for n in names:
        doc = getattr(hookspecs, n).__doc__ or ""
        assert ":param" in doc and "versionadded" in doc, n
    assert "Stops at first non-None result" in (hookspecs.rea_select_unpacker.__doc__ or "")


def test_projection_hook_registers_builtins() -> None:
    reg = registry_mod.load(entry_points=False, extra=[("projections", projections)])
    assert sorted(reg.projections) == ["compact", "full"]


def test_plugin_that_fails_at_import_is_listed_as_broken(tmp_path: Path) -> None:
    """A real distribution whose entry point raises at import; the CLI still lists everything else."""
    site = tmp_path / "site"
    pkg = site / "rea_exploding"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('missing native library libfoo.so')\n")
    dist = site / "rea_exploding-1.2.3.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rea-exploding\nVersion: 1.2.3\n")
    (dist / "entry_points.txt").write_text("[rea]\nexploding = rea_exploding\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    env["PYTHONPATH"] = str(site) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "rea.cli.main", "providers", "list", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    import json

    doc = json.loads(proc.stdout)
    broken = {b["name"]: b for b in doc["broken_plugins"]}
    assert broken["exploding"]["distribution"] == "rea-exploding"
    assert "libfoo.so" in broken["exploding"]["error"]
    assert any(p["name"] == "session" for p in doc["plugins"])
    human = subprocess.run(
        [sys.executable, "-m", "rea.cli.main", "providers", "list"], capture_output=True, text=True, env=env, timeout=60
    )
    assert human.returncode == 0 and "Broken plugins" in human.stdout and "exploding" in human.stdout
    assert "Traceback" not in human.stdout + human.stderr


class _SettingsPlugin:
    @hookimpl
    def rea_register_settings(self, register: Any) -> None:
        register(integer_setting("REA_TEST_STARTUP_TIMEOUT_MS", 1, 2_147_483_647, 5000, "milliseconds"))


@pytest.mark.parametrize("raw", ["", "0", "1.5", "1e6", "+1", " 1800000 ", "01", "Infinity", "2147483648", "abc"])
def test_hook_rea_register_settings_validates_declared_settings_at_startup(raw: str) -> None:
    reg = registry_mod.load(entry_points=False, extra=[("settings-plugin", _SettingsPlugin())])
    assert "REA_TEST_STARTUP_TIMEOUT_MS" in reg.settings
    with pytest.raises(ReaError) as info:
        load_settings({"REA_TEST_STARTUP_TIMEOUT_MS": raw}, declared=reg.settings)
    assert info.value.code == "configuration_invalid"
    assert info.value.details["settings"][0]["setting"] == "REA_TEST_STARTUP_TIMEOUT_MS"
    assert load_settings({"REA_TEST_STARTUP_TIMEOUT_MS": "1800000"}, declared=reg.settings) is not None
    assert reg.settings["REA_TEST_STARTUP_TIMEOUT_MS"].read({}) == 5000


class _WrongType:
    @hookimpl
    def rea_register_tools(self, register: Any) -> None:
        register({"name": "dict_tool", "description": "a dict where a ToolDef belongs"})


class _NoArguments:
    """An implementation may declare fewer arguments than the spec: pluggy prunes them."""

    def __init__(self) -> None:
        self.called = 0

    @hookimpl
    def rea_register_analysis_providers(self) -> None:
        self.called += 1


class _Wrapper:
    """A wrapper around every plugin's registrations sees each call (pluggy applies it)."""

    def __init__(self) -> None:
        self.seen = 0

    @hookimpl(wrapper=True)
    def rea_register_analysis_providers(self, register: Any) -> Any:
        self.seen += 1
        return (yield)


def test_a_registration_of_the_wrong_type_is_a_broken_plugin_and_the_rest_work() -> None:
    reg = registry_mod.load(entry_points=False, extra=[("wrong", _WrongType()), ("session", session_plugin)])
    assert [(b.name, b.stage) for b in reg.broken] == [("wrong", "rea_register_tools")]
    assert reg.broken[0].error == "registered a dict where a ToolDef belongs"
    assert "dict_tool" not in reg.tools and "open_binary" in reg.tools


def test_hooks_are_called_through_pluggy_with_pruning_and_wrappers() -> None:
    bare, wrapper = _NoArguments(), _Wrapper()
    reg = registry_mod.load(
        entry_points=False,
        extra=[("bare", bare), ("wrapper", wrapper), ("good", ProviderPlugin(DeclaredProvider("fine", 1)))],
    )
    assert reg.broken == []
    assert bare.called == 1 and "fine" in reg.providers
    assert wrapper.seen == 2  # once around each implementing plugin's call


def test_providers_list_names_a_plugin_that_registers_a_dict(tmp_path: Path) -> None:
    (tmp_path / "dict_plugin.py").write_text(
        "from rea import hookimpl\n\n@hookimpl\ndef rea_register_tools(register):\n    register({'name': 'x'})\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    env.update(PYTHONPATH=str(tmp_path) + os.pathsep + env.get("PYTHONPATH", ""), REA_PLUGIN_MODULES="dict_plugin")
    proc = subprocess.run(
        [sys.executable, "-m", "rea.cli.main", "providers", "list"], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "dict_plugin" in proc.stdout and "registered a dict where a ToolDef belongs" in proc.stdout


class _ElfViews:
    """Says every ELF is also a 'demo-view' read by binary_overview (a registered tool) and by a tool that is not."""

    @hookimpl
    def rea_target_views(self, target: Any, head: bytes) -> list[TargetView] | None:
        if not head.startswith(b"\x7fELF"):
            return None
        return [TargetView(kind="demo-view", summary="An ELF, seen again.", tools=["binary_overview", "no_such"])]


class _RaisingViews:
    @hookimpl
    def rea_target_views(self, target: Any, head: bytes) -> list[TargetView] | None:
        raise RuntimeError("view table corrupt")


def test_target_views_reach_the_overview_and_a_failing_plugin_is_left_out(hello_elf: Path) -> None:
    reg = registry_mod.load()
    reg.pm.register(_ElfViews(), name="elf-views")
    reg.pm.register(_RaisingViews(), name="raising-views")
    session = Session(reg)
    try:
        result_of(session, "open_binary", {"path": str(hello_elf), "provider_id": "native"})
        overview = result_of(session, "binary_overview", {})
    finally:
        session.close()
    assert overview["views"] == [{"kind": "demo-view", "summary": "An ELF, seen again.", "tools": ["binary_overview"]}]
