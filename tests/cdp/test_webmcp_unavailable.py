"""discover_webmcp_tools on a Chromium launched without the WebMCP feature (issue 23 item 13): the DevTools domain
answers, but the page has no model context, so the discovery is ``unavailable`` with the remediation."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from rea_plugins.cdp.browser import OwnedBrowser
from tests import toolchains
from tests.cdp.conftest import navigate
from tests.cdp.conftest import page_id
from tests.cdp.site import Site


@pytest.fixture
def plain_browser(site: Site) -> Iterator[OwnedBrowser]:
    toolchains.require("chromium")
    owned = OwnedBrowser.launch(window=(800, 600), start_url="about:blank", features=())
    yield owned
    assert owned.close().remaining == ()


def test_without_the_feature_discovery_is_unavailable(
    rea_registry: Registry, plain_browser: OwnedBrowser, site: Site
) -> None:
    target = page_id(plain_browser.endpoint)
    navigate(plain_browser.endpoint, target, site.origin + "/")
    session = Session(rea_registry)
    try:
        found = result_of(
            session, "discover_webmcp_tools", {"cdp_endpoint": plain_browser.endpoint, "target_id": target}
        )
    finally:
        session.close()
    assert found["status"] == "unavailable"
    assert found["tools"]["items"] == [] and found["completeness"]["missing_sections"] == ["tools"]
    assert any("--enable-features=WebMCP" in line for line in found["limitations"])
