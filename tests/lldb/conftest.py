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


def symbol_address(program: Path, name: str) -> int:
    """The address nm gives ``name`` in ``program`` (link-time, so an offset in a PIE)."""
    nm = toolchains.require("nm")
    listing = subprocess.run([nm, str(program)], check=True, capture_output=True, text=True).stdout
    return next(int(line.split()[0], 16) for line in listing.splitlines() if line.endswith(f" {name}"))


@pytest.fixture(scope="session")
def chain_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_lldb()
    return toolchains.compile_c(CHAIN_C, tmp_path_factory.mktemp("lldb-chain"), "chain", "-O0", "-g")
