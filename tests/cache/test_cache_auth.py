"""Cache entries are authenticated with an HMAC under a private per-user key (issue 24, item 3)."""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea.cache import MAGIC
from rea.cache import TAG_BYTES
from rea.cache import AnalysisCache
from rea.cache_key import KEY_FILE
from rea.context import CallContext
from rea.registry import default_registry
from rea.session import Session
from rea.testing import result_of
from tests.cache.test_cache import WordIndex
from tests.cache.test_cache import key
from tests.cache.test_cache import value

_LEN = struct.Struct(">I")


def _forge(path: Path, change: Any, *, keep_tag: bool) -> None:
    """What the probe did: edit the payload, recompute the header's length and digest, write it back."""
    data = path.read_bytes()
    (length,) = _LEN.unpack_from(data, len(MAGIC))
    start = len(MAGIC) + _LEN.size
    header = msgspec.msgpack.decode(data[start : start + length])
    payload = msgspec.msgpack.encode(change(msgspec.msgpack.decode(data[start + length : -TAG_BYTES])))
    header["payload_bytes"] = len(payload)
    header["payload_sha256"] = hashlib.sha256(payload).hexdigest()
    raw = msgspec.msgpack.encode(header)
    forged = MAGIC + _LEN.pack(len(raw)) + raw + payload + (data[-TAG_BYTES:] if keep_tag else b"")
    path.write_bytes(forged)


@pytest.mark.parametrize("keep_tag", [True, False])
def test_a_coherent_forgery_is_a_miss_and_removed(tmp_path: Path, keep_tag: bool) -> None:
    cache = AnalysisCache(str(tmp_path / "cache"), 1 << 20)
    assert cache.store(key(1), value(1))
    path = Path(cache.path(key(1)))
    _forge(path, lambda doc: {**doc, "size": 999}, keep_tag=keep_tag)
    assert cache.load(key(1), WordIndex) is None
    assert not path.exists()
    # A fresh object (a new process) with the same key file still refuses it, and accepts what rea writes.
    assert cache.store(key(1), value(1))
    assert AnalysisCache(str(tmp_path / "cache"), 1 << 20).load(key(1), WordIndex) == value(1)


def test_the_key_is_private_and_a_bad_key_reads_nothing(tmp_path: Path) -> None:
    where = tmp_path / "cache"
    cache = AnalysisCache(str(where), 1 << 20)
    assert cache.store(key(1), value(1))
    key_file = where / KEY_FILE
    st = key_file.stat()
    assert (st.st_mode & 0o777) == 0o600 and st.st_uid == os.geteuid() and st.st_size == 32
    assert cache.info().key_problem is None

    key_file.chmod(0o644)
    loose = AnalysisCache(str(where), 1 << 20)
    assert loose.load(key(1), WordIndex) is None and not loose.store(key(2), value(2))
    problem = loose.info().key_problem
    assert problem is not None and "0644" in problem and str(key_file) in problem
    assert Path(loose.path(key(1))).exists()  # an unauthenticatable entry is not destroyed, only not read

    key_file.unlink()
    os.mkfifo(key_file)  # never waited on
    fifo = AnalysisCache(str(where), 1 << 20)
    assert fifo.load(key(1), WordIndex) is None
    assert "FIFO" in (fifo.info().key_problem or "")

    key_file.unlink()
    fresh = AnalysisCache(str(where), 1 << 20)
    # A new key: the old entry was written under another one, so it is a miss (and removed).
    assert fresh.load(key(1), WordIndex) is None and not Path(fresh.path(key(1))).exists()


def test_doctor_and_cache_info_say_why_nothing_is_read(tmp_path: Path) -> None:
    from rea.doctor import doctor_report

    where = tmp_path / "cache"
    AnalysisCache(str(where), 1 << 30).store(key(1), value(1))
    (where / KEY_FILE).chmod(0o640)
    report = doctor_report(default_registry(), home=str(tmp_path), environ={"REA_CACHE_DIR": str(where)})
    check = next(c for c in report["checks"] if c["id"] == "analysis-cache")
    assert check["status"] == "warn" and "no entry is read" in check["summary"]
    assert "0640" in report["cache"]["key_problem"]


def test_a_forged_native_procedure_name_is_never_served(
    hello_elf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rea_plugins.native import store

    monkeypatch.setenv("REA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(store, "MEMO", store._Memo())
    path = str(tmp_path / "program")
    shutil.copyfile(hello_elf, path)
    registry = default_registry()

    def names() -> set[str]:
        session = Session(registry)
        try:
            session.open(path, "native", CallContext())
            return {p["name"] for p in result_of(session, "list_procedures", {"limit": 1000})["procedures"]}
        finally:
            session.close()

    honest = names()
    assert "main" in honest
    entries = list((tmp_path / "cache" / "entries").glob("*.entry"))
    assert entries

    def rename(doc: Any) -> Any:
        if isinstance(doc, str):
            return "forged_name" if doc == "main" else doc
        if isinstance(doc, list):
            return [rename(v) for v in doc]
        if isinstance(doc, dict):
            return {k: rename(v) for k, v in doc.items()}
        return doc

    forged = 0
    for entry in entries:
        before = entry.read_bytes()
        _forge(entry, rename, keep_tag=True)
        forged += entry.read_bytes() != before
    assert forged  # the name was in a cached payload
    monkeypatch.setattr(store, "MEMO", store._Memo())
    served = names()
    assert "forged_name" not in served and served == honest
