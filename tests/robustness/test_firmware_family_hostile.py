"""Hostile inputs for the firmware, EVM and SQLite inspectors: damaged databases (flipped, cut, lying headers, a
file named .db that is none), fuzzed and cut contract bytecode, and damaged or hostile firmware images (a cut file
system, noise, a bomb, streams nested in streams). Each answers, or fails with a typed error whose message names
no parser internals; the original files are never written, and nothing rea made is left in the temporary
directory."""

from __future__ import annotations

import gzip
import hashlib
import lzma
import os
import random
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest

from rea.session import Session
from tests.evm.evmfixtures import RUNTIME_HEX
from tests.firmware.fwfixtures import assemble
from tests.robustness import runner
from tests.sqlite.sqlitefixtures import build

PARSER_WORDS = ("Traceback", "sqlite3.", "DatabaseError", "PanicException", "KeyError", "IndexError", "unblob.")
CODES = {"unsupported_target", "invalid_request", "resource_constraint", "artifact_operation_failed"}
SEED = 52


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rea's folders for these calls go to a temporary directory of the test's own: another process using the shared
    one at the same time never counts as a leftover."""
    private = tmp_path / "private-tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))


def _ours() -> set[str]:
    prefixes = ("rea-sqlite-", "rea-extract-firmware-", "rea-firmware-")
    return {n for n in os.listdir(tempfile.gettempdir()) if n.startswith(prefixes)}


def _answers(session: Session, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
    return runner.answer_or_refusal(session, tool, args, CODES, PARSER_WORDS)


# -- SQLite -------------------------------------------------------------------------------------------------------


def _sqlite_cases(db: bytes, wal: bytes) -> list[tuple[str, bytes, bytes | None]]:
    rng = random.Random(SEED)
    page = int.from_bytes(db[16:18], "big")
    cases: list[tuple[str, bytes, bytes | None]] = [
        ("not-sqlite.db", b"PK\x03\x04 not a database\n" * 50, None),
        ("header-only.db", db[:100], None),
        ("first-page.db", db[:page], wal),
        ("half.db", db[: len(db) // 2], wal),
        ("page-size-zero.db", db[:16] + b"\x00\x00" + db[18:], None),
        ("page-size-odd.db", db[:16] + b"\x03\x01" + db[18:], None),
        ("huge-page-count.db", db[:28] + b"\x7f\xff\xff\xff" + db[32:], None),
        ("wal-garbage.db", db, bytes(rng.randrange(256) for _ in range(len(wal)))),
        ("wal-cut.db", db, wal[: len(wal) // 3]),
    ]
    for i in range(24):
        data = bytearray(db)
        for _ in range(1 + i % 6):
            data[rng.randrange(100, len(data))] = rng.randrange(256)
        cases.append((f"flip{i}.db", bytes(data), wal if i % 2 else None))
    return cases


def test_hostile_databases(session: Session, tmp_path: Path) -> None:
    source = build(tmp_path)
    db, wal = source.read_bytes(), Path(f"{source}-wal").read_bytes()
    # A schema object whose SQL is a megabyte long: listed cut, not whole.
    long_sql = tmp_path / "long-sql.db"
    conn = sqlite3.connect(long_sql)
    conn.execute("CREATE TABLE t (x DEFAULT '" + "y" * (1 << 20) + "')")
    conn.commit()
    conn.close()
    before = _ours()
    answered = 0
    cases = [*_sqlite_cases(db, wal), ("long-sql.db", long_sql.read_bytes(), None)]
    for name, data, companion in cases:
        path = tmp_path / "cases" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        if companion is not None:
            Path(f"{path}-wal").write_bytes(companion)
        digest = hashlib.sha256(data).hexdigest()
        for args in ({"path": str(path)}, {"path": str(path), "table": "users", "row_limit": 5}):
            out = _answers(session, "inspect_sqlite_database", args)
            answered += out is not None
            if out is not None and name == "long-sql.db":
                assert out["objects"][0]["sql_truncated"] is True and len(out["objects"][0]["sql"]) <= 2000
        # Never written: the same bytes, no -shm and no journal beside it.
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, name
        assert not Path(f"{path}-shm").exists() and not Path(f"{path}-journal").exists(), name
    assert answered > 0
    assert _ours() == before


# -- EVM ----------------------------------------------------------------------------------------------------------


def test_hostile_bytecode(session: Session, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    code = bytes.fromhex(RUNTIME_HEX)
    cases: list[bytes] = [
        b"\x5b" * 24_000,  # all JUMPDEST
        b"\x7f" + b"\xff" * 32 + b"\x56",  # PUSH32 then JUMP to nowhere
        (b"\x60\x00\x56") * 8000,  # jumps to 0 forever
        (b"\x5b\x60\x00\x56") * 6000,  # a loop on a JUMPDEST
        code[: len(code) // 2],
        code[:-60],  # the metadata cut
        code + b"\xa2\x64" * 40,  # a CBOR length suffix that lies
        bytes(rng.randrange(256) for _ in range(20_000)),
    ]
    for _ in range(24):
        data = bytearray(code)
        for _ in range(rng.randrange(1, 12)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        cases.append(bytes(data))
    for i, data in enumerate(cases):
        path = tmp_path / f"case{i}.bin"
        path.write_bytes(data)
        _answers(session, "inspect_evm_interface", {"path": str(path)})
        _answers(session, "inspect_evm_interface", {"bytecode": data.hex()})
    for text in ("0x", "0xzz", "0x" + "6" * 9, "  \n", "0x" + "60" * 300_000):
        (tmp_path / "text.hex").write_text(text)
        _answers(session, "inspect_evm_interface", {"path": str(tmp_path / "text.hex")})


# -- firmware -----------------------------------------------------------------------------------------------------


def test_hostile_firmware_images(session: Session, tmp_path: Path) -> None:
    parts = assemble(tmp_path / "fixture")
    image = parts["image"].read_bytes()
    rng = random.Random(SEED)
    nested = b"\0" * (8 << 20)
    for _ in range(6):
        nested = gzip.compress(nested, mtime=0)
    cases = {
        "cut-filesystem.bin": image[: 300 << 10],
        "noise.bin": bytes(rng.randrange(256) for _ in range(256 << 10)),
        "lying-xz.bin": b"\xff" * 512 + lzma.compress(b"x" * 4096, format=lzma.FORMAT_XZ)[:40] + b"\xff" * 512,
        "nested-gzip.bin": b"\xff" * 512 + nested + b"\xff" * 512,
        "bomb.bin": parts["bomb"].read_bytes(),
        "magic-only.bin": b"hsqs" + bytes(range(256)) * 64,
    }
    before = _ours()
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        regions = _answers(
            session, "inspect_firmware_regions", {"path": str(path), "timeout_s": 60, "max_output_bytes": 16 << 20}
        )
        if regions is not None:
            assert sum(r["size"] for r in regions["regions"]) <= len(data)
        out = _answers(
            session,
            "extract_firmware",
            {"path": str(path), "timeout_s": 60, "max_output_bytes": 16 << 20, "max_files": 500},
        )
        if out is not None:
            root = Path(out["output_directory"])
            # Every listed file lies inside the output directory, as listed.
            for row in out["files"]:
                real = (root / row["path"]).resolve()
                assert real.is_relative_to(root.resolve()) and real.stat().st_size == row["size"]
            shutil.rmtree(root)
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert _ours() == before
