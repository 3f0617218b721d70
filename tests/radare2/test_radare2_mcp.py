"""radare2 at the MCP boundary: bound by request, its worker verified in the lineage, nothing beside the target."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import anyio

from tests.mcp.harness import connect
from tests.radare2.conftest import require_radare2


def _snapshot(root: Path) -> dict[str, tuple[int, str]]:
    return {
        str(p.relative_to(root)): (p.lstat().st_mode, hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "")
        for p in sorted(root.rglob("*"))
    }


def test_radare2_over_stdio(native_fixtures: Any, tmp_path: Path) -> None:
    require_radare2()
    folder = tmp_path / "targets"
    folder.mkdir()
    target = folder / "program"
    shutil.copyfile(native_fixtures.get("elf-x64").path, target)
    before = _snapshot(folder)

    async def main() -> None:
        async with connect() as client:
            opened = await client.call_tool("open_binary", {"path": str(target), "provider_id": "radare2"})
            assert opened.is_error is False, opened.content
            binding = opened.structured_content["analysis_provider_binding"]
            assert binding["provider"]["id"] == "radare2" and binding["selection_source"] == "request"
            pseudo = await client.call_tool("procedure_pseudo_code", {"procedure": "main"})
            assert pseudo.is_error is False, pseudo.content
            body = pseudo.structured_content["normalized_result"]
            assert body["decompiler"] == "radare2-pdc" and body["dialect"] == "radare2 pseudo-C"
            callees = await client.call_tool("procedure_callees", {"procedure": "main"})
            names = {c["name"] for c in callees.structured_content["normalized_result"]["callees"]}
            assert {"greet", "compute_checksum", "dispatch", "wide_len", "printf"} <= names
            session = (await client.call_tool("binary_session", {})).structured_content
            snaps = session["analysis_run"]["process_lineage"]["snapshots"]
            worker = [s for s in snaps if s.get("resource") == "radare2-worker"]
            assert worker and worker[-1]["status"] == "verified"
            assert worker[-1]["pgid"] == worker[-1]["pid"]
            pid = worker[-1]["pid"]
            env = dict(e.split("=", 1) for e in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in e)
            private = os.readlink(f"/proc/{pid}/cwd")
            assert private.startswith(tempfile.gettempdir()) and not private.startswith(str(folder))
            assert env["HOME"].startswith(private) and env["TMPDIR"].startswith(private)
            assert os.path.isfile(os.path.join(env["LD_LIBRARY_PATH"], "libr_core.so"))
            closed = await client.call_tool("close_binary", {})
            assert closed.structured_content["cleanup"] == "complete"
            assert not os.path.exists(f"/proc/{pid}") or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"

    anyio.run(main)
    assert _snapshot(folder) == before
