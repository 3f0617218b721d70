"""The second core: the parse worker sweeps the tail of a large code region while the server sweeps its head
(and scans the strings while the server builds the index: ``rea_plugins.native.strings``).

The split is at a procedure start ``keep_from``, where a sweep of the whole region restarts decoding, so each
half's instructions are the whole sweep's. The worker starts decoding at an earlier procedure start ``start`` and
keeps only the facts from ``keep_from`` on: the instructions between them give every kept fact the jump-table
window it has in the whole sweep. The worker reads the file itself and checks its SHA-256 against the server's;
any failure leaves the tail to the server, so the facts are the same either way.
"""

from __future__ import annotations

import array
import bisect
import hashlib
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any
from typing import Generic
from typing import Protocol
from typing import TypeVar
from typing import overload

import msgspec

from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea_plugins.native.image import Image
from rea_plugins.native.model import Region
from rea_plugins.native.model import regions_only
from rea_plugins.native.sweep import FLOW
from rea_plugins.native.sweep import Extra
from rea_plugins.native.sweep import Facts
from rea_plugins.native.sweep import Sweeper

if TYPE_CHECKING:  # strings imports the index, which imports this module
    from rea_plugins.native.registers import RegisterRows
    from rea_plugins.native.registers import RegistersJob
    from rea_plugins.native.strings import StringColumns
    from rea_plugins.native.strings import StringsJob

ASSIST_BYTES = 1 << 20  # a code region below this is swept alone: the round trip would cost what it saves
MAX_FILE_BYTES = 32 << 20  # the worker reads the whole file (the server holds it whole below this size too)
LEAD_BYTES = 1024  # how far before the split the worker starts decoding (at least ``_WINDOW`` instructions)
SHARE = 0.5  # the worker's part of the region: it reads and hashes the file first
MIN_LEAD_INSTRUCTIONS = 10  # sweep._WINDOW: a jump-table pattern's reach back


class FileJob(msgspec.Struct, frozen=True, kw_only=True):
    """Work on the file at ``path`` (SHA-256 ``sha256``) over the server's regions, which the worker reads itself."""

    path: str
    sha256: str
    arch: str
    bits: int
    narrow: bool
    sections: list[Region]
    segments: list[Region]


class SweepJob(FileJob, frozen=True, kw_only=True):
    """A code region's tail to sweep for flow facts: decode ``[start, end)``, keep the facts from ``keep_from``."""

    start: int
    keep_from: int
    end: int
    syncs: list[int]


class SweptFacts(msgspec.Struct, frozen=True, kw_only=True):
    """``Facts`` columns as bytes (extras as (index, slot, data, table), wide targets as (index, target)), the
    instructions decoded from ``keep_from`` on, and how many were decoded before it."""

    addr: bytes
    size: bytes
    cls: bytes
    target: bytes
    extra: list[tuple[int, int | None, list[tuple[int, str]], bytes | None]]
    wide: list[tuple[int, int]]
    count: int
    before: int


def sweep_job(job: SweepJob, data: Any) -> SweptFacts:
    """The tail's facts over ``data`` (the file's bytes): what the worker runs, and the server when it cannot."""
    model = regions_only(job.arch, job.bits, job.sections, job.segments)
    image = Image(model, data)
    sweeper = Sweeper(job.arch, job.bits, image.mapped, image.read, job.narrow)
    facts, count, before = sweeper.sweep_from(
        image.code_view(job.start, job.end),
        job.start,
        job.syncs,
        image.code_end,
        want=FLOW,
        keep_from=job.keep_from,
        threaded=False,  # the server's sweep has the other core
    )
    return SweptFacts(
        addr=facts.addr.tobytes(),
        size=facts.size.tobytes(),
        cls=bytes(facts.cls),
        target=facts.target.tobytes(),
        extra=[
            (i, e.slot, list(e.data), e.table.tobytes() if e.table is not None else None)
            for i, e in facts.extra.items()
        ],
        wide=list(facts.wide.items()),
        count=count,
        before=before,
    )


def shareable(data: Any) -> bool:
    """Whether the parse worker may take a share of work on a file the server holds as ``data``: whole in memory
    (not mapped), at most ``MAX_FILE_BYTES``, the bytes the worker reads and checks itself."""
    return isinstance(data, bytes) and len(data) <= MAX_FILE_BYTES


def changed() -> ReaError:
    return ReaError("artifact_changed", "the target's bytes are not the ones the server opened")


# The digests the worker computed, by file stamp (path, device, inode, size, mtime, ctime), as rea.target knows a
# file by its stamp: one open sends several jobs over the same bytes, and each hashed them again (a few of the 6.8 MB
# of a python3.11 per job).
_CHECKED: dict[tuple[str, int, int, int, int, int], str] = {}
_MAX_CHECKED = 16


def _stamp(path: str, fd: int) -> tuple[str, int, int, int, int, int]:
    st = os.fstat(fd)
    return (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def read_checked(path: str, sha256: str) -> bytes:
    """The file's bytes as the worker reads them for a job, refused when they are not the server's (``sha256``);
    hashed once per version of the file (its stamp, unmoved while it was read)."""
    with open(path, "rb") as fh:
        before = _stamp(path, fh.fileno())
        data = fh.read(MAX_FILE_BYTES + 1)
        after = _stamp(path, fh.fileno())
    if len(data) > MAX_FILE_BYTES:
        raise changed()
    if before == after and _CHECKED.get(after) == sha256:
        return data
    if hashlib.sha256(data).hexdigest() != sha256:
        raise changed()
    if before == after:
        if len(_CHECKED) >= _MAX_CHECKED:
            _CHECKED.clear()
        _CHECKED[after] = sha256
    return data


def route(params: JSONObject, reporter: Any) -> msgspec.Raw:  # the worker protocol's JSON request
    """The worker's ``sweep`` route: the job over the file as it is now, refused when its bytes changed."""
    job = msgspec.convert(params, SweepJob)
    return msgspec.Raw(msgspec.msgpack.encode(sweep_job(job, read_checked(job.path, job.sha256))))


def facts_of(swept: SweptFacts, narrow: bool) -> Facts:
    """The ``Facts`` a ``SweptFacts`` carries."""
    facts = Facts(narrow)
    facts.addr.frombytes(swept.addr)
    facts.size.frombytes(swept.size)
    facts.cls = bytearray(swept.cls)
    facts.target.frombytes(swept.target)
    facts.extra = {
        i: Extra(slot, tuple((a, k) for a, k in data), array.array("Q", table) if table is not None else None)
        for i, slot, data, table in swept.extra
    }
    facts.wide = dict(swept.wide)
    return facts


T = TypeVar("T")


class Pending(Generic[T]):
    """A job sent from a thread of its own (the caller works meanwhile): its reply, or None when it failed."""

    def __init__(self, send: Callable[[Any], T], job: Any, after: Pending[Any] | None = None) -> None:
        self.job = job
        self._value: T | None = None
        self._after = after  # sent once that one is answered (the worker takes one request at a time)
        self._thread = threading.Thread(target=self._run, args=(send,), name="rea-native-assist", daemon=True)
        self._thread.start()

    def _run(self, send: Callable[[Any], T]) -> None:
        if self._after is not None:
            self._after._thread.join()
            self._after = None
        try:
            self._value = send(self.job)
        except (ReaError, OSError, msgspec.DecodeError):  # the caller does the work itself
            self._value = None

    def result(self, check: Callable[[], None]) -> T | None:
        """The reply once the worker sent it (``check`` polled meanwhile: a cancellation stops the wait)."""
        while self._thread.is_alive():
            self._thread.join(0.02)
            check()
        return self._value


class Assist(Protocol):
    """Sends a job to the parse worker from a thread of its own (once ``after`` is answered); None when no worker
    runs (none is started)."""

    @overload
    def __call__(self, job: SweepJob, after: Pending[Any] | None = None) -> Pending[SweptFacts] | None: ...
    @overload
    def __call__(self, job: StringsJob, after: Pending[Any] | None = None) -> Pending[StringColumns] | None: ...
    @overload
    def __call__(self, job: RegistersJob, after: Pending[Any] | None = None) -> Pending[RegisterRows] | None: ...


def split(start: int, end: int, syncs: list[int]) -> tuple[int, int] | None:
    """(where the worker starts decoding, where its facts start): procedure starts of ``syncs`` (sorted, inside
    ``[start, end)``) about ``SHARE`` from the end, ``LEAD_BYTES`` apart; None when there are none."""
    k = bisect.bisect_left(syncs, end - int((end - start) * SHARE))
    if k >= len(syncs):
        return None
    keep_from = syncs[k]
    j = bisect.bisect_right(syncs, keep_from - LEAD_BYTES) - 1
    if j < 0:
        return None
    return syncs[j], keep_from
