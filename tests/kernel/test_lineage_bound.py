"""binary_session stays small however many processes a session ran (issue 42 item 9).

Each scenario run recorded its lineage snapshots (about 4.5 KB) and binary_session sent every one, so after
≈ 2,300 runs the answer failed. The lineage is now a bounded summary: the newest snapshots, and all of them counted.
"""

from __future__ import annotations

import msgspec

from rea.registry import Registry
from rea.session import LINEAGE_SHOWN
from rea.session import Session
from rea.testing import result_of


def _run(session: Session, n: int) -> None:
    """What one process scenario records: the program started, a descendant seen, and the end."""
    pid = 40_000 + n
    base = {
        "resource": "process-scenario",
        "owner": "process",
        "status": "verified",
        "launcher_pid": 1234,
        "pid": pid,
        "ppid": 1234,
        "pgid": pid,
        "observed_at": "2026-12-06T20:00:00.000000Z",
        "argv": ["/usr/bin/program", "--flag", "x" * 200],
        "isolation": {"sandbox": "bubblewrap", "binds": [f"/usr/lib/{i}" for i in range(20)]},
    }
    session.record_lineage(
        [
            {**base, "event": "started", "descendants": []},
            {**base, "event": "descendant", "descendants": [{"pid": pid + 1, "argv": ["/bin/sh", "-c", "y" * 100]}]},
            {**base, "event": "ended", "status": "verified", "exit_status": 0, "descendants": []},
        ]
    )


def _size(session: Session) -> int:
    return len(msgspec.json.encode(result_of(session, "binary_session", {})))


def test_binary_session_does_not_grow_with_scenario_runs(rea_registry: Registry) -> None:
    session = Session(rea_registry)
    try:
        for n in range(50):
            _run(session, n)
        after_50 = _size(session)
        for n in range(50, 1000):
            _run(session, n)
        after_1000 = _size(session)
        print(f"\nbinary_session after 50 scenario runs: {after_50} bytes; after 1,000: {after_1000} bytes")
        assert after_1000 <= after_50 + 256  # the counts' digits grow, nothing else
        lineage = result_of(session, "binary_session", {})["analysis_run"]["process_lineage"]
        assert lineage["state"] == "snapshots" and lineage["total"] == 3000
        assert len(lineage["snapshots"]) == LINEAGE_SHOWN and lineage["omitted"] == 3000 - LINEAGE_SHOWN
        assert lineage["snapshots"][-1]["pid"] == 40_999 and lineage["snapshots"][-1]["event"] == "ended"
        assert lineage["counts"] == {"descendant/verified": 1000, "ended/verified": 1000, "started/verified": 1000}
        assert len(session.lineage) < 3000  # the session keeps a bounded window too
    finally:
        session.close()
