"""Trails that do not stop silently: bounds named where they stop a walk, callbacks as address-taken edges.

tests/fixtures/trails/trails.c is built in the session with gcc -O2 (with symbols and stripped); every expected
address comes from nm and objdump of the build with symbols (strip moves no code).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of

SOURCE = Path(__file__).resolve().parents[1] / "fixtures" / "trails" / "trails.c"
HOPS = ("main", "hop1", "hop2", "hop3", "hop4", "hop5", "hop6")  # then pthread_create: 7 calls


@dataclass(frozen=True)
class Build:
    symbols: Path
    stripped: Path
    nm: dict[str, str]  # function or data name -> address (0x hex)
    taken_in_main: str  # the instruction in main taking create_ext's address


def _objdump_site(binary: Path, function: str, target: str) -> str:
    """The address of the instruction in ``function`` that names ``<target>`` without calling it (objdump)."""
    text = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", str(binary)], check=True, capture_output=True, text=True
    ).stdout
    body = text.split(f"<{function}>:\n", 1)[1].split("\n\n", 1)[0]
    for line in body.splitlines():
        if f"<{target}>" in line and "call" not in line:
            return hex(int(line.split(":", 1)[0].strip(), 16))
    raise AssertionError(f"objdump shows no reference to {target} in {function}")


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    if not (shutil.which("gcc") and shutil.which("nm") and shutil.which("objdump") and shutil.which("strip")):
        pytest.skip("gcc, nm, objdump and strip are needed to build the trails fixture")
    out = tmp_path_factory.mktemp("trails")
    symbols, stripped = out / "trails", out / "trails.stripped"
    subprocess.run(["gcc", "-O2", "-o", str(symbols), str(SOURCE), "-lpthread"], check=True)
    subprocess.run(["strip", "-o", str(stripped), str(symbols)], check=True)
    nm = {}
    for line in subprocess.run(["nm", str(symbols)], check=True, capture_output=True, text=True).stdout.splitlines():
        m = re.fullmatch(r"([0-9a-f]+) [tTdDrR] (\w+)", line)
        if m:
            nm[m.group(2)] = hex(int(m.group(1), 16))
    return Build(symbols, stripped, nm, _objdump_site(symbols, "main", "create_ext"))


@pytest.fixture(scope="module")
def sessions(rea_registry: Registry, build: Build) -> Iterator[dict[tuple[str, bool], Session]]:
    opened: dict[tuple[str, bool], Session] = {}
    for provider in ("native", "radare2"):
        for stripped in (False, True):
            session = Session(rea_registry)
            path = build.stripped if stripped else build.symbols
            result_of(session, "open_binary", {"path": str(path), "provider_id": provider})
            opened[(provider, stripped)] = session
    yield opened
    for session in opened.values():
        session.close()


CASES = [
    pytest.param(p, s, id=f"{p}-{'stripped' if s else 'symbols'}") for p in ("native", "radare2") for s in (False, True)
]


@pytest.mark.parametrize(("provider", "stripped"), CASES)
def test_a_depth_bound_says_it_stopped_the_walk(
    sessions: dict[tuple[str, bool], Session], build: Build, provider: str, stripped: bool
) -> None:
    session = sessions[(provider, stripped)]
    short = result_of(session, "trace_call_path", {"start": "main", "goal": "pthread_create"})
    assert short["reached"] is False and short["truncated"] is True
    (stop,) = short["stopped_by"]
    # Depth 4 reaches hop4 (main -> hop1 -> hop2 -> hop3 -> hop4), whose callees were left unwalked.
    assert stop["bound"] == "max_depth" and stop["limit"] == 4
    assert [a["address"] for a in stop["at"]] == [build.nm["hop4"]]
    deep = result_of(session, "trace_call_path", {"start": "main", "goal": "pthread_create", "max_depth": 8})
    assert deep["reached"] is True and deep["truncated"] is False and deep["stopped_by"] == []
    (path,) = deep["paths"]
    assert [n["address"] for n in path["nodes"][:-1]] == [build.nm[h] for h in HOPS]
    assert path["nodes"][-1]["name"] == "pthread_create" and {h["edge"] for h in path["hops"]} == {"call"}


@pytest.mark.parametrize(("provider", "stripped"), CASES)
def test_a_callback_passed_to_a_call_is_an_address_taken_edge(
    sessions: dict[tuple[str, bool], Session], build: Build, provider: str, stripped: bool
) -> None:
    session = sessions[(provider, stripped)]
    target = build.nm["create_ext"]
    for args in ({"start": "main", "goal": target}, {"start": target, "goal": "main", "direction": "backward"}):
        out = result_of(session, "trace_call_path", args)
        assert out["reached"] is True, args
        (path,) = out["paths"]
        assert [n["address"] for n in path["nodes"]] == [build.nm["main"], target]
        assert path["hops"] == [
            {"from": build.nm["main"], "to": target, "edge": "address-taken", "reference_sites": [build.taken_in_main]}
        ]
    # Without address-taken edges nothing calls create_ext: the old dead end, now a choice.
    off = result_of(
        session, "trace_call_path", {"start": "main", "goal": target, "address_taken": False, "max_depth": 8}
    )
    assert off["reached"] is False and off["truncated"] is False


def test_the_call_graph_names_the_depth_that_cut_it(sessions: dict[tuple[str, bool], Session], build: Build) -> None:
    session = sessions[("native", False)]
    cut = result_of(session, "get_call_graph", {"address": "hop1", "depth": 2})
    assert cut["truncated"] is True
    (stop,) = cut["stopped_by"]
    assert stop["bound"] == "depth" and stop["at"] == [build.nm["hop3"]]
    whole = result_of(session, "get_call_graph", {"address": "hop5", "depth": 2})
    assert whole["truncated"] is False and whole["stopped_by"] == []


ENTITIES = 4  # entity_table in trails.c: {"TRAILS_amp_entity", "&quot;", "TRAILS_lt_entity", "TRAILS_gt_entity"}


@pytest.mark.parametrize(("provider", "stripped"), CASES)
def test_a_string_in_a_pointer_array_reaches_the_code_indexing_it(
    sessions: dict[tuple[str, bool], Session], build: Build, provider: str, stripped: bool
) -> None:
    session = sessions[(provider, stripped)]
    base, lookup = build.nm["entity_table"], build.nm["entity_lookup"]
    slot = hex(int(base, 16) + 8)
    out = result_of(session, "trace_feature", {"query": "&quot;", "case_sensitive": True})
    (string,) = [s for s in out["strings"] if s["value"] == "&quot;"]
    # The string's only reference is its slot; the step back to the base reaches entity_lookup.
    assert {"from": slot, "procedure": None} in string["referenced_from"]
    (step,) = [r for r in string["referenced_from"] if r.get("via") == "array-base"]
    assert step["procedure"] == lookup and step["base"] == base and step["slot"] == slot and step["index"] == 1
    assert step["from"] == _objdump_site(build.symbols, "entity_lookup", "entity_table")
    assert lookup in [p["address"] for p in out["procedures"]]
    assert [build.nm["main"], lookup] in [[n["address"] for n in path] for path in out["call_paths"]]

    xrefs = result_of(session, "xrefs", {"address": string["address"]})
    assert [r["from"] for r in xrefs["references"]] == [slot]
    assert xrefs["through_arrays"] == [
        {"from": step["from"], "procedure": lookup, "via": "array-base", "slot": slot, "base": base, "index": 1}
    ]

    at_base = result_of(session, "inspect_native_data_type", {"address": base})
    array = at_base["array"]
    assert at_base["type"]["kind"] == "pointer" and array["kind"] == "array" and array["base"] == base
    assert array["element_size"] == 8 and array["count"] == ENTITIES and array["size"] == 8 * ENTITIES
    assert array["index"] == 0 and [r["procedure"] for r in array["indexed_by"]] == [lookup]
    inside = result_of(session, "inspect_native_data_type", {"address": slot})
    assert inside["type"]["kind"] == "pointer" and inside["array"]["base"] == base and inside["array"]["index"] == 1


def test_the_trails_on_angr(rea_registry: Registry, build: Build) -> None:
    """One session over angr: the depth bound named, the callback edge, the array's indexing code."""
    if importlib.util.find_spec("angr") is None:
        pytest.skip("angr is not installed")
    session = Session(rea_registry)
    try:
        result_of(session, "open_binary", {"path": str(build.symbols), "provider_id": "angr"})
        short = result_of(session, "trace_call_path", {"start": "main", "goal": "pthread_create"})
        assert short["truncated"] is True and short["stopped_by"][0]["bound"] == "max_depth"
        taken = result_of(session, "trace_call_path", {"start": "main", "goal": "create_ext"})
        assert taken["paths"][0]["hops"] == [
            {
                "from": build.nm["main"],
                "to": build.nm["create_ext"],
                "edge": "address-taken",
                "reference_sites": [build.taken_in_main],
            }
        ]
        out = result_of(session, "trace_feature", {"query": "&quot;", "case_sensitive": True})
        steps = [r for s in out["strings"] for r in s["referenced_from"] if r.get("via") == "array-base"]
        assert [(r["procedure"], r["index"]) for r in steps] == [(build.nm["entity_lookup"], 1)]
    finally:
        session.close()


@pytest.fixture(scope="module")
def arm64(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    gcc, nm = shutil.which("aarch64-linux-gnu-gcc"), shutil.which("aarch64-linux-gnu-nm")
    objdump = shutil.which("aarch64-linux-gnu-objdump")
    if not gcc or not nm or not objdump:
        pytest.skip("aarch64-linux-gnu-gcc, -nm and -objdump are needed for the arm64 build")
    out = tmp_path_factory.mktemp("trails-arm64") / "trails"
    subprocess.run([gcc, "-O2", "-o", str(out), str(SOURCE), "-lpthread"], check=True)
    names = {}
    for line in subprocess.run([nm, str(out)], check=True, capture_output=True, text=True).stdout.splitlines():
        m = re.fullmatch(r"([0-9a-f]+) [tTdDrR] (\w+)", line)
        if m:
            names[m.group(2)] = hex(int(m.group(1), 16))
    # The add completing main's adrp pair for create_ext carries the low 12 bits of its address.
    text = subprocess.run(
        [objdump, "-d", "--no-show-raw-insn", str(out)], check=True, capture_output=True, text=True
    ).stdout
    body = text.split("<main>:\n", 1)[1].split("\n\n", 1)[0]
    low = hex(int(names["create_ext"], 16) & 0xFFF)
    site = [
        hex(int(line.split(":")[0], 16))
        for line in body.splitlines()
        if "\tadd\t" in line and line.rstrip().endswith(f"#{low}")
    ]
    return {"path": out, "nm": names, "site": site}


@pytest.mark.parametrize("provider", ["native", "radare2"])
def test_the_trails_on_arm64(rea_registry: Registry, arm64: dict[str, Any], provider: str) -> None:
    """adrp+add takes create_ext's address; adrp+add takes entity_table's base."""
    nm = arm64["nm"]
    session = Session(rea_registry)
    try:
        result_of(session, "open_binary", {"path": str(arm64["path"]), "provider_id": provider})
        short = result_of(session, "trace_call_path", {"start": "main", "goal": "pthread_create"})
        assert short["truncated"] is True and short["stopped_by"][0]["at"][0]["address"] == nm["hop4"]
        taken = result_of(session, "trace_call_path", {"start": "main", "goal": "create_ext"})
        (hop,) = taken["paths"][0]["hops"]
        assert (hop["from"], hop["to"], hop["edge"]) == (nm["main"], nm["create_ext"], "address-taken")
        assert hop["reference_sites"] == arm64["site"]
        out = result_of(session, "trace_feature", {"query": "&quot;", "case_sensitive": True})
        steps = [r for s in out["strings"] for r in s["referenced_from"] if r.get("via") == "array-base"]
        expected = [(nm["entity_lookup"], nm["entity_table"], 1)]
        assert [(r["procedure"], r["base"], r["index"]) for r in steps] == expected
    finally:
        session.close()
