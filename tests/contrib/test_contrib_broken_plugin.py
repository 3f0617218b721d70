"""A plugin that raises at import is listed as broken, and everything else keeps working."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from contrib_support import ROOT
from contrib_support import subprocess_env

from rea import registry as registry_mod
from rea.session import Session
from rea.testing import result_of


def test_registry_lists_the_broken_plugin_and_keeps_the_rest(
    example_on_path: None, broken_plugin_dir: Path, toy_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(broken_plugin_dir))
    registry = registry_mod.load()
    broken = [b for b in registry.broken if b.name == "broken-example"]
    assert len(broken) == 1
    assert broken[0].distribution == "rea-broken-example"
    assert broken[0].stage == "import"
    assert "RuntimeError: rea_broken_example fails at import on purpose" in broken[0].error
    assert "broken-example" not in registry.plugins
    # The rest of the registry works: the example plugin loads and its provider answers.
    assert "example" in registry.plugins
    session = Session(registry)
    try:
        opened = result_of(session, "open_binary", {"path": str(toy_file), "provider_id": "toy"})
        assert opened["analysis_provider_binding"]["provider"]["id"] == "toy"
    finally:
        session.close()


def test_cli_lists_the_broken_plugin_and_exits_zero(example_site: Path | None, broken_plugin_dir: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rea", "providers", "list", "--json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env=subprocess_env(broken_plugin_dir, example_site),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    broken = [b for b in doc["broken_plugins"] if b["name"] == "broken-example"]
    assert broken and broken[0]["stage"] == "import"
    assert broken[0]["distribution"] == "rea-broken-example"
    assert any(p["id"] == "toy" for p in doc["providers"])
    assert any(p["name"] == "session" for p in doc["plugins"])


def test_cli_human_listing_names_the_broken_plugin(broken_plugin_dir: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rea", "providers", "list"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env=subprocess_env(broken_plugin_dir),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "broken-example" in proc.stdout
    assert "fails at import on purpose" in proc.stdout
