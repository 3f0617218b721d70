"""The EVM fixture files: the runtime bytecode of evmfixtures.py as hex text and as raw bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from evmfixtures import RUNTIME_HEX


@pytest.fixture(scope="session")
def token_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("evm")
    (out / "Token.bin-runtime").write_text("0x" + RUNTIME_HEX + "\n")
    (out / "Token.raw").write_bytes(bytes.fromhex(RUNTIME_HEX))
    return {"hex": out / "Token.bin-runtime", "raw": out / "Token.raw"}
