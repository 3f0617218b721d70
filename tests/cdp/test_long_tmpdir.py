"""A browser launched from a long TMPDIR (issue 24 item 13): its singleton socket path still fits, and a launch
that fails carries the browser's own reason."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from rea.errors import ReaError
from rea_plugins.cdp import browser as browser_mod
from rea_plugins.cdp.browser import OwnedBrowser
from tests import toolchains


def test_a_long_tmpdir_still_launches_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toolchains.require("chromium")
    long_tmp = tmp_path / ("t" * 60)
    long_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(long_tmp))
    assert len(str(long_tmp)) >= 37
    before = set(os.listdir("/tmp"))
    owned = OwnedBrowser.launch(window=(400, 300))
    try:
        assert owned.alive and owned.sockets is not None and len(owned.sockets) < 30
    finally:
        assert owned.close().remaining == ()
    assert not os.path.exists(owned.sockets)
    assert {n for n in set(os.listdir("/tmp")) - before if n.startswith("rea-s-")} == set()


def test_a_failed_launch_says_the_browsers_own_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "chromium"
    fake.write_text(
        "#!/bin/sh\necho '[1:1:ERROR:socket.cc(42)] Socket path too long: /x/SingletonSocket' >&2\nexit 134\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("REA_CHROMIUM_PATH", str(fake))
    with pytest.raises(ReaError) as info:
        OwnedBrowser.launch(window=(400, 300))
    err = info.value
    assert err.code == "provider_unavailable"
    assert "Socket path too long" in err.message and "Socket path too long" in err.details["browser_message"]
    assert browser_mod.find_chromium()[0] == str(fake)
