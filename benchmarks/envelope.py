"""What a result's envelope costs an agent, per result presentation (``REA_RESULT_PRESENTATION``).

For each presentation a live ``rea serve`` is driven through the official SDK's stdio client (which validates every
structured result against the advertised output schema): ``open_binary`` on the target, then a few native reads.
Printed per call: the bytes of the whole structured result and of its envelope (the record but its
normalized_result), as compact JSON, the way the server sends it. Issue 44's goals: an envelope of at most 400 B
and an ``open_binary`` of at most 800 B under the default presentation (lean).

    python benchmarks/envelope.py [TARGET]     (default /bin/ls)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters
from mcp.client.stdio import stdio_client

PRESENTATIONS = ("lean", "compact", "complete")
ENVELOPE_GOAL = 400
OPEN_BINARY_GOAL = 800
CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("list_procedures", {"limit": 1}),
    ("procedure_info", {"procedure": "entry"}),
    ("list_strings", {"limit": 1}),
    ("binary_overview", {}),
)


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def wire(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


async def _measure(target: str, presentation: str | None) -> list[tuple[str, int, int | None]]:
    """(call, result bytes, envelope bytes or None for a plain object) for each call."""
    extra = {} if presentation is None else {"REA_RESULT_PRESENTATION": presentation}
    params = StdioServerParameters(command=sys.executable, args=["-m", "rea", "serve"], env=server_env(**extra))
    rows: list[tuple[str, int, int | None]] = []
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            opened = await session.call_tool("open_binary", {"path": target})
            if opened.is_error:
                raise SystemExit(f"open_binary failed: {opened.content[0]}")
            rows.append(("open_binary", wire(opened.structured_content), None))
            for name, args in CALLS:
                out = await session.call_tool(name, args)
                doc = out.structured_content
                if out.is_error or doc is None:
                    continue
                envelope = {k: v for k, v in doc.items() if k != "normalized_result"}
                rows.append((name, wire(doc), wire(envelope)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", nargs="?", default="/bin/ls")
    args = parser.parse_args()
    failed = False
    print(f"target {args.target}; bytes of compact JSON (result / envelope = the record but normalized_result)")
    for presentation in (None, *PRESENTATIONS):
        label = "default" if presentation is None else presentation
        rows = anyio.run(_measure, args.target, presentation)
        print(f"\n{label}")
        for name, whole, envelope in rows:
            shown = "" if envelope is None else f"  envelope {envelope:>6,}"
            print(f"  {name:<18} result {whole:>7,}{shown}")
        if presentation is None:
            worst = max(e for _, _, e in rows if e is not None)
            opened = next(w for n, w, _ in rows if n == "open_binary")
            ok = worst <= ENVELOPE_GOAL and opened <= OPEN_BINARY_GOAL
            failed |= not ok
            print(
                f"  goal: envelope <= {ENVELOPE_GOAL} B (largest {worst}), open_binary <= {OPEN_BINARY_GOAL} B "
                f"({opened}): {'met' if ok else 'MISSED'}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
