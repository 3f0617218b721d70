"""rea.plugin, the declared plugin API: every name resolves and says what it is, and the registry checks a
plugin's required API version."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import rea.plugin as api
from rea import registry as registry_mod

ROOT = Path(__file__).resolve().parents[2]


def test_every_exported_name_resolves_and_has_a_one_line_meaning() -> None:
    assert set(api.__all__) == {"API_VERSION", *api.EXPORTS}
    for name, (module, attribute, meaning) in api.EXPORTS.items():
        assert getattr(api, name) is not None, name
        assert meaning.endswith(".") and "\n" not in meaning and len(meaning) <= 120, (name, meaning)
        assert module == "rea" or module.startswith("rea."), (name, module)
        assert attribute or module != "rea", name


def test_the_static_imports_declare_exactly_the_exported_names() -> None:
    # mypy reads the TYPE_CHECKING imports, the runtime reads EXPORTS: they must say the same.
    tree = ast.parse((ROOT / "rea" / "plugin.py").read_text())
    guarded = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    declared: dict[str, tuple[str, str]] = {}
    for node in guarded.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                declared[alias.asname or alias.name] = (node.module or "", alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                declared[alias.asname or alias.name] = (alias.name, "")
    assert declared == {name: (module, attribute) for name, (module, attribute, _) in api.EXPORTS.items()}


def test_importing_the_api_loads_only_the_names_taken() -> None:
    code = (
        "import sys\nfrom rea.plugin import ReaError\n"
        "print(','.join(m for m in ('rea.process.sandbox', 'rea.unknowns', 'rea.bundle') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == ""


def test_a_plugin_built_for_a_later_api_is_broken_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "future_plugin.py").write_text(
        "from rea.plugin import hookimpl\n\nREQUIRES_API = 99\n\n"
        "@hookimpl\ndef rea_register_tools(register):\n    pass\n"
    )
    (tmp_path / "current_plugin.py").write_text(
        f"from rea.plugin import hookimpl\n\nREQUIRES_API = {api.API_VERSION}\n\n"
        "@hookimpl\ndef rea_register_tools(register):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("REA_PLUGIN_MODULES", "future_plugin,current_plugin")
    reg = registry_mod.load(entry_points=False)
    broken = {b.name: b.error for b in reg.broken}
    assert "current_plugin" in reg.plugins and "current_plugin" not in broken
    assert "future_plugin" not in reg.plugins
    assert f"built for rea plugin API 99; this rea offers API {api.API_VERSION}" in broken["future_plugin"]
