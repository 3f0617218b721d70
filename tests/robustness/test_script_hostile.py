"""Hostile analysis scripts through one ``rea serve``: every reply is a result or a canonical typed error.

``run_analysis_script`` takes source text and runs it, so its hostile inputs are scripts: the three examples
of docs/examples flipped and cut (fixed seed), and hand-written ones that attack the worker's pipe (garbage,
a lying frame header, forged frames), end their own process (signals, closed pipes, os._exit), or hand back
what JSON cannot carry. The server must answer each within its deadline, never crash, leave no worker
behind, and never say a Python exception's name in its own words (the script's traceback is data).
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rea.process import sandbox
from tests import toolchains
from tests.robustness import runner
from tests.robustness.server import Server
from tests.scripting.conftest import EXAMPLES
from tests.scripting.conftest import STRINGS_C

SEED = 44
DEADLINE_S = 90
WORKER_MODULE = b"rea_plugins.scripting.worker"
PRINTABLE = "abcdefghijklmnopqrstuvwxyz_()[]{}:.,'\"\\#=+-*/ \n\t0123456789é\u2028\x00"

HAND: dict[str, str] = {
    "null-byte": "x = 1\x00\n",
    "syntax": "def f(:\n",
    "indentation": "if True:\nprint(1)\n",
    "garbage-on-pipe": "import os\nfor fd in range(3, 32):\n    try:\n        os.write(fd, b'\\xff' * 64)\n"
    "    except OSError:\n        pass\n",
    "lying-header": "rea._link.out_fd and __import__('os').write(rea._link.out_fd, b'\\x7f\\xff\\xff\\xff')\n"
    "import time\ntime.sleep(1)\n",
    "forged-failure-bytes": "from rea.process import frames\n"
    "rea._link.send(frames.Failure(id=1, code='bogus', message='m', details={'b': b'\\x00'}))\n",
    "forged-reply-shape": "from rea.process import frames\nrea._link.send(frames.ReplyOut(id=1, normalized=[1, 2]))\n",
    "forged-reply-json": "from rea.process import frames\nrea._link.send(frames.ReplyOut(id=1, normalized="
    "{'printed': '', 'printed_bytes': 0, 'printed_truncated': False, 'result_json': '{'}))\n",
    "forged-call-and-op": "from rea.process import frames\n"
    "rea._link.send(frames.Request(id=99, op='call', params={'tool': 5}))\n"
    "rea._link.send(frames.Request(id=98, op='steal', params={}))\nresult = 'went on'\n",
    "bytes-argument": "rea.xrefs(address=b'0x10')\n",
    "nan-argument": "rea.list_procedures(limit=float('nan'))\n",
    "nested-script": "rea.call('run_analysis_script', {'source': 'result = 1'})\n",
    "forged-tool-error": "raise rea.Error('bogus', 'TypeError: made up')\n",
    "segfault": "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
    "sigkill": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
    "os-exit": "import os\nos._exit(7)\n",
    "closed-fds": "import os\nfor fd in range(0, 32):\n    try:\n        os.close(fd)\n"
    "    except OSError:\n        pass\nresult = 1\n",
    "exit-text": "import sys\nsys.exit('TypeError: not really')\n",
    "keyboard-interrupt": "raise KeyboardInterrupt\n",
    "str-raises": "class E(Exception):\n    def __str__(self):\n        raise ValueError('no')\nraise E()\n",
    "surrogate-exception": "raise ValueError('\\ud800' * 10)\n",
    "recursion": "def f():\n    return f()\nf()\n",
    "deep-result": "r = []\nfor _ in range(100000):\n    r = [r]\nresult = r\n",
    "huge-int-result": "result = 2 ** 200\n",
    "nan-result": "result = float('nan')\n",
    "set-result": "result = {1, 2}\n",
    "surrogate-print": "print('\\ud800')\nresult = 1\n",
    "printing-thread": "import threading\ndef spam():\n    while True:\n        print('x' * 1000)\n"
    "threading.Thread(target=spam, daemon=True).start()\nresult = 1\n",
    "big-print": "print('y' * (10 << 20))\n",
    "memory": "x = bytearray(1 << 40)\n",
    "fork-bomb": "import os, time\nfor _ in range(500):\n    if os.fork() == 0:\n"
    "        time.sleep(30)\n        os._exit(0)\n",
    "too-many-calls": "for _ in range(1001):\n    rea.list_segments()\n",
    # rea's code is importable in the sandbox, its state is not: the cache and annotations are not there.
    "server-state": "import rea.config as c, os\n"
    "result = [os.path.exists(c.cache_dir()), os.path.exists(c.annotations_dir())]\n",
}


def _mutants() -> dict[str, str]:
    rng = random.Random(SEED)
    out: dict[str, str] = {}
    for path in sorted(EXAMPLES.glob("*.py")):
        text = path.read_text()
        for i in range(10):
            chars = list(text)
            for _ in range(rng.randrange(1, 8)):
                chars[rng.randrange(len(chars))] = rng.choice(PRINTABLE)
            out[f"{path.stem}-flip-{i}"] = "".join(chars)
        for i in range(4):
            out[f"{path.stem}-cut-{i}"] = text[: rng.randrange(1, len(text))]
    return out


def _workers() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if WORKER_MODULE in (entry / "cmdline").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    toolchains.require("bwrap")
    failure = sandbox.bwrap_failure()
    if failure is not None:
        toolchains.unavailable(failure)
    return toolchains.compile_programs({"strings": STRINGS_C}, tmp_path_factory.mktemp("script-hostile"))["strings"]


def test_hostile_scripts_through_one_server(program: Path, tmp_path: Path) -> None:
    server = Server.under(tmp_path)
    outcomes: Counter[str] = Counter()
    by_case: dict[str, str] = {}
    results: dict[str, Any] = {}
    problems: list[str] = []
    cases = {**HAND, **_mutants()}
    try:
        opened = server.call("open_binary", {"path": str(program)}, DEADLINE_S)
        assert opened.status == "ok", opened
        for name, source in cases.items():
            reply = server.call("run_analysis_script", {"source": source, "filename": name}, DEADLINE_S)
            code = runner.judge(reply, name, problems)
            if code is None:
                continue
            if code == "ok":
                results[name] = reply.payload["normalized_result"].get("result")
            outcomes[code] += 1
            by_case[name] = code
            left = _workers()
            if left:
                problems.append(f"{name}: script workers left: {left}")
            # The server still answers, and the session is intact.
            ping = server.request("ping", {}, 10)
            if ping.status != "ok":
                problems.append(f"{name}: ping after it: {ping.status}")
        runner.REPORT.append(
            f"script hostile: {len(cases)} scripts: {dict(sorted(outcomes.items()))}; "
            f"peak RSS {server.peak_rss_kib() // 1024} MiB"
        )
    finally:
        server.close()
    assert not problems, "\n".join(problems[:30])
    expected = {
        "syntax": "invalid_request",
        "null-byte": "invalid_request",
        "bytes-argument": "invalid_request",
        "nan-argument": "invalid_request",
        "nested-script": "access_denied",
        "forged-tool-error": "execution_failure",
        "recursion": "resource_constraint",
        "deep-result": "invalid_request",
        "huge-int-result": "invalid_request",
        "memory": "resource_constraint",
        "fork-bomb": "resource_constraint",
        "too-many-calls": "resource_constraint",
        "forged-call-and-op": "ok",
        "surrogate-print": "ok",
        "big-print": "ok",
        "server-state": "ok",
    }
    assert {name: by_case[name] for name in expected} == expected
    assert results["forged-call-and-op"] == "went on"
    assert results["server-state"] == [False, False]
