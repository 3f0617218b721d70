"""A WebAssembly module built by the test with clang's wasm32 target and lld's wasm-ld (no libc, every symbol
exported, the host function left imported), and the facts of its source the tests check."""

from __future__ import annotations

import subprocess
from pathlib import Path

SOURCE = r"""static const char greeting[] = "hello from wasm";
extern int host_log(const char *msg, int len);
__attribute__((noinline)) int answer(int x) { return x * 2 + 1; }
int greet(void) { return host_log(greeting, sizeof greeting - 1); }
int twice_answer(int x) { return answer(answer(x)); }
"""
EXPORTED_FUNCTIONS = {"answer", "greet", "twice_answer"}
IMPORT = ("env", "host_log")
GREETING = "hello from wasm"


def build(clang: str, wasm_ld: str, out: Path) -> Path:
    (out / "module.c").write_text(SOURCE)
    module = out / "module.wasm"
    subprocess.run(
        [
            clang,
            "--target=wasm32",
            "-O1",
            "-nostdlib",
            f"-fuse-ld={wasm_ld}",
            "-Wl,--no-entry",
            "-Wl,--export-all",
            "-Wl,--allow-undefined",
            "-o",
            str(module),
            str(out / "module.c"),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return module
