"""Fixtures for the artifact tests: @electron/asar packing, hand-written hostile ASARs, ZIP builders."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import toolchains
from tests.robustness.hostile import BLOCK
from tests.robustness.hostile import asar_bytes
from tests.robustness.hostile import build_asar

FIXTURES = Path(__file__).resolve().parents[1] / ".fixtures"
NPM_PREFIX = FIXTURES / "npm-asar"


@pytest.fixture(scope="session")
def asar_cli() -> Path:
    """The ``asar`` command of the npm package @electron/asar, installed once into tests/.fixtures."""
    binary = NPM_PREFIX / "node_modules" / ".bin" / "asar"
    if binary.exists():
        return binary
    toolchains.require_all(("node", "npm"))
    NPM_PREFIX.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(NPM_PREFIX), "@electron/asar"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0 or not binary.exists():
        toolchains.unavailable(f"npm install @electron/asar failed: {proc.stderr[-500:]}")
    return binary


@pytest.fixture(autouse=True)
def private_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Extraction directories go under this test's own temp root, so leftovers are observable."""
    root = tmp_path / "tmproot"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    yield root


def pack(asar_cli: Path, src: Path, dest: Path, unpack: str | None = None, unpack_dir: str | None = None) -> Path:
    cmd = [str(asar_cli), "pack", str(src), str(dest)]
    if unpack:
        cmd += ["--unpack", unpack]
    if unpack_dir:
        cmd += ["--unpack-dir", unpack_dir]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return dest


def write_tree(
    root: Path, files: dict[str, bytes], links: dict[str, str] | None = None, executable: tuple[str, ...] = ()
) -> Path:
    """Create ``files`` (and relative symlinks) beneath ``root``."""
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        if rel in executable:
            p.chmod(0o755)
    for rel, target in (links or {}).items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, p)
    return root


APP_FILES: dict[str, bytes] = {
    "package.json": b'{"name":"demo","main":"main.js"}\n',
    "main.js": b"const { app } = require('electron');\napp.whenReady();\n",
    "renderer/index.html": b"<!doctype html><script src=renderer.js></script>\n",
    "renderer/renderer.js": b"document.title = 'demo';\n",
    "native/addon.node": b"\x7fELF-not-really-a-native-addon",
    "assets/big.bin": bytes(range(256)) * (BLOCK // 256 + 4096),  # just over one integrity block
    "assets/exact.bin": bytes(reversed(range(256))) * (BLOCK // 256),  # exactly one block
    "empty.txt": b"",
}


def _app_tree(root: Path) -> Path:
    return write_tree(root, APP_FILES, links={"renderer/main-link.js": "../main.js"}, executable=("main.js",))


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    return _app_tree(tmp_path / "app")


@pytest.fixture(scope="session")
def packed_app(asar_cli: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Packed once per session; tests get their own copy (``app_asar``) to corrupt freely."""
    root = tmp_path_factory.mktemp("packed")
    src = _app_tree(root / "app")
    out = root / "dist"
    out.mkdir()
    return pack(asar_cli, src, out / "app.asar", unpack="*.node")


@pytest.fixture
def app_asar(packed_app: Path, tmp_path: Path) -> Path:
    """A real ASAR packed by @electron/asar, with native/*.node unpacked into app.asar.unpacked."""
    dist = tmp_path / "dist"
    shutil.copytree(packed_app.parent, dist, symlinks=True)
    return dist / "app.asar"


# -- hand-written ASARs for hostile and corrupt cases ------------------------------------------


def write_asar(path: Path, files: dict[str, bytes], **kw: Any) -> Path:
    header, data = build_asar(files, **kw)
    path.write_bytes(asar_bytes(header, data))
    return path


def make_zip(
    path: Path,
    members: dict[str, bytes],
    *,
    compression: int = zipfile.ZIP_DEFLATED,
    symlinks: dict[str, str] | None = None,
) -> Path:
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = 0o120777 << 16
            zf.writestr(info, target)
    return path


def tree_snapshot(root: Path) -> set[str]:
    """Every path under ``root`` (without following links), to prove nothing else was written."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            out.add(os.path.relpath(os.path.join(dirpath, name), root))
    return out


Flip = Callable[[Path, int], None]


def flip_byte(path: Path, offset: int) -> None:
    """Corrupt one byte in place (to contradict a declared hash)."""
    with open(path, "r+b") as fh:
        fh.seek(offset)
        b = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([b[0] ^ 0xFF]))


@pytest.fixture
def kit() -> Any:
    """This module's builders, for tests (conftest modules are not importable by a stable name)."""
    import types

    # globals(), not sys.modules["conftest"]: other test folders' conftest modules share that name.
    return types.SimpleNamespace(**globals())
