"""Debug-session latencies and the emulator's speed, through the tools as an agent calls them (in process).

Builds a small PIE with gcc, then:
- a breakpoint hit: ``debug_continue`` from one stop at ``helper`` to the next (the program calls it in a loop);
- a step: ``debug_step`` by one instruction, and by a source line (over);
- a register read: ``debug_state`` with no backtrace, and with 16 frames;
each the median over ``--repeat`` calls (target: 20 ms each); the bytes procedure_info adds for a procedure the
debugger stopped at; the same latencies for an AArch64 build under qemu-user where the host has the cross
compiler and qemu-aarch64. Then ``emulate_procedure`` on an endless loop bounded
at ``--instructions``: instructions per second from the run's own time (target: 1 million), beside the whole
call's wall time (worker start, load image, result).

    python benchmarks/debugger.py [--repeat 30] [--instructions 20000000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rea import registry
from rea.session import Session
from rea.testing import result_of

SOURCE = r"""
#include <stdio.h>
int hits;
int helper(int a, int b) { hits++; return a * 10 + b; }
int spin(int x) { volatile int v = x; for (;;) v++; return v; }
int main(int argc, char **argv) {
    long total = 0;
    for (int i = 0; i < 100000; i++) total += helper(i, argc);
    printf("%ld\n", total);
    return argc > 5 ? spin(argc) : 0;
}
"""
TARGET_MS = 20.0
TARGET_IPS = 1_000_000


def _timed(session: Session, name: str, args: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    out: dict[str, Any] = result_of(session, name, args)
    return (time.perf_counter() - started) * 1000, out


def _median(session: Session, name: str, args: dict[str, Any], repeat: int) -> float:
    return statistics.median(_timed(session, name, args)[0] for _ in range(repeat))


def _line(label: str, ms: float, target: float = TARGET_MS) -> None:
    verdict = "ok" if ms <= target else "over"
    print(f"{label:<52} {ms:8.2f} ms   (target <= {target:.0f} ms: {verdict})")


def _debug_figures(session: Session, sid: str, repeat: int, prefix: str) -> None:
    result_of(session, "debug_breakpoint", {"session": sid, "procedure": "helper"})
    result_of(session, "debug_continue", {"session": sid})
    _line(
        f"{prefix}breakpoint hit (debug_continue to the next)",
        _median(session, "debug_continue", {"session": sid}, repeat),
    )
    _line(
        f"{prefix}step one instruction (debug_step)",
        _median(session, "debug_step", {"session": sid, "kind": "instruction"}, repeat),
    )
    _line(
        f"{prefix}step a line (debug_step over)",
        _median(session, "debug_step", {"session": sid, "kind": "over"}, repeat),
    )
    _line(
        f"{prefix}register read (debug_state, no backtrace)",
        _median(session, "debug_state", {"session": sid, "max_frames": 0}, repeat),
    )
    _line(
        f"{prefix}register read (debug_state, 16 frames)",
        _median(session, "debug_state", {"session": sid, "max_frames": 16}, repeat),
    )
    if not prefix:
        _line(
            "memory read 64 bytes (debug_read_memory)",
            _median(session, "debug_read_memory", {"session": sid, "address": "0x4010", "length": 64}, repeat),
        )


def _runtime_bytes(session: Session) -> None:
    """What procedure_info's runtime field costs an agent: the answer for helper (hit) and spin (never hit)."""
    hit = len(json.dumps(result_of(session, "procedure_info", {"procedure": "helper"})))
    runtime = len(json.dumps(result_of(session, "procedure_info", {"procedure": "helper"})["runtime"]))
    never = len(json.dumps(result_of(session, "procedure_info", {"procedure": "spin"})))
    print(f"{'procedure_info bytes (hit / never hit)':<52} {hit:8d} B / {never} B (runtime field {runtime} B)")


def _aarch64(session: Session, tmp: Path, repeat: int) -> None:
    """The same figures for an AArch64 build of the program under qemu-user, where the host has both."""
    gcc, qemu = shutil.which("aarch64-linux-gnu-gcc"), shutil.which("qemu-aarch64")
    if gcc is None or qemu is None:
        print("AArch64 under qemu-user: skipped (needs gcc-aarch64-linux-gnu and qemu-user)")
        return
    program = tmp / "loop-arm64"
    subprocess.run([gcc, "-O0", "-g", "-o", str(program), str(tmp / "loop.c")], check=True)
    launch_ms, launched = _timed(session, "debug_launch", {"executable": str(program)})
    sid = launched["session"]
    print(f"{'aarch64: debug_launch (qemu-aarch64 to main)':<52} {launch_ms:8.2f} ms")
    _debug_figures(session, sid, repeat, "aarch64: ")
    result_of(session, "debug_end", {"session": sid})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--instructions", type=int, default=20_000_000)
    args = parser.parse_args()
    gcc = shutil.which("gcc")
    if gcc is None:
        print("gcc is required (Debian package gcc)")
        return 2
    with tempfile.TemporaryDirectory(prefix="rea-bench-debugger-") as tmp:
        program = Path(tmp) / "loop"
        (Path(tmp) / "loop.c").write_text(SOURCE)
        subprocess.run([gcc, "-O0", "-g", "-o", str(program), str(Path(tmp) / "loop.c")], check=True)
        session = Session(registry.load())
        try:
            result_of(session, "open_binary", {"path": str(program)})
            launch_ms, launched = _timed(session, "debug_launch", {})
            sid = launched["session"]
            print(f"{'debug_launch (worker, LLDB, program to main)':<52} {launch_ms:8.2f} ms")
            _debug_figures(session, sid, args.repeat, "")
            _runtime_bytes(session)
            result_of(session, "debug_end", {"session": sid})
            _aarch64(session, Path(tmp), args.repeat)
            wall_ms, run = _timed(
                session,
                "emulate_procedure",
                {"procedure": "spin", "arguments": [1], "max_instructions": args.instructions, "timeout_ms": 120_000},
            )
            assert run["stop"]["reason"] == "instruction_limit", run["stop"]
            ips = args.instructions / (run["elapsed_ms"] / 1000)
            verdict = "ok" if ips >= TARGET_IPS else "under"
            print(
                f"{'emulator (emulate_procedure, endless loop)':<52} {ips / 1e6:8.2f} M instructions/s "
                f"({args.instructions} in {run['elapsed_ms']:.0f} ms; whole call {wall_ms:.0f} ms; "
                f"target >= 1 M/s: {verdict})"
            )
            small_ms, _ = _timed(session, "emulate_procedure", {"procedure": "helper", "arguments": [4, 2]})
            print(f"{'emulate_procedure of helper (whole call)':<52} {small_ms:8.2f} ms")
        finally:
            session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
