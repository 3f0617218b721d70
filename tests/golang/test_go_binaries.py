"""inspect_go_binary on a program built here with Debian's Go, through the MCP SDK client, and the native
provider naming a stripped Go binary's procedures from its pclntab."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import gofixtures
import msgspec
import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from tests.mcp.harness import call_structured
from tests.mcp.harness import connect


def _sums(go_sum: Path) -> dict[str, str]:
    """module@version -> h1 hash of its content (not of its go.mod), as go.sum records them."""
    out = {}
    for line in go_sum.read_text().splitlines():
        module, version, digest = line.split()
        if not version.endswith("/go.mod"):
            out[f"{module}@{version}"] = digest
    return out


def test_build_information_and_function_table_through_the_sdk_client(go_build: dict[str, Path]) -> None:
    sums = _sums(go_build["go.sum"])

    async def main() -> dict[str, dict[str, Any]]:
        answers = {}
        async with connect() as client:
            for kind in ("elf", "stripped", "pe", "macho"):
                record = await call_structured(
                    client, "inspect_go_binary", {"path": str(go_build[kind]), "pattern": "main.", "limit": 20}
                )
                answers[kind] = record["normalized_result"]
        return answers

    answers = anyio.run(main)
    for kind, result in answers.items():
        assert result["format"] == {"pe": "pe", "macho": "mach-o"}.get(kind, "elf"), kind
        build = result["build"]
        assert build["go_version"].startswith("go1."), kind
        assert build["path"] == "example.com/app" and build["main"]["path"] == "example.com/app"
        deps = {d["path"]: d for d in build["deps"]["items"]}
        # The proxy-served dependency: the version the go.mod requires and the hash go.sum recorded.
        greet = deps["example.com/greet"]
        assert greet["version"] == gofixtures.GREET_VERSION
        assert greet["sum"] == sums[f"example.com/greet@{gofixtures.GREET_VERSION}"]
        # The replaced one: its required version and the folder the replace directive names.
        assert deps["example.com/local"]["replaced_by"]["path"] == "../local"
        settings = {s["key"]: s["value"] for s in build["settings"]}
        assert settings["GOOS"] == {"pe": "windows", "macho": "darwin"}.get(kind, "linux")
        if kind in ("stripped", "pe"):
            assert settings["-ldflags"] == "-s -w"
        table = result["function_table"]
        names = {f["name"]: f for f in table["functions"]["items"]}
        assert {"main.main", "main.computeAnswer"} <= set(names), kind
        answer = names["main.computeAnswer"]
        assert int(answer["end"], 16) - int(answer["start"], 16) == answer["size"] > 0
        assert table["function_count"] > 1000 and table["layout"] in ("1.18", "1.20")
    # The same program's functions lie at the same addresses with and without symbols.
    assert (
        answers["elf"]["function_table"]["functions"]["items"]
        == answers["stripped"]["function_table"]["functions"]["items"]
    )


@pytest.mark.parametrize("kind", ["stripped", "pe"])
def test_stripped_go_binary_procedures_are_named_from_pclntab(
    go_build: dict[str, Path], rea_session: Session, kind: str
) -> None:
    call_tool(rea_session, "open_binary", {"path": str(go_build[kind]), "provider_id": "native"})
    found = call_tool(rea_session, "search_procedures", {"pattern": "main.computeAnswer"}).evidence
    assert found is not None
    (proc,) = [p for p in found.normalized_result["procedures"] if p["name"] == "main.computeAnswer"]
    assert proc["name_source"] == "pclntab"
    listing = call_tool(rea_session, "inspect_go_binary", {"pattern": "main.computeAnswer"}).evidence
    assert listing is not None
    (row,) = msgspec.to_builtins(listing.normalized_result)["function_table"]["functions"]["items"]
    assert int(proc["address"], 16) == int(row["start"], 16)


def test_not_a_go_binary_is_a_typed_error(rea_session: Session, tmp_path: Path) -> None:
    import shutil

    plain = tmp_path / "true"
    shutil.copy(shutil.which("true") or "/bin/true", plain)
    with pytest.raises(ReaError) as info:
        call_tool(rea_session, "inspect_go_binary", {"path": str(plain)})
    assert info.value.code == "unsupported_target"
