"""Concurrent calls on one session are safe (issue 24, item 8): many threads, one native session."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of


def _nm_functions(path: str) -> set[str]:
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    return {line.split()[2] for line in out.splitlines() if len(line.split()) == 3 and line.split()[1] in "Tt"}


def test_240_concurrent_reads_on_one_cold_session_all_succeed(
    native: Session, rea_registry: Registry, native_fixtures: Any
) -> None:
    path = native_fixtures.get("elf-x64").path
    # The truth comes from nm and a separate session, so the racing session starts cold (no index built yet).
    reference = Session(rea_registry)
    try:
        result_of(reference, "open_binary", {"path": path, "provider_id": "native"})
        first = result_of(reference, "list_procedures", {"limit": 500})
        address = next(p["address"] for p in first["procedures"] if p["name"] == "main")
        info = result_of(reference, "procedure_info", {"procedure": address})
    finally:
        reference.close()
    names = {p["name"] for p in first["procedures"]}
    assert "main" in names and names & _nm_functions(path)

    def one(i: int) -> tuple[str, Any]:
        try:
            if i % 2:
                return "ok", result_of(native, "procedure_info", {"procedure": address})
            return "ok", result_of(native, "list_procedures", {"limit": 500})
        except ReaError as exc:
            return exc.code, exc.message

    with ThreadPoolExecutor(max_workers=24) as pool:
        outcomes = list(pool.map(one, range(240)))
    assert [o for o in outcomes if o[0] != "ok"] == []
    for i, (_, out) in enumerate(outcomes):
        if i % 2:
            assert out == info
        else:
            assert {p["name"] for p in out["procedures"]} == names


def test_concurrent_requests_over_a_real_mcp_client(native_fixtures: Any) -> None:
    import anyio

    from tests.mcp.harness import connect

    path = native_fixtures.get("elf-x64").path
    results: list[Any] = []

    async def main() -> None:
        async with connect() as client:
            opened = await client.call_tool("open_binary", {"path": path, "provider_id": "native"})
            assert not opened.is_error

            async def one(i: int) -> None:
                name = "procedure_info" if i % 2 else "list_procedures"
                args = {"procedure": "main"} if i % 2 else {"limit": 500}
                results.append((name, await client.call_tool(name, args)))

            async with anyio.create_task_group() as tg:
                for i in range(64):
                    tg.start_soon(one, i)

    anyio.run(main)
    assert len(results) == 64
    errors = [(n, r.content[0].text if r.content else "") for n, r in results if r.is_error]
    assert errors == []
    lists = {
        frozenset(p["name"] for p in r.structured_content["normalized_result"]["procedures"])
        for n, r in results
        if n == "list_procedures"
    }
    assert len(lists) == 1 and "main" in next(iter(lists))


def test_reads_racing_a_reopen_are_typed(native: Session, native_fixtures: Any) -> None:
    """The probe's race: reads while open_binary swaps the client; each read answers or is a typed refusal."""
    path = native_fixtures.get("elf-x64").path

    def read(i: int) -> tuple[str, str]:
        try:
            result_of(native, "list_procedures", {"limit": 50})
            return "ok", ""
        except ReaError as exc:
            return exc.code, exc.message

    def reopen(_: int) -> tuple[str, str]:
        try:
            result_of(native, "open_binary", {"path": path, "provider_id": "native"})
            return "ok", ""
        except ReaError as exc:
            return exc.code, exc.message

    with ThreadPoolExecutor(max_workers=16) as pool:
        futures = [pool.submit(reopen if i % 20 == 0 else read, i) for i in range(240)]
        outcomes = [f.result() for f in futures]
    assert not [o for o in outcomes if o[0] not in ("ok", "cancelled")], outcomes
    assert not [o for o in outcomes if "Error" in o[1]]
    assert sum(o[0] == "ok" for o in outcomes) > 0
