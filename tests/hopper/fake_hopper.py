"""TEST ONLY: a fake Hopper launcher (HOPPER_LAUNCHER_PATH, with REA_HOPPER_TEST_ANY_HOST=1 on Linux).

Invoked as Hopper is: ``<launcher> --analysis --python <bridge.py> --executable <target>``. It runs rea's real
bridge (loaded from the ``--python`` path) over the fake Hopper API (fake_hopper_api.py), with faults injected
by REA_HOPPER_TEST_MODE:

- ``acknowledge`` (default): a well-behaved Hopper; shutdown is acknowledged and the launcher exits;
- ``unconfirmed``: shutdown is never answered;
- ``cleanup-required``: the bridge runs in a process that left the launcher's session (as a GUI app started
  through the system would) and acknowledges shutdown without closing the document;
- ``malformed`` / ``wrong-id`` / ``wrong-token``: the first answer is not JSON / answers another request /
  carries another token;
- ``events``: a progress and a diagnostic event before every answer;
- ``exit:CODE``: dies before listening; ``silent``: never listens; ``slow:N``: analysis takes N seconds.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _args(argv: list[str]) -> dict[str, str]:
    out, i = {}, 0
    while i < len(argv):
        if argv[i] in ("--python", "--executable") and i + 1 < len(argv):
            out[argv[i]] = argv[i + 1]
            i += 2
        else:
            i += 1
    return out


def main(argv: list[str]) -> int:
    args = _args(argv)
    if "--python" not in args or "--executable" not in args:
        print("fake hopper: expected --python SCRIPT --executable TARGET", file=sys.stderr)
        return 64
    mode, _, arg = os.environ.get("REA_HOPPER_TEST_MODE", "acknowledge").partition(":")
    if mode == "exit":
        return int(arg or "70")
    if mode == "silent":
        while True:
            time.sleep(3600)
    os.environ["REA_HOPPER_TEST_FACADE"] = str(HERE / "fake_hopper_api.py")
    spec = importlib.util.spec_from_file_location("rea_hopper_bridge", args["--python"])
    assert spec is not None and spec.loader is not None
    bridge = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bridge)
    if mode == "cleanup-required":
        pid = os.fork()
        if pid:
            while True:  # the launcher rea owns; the bridge lives in the escaped child
                time.sleep(3600)
        os.setsid()
    session = bridge.load_session()
    api = bridge.HopperApiFacade(bridge.hopper_api())
    if mode == "slow":
        wait = api.wait_for_analysis

        def slow_analysis() -> None:
            time.sleep(float(arg or "5"))
            wait()

        api.wait_for_analysis = slow_analysis
    server = _faulty(bridge, mode)(session, bridge.Bridge(api))
    status = server.serve(api.wait_for_analysis)
    if mode == "cleanup-required":
        time.sleep(120)  # still holding the document
    return int(status)


def _faulty(bridge: Any, mode: str) -> Any:
    class FaultyBridge(bridge.Bridge):  # type: ignore[misc, name-defined]
        def shutdown(self, params: dict[str, Any]) -> dict[str, Any]:
            if mode == "unconfirmed":
                while True:
                    time.sleep(3600)
            if mode == "cleanup-required":
                return {"shutdown": True, "analysis_stopped": True, "document_closed": False}
            return dict(super().shutdown(params))

    class FaultyServer(bridge.Server):  # type: ignore[misc, name-defined]
        answered = 0

        def __init__(self, session: dict[str, Any], inner: Any) -> None:
            super().__init__(session, FaultyBridge(inner.api))

        def send(self, message: dict[str, Any]) -> None:
            if "id" in message:
                type(self).answered += 1
                first = type(self).answered == 1
                if mode == "events":
                    super().send({"event": "progress", "message": "fake: reading the document"})
                    super().send({"event": "diagnostic", "message": "fake: a section could not be typed"})
                elif first and mode == "malformed":
                    self.conn.sendall(b"{not json\n")
                    return
                elif first and mode == "wrong-id":
                    message = {**message, "id": 1000 + int(message.get("id") or 0)}
                elif first and mode == "wrong-token":
                    self.conn.sendall(json.dumps({**message, "token": "0" * 64}).encode() + b"\n")
                    return
            super().send(message)

    return FaultyServer


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
