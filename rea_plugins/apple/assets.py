"""inspect_asset_catalog: an Assets.car through Apple's ``assetutil --info``, which exists on macOS only.

The compiled asset catalog (BOM storage with Apple's private CoreUI renditions) has no documented layout and no
maintained reader outside Apple's tools, so off macOS the tool is ``capability_unavailable`` with the remediation;
on macOS ``assetutil`` runs as an owned process (bounded output and time) and its JSON is summarized.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time

from rea.plugin import Evidence
from rea.plugin import JSONValue
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import identify
from rea_plugins.apple import common
from rea_plugins.apple.model import AssetCatalog
from rea_plugins.apple.model import AssetRendition

MAX_OUTPUT = 16 << 20
DEADLINE_S = 60.0


def unavailable(why: str) -> ReaError:
    return ReaError(
        "capability_unavailable",
        f"inspect_asset_catalog needs Apple's assetutil: {why}",
        remediation=(
            "Run rea on macOS with the Xcode command-line tools (xcode-select --install) so assetutil is on PATH; "
            "the catalog's other files (Info.plist, Mach-O, plists) read on any host with the other apple tools."
        ),
        details={"reason": "assetutil_missing", "platform": sys.platform},
    )


def _run(path: str) -> bytes:
    """assetutil --info PATH as an owned process: stdout up to MAX_OUTPUT, DEADLINE_S at most."""
    from rea.plugin import OwnedProcess
    from rea.plugin import ProcessSpec

    tool = shutil.which("assetutil")
    if tool is None:
        raise unavailable("it is not on PATH")
    proc = OwnedProcess.start(
        ProcessSpec(argv=(tool, "--info", path), resource="assetutil", owner="apple", stdin="null")
    )
    chunks: list[bytes] = []
    size = 0

    def drain() -> None:
        nonlocal size
        assert proc.stdout is not None
        while size <= MAX_OUTPUT and (chunk := proc.stdout.read(65536)):
            chunks.append(chunk)
            size += len(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    started = time.monotonic()
    try:
        while reader.is_alive() and time.monotonic() - started < DEADLINE_S:
            reader.join(0.2)
        if reader.is_alive():
            raise ReaError("provider_timeout", f"assetutil ran past {DEADLINE_S:.0f} s", details={"path": path})
        if size > MAX_OUTPUT:
            raise ReaError("resource_constraint", "assetutil wrote more than 16 MiB", details={"path": path})
        status = proc.wait_exit(10.0)
        if status not in (0, None):
            raise ReaError(
                "execution_failure",
                f"assetutil exited with status {status}",
                remediation="Check that the file is a compiled asset catalog (Assets.car).",
                details={"path": path, "stderr": proc.stderr_tail()[-500:]},
            )
    finally:
        proc.terminate(2.0)
    return b"".join(chunks)


@common.guarded
def inspect_asset_catalog(call: ToolCall) -> Evidence:
    path = common.given_path(call)
    target = identify(path, call.ctx)
    if sys.platform != "darwin":
        raise unavailable(f"this host is {sys.platform}, and assetutil runs on macOS only")
    try:
        # assetutil's JSON (Apple's, not rea's): read key by key with type checks.
        rows: list[JSONValue] = json.loads(_run(target.resolved_path))
    except (ValueError, TypeError):
        raise ReaError("unreadable_output", "assetutil's output is not JSON", details={"path": path}) from None
    header = rows[0] if rows and isinstance(rows[0], dict) and "AssetStorageVersion" in rows[0] else {}
    renditions = [
        AssetRendition(
            name=str(r.get("Name", "")),
            asset_type=str(r.get("AssetType", "")),
            scale=scale if isinstance(scale := r.get("Scale"), int) else None,
            idiom=str(r["Idiom"]) if "Idiom" in r else None,
            size_bytes=size if isinstance(size := r.get("SizeOnDisk"), int) else None,
        )
        for r in rows
        if isinstance(r, dict) and "AssetType" in r
    ]
    chosen, info = common.page(renditions, call.args, "", 100)
    report = AssetCatalog(
        source=target.name,
        storage_version=str(header.get("AssetStorageVersion", "")) or None,
        platform=str(header.get("Platform", "")) or None,
        renditions=chosen,
        page=info,
    )
    return common.evidence(call, target, report, ["Read by Apple's assetutil on this Mac."])
