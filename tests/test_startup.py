"""Start-up stays at the floor: loading the registry imports no engine and, with the tool manifest kept in the
analysis cache, no tool module; the manifest is data that says exactly what the hooks would register, and a
changed source makes it a miss. Speed figures live in benchmarks/startup.py, never here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea.cache import AnalysisCache
from rea.catalog.manifest import ToolEntry
from rea.catalog.manifest import ToolSpec
from rea.catalog.manifest import spec_of
from rea.catalog.tool import ToolDef
from rea.registry import load

ENGINES = (
    "angr",
    "lief",
    "capstone",
    "tree_sitter",
    "androguard",
    "dnfile",
    "dncil",
    "dask",
    "distributed",
    "yara",
    "pefile",
    "r2libr",
    "websockets",
    "jsonschema",
    "mcp",
)


def _probe(code: str, cache: Path, **env: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter (REA_CACHE_DIR=cache) and return what it printed as JSON."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    base.update(REA_CACHE_DIR=str(cache), PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    base.update(env)
    prelude = "import json, sys\n"
    proc = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=base,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    found: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return found


_LOADED = """
def loaded():
    engines = sorted(m for m in {engines!r} if m in sys.modules)
    tools = sorted(m for m in sys.modules if m.startswith("rea_plugins.") and m.rsplit(".", 1)[-1] == "tools")
    return {{"engines": engines, "tool_modules": tools}}
"""


def _loaded_after(step: str, cache: Path) -> dict[str, Any]:
    code = _LOADED.format(engines=ENGINES) + textwrap.dedent(step) + "\nprint(json.dumps(loaded()))\n"
    return _probe(code, cache)


VERSION = """
import contextlib, io
from rea.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    main(["--version"])
"""
PROVIDERS = """
import contextlib, io
from rea.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    main(["providers", "list", "--json"])
"""


def test_loading_the_registry_imports_no_engine(tmp_path: Path) -> None:
    for _ in range(2):  # a cold manifest (the hooks run and it is written), then a warm one
        for step in ("import rea.registry as r\nr.default_registry(cached=True)", VERSION, PROVIDERS):
            assert _loaded_after(step, tmp_path / "cache")["engines"] == [], step


def test_version_and_providers_list_import_no_tool_module_once_the_manifest_is_kept(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _loaded_after(PROVIDERS, cache)  # writes the manifest
    assert _loaded_after(VERSION, cache)["tool_modules"] == []
    assert _loaded_after(PROVIDERS, cache)["tool_modules"] == []


def test_version_calls_no_registration_hook(tmp_path: Path) -> None:
    found = _probe(
        """
        import contextlib, io
        from rea.cli.main import main
        from rea.registry import default_registry
        with contextlib.redirect_stdout(io.StringIO()):
            main(["--version"])
        print(json.dumps({"pending": len(default_registry()._pending)}))
        """,
        tmp_path / "cache",
    )
    assert found["pending"] == 8


def _registry_from(cache: Path) -> Any:
    return load(cache=AnalysisCache(str(cache), 1 << 30))


def test_the_manifest_says_what_the_hooks_register(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    eager = load()
    cold = _registry_from(tmp_path)
    assert sorted(cold.tools) == sorted(eager.tools)
    warm = _registry_from(tmp_path)
    assert warm.tools._deferred, "the second registry reads the manifest"
    assert list(warm.tools) == list(eager.tools)
    assert warm.owner == eager.owner and warm.broken == eager.broken
    assert [e.message for e in warm.errors] == [e.message for e in eager.errors]
    assert warm.toolsets() == eager.toolsets()
    specs = warm.tool_specs()  # computed (and kept) from the real ToolDefs of every plugin
    again = _registry_from(tmp_path).tool_specs()  # decoded from what was kept
    for name, tool in eager.tools.items():
        expected = spec_of(tool)
        assert msgspec.json.encode(specs[name]) == msgspec.json.encode(expected), name
        assert msgspec.json.encode(again[name]) == msgspec.json.encode(expected), name
        entry = warm.tool_info()[name]
        assert isinstance(entry, ToolEntry)
        assert (entry.cli_name, entry.toolset_id, entry.display_title) == (
            tool.cli_name,
            tool.toolset_id,
            tool.display_title,
        )
        real = warm.tools[name]  # its plugin's hook runs now
        assert isinstance(real, ToolDef) and real.handler is not None and real.name == name


def test_a_spec_carries_every_field_of_a_tool_but_its_callables() -> None:
    data = set(ToolDef.__struct_fields__) - {"handler", "result_type", "images"}
    assert data <= set(ToolSpec.__struct_fields__)
    assert set(ToolSpec.__struct_fields__) - data == {"advertised_output", "has_images"}


PLUGIN = """
import os
from rea import hookimpl
from rea.catalog.tool import ToolDef

def _handler(call):
    return {{"ok": True}}

@hookimpl
def rea_register_tools(register):
    with open(os.environ["PROBE_MARKS"], "a") as fh:
        fh.write("called\\n")
    for name in {names!r}:
        register(ToolDef(name=name, description="A probe tool.", family="probe",
                         input_schema={{"type": "object", "properties": {{}}}}, handler=_handler))
"""


def test_a_changed_plugin_source_is_a_miss(tmp_path: Path) -> None:
    module = tmp_path / "startup_probe_plugin.py"
    marks = tmp_path / "marks"
    cache = tmp_path / "cache"
    code = """
    from rea.registry import default_registry
    reg = default_registry(cached=True)
    names = sorted(n for n in reg.tools if n.startswith("probe_"))
    print(json.dumps({"names": names}))
    """
    env = {"REA_PLUGIN_MODULES": "startup_probe_plugin", "PROBE_MARKS": str(marks)}
    module.write_text(PLUGIN.format(names=["probe_one"]))

    def run() -> list[str]:
        found = _probe(f"sys.path.insert(0, {str(tmp_path)!r})\n" + textwrap.dedent(code), cache, **env)
        names: list[str] = found["names"]
        return names

    assert run() == ["probe_one"]
    assert marks.read_text().count("called") == 1
    assert run() == ["probe_one"]
    assert marks.read_text().count("called") == 1, "the manifest answered: the hook did not run"
    module.write_text(PLUGIN.format(names=["probe_one", "probe_two"]))
    assert run() == ["probe_one", "probe_two"]
    assert marks.read_text().count("called") == 2


def test_an_installed_distribution_is_seen_though_the_entry_points_are_kept(tmp_path: Path) -> None:
    site, cache = tmp_path / "site", tmp_path / "cache"
    site.mkdir()
    code = """
    from rea.registry import default_registry
    print(json.dumps({"plugins": sorted(default_registry(cached=True).plugins)}))
    """
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(Path(__file__).resolve().parents[1])])}
    before = _probe(code, cache, **env)["plugins"]
    assert "late" not in before and before == _probe(code, cache, **env)["plugins"]
    (site / "rea_late_plugin.py").write_text("from rea import hookimpl\n")
    dist = site / "rea_late-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rea-late\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[rea]\nlate = rea_late_plugin\n")
    assert _probe(code, cache, **env)["plugins"] == sorted([*before, "late"])


def test_the_command_ends_without_teardown_yet_loses_nothing(tmp_path: Path) -> None:
    """``rea`` skips the interpreter's module teardown: exit handlers still run, piped output arrives whole and
    the exit status is the command's."""
    plugin = tmp_path / "exit_marker_plugin.py"
    marker = tmp_path / "exit-handler-ran"
    plugin.write_text(f"import atexit, pathlib\natexit.register(pathlib.Path({str(marker)!r}).write_text, 'ran')\n")
    base = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    root = str(Path(__file__).resolve().parents[1])
    base.update(REA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.pathsep.join([str(tmp_path), root]))
    rea = [sys.executable, "-m", "rea"]
    listed = subprocess.run(
        [*rea, "providers", "list", "--json"],
        capture_output=True,
        env={**base, "REA_PLUGIN_MODULES": "exit_marker_plugin"},
        timeout=300,
    )
    assert listed.returncode == 0, listed.stderr
    assert marker.read_text() == "ran"
    assert {p["id"] for p in json.loads(listed.stdout)["providers"]} >= {"native"}
    catalog = subprocess.run([*rea, "catalog"], capture_output=True, env=base, timeout=300)
    assert catalog.returncode == 0, catalog.stderr
    assert len(catalog.stdout) > 100_000  # far beyond a pipe's buffer: only a flush before the exit delivers it
    assert json.loads(catalog.stdout)["tools"]
    failed = subprocess.run(
        [*rea, "procedure-info", str(tmp_path / "absent"), "main", "--json"], capture_output=True, env=base, timeout=300
    )
    assert failed.returncode == 1
    assert json.loads(failed.stdout)["error"]["code"] == "target_unavailable"


def test_a_second_procedure_info_decodes_nothing(tmp_path: Path) -> None:
    """A procedure's block and instruction counts are kept with the target's analysis: a later process answers
    procedure_info with the same counts without loading the decoder."""
    call = """
import contextlib, io
from rea.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    main(["procedure-info", "/bin/ls", "main", "--json"])
result = json.loads(out.getvalue())["normalized_result"]
print(json.dumps({"counts": [result["basic_block_count"], result["instruction_count"]],
                  "decoder": "capstone" in sys.modules}))
"""
    cache = tmp_path / "cache"
    first = _probe(call, cache)
    second = _probe(call, cache)
    assert first["decoder"] and not second["decoder"]
    assert second["counts"] == first["counts"] and first["counts"][0] > 1 and first["counts"][1] > first["counts"][0]


TOOL_MODULE = """
from rea.plugin import ToolDef


def tools():
    return [ToolDef(name="{name}", description="A probe tool.", family="probe", input_schema={{"type": "object"}},
                    handler=lambda call: None)]
"""


def test_a_plugin_declaring_its_tool_modules_builds_one_tool_by_importing_one_module(tmp_path: Path) -> None:
    """A plugin that lists its tool modules (``TOOL_MODULES``) has each tool built from the module that declared
    it: with the manifest kept, reading one tool imports that module and no other of the plugin's."""
    package = tmp_path / "src" / "modplug"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('TOOL_MODULES = ("modplug.first", "modplug.second")\n')
    for module, name in (("first", "probe_first"), ("second", "probe_second")):
        (package / f"{module}.py").write_text(TOOL_MODULE.format(name=name))
    code = """
import sys
sys.path.insert(0, {src!r})
from rea.cache import AnalysisCache
from rea.registry import load
registry = load(cache=AnalysisCache({cache!r}, 1 << 30))
names = sorted(n for n in registry.tools if n.startswith("probe_"))
tool = registry.tools["probe_second"]
print(json.dumps({{"names": names, "built": tool.name, "deferred": bool(registry.tools._deferred),
                  "modules": sorted(m for m in sys.modules if m.startswith("modplug."))}}))
""".format(src=str(tmp_path / "src"), cache=str(tmp_path / "cache"))
    env = {"REA_PLUGIN_MODULES": "modplug", "REA_LOAD_PLUGINS": "modplug"}
    cold = _probe(code, tmp_path / "cache", **env)  # the hooks run (every module) and the manifest is kept
    assert cold["names"] == ["probe_first", "probe_second"] and cold["modules"] == ["modplug.first", "modplug.second"]
    warm = _probe(code, tmp_path / "cache", **env)
    assert warm["names"] == cold["names"] and warm["built"] == "probe_second" and warm["deferred"]
    assert warm["modules"] == ["modplug.second"]


def test_a_tool_module_without_tools_breaks_its_plugin_only(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    package = tmp_path / "badplug"
    package.mkdir()
    (package / "__init__.py").write_text('TOOL_MODULES = ("badplug.empty",)\n')
    (package / "empty.py").write_text("X = 1\n")
    clean_env.syspath_prepend(str(tmp_path))
    clean_env.setenv("REA_PLUGIN_MODULES", "badplug")
    registry = load()
    broken = [b for b in registry.broken if b.name == "badplug"]
    assert broken and "has no tools() function" in broken[0].error
    assert "binary_overview" in registry.tools  # the other plugins' tools are all there


def test_distribution_versions_are_kept_and_a_changed_path_looks_them_up_again(tmp_path: Path) -> None:
    """Provider descriptors name their engines' versions: a later start reads them from the analysis cache without
    importing importlib.metadata, and a directory added to sys.path (an install) is a miss."""
    code = """
import sys
sys.path[:0] = [p for p in {extra!r} if p]
from rea.distributions import distribution_version
found = [distribution_version("msgspec"), distribution_version("no-such-distribution-here")]
print(json.dumps({{"found": found, "metadata": "importlib.metadata" in sys.modules}}))
"""
    cache = tmp_path / "cache"
    first = _probe(code.format(extra=[""]), cache)
    second = _probe(code.format(extra=[""]), cache)
    assert first["found"] == second["found"] and first["found"][0] == msgspec.__version__ and first["found"][1] is None
    assert first["metadata"] and not second["metadata"]
    added = tmp_path / "site"
    added.mkdir()
    assert _probe(code.format(extra=[str(added)]), cache)["metadata"]
