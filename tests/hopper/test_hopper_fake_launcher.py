"""The hopper provider against the fake launcher: startup, answers, annotations, shutdown modes, protocol faults."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest

from rea.context import CallContext
from rea.context import CancelSignal
from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests.fake_engines import query_while_the_fake_starts
from tests.hopper.conftest import fake_processes


def _open(session: Session, target: str) -> None:
    out = result_of(session, "open_binary", {"path": target, "provider_id": "hopper"})
    assert out["analysis_provider_binding"]["provider"]["id"] == "hopper"


def _lineage(session: Session) -> list[dict[str, Any]]:
    return list(result_of(session, "binary_session")["analysis_run"]["process_lineage"].get("snapshots", []))


def test_answers_annotations_and_acknowledged_shutdown(session: Session, target: str) -> None:
    _open(session, target)
    assert fake_processes() == []  # open binds only
    procs = result_of(session, "list_procedures")["procedures"]
    assert [(p["name"], p["kind"]) for p in procs] == [("_main", "local"), ("_greet", "local"), ("_puts", "import")]
    callees = result_of(session, "procedure_callees", {"procedure": "_main"})["callees"]
    assert [(c["name"], c["kind"]) for c in callees] == [("_greet", "direct"), ("_puts", "import"), (None, "indirect")]
    callers = result_of(session, "procedure_callers", {"procedure": "_puts"})["callers"]
    assert [(c["name"], c["call_sites"]) for c in callers] == [("_main", ["0x100000f06"]), ("_greet", ["0x100000f47"])]
    blocks = session.execute("procedure_blocks", {"procedure": "_main"}, CallContext()).normalized
    assert {"from": "0x100000f00", "to": "0x100000f12", "kind": "conditional"} in blocks["edges"]
    assert {"from": "0x100000f00", "to": "0x100000f0f", "kind": "fallthrough"} in blocks["edges"]
    strings = {s["value"]: s for s in result_of(session, "list_strings")["strings"]}
    assert strings["WIDE"]["encoding"] == "utf-16le" and strings["REA_HOPPER_GREETING"]["section"] == "__cstring"
    xrefs = result_of(session, "xrefs", {"address": "0x100000fa0"})["references"]
    assert xrefs == [{"from": "0x100000f40", "from_procedure": "0x100000f40", "kind": "data", "to": "0x100000fa0"}]
    code = result_of(session, "procedure_pseudo_code", {"procedure": "_main"})
    assert code["decompiler"] == "hopper" and "_greet();" in code["text"]
    facets = result_of(session, "inspect_address_context", {"address": "0x100000f00"})["facets"]
    assert facets["comment"] == {"status": "ok", "value": "entry of the program"}
    assert facets["bookmark"] == {"status": "ok", "value": None} and facets["name"]["value"] == "_main"
    greet = result_of(session, "inspect_address_context", {"address": "0x100000f40"})["facets"]
    assert greet["bookmark"] == {"status": "ok", "value": {"name": "greeting"}}
    inline = result_of(session, "inspect_address_context", {"address": "0x100000f01"})["facets"]
    assert inline["inline_comment"]["value"] == "says hello"
    started = [s for s in _lineage(session) if s["event"] == "started"]
    assert started and started[0]["status"] == "verified"
    client = session._client
    assert result_of(session, "close_binary")["cleanup"] == "complete"
    closed = client.lineage()[-1]  # type: ignore[union-attr]
    assert closed["shutdown"] == "acknowledged" and closed["document_closed"] is True
    assert fake_processes() == []


def test_unconfirmed_shutdown_of_an_owned_hopper_still_cleans_up(
    session: Session, target: str, hopper_env: pytest.MonkeyPatch
) -> None:
    hopper_env.setenv("REA_HOPPER_TEST_MODE", "unconfirmed")
    _open(session, target)
    assert result_of(session, "list_segments")["segments"]
    client = session._client
    assert result_of(session, "close_binary")["cleanup"] == "complete"
    closed = client.lineage()[-1]  # type: ignore[union-attr]
    assert closed["shutdown"] == "unconfirmed" and closed["status"] == "verified"


def test_cleanup_required_reports_what_rea_does_not_own(
    session: Session, target: str, hopper_env: pytest.MonkeyPatch
) -> None:
    hopper_env.setenv("REA_HOPPER_TEST_MODE", "cleanup-required")
    _open(session, target)
    assert result_of(session, "list_procedures")["total"] == 3
    client = session._client
    bridge_pid = client.bridge_pid  # type: ignore[union-attr]
    try:
        with pytest.raises(ReaError) as err:
            result_of(session, "close_binary")
        e = err.value
        assert e.code == "cleanup_incomplete"
        assert e.details["resources"] == ["descendant-process", "hopper-document"]
        # Reported, never signalled: the escaped Hopper process is still there.
        assert bridge_pid in fake_processes()
    finally:
        # This test started it (through the fake launcher); it ends it by its id.
        if bridge_pid is not None:
            os.kill(bridge_pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while bridge_pid in fake_processes() and time.monotonic() < deadline:
                time.sleep(0.05)


@pytest.mark.parametrize(
    ("mode", "reason"),
    [("malformed", "malformed"), ("wrong-id", "answer to request"), ("wrong-token", "session token")],
)
def test_protocol_faults_cost_the_session_and_are_typed(
    session: Session, target: str, hopper_env: pytest.MonkeyPatch, mode: str, reason: str
) -> None:
    hopper_env.setenv("REA_HOPPER_TEST_MODE", mode)
    _open(session, target)
    with pytest.raises(ReaError) as err:
        result_of(session, "list_procedures")
    e = err.value
    assert e.code == "provider_unavailable" and "broke the protocol" in e.message
    assert reason in e.details["reason"] and "Traceback" not in e.message
    assert fake_processes() == []


def test_events_are_relayed_as_progress_and_diagnostics_as_limitations(
    session: Session, target: str, hopper_env: pytest.MonkeyPatch
) -> None:
    hopper_env.setenv("REA_HOPPER_TEST_MODE", "events")
    _open(session, target)
    assert result_of(session, "list_procedures")["total"] == 3
    # Warm: the next bridge request's events are this call's first progress.
    seen: list[str] = []
    out = call_tool(
        session, "procedure_pseudo_code", {"procedure": "_main"}, CallContext(sink=lambda _n, _t, m: seen.append(m))
    )
    assert out.evidence is not None
    assert seen and seen[0].startswith("hopper: fake: reading the document")
    assert "Hopper reported: fake: a section could not be typed" in out.evidence.limitations


def test_exit_during_startup(session: Session, target: str, hopper_env: pytest.MonkeyPatch) -> None:
    hopper_env.setenv("REA_HOPPER_TEST_MODE", "exit:70")
    _open(session, target)
    with pytest.raises(ReaError) as err:
        result_of(session, "list_procedures")
    e = err.value
    assert e.code == "provider_unavailable" and "exited during startup (status 70)" in e.message
    assert e.details["exit_status"] == 70


def test_startup_deadline_names_the_setting(session: Session, target: str, hopper_env: pytest.MonkeyPatch) -> None:
    hopper_env.setenv("REA_HOPPER_TEST_MODE", "silent")
    hopper_env.setenv("REA_HOPPER_STARTUP_TIMEOUT_MS", "1500")
    _open(session, target)
    with pytest.raises(ReaError) as err:
        result_of(session, "binary_overview")
    e = err.value
    assert e.code == "provider_timeout" and "1500 ms" in e.message
    assert "REA_HOPPER_STARTUP_TIMEOUT_MS" in e.remediation and e.details["setting"] == "REA_HOPPER_STARTUP_TIMEOUT_MS"
    assert fake_processes() == []


def test_cancel_during_startup_then_retry(session: Session, target: str, hopper_env: pytest.MonkeyPatch) -> None:
    hopper_env.setenv("REA_HOPPER_TEST_MODE", "slow:30")
    _open(session, target)
    signal_ = CancelSignal()
    thread, seen = query_while_the_fake_starts(
        lambda: call_tool(session, "list_procedures", {}, CallContext(signal_)), fake_processes
    )
    time.sleep(0.5)
    signal_.cancel()
    thread.join(30)
    assert isinstance(seen[0], ReaError) and seen[0].code == "cancelled"
    assert fake_processes() == []
    hopper_env.setenv("REA_HOPPER_TEST_MODE", "acknowledge")
    assert result_of(session, "close_binary")["cleanup"] == "complete"
    _open(session, target)
    assert result_of(session, "list_procedures")["total"] == 3
