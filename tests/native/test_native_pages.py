"""A mapped target (large files) gives the same index, strings and call graph as a read one, while each whole-file
pass releases the pages it read; strings are compact columns with the item shape the operations read."""

from __future__ import annotations

from typing import Any

import pytest


def _analyse(path: str, monkeypatch: pytest.MonkeyPatch, threshold: int) -> tuple[Any, ...]:
    from rea_plugins.native import program as program_mod
    from rea_plugins.native.extract import extract
    from rea_plugins.native.model import WorkerRequest

    monkeypatch.setattr(program_mod, "MMAP_THRESHOLD", threshold)
    p = program_mod.Program(extract(WorkerRequest(path=path)), path, program_mod.Limits())
    try:
        mapped = not isinstance(p._data, bytes)
        procs = [(q.address, q.end, q.kind, q.name) for q in p.procedures()]
        strings = list(p.strings())
        edges = list(p.call_graph().rows(0, 1 << 30))
        data = sorted(p.an.code_data_targets() or ())
        return mapped, procs, strings, edges, data
    finally:
        p.close()


@pytest.mark.parametrize("fixture_id", ["shapes-elf-x64", "elf-x64-so"])
def test_a_mapped_target_answers_as_a_read_one(native_fixtures: Any, fixture_id: str, monkeypatch: Any) -> None:
    path = native_fixtures.get(fixture_id).path
    read = _analyse(path, monkeypatch, 1 << 40)
    mapped = _analyse(path, monkeypatch, 0)
    assert read[0] is False and mapped[0] is True
    assert read[1:] == mapped[1:] and read[1] and read[2]


def test_strings_are_columns_read_as_items(native_fixtures: Any) -> None:
    from rea_plugins.native.extract import extract
    from rea_plugins.native.model import WorkerRequest
    from rea_plugins.native.program import Limits
    from rea_plugins.native.program import Program
    from rea_plugins.native.program import StringItem

    path = native_fixtures.get("shapes-elf-x64").path
    p = Program(extract(WorkerRequest(path=path)), path, Limits())
    try:
        items = p.strings()
        assert len(items) > 2
        first = items[0]
        assert isinstance(first, StringItem) and items[:2] == [items[0], items[1]]
        assert p.string_at(first.address) == first and items.at(first.address) == [first]
        assert p.string_at(first.address + 1) is None or p.string_at(first.address + 1) != first
        assert [s.address for s in items] == sorted(s.address for s in items)
        before = list(items)
        items.sort()  # already in order: unchanged
        assert list(items) == before
    finally:
        p.close()
