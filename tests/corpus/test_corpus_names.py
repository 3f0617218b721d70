"""File names that are not UTF-8 (issue 42 item 4): POSIX names are bytes; one odd name never stops a triage.

A name's bytes that are not UTF-8 are recorded and shown as ``\\xNN`` escapes (``rea.fsnames.shown``): SQLite,
JSON and Evidence carry them, and the file itself is still read through the name the file system gave.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest
from corpussupport import rows
from corpussupport import variants

from rea import evidence as ev_mod
from rea.errors import ReaError
from rea.fsnames import shown
from rea.target import identify

ODD = b"\xff\xfe.bin"
ODD_SHOWN = "\\xff\\xfe.bin"


def _corpus(corpus_build: dict[str, Any], root: Path) -> Path:
    corpus = variants(corpus_build["built"]["alpha"], root / "corpus", 5)
    base = os.fsencode(corpus)
    shutil.copyfile(corpus_build["built"]["beta"], base + b"/" + ODD)
    os.mkdir(base + b"/dir-\xe9")  # a Latin-1 folder name
    shutil.copyfile(corpus_build["built"]["gamma"], base + b"/dir-\xe9/gamma")
    return corpus


def test_a_corpus_with_a_non_utf8_name_triages_every_file(
    corpus_build: dict[str, Any], run_tool: Any, tmp_path: Path
) -> None:
    corpus = _corpus(corpus_build, tmp_path)
    index = tmp_path / "corpus.db"
    ev = run_tool("triage_corpus", {"paths": [str(corpus)], "index": str(index), "workers": 2})
    counts = ev["normalized_result"]["counts"]
    assert counts["files_seen"] == 7 and counts["binaries"] == 7
    assert counts["analysed"] == 7 and counts["failed"] == 0, ev["normalized_result"]["failures"]
    paths = {p for (p,) in rows(index, "SELECT path FROM paths")}
    assert {ODD_SHOWN, "dir-\\xe9/gamma", "v000"} <= paths
    # Each binary's record is Evidence whose display path shows the escape (the id is recomputed from it).
    [(blob,)] = rows(
        index, "SELECT b.evidence FROM binaries b JOIN paths p ON p.sha256 = b.sha256 WHERE p.path = ?", ODD_SHOWN
    )
    record = ev_mod.validate(ev_mod.decode(blob))
    assert record.subject is not None and record.subject.local_path.endswith("/" + ODD_SHOWN)
    page = run_tool("query_corpus", {"query": "binaries", "index": str(index)})["normalized_result"]
    assert ODD_SHOWN in {p for r in page["rows"] for p in r["binary"]["paths"]}


def test_an_error_naming_a_non_utf8_file_encodes() -> None:
    missing = os.fsdecode(b"/nonexistent/\xff\xfe.bin")
    with pytest.raises(ReaError) as info:
        identify(missing)
    sent = msgspec.json.decode(msgspec.json.encode(info.value.projection()))
    assert ODD_SHOWN in sent["message"] and sent["details"]["path"] == "/nonexistent/" + ODD_SHOWN


def test_shown_escapes_only_what_is_not_utf8() -> None:
    assert shown("plain/é.bin") == "plain/é.bin"
    assert shown(os.fsdecode(ODD)) == ODD_SHOWN
    assert shown("lone\ud800") == "lone\\ud800"  # a surrogate JSON can spell, not a file name's byte
