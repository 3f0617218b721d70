"""The native provider's decompiler (flatline, Ghidra's C++ decompiler) through the real tools.

Fixtures are compiled in the session (gcc -O2, aarch64 and mingw cross compilers). Tests that need flatline skip
with the reason where it cannot run (Python < 3.13); the unavailable path is tested where it is the real one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tests.fixtures.native.native_fixtures as nf
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from rea_plugins.native import decompile
from tests import toolchains
from tests.native.test_native_progress import functions_source

ENGINE = decompile.engine()
needs_flatline = pytest.mark.skipif(not ENGINE.available, reason=f"native's decompiler cannot run: {ENGINE.reason}")

STRUCTS_C = """
int puts(const char *s);
struct point { int x; int y; const char *name; };
__attribute__((noinline)) static int mix(int a, int b) { return a * 31 + b; }
__attribute__((noinline)) int use_point(const struct point *p) { puts(p->name); return p->x + mix(p->y, p->x); }
int main(int argc, char **argv) { struct point p = {argc, 2, argv[0]}; return use_point(&p); }
"""
# One function of thousands of branches: Ghidra's decompiler needs far more than a second for it.
HEAVY_STATEMENTS = 3000


def _heavy_c() -> str:
    lines = ["int sink(int);", "__attribute__((noinline)) int heavy(int *a, int n) {", "  int s = n;"]
    for i in range(HEAVY_STATEMENTS):
        lines.append(f"  if (a[{i % 97}] == {i}) s += sink(s ^ {i}); else s -= a[(s + {i}) & 63];")
    lines += ["  return s;", "}", "__attribute__((noinline)) int sink(int x) { return x * 3; }"]
    lines += ["int main(int c, char **v) { int a[100] = {0}; (void)v; return heavy(a, c) + sink(c); }"]
    return "\n".join(lines) + "\n"


def _gcc(tmp: Path, name: str, source: str) -> Path:
    gcc = toolchains.require("gcc")
    (tmp / f"{name}.c").write_text(source)
    out = tmp / name
    subprocess.run([gcc, "-O2", "-o", str(out), str(tmp / f"{name}.c")], check=True, capture_output=True, timeout=300)
    return out


@pytest.fixture(scope="module")
def structs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _gcc(tmp_path_factory.mktemp("decompile"), "structs", STRUCTS_C)


@pytest.fixture(scope="module")
def heavy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _gcc(tmp_path_factory.mktemp("decompile"), "heavy", _heavy_c())


@pytest.fixture
def opened(rea_registry: Registry) -> Iterator[Any]:
    sessions: list[Session] = []

    def open_(path: str) -> Session:
        session = Session(rea_registry)
        sessions.append(session)
        result_of(session, "open_binary", {"path": path, "provider_id": "native"})
        return session

    yield open_
    for s in sessions:
        s.close()


def _code(session: Session, procedure: str) -> str:
    out = result_of(session, "procedure_pseudo_code", {"procedure": procedure})
    assert out["language"] == "c" and out["decompiler"].startswith("ghidra (flatline)")
    text: str = out["text"]
    return text


@needs_flatline
def test_x86_64_elf_names_callees_imports_and_strings(opened: Any, native_fixtures: Any) -> None:
    session = opened(native_fixtures.get("elf-x64").path)
    main = _code(session, "main")
    for callee in ("greet", "compute_checksum", "dispatch", "wide_len", "printf"):
        assert f"{callee}(" in main, main
    assert '"checksum input"' in main and '"checksum=%u\\n"' in main, main
    assert "func_0x" not in main and "Ram0000" not in main, main
    greet = _code(session, "greet")
    assert 'puts("REA_FIXTURE_GREETING")' in greet, greet
    assert greet.splitlines()[0].startswith("void greet("), greet
    assert "strlen(" in _code(session, "compute_checksum")


@needs_flatline
def test_aarch64_elf_decompiles_with_names(opened: Any, native_fixtures: Any) -> None:
    session = opened(native_fixtures.get("elf-arm64").path)
    assert 'puts("REA_FIXTURE_GREETING")' in _code(session, "greet")
    main = _code(session, "main")
    assert "greet(" in main and "compute_checksum(" in main, main
    assert 'wide_len(u"REA_WIDE_MARKER")' in main, main  # a UTF-16 string is C's u"" literal


@needs_flatline
def test_pe_x64_uses_the_windows_convention_and_names_imports(opened: Any, native_fixtures: Any) -> None:
    assert decompile.LANGUAGES[("x86_64", "pe")] == ("x86:LE:64:default", "windows")
    session = opened(native_fixtures.get("pe-x64-exe").path)
    greet = _code(session, "greet")
    assert 'puts("REA_FIXTURE_GREETING")' in greet, greet
    assert "compute_checksum(" in _code(session, "main")


@needs_flatline
@pytest.mark.parametrize("fixture_id", ["macho-x64", "macho-arm64", "elf-x64-so", "pe-x64-dll", "elf-x64-stripped"])
def test_every_format_decompiles_with_import_and_string_names(
    opened: Any, native_fixtures: Any, fixture_id: str
) -> None:
    fixture = native_fixtures.get(fixture_id)
    session = opened(fixture.path)
    if fixture.source == "library":
        text = _code(session, fixture.sym("rea_lib_describe"))
        assert f'{fixture.sym("puts")}("REA_LIBRARY_BANNER")' in text, text
    elif fixture.stripped:  # no symbol names the function: the one that prints the greeting is found by its text
        procs = result_of(session, "list_procedures", {"limit": 200})["procedures"]
        texts = [_code(session, p["address"]) for p in procs if p["kind"] == "local"]
        assert any('puts("REA_FIXTURE_GREETING")' in t for t in texts), texts
    else:
        text = _code(session, fixture.sym("greet"))
        assert f'{fixture.sym("puts")}("REA_FIXTURE_GREETING")' in text, text


@needs_flatline
def test_a_rename_changes_the_c(opened: Any, native_fixtures: Any, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("REA_ANNOTATIONS_DIR", str(tmp_path / "notes"))
    session = opened(native_fixtures.get("elf-x64").path)
    greet = result_of(session, "procedure_address", {"procedure": "greet"})["address"]
    result_of(session, "set_address_name", {"address": greet, "name": "say_hello"})
    main = _code(session, "main")
    assert "say_hello(" in main and "greet(" not in main, main
    assert _code(session, "say_hello").splitlines()[0].startswith("void say_hello("), "selected by the user name"


GLOBALS_C = """
int printf(const char *fmt, ...);
int counter;
__attribute__((noinline)) int bump(int k) { counter += k; printf("k=%d\\n", k); return counter; }
int main(int argc, char **argv) { (void)argv; return bump(argc) + counter; }
"""


@needs_flatline
def test_a_name_given_to_unnamed_data_reads_in_the_c(opened: Any, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("REA_ANNOTATIONS_DIR", str(tmp_path / "notes"))
    gcc = toolchains.require("gcc")
    (tmp_path / "globals.c").write_text(GLOBALS_C)
    binary = tmp_path / "globals"
    subprocess.run([gcc, "-O2", "-s", "-o", str(binary), str(tmp_path / "globals.c")], check=True, timeout=300)
    session = opened(str(binary))
    procs = result_of(session, "list_procedures", {"limit": 100})["procedures"]
    bump = next(p["address"] for p in procs if p["kind"] == "local" and '"k=%d\\n"' in _code(session, p["address"]))
    text = _code(session, bump)
    global_ = re.search(r"\bDAT_([0-9a-f]{8})\b", text)
    assert global_ is not None, text
    result_of(session, "set_address_name", {"address": hex(int(global_.group(1), 16)), "name": "hits"})
    renamed = _code(session, bump)
    assert "hits" in renamed and global_.group(0) not in renamed, renamed


@needs_flatline
def test_a_struct_prototype_reads_as_fields(opened: Any, structs: Path, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("REA_ANNOTATIONS_DIR", str(tmp_path / "notes"))
    session = opened(str(structs))
    before = _code(session, "use_point")
    assert "param_1" in before and "->" not in before, before
    result_of(session, "declare_c_types", {"declarations": "struct point { int x; int y; const char *name; };"})
    result_of(
        session,
        "set_function_prototype",
        {"procedure": "use_point", "prototype": "int use_point(const struct point *p)"},
    )
    after = _code(session, "use_point")
    assert after.splitlines()[0] == "int use_point(const struct point *p)", after
    assert "puts(p->name)" in after and "p->x" in after and "p->y" in after, after
    assert "param_1" not in after and "(undefined" not in after.split("{", 1)[1], after


@needs_flatline
def test_a_pathological_function_is_a_typed_error_and_the_next_call_works(
    opened: Any, heavy: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("REA_NATIVE_DECOMPILE_TIMEOUT_S", "2")
    session = opened(str(heavy))
    start = time.monotonic()
    with pytest.raises(ReaError) as info:
        call_tool(session, "procedure_pseudo_code", {"procedure": "heavy"})
    assert time.monotonic() - start < 10
    err = info.value
    assert err.code == "provider_timeout", err
    assert err.details["name"] == "heavy" and err.details["procedure"].startswith("0x"), err.details
    assert "REA_NATIVE_DECOMPILE_TIMEOUT_S" in err.remediation
    assert "sink(" in _code(session, "main")


@needs_flatline
def test_the_worker_killed_mid_call_is_a_typed_error_within_a_second(
    opened: Any, heavy: Path, rea_registry: Registry
) -> None:
    session = opened(str(heavy))
    outcome: dict[str, Any] = {}

    def call() -> None:
        try:
            call_tool(session, "procedure_pseudo_code", {"procedure": "heavy"})
        except ReaError as exc:
            outcome["error"] = exc
        outcome["at"] = time.monotonic()

    thread = threading.Thread(target=call)
    thread.start()
    pool = rea_registry.providers["native"].pool()  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    pid = None
    while time.monotonic() < deadline and pid is None:
        busy = [s for s in pool.slots if s.busy.locked() and s.channel.pid and s.loaded[1]]
        pid = busy[0].channel.pid if busy else None
        time.sleep(0.05)
    assert pid is not None, "no decompile worker took the call"
    time.sleep(0.5)  # inside the decompile
    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    thread.join(30)
    err = outcome.get("error")
    assert isinstance(err, ReaError) and err.code == "provider_unavailable", outcome
    assert outcome["at"] - killed < 1.0, outcome["at"] - killed
    assert "SIGKILL" in str(err.details.get("signal", "")) or err.details.get("signal"), err.details
    assert "sink(" in _code(session, "main")  # the next call starts a fresh worker


@needs_flatline
def test_batch_decompile_keeps_both_workers_busy(opened: Any, tmp_path: Path, rea_registry: Registry) -> None:
    names = [f"work{f}" for f in range(6)]
    session = opened(str(_gcc(tmp_path, "many", functions_source(len(names), 30))))
    pool = rea_registry.providers["native"].pool()  # type: ignore[attr-defined]
    both = threading.Event()
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            if all(s.busy.locked() for s in pool.slots):
                both.set()
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        out = call_tool(session, "batch_decompile", {"addresses": names}).evidence
    finally:
        stop.set()
        watcher.join()
    assert out is not None
    result = out.normalized_result
    assert result["ok"] == len(names), result
    assert [i["procedure"] for i in result["items"]] == names
    assert both.is_set(), "the two decompile workers never ran at once"


@needs_flatline
def test_a_long_function_is_paged_by_lines_with_the_total(opened: Any, native_fixtures: Any) -> None:
    session = opened(native_fixtures.get("elf-x64").path)
    whole = result_of(session, "procedure_pseudo_code", {"procedure": "main"})
    assert "lines" not in whole  # the whole text in one page
    total = len(whole["text"].split("\n"))
    pages, offset = [], 0
    while offset is not None:
        page = result_of(session, "procedure_pseudo_code", {"procedure": "main", "offset": offset, "limit": 5})
        assert page["lines"]["total"] == total and page["lines"]["offset"] == offset
        pages.append(page["text"])
        offset = page["lines"]["next_offset"]
    assert len(pages) == -(-total // 5) and "\n".join(pages) == whole["text"]


@needs_flatline
def test_decompile_at_an_address_no_procedure_starts_at(opened: Any, native_fixtures: Any) -> None:
    session = opened(native_fixtures.get("elf-x64").path)
    rows = result_of(session, "read_function_instructions", {"procedure": "greet", "limit": 4})["instructions"]
    inside = rows[1]["address"]  # past greet's first instruction: no procedure starts there
    out = call_tool(session, "decompile_at", {"address": inside}).evidence
    assert out is not None
    assert '"REA_FIXTURE_GREETING"' in out.normalized_result["text"], out.normalized_result["text"]
    assert any("decompiled as one from there" in x for x in out.limitations)
    start = result_of(session, "decompile_at", {"address": rows[0]["address"]})
    assert start["name"] == "greet" and start["text"] == _code(session, "greet")
    with pytest.raises(ReaError) as info:
        call_tool(session, "decompile_at", {"address": "0x1"})
    assert info.value.code == "invalid_request"


@needs_flatline
def test_data_flow_traces_a_call_argument_to_its_source(opened: Any, native_fixtures: Any, structs: Path) -> None:
    session = opened(native_fixtures.get("elf-x64").path)
    rows = result_of(session, "read_function_instructions", {"procedure": "main", "limit": 200})["instructions"]
    site = next(r["address"] for r in rows if r["text"].startswith("call") and "compute_checksum" in r["symbolized"])
    flow = result_of(session, "procedure_data_flow", {"procedure": "main", "site": site})
    assert flow["arguments"] >= 1 and any('"checksum input"' in s for s in flow["sources"]), flow
    # A value a call returns: the CALL's callee spec is the decompiler's pointer, shown by its space alone (the
    # answer and its Evidence id are the same in every run).
    flows = []
    for r in (r for r in rows if r["text"].startswith("call")):
        for a in (0, 1):
            with contextlib.suppress(ReaError):  # a call without that argument
                flows.append(
                    result_of(
                        session, "procedure_data_flow", {"procedure": "main", "site": r["address"], "argument": a}
                    )
                )
    calls = [s for f in flows for s in f["steps"] if s["opcode"] == "CALL"]
    assert calls and all(s["inputs"][0] == "fspec" for s in calls), flows
    assert not re.search(r"\b(fspec|iop):0x", json.dumps(flows)), flows
    # Through memory: mix(p->y, p->x)'s second argument is loaded from the function's first input.
    other = opened(str(structs))
    rows = result_of(other, "read_function_instructions", {"procedure": "use_point", "limit": 50})["instructions"]
    site = next(r["address"] for r in rows if r["text"].startswith("call") and "mix" in r["symbolized"])
    flow = result_of(other, "procedure_data_flow", {"procedure": "use_point", "site": site, "argument": 1})
    assert [s["opcode"] for s in flow["steps"]][:1] == ["LOAD"] and flow["sources"] == ["RDI (input)"], flow
    with pytest.raises(ReaError) as info:
        call_tool(other, "procedure_data_flow", {"procedure": "use_point", "site": rows[0]["address"]})
    assert info.value.code == "invalid_request"


@needs_flatline
def test_results_are_cached_by_function(opened: Any, native_fixtures: Any) -> None:
    session = opened(native_fixtures.get("elf-x64").path)
    first = _code(session, "dispatch")
    again = opened(native_fixtures.get("elf-x64").path)  # another session: the analysis cache answers
    start = time.monotonic()
    assert _code(again, "dispatch") == first
    assert time.monotonic() - start < 2


def test_the_decompiler_is_a_reported_feature(rea_registry: Registry) -> None:
    avail = rea_registry.providers["native"].availability()
    feature = {f.name: f for f in avail.features}["decompiler"]
    assert (feature.status == "available") is ENGINE.available
    if not ENGINE.available:
        assert "scripts/install" in (feature.remediation or "") and "3.13" in (feature.remediation or "")


def test_without_the_engine_pseudo_code_is_provider_unavailable(
    opened: Any, native_fixtures: Any, monkeypatch: Any
) -> None:
    # Where flatline runs, its absence is what this interpreter would see without it (Python < 3.13).
    if ENGINE.available:
        missing = decompile.Engine(available=False, reason="the decompiler needs Python >= 3.13; this server runs 3.11")
        monkeypatch.setattr(decompile, "engine", lambda: missing)
    session = opened(native_fixtures.get("elf-x64").path)
    with pytest.raises(ReaError) as info:
        call_tool(session, "procedure_pseudo_code", {"procedure": "main"})
    err = info.value
    assert err.code == "provider_unavailable", err
    assert "bash scripts/install" in err.remediation and "pip install rea" not in err.remediation
    assert err.details["component"] == "decompiler"


def test_languages_cover_every_architecture_native_opens() -> None:
    from rea_plugins.native.provider import DESCRIPTOR

    for arch in DESCRIPTOR.architectures:
        assert (arch, "") in decompile.LANGUAGES, arch
    assert nf.PROGRAM_IMPORTS  # the facts the tests above read are the fixture's
