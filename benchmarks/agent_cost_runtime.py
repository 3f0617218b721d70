"""What the V8 inspector tools cost an agent: the bytes of each answer as rea serve presents it (lean), and the
seconds each call takes, on a Node program under --inspect on loopback (built here: main.js, two modules, a module
never loaded, and a plugin the static graph has not seen).

    python benchmarks/agent_cost_runtime.py [--scripts N]

--scripts adds N more required modules, to see how an observation and a reconciliation grow with the program.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# This folder's http.py would shadow the standard library's http package, which urllib (the inspector's HTTP
# discovery) imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import msgspec  # noqa: E402

from rea.presentation import LEAN  # noqa: E402
from rea.presentation import present  # noqa: E402
from rea.registry import load  # noqa: E402
from rea.session import Session  # noqa: E402
from rea.testing import call_tool  # noqa: E402


def _program(root: Path, extra: int) -> None:
    (root / "lib").mkdir()
    (root / "plugins").mkdir()
    (root / "lib" / "util.js").write_text("exports.add = (a, b) => a + b;\n")
    (root / "lib" / "unused.js").write_text("exports.never = 1;\n")
    for i in range(extra):
        (root / "lib" / f"m{i}.js").write_text(f"exports.v{i} = {i};\n")
    requires = "".join(f"require('./lib/m{i}.js');\n" for i in range(extra))
    (root / "main.js").write_text(
        "const util = require('./lib/util.js');\n"
        + requires
        + "const fs = require('fs');\n"
        + "for (const f of fs.readdirSync(__dirname + '/plugins')) require(__dirname + '/plugins/' + f);\n"
        + "console.log('ready', util.add(1, 2));\nsetInterval(() => {}, 1000);\n"
    )
    (root / "package.json").write_text('{"name": "bench", "version": "1.0.0", "main": "main.js"}\n')


def _bytes(out: Any) -> int:
    doc = present(out.evidence, LEAN) if out.evidence is not None else out.structured
    return len(json.dumps(msgspec.to_builtins(doc), separators=(",", ":")).encode())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scripts", type=int, default=0)
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "app"
        root.mkdir()
        _program(root, ns.scripts)
        session = Session(load())
        static = call_tool(session, "analyze_javascript_application", {"input_path": str(root)})
        (root / "plugins" / "late.js").write_text("module.exports = 1;\n")
        proc = subprocess.Popen(
            ["node", "--inspect=127.0.0.1:0", "main.js"],
            cwd=root,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            assert proc.stderr is not None
            port = re.search(rb":(\d+)/", proc.stderr.readline())
            assert port is not None
            endpoint = f"http://127.0.0.1:{port.group(1).decode()}"
            rows = []

            def timed(name: str, args: dict[str, Any]) -> Any:
                began = time.monotonic()
                out = call_tool(session, name, args)
                rows.append((name, time.monotonic() - began, _bytes(out)))
                return out

            listing = timed("list_javascript_runtime_targets", {"inspector_endpoint": endpoint})
            target = listing.evidence.normalized_result["targets"][0]["target_id"]
            obs = timed(
                "observe_javascript_runtime",
                {
                    "inspector_endpoint": endpoint,
                    "target_id": target,
                    "runtime_kind": "node",
                    "allowed_file_roots": [str(root)],
                    "observation_ms": 500,
                },
            )
            rec = timed(
                "reconcile_javascript_runtime",
                {
                    "runtime_observations": [{"kind": "retained-evidence", "evidence_id": obs.evidence.evidence_id}],
                    "static_layers": [{"kind": "retained-evidence", "evidence_id": static.evidence.evidence_id}],
                },
            )
            counts = rec.evidence.normalized_result["counts"]
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            session.close()
    print(f"program: {3 + ns.scripts} application scripts loaded, 1 never loaded, 1 unseen by the static graph")
    for name, seconds, size in rows:
        print(f"{name:34s} {seconds * 1000:8.0f} ms {size / 1024:8.1f} KB (lean)")
    print(f"reconcile counts: {counts}")


if __name__ == "__main__":
    main()
