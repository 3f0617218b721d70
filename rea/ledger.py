"""The session ledger: every Evidence a connection (or CLI invocation) produced, by id.

A record too large to deliver stays retained (it can be paged or exported) but not in memory: ``spill``
moves it to a private directory, read back only when asked for, removed with the ledger. The oldest records
move there too once the records in memory pass ``REA_LEDGER_MEMORY_MB``, so a long session stays bounded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

import msgspec

from rea import evidence as ev_mod
from rea.canonical import CanonicalError
from rea.canonical import canonical_digest
from rea.config import integer_setting
from rea.errors import ReaError
from rea.evidence import Evidence
from rea.process import leftovers
from rea.records import JSONObject
from rea.sizes import measured_length

LEDGER_MEMORY_MB = integer_setting(
    "REA_LEDGER_MEMORY_MB",
    1,
    1 << 20,
    32,
    "MiB of canonical JSON",
    "Most Evidence a session's ledger keeps in memory; older records beyond it are kept on disk.",
)


class Spilled:
    """A record kept on disk (msgpack), by its file."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path

    def load(self) -> Evidence:
        with open(self.path, "rb") as fh:
            return msgspec.msgpack.decode(fh.read(), type=Evidence)


def _missing(evidence_id: str, path: str, cached: bool = False) -> ReaError:
    where = "this session's ledger or the analysis cache" if cached else "this connection's ledger"
    return ReaError(
        "target_unavailable",
        f"retained Evidence {evidence_id} is not in {where}",
        remediation="Supply the complete inline Evidence, repeat its producer, or import an exported bundle first.",
        details={"evidence_id": evidence_id, "reason": "missing", "path": path},
    )


def _presents(record: Evidence, value: JSONObject) -> bool:
    """Whether ``value`` is ``record`` in the lean presentation (its results compared by canonical digest, so a
    large Struct result is never converted to builtins)."""
    lean = ev_mod.lean(record)
    envelope = msgspec.to_builtins(msgspec.structs.replace(lean, normalized_result=None, raw_result=None))
    given = {k: v for k, v in value.items() if k not in ("normalized_result", "raw_result")}
    if given != {k: v for k, v in envelope.items() if k != "normalized_result"} or "normalized_result" not in value:
        return False
    try:
        return canonical_digest([value["normalized_result"], value.get("raw_result")]) == canonical_digest(
            [record.normalized_result, record.raw_result]
        )
    except CanonicalError:
        return False


class Ledger:
    """Insertion-ordered, thread-safe map of evidence_id to record."""

    def __init__(
        self, fallback: Callable[[str], Evidence | None] | None = None, memory_bytes: int | None = None
    ) -> None:
        self._records: dict[str, Evidence | Spilled] = {}
        self._lock = threading.Lock()
        self._spill_dir: str | None = None
        # Where a reference this ledger lacks may still be found, authenticated (the CLI: the analysis cache).
        self.fallback = fallback
        # The canonical length of each record held in memory, oldest first, and their sum; None: no bound.
        self.memory_bytes = memory_bytes
        self._resident: OrderedDict[str, int] = OrderedDict()
        self._resident_bytes = 0

    @property
    def resident_bytes(self) -> int:
        """Canonical JSON bytes of the records held in memory (as measured when they were hashed)."""
        with self._lock:
            return self._resident_bytes

    def spill(self, evidence_id: str) -> bool:
        """Keep a retained record on disk instead of in memory (a refused oversized result); True when moved."""
        with self._lock:
            return self._spill(evidence_id)

    def _spill(self, evidence_id: str) -> bool:
        record = self._records.get(evidence_id)
        if not isinstance(record, Evidence):
            return False
        try:
            if self._spill_dir is None:
                self._spill_dir = tempfile.mkdtemp(prefix="rea-ledger-")
                leftovers.mark(self._spill_dir)
            path = os.path.join(self._spill_dir, evidence_id)
            with open(path, "wb") as fh:
                fh.write(msgspec.msgpack.encode(record))
        except OSError:
            return False  # no room on disk: it stays in memory, as before
        self._records[evidence_id] = Spilled(path)
        self._resident_bytes -= self._resident.pop(evidence_id, 0)
        return True

    def _add(self, ev: Evidence) -> None:
        if ev.evidence_id in self._records:
            return
        self._records[ev.evidence_id] = ev
        # A record hashed elsewhere (not lately) is measured here; that is rare, and costs one encoding.
        length = measured_length(ev.evidence_id)
        size = length if length is not None else len(msgspec.msgpack.encode(ev))
        self._resident[ev.evidence_id] = size
        self._resident_bytes += size

    def _bound(self) -> None:
        """Move the oldest records to disk until those in memory fit; the newest always stays (it is being read)."""
        if self.memory_bytes is None:
            return
        while self._resident_bytes > self.memory_bytes and len(self._resident) > 1:
            oldest = next(iter(self._resident))
            if not self._spill(oldest):
                return  # the disk refused: keep the rest in memory rather than lose anything

    def record(self, ev: Evidence) -> Evidence:
        with self._lock:
            self._add(ev)
            self._bound()
        return ev

    def record_all(self, records: list[Evidence]) -> None:
        """Add several records at once (all were validated before)."""
        with self._lock:
            for ev in records:
                self._add(ev)
            self._bound()

    def get(self, evidence_id: str) -> Evidence | None:
        with self._lock:
            record = self._records.get(evidence_id)
        return record.load() if isinstance(record, Spilled) else record

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
            self._resident.clear()
            self._resident_bytes = 0
            spill_dir, self._spill_dir = self._spill_dir, None
        if spill_dir is not None:
            shutil.rmtree(spill_dir, ignore_errors=True)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            if self._spill_dir is not None:
                shutil.rmtree(self._spill_dir, ignore_errors=True)

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def __iter__(self) -> Iterator[Evidence]:
        with self._lock:
            records = list(self._records.values())
        # Spilled records are read back one at a time, as the consumer (an export) reaches them.
        return (r.load() if isinstance(r, Spilled) else r for r in records)

    def _retained(self, evidence_id: str) -> Evidence | None:
        found = self.get(evidence_id)
        if found is None and self.fallback is not None:
            found = self.fallback(evidence_id)
            if found is not None:
                self.record(found)
        return found

    def _lean(self, value: JSONObject, path: str) -> Evidence:
        """A lean record (rea.presentation) stands for its retained original: it is not self-authenticating, so it
        is accepted only as that original presents, and the original is what the tool reads."""
        eid = value.get("evidence_id")
        if not isinstance(eid, str) or not ev_mod.EVIDENCE_ID.match(eid):
            raise ReaError(
                "invalid_request",
                "a lean Evidence record needs its evidence_id",
                details={"issues": [{"path": f"{path}/evidence_id", "reason": "invalid_format", "message": "ev_..."}]},
            )
        found = self._retained(eid)
        if found is None:
            where = "this session's ledger or the analysis cache" if self.fallback is not None else "this session"
            raise ReaError(
                "target_unavailable",
                f"the lean Evidence record {eid} is not retained in {where}",
                remediation="A lean record stands for the complete record its session retains: pass it in the "
                "session that returned it, pass the complete record (a server started with "
                "REA_RESULT_PRESENTATION=complete returns it), or repeat its producer here.",
                details={"evidence_id": eid, "reason": "not_retained", "path": path, "presentation": "lean"},
            )
        if not _presents(found, value):
            raise ReaError(
                "evidence_integrity_mismatch",
                f"the lean Evidence record {eid} differs from the record retained under its id",
                remediation="Pass the record exactly as the tool returned it, or "
                '{"kind": "retained-evidence", "evidence_id": ...}.',
                details={"evidence_id": eid, "reason": "lean_record_mismatch", "path": path},
            )
        return found

    def resolve(self, value: Any, path: str = "evidence") -> Evidence:
        """Accept inline Evidence (complete, or lean: resolved by its id),
        or ``{"kind":"retained-evidence","evidence_id":...}``."""
        if isinstance(value, Evidence):
            return value
        if isinstance(value, dict) and value.get("kind") == "retained-evidence":
            eid = value.get("evidence_id")
            if set(value) != {"kind", "evidence_id"} or not isinstance(eid, str) or not ev_mod.EVIDENCE_ID.match(eid):
                raise ReaError(
                    "invalid_request",
                    "malformed retained-evidence reference",
                    details={
                        "issues": [
                            {
                                "path": path,
                                "reason": "invalid_format",
                                "message": 'expected {"kind":"retained-evidence","evidence_id":"ev_<64 hex>"}',
                            }
                        ]
                    },
                )
            found = self._retained(eid)
            if found is None:
                raise _missing(eid, path, cached=self.fallback is not None)
            return found
        if isinstance(value, dict) and "provenance" in value and "analysis_profile" not in value:
            return self._lean(value, path)
        if isinstance(value, dict):
            return ev_mod.from_builtins(value)
        raise ReaError(
            "invalid_request",
            f"{path} must be an Evidence object or a retained-evidence reference",
            details={"issues": [{"path": path, "reason": "invalid_type", "message": "expected object"}]},
        )
