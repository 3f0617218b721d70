"""WebAssembly fixtures: one module built with clang's wasm32 target, once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
import wasmfixtures

from tests import toolchains


@pytest.fixture(scope="session")
def wasm_module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tools = toolchains.require_all(("clang", "wasm-ld"))
    return wasmfixtures.build(tools["clang"], tools["wasm-ld"], tmp_path_factory.mktemp("wasm"))
