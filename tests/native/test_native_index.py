"""The whole-program index as a pure, serializable value: the same bytes give the same index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest


@pytest.mark.parametrize("fixture_id", ["elf-x64-stripped", "pe-x64-exe", "shapes-elf-arm64-nounwind"])
def test_compute_index_is_deterministic_and_round_trips(native_fixtures: Any, fixture_id: str) -> None:
    from rea_plugins.native.extract import extract
    from rea_plugins.native.index import Limits
    from rea_plugins.native.index import ProgramIndex
    from rea_plugins.native.index import compute_index
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
