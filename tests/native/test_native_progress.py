"""Long opens report progress: a progress-token call on a large library sees the index phases over MCP."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import anyio
import pytest

from tests import toolchains
from tests.mcp.harness import connect

FUNCTIONS = 24_000  # about 1.5 MB of code: long enough for several rate-bounded updates


def library_source(count: int) -> str:
    """x86-64 assembly of a library: one export, then a tree of local functions it reaches only by calls."""
    out = [
        ".intel_syntax noprefix",
        ".section .rodata",
        "table:",
        *(f"    .long {i}" for i in range(64)),
        ".text",
        ".globl lib_entry",
        ".type lib_entry, @function",
        "lib_entry:",
        "    call f0",
        "    ret",
    ]
    for i in range(count):
        kids = [k for k in (2 * i + 1, 2 * i + 2) if k < count]
        out += [
            "    .p2align 4",
            f"f{i}:",
            "    push rbx",
            "    mov ebx, edi",
            f"    lea rax, [rip + table + {4 * (i % 64)}]",
            "    add ebx, dword ptr [rax]",
            f"    cmp ebx, {i % 89}",
            f"    jle .L{i}",
        ]
        out += [f"    call f{k}" for k in kids]
        out += [f".L{i}:", "    mov eax, ebx", "    pop rbx", "    ret"]
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def large_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gcc = toolchains.require("gcc")
    work = tmp_path_factory.mktemp("large-library")
    src = work / "large.s"
    src.write_text(library_source(FUNCTIONS))
    out = work / "liblarge.so"
    subprocess.run([gcc, "-shared", "-s", "-nostdlib", "-o", str(out), str(src)], check=True, capture_output=True)
    return out


def test_overview_of_a_large_library_reports_index_progress(large_library: Path, tmp_path: Path) -> None:
    async def main() -> None:
        # A private cache: an index cached by an earlier run would be reused with no index phases to report.
        async with connect(REA_CACHE_DIR=str(tmp_path / "cache")) as client:
            opened = await client.call_tool("open_binary", {"path": str(large_library), "provider_id": "native"})
            assert not opened.is_error
            seen: list[tuple[float, str]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                seen.append((progress, message or ""))

            result = await client.call_tool("binary_overview", {}, progress_callback=on_progress)
            await anyio.sleep(0.3)  # progress notifications are delivered asynchronously
            assert not result.is_error
            assert result.structured_content["normalized_result"]["counts"]["procedures"] > FUNCTIONS
            index = [m for _, m in seen if m.startswith("index:")]
            assert len(index) > 1, seen
            # Updates are rate-bounded to the latest one per interval, so which phases show depends on the
            # machine's speed (a fast one skips the decoding lines); the index's own summary always shows.
            assert any("procedures" in m for m in index), index
            assert any(m.startswith(("index: done", "index: discovery", "index: decoding")) for m in index), index
            values = [p for p, _ in seen]
            assert values == sorted(values) and len(set(values)) == len(values)

    started = time.monotonic()
    anyio.run(main)
    assert time.monotonic() - started < 300


def functions_source(count: int, statements: int) -> str:
    """C with ``count`` independent functions long enough that decompiling each takes a noticeable time."""
    lines = ["int sink(int);"]
    for f in range(count):
        lines.append(f"__attribute__((noinline)) int work{f}(int *a, int n) {{")
        lines.append("  int s = n;")
        for i in range(statements):
            lines.append(f"  if (a[{i % 31}] == {i + f}) s += sink(s ^ {i}); else s -= a[(s + {i}) & 15];")
        lines += ["  return s;", "}"]
    lines.append("__attribute__((noinline)) int sink(int x) { return x * 3; }")
    calls = " + ".join(f"work{f}(a, c)" for f in range(count))
    lines.append(f"int main(int c, char **v) {{ int a[32] = {{0}}; (void)v; return {calls}; }}")
    return "\n".join(lines) + "\n"


def test_batch_decompile_reports_counts_against_a_total(tmp_path: Path) -> None:
    """Over MCP: "N of 3" updates carry a total, progress rises, the terminal is complete. The counts are reported
    from the decompile pool's threads, not the tool's own: the server's sink takes them to the event loop too."""
    from rea_plugins.native import decompile

    engine = decompile.engine()
    if not engine.available:
        pytest.skip(f"native's decompiler cannot run: {engine.reason}")
    gcc = toolchains.require("gcc")
    (tmp_path / "three.c").write_text(functions_source(3, 30))
    program = tmp_path / "three"
    subprocess.run([gcc, "-O2", "-o", str(program), str(tmp_path / "three.c")], check=True, capture_output=True)
    seen: list[tuple[float, float | None, str]] = []

    async def main() -> None:
        async with connect(REA_CACHE_DIR=str(tmp_path / "cache")) as client:
            opened = await client.call_tool("open_binary", {"path": str(program), "provider_id": "native"})
            assert not opened.is_error, opened.content

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                seen.append((progress, total, message or ""))

            args = {"addresses": ["work0", "work1", "work2"]}
            result = await client.call_tool("batch_decompile", args, progress_callback=on_progress)
            await anyio.sleep(0.3)  # progress notifications are delivered asynchronously
            assert not result.is_error, result.content
            assert result.structured_content["normalized_result"]["ok"] == 3

    anyio.run(main)
    values = [p for p, _, _ in seen]
    assert values == sorted(values) and len(set(values)) == len(values), seen
    counted = [(p, t, m) for p, t, m in seen[:-1] if t is not None]
    # Decompiling starts a worker and takes well over the 100 ms rate bound: some "N of 3" update goes out.
    assert counted and all(m.startswith("batch_decompile: ") and p <= t for p, t, m in counted), seen
    assert all(t - p <= 3 for p, t, _ in counted), seen  # numbered against the 3 procedures of the phase
    assert seen[-1][0] == seen[-1][1] and "completed" in seen[-1][2], seen
