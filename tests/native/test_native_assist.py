"""The second core (``rea_plugins.native.assist``): the parse worker sweeps a code region's tail while the server
sweeps its head (then scans the strings), and the facts, the index, the call graph and the strings are exactly
those of the server alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea import registry as registry_mod
from rea.context import CallContext
from rea.errors import ReaError
from rea.session import Session
from rea.testing import result_of
from tests.realcode import builds


def _columns(facts: Any) -> tuple[Any, ...]:
    return (
        facts.addr.tolist(),
        facts.size.tolist(),
        bytes(facts.cls),
        facts.target.tolist(),
        {i: (e.slot, e.data, None if e.table is None else e.table.tolist()) for i, e in facts.extra.items()},
        facts.wide,
    )


@pytest.mark.parametrize("share", [0.2, 0.5, 0.8])
def test_a_split_sweep_is_the_whole_sweep(monkeypatch: pytest.MonkeyPatch, share: float) -> None:
    from rea_plugins.native import assist
    from rea_plugins.native.extract import extract
    from rea_plugins.native.image import Image
    from rea_plugins.native.index import Analysis
    from rea_plugins.native.index import Limits
    from rea_plugins.native.model import WorkerRequest
    from rea_plugins.native.sweep import FLOW

    monkeypatch.setattr(assist, "SHARE", share)
    path = str(builds.zstd().binary)
    model = extract(WorkerRequest(path=path))
    content = Path(path).read_bytes()
    an = Analysis(Image(model, content), Limits())
    an.inventory(None)
    r = max(an.image.code_regions, key=lambda r: r.file_size)
    end = r.start + r.file_size
    syncs = [s for s in an.starts if r.start <= s < end]
    view = an.image.code_view(r.start, end)
    whole, count = an.sweeper.sweep(view, r.start, syncs, an.image.code_end, want=FLOW)

    where = assist.split(r.start, end, syncs)
    assert where is not None
    start, keep_from = where
    head, head_count = an.sweeper.sweep(view, r.start, syncs, an.image.code_end, want=FLOW, stop=keep_from)
    assert head.addr[-1] < keep_from
    job = assist.SweepJob(
        path=path,
        sha256="",
        arch=model.arch,
        bits=model.bits,
        narrow=an.narrow,
        sections=model.sections,
        segments=model.segments,
        start=start,
        keep_from=keep_from,
        end=end,
        syncs=[s for s in syncs if s >= start],
    )
    # Through the wire format, as the worker's reply comes.
    swept = msgspec.msgpack.decode(msgspec.msgpack.encode(assist.sweep_job(job, content)), type=assist.SweptFacts)
    assert swept.before >= assist.MIN_LEAD_INSTRUCTIONS
    tail = assist.facts_of(swept, an.narrow)
    assert tail.addr[0] >= keep_from
    head.extend(tail)
    assert _columns(head) == _columns(whole)
    assert head_count + swept.count == count


def _whole_program(session: Session) -> tuple[list[Any], list[Any], list[Any]]:
    procs: list[Any] = []
    offset: int | None = 0
    while offset is not None:
        page = result_of(session, "list_procedures", {"offset": offset, "limit": 1000})
        procs.extend(page["procedures"])
        offset = page["next_offset"]
    edges: list[Any] = []
    offset = 0
    while offset is not None:
        graph = session.execute("program_call_graph", {"offset": offset, "limit": 5000}, CallContext()).normalized
        edges.extend(graph["edges"])
        offset = graph["next_offset"]
    strings: list[Any] = []
    offset = 0
    while offset is not None:
        page = result_of(session, "list_strings", {"offset": offset, "limit": 1000})
        strings.extend(page["strings"])
        offset = page["next_offset"]
    return procs, edges, strings


def _opened_whole_program(
    monkeypatch: pytest.MonkeyPatch, path: str, cache: Path
) -> tuple[list[Any], list[Any], list[Any]]:
    """``_whole_program`` of ``path`` opened in a fresh session over a fresh analysis cache."""
    monkeypatch.setenv("REA_CACHE_DIR", str(cache))
    session = Session(registry_mod.load())
    try:
        result_of(session, "open_binary", {"path": path, "provider_id": "native"})
        return _whole_program(session)
    finally:
        session.close()


def test_the_worker_sweeps_a_tail_and_the_program_is_the_same(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from rea_plugins.native import assist
    from rea_plugins.native import registers
    from rea_plugins.native import store
    from rea_plugins.native.provider import NativeProvider

    path = str(builds.zstd().binary)
    sent: list[Any] = []
    real = assist.Pending.result

    def result(self: assist.Pending, check: Any) -> assist.SweptFacts | None:
        got = real(self, check)
        sent.append(got)
        return got

    monkeypatch.setattr(assist.Pending, "result", result)
    monkeypatch.setattr(assist, "ASSIST_BYTES", 0)  # zstd's code is below the size worth a round trip
    monkeypatch.setattr(registers, "MIN_SHARED_OWNERS", 2)  # and its procedures with register sites fewer
    helped = _opened_whole_program(monkeypatch, path, tmp_path / "with")
    # The worker answered: the flow sweep's tail, then the strings (scanned while the server built the index), then
    # the register calls of the later half of the procedures with register sites.
    replies = {type(got).__name__: got for got in sent}
    assert len(sent) == 3 and sorted(replies) == ["RegisterRows", "StringColumns", "SweptFacts"]
    assert replies["SweptFacts"].count > 0 and replies["StringColumns"].encoding

    monkeypatch.setattr(NativeProvider, "_assist", lambda self, job, after=None: None)
    monkeypatch.setattr(store, "MEMO", store._Memo())  # nothing this process kept: the index is built again
    alone = _opened_whole_program(monkeypatch, path, tmp_path / "alone")
    assert len(sent) == 3
    assert helped == alone and helped[0] and helped[1] and helped[2]


def test_a_changed_file_is_refused_and_the_server_sweeps_the_tail(tmp_path: Path) -> None:
    from rea_plugins.native import assist
    from rea_plugins.native.model import Region

    copy = tmp_path / "bin"
    copy.write_bytes(builds.zstd().binary.read_bytes())
    region = Region(name=".text", start=0, size=16, perms="r-x", file_offset=0, file_size=16, kind="section")
    job = assist.SweepJob(
        path=str(copy),
        sha256="0" * 64,
        arch="x86_64",
        bits=64,
        narrow=True,
        sections=[region],
        segments=[],
        start=0,
        keep_from=0,
        end=16,
        syncs=[0],
    )
    with pytest.raises(Exception, match="not the ones the server opened"):
        assist.route(msgspec.to_builtins(job), None)
    # A failed send leaves the job to the caller (None), never an exception in its thread.
    assert assist.Pending(lambda j: (_ for _ in ()).throw(OSError("gone")), job).result(lambda: None) is None


def test_the_worker_hashes_a_file_once_per_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One open sends the worker several jobs over the same bytes: the file is hashed once per version (its stamp),
    and a rewrite of the same size is refused all the same."""
    import hashlib
    import os
    import time

    from rea_plugins.native import assist

    target = tmp_path / "program"
    target.write_bytes(b"\x7fELF" + b"first" * 4000)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    monkeypatch.setattr(assist, "_CHECKED", {})
    assert assist.read_checked(str(target), digest) == target.read_bytes()

    hashed: list[int] = []
    real = hashlib.sha256

    def counted(data: bytes = b"") -> Any:
        hashed.append(len(data))
        return real(data)

    monkeypatch.setattr(assist.hashlib, "sha256", counted)
    assert assist.read_checked(str(target), digest) == target.read_bytes()
    assert hashed == []  # the same version: not hashed again

    stamp = os.stat(target)
    time.sleep(0.05)  # past the file system's timestamp granularity: the rewrite's ctime is another one
    target.write_bytes(b"\x7fELF" + b"other" * 4000)  # the same size, its old mtime put back
    os.utime(target, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    with pytest.raises(ReaError) as err:
        assist.read_checked(str(target), digest)
    assert err.value.code == "artifact_changed"
    assert hashed  # the new version was hashed
