"""procedure_fingerprints (native's one-pass hashes) equals hashing each procedure's read_function_instructions rows.

Corpus triage and compare_binaries rely on one hash meaning one thing: the batch answer and the row-by-row
fallback (what every other provider gets) must agree on every procedure of real code, on every architecture.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from rea.context import CallContext
from rea.fingerprint import fingerprints
from rea.operations.shapes import ProcedureFingerprints
from rea.registry import Registry
from tests.conformance import references_support as rs


@pytest.fixture(scope="module")
def sessions(rea_registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[rs.Sessions]:
    yield from rs.sessions_fixture(rea_registry, tmp_path_factory.mktemp("annotations"))


@pytest.mark.parametrize("target_id", rs.TABLE_TARGETS)
def test_batch_hashes_equal_the_row_by_row_hashes(sessions: rs.Sessions, target_id: str) -> None:
    session = sessions.get("native", rs.build(target_id).stripped)
    ctx = CallContext()

    def execute(operation: str, params: dict[str, Any]) -> Any:
        return session.execute(operation, params, ctx).normalized

    page = execute("procedure_fingerprints", {"limit": 3})
    msgspec.convert(page, ProcedureFingerprints)
    assert page["next_offset"] == 3 and len(page["fingerprints"]) == 3
    batch, total, cut = fingerprints(execute, session.supports)
    slow, slow_total, _ = fingerprints(execute, lambda op: op != "procedure_fingerprints")
    assert (total, cut) == (slow_total, False) and len(batch) == total
    assert batch == slow
    assert sum(1 for f in batch if f.instructions > 0 and f.kind == "local") >= 5
    capped, _, truncated = fingerprints(execute, session.supports, cap=4)
    assert truncated and capped == batch[:4]
