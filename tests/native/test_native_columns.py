"""The index's compact columns: int32 where the image is mapped below 2**31, the same rows as int64 columns."""

from __future__ import annotations

import array
from pathlib import Path
from typing import Any

import pytest


def _rows(table: Any) -> list[tuple[int, int, int, int]]:
    from rea_plugins.native.index import column

    n = len(table.kind)
    src, dst, proc = (column(c, n) for c in (table.src, table.dst, table.proc))
    return [(src[i], dst[i], table.kind[i], proc[i]) for i in range(n)]


def _index(path: str, monkeypatch: pytest.MonkeyPatch, narrow_end: int | None) -> Any:
    from rea_plugins.native import index
    from rea_plugins.native import sweep
    from rea_plugins.native.extract import extract
    from rea_plugins.native.model import WorkerRequest

    if narrow_end is not None:
        monkeypatch.setattr(index, "NARROW_END", narrow_end)
        monkeypatch.setattr(sweep, "NARROW_END", narrow_end)
    model = extract(WorkerRequest(path=path))
    return index.compute_index(model, Path(path).read_bytes(), index.Limits())


@pytest.mark.parametrize("fixture_id", ["elf-x64-stripped", "pe-x64-exe"])
def test_narrow_and_wide_columns_hold_the_same_index(
    native_fixtures: Any, fixture_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = native_fixtures.get(fixture_id).path
    wide = _index(path, monkeypatch, 0)  # nothing is narrow: int64 columns, as before
    assert len(wide.flow.src) == 8 * len(wide.flow.kind)
    with monkeypatch.context() as m:
        default = _index(path, m, None)
    # Narrow just above the image: every target beyond it (malformed or far code) goes through ``Facts.wide``.
    from rea_plugins.native.extract import extract
    from rea_plugins.native.model import WorkerRequest

    model = extract(WorkerRequest(path=path))
    top = max(r.start + max(r.size, r.file_size) for r in [*model.sections, *model.segments]) + 1
    tight = _index(path, monkeypatch, min(top, 1 << 31))  # a PE mapped above 2**31 stays int64
    assert len(tight.flow.src) == (4 if top < 1 << 31 else 8) * len(tight.flow.kind)
    for got in (default, tight):
        assert got.procs == wide.procs
        assert _rows(got.flow) == _rows(wide.flow)
        assert got.data is not None and wide.data is not None
        assert _rows(got.data) == _rows(wide.data)


def test_a_target_beyond_a_narrow_column_is_kept_aside() -> None:
    from rea_plugins.native.disasm import CALL
    from rea_plugins.native.disasm import JUMP
    from rea_plugins.native.disasm import RET
    from rea_plugins.native.sweep import FAR
    from rea_plugins.native.sweep import WIDE
    from rea_plugins.native.sweep import Facts
    from rea_plugins.native.sweep import descend

    facts = Facts(narrow=True)
    facts.add(0x1000, 5, CALL, 0x9000_0000, None)
    facts.add(0x1005, 5, JUMP, 1 << 63, None)
    facts.add(0x100A, 1, RET, None, None)
    assert facts.addr.typecode == "i"
    assert list(facts.target) == [WIDE, FAR, -1]
    assert facts.target_at(0) == 0x9000_0000
    # A jump to a far target ends the run and is no computed jump; the extent is unchanged by where it points.
    assert descend(facts, 0x1000, 0x2000, 100).end == 0x100A
    assert not descend(facts, 0x1000, 0x2000, 100).computed


def test_reference_columns_widen_when_a_value_does_not_fit() -> None:
    from rea_plugins.native.index import RefColumns
    from rea_plugins.native.index import column

    refs = RefColumns(narrow=True)
    refs.src.append(0x1000)
    refs.dst.append(0x2000)
    refs.kind.append(0)
    refs.proc.append(0x1000)
    refs.src.append(0x1004)  # a row left half-written by an overflow
    with pytest.raises(OverflowError):
        refs.dst.append(1 << 40)
    refs.widen(1)
    refs.src.append(0x1004)
    refs.dst.append(1 << 40)
    refs.kind.append(0)
    refs.proc.append(0x1000)
    table = refs.table()
    assert (len(table.src), len(table.dst), len(table.proc)) == (8, 16, 8)  # only the targets widened
    assert list(column(table.dst, 2)) == [0x2000, 1 << 40]
    assert list(column(table.src, 2)) == [0x1000, 0x1004]
    refs = RefColumns(narrow=True)
    refs.src.append(0x1000)
    refs.widen(0, everything=True)
    assert refs.src.typecode == refs.proc.typecode == refs.dst.typecode == "q" and not refs.src
    assert list(column(array.array("i", [7, -1]).tobytes(), 2)) == [7, -1]


def test_pointer_slots_keep_the_last_relocation_and_the_first_default() -> None:
    from rea_plugins.native.pointers import _Pairs

    pairs = _Pairs()
    pairs[0x30] = 1
    pairs[0x10] = 2
    pairs[0x30] = 3  # a later relocation of the same slot wins
    pairs.setdefault(0x10, 9)  # a written slot is kept
    pairs.setdefault(0x20, 4)
    pairs.setdefault(0x20, 5)  # the first default wins
    written = pairs.written()
    assert list(written.slots) == [0x10, 0x30] and list(written.values) == [2, 3]
    assert 0x20 in pairs and 0x40 not in pairs
    assert pairs.defaults == {0x20: 4}


def test_a_made_name_is_not_held_but_found_by_its_address() -> None:
    from rea_plugins.native.index import Names
    from rea_plugins.native.index import Proc

    made = Proc(0x1000, "sub_1000", "local", None, "call-target")
    named = Proc(0x2000, "parse", "local", None, "symbol", "symbol")
    assert made.made_name and made.name == "sub_1000" and not named.made_name
    names = Names({0x1000: made, 0x2000: named})
    for p in (made, named):
        names.setdefault(p.name, p)
    assert names.named == {"parse": named}
    assert names.get("sub_1000") is made and "sub_1000" in names and names.get("parse") is named
    assert names.get("sub_01000") is None and names.get("sub_2000") is None and "sub_zz" not in names
    made.name = "main"
    assert not made.made_name and names.get("sub_1000") is None
