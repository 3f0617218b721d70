"""Firmware, EVM and SQLite answers (issue 52): seconds and bytes per call, on the tests' fixtures built in this run.

The firmware image (an ext2 file system, a gzip and an xz stream and an ELF at known offsets), the SQLite database
with its WAL and the contract's runtime bytecode are the tests' own (``tests/firmware/fwfixtures.py``,
``tests/sqlite/sqlitefixtures.py``, ``tests/evm/evmfixtures.py``). Each call goes to ``rea serve`` over MCP stdio
with the SDK client; the bytes are those of the result's text content in the server's default (lean)
presentation, the seconds the client's wall clock. Goal: every default answer under 8 KB.

    python benchmarks/specialist_answers.py
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# benchmarks/ itself off the path: its http.py would shadow the standard library's http for the MCP client.
sys.path[:] = [str(ROOT), *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import anyio  # noqa: E402

from tests.evm.evmfixtures import RUNTIME_HEX  # noqa: E402
from tests.firmware.fwfixtures import assemble  # noqa: E402
from tests.mcp.harness import connect  # noqa: E402
from tests.sqlite.sqlitefixtures import build  # noqa: E402

GOAL = 8 * 1024


async def measure(calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, str, int, float, bool]]:
    rows = []
    async with connect() as client:
        for tool, args in calls:
            start = time.monotonic()
            result = await client.call_tool(tool, args)
            seconds = time.monotonic() - start
            size = sum(len(getattr(c, "text", "").encode()) for c in result.content)
            label = ", ".join(f"{k}={v}" for k, v in args.items() if k != "path" and k != "bytecode")
            rows.append((tool, label, size, seconds, not result.is_error))
            content = result.structured_content or {}
            out = content.get("normalized_result", {})
            if tool == "extract_firmware" and "output_directory" in out:
                shutil.rmtree(out["output_directory"], ignore_errors=True)
    return rows


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="rea-bench-specialists-") as tmp:
        root = Path(tmp)
        (root / "fw").mkdir()
        (root / "db").mkdir()
        firmware = assemble(root / "fw")
        db = build(root / "db")
        code = root / "Token.bin-runtime"
        code.write_text("0x" + RUNTIME_HEX)
        calls: list[tuple[str, dict[str, Any]]] = [
            ("inspect_firmware_regions", {"path": str(firmware["image"])}),
            ("extract_firmware", {"path": str(firmware["image"])}),
            ("extract_firmware", {"path": str(firmware["bomb"]), "max_output_bytes": 4 << 20}),
            ("inspect_evm_interface", {"path": str(code)}),
            ("inspect_sqlite_database", {"path": str(db)}),
            ("inspect_sqlite_database", {"path": str(db), "table": "users"}),
            ("inspect_artifact", {"path": str(firmware["image"])}),
        ]
        rows = anyio.run(measure, calls)
    print(f"{'tool':<26} {'arguments':<28} {'bytes':>7} {'seconds':>8}  answered")
    for tool, label, size, seconds, ok in rows:
        print(f"{tool:<26} {label:<28} {size:>7} {seconds:>8.2f}  {ok}")
    largest = max(r[2] for r in rows)
    print(f"largest answer {largest} bytes (goal {GOAL}): {'met' if largest <= GOAL else 'MISSED'}")
    return 0 if largest <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
