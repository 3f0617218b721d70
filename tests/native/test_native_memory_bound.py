"""The native parse worker's memory bound (``REA_NATIVE_MEMORY_LIMIT_MB``), seen through a real ``rea serve``.

An input that needs more than the bound is a typed ``resource_constraint`` naming the bound and its setting;
the server lives on and the next open runs in a fresh worker.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio

from tests.mcp.harness import connect
from tests.mcp.harness import error_of


def test_an_input_beyond_the_bound_is_resource_constraint_and_the_next_open_works(tmp_path: Path) -> None:
    small = tmp_path / "small"
    shutil.copyfile("/bin/true", small)
    huge = tmp_path / "huge"
    shutil.copyfile("/bin/ls", huge)
    with open(huge, "r+b") as fh:  # sparse: 700 MiB to read, nothing on disk
        fh.truncate(700 << 20)

    async def main() -> None:
        async with connect(REA_NATIVE_MEMORY_LIMIT_MB="256", REA_CACHE_MAX_BYTES="0") as client:
            refused = await client.call_tool("open_binary", {"path": str(huge), "provider_id": "native"})
            error = error_of(refused)
            assert error["code"] == "resource_constraint"
            assert "256 MiB" in error["message"] and "REA_NATIVE_MEMORY_LIMIT_MB" in error["remediation"]["action"]
            assert error["details"]["reported_limits"] == {"address_space_mb": 256}
            assert error["details"]["setting"] == "REA_NATIVE_MEMORY_LIMIT_MB"
            opened = await client.call_tool("open_binary", {"path": str(small), "provider_id": "native"})
            assert not opened.is_error, opened.content
            listed = await client.call_tool("list_procedures", {})
            assert not listed.is_error and listed.structured_content["normalized_result"]["procedures"]

    anyio.run(main)


def test_the_bound_is_a_declared_setting() -> None:
    from rea.registry import default_registry

    spec = default_registry().settings["REA_NATIVE_MEMORY_LIMIT_MB"]
    assert spec.read({"REA_NATIVE_MEMORY_LIMIT_MB": "512"}) == 512
    assert spec.default >= 2048
