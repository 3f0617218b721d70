"""The residual-unknowns registry: what an investigation does not yet know about a target, kept per target.

Each unknown is an append-only history of revisions; a revision commits to the one before it (``previous_digest``)
and to its own content (``digest``), so an edited history is refused wherever it is read (the store, a bundle).
Documents live beside the annotation store (``<sha256>.unknowns.json``) and follow its rules: lock-free
readers, one exclusive writer per target (``rea.annotations.exclusive``), whole documents published by rename
(``rea.annotations.publish``). A writer re-reads under the lock, so compare-and-swap on ``expected_revision``
holds across threads and processes.
"""

from __future__ import annotations

import glob
import os
import re
import secrets
from collections.abc import Callable
from typing import Any
from typing import Final
from typing import Literal

import msgspec

from rea.annotations import SHA256
from rea.annotations import _store_error
from rea.annotations import exclusive
from rea.annotations import publish
from rea.canonical import canonical_digest
from rea.canonical import canonical_json
from rea.context import CallContext
from rea.errors import ReaError
from rea.evidence import Authority
from rea.evidence import Confidence
from rea.files import open_regular
from rea.records import JSONObject

SCHEMA_VERSION: Final = 1
SUFFIX: Final = ".unknowns.json"
MAX_UNKNOWNS: Final = 10_000
MAX_REVISIONS: Final = 1_000
MAX_DOCUMENT_BYTES: Final = 64 << 20
UNKNOWN_ID: Final = re.compile(r"^unk_[0-9a-f]{12}_[0-9a-f]{20}$")

Severity = Literal["low", "medium", "high", "critical"]
Status = Literal["open", "investigating", "blocked", "contradicted", "resolved"]
RelationshipKind = Literal["depends_on", "blocks", "duplicates", "related_to"]
SEVERITY_ORDER: Final = ("critical", "high", "medium", "low")


class _Strict(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class Relationship(_Strict, frozen=True):
    kind: RelationshipKind
    unknown_id: str


class RequiredEnvironment(_Strict, frozen=True):
    """What the answering Evidence's environment must be (a field left out is not required)."""

    platform: str | None = None
    architecture: str | None = None
    isolation: Literal["none", "process", "container", "virtual-machine"] | None = None


class Resolution(_Strict, frozen=True):
    """How an unknown was closed: ``answered`` by Evidence, or ``withdrawn`` (no longer a question)."""

    kind: Literal["answered", "withdrawn"]
    summary: str
    evidence_ids: list[str] = []


class UnknownRevision(_Strict, frozen=True):
    """One revision of one unknown; the last is its head."""

    unknown_id: str
    revision: int
    target_sha256: str
    domain: str
    question: str
    severity: Severity
    status: Status
    required_authority: Authority
    required_confidence: Confidence
    required_environment: RequiredEnvironment | None
    recommended_probes: list[str]
    relationships: list[Relationship]
    supporting_evidence_ids: list[str]
    contradicting_evidence_ids: list[str]
    resolution: Resolution | None
    previous_digest: str | None
    digest: str


class _Document(_Strict, frozen=True):
    schema_version: int
    sha256: str
    unknowns: dict[str, list[UnknownRevision]]


Histories = dict[str, list[UnknownRevision]]


def revision_digest(rev: UnknownRevision) -> str:
    body = msgspec.to_builtins(rev)
    del body["digest"]
    return canonical_digest(body)


def sealed(rev: UnknownRevision) -> UnknownRevision:
    """``rev`` with its digest computed."""
    return msgspec.structs.replace(rev, digest=revision_digest(rev))


def new_id(sha256: str) -> str:
    return f"unk_{sha256[:12]}_{secrets.token_hex(10)}"


def history_problem(unknown_id: str, history: list[UnknownRevision], sha256: str) -> str | None:
    """Why ``history`` is not an authentic history of ``unknown_id`` on ``sha256`` (None when it is)."""
    if not UNKNOWN_ID.match(unknown_id) or not unknown_id.startswith(f"unk_{sha256[:12]}_"):
        return f"{unknown_id!r} is not an unknown id of this target"
    if not history or len(history) > MAX_REVISIONS:
        return f"{unknown_id} has {len(history)} revisions"
    previous: str | None = None
    for number, rev in enumerate(history, start=1):
        if rev.unknown_id != unknown_id or rev.target_sha256 != sha256 or rev.revision != number:
            return f"{unknown_id} revision {number} names another unknown, target or number"
        if rev.previous_digest != previous or rev.digest != revision_digest(rev):
            return f"{unknown_id} revision {number} does not match its digest chain"
        previous = rev.digest
    return None


def _integrity(message: str, **details: Any) -> ReaError:
    return ReaError(
        "evidence_integrity_mismatch",
        message,
        remediation="Export the bundle again from its source session; edited bundles are never accepted.",
        details={"reason": "malformed_unknowns", **details},
    )


def checked(raw: bytes, where: str, fail: Callable[[str], ReaError], sha256: str | None = None) -> _Document:
    try:
        doc = msgspec.json.decode(raw, type=_Document)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise fail(f"{where}: not an unknowns document: {exc}") from None
    if doc.schema_version != SCHEMA_VERSION or not SHA256.match(doc.sha256):
        raise fail(f"{where}: unsupported schema_version or a malformed target")
    if sha256 is not None and doc.sha256 != sha256:
        raise fail(f"{where}: the document names another target")
    if len(doc.unknowns) > MAX_UNKNOWNS:
        raise fail(f"{where}: more than {MAX_UNKNOWNS} unknowns")
    for unknown_id, history in doc.unknowns.items():
        problem = history_problem(unknown_id, history, doc.sha256)
        if problem is not None:
            raise fail(f"{where}: {problem}")
    return doc


class Registry(msgspec.Struct, frozen=True, kw_only=True):
    """Every unknown of one target: id to revision history (oldest first)."""

    sha256: str
    unknowns: Histories

    def head(self, unknown_id: str) -> UnknownRevision | None:
        history = self.unknowns.get(unknown_id)
        return history[-1] if history else None

    def heads(self) -> list[UnknownRevision]:
        return [h[-1] for _, h in sorted(self.unknowns.items())]

    @property
    def revision(self) -> str | None:
        """Commits to every history (None when there are none)."""
        if not self.unknowns:
            return None
        return canonical_digest({k: [r.digest for r in h] for k, h in sorted(self.unknowns.items())})

    def document(self) -> JSONObject:
        out: JSONObject = msgspec.to_builtins(
            _Document(schema_version=SCHEMA_VERSION, sha256=self.sha256, unknowns=dict(sorted(self.unknowns.items())))
        )
        return out


def from_document(raw: bytes, where: str = "bundle") -> Registry:
    """Decode and authenticate one bundle entry (every history's digest chain)."""
    doc = checked(raw, where, lambda message: _integrity(message, where=where))
    return Registry(sha256=doc.sha256, unknowns=dict(doc.unknowns))


def conflict(unknown_id: str, expected: int, current: int) -> ReaError:
    return ReaError(
        "revision_conflict",
        f"{unknown_id} is at revision {current}, not the expected {expected}",
        remediation="Read the head again (list_unknowns or rea://unknown/{id}) and retry with its revision.",
        details={"unknown_id": unknown_id, "expected_revision": expected, "current_revision": current},
    )


def not_found(unknown_id: str, path: str = "unknown_id") -> ReaError:
    return ReaError(
        "invalid_request",
        f"no unknown {unknown_id!r} is recorded",
        remediation="Call list_unknowns for the recorded ids, or import the bundle that carries it.",
        details={"issues": [{"path": path, "reason": "invalid_value", "message": "no such unknown"}]},
    )


class UnknownStore:
    """Per-target unknowns documents under ``root`` (the annotation store's directory)."""

    def __init__(self, root: str) -> None:
        self.root = root

    def path(self, sha256: str, suffix: str = SUFFIX) -> str:
        if not SHA256.match(sha256):
            raise ValueError("not a SHA-256 digest")
        return os.path.join(self.root, sha256 + suffix)

    def _corrupt(self, path: str, why: str) -> ReaError:
        return ReaError(
            "artifact_integrity_mismatch",
            f"the unknowns document {path} is damaged: {why}",
            remediation="Restore it from an exported Evidence bundle (import_evidence_bundle), or move it aside.",
            details={"path": path, "reason": "malformed_unknowns"},
        )

    def load(self, sha256: str) -> Registry:
        path = self.path(sha256)
        try:
            fd = open_regular(path, what="the unknowns store")
        except FileNotFoundError:
            return Registry(sha256=sha256, unknowns={})
        except OSError as exc:
            raise _store_error(path, exc, "read", "unknowns") from None
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(MAX_DOCUMENT_BYTES + 1)
        if len(data) > MAX_DOCUMENT_BYTES:
            raise self._corrupt(path, f"larger than {MAX_DOCUMENT_BYTES} bytes")
        doc = checked(data, path, lambda why: self._corrupt(path, why), sha256)
        return Registry(sha256=sha256, unknowns=dict(doc.unknowns))

    def targets(self) -> list[str]:
        """Every target with an unknowns document, sorted."""
        found = (
            os.path.basename(p)[: -len(SUFFIX)] for p in glob.glob(os.path.join(glob.escape(self.root), "*" + SUFFIX))
        )
        return sorted(s for s in found if SHA256.match(s))

    def locate(self, unknown_id: str) -> Registry:
        """The registry holding ``unknown_id`` (its id names the target's first 12 hex digits)."""
        if UNKNOWN_ID.match(unknown_id):
            prefix = unknown_id[4:16]
            for sha in self.targets():
                if sha.startswith(prefix):
                    reg = self.load(sha)
                    if unknown_id in reg.unknowns:
                        return reg
        raise not_found(unknown_id)

    def update(self, sha256: str, change: Callable[[Histories], None], ctx: CallContext | None = None) -> Registry:
        """Apply ``change`` to the target's histories under the lock (re-read fresh) and publish the result."""
        with exclusive(self.root, self.path(sha256, ".unknowns.lock"), ctx, what="unknowns"):
            current = self.load(sha256)
            histories = {k: list(v) for k, v in current.unknowns.items()}
            change(histories)
            if len(histories) > MAX_UNKNOWNS:
                raise ReaError(
                    "resource_constraint",
                    f"a target keeps at most {MAX_UNKNOWNS} unknowns",
                    details={"resource": "unknowns", "limit": MAX_UNKNOWNS},
                )
            reg = Registry(sha256=sha256, unknowns=histories)
            if reg.revision != current.revision:
                if ctx is not None:
                    ctx.check("publishing the unknowns")
                data = canonical_json(reg.document())
                publish(self.root, self.path(sha256), data + b"\n", prefix=f".{sha256[:16]}-unk-", what="unknowns")
            return reg

    def merge(self, incoming: Registry, ctx: CallContext | None = None) -> JSONObject:
        """Add imported histories: a new unknown, or revisions that extend the local history; a diverged history is
        kept as it is locally and reported."""
        added: list[str] = []
        conflicts: list[JSONObject] = []

        def change(histories: Histories) -> None:
            for unknown_id, theirs in sorted(incoming.unknowns.items()):
                ours = histories.get(unknown_id, [])
                common = min(len(ours), len(theirs))
                if [r.digest for r in ours[:common]] != [r.digest for r in theirs[:common]]:
                    conflicts.append({"unknown_id": unknown_id, "kept_revision": len(ours), "reason": "diverged"})
                elif len(theirs) > len(ours):
                    histories[unknown_id] = list(theirs)
                    added.append(unknown_id)

        reg = self.update(incoming.sha256, change, ctx)
        return {"sha256": incoming.sha256, "updated": added, "conflicts": conflicts, "revision": reg.revision}
