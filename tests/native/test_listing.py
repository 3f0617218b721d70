"""Instruction listings as the tools present them: text said once, pages by default, a window around an address.

Truth: objdump's listing of the same compiled fixture.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from rea import evidence as ev_mod
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests import toolchains


@pytest.fixture(params=["native", "radare2"])
def opened(
    request: pytest.FixtureRequest, rea_registry: Registry, native_fixtures: Any
) -> Iterator[tuple[Session, str]]:
    provider = rea_registry.providers.get(request.param)
    if provider is None or provider.availability().status != "available":
        pytest.skip(f"{request.param} is not available here")
    path = native_fixtures.get("elf-x64").path
    session = Session(rea_registry)
    result_of(session, "open_binary", {"path": path, "provider_id": request.param})
    try:
        yield session, path
    finally:
        session.close()


def objdump_starts(path: str, function: str) -> list[int]:
    """Instruction starts objdump lists inside the symbol's extent (nm -S: padding after it is not its code)."""
    symbols = subprocess.run(
        [toolchains.require("nm"), "-S", str(path)], check=True, capture_output=True, text=True
    ).stdout
    start, size = next(
        (int(a, 16), int(n, 16))
        for a, n, _kind, name in (line.split() for line in symbols.splitlines() if len(line.split()) == 4)
        if name == function
    )
    text = subprocess.run(
        [toolchains.require("objdump"), "-d", "--no-show-raw-insn", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    body = text.split(f"<{function}>:\n", 1)[1].split("\n\n", 1)[0]
    starts = [int(m.group(1), 16) for m in re.finditer(r"^\s+([0-9a-f]+):", body, re.M)]
    return [a for a in starts if start <= a < start + size]


def test_rows_say_their_text_once(opened: tuple[Session, str]) -> None:
    session, _ = opened
    rows = result_of(session, "procedure_assembly", {"procedure": "main"})["instructions"]
    assert rows
    for row in rows:
        assert "mnemonic" not in row and "operands" not in row and row["text"]
        assert row.get("symbolized") != row["text"]
        assert all(s.get("name") or s.get("string") for s in row.get("symbols", ()))
    assert any("symbolized" in r for r in rows), "a call or string load is symbolized"
    split = result_of(session, "procedure_assembly", {"procedure": "main", "split_operands": True})["instructions"]
    assert [r["address"] for r in split] == [r["address"] for r in rows]
    assert all(r["text"] == f"{r['mnemonic']} {r['operands']}".strip() for r in split)


def test_a_long_listing_answers_a_page_and_names_the_complete_record(opened: tuple[Session, str]) -> None:
    session, path = opened
    truth = objdump_starts(path, "main")
    page = call_tool(session, "procedure_assembly", {"procedure": "main", "limit": 3}).evidence
    assert page is not None
    body = page.normalized_result
    assert msgspec.to_builtins(body["page"]) == {"offset": 0, "limit": 3, "total": len(truth), "next_offset": 3}
    complete = session.resolve_evidence(ev_mod.retained_reference(body["complete_evidence_id"]))
    assert [int(r["address"], 16) for r in complete.normalized_result["instructions"]] == truth
    assert body["instructions"] == complete.normalized_result["instructions"][:3]
    nxt = result_of(session, "procedure_assembly", {"procedure": "main", "limit": 3, "offset": 3})
    assert nxt["instructions"] == complete.normalized_result["instructions"][3:6]
    whole = call_tool(session, "procedure_assembly", {"procedure": "main"}).evidence
    assert whole is not None and "page" not in whole.normalized_result


def test_a_window_around_an_address(opened: tuple[Session, str]) -> None:
    session, path = opened
    truth = objdump_starts(path, "main")
    middle = truth[len(truth) // 2]
    out = result_of(session, "read_function_instructions", {"address": hex(middle + 1), "before": 2, "after": 3})
    assert out["name"] == "main"
    assert [int(r["address"], 16) for r in out["instructions"]] == truth[len(truth) // 2 - 2 : len(truth) // 2 + 4]
    assert [r.get("at", False) for r in out["instructions"]] == [False, False, True, False, False, False]


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"procedure": "main", "address": "0x1000"},
        {"address": "0x1", "before": 2},
        {"procedure": "main", "before": 2},
    ],
)
def test_listing_arguments_that_do_not_fit_together(opened: tuple[Session, str], args: dict[str, Any]) -> None:
    session, _ = opened
    with pytest.raises(ReaError) as err:
        call_tool(session, "read_function_instructions", args)
    assert err.value.code == "invalid_request"
