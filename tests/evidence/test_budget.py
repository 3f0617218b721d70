"""The response budget refuses a result known too large from hashing it, without encoding it again."""

from __future__ import annotations

from rea import evidence
from rea.budget import known_oversize
from rea.budget import success_size
from rea.evidence import ProviderIdentity

PROBE = ProviderIdentity(id="probe", name="Probe", version="1")
BUDGET = 10 * 1024 * 1024 - 1024


def _record(size: int, value: object = None) -> evidence.Evidence:
    return evidence.build(
        operation="probe_payload",
        provider=PROBE,
        subject=None,
        analysis_profile=None,
        parameters={"size": size},
        normalized_result={"blob": "x" * size, "v": value},
    )


def test_a_record_measured_by_its_hash_is_refused_without_encoding() -> None:
    big = _record(12 << 20)
    required = known_oversize(big, BUDGET)
    assert required is not None and required > BUDGET
    # Never more than the exact size: the estimate is a lower bound.
    assert required <= success_size(evidence.encode(big))


def test_near_the_budget_the_exact_size_decides() -> None:
    for size in (4_000_000, 5_240_000):
        assert known_oversize(_record(size), BUDGET) is None


def test_records_with_floats_are_not_estimated() -> None:
    # Canonical floats can be longer than msgspec's: only the exact encoding decides for them.
    assert known_oversize(_record(12 << 20, 1e16), BUDGET) is None
