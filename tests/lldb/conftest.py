"""Fixtures for the lldb tests: a small call chain compiled with gcc now, and LLDB required."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

from tests import toolchains

CHAIN_C = r"""
#include <stdio.h>
int add(int a, int b) { return a + b; }
int mul3(int a, int b, int c) { return add(a * b, c); }
int main(int argc, char **argv) {
    int r = mul3(argc + 1, 7, 5);
    if (argc > 2) { volatile int *p = 0; *p = r; }   /* two arguments: crash after the chain */
    printf("r=%d\n", r);
    return 0;
}
"""


def require_lldb() -> None:
    if importlib.util.find_spec("lldb") is None:
        toolchains.unavailable("LLDB's Python bindings are not installed: pip install 'rea-reverse[lldb]'")


@pytest.fixture(scope="session")
def chain_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gcc = toolchains.require("gcc")
    require_lldb()
    out = tmp_path_factory.mktemp("lldb-chain")
    (out / "chain.c").write_text(CHAIN_C)
    subprocess.run(
        [gcc, "-O0", "-g", "-o", str(out / "chain"), str(out / "chain.c")], check=True, capture_output=True, timeout=120
    )
    return out / "chain"
