"""inspect_artifact on files that are no archive: each kind is recognized and the tools that read it are named."""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path

import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import result_of

# kind -> the tools its view names (where they are registered: the core, Go and WebAssembly tools come from
# other plugins, which may be absent).
EXPECTED = {
    "firmware-image": ["inspect_firmware_regions", "extract_firmware"],
    "evm-bytecode": ["inspect_evm_interface"],
    "sqlite-database": ["inspect_sqlite_database"],
    "elf-core": ["inspect_recorded_crash"],
    "go-binary": ["inspect_go_binary", "open_binary"],
    "wasm-module": ["inspect_wasm_artifact"],
}


def _elf_header(e_type: int) -> bytes:
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    return ident + struct.pack("<HHI", e_type, 62, 1) + bytes(64 - 24)


@pytest.fixture
def samples(tmp_path: Path, hello_elf: Path) -> dict[str, Path]:
    db = tmp_path / "app.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    files = {
        "firmware-image": (tmp_path / "fw.img", b"hsqs" + bytes(4092)),
        "evm-bytecode": (tmp_path / "c.hex", b"0x6080604052348015600e575f80fd5b50\n"),
        "elf-core": (tmp_path / "core", _elf_header(4) + bytes(4096)),
        "go-binary": (tmp_path / "goprog", hello_elf.read_bytes() + b"\xff Go buildinf:\x08\x02" + bytes(64)),
        "wasm-module": (tmp_path / "m.wasm", b"\x00asm\x01\x00\x00\x00"),
    }
    out = {"sqlite-database": db}
    for kind, (path, data) in files.items():
        path.write_bytes(data)
        out[kind] = path
    return out


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_each_kind_names_its_tools(rea_session: Session, samples: dict[str, Path], kind: str) -> None:
    registered = set(rea_session.registry.tool_info())
    tools = [t for t in EXPECTED[kind] if t in registered]
    if not tools:
        # No tool reads it here: inspect_artifact says it reads no such file, as before.
        with pytest.raises(ReaError) as info:
            result_of(rea_session, "inspect_artifact", {"path": str(samples[kind])})
        assert info.value.code == "unsupported_target"
        return
    out = result_of(rea_session, "inspect_artifact", {"path": str(samples[kind])})
    assert out["format"] == kind and out["entries"] == [] and out["coverage"] == "partial"
    view = out["views"][0]
    assert view["kind"] == kind and view["tools"] == tools


def test_a_plain_executable_points_to_open_binary(rea_session: Session, hello_elf: Path) -> None:
    out = result_of(rea_session, "inspect_artifact", {"path": str(hello_elf)})
    assert out["format"] == "native-binary"
    assert out["views"][0]["tools"] == ["open_binary"]


def test_an_unknown_file_is_still_refused(rea_session: Session, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("nothing any tool reads\n")
    with pytest.raises(ReaError) as info:
        result_of(rea_session, "inspect_artifact", {"path": str(path)})
    assert info.value.code == "unsupported_target"
