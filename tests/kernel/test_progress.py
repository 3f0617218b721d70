"""CallContext's progress numbering: strictly increasing across phases, totals where counted, a complete terminal."""

from __future__ import annotations

import itertools

import pytest

import rea.context
from rea.context import CallContext

Update = tuple[float, float | None, str]


def recording() -> tuple[CallContext, list[Update]]:
    sent: list[Update] = []
    return CallContext(sink=lambda p, t, m: sent.append((p, t, m))), sent


def rising(sent: list[Update]) -> bool:
    return all(b[0] > a[0] for a, b in itertools.pairwise(sent))


@pytest.fixture
def unbounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rea.context, "PROGRESS_INTERVAL_S", 0.0)


@pytest.mark.usefixtures("unbounded")
def test_progress_counts_phases_upward_with_totals() -> None:
    ctx, sent = recording()
    ctx.progress("started")
    for i in range(4):
        ctx.progress(f"reading: {i} of 3", done=i, total=3)
    ctx.progress("pairing")  # no counts: one more, no total
    for i in range(3):
        ctx.progress(f"scoring: {i} of 2", done=i, total=2)
    ctx.progress("again: 0 of 2", done=0, total=2)  # the same size again, from 0: a new phase
    ctx.progress("again: 2 of 2", done=2, total=2)
    assert [(p, t) for p, t, _ in sent] == [
        (1, None),
        (2, 5), (3, 5), (4, 5), (5, 5),
        (6, None),
        (7, 9), (8, 9), (9, 9),
        (10, 12), (12, 12),
    ]  # fmt: skip
    assert rising(sent)
    assert all(t is None or p <= t for p, t, _ in sent)
    assert sent[1][2].startswith("reading: 0 of 3 (elapsed ")
    progress, total, text = ctx.next_progress("tool: completed")
    assert progress == total == 13 and text.startswith("tool: completed (elapsed ")


@pytest.mark.usefixtures("unbounded")
def test_counts_interleaved_with_plain_updates_keep_rising() -> None:
    ctx, sent = recording()
    ctx.progress("a: 1 of 10", done=1, total=10)
    ctx.progress("retrying")
    ctx.progress("still retrying")
    ctx.progress("a: 2 of 10", done=2, total=10)  # the phase shifts just past the plain updates
    ctx.progress("a: 10 of 10", done=10, total=10)
    assert [(p, t) for p, t, _ in sent] == [(1, 10), (2, None), (3, None), (4, 12), (12, 12)]
    assert ctx.next_progress("done")[:2] == (13, 13)


def test_terminal_is_complete_without_any_update() -> None:
    ctx, sent = recording()
    assert ctx.next_progress("tool: completed")[:2] == (1, 1)
    assert sent == []


def test_counts_only_with_both_done_and_total(unbounded: None) -> None:
    ctx, sent = recording()
    ctx.progress("seen 5", done=5)
    ctx.progress("of 7", total=7)
    ctx.progress("9 of 4", done=9, total=4)  # more done than the total said: the total grows to match
    assert [(p, t) for p, t, _ in sent] == [(1, None), (2, None), (11, 11)]


def test_rate_bound_holds_back_the_latest_update_with_its_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rea.context, "PROGRESS_INTERVAL_S", 3600.0)
    ctx, sent = recording()
    ctx.progress("started")  # the first update always goes out
    for i in range(1, 6):
        ctx.progress(f"export: {i} of 5", done=i, total=5)
    assert [(p, t) for p, t, _ in sent] == [(1, None)]
    ctx.flush()  # the interval has not passed: still held
    assert len(sent) == 1
    monkeypatch.setattr(rea.context, "PROGRESS_INTERVAL_S", 0.0)
    ctx.check()  # now due: the latest held-back update goes out, counts and all
    assert [(p, t) for p, t, _ in sent] == [(1, None), (6, 6)]
    assert sent[-1][2].startswith("export: 5 of 5")
    ctx.flush()
    assert len(sent) == 2  # sent once
    assert ctx.next_progress("export: completed")[:2] == (7, 7)


def test_held_back_phase_change_still_starts_a_new_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rea.context, "PROGRESS_INTERVAL_S", 3600.0)
    ctx, sent = recording()
    ctx.progress("left: 1 of 4", done=1, total=4)  # sent: 1 of 4
    ctx.progress("left: 4 of 4", done=4, total=4)  # held, then replaced by the next phase's updates
    ctx.progress("right: 0 of 4", done=0, total=4)
    ctx.progress("right: 3 of 4", done=3, total=4)
    monkeypatch.setattr(rea.context, "PROGRESS_INTERVAL_S", 0.0)
    ctx.flush()
    # The right side began after the last update sent (1): numbered 1 + 3 of 1 + 4.
    assert [(p, t) for p, t, _ in sent] == [(1, 4), (4, 5)]
    ctx.progress("right: 4 of 4", done=4, total=4)
    assert [(p, t) for p, t, _ in sent][-1] == (5, 5)
    assert rising(sent)


def test_no_sink_reports_nothing_and_the_terminal_still_counts() -> None:
    ctx = CallContext()
    ctx.progress("x", done=1, total=2)
    assert ctx.next_progress("done")[:2] == (1, 1)
