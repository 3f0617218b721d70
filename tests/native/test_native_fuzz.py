"""Mutated fixtures through open_binary + binary_overview: typed errors only, no crash, no hang.

The mutations are deterministic (fixed seed). Each batch runs in a child process with a timeout, so a
crash or hang of rea itself fails the test instead of taking pytest down.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SEED = 20261202
FIXTURES = {"elf-x64": 600, "macho-arm64": 600, "elf-arm64": 500, "pe-x64-dll": 300}
BATCHES = 4
BATCH_TIMEOUT_S = 240

DRIVER = r"""
import json, sys
from rea.errors import ReaError
from rea.registry import load
from rea.session import Session
from rea.testing import result_of

session = Session(load())
counts = {}
for path in sys.argv[1:]:
    try:
        result_of(session, "open_binary", {"path": path, "provider_id": "native"})
        result_of(session, "binary_overview", {})
        outcome = "ok"
    except ReaError as exc:
        outcome = exc.code
    except BaseException as exc:
        outcome = "untyped:" + type(exc).__name__ + ":" + str(exc)[:200]
    counts[outcome] = counts.get(outcome, 0) + 1
session.close()
print(json.dumps(counts))
"""


def mutate(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    kind = rng.randrange(4)
    if kind == 0:  # bit flips anywhere
        for _ in range(rng.randint(1, 16)):
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
    elif kind == 1:  # truncation
        del buf[rng.randrange(1, len(buf)) :]
    elif kind == 2:  # header fields: counts, offsets and sizes in the first 512 bytes
        for _ in range(rng.randint(1, 4)):
            width = rng.choice((1, 2, 4, 8))
            i = rng.randrange(0, min(512, len(buf) - width))
            value = rng.choice((0, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, rng.getrandbits(64)))
            buf[i : i + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
    else:  # a corrupted run of bytes inside the file
        start = rng.randrange(len(buf))
        for i in range(start, min(len(buf), start + rng.randint(4, 256))):
            buf[i] = rng.getrandbits(8)
    return bytes(buf)


@pytest.mark.slow
def test_mutated_binaries_yield_typed_errors(native_fixtures: Any, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    paths: list[str] = []
    for fid, count in FIXTURES.items():
        data = Path(native_fixtures.get(fid).path).read_bytes()
        for i in range(count):
            p = tmp_path / f"{fid}-{i}"
            p.write_bytes(mutate(data, rng))
            paths.append(str(p))
    assert len(paths) >= 2000
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    rng.shuffle(paths)
    batches = [paths[i::BATCHES] for i in range(BATCHES)]
    procs = [
        subprocess.Popen(
            [sys.executable, str(driver), *batch], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for batch in batches
    ]
    totals: dict[str, int] = {}
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=BATCH_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise AssertionError("a fuzz batch hung") from None
        assert proc.returncode == 0, f"fuzz driver crashed: {err[-2000:]}"
        for code, n in json.loads(out.strip().splitlines()[-1]).items():
            totals[code] = totals.get(code, 0) + n
    assert sum(totals.values()) == len(paths)
    # Malformed input must read as such: wrapped exceptions (provider_unavailable) or records that cannot be
    # canonicalized (evidence_integrity_mismatch) would mean the provider let something through.
    allowed = {"ok", "unsupported_target", "resource_constraint", "execution_failure", "provider_timeout"}
    unexpected = {k: v for k, v in totals.items() if k not in allowed}
    assert not unexpected, (unexpected, totals)
    assert totals.get("ok", 0) > 0, totals
