"""The whole-program index as a pure, serializable value: the same bytes give the same index, cached by digest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of


@pytest.mark.parametrize("fixture_id", ["elf-x64-stripped", "pe-x64-exe", "shapes-elf-arm64-nounwind"])
def test_compute_index_is_deterministic_and_round_trips(native_fixtures: Any, fixture_id: str) -> None:
    from rea_plugins.native.extract import extract
    from rea_plugins.native.index import Limits, ProgramIndex, compute_index
    from rea_plugins.native.model import WorkerRequest

    path = native_fixtures.get(fixture_id).path
    model = extract(WorkerRequest(path=path))
    content = Path(path).read_bytes()
    first = compute_index(model, content, Limits())
    again = compute_index(model, content, Limits())
    wire = msgspec.msgpack.encode(first)
    assert wire == msgspec.msgpack.encode(again)
    assert msgspec.msgpack.decode(wire, type=ProgramIndex) == first
    assert first.discovery and first.data is not None and first.procs


def test_reopening_the_same_bytes_reuses_the_index(rea_registry: Registry, native_fixtures: Any) -> None:
    from rea_plugins.native.index import INDEX_CACHE

    path = native_fixtures.get("shapes-elf-x64-nounwind").path
    listings = []
    for _ in range(2):
        session = Session(rea_registry)
        try:
            result_of(session, "open_binary", {"path": path, "provider_id": "native"})
            listings.append(result_of(session, "list_procedures", {"limit": 1000}))
            program = session._client.program  # type: ignore[union-attr]
            assert program._key is not None and INDEX_CACHE.get(program._key) is program._index
        finally:
            session.close()
    assert listings[0] == listings[1]
