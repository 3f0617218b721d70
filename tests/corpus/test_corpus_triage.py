"""triage_corpus and query_corpus on a corpus compiled in the session, checked against readelf/nm truth."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import corpussupport
import pytest
from corpussupport import nm_imports
from corpussupport import readelf_needed
from corpussupport import rows

from rea import evidence as ev_mod
from rea.errors import ReaError
from rea.fingerprint import normalize_instruction
from rea.fingerprint import procedure_hash
from tests.waiting import poll_until
from tests.waiting import wait_for


def _query(run_tool: Any, index: Path, query: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = run_tool("query_corpus", {"query": query, "index": str(index), **extra})["normalized_result"]
    return out


def _by_path(page: dict[str, Any]) -> set[str]:
    return {p for r in page["rows"] for p in r["binary"]["paths"]}


def test_triage_walks_folders_archives_duplicates_and_a_malformed_file(triaged: dict[str, Any]) -> None:
    res, built = triaged["result"], triaged["built"]
    counts = res["counts"]
    expected = 5 + ("arm" in built) + ("pe.exe" in built)  # alpha, gamma, lib, broken, beta (+ arm, pe)
    assert counts["binaries"] == expected
    assert counts["duplicates"] == 2  # dup/alpha-copy, and the library inside the nested ZIP
    assert counts["archives"] == 3  # bundle.zip, outer.zip and the ZIP inside it
    assert counts["analysed"] == expected - 1 and counts["failed"] == 1
    assert counts["skipped_not_binary"] == 2  # notes.txt and the ZIP's readme
    [failure] = res["failures"]
    assert failure["paths"] == ["bin/broken"] and failure["code"] in ("unsupported_target", "execution_failure")
    index = triaged["index"]
    # One row per SHA-256; the duplicate's two paths both name it.
    alpha_sha = rows(index, "SELECT sha256 FROM paths WHERE path = 'bin/alpha'")[0][0]
    assert sorted(r[0] for r in rows(index, "SELECT path FROM paths WHERE sha256 = ?", alpha_sha)) == [
        "bin/alpha",
        "dup/alpha-copy",
    ]
    assert rows(index, "SELECT COUNT(*), COUNT(DISTINCT sha256) FROM binaries")[0] == (expected, expected)
    assert rows(index, "SELECT 1 FROM paths WHERE path = 'bundle.zip!/inner/beta'")
    lib = rows(index, "SELECT path FROM paths WHERE path LIKE '%libcorpus.so' ORDER BY path")
    assert [p for (p,) in lib] == ["lib/libcorpus.so", "outer.zip!/nested/inner.zip!/libcorpus.so"]


def test_each_record_is_evidence_of_the_native_provider(triaged: dict[str, Any]) -> None:
    for ev_id, blob in rows(triaged["index"], "SELECT evidence_id, evidence FROM binaries WHERE status = 'done'"):
        ev = ev_mod.validate(ev_mod.decode(blob))  # the id is recomputed from the content
        assert ev.evidence_id == ev_id
        assert ev.provider.id == "native" and ev.analysis_profile is not None
        assert ev.subject is not None and ev.operation == "triage_corpus_binary"


def test_architectures_and_formats_are_recorded(triaged: dict[str, Any]) -> None:
    found = set(rows(triaged["index"], "SELECT format, architecture FROM binaries WHERE status = 'done'"))
    assert ("elf", "x86_64") in found
    if "arm" in triaged["built"]:
        assert ("elf", "arm64") in found
    if "pe.exe" in triaged["built"]:
        assert ("pe", "x86_64") in found


def test_import_queries_match_nm(triaged: dict[str, Any], run_tool: Any) -> None:
    elf = {"bin/alpha": "alpha", "bin/gamma": "gamma", "bundle.zip!/inner/beta": "beta"}
    truth = {path: nm_imports(triaged["built"][name]) for path, name in elf.items()}
    for name in ("strcpy", "getenv", "puts", "lib_answer"):
        got = _by_path(_query(run_tool, triaged["index"], "imports", value=name)) & set(elf)
        assert got == {p for p, names in truth.items() if name in names}, name
    page = _query(run_tool, triaged["index"], "imports", value="^(strcpy|getenv)$", regex=True)
    row = next(r for r in page["rows"] if "bin/alpha" in r["binary"]["paths"])
    assert row["matched"] == ["getenv", "strcpy"]
    assert row["binary"]["evidence_id"].startswith("ev_") and len(row["binary"]["sha256"]) == 64


def test_libraries_ranked_by_dependents_match_readelf(triaged: dict[str, Any], run_tool: Any) -> None:
    page = _query(run_tool, triaged["index"], "libraries")
    ranked = {r["library"]: r for r in page["rows"]}
    elves = [triaged["built"][n] for n in ("alpha", "gamma", "beta", "libcorpus.so")]
    truth: dict[str, int] = {}
    for path in elves:
        for lib in readelf_needed(path):
            truth[lib] = truth.get(lib, 0) + 1
    assert ranked["libcorpus.so"]["dependents"] == truth["libcorpus.so"] == 1
    # The library's own file in the corpus is named.
    assert [w["paths"] for w in ranked["libcorpus.so"]["where"]] == [
        ["lib/libcorpus.so", "outer.zip!/nested/inner.zip!/libcorpus.so"]
    ]
    assert ranked["libc.so.6"]["dependents"] >= truth["libc.so.6"]
    counts = [r["dependents"] for r in page["rows"]]
    assert counts == sorted(counts, reverse=True)


def test_string_mitigation_and_procedure_queries(triaged: dict[str, Any], run_tool: Any) -> None:
    index = triaged["index"]
    assert _by_path(_query(run_tool, index, "strings", value=r"corpus-marker-(alpha|beta)")) == {
        "bin/alpha",
        "dup/alpha-copy",
        "bundle.zip!/inner/beta",
    }
    no_canary = _by_path(_query(run_tool, index, "lacks_mitigation", value="canary"))
    assert "bundle.zip!/inner/beta" in no_canary and "bin/alpha" not in no_canary
    assert "bundle.zip!/inner/beta" in _by_path(_query(run_tool, index, "lacks_mitigation", value="relro"))
    assert "bundle.zip!/inner/beta" in _by_path(_query(run_tool, index, "lacks_mitigation", value="pie"))
    # shared_helper is the same code in alpha and beta: one hash, both places.
    hashes = rows(
        index, "SELECT p.hash, q.path FROM procedures p JOIN paths q USING (sha256) WHERE name = 'shared_helper'"
    )
    assert {path for _, path in hashes} >= {"bin/alpha", "bundle.zip!/inner/beta"}
    assert len({h for h, _ in hashes}) == 1
    page = _query(run_tool, index, "procedure_hash", value=hashes[0][0])
    [row] = page["rows"]
    assert {p for w in row["where"] for p in w["paths"]} >= {"bin/alpha", "bundle.zip!/inner/beta"}
    shared = _query(run_tool, index, "shared_procedures", limit=1000)
    assert hashes[0][0] in {r["hash"] for r in shared["rows"]}
    failed = _query(run_tool, index, "failed")
    assert _by_path(failed) == {"bin/broken"} and failed["rows"][0]["matched"][0]


def test_paging(triaged: dict[str, Any], run_tool: Any) -> None:
    first = _query(run_tool, triaged["index"], "binaries", limit=2)
    assert first["total"] >= 5 and first["next_offset"] == 2 and len(first["rows"]) == 2
    rest = _query(run_tool, triaged["index"], "binaries", offset=2, limit=1000)
    assert rest["next_offset"] is None
    assert len(first["rows"]) + len(rest["rows"]) == first["total"]


def test_synchronous_scheduler_gives_the_same_records(triaged: dict[str, Any], run_tool: Any, tmp_path: Path) -> None:
    index = tmp_path / "sync.db"
    ev = run_tool("triage_corpus", {"paths": [str(triaged["root"])], "index": str(index), "scheduler": "synchronous"})
    assert ev["normalized_result"]["workers"] == 1
    sql = "SELECT sha256, status, evidence_id FROM binaries ORDER BY sha256"
    assert rows(index, sql) == rows(triaged["index"], sql)


def test_a_second_run_skips_what_the_index_holds(triaged: dict[str, Any], run_tool: Any) -> None:
    ev = run_tool("triage_corpus", {"paths": [str(triaged["root"])], "index": str(triaged["index"])})
    counts = ev["normalized_result"]["counts"]
    assert counts["already_indexed"] == counts["binaries"] and counts.get("analysed", 0) == 0


def test_fingerprint_ignores_addresses_and_constants() -> None:
    a = [{"mnemonic": "lea", "operands": "rdi, [rip + 0x2e5a]"}, {"mnemonic": "call", "operands": "0x1030"}]
    b = [{"text": "lea rdi, [rip + 0x1f00]"}, {"text": "call 0x4040"}]
    assert procedure_hash(a) == procedure_hash(b)
    assert procedure_hash(a) != procedure_hash([*a, {"mnemonic": "ret"}])
    assert normalize_instruction({"mnemonic": "mov", "operands": "r8d, 12"}) == "mov r8d, #"


def test_compare_corpora_two_versions(corpus_build: dict[str, Any], run_tool: Any, tmp_path: Path) -> None:
    work, built = corpus_build["work"], corpus_build["built"]
    gcc = "gcc"
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    for d in (v1, v2):
        (d / "bin").mkdir(parents=True)
    (v1 / "bin" / "alpha").write_bytes(built["alpha"].read_bytes())
    (v2 / "bin" / "alpha").write_bytes(built["alpha"].read_bytes())
    (v1 / "bin" / "beta").write_bytes(built["beta"].read_bytes())
    changed = corpussupport.BETA.replace('puts("corpus-marker-beta");', 'puts("corpus-marker-beta-2"); puts("x");')
    corpussupport._cc(gcc, work, "beta2", changed, "-fno-stack-protector", "-no-pie", "-Wl,-z,norelro")
    (v2 / "bin" / "beta").write_bytes((work / "beta2").read_bytes())
    (v1 / "bin" / "gamma").write_bytes(built["gamma"].read_bytes())
    (v2 / "lib").mkdir()
    (v2 / "lib" / "libcorpus.so").write_bytes(built["libcorpus.so"].read_bytes())
    index = tmp_path / "versions.db"
    for label, root in (("v1", v1), ("v2", v2)):
        run_tool(
            "triage_corpus", {"paths": [str(root)], "index": str(index), "corpus": label, "scheduler": "synchronous"}
        )
    cmp = run_tool("compare_corpora", {"index": str(index), "left": "v1", "right": "v2"})["normalized_result"]
    kinds = {c["path"]: c["change"] for c in cmp["changes"]}
    assert kinds == {"bin/beta": "changed", "bin/gamma": "removed", "lib/libcorpus.so": "added"}
    assert cmp["counts"] == {"added": 1, "removed": 1, "changed": 1, "unchanged": 1}
    beta = next(c for c in cmp["changes"] if c["path"] == "bin/beta")
    procs = {p["name"]: p["change"] for p in beta["procedures"]}
    assert procs.get("main") == "changed" and "shared_helper" not in procs
    assert beta["left"]["evidence_id"] != beta["right"]["evidence_id"]


def test_bad_input_is_a_typed_error(run_tool: Any, tmp_path: Path, triaged: dict[str, Any]) -> None:
    with pytest.raises(ReaError) as err:
        run_tool("triage_corpus", {"paths": [str(tmp_path)], "index": str(tmp_path / "x.db"), "scheduler": "ray"})
    assert err.value.code == "invalid_request"
    with pytest.raises(ReaError) as err:
        run_tool("query_corpus", {"query": "strings", "value": "(", "index": str(triaged["index"])})
    assert err.value.code == "invalid_request" and "RE2" in err.value.message
    with pytest.raises(ReaError) as err:
        run_tool("query_corpus", {"query": "binaries", "index": str(tmp_path / "none.db")})
    assert err.value.code == "target_unavailable"
    (tmp_path / "junk.db").write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(ReaError) as err:
        run_tool("query_corpus", {"query": "binaries", "index": str(tmp_path / "junk.db")})
    assert err.value.code == "target_unavailable"


def _rea(*argv: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rea.cli.main", *argv], capture_output=True, text=True, timeout=120,
                          **kw)  # fmt: skip


def test_cli_corpus_triage_and_query(corpus_build: dict[str, Any], tmp_path: Path) -> None:
    index = tmp_path / "cli.db"
    root = str(corpus_build["root"] / "bin")
    out = _rea("corpus", "triage", root, "--index", str(index), "--scheduler", "synchronous", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["normalized_result"]["counts"]["analysed"] >= 2
    out = _rea("corpus", "query", "imports", "--value", "strcpy", "--index", str(index), "--json")
    assert out.returncode == 0, out.stderr
    page = json.loads(out.stdout)["normalized_result"]
    assert {p for r in page["rows"] for p in r["binary"]["paths"]} == {"alpha"}
    bad = _rea("corpus", "query", "strings", "--value", "(", "--index", str(index), "--json")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert json.loads(bad.stdout)["error"]["code"] == "invalid_request"
    missing = _rea("corpus", "frobnicate")
    assert missing.returncode == 1 and "triage" in missing.stdout + missing.stderr


def test_a_worker_killed_mid_run_loses_no_item(tmp_path: Path, run_tool: Any) -> None:
    import threading

    import psutil

    from rea.context import CallContext

    source = Path(os.path.realpath("/usr/bin/gzip" if os.path.exists("/usr/bin/gzip") else sys.executable))
    corpus = corpussupport.variants(source, tmp_path / "many", 24)
    index = tmp_path / "kill.db"
    killed: list[int] = []

    done = threading.Event()

    def first_row() -> bool:
        # The index file exists before its tables do: "no such table" is "not yet" (waiting.NOT_YET).
        return index.exists() and bool(rows(index, "SELECT 1 FROM binaries LIMIT 1"))

    def kill_worker() -> int | None:
        for child in psutil.Process().children():
            try:
                if "spawn_main" in " ".join(child.cmdline()):
                    child.kill()
                    return child.pid
            except psutil.Error:  # ended meanwhile: look at the next one
                continue
        return None

    def killer() -> None:
        if poll_until(first_row, stop=done.is_set) and (pid := poll_until(kill_worker, stop=done.is_set)):
            killed.append(pid)

    thread = threading.Thread(target=killer)
    thread.start()
    try:
        ev = run_tool("triage_corpus", {"paths": [str(corpus)], "index": str(index), "workers": 2}, CallContext())
    finally:
        done.set()
        thread.join()
    assert killed
    counts = ev["normalized_result"]["counts"]
    assert counts["retried"] >= 1
    assert counts["analysed"] + counts["failed"] == 24 and counts["failed"] == 0
    assert rows(index, "SELECT COUNT(*), COUNT(DISTINCT sha256), SUM(status = 'done') FROM binaries")[0] == (24, 24, 24)


def test_a_worker_that_keeps_dying_is_recorded_failed(tmp_path: Path, run_tool: Any) -> None:
    import threading
    import time

    import psutil

    source = Path(os.path.realpath("/usr/bin/gzip" if os.path.exists("/usr/bin/gzip") else sys.executable))
    corpus = corpussupport.variants(source, tmp_path / "few", 6)
    index = tmp_path / "dying.db"
    stop = threading.Event()

    def killer() -> None:
        # Every worker process dies as soon as it starts: with max_attempts 2 every item is failed with the reason.
        while not stop.is_set():
            for child in psutil.Process().children():
                try:
                    if "spawn_main" in " ".join(child.cmdline()) and time.time() - child.create_time() > 0.3:
                        child.kill()
                except psutil.Error:
                    pass
            time.sleep(0.05)

    thread = threading.Thread(target=killer)
    thread.start()
    try:
        ev = run_tool("triage_corpus", {"paths": [str(corpus)], "index": str(index), "workers": 2, "max_attempts": 2})
    finally:
        stop.set()
        thread.join()
    counts = ev["normalized_result"]["counts"]
    assert counts.get("analysed", 0) + counts["failed"] == 6 and counts["failed"] >= 1
    reasons = rows(index, "SELECT error_message, attempts FROM binaries WHERE status = 'failed'")
    assert all("died" in msg and attempts == 2 for msg, attempts in reasons)
    assert rows(index, "SELECT COUNT(DISTINCT sha256) FROM binaries")[0][0] == 6


def test_an_interrupted_run_resumes_from_the_index(tmp_path: Path) -> None:
    import signal

    source = Path(os.path.realpath("/usr/bin/gzip" if os.path.exists("/usr/bin/gzip") else sys.executable))
    corpus = corpussupport.variants(source, tmp_path / "resume", 30)
    index = tmp_path / "resume.db"
    argv = [sys.executable, "-m", "rea.cli.main", "corpus", "triage", str(corpus), "--index", str(index), "--json",
            "--workers", "2"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The file is there before its tables are, and locked while written: both are "not yet".
        wait_for(
            lambda: rows(index, "SELECT COUNT(*) FROM binaries")[0][0] >= 3,
            "three items recorded in the index",
            timeout_s=120,
        )
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGINT, out
    assert json.loads(out)["error"]["code"] == "cancelled"
    before = rows(index, "SELECT COUNT(*) FROM binaries WHERE status = 'done'")[0][0]
    assert 3 <= before < 30
    again = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    counts = json.loads(again.stdout)["normalized_result"]["counts"]
    assert counts["already_indexed"] == before and counts["analysed"] == 30 - before
    assert rows(index, "SELECT COUNT(*), SUM(status = 'done') FROM binaries")[0] == (30, 30)


def test_yara_rules_and_the_memory_limit_argument(corpus_build: dict[str, Any], run_tool: Any, tmp_path: Path) -> None:
    rules = tmp_path / "rules.yar"
    rules.write_text('rule alpha_marker { strings: $a = "corpus-marker-alpha" condition: $a }\n')
    index = tmp_path / "yara.db"
    root = str(corpus_build["root"] / "bin")
    run_tool(
        "triage_corpus", {"paths": [root], "index": str(index), "scheduler": "synchronous", "yara_rules": str(rules)}
    )
    hits = rows(index, "SELECT q.path, y.rule FROM yara y JOIN paths q USING (sha256)")
    assert hits == [("alpha", "alpha_marker")]
    (tmp_path / "bad.yar").write_text("rule {")
    with pytest.raises(ReaError) as err:
        run_tool("triage_corpus", {"paths": [root], "index": str(index), "yara_rules": str(tmp_path / "bad.yar")})
    assert err.value.code == "invalid_request"
    with pytest.raises(ReaError) as err:
        run_tool("triage_corpus", {"paths": [root], "index": str(index), "memory_limit": "lots"})
    assert err.value.code == "invalid_request" and "memory_limit" in err.value.message


def test_a_worker_over_its_memory_limit_records_the_item_failed(
    corpus_build: dict[str, Any], run_tool: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No analysis cache: a binary another test analysed is a cache hit, which a 64 MB worker answers.
    monkeypatch.setenv("REA_CACHE_MAX_BYTES", "0")
    index = tmp_path / "memory.db"
    root = str(corpus_build["root"] / "bin")
    ev = run_tool("triage_corpus", {"paths": [root], "index": str(index), "workers": 1, "memory_limit": "64MB"})
    counts = ev["normalized_result"]["counts"]
    assert counts["analysed"] == 0 and counts["failed"] == counts["binaries"] >= 3
    for code, message in rows(index, "SELECT error_code, error_message FROM binaries"):
        assert code and message and "Traceback" not in message
        # An engine worker inherits the bound: the message names it, not the engine's own (larger) setting.
        if "address-space bound" in message:
            assert f"{64_000_000 >> 20} MiB" in message, message  # 64MB, in MiB


def test_an_archive_member_that_fails_its_integrity_check(
    corpus_build: dict[str, Any], run_tool: Any, tmp_path: Path
) -> None:
    import zipfile

    root = tmp_path / "crc"
    root.mkdir()
    bad = root / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.write(corpus_build["built"]["alpha"], "alpha")
    data = bytearray(bad.read_bytes())
    data[14:18] = b"\0\0\0\0"  # the local header's CRC-32
    central = data.find(b"PK\x01\x02")
    data[central + 16 : central + 20] = b"\0\0\0\0"  # and the central directory's
    bad.write_bytes(bytes(data))
    strict = run_tool(
        "triage_corpus", {"paths": [str(root)], "index": str(tmp_path / "a.db"), "scheduler": "synchronous"}
    )["normalized_result"]
    assert strict["counts"]["binaries"] == 0
    assert [(f["paths"], f["code"]) for f in strict["failures"]] == [
        (["bad.zip!/alpha"], "artifact_integrity_mismatch")
    ]
    lenient = run_tool(
        "triage_corpus",
        {
            "paths": [str(root)],
            "index": str(tmp_path / "b.db"),
            "scheduler": "synchronous",
            "integrity_policy": "record-and-continue",
        },
    )["normalized_result"]
    assert lenient["counts"]["analysed"] == 1
