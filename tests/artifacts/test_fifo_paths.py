"""A FIFO where rea expects a file answers with a typed error, never a hang (issue 24, item 5).

Each case runs in a worker thread joined with a generous bound: the bound only turns a hang into a failure.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from rea.annotations import AnnotationStore
from rea.cache import AnalysisCache
from rea.cache import CacheKey
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests.artifacts.conftest import write_asar
from tests.mcp.harness import connect

HANG_BOUND_S = 60.0
FILES = {"package.json": b'{"name":"app","main":"main.js"}\n', "main.js": b"require('./f.js')\n", "f.js": b"x=1\n"}


def _answers(call: Callable[[], Any]) -> Any:
    """Run ``call`` in a thread; return what it returned or raised; fail if it never answers."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(call())
        except BaseException as exc:  # the outcome is what the test inspects
            out.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(HANG_BOUND_S)
    assert not worker.is_alive(), "the call never answered (blocked on a FIFO)"
    return out[0]


def _asar_with_fifo_companion(tmp_path: Path) -> Path:
    archive = write_asar(tmp_path / "app.asar", FILES, unpacked=("f.js",))
    companion = tmp_path / "app.asar.unpacked"
    companion.mkdir()
    os.mkfifo(companion / "f.js")
    return archive


def test_asar_companion_fifo_is_typed_in_process(rea_session: Session, tmp_path: Path) -> None:
    archive = _asar_with_fifo_companion(tmp_path)
    out = _answers(lambda: call_tool(rea_session, "inspect_artifact", {"path": str(archive)}))
    if isinstance(out, ReaError):
        assert "f.js" in out.message
    else:
        # Answered: the FIFO entry is reported as unreadable, never read.
        text = repr(out.evidence.normalized_result)
        assert "'f.js' cannot be materialized: its companion is not a regular file" in text


def test_asar_companion_fifo_over_a_real_mcp_client(tmp_path: Path) -> None:
    archive = _asar_with_fifo_companion(tmp_path)

    async def main() -> Any:
        async with connect() as client:
            with anyio.fail_after(HANG_BOUND_S):
                first = await client.call_tool("inspect_artifact", {"path": str(archive)})
                # The server still serves after the FIFO case.
                second = await client.call_tool("binary_session", {})
            return first, second

    first, second = anyio.run(main)
    assert not second.is_error
    text = first.content[0].text if first.content else ""
    assert "'f.js' cannot be materialized: its companion is not a regular file" in text


def test_annotation_lock_fifo_is_typed(rea_registry: Registry, tmp_path: Path, hello_elf: Path) -> None:
    store = tmp_path / "annotations"
    session = Session(rea_registry, annotations=AnnotationStore(str(store)))
    try:
        result_of(session, "open_binary", {"path": str(hello_elf), "provider_id": "native"})
        assert session.target is not None
        store.mkdir(mode=0o700, exist_ok=True)
        lock = session.annotations.path(session.target.sha256, ".lock")
        os.mkfifo(lock)
        procs = result_of(session, "list_procedures", {"limit": 500})["procedures"]
        main = next(p["address"] for p in procs if p["name"] == "main")
        out = _answers(lambda: call_tool(session, "set_comment", {"address": main, "comment": "x"}))
        assert isinstance(out, ReaError), out
        assert lock in out.message and "FIFO" in out.message
    finally:
        session.close()


def test_annotation_store_fifo_is_typed(tmp_path: Path) -> None:
    store = AnnotationStore(str(tmp_path))
    sha = "a" * 64
    os.mkfifo(store.path(sha))
    out = _answers(lambda: store.load(sha))
    assert isinstance(out, ReaError) and store.path(sha) in out.message


def test_target_fifo_is_typed(rea_session: Session, tmp_path: Path) -> None:
    fifo = tmp_path / "target"
    os.mkfifo(fifo)
    out = _answers(lambda: call_tool(rea_session, "open_binary", {"path": str(fifo)}))
    assert isinstance(out, ReaError) and str(fifo) in out.message


def test_bundle_import_fifo_is_typed(rea_session: Session, tmp_path: Path) -> None:
    fifo = tmp_path / "bundle.json"
    os.mkfifo(fifo)
    out = _answers(lambda: call_tool(rea_session, "import_evidence_bundle", {"path": str(fifo)}))
    assert isinstance(out, ReaError) and out.code == "invalid_request" and str(fifo) in out.message


def test_cache_entry_fifo_is_a_miss(tmp_path: Path) -> None:
    cache = AnalysisCache(str(tmp_path / "cache"), 1 << 20)
    key = CacheKey(kind="test/1", target_sha256="a" * 64, provider_id="p", provider_version="1", profile_digest="")
    assert cache.store(key, {"v": 1}, dict[str, int])
    assert cache.load(key, dict[str, int]) == {"v": 1}
    path = cache.path(key)
    os.unlink(path)
    os.mkfifo(path)
    assert _answers(lambda: cache.load(key, dict[str, int])) is None
