"""Time and bytes of the specialist inspectors' default answers: inspect_recorded_crash, inspect_go_binary and
inspect_wasm_artifact, each on the fixture its tests build (a crashed two-thread C program's core, the Go program
built offline with Debian's Go, the clang wasm32 module), plus list_procedures of the stripped Go binary on native.

Figures are printed, never asserted: bytes are the normalized result as compact JSON (what an agent reads of it),
seconds the wall time of the call in process (cold: the first call on a fresh session).

    python benchmarks/specialist_inspectors.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "crash"), str(ROOT / "tests" / "golang"), str(ROOT / "tests" / "wasm")]

import crashfixtures  # noqa: E402
import gofixtures  # noqa: E402
import wasmfixtures  # noqa: E402

from rea.registry import default_registry  # noqa: E402
from rea.session import Session  # noqa: E402
from rea.testing import call_tool  # noqa: E402
from tests import toolchains  # noqa: E402


def measure(tool: str, args: dict[str, Any], setup: dict[str, Any] | None = None) -> None:
    session = Session(default_registry())
    try:
        if setup is not None:
            call_tool(session, "open_binary", setup)
        start = time.perf_counter()
        out = call_tool(session, tool, args)
        seconds = time.perf_counter() - start
        assert out.evidence is not None
        size = len(msgspec.json.encode(out.evidence.normalized_result))
        print(f"{tool:28} {seconds:7.2f} s  {size:7d} bytes  {' '.join(f'{k}={v}' for k, v in args.items())}")
    finally:
        session.close()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="rea-bench-specialists-") as tmp:
        out = Path(tmp)
        (out / "crash").mkdir()
        program = crashfixtures.build(toolchains.require("gcc"), out / "crash")
        core = crashfixtures.kernel_core(program, out / "crash") or crashfixtures.debugger_core(
            toolchains.require("gdb"), program, out / "crash"
        )
        (out / "go").mkdir()
        go = gofixtures.build(toolchains.require("go"), out / "go")
        (out / "wasm").mkdir()
        tools = toolchains.require_all(("clang", "wasm-ld"))
        module = wasmfixtures.build(tools["clang"], tools["wasm-ld"], out / "wasm")
        measure("inspect_recorded_crash", {"path": str(core)})
        measure("inspect_recorded_crash", {"path": str(core), "executable_path": str(program)})
        measure("inspect_recorded_crash", {"path": str(core), "executable_path": str(program), "registers": False})
        for kind in ("elf", "stripped", "pe", "macho"):
            measure("inspect_go_binary", {"path": str(go[kind])})
        measure("list_procedures", {"limit": 100}, {"path": str(go["stripped"]), "provider_id": "native"})
        measure("inspect_wasm_artifact", {"path": str(module)})
        measure("inspect_wasm_artifact", {"path": str(module), "function": "twice_answer"})
        measure("list_procedures", {}, {"path": str(module)})


if __name__ == "__main__":
    main()
