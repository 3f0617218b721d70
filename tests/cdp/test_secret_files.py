"""Secrets from a private file (issue 24 item 15): nothing in rea's environment, the value reaches the page and
nowhere in the capture; a file others may read, or one that is no regular file, is refused before any browser."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from tests import toolchains
from tests.cdp.site import Site
from tests.cdp.test_cdp_browser import SCENARIO_ACTIONS

SECRET = "file.secret@example.test"


def _scenario(site: Site, secret_file: str) -> dict[str, object]:
    return {
        "start_url": {"url": site.origin + "/"},
        "actions": SCENARIO_ACTIONS,
        "secrets": [{"secret_id": "email", "file": secret_file}],
        "capture": {"after_each_step": ["url", "dom"], "at_end": ["title"], "events": ["network"]},
    }


def test_a_secret_from_a_private_file_reaches_the_page_and_not_the_capture(
    rea_registry: Registry, site: Site, tmp_path: Path
) -> None:
    toolchains.require("chromium")
    secret = tmp_path / "email"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    assert SECRET not in "".join(os.environ.values())
    posts = len(site.posts)
    session = Session(rea_registry)
    try:
        out = call_tool(session, "capture_browser_scenario", _scenario(site, str(secret))).evidence
    finally:
        session.close()
    assert out is not None
    assert site.posts[posts:] == [{"email": SECRET}]
    assert SECRET not in str(out.normalized_result) and SECRET not in str(out.parameters)


@pytest.mark.parametrize("kind", ["group-readable", "fifo", "relative"])
def test_a_secret_file_others_can_read_or_no_regular_file_is_refused(
    rea_registry: Registry, site: Site, tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "email"
    if kind == "fifo":
        os.mkfifo(path, 0o600)
    else:
        path.write_text(SECRET)
        path.chmod(0o640)
    session = Session(rea_registry)
    try:
        with pytest.raises(ReaError) as info:
            call_tool(
                session, "capture_browser_scenario", _scenario(site, "email" if kind == "relative" else str(path))
            )
    finally:
        session.close()
    assert info.value.code == "invalid_request"
    assert info.value.details["issues"][0]["path"] == "secrets/0/file"
