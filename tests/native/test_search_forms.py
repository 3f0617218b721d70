"""search_immediates in every operand form, and search_instructions saying what it did (issue 48 item 4).

constants.c holds SHA-256's first round constant, a 64-bit multiplier and a double; built for x86-64 (a lea
displacement, a movabs), AArch64 (mov + movk, adrp + ldr of a constant word) and ARM (movw + movt, or a literal
pool without movt). Each constant is found once per instruction, in the function nm places it in, with its form.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from rea.registry import load
from rea.session import Session
from rea.testing import result_of
from tests import toolchains
from tests.fixtures.native.diff_search_fixtures import constants_build
from tests.mcp.harness import connect

SHA256_K0 = 0x428A2F98
GOLDEN = 0x9E3779B185EBCA87
PI_BITS = 0x400921F9F01B866E  # 3.14159 as an IEEE 754 double
# The form SHA-256's K[0] takes in sha_round0 on each build.
K0_FORM = {"x86_64": "displacement", "arm64": "movk", "arm": "movt", "arm-pool": "literal_pool"}


def functions(path: Path) -> list[tuple[int, str]]:
    """(address, name) of each function symbol, by address (nm, not a tool under test)."""
    nm = toolchains.require("nm")
    out = subprocess.run([nm, "-n", "--defined-only", str(path)], check=True, capture_output=True, text=True).stdout
    return [(int(a, 16), n) for a, kind, n in (line.split()[:3] for line in out.splitlines()) if kind in "tT"]


def owner(path: Path, address: int) -> str:
    return [n for a, n in functions(path) if a <= address][-1]


@pytest.fixture(scope="module")
def sessions() -> Iterator[dict[str, tuple[Session, Path]]]:
    """One session per build, opened on first use and shared by the module's tests."""
    opened: dict[str, tuple[Session, Path]] = {}
    yield opened
    for session, _path in opened.values():
        session.close()


def _open(sessions: dict[str, tuple[Session, Path]], arch: str) -> tuple[Session, Path]:
    if arch not in sessions:
        path = constants_build(arch)
        session = Session(load())
        result_of(session, "open_binary", {"path": str(path), "provider_id": "native"})
        sessions[arch] = (session, path)
    return sessions[arch]


def code_hits(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [h for h in result["hits"] if h["where"] == "code"]


@pytest.mark.parametrize("arch", list(K0_FORM))
def test_each_constant_is_found_once_in_its_form(sessions: dict[str, tuple[Session, Path]], arch: str) -> None:
    session, path = _open(sessions, arch)
    k0 = result_of(session, "search_immediates", {"value": hex(SHA256_K0)})
    (hit,) = code_hits(k0)
    assert hit["form"] == K0_FORM[arch], hit
    assert owner(path, int(hit["address"], 16)) == "sha_round0"
    # One hit per place: no address twice, and the page holds them all.
    addresses = [h.get("address") for h in k0["hits"]]
    assert len(addresses) == len(set(addresses)) and k0["total"] == len(k0["hits"])


# ARM builds a 64-bit product from 32-bit halves: no one instruction holds the constant there.
@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
def test_a_movabs_constant_is_one_hit_not_two(sessions: dict[str, tuple[Session, Path]], arch: str) -> None:
    session, path = _open(sessions, arch)
    result = result_of(session, "search_immediates", {"value": hex(GOLDEN)})
    # Before: the movabs (code) and its own bytes in .text (data) were two hits of one instruction.
    assert result["total"] == 1, result["hits"]
    (hit,) = result["hits"]
    assert hit["where"] == "code" and owner(path, int(hit["address"], 16)) == "golden"
    assert hit["form"] == ("immediate" if arch == "x86_64" else "movk")


# x86-64 loads the double rip-relative from .rodata: a data hit only.
@pytest.mark.parametrize("arch", ["arm64", "arm", "arm-pool"])
def test_a_constant_word_the_code_loads_is_a_literal_pool_hit(
    sessions: dict[str, tuple[Session, Path]], arch: str
) -> None:
    session, path = _open(sessions, arch)
    result = result_of(session, "search_immediates", {"value": hex(PI_BITS)})
    (hit,) = code_hits(result)
    assert hit["form"] == "literal_pool" and owner(path, int(hit["address"], 16)) == "scale_pi"
    # The word itself is data, in its own place: listed too, once.
    assert len([h for h in result["hits"] if h["where"] == "data"]) == 1


def test_a_literal_pattern_in_regex_syntax_runs_as_a_regex_and_says_so(
    sessions: dict[str, tuple[Session, Path]],
) -> None:
    session, path = _open(sessions, "x86_64")
    # A literal search for text that is there: found as text, nothing to say.
    literal = result_of(session, "search_instructions", {"pattern": "[rdi + rsi + 0x428a2f98]"})
    assert literal["total"] == 1 and literal["mode"] == "literal" and "hint" not in literal
    # A regex written in the default literal mode: never a silent zero.
    regex = result_of(session, "search_instructions", {"pattern": r"^lea\s.*0x428a2f98"})
    assert regex["mode"] == "regex" and regex["total"] == 1 and "regex" in regex["hint"]
    assert owner(path, int(regex["hits"][0]["address"], 16)) == "sha_round0"
    # Regex syntax RE2 refuses: zero hits, and the hint says why.
    broken = result_of(session, "search_instructions", {"pattern": r"^lea (\w+"})
    assert broken["total"] == 0 and broken["mode"] == "literal" and "RE2" in broken["hint"]
    # Plain text that is not there: zero, and no hint (nothing in it reads as a regex).
    absent = result_of(session, "search_instructions", {"pattern": "vfmadd231ps"})
    assert absent["total"] == 0 and "hint" not in absent


def test_over_mcp_the_form_and_the_hint_reach_the_client() -> None:
    path = constants_build("x86_64")

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with connect() as client:
            opened = await client.call_tool("open_binary", {"path": str(path), "provider_id": "native"})
            assert opened.is_error is False
            found = await client.call_tool("search_immediates", {"value": hex(SHA256_K0), "where": "code"})
            searched = await client.call_tool("search_instructions", {"pattern": r"^lea\s.*0x428a2f98"})
            assert found.is_error is False and searched.is_error is False
            return found.structured_content["normalized_result"], searched.structured_content["normalized_result"]

    found, searched = anyio.run(main)
    assert [h["form"] for h in found["hits"]] == ["displacement"]
    assert searched["mode"] == "regex" and searched["total"] == 1 and searched["hint"]
