"""Browser tool cost on a headless Chromium: launch, passive tools, and one three-step scenario.

Serves the test site on 127.0.0.1 (tests/cdp/site.py), then prints median wall times of whole tool calls.
Goal: passive calls well under 100 ms beyond their observation window (0 here); a launched three-step scenario
(launch, start page, fill, click, wait, artifacts, teardown) about 3 s, of which Chromium's own startup until
/json/version answers (~1.1 s under bubblewrap on 2 cores) and graceful exit (~0.45 s) are most.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from timing import median_ms

from rea.registry import load
from rea.session import Session
from rea.testing import call_tool
from rea_plugins.cdp.browser import OwnedBrowser
from tests.cdp.conftest import navigate
from tests.cdp.conftest import page_id
from tests.cdp.site import Site


def main() -> None:
    site = Site()
    session = Session(load())
    os.environ["REA_BENCH_EMAIL"] = "bench@example.test"
    try:
        print(f"launch and close an owned browser: {median_ms(lambda: OwnedBrowser.launch().close()):.0f} ms")
        browser = OwnedBrowser.launch(window=(800, 600))
        try:
            page = page_id(browser.endpoint)
            navigate(browser.endpoint, page, site.origin + "/")
            args = {"cdp_endpoint": browser.endpoint, "target_id": page}
            for tool, extra in (
                ("list_browser_targets", {"cdp_endpoint": browser.endpoint}),
                ("inspect_web_page", {**args, "observation_ms": 0}),
                ("discover_webmcp_tools", {**args, "observation_ms": 0}),
                ("capture_web_screenshot", args),
            ):
                print(f"{tool}: {median_ms(lambda t=tool, a=extra: call_tool(session, t, a)):.0f} ms")
        finally:
            browser.close()
        scenario = {
            "start_url": {"url": site.origin + "/"},
            "secrets": [{"secret_id": "email", "environment_variable": "REA_BENCH_EMAIL"}],
            "actions": [
                {
                    "step_id": "email",
                    "action": "fill",
                    "locator": {"kind": "test_id", "value": "email"},
                    "value": {"source": "secret", "secret_id": "email"},
                },
                {
                    "step_id": "submit",
                    "action": "click",
                    "locator": {"kind": "role", "role": "button", "name": "Subscribe"},
                },
                {
                    "step_id": "done",
                    "action": "wait_for",
                    "locator": {"kind": "css", "selector": "#result"},
                    "state": "visible",
                },
            ],
        }
        ms = median_ms(lambda: call_tool(session, "capture_browser_scenario", scenario))
        print(f"capture_browser_scenario (launch, 3 steps, url+dom per step): {ms:.0f} ms")
    finally:
        session.close()
        site.close()


if __name__ == "__main__":
    main()
