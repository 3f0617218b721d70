"""Fixtures for the browser tests: the test site, one owned Chromium per module, a session per test, and the
leftover check."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from rea.context import CallContext
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea_plugins.cdp import connection as cdp
from rea_plugins.cdp.browser import OwnedBrowser
from rea_plugins.cdp.targets import attach
from tests import toolchains
from tests.browsers import browser_processes
from tests.browsers import check_none_left
from tests.cdp.site import Site


@pytest.fixture(scope="module", autouse=True)
def no_browser_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each browser test module leaves no Chromium process behind (tests.browsers names any it finds)."""
    before = browser_processes()
    yield
    check_none_left(before, request.module.__name__)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    served = Site()
    yield served
    served.close()


@pytest.fixture(scope="module")
def browser(site: Site) -> Iterator[OwnedBrowser]:
    """One headless Chromium per module, launched (and reaped) by the plugin's own launcher."""
    toolchains.require("chromium")
    owned = OwnedBrowser.launch(window=(800, 600), start_url=site.origin + "/")
    yield owned
    outcome = owned.close()
    assert outcome.remaining == ()


@pytest.fixture
def session(rea_registry: Registry) -> Iterator[Session]:
    s = Session(rea_registry)
    yield s
    s.close()


def target_args(browser: OwnedBrowser, page: str, **more: Any) -> dict[str, Any]:
    """A page tool's arguments: the browser's endpoint, the page's target id and ``more``."""
    return {"cdp_endpoint": browser.endpoint, "target_id": page, **more}


def page_id(endpoint: str, url: str | None = None) -> str:
    """The browser's page target: the one at ``url`` when there is one (a first run may open another)."""
    with cdp.opened(endpoint) as conn:
        pages = [t for t in conn.call("Target.getTargets")["targetInfos"] if t["type"] == "page"]
    chosen = next((t for t in pages if url and t.get("url", "").startswith(url)), pages[0])
    return str(chosen["targetId"])


# Set in the document a navigation leaves: the old document at the same URL is complete too, and is not the new one.
_LEAVING = "window.__reaTestLeaving = true"
_STATE = "document.readyState + ' ' + location.href + ' ' + (window.__reaTestLeaving === true)"


def _complete(conn: Any, session: str, url: str) -> bool:
    """The new document at ``url`` finished loading (a load event can be missed on a loaded two-core machine)."""
    try:
        reply = conn.call(
            "Runtime.evaluate", {"expression": _STATE, "returnByValue": True}, session=session, timeout_s=2
        )
    except ReaError:  # the document is being replaced: not complete yet
        return False
    return bool(reply.get("result", {}).get("value") == f"complete {url} false")


def navigate(endpoint: str, target_id: str, url: str) -> None:
    """The test drives its own browser to ``url`` and waits for the load (scripts registered by then)."""
    with cdp.opened(endpoint) as conn:
        loaded: list[Any] = []
        conn.subscribe(lambda m, p, s: loaded.append(p) if m == "Page.loadEventFired" else None)
        session = attach(conn, target_id, CallContext())
        conn.call("Page.enable", session=session)
        conn.call("Runtime.evaluate", {"expression": _LEAVING}, session=session, timeout_s=10)
        conn.call("Page.navigate", {"url": url}, session=session)
        started = time.monotonic()
        retried = False
        # The load event, or the document saying it is complete; one more navigation if neither comes soon
        # (a first browser start in a fresh environment has been seen to drop the first one).
        while not loaded and time.monotonic() - started < 60:
            time.sleep(0.2)
            if loaded or (time.monotonic() - started > 2 and _complete(conn, session, url)):
                break
            if not retried and time.monotonic() - started > 20:
                retried = True
                conn.call("Page.navigate", {"url": url}, session=session)
        assert loaded or _complete(conn, session, url), "the page did not load"
        time.sleep(0.3)  # a few polling fetches happen after load


@pytest.fixture(scope="module")
def page(browser: OwnedBrowser, site: Site) -> str:
    target = page_id(browser.endpoint, site.origin)
    navigate(browser.endpoint, target, site.origin + "/")
    return target
