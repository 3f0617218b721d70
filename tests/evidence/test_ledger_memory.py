"""The ledger keeps at most REA_LEDGER_MEMORY_MB of records in memory; older ones move to disk, none is lost."""

from __future__ import annotations

import os
from typing import Any

import msgspec
import pytest

from rea import evidence
from rea.canonical import JcsRecord
from rea.canonical import canonical_digest
from rea.canonical import canonical_json
from rea.errors import ReaError
from rea.evidence import ProviderIdentity
from rea.ledger import LEDGER_MEMORY_MB
from rea.ledger import Ledger
from rea.registry import Registry
from rea.session import Session
from rea.sizes import measured_length

PROBE = ProviderIdentity(id="probe", name="Probe", version="1")


class Row(JcsRecord, frozen=True, kw_only=True):
    address: str
    size: int


def _record(index: int, size: int) -> evidence.Evidence:
    rows = [{"address": f"0x{index:x}{i:04x}", "name": "n" * 16, "size": i} for i in range(size // 48)]
    return evidence.build(
        operation="probe_rows",
        provider=PROBE,
        subject=None,
        analysis_profile=None,
        parameters={"index": index},
        normalized_result={"rows": rows},
    )


@pytest.mark.parametrize(
    "value",
    [
        {"small": [1, 2, "three"]},
        {"floats": [0.1, 1e21, -0.0], "text": "é\U0001f600"},
        {"rows": [{"a": i, "b": "x" * 8} for i in range(3000)]},  # a scanned, streamed list
        {"rows": [{"a": i + 0.5, "b": "x"} for i in range(3000)]},  # scanned, then the whole-document path
        {"rows": [Row(address=hex(i), size=i) for i in range(5000)]},  # proved by construction, streamed
        {"blob": "y" * (2 << 20)},  # one document past the overlap threshold
    ],
    ids=["small", "floats", "scanned", "scanned-floats", "proved", "large"],
)
def test_the_digest_measures_the_canonical_document_on_every_path(value: Any) -> None:
    measured: list[int] = []
    canonical_digest(value, measured=measured)
    assert measured == [len(canonical_json(value))]


def test_the_oldest_records_move_to_disk_and_come_back_unchanged() -> None:
    ledger = Ledger(memory_bytes=200_000)
    records = [_record(i, 60_000) for i in range(12)]
    sizes = [measured_length(r.evidence_id) for r in records]
    assert all(s is not None and s > 50_000 for s in sizes)
    for record in records:
        ledger.record(record)
        assert ledger.resident_bytes <= 200_000
    assert len(ledger) == 12
    # Each record is about 74 kB: the newest two fit in 200 kB, the ten before them were spilled.
    resident = [isinstance(ledger._records[r.evidence_id], evidence.Evidence) for r in records]
    assert resident == [False] * 10 + [True] * 2
    for record in records:
        back = ledger.get(record.evidence_id)
        assert back is not None and evidence.encode(back) == evidence.encode(record)
        evidence.validate(back)
    assert [r.evidence_id for r in ledger] == [r.evidence_id for r in records]
    spill_dir = ledger._spill_dir
    assert spill_dir is not None and sorted(n for n in os.listdir(spill_dir) if n.startswith("ev_")) == sorted(
        r.evidence_id for r in records[:10]
    )
    ledger.clear()
    assert not os.path.exists(spill_dir) and ledger.resident_bytes == 0


def test_the_newest_record_stays_in_memory_even_beyond_the_bound() -> None:
    ledger = Ledger(memory_bytes=1000)
    big = _record(1, 100_000)
    ledger.record(big)
    assert ledger._records[big.evidence_id] is big
    assert ledger.resident_bytes == measured_length(big.evidence_id)
    ledger.record(_record(2, 100))
    assert not isinstance(ledger._records[big.evidence_id], evidence.Evidence)
    assert ledger.get(big.evidence_id) == msgspec.json.decode(evidence.encode(big), type=evidence.Evidence)


def test_recording_a_record_twice_counts_it_once() -> None:
    ledger = Ledger(memory_bytes=10 << 20)
    record = _record(3, 5000)
    ledger.record(record)
    ledger.record_all([record, record])
    assert ledger.resident_bytes == measured_length(record.evidence_id) and len(ledger) == 1


def test_an_unbounded_ledger_spills_nothing() -> None:
    ledger = Ledger()
    for i in range(5):
        ledger.record(_record(i, 60_000))
    assert ledger._spill_dir is None


def test_a_full_disk_keeps_records_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = Ledger(memory_bytes=1000)
    records = [_record(i, 5000) for i in range(3)]

    def refuse(*args: Any, **kwargs: Any) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("tempfile.mkdtemp", refuse)
    for record in records:
        ledger.record(record)
    assert all(ledger.get(r.evidence_id) is r for r in records)


def test_the_setting_bounds_a_session_ledger(monkeypatch: pytest.MonkeyPatch, rea_registry: Registry) -> None:
    monkeypatch.setenv("REA_LEDGER_MEMORY_MB", "3")
    session = Session(rea_registry)
    try:
        assert session.ledger.memory_bytes == 3 << 20
    finally:
        session.close()
    assert "REA_LEDGER_MEMORY_MB" in rea_registry.settings
    for raw in ("0", "-1", "1.5", "abc", str((1 << 20) + 1)):
        with pytest.raises(ReaError) as caught:
            LEDGER_MEMORY_MB.read({"REA_LEDGER_MEMORY_MB": raw})
        assert caught.value.code == "configuration_invalid"
