"""Session lifecycle: close drains in-flight provider work by cancelling it, and clears the ledger."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from rea import registry as registry_mod
from rea.context import CallContext
from rea.context import CancelSignal
from rea.errors import ReaError
from rea.session import Session
from rea_plugins import discovery
from rea_plugins import session as session_plugin
from tests.kernel.fakes import DeclaredProvider
from tests.kernel.fakes import ProviderPlugin


def test_close_cancels_and_drains_running_operations(hello_elf: Path, clean_env: pytest.MonkeyPatch) -> None:
    reg = registry_mod.load(
        entry_points=False,
        extra=[
            ("fakes", ProviderPlugin(DeclaredProvider("slowpoke", 1))),
            ("session", session_plugin),
            ("discovery", discovery),
        ],
    )
    session = Session(reg)
    session.open(str(hello_elf), None, CallContext())
    outcome: dict[str, object] = {}
    started = threading.Event()

    class Watched(CancelSignal):
        """Tells the test the operation is running: its first cancellation check reads this."""

        @property
        def cancelled(self) -> bool:
            started.set()
            return super().cancelled

    def run() -> None:
        try:
            session.execute("slow_scan", {"steps": 3000}, CallContext(Watched()))
            outcome["result"] = "finished"
        except ReaError as err:
            outcome["result"] = err.code

    worker = threading.Thread(target=run)
    worker.start()
    assert started.wait(60), "the operation never started"
    start = time.monotonic()
    assert session.close() == []
    worker.join(5)
    assert not worker.is_alive()
    assert outcome["result"] == "cancelled"
    assert time.monotonic() - start < 5  # far less than the 30 s the operation would have taken
    assert session.target is None and len(session.ledger) == 0


def test_operations_not_declared_are_capability_errors(hello_elf: Path, clean_env: pytest.MonkeyPatch) -> None:
    reg = registry_mod.load(entry_points=False, extra=[("fakes", ProviderPlugin(DeclaredProvider("tiny", 1)))])
    session = Session(reg)
    with pytest.raises(ReaError) as info:
        session.execute("list_documents", {}, CallContext())
    assert info.value.code == "target_unavailable"
    session.open(str(hello_elf), "tiny", CallContext())
    with pytest.raises(ReaError) as info:
        session.execute("procedure_pseudo_code", {}, CallContext())
    assert info.value.code == "capability_unavailable"
    assert info.value.details["provider_id"] == "tiny"
    session.close()
