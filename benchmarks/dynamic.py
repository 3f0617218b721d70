"""Dynamic analysis cost: one process capture (sandboxed and not) and one LLDB call observation.

Compiles a tiny call chain with gcc, then prints median wall times of the whole tool call (start,
observe, finalize, clean up). Goal: a capture of a short program well under 1 s; an LLDB observation
of it (worker start, LLDB import, launch, two breakpoints) under 3 s.
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from rea.registry import load
from rea.session import Session
from rea.testing import call_tool

RUNS = 5
SOURCE = r"""
#include <stdio.h>
int add(int a, int b) { return a + b; }
int mul3(int a, int b, int c) { return add(a * b, c); }
int main(int argc, char **argv) { printf("%d\n", mul3(argc, 7, 5)); return 0; }
"""


def timed(session: Session, tool: str, args: dict[str, object]) -> float:
    start = time.perf_counter()
    call_tool(session, tool, args)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    session = Session(load())
    with tempfile.TemporaryDirectory(prefix="rea-bench-dynamic-") as tmp:
        src, exe = Path(tmp) / "chain.c", Path(tmp) / "chain"
        src.write_text(SOURCE)
        subprocess.run(["gcc", "-O0", "-o", str(exe), str(src)], check=True, capture_output=True)
        for mode in ("required", "none"):
            times = [
                timed(
                    session,
                    "capture_process_scenario",
                    {"executable": str(exe), "working_directory": tmp, "sandbox": mode},
                )
                for _ in range(RUNS)
            ]
            print(f"capture_process_scenario sandbox={mode:<8}  median {statistics.median(times):7.1f} ms")
        times = [
            timed(
                session,
                "observe_native_calls",
                {"executable": str(exe), "functions": ["add", "mul3"], "return_values": True},
            )
            for _ in range(RUNS)
        ]
        print(f"observe_native_calls (2 breakpoints)        median {statistics.median(times):7.1f} ms")
    session.close()


if __name__ == "__main__":
    main()
