"""Scaling of the native whole-program index: the same synthetic code at 1x, 2x, 4x and 8x.

Generates x86-64 assembly (functions with calls, branches, data references and no unwind tables),
links it with gcc and strips it, so every procedure past ``main`` must be discovered from calls (and
``main`` itself from the entry point). Prints time per MB of code for the flow index and the data
references; a super-linear step shows as a growing column. Two call shapes: a tree (few discovery
rounds) and a chain (one new procedure per round).

Run: ``python benchmarks/native_scaling.py [--base 4000] [--runs 3]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def assembly(count: int, shape: str) -> str:
    """``count`` functions calling each other as a binary tree or a chain, plus ``main`` and a table."""
    out = [".intel_syntax noprefix", ".section .rodata", ".p2align 4", "table:"]
    out += [f"    .long {i * 7 + 3}" for i in range(64)]
    out += [
        ".text",
        ".globl main",
        "main:",
        "    push rbx",
        "    mov edi, 5",
        "    call f0",
        "    pop rbx",
        "    xor eax, eax",
        "    ret",
    ]
    for i in range(count):
        kids = [2 * i + 1, 2 * i + 2] if shape == "tree" else [i + 1]
        kids = [k for k in kids if k < count]
        out += [
            "    .p2align 4",
            f"f{i}:",
            "    push rbx",
            "    mov ebx, edi",
            f"    lea rax, [rip + table + {4 * (i % 64)}]",
            "    add ebx, dword ptr [rax]",
            f"    cmp ebx, {i % 97}",
            f"    jle .L{i}a",
        ]
        if kids:
            out += ["    mov edi, ebx", f"    call f{kids[0]}", "    add ebx, eax"]
        out += [f".L{i}a:", "    test ebx, 1", f"    je .L{i}b"]
        if len(kids) > 1:
            out += [f"    mov edi, {i}", f"    call f{kids[1]}", "    xor ebx, eax"]
        out += [
            f".L{i}b:",
            "    imul ebx, ebx, 33",
            "    shr ebx, 3",
            f"    add ebx, {i & 0xFFF}",
            "    mov eax, ebx",
            "    pop rbx",
            "    ret",
        ]
    return "\n".join(out) + "\n"


def build(count: int, shape: str, work: Path) -> Path:
    src = work / f"{shape}-{count}.s"
    exe = work / f"{shape}-{count}"
    src.write_text(assembly(count, shape))
    subprocess.run(
        ["gcc", "-O2", "-s", "-fno-asynchronous-unwind-tables", "-o", str(exe), str(src)],
        check=True,
        capture_output=True,
    )
    return exe


def measure(path: Path, runs: int) -> tuple[float, float, int, int]:
    """Best-of-``runs`` seconds for the flow index and the data references, procedures, code bytes."""
    from rea_plugins.native.extract import extract
    from rea_plugins.native.image import Image
    from rea_plugins.native.index import Analysis
    from rea_plugins.native.index import Limits
    from rea_plugins.native.model import WorkerRequest

    model = extract(WorkerRequest(path=str(path)))
    content = path.read_bytes()
    flow, data = [], []
    procs = 0
    code = 0
    for _ in range(runs):
        image = Image(model, content)
        analysis = Analysis(image, Limits())
        start = time.perf_counter()
        analysis.inventory()
        index = analysis.build(discover=True)
        flow.append(time.perf_counter() - start)
        start = time.perf_counter()
        analysis.data_refs()
        data.append(time.perf_counter() - start)
        procs, code = len(index.procs), image.code_bytes
    return min(flow), min(data), procs, code


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=int, default=4000, help="functions at 1x (default 4000)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if shutil.which("gcc") is None:
        print("gcc is needed to build the synthetic programs", file=sys.stderr)
        return 1
    print(
        f"{'shape':<6} {'scale':>5} {'functions':>9} {'code MB':>8} {'procs':>7} {'index s':>8} {'s/MB':>6} "
        f"{'data s':>7} {'s/MB':>6}"
    )
    with tempfile.TemporaryDirectory(prefix="rea-scaling-") as tmp:
        for shape in ("tree", "chain"):
            for scale in (1, 2, 4, 8):
                count = args.base * scale
                exe = build(count, shape, Path(tmp))
                flow, data, procs, code = measure(exe, args.runs)
                mb = code / 1e6
                print(
                    f"{shape:<6} {scale:>4}x {count:>9} {mb:>8.2f} {procs:>7} {flow:>8.3f} {flow / mb:>6.3f} "
                    f"{data:>7.3f} {data / mb:>6.3f}",
                    flush=True,
                )
    print(
        f"(best of {args.runs}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
