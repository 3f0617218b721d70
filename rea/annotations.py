"""The annotation store: an analyst's names, comments, bookmarks and function notes, kept per target.

Annotations are keyed by the target's SHA-256 and a default-space address, so they survive close and
reopen and apply to whichever provider is bound. Each target has one canonical JSON document under a
per-user directory (``rea.config.annotations_dir``). Readers take no lock: a document is only ever
replaced whole, by rename. Writers read, modify and publish under an exclusive ``flock`` of a sidecar
lock file, so concurrent writers (threads or processes) never tear a document or lose an update.
A plain file per target was chosen over SQLite: the document is read whole anyway (its digest is the
annotation revision in Evidence identity), it is the very form carried in Evidence bundles, and it
needs no WAL sidecars or schema migrations on a home directory that may be a network mount.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any
from typing import Final
from typing import Literal

import msgspec

from rea.canonical import canonical_digest
from rea.canonical import canonical_json
from rea.context import CallContext
from rea.errors import IssueReason
from rea.errors import ReaError
from rea.errors import invalid_request
from rea.errors import issue
from rea.files import fsync_dir
from rea.files import open_regular
from rea.process import leftovers
from rea.records import JSONObject

SCHEMA_VERSION: Final = 1
FIELDS: Final = ("name", "comment", "inline_comment", "bookmark", "signature", "notes", "prototype", "data_type")
# Character bounds per field: a store document stays small enough to read whole on every call.
LIMITS: Final[dict[str, int]] = {
    "name": 255,
    "comment": 16384,
    "inline_comment": 4096,
    "bookmark": 255,
    "signature": 1024,
    "notes": 16384,
    "prototype": 4096,
    "data_type": 1024,
}
MAX_TYPES: Final = 10_000
MAX_TYPE_DECLARATION: Final = 32 * 1024
# A library type's name: a struct, union or enum tag, or a typedef name.
TYPE_NAME: Final = re.compile(r"^(?:(?:struct|union|enum) )?[A-Za-z_][A-Za-z0-9_]*$")
MAX_ADDRESSES: Final = 100_000
MAX_DOCUMENT_BYTES: Final = 64 << 20
LOCK_TIMEOUT_S: Final = 30.0
SETTING: Final = "REA_ANNOTATIONS_DIR"

SHA256: Final = re.compile(r"^[0-9a-f]{64}$")
ADDRESS: Final = re.compile(r"^0x[0-9a-fA-F]{1,16}$")
# C identifiers, plus the '.', '$' and '@' symbol names carry and '::' scopes (C++, Rust).
IDENTIFIER: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_.$@]*(?:::[A-Za-z_][A-Za-z0-9_.$@]*)*$")


class Note(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """What the analyst recorded at one address; an unset field is None (absent on disk)."""

    name: str | None = None
    comment: str | None = None
    inline_comment: str | None = None
    # A bookmark's label; "" is an unlabelled bookmark, None is no bookmark.
    bookmark: str | None = None
    signature: str | None = None
    notes: str | None = None
    # A C prototype parsed against the target's type library (rea.typelib), normalized.
    prototype: str | None = None
    # A C type name of the datum at the address (``struct opts``, ``char [16]``), checked against the library.
    data_type: str | None = None

    def is_empty(self) -> bool:
        return all(getattr(self, f) is None for f in FIELDS)


class TypeEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One type of a target's library: its kind and its C declaration (normalized by rea.typelib)."""

    kind: Literal["struct", "union", "enum", "typedef"]
    c: str


class _Document(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A target's annotations as stored on disk (and, with ``revision``, in bundles)."""

    schema_version: int
    sha256: str
    addresses: dict[str, Note]
    revision: str | None = None
    # The type library (absent when empty, so documents without types keep their bytes).
    types: dict[str, TypeEntry] | None = None


class Notebook(msgspec.Struct, frozen=True, kw_only=True):
    """Every annotation of one target, with its revision (None when there is none)."""

    sha256: str
    addresses: dict[str, Note]
    revision: str | None
    types: dict[str, TypeEntry] = {}

    def is_empty(self) -> bool:
        return not self.addresses and not self.types

    def note(self, address: str) -> Note:
        return self.addresses.get(address) or Note()

    def names(self) -> dict[str, str]:
        """User names by address."""
        return {a: n.name for a, n in self.addresses.items() if n.name is not None}

    def address_of(self, name: str) -> str | None:
        """The address the analyst gave ``name`` to, if any."""
        return next((a for a, n in self.addresses.items() if n.name == name), None)

    def document(self) -> JSONObject:
        """The bundle form: schema version, target, addresses and the revision that commits to them."""
        out: JSONObject = msgspec.to_builtins(
            _Document(
                schema_version=SCHEMA_VERSION,
                sha256=self.sha256,
                addresses=dict(sorted(self.addresses.items())),
                revision=self.revision,
            )
        )
        if self.types:
            out["types"] = msgspec.to_builtins(dict(sorted(self.types.items())))
        return out


def revision_of(sha256: str, addresses: dict[str, Note], types: dict[str, TypeEntry] | None = None) -> str | None:
    """The digest of a target's annotations: part of the identity of Evidence that reflects them."""
    if not addresses and not types:
        return None
    # Hashed as it is: the notes and types are Structs, encoded in their canonical form.
    content: dict[str, object] = {"schema_version": SCHEMA_VERSION, "sha256": sha256, "addresses": addresses}
    if types:
        content["types"] = types
    return canonical_digest(content)


def make_notebook(sha256: str, addresses: dict[str, Note], types: dict[str, TypeEntry] | None = None) -> Notebook:
    kept = {a: n for a, n in sorted(addresses.items(), key=lambda kv: int(kv[0], 16)) if not n.is_empty()}
    lib = dict(sorted((types or {}).items()))
    return Notebook(sha256=sha256, addresses=kept, revision=revision_of(sha256, kept, lib), types=lib)


# -- validation of what callers give ----------------------------------------------------------------


def normalize_address(text: str, path: str = "address") -> str:
    """A default-space address as canonical lowercase hex without leading zeros."""
    if not isinstance(text, str) or not ADDRESS.match(text):
        raise invalid_request(
            f"{text!r} is not an address (0x followed by 1-16 hex digits)",
            [issue(path, "invalid_format", "expected 0x-prefixed hex, e.g. 0x401136")],
        )
    return f"0x{int(text, 16):x}"


def field_problem(field: str, value: str) -> str | None:
    """Why ``value`` cannot be stored in ``field`` (None when it can); "" is handled by the caller."""
    if "\0" in value:
        return "must not contain NUL characters"
    if len(value) > LIMITS[field]:
        return f"at most {LIMITS[field]} characters"
    if field == "name" and not IDENTIFIER.match(value):
        return "must be an identifier: a letter or _ then letters, digits, _ . $ @ (scopes joined by ::)"
    if field in ("name", "bookmark", "signature", "data_type") and ("\n" in value or "\r" in value):
        return "must be one line"
    return None


def check_field(field: str, value: str, path: str) -> str | None:
    """The value to store (None clears the field: an empty string, except for bookmark labels)."""
    if value == "" and field != "bookmark":
        return None
    problem = field_problem(field, value)
    if problem is not None:
        reason: IssueReason = "out_of_range" if problem.startswith("at most") else "invalid_value"
        raise invalid_request(f"{path}: {value[:80]!r} {problem}", [issue(path, reason, problem)])
    return value


def type_problem(name: str, entry: TypeEntry) -> str | None:
    """Why a library entry cannot be stored (None when it can); its C is parsed where it is used."""
    if not TYPE_NAME.match(name):
        return "is not a type name (a struct, union or enum tag, or an identifier)"
    tag = name.split(" ", 1)[0] if " " in name else "typedef"
    if tag != entry.kind:
        return f"is declared as a {entry.kind}"
    if "\0" in entry.c or len(entry.c) > MAX_TYPE_DECLARATION or not entry.c.rstrip().endswith(";"):
        return f"has a malformed declaration (one C declaration ending in ';', at most {MAX_TYPE_DECLARATION})"
    return None


def _checked_types(doc: _Document, fail: Callable[[str], ReaError]) -> dict[str, TypeEntry]:
    types = dict(doc.types or {})
    if len(types) > MAX_TYPES:
        raise fail(f"more than {MAX_TYPES} types")
    for name, entry in types.items():
        problem = type_problem(name, entry)
        if problem is not None:
            raise fail(f"type {name!r} {problem}")
    return types


def _checked_document(doc: _Document, sha256: str, fail: Callable[[str], ReaError]) -> dict[str, Note]:
    if doc.schema_version != SCHEMA_VERSION:
        raise fail(f"schema_version {doc.schema_version} is not supported (expected {SCHEMA_VERSION})")
    if doc.sha256 != sha256:
        raise fail("the document names another target")
    if len(doc.addresses) > MAX_ADDRESSES:
        raise fail(f"more than {MAX_ADDRESSES} annotated addresses")
    for address, note in doc.addresses.items():
        if not ADDRESS.match(address) or address != f"0x{int(address, 16):x}":
            raise fail(f"{address!r} is not a canonical address")
        for field in FIELDS:
            value = getattr(note, field)
            if value is not None and (problem := field_problem(field, value)) is not None:
                raise fail(f"{field} at {address} {problem}")
    return dict(doc.addresses)


# -- the bundle form ----------------------------------------------------------------------------------


def _bundle_error(message: str, **details: Any) -> ReaError:
    return ReaError(
        "evidence_integrity_mismatch",
        message,
        remediation="Export the bundle again from its source session; edited bundles are never accepted.",
        details=details,
    )


def from_document(raw: bytes, where: str = "bundle") -> Notebook:
    """Decode and authenticate one bundle entry: valid fields, and a revision that matches them."""
    try:
        doc = msgspec.json.decode(raw, type=_Document)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise _bundle_error(f"{where}: not an annotation document: {exc}", reason="malformed_annotations") from None
    if not SHA256.match(doc.sha256):
        raise _bundle_error(f"{where}: sha256 is not a SHA-256 digest", reason="malformed_annotations")

    def fail(message: str) -> ReaError:
        return _bundle_error(f"{where} ({doc.sha256}): {message}", sha256=doc.sha256, reason="malformed_annotations")

    nb = make_notebook(doc.sha256, _checked_document(doc, doc.sha256, fail), _checked_types(doc, fail))
    if doc.revision != nb.revision:
        raise _bundle_error(
            f"{where} ({doc.sha256}): the annotation revision does not match its content",
            sha256=doc.sha256,
            reason="annotation_revision_mismatch",
        )
    return nb


# -- the store ------------------------------------------------------------------------------------------


def _store_error(path: str, exc: OSError, action: str, what: str = "annotation") -> ReaError:
    details = {"path": path, "setting": SETTING}
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return ReaError(
            "access_denied",
            f"cannot {action} the {what} store at {path}: {exc.strerror}",
            remediation=f"Make the directory writable or point {SETTING} at one that is.",
            details={**details, "boundary": "filesystem-write" if action == "write" else "filesystem-read"},
        )
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return ReaError(
            "resource_constraint",
            f"no space left writing the {what} store at {path}",
            details={**details, "resource": "disk"},
        )
    return ReaError(
        "execution_failure",
        f"cannot {action} the {what} store at {path}: {exc.strerror or exc}",
        remediation=f"Check the directory, or point {SETTING} at another one.",
        details=details,
    )


class AnnotationStore:
    """Per-target annotation documents under ``root``; safe for concurrent readers and writers."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._cache: dict[str, tuple[tuple[int, ...], Notebook]] = {}
        self._cache_lock = threading.Lock()

    def path(self, sha256: str, suffix: str = ".json") -> str:
        if not SHA256.match(sha256):
            raise ValueError("not a SHA-256 digest")
        return os.path.join(self.root, sha256 + suffix)

    # -- reading --------------------------------------------------------------------------------------

    def load(self, sha256: str, *, fresh: bool = False) -> Notebook:
        """The target's annotations (empty when it has none); reads are lock-free and cached by inode."""
        path = self.path(sha256)
        try:
            fd = open_regular(path, what="the annotation store")
        except FileNotFoundError:
            return make_notebook(sha256, {})
        except OSError as exc:
            raise _store_error(path, exc, "read") from None
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            # A publish always makes a new inode, so this key changes whenever the content may have (a
            # recycled inode of equal size within one timestamp tick could hide a change from a read, never
            # from a write: writers read fresh under the lock).
            key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            with self._cache_lock:
                cached = self._cache.get(sha256)
            if cached is not None and cached[0] == key and not fresh:
                return cached[1]
            if st.st_size > MAX_DOCUMENT_BYTES:
                raise self._corrupt(path, f"larger than {MAX_DOCUMENT_BYTES} bytes")
            data = fh.read(MAX_DOCUMENT_BYTES + 1)
        nb = self._decode(data, sha256, path)
        with self._cache_lock:
            self._cache[sha256] = (key, nb)
        return nb

    def _corrupt(self, path: str, why: str) -> ReaError:
        return ReaError(
            "artifact_integrity_mismatch",
            f"the annotation document {path} is damaged: {why}",
            remediation="Restore it from an exported Evidence bundle (import_evidence_bundle), or move "
            "it aside to start the target's annotations afresh.",
            details={"path": path, "reason": "malformed_annotations", "setting": SETTING},
        )

    def _decode(self, data: bytes, sha256: str, path: str) -> Notebook:
        try:
            doc = msgspec.json.decode(data, type=_Document)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise self._corrupt(path, str(exc)) from None

        def fail(why: str) -> ReaError:
            return self._corrupt(path, why)

        return make_notebook(sha256, _checked_document(doc, sha256, fail), _checked_types(doc, fail))

    # -- writing --------------------------------------------------------------------------------------

    def _locked(self, sha256: str, ctx: CallContext | None) -> contextlib.AbstractContextManager[None]:
        return exclusive(self.root, self.path(sha256, ".lock"), ctx)

    def update(
        self, sha256: str, change: Callable[[dict[str, Note]], None], ctx: CallContext | None = None
    ) -> Notebook:
        """Apply ``change`` to the target's current annotations under the lock and publish the result."""
        return self.update_all(sha256, lambda addresses, _types: change(addresses), ctx)

    def update_all(
        self,
        sha256: str,
        change: Callable[[dict[str, Note], dict[str, TypeEntry]], None],
        ctx: CallContext | None = None,
    ) -> Notebook:
        """Apply ``change`` to the target's annotations and type library under the lock, then publish."""
        with self._locked(sha256, ctx):
            current = self.load(sha256, fresh=True)
            addresses = dict(current.addresses)
            types = dict(current.types)
            change(addresses, types)
            nb = make_notebook(sha256, addresses, types)
            if len(nb.types) > MAX_TYPES:
                raise ReaError(
                    "resource_constraint",
                    f"a target keeps at most {MAX_TYPES} types",
                    details={"resource": "types", "limit": MAX_TYPES},
                )
            if len(nb.addresses) > MAX_ADDRESSES:
                raise ReaError(
                    "resource_constraint",
                    f"a target keeps at most {MAX_ADDRESSES} annotated addresses",
                    details={"resource": "annotations", "limit": MAX_ADDRESSES},
                )
            if nb.revision != current.revision:
                self._publish(nb)
            return nb

    def _publish(self, nb: Notebook) -> None:
        # Written as it is: the notes and types are Structs, encoded in their canonical form.
        doc: dict[str, object] = {"schema_version": SCHEMA_VERSION, "sha256": nb.sha256, "addresses": nb.addresses}
        if nb.types:
            doc["types"] = nb.types
        doc["revision"] = None
        data = canonical_json(doc)
        publish(self.root, self.path(nb.sha256), data + b"\n", prefix=f".{nb.sha256[:16]}-")

    def set_fields(
        self, sha256: str, changes: dict[str, dict[str, str | None]], ctx: CallContext | None = None
    ) -> tuple[Notebook, dict[str, Note]]:
        """Set (or, with None, clear) fields at addresses at once; returns the result and the prior notes."""
        before: dict[str, Note] = {}

        def change(addresses: dict[str, Note]) -> None:
            for address, fields in changes.items():
                prior = addresses.get(address, Note())
                before[address] = prior
                addresses[address] = msgspec.structs.replace(prior, **fields)

        return self.update(sha256, change, ctx), before

    def merge(self, incoming: Notebook, ctx: CallContext | None = None) -> JSONObject:
        """Add imported annotations; a field the store already holds differently is kept and reported."""
        added = 0
        added_types = 0
        conflicts: list[JSONObject] = []

        def change(addresses: dict[str, Note], types: dict[str, TypeEntry]) -> None:
            nonlocal added, added_types
            for name, entry in incoming.types.items():
                ours = types.get(name)
                if ours is None:
                    types[name] = entry
                    added_types += 1
                elif ours != entry:
                    conflicts.append(
                        {"type": name, "field": "type", "kept": ours.c, "incoming": entry.c, "reason": "differs"}
                    )
            taken = {n.name: a for a, n in addresses.items() if n.name is not None}
            for address, note in incoming.addresses.items():
                local = addresses.get(address, Note())
                fields: dict[str, str] = {}
                for field in FIELDS:
                    theirs, ours = getattr(note, field), getattr(local, field)
                    if theirs is None or theirs == ours:
                        continue
                    owner = taken.get(theirs) if field == "name" else None
                    if ours is None and owner in (None, address):
                        fields[field] = theirs
                        if field == "name":
                            taken[theirs] = address
                    else:
                        conflicts.append(
                            {
                                "address": address,
                                "field": field,
                                "kept": ours,
                                "incoming": theirs,
                                "reason": "differs" if ours is not None else f"name used at {owner}",
                            }
                        )
                if fields:
                    added += len(fields)
                    addresses[address] = msgspec.structs.replace(local, **fields)

        nb = self.update_all(incoming.sha256, change, ctx)
        return {
            "sha256": incoming.sha256,
            "added_fields": added,
            "added_types": added_types,
            "conflict_count": len(conflicts),
            "conflicts": conflicts[:100],
            "revision": nb.revision,
        }


@contextlib.contextmanager
def exclusive(root: str, lock_path: str, ctx: CallContext | None, what: str = "annotation") -> Iterator[None]:
    """Hold the exclusive ``flock`` of ``lock_path`` (created in ``root``) for the block; waits are cancellable."""
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
        # A FIFO or device put in the lock's place is refused at once, never waited on.
        fd = open_regular(lock_path, os.O_RDWR | os.O_CREAT, 0o600, what=f"the {what} lock")
    except OSError as exc:
        raise _store_error(root, exc, "write", what) from None
    try:
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if ctx is not None:
                    ctx.check(f"waiting for the {what} store")
                if time.monotonic() > deadline:
                    raise ReaError(
                        "resource_constraint",
                        f"another writer held the {what} lock {lock_path} for more than {LOCK_TIMEOUT_S:.0f} s",
                        remediation="Retry; if it persists, find the process holding the lock.",
                        details={"resource": f"{what}-lock", "path": lock_path},
                    ) from None
                time.sleep(0.005)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def publish(root: str, path: str, data: bytes, prefix: str, what: str = "annotation") -> None:
    """Write ``data`` to a staging file in ``root``, fsync it and rename it over ``path`` (never a partial file).

    The staging file is named ``.rea-<prefix>...tmp`` and noted as this process's while it exists
    (``rea.process.leftovers``): a server killed mid-write leaves it, and the next start removes it.
    """
    prefix = ".rea-" + prefix.lstrip(".")
    name = os.path.join(root, f"{prefix}{secrets.token_hex(8)}.tmp")
    staging: str | None = name
    with leftovers.staging_noted(name, prefix):
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(name, path)
            staging = None
            fsync_dir(root)
        except OSError as exc:
            raise _store_error(root, exc, "write", what) from None
        finally:
            if staging is not None:
                with contextlib.suppress(OSError):
                    os.unlink(staging)


def default_store() -> AnnotationStore:
    """The store the settings name (``REA_ANNOTATIONS_DIR``, else the XDG data home)."""
    from rea.config import annotations_dir

    return AnnotationStore(annotations_dir())
