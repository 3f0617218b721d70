"""Processes rea owns, seen at the MCP boundary: nothing written beside a target, lineage reported."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from rea.process import sandbox
from tests import toolchains
from tests.mcp.harness import connect

PROVIDERS = ("native", "angr")


def many_blocks_source(functions: int = 400) -> str:
    """A program with well over 1,000 basic blocks: enough for angr to spill to its runtime database."""
    lines = ["int f0(int x) { return x; }"]
    for i in range(1, functions):
        lines.append(
            f"int f{i}(int x) {{ if (x > {i}) return f{i - 1}(x - 1) + 1; "
            f"else if (x < 0) return -x * {i}; return x * 2 + {i}; }}"
        )
    lines.append(f"int main(int argc, char **argv) {{ (void)argv; return f{functions - 1}(argc); }}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def big_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gcc = toolchains.require("gcc")
    out = tmp_path_factory.mktemp("big-program")
    src = out / "many.c"
    src.write_text(many_blocks_source())
    subprocess.run([gcc, "-O0", "-o", str(out / "many"), str(src)], check=True, capture_output=True, timeout=300)
    return out / "many"


def snapshot(root: Path) -> dict[str, tuple[int, str]]:
    """Every entry under ``root``: mode and content digest (directories: mode only)."""
    out: dict[str, tuple[int, str]] = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else ""
        out[str(path.relative_to(root))] = (st.st_mode, digest)
    return out


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("folder_kind", ["writable", "read-only"])
def test_analysis_never_writes_beside_its_target(
    provider: str, folder_kind: str, big_program: Path, tmp_path: Path
) -> None:
    if provider == "angr" and importlib.util.find_spec("angr") is None:
        pytest.skip("angr is not installed (pip install 'rea-reverse[angr]')")
    folder = tmp_path / "targets"
    folder.mkdir()
    target = folder / "program"
    shutil.copyfile(big_program, target)
    os.chmod(target, 0o755)
    before = snapshot(folder)
    wrapper: tuple[str, ...] = ()
    if folder_kind == "read-only":
        # Root ignores permission bits, so the folder is made read-only by a mount the server runs under.
        bwrap = toolchains.require("bwrap")
        if sandbox.bwrap_failure() is not None:
            toolchains.unavailable(str(sandbox.bwrap_failure()))
        wrapper = (
            bwrap,
            "--bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--ro-bind",
            str(folder),
            str(folder),
            "--die-with-parent",
            "--",
        )

    async def main() -> None:
        # A fresh analysis cache, so this session parses (and its worker is seen) rather than reusing an entry.
        async with connect(wrapper=wrapper, REA_CACHE_DIR=str(tmp_path / "cache")) as client:
            opened = await client.call_tool("open_binary", {"path": str(target), "provider_id": provider})
            assert opened.is_error is False, opened.content
            for tool, args in (
                ("list_procedures", {"limit": 5}),
                ("procedure_callees", {"procedure": "main"}),
                ("search_procedures", {"pattern": "^f1[0-9]$", "mode": "regex"}),
            ):
                res = await client.call_tool(tool, args)
                assert res.is_error is False, res.content
            session = await client.call_tool("binary_session", {})
            lineage = session.structured_content["analysis_run"]["process_lineage"]
            assert lineage["state"] == "snapshots"
            worker = [s for s in lineage["snapshots"] if s["provider_id"] == provider]
            assert worker and worker[-1]["status"] == "verified"
            assert worker[-1]["pgid"] == worker[-1]["pid"] and worker[-1]["ppid"] == worker[-1]["launcher_pid"]
            # Engine-side files go to the worker's private directory: its cwd, HOME, TMPDIR and angr's RTDB.
            pid = worker[-1]["pid"]
            env = dict(e.split("=", 1) for e in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in e)
            private = os.readlink(f"/proc/{pid}/cwd")
            assert private.startswith(tempfile.gettempdir()) and not private.startswith(str(folder))
            for var in ("HOME", "TMPDIR", "XDG_CACHE_HOME") + (("RTDB_BASE",) if provider == "angr" else ()):
                assert env[var].startswith(private), var
                # angr falls back to the target's directory when its RTDB_BASE is not a writable directory.
                assert os.path.isdir(env[var]) and os.access(env[var], os.W_OK), var
            closed = await client.call_tool("close_binary", {})
            assert closed.structured_content["cleanup"] == "complete"

    anyio.run(main)
    assert snapshot(folder) == before


def test_native_parse_worker_lineage_is_verified(hello_elf: Path, tmp_path: Path) -> None:
    async def main() -> None:
        async with connect(REA_CACHE_DIR=str(tmp_path / "cache")) as client:
            empty = await client.call_tool("binary_session", {})
            assert empty.structured_content["analysis_run"]["process_lineage"] == {"state": "not_observed"}
            await client.call_tool("open_binary", {"path": str(hello_elf), "provider_id": "native"})
            doc = (await client.call_tool("binary_session", {})).structured_content
            snaps: list[dict[str, Any]] = doc["analysis_run"]["process_lineage"]["snapshots"]
            native = [s for s in snaps if s["resource"] == "native-parse-worker"]
            assert native and all(s["status"] == "verified" for s in native)
            assert {"observed_at", "launcher_pid", "ppid", "pgid", "descendants"} <= set(native[-1])

    anyio.run(main)
