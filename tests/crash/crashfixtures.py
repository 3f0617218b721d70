"""A C program that crashes on purpose (a store through a null pointer two calls below main, a second thread
idle), and its core: written by the kernel under the core pattern when the test can collect it, else by gdb."""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

SOURCE = r"""#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

int *volatile target_pointer = 0;

static void *idle_worker(void *arg) {
    (void)arg;
    for (;;) pause();
    return NULL;
}

__attribute__((noinline)) int store_through_null(int value) {
    *target_pointer = value; /* the crash */
    return value;
}

__attribute__((noinline)) int compute_then_crash(int value) { return store_through_null(value + 1) + 1; }

int main(void) {
    pthread_t worker;
    pthread_create(&worker, NULL, idle_worker, NULL);
    usleep(100000);
    printf("%d\n", compute_then_crash(41));
    return 0;
}
"""
CRASH_LINE = next(n for n, line in enumerate(SOURCE.splitlines(), 1) if "the crash" in line)
CALL_CHAIN = ["store_through_null", "compute_then_crash", "main"]


def _unlimited_core() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def _is_core(path: Path) -> bool:
    with path.open("rb") as fh:
        head = fh.read(18)
    return head[:4] == b"\x7fELF" and int.from_bytes(head[16:18], "little") == 4  # ET_CORE


def build(gcc: str, out: Path) -> Path:
    (out / "crasher.c").write_text(SOURCE)
    program = out / "crasher"
    subprocess.run(
        [gcc, "-O0", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", str(program), str(out / "crasher.c")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return program


def kernel_core(program: Path, out: Path) -> Path | None:
    """The core the kernel writes in the working directory (a core pattern without a pipe or a folder), or None."""
    pattern = Path("/proc/sys/kernel/core_pattern").read_text().strip()
    if pattern.startswith("|") or "/" in pattern:
        return None
    run = out / "kernel"
    run.mkdir()
    proc = subprocess.run([str(program)], cwd=run, preexec_fn=_unlimited_core, capture_output=True, timeout=60)
    if proc.returncode != -11:
        return None
    cores = [p for p in run.iterdir() if p.is_file() and _is_core(p)]
    return cores[0] if cores else None


def debugger_core(gdb: str, program: Path, out: Path) -> Path:
    """The core gdb writes when the program stops on its SIGSEGV (``generate-core-file``)."""
    core = out / "gdb.core"
    subprocess.run(
        [gdb, "-nx", "-batch", "-ex", "run", "-ex", f"generate-core-file {core}", str(program)],
        cwd=out,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return core
