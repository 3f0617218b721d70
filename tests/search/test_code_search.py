"""Search inside code on native, radare2 and angr: bytes, immediates, instructions and YARA rules.

Truth is independent of rea: objdump's listing for instructions and immediates, the file's own bytes
for byte patterns, the yara command-line tool for rules, nm for the procedure a hit lies in.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests import toolchains
from tests.mcp.harness import connect
from tests.search.conftest import CASE_IDS
from tests.search.conftest import CASES
from tests.search.conftest import TARGETS
from tests.search.conftest import Builds
from tests.search.conftest import opened_case

SEARCH_C = r"""
int puts(const char *s);
__attribute__((noinline)) unsigned long long xxh_round(unsigned long long acc, unsigned long long v) {
  acc += v * 0xC2B2AE3D27D4EB4FULL;
  acc = (acc << 31) | (acc >> 33);
  return acc * 0x9E3779B185EBCA87ULL;
}
__attribute__((noinline)) int seeded(int x) { return x * 0x5eed + 0x1234; }
__attribute__((noinline)) int negated(int x) { return x ^ -14; }
__attribute__((noinline)) void banner(void) { puts("REA_SEARCH_BANNER"); }
int main(int argc, char **argv) {
  (void)argv;
  banner();
  return (int)xxh_round((unsigned long long)argc, 7) + seeded(argc) + negated(argc);
}
"""
PRIME = 0x9E3779B185EBCA87
RULES = (
    'rule banner { strings: $text = "REA_SEARCH_BANNER" $prime = { 87 CA EB 85 B1 79 37 9E } condition: any of them }'
)


@pytest.fixture(scope="session")
def search_builds(tmp_path_factory: pytest.TempPathFactory) -> Builds:
    return Builds(tmp_path_factory.mktemp("code-search"), SEARCH_C)


@pytest.fixture(params=CASES, ids=CASE_IDS)
def opened(
    request: pytest.FixtureRequest, rea_registry: Registry, search_builds: Builds
) -> Iterator[tuple[Session, Path, str]]:
    with opened_case(rea_registry, search_builds, request.param) as (session, path):
        yield session, path, request.param[1]


def objdump_lines(path: Path, target: str) -> list[tuple[int, str]]:
    tool = toolchains.require(TARGETS[target][1])
    text = subprocess.run(
        [tool, "-d", "--no-show-raw-insn", str(path)], check=True, capture_output=True, text=True
    ).stdout
    out = []
    for line in text.splitlines():
        m = re.match(r"\s+([0-9a-f]+):\s+(.*)$", line)
        if m:
            out.append((int(m.group(1), 16), m.group(2)))
    return out


def symbols(path: Path) -> list[tuple[int, str]]:
    nm = toolchains.require("nm")
    text = subprocess.run([nm, "-n", str(path)], check=True, capture_output=True, text=True).stdout
    return [
        (int(a, 16), n)
        for a, kind, n in (line.split()[:3] for line in text.splitlines() if len(line.split()) >= 3)
        if kind.lower() == "t"
    ]


def owner(path: Path, address: int) -> str:
    """The function symbol at or before ``address`` (nm -n order)."""
    return [n for a, n in symbols(path) if a <= address][-1].lstrip("_")


def addresses(rows: list[dict[str, Any]]) -> set[int]:
    return {int(r["address"], 16) for r in rows}


def test_search_immediates_finds_the_constant_where_objdump_shows_it(opened: tuple[Session, Path, str]) -> None:
    session, path, target = opened
    value, shown = (0x5EED, "#0x5eed") if target == "elf-arm64" else (PRIME, "$0x9e3779b185ebca87")
    truth = {a for a, text in objdump_lines(path, target) if shown in text}
    assert truth, "the compiler kept the constant as an immediate"
    out = result_of(session, "search_immediates", {"value": hex(value), "where": "code"})
    assert addresses(out["hits"]) == truth
    for hit in out["hits"]:
        assert hit["where"] == "code" and hit["procedure"]["name"].lstrip("_") == owner(path, int(hit["address"], 16))


def test_the_checksum_question_takes_one_small_call(opened: tuple[Session, Path, str]) -> None:
    session, path, target = opened
    result = call_tool(session, "search_immediates", {"value": "0x9e3779b185ebca87"})
    assert result.evidence is not None
    body = msgspec.to_builtins(result.evidence.normalized_result)
    hits = body["hits"]
    assert {h["procedure"]["name"].lstrip("_") for h in hits if "procedure" in h} == {"xxh_round"}
    assert len(json.dumps(body)) < 4096
    if target == "elf-arm64":
        # arm64 builds the constant from four 16-bit pieces (mov, then movk); the hit is the last piece.
        pieces = [
            a
            for a, text in objdump_lines(path, target)
            if re.match(r"mov[kz]?\s+x\d+, #0x(ca87|85eb|79b1|9e37)\b", text)
        ]
        assert len(pieces) == 4 and [h["address"] for h in hits if h["where"] == "code"] == [hex(max(pieces))]


def test_over_mcp_the_whole_answer_is_one_call_under_4_kb(search_builds: Builds) -> None:
    path = search_builds.get("elf-x64")

    async def main() -> None:
        async with connect() as client:
            opened = await client.call_tool("open_binary", {"path": str(path), "provider_id": "native"})
            assert not opened.is_error
            result = await client.call_tool("search_immediates", {"value": "0x9e3779b185ebca87"})
            assert not result.is_error and result.structured_content is not None
            hits = result.structured_content["normalized_result"]["hits"]
            assert {h["procedure"]["name"] for h in hits if "procedure" in h} == {"xxh_round"}
            assert len(json.dumps(result.structured_content)) < 4096

    anyio.run(main)


def test_negative_constants_match_their_twos_complement(opened: tuple[Session, Path, str]) -> None:
    session, path, target = opened
    truth = {a for a, text in objdump_lines(path, target) if "0xfffffff2" in text}
    out = result_of(session, "search_immediates", {"value": "-14", "where": "code"})
    assert truth and addresses(out["hits"]) == truth
    assert {h["procedure"]["name"].lstrip("_") for h in out["hits"]} == {"negated"}


def test_a_range_finds_what_its_values_find(opened: tuple[Session, Path, str]) -> None:
    session, _path, _target = opened
    out = result_of(session, "search_immediates", {"min": 0x5EEC, "max": 0x5EEE, "where": "code"})
    exact = result_of(session, "search_immediates", {"value": 0x5EED, "where": "code"})
    assert addresses(out["hits"]) == addresses(exact["hits"]) and exact["hits"]


def test_search_bytes_finds_every_occurrence_in_the_file(opened: tuple[Session, Path, str]) -> None:
    session, path, _target = opened
    data = path.read_bytes()
    needle = b"REA_SEARCH_BANNER"
    truth = [m.start() for m in re.finditer(re.escape(needle), data)]
    pattern = " ".join(f"{b:02X}" for b in needle[:4]) + " ?? " + " ".join(f"{b:02X}" for b in needle[5:])
    out = result_of(session, "search_bytes", {"pattern": pattern, "scope": "file"})
    assert [h["file_offset"] for h in out["hits"]] == truth and out["total"] == len(truth)
    mapped = result_of(session, "search_bytes", {"pattern": pattern})
    assert [h["file_offset"] for h in mapped["hits"]] == truth
    for hit in mapped["hits"]:
        assert hit["bytes"] == needle.hex()
        found = result_of(session, "read_bytes", {"address": hit["address"], "length": len(needle)})
        assert bytes.fromhex(found["hex"]) == needle


def test_search_instructions_finds_the_calls_objdump_lists(opened: tuple[Session, Path, str]) -> None:
    session, path, target = opened
    call = "bl" if target == "elf-arm64" else "call"
    truth = {a for a, text in objdump_lines(path, target) if text.split()[0] == call and re.search(r"<_?banner>", text)}
    assert truth
    out = result_of(session, "search_instructions", {"pattern": f"^{call}\\b.*banner", "mode": "regex"})
    assert addresses(out["hits"]) == truth
    assert {h["procedure"]["name"].lstrip("_") for h in out["hits"]} == {"main"}


def test_scan_yara_agrees_with_the_yara_tool(opened: tuple[Session, Path, str], tmp_path: Path) -> None:
    session, path, target = opened
    rules = tmp_path / "rules.yar"
    rules.write_text(RULES)
    cli = subprocess.run(
        [toolchains.require("yara"), "-s", str(rules), str(path)], check=True, capture_output=True, text=True
    ).stdout
    truth = sorted((int(off, 16), sid) for off, sid in re.findall(r"^0x([0-9a-f]+):(\$\w+)", cli, re.M))
    out = result_of(session, "scan_yara", {"rules": RULES})
    assert sorted((m["file_offset"], m["string_id"]) for m in out["matches"]) == truth
    assert out["rules_matched"] == (["banner"] if truth else [])
    # Both scopes: the segment scans see no match the file scan does not, and none twice.
    both = result_of(session, "scan_yara", {"rules": RULES, "scope": "both"})
    assert sorted((m["file_offset"], m["string_id"]) for m in both["matches"]) == truth
    for m in out["matches"]:
        if m["string_id"] == "$prime" and target != "elf-arm64":
            assert m["procedure"]["name"].lstrip("_") == "xxh_round"


@pytest.mark.parametrize(
    ("tool", "args", "path"),
    [
        ("search_bytes", {"pattern": "48 8"}, "pattern"),
        ("search_bytes", {"pattern": "?? ??"}, "pattern"),
        ("search_bytes", {"pattern": "zz"}, "pattern"),
        ("search_immediates", {"value": "twelve"}, "value"),
        ("search_immediates", {}, "value"),
        ("search_immediates", {"min": 5, "max": 1}, "min"),
        ("search_instructions", {"pattern": "(a)\\1", "mode": "regex"}, "pattern"),
        ("scan_yara", {"rules": "rule broken { condition: }"}, "rules"),
        ("scan_yara", {"rules": "rule r { condition: true }" + " " * 70_000}, "rules"),
    ],
)
def test_bad_input_is_a_typed_error_naming_the_argument(
    rea_registry: Registry, search_builds: Builds, tool: str, args: dict[str, Any], path: str
) -> None:
    session = Session(rea_registry)
    try:
        result_of(session, "open_binary", {"path": str(search_builds.get("elf-x64")), "provider_id": "native"})
        with pytest.raises(ReaError) as err:
            call_tool(session, tool, args)
        assert err.value.code == "invalid_request"
        assert msgspec.to_builtins(err.value.details)["issues"][0]["path"] == path
    finally:
        session.close()
