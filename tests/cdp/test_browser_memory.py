"""A launched browser's memory bound (issue 24 item 7): a page whose JavaScript outgrows the heap bound
(``REA_CHROMIUM_MEMORY_LIMIT_MB``) crashes, and the scenario is ``resource_constraint`` naming the bound, with
the capture so far; the browser is still cleaned up."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from tests import toolchains
from tests.cdp.test_scenario_origins import Listener

HOG = """<!doctype html><html><body><p id="x">hog</p><script>
const keep = [];
setTimeout(() => { for (;;) { keep.push(new Array(1 << 20).fill(keep.length)); } }, 300);
</script></body></html>"""


@pytest.fixture
def hog() -> Iterator[Listener]:
    served = Listener({"/": ("text/html", HOG)})
    yield served
    served.close()


def test_a_page_beyond_the_heap_bound_is_resource_constraint(
    rea_registry: Registry, hog: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    toolchains.require("chromium")
    monkeypatch.setenv("REA_CHROMIUM_MEMORY_LIMIT_MB", "64")
    session = Session(rea_registry)
    try:
        with pytest.raises(ReaError) as info:
            call_tool(
                session,
                "capture_browser_scenario",
                {
                    "start_url": {"url": f"http://127.0.0.1:{hog.port}/"},
                    "actions": [{"step_id": "grow", "action": "wait_for_timeout", "duration_ms": 4_000}],
                    "capture": {"after_each_step": ["url"], "at_end": ["title"], "events": ["page-errors"]},
                },
            )
    finally:
        session.close()
    err = info.value
    assert err.code == "resource_constraint", (err.code, err.message)
    assert "64 MiB" in err.message and err.details["setting"] == "REA_CHROMIUM_MEMORY_LIMIT_MB"
    assert err.details["reported_limits"] == {"javascript_heap_mb": 64}
    steps = err.details["partial_observation"]["steps"]
    assert steps[0]["status"] == "completed" and steps[-1]["status"] == "failed"
