"""Library functions named by FLIRT signatures built from the host's static libraries: a stripped static glibc
program and a stripped MinGW-w64 PE have their runtime's functions named (measured against the unstripped builds'
symbols), the names say where they come from in every listing and reach the decompiler's C, the signatures are
built once with progress and kept, and a missing library is a limitation naming its Debian package."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea.context import CallContext
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests import toolchains
from tests.native import libsig_fixtures as lf


@pytest.fixture(scope="session")
def libsig_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("libsig-cache")


@pytest.fixture
def cache_env(libsig_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REA_CACHE_DIR", str(libsig_cache))
    return libsig_cache


@pytest.fixture(scope="session")
def static_glibc(tmp_path_factory: pytest.TempPathFactory) -> lf.Built:
    gcc = toolchains.require("gcc-static")
    return lf.build(gcc, tmp_path_factory.mktemp("libsig-elf"), "prog", static=True)


@pytest.fixture(scope="session")
def mingw_pe(tmp_path_factory: pytest.TempPathFactory) -> lf.Built:
    cc = toolchains.require("x86_64-w64-mingw32-gcc")
    return lf.build(cc, tmp_path_factory.mktemp("libsig-pe"), "prog", static=False)


class Recorder(CallContext):
    """A call context that keeps the progress it is sent."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, int | None, int | None]] = []

    def progress(self, message: str, *, done: int | None = None, total: int | None = None) -> None:
        self.seen.append((message, done, total))


@pytest.mark.parametrize("which", ["static_glibc", "mingw_pe"])
def test_the_runtime_of_a_stripped_program_is_named(which: str, request: Any, cache_env: Path) -> None:
    built: lf.Built = request.getfixturevalue(which)
    procs, library, program = lf.analyse(built.stripped)
    try:
        m = lf.measure(procs, library, built)
    finally:
        program.close()
    assert m.runtime > 100
    assert m.recall >= 0.9, (m.recall, m.runtime, m.named)
    assert m.precision >= 0.93, (m.precision, m.wrong[:20])
    # Names a signature gives without doubt are right almost always (1.000 on both when this was written).
    high = [p for p in procs if p.name_source == "signature" and library[p.address].confidence == "high"]
    wrong = {w[0] for w in m.wrong}
    assert len(high) > 50 and sum(hex(p.address) in wrong for p in high) / len(high) <= 0.02


def test_signatures_are_built_once_with_progress_and_kept(
    static_glibc: lf.Built, cache_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rea_plugins.native import libsigs

    found, _ = libsigs.locate("elf", "x86_64")
    lib, path = next((lib, path) for lib, path in found if lib.label == "libgcc_eh.a")
    key = libsigs.cache_key(libsigs.library_sha256(path))
    from rea.cache import default_cache

    default_cache().store(key, b"")  # an entry of another type is a miss, never trusted
    monkeypatch.setattr(libsigs, "_SETS", {})  # nor kept by this process yet
    seen: list[tuple[int, int]] = []
    made, fresh = libsigs.signatures(lib.label, path, lambda done, total: seen.append((done, total)))
    assert fresh and made.origins and seen and seen[-1][0] == seen[-1][1] == made.objects
    again, fresh_again = libsigs.signatures(lib.label, path)
    assert not fresh_again and again == made
    # The patterns are a .pat file python-flirt reads: one signature per line, each with its origin.
    import flirt

    assert len(flirt.parse_pat(made.pat)) == len(made.origins)


def test_the_first_use_reports_the_build_with_its_total(
    static_glibc: lf.Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rea_plugins.native import libsigs

    monkeypatch.setenv("REA_CACHE_DIR", str(tmp_path / "fresh-cache"))  # nothing kept yet: built here
    only_libc = {key: tuple(lib for lib in v if lib.label == "libc.a") for key, v in libsigs.LIBRARIES.items()}
    monkeypatch.setattr(libsigs, "LIBRARIES", only_libc)
    monkeypatch.setattr(libsigs, "_SETS", {})
    ctx = Recorder()
    _procs, library, program = lf.analyse(static_glibc.stripped, ctx)
    program.close()
    building = [
        (done or 0, total or 0) for message, done, total in ctx.seen if message.startswith("library signatures: libc.a")
    ]
    assert building and building[-1][0] == building[-1][1] and building[-1][1] > 1000  # libc.a has ~2000 objects
    assert all(total == building[-1][1] for _, total in building)
    assert any("unnamed procedures named" in message for message, _, _ in ctx.seen)
    assert len(library) > 500 and {m.library for m in library.values()} == {"libc.a"}


def test_a_missing_library_is_a_limitation_naming_its_package(
    static_glibc: lf.Built, cache_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rea_plugins.native import libsigs

    gone = {"elf": "libc.a"}
    libraries = {
        key: tuple(
            lib._replace(patterns=("/nonexistent/libc.a",)) if lib.label == gone.get(key[0]) else lib for lib in v
        )
        for key, v in libsigs.LIBRARIES.items()
    }
    monkeypatch.setattr(libsigs, "LIBRARIES", libraries)
    procs, library, program = lf.analyse(static_glibc.stripped)
    try:
        assert library == {} and not any(p.name_source == "signature" for p in procs)
        assert any("libc.a is not installed" in note and "libc6-dev" in note for note in program.limitations)
    finally:
        program.close()


@pytest.fixture
def opened(rea_registry: Registry, static_glibc: lf.Built, cache_env: Path) -> Iterator[Session]:
    session = Session(rea_registry)
    result_of(session, "open_binary", {"path": str(static_glibc.stripped), "provider_id": "native"})
    try:
        yield session
    finally:
        session.close()


def test_listings_and_the_decompilers_c_show_library_names(opened: Session, static_glibc: lf.Built) -> None:
    truth = lf.function_symbols(static_glibc.full)
    qsort = next(a for a, names in truth.items() if "qsort" in names)
    procs = result_of(opened, "search_procedures", {"pattern": "qsort", "limit": 20})["procedures"]
    row = next(p for p in procs if p["name"] == "qsort")
    assert int(row["address"], 16) == qsort and row["name_source"] == "signature"
    # qsort is an 8-byte wrapper (xor r8d, r8d; jmp __qsort_r), too short to be sure of alone: msort.o's other
    # functions sit around it where that object's .text puts them, which makes it sure.
    assert row["library"] == {"library": "libc.a", "object": "msort.o", "confidence": "high"}
    evidence = call_tool(opened, "procedure_info", {"procedure": "qsort"}).evidence
    assert evidence is not None
    info = msgspec.to_builtins(evidence.normalized_result)
    assert info["name_source"] == "signature" and info["library"]["object"] == "msort.o"
    assert any("named by a signature of libc.a (msort.o" in note for note in evidence.limitations)
    names = result_of(opened, "list_names", {"address": hex(qsort)})["names"]
    assert any(n["name"] == "qsort" and n.get("library", {}).get("library") == "libc.a" for n in names)
    # main is found once the C runtime's start routine is named, and its C calls the library by name.
    main = result_of(opened, "procedure_info", {"procedure": "main"})
    assert int(main["address"], 16) == next(a for a, names in truth.items() if "main" in names)
    from rea_plugins.native.decompile import engine

    if engine().available:
        text = result_of(opened, "procedure_pseudo_code", {"procedure": "main"})["text"]
        assert "qsort(" in text and "strdup(" in text


def test_a_static_program_without_the_runtime_is_given_up_on(tmp_path: Path, cache_env: Path) -> None:
    import subprocess

    gcc = toolchains.require("gcc-static")
    src = tmp_path / "bare.c"
    src.write_text(
        "static int twice(int x) { return x * 2 + 1; }\n"
        "int spin(int n) { int s = 0; for (int i = 0; i < n; i++) s += twice(i) ^ i; return s; }\n"
        "void _start(void) { volatile int r = spin(1000); for (;;) { r++; } }\n"
    )
    out = tmp_path / "bare"
    subprocess.run([gcc, "-O1", "-static", "-nostdlib", "-s", "-o", str(out), str(src)], check=True, timeout=120)
    procs, library, program = lf.analyse(out)
    program.close()
    assert procs and library == {} and not any(p.name_source == "signature" for p in procs)


def test_a_library_that_cannot_be_read_is_a_limitation_not_an_error(
    static_glibc: lf.Built, cache_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rea_plugins.native import libsigs

    def unreadable(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("The .pat file is corrupt (or unsupported)")

    monkeypatch.setattr(libsigs, "matcher", unreadable)
    procs, library, program = lf.analyse(static_glibc.stripped)
    try:
        assert procs and library == {}
        assert any("library functions are not named: ValueError" in note for note in program.limitations)
    finally:
        program.close()


def test_a_library_digest_is_read_back_from_the_cache_until_the_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every open names the libraries' digests in its profile: a new process reads them back from the analysis
    cache under the file's stamp instead of hashing the archive again, and a rewritten file is hashed afresh."""
    import hashlib
    import os
    import time

    from rea_plugins.native import libsigs

    monkeypatch.setenv("REA_CACHE_DIR", str(tmp_path / "cache"))
    library = tmp_path / "libdemo.a"
    library.write_bytes(b"!<arch>\n" + b"first version" * 1000)
    first = hashlib.sha256(library.read_bytes()).hexdigest()
    monkeypatch.setattr(libsigs, "_DIGESTS", {})
    assert libsigs.library_sha256(str(library)) == first  # hashed, and kept

    def no_hash(path: str) -> str:
        raise AssertionError(f"{path} was hashed again")

    monkeypatch.setattr(libsigs, "_DIGESTS", {})  # a new process: nothing in memory
    monkeypatch.setattr(libsigs, "file_sha256", no_hash)
    assert libsigs.library_sha256(str(library)) == first

    monkeypatch.undo()
    monkeypatch.setenv("REA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(libsigs, "_DIGESTS", {})
    stamp = os.stat(library)
    time.sleep(0.05)  # past the file system's timestamp granularity: the rewrite's ctime is another one
    library.write_bytes(b"!<arch>\n" + b"other version" * 1000)  # the same size, its old mtime put back
    os.utime(library, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert libsigs.library_sha256(str(library)) == hashlib.sha256(library.read_bytes()).hexdigest() != first
