"""Evidence bundles: the manifest, the summary projection, atomic canonical export and validated import.

A bundle is a JSON document whose canonical bytes (RFC 8785) are its identity, read back by other rea versions and
by people: its parts are built as that JSON (``JSONObject``), member by member, rather than as records whose field
order would not be the canonical one anyway.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterable
from collections.abc import Iterator
from typing import Any
from typing import Final

import msgspec

from rea import annotations as ann_mod
from rea import evidence as ev_mod
from rea import unknowns as unk_mod
from rea.annotations import Notebook
from rea.arguments import Arguments
from rea.arguments import arg_object
from rea.arguments import arg_str
from rea.canonical import canonical_digest
from rea.canonical import canonical_json
from rea.context import CallContext
from rea.errors import ReaError
from rea.errors import invalid_request
from rea.errors import issue
from rea.evidence import Evidence
from rea.evidence import ProviderIdentity
from rea.files import file_kind
from rea.files import fsync_dir
from rea.files import open_regular
from rea.nesting import nests_deeper_than
from rea.process import leftovers
from rea.records import JSONObject
from rea.target import read_error
from rea.unknowns import Registry as Unknowns

BUNDLE_VERSION: Final = 2
# Import budget: a bundle is materialized whole, so its size bounds the memory it may take.
IMPORT_MAX_BYTES: Final = 256 * 1024 * 1024
MAX_DEPTH: Final = 128
MAX_STRING_BYTES: Final = 16 * 1024 * 1024
_STAGING_PREFIX: Final = ".rea-export-"


class ArtifactIdentity(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The identity-bearing part of a subject, as listed in the bundle manifest."""

    sha256: str
    size: int
    format: str
    architecture: str | None


class _BundleFile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A bundle as read from disk; records stay raw until each is authenticated on its own."""

    bundle_version: int
    records: list[msgspec.Raw]
    artifacts: list[ArtifactIdentity] | None = None
    providers: list[ProviderIdentity] | None = None
    record_count: int | None = None
    record_ids_digest: str | None = None
    # The analyst's annotations of the bundle's artifacts (absent in bundles without any).
    annotations: list[msgspec.Raw] | None = None
    annotations_digest: str | None = None
    # The residual unknowns of the bundle's artifacts (absent in bundles without any).
    unknowns: list[msgspec.Raw] | None = None
    unknowns_digest: str | None = None


class Bundle(msgspec.Struct, frozen=True, kw_only=True):
    """An authenticated bundle: records sorted by id, and annotations sorted by target."""

    records: list[Evidence]
    annotations: list[Notebook]
    unknowns: list[Unknowns] = []


class Manifest(msgspec.Struct, frozen=True, kw_only=True):
    artifacts: list[ArtifactIdentity]
    providers: list[ProviderIdentity]
    record_count: int
    record_ids_digest: str


class _Header(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The members before "records": the manifest, and the annotations when there are any (a bundle without any
    keeps its earlier bytes)."""

    bundle_version: int
    artifacts: list[ArtifactIdentity]
    providers: list[ProviderIdentity]
    record_count: int
    record_ids_digest: str
    annotations: list[JSONObject] | None = None
    annotations_digest: str | None = None


def _provider_key(p: ProviderIdentity) -> tuple[str, str, str]:
    return (p.id, p.version or "", p.name)


def manifest(records: list[Evidence]) -> Manifest:
    """Artifacts, providers and a digest over the ids of ``records`` (already sorted by id)."""
    artifacts = {
        ArtifactIdentity(
            sha256=r.subject.digest.sha256,
            size=r.subject.size,
            format=r.subject.format,
            architecture=r.subject.architecture,
        )
        for r in records
        if r.subject is not None
    }
    providers = {_provider_key(r.provider): r.provider for r in records}
    ids = [r.evidence_id for r in records]
    return Manifest(
        artifacts=sorted(artifacts, key=lambda a: (a.sha256, a.size, a.format, a.architecture or "")),
        providers=[providers[k] for k in sorted(providers)],
        record_count=len(ids),
        record_ids_digest=canonical_digest(ids),
    )


def sorted_records(records: Iterable[Evidence]) -> list[Evidence]:
    return sorted(records, key=lambda r: r.evidence_id)


def annotations_digest(notebooks: list[Notebook]) -> str:
    """Commits to which targets' annotations a bundle carries, at which revision."""
    return canonical_digest([{"sha256": nb.sha256, "revision": nb.revision} for nb in notebooks])


def kept_annotations(records: list[Evidence], notebooks: Iterable[Notebook]) -> list[Notebook]:
    """The non-empty annotations of artifacts the records describe, sorted by target."""
    described = {r.subject.digest.sha256 for r in records if r.subject is not None}
    return sorted((nb for nb in notebooks if not nb.is_empty() and nb.sha256 in described), key=lambda nb: nb.sha256)


def unknowns_digest(registries: list[Unknowns]) -> str:
    """Commits to which targets' unknowns a bundle carries, at which revision."""
    return canonical_digest([{"sha256": u.sha256, "revision": u.revision} for u in registries])


def kept_unknowns(records: list[Evidence], registries: Iterable[Unknowns]) -> list[Unknowns]:
    """The non-empty unknowns registries of artifacts the records describe, sorted by target."""
    described = {r.subject.digest.sha256 for r in records if r.subject is not None}
    return sorted((u for u in registries if u.unknowns and u.sha256 in described), key=lambda u: u.sha256)


def _tail(registries: list[Unknowns]) -> JSONObject:
    """The members that sort after "records": the unknowns, when there are any."""
    if not registries:
        return {}
    return {"unknowns": [u.document() for u in registries], "unknowns_digest": unknowns_digest(registries)}


def _header(m: Manifest, notebooks: list[Notebook]) -> _Header:
    return _Header(
        bundle_version=BUNDLE_VERSION,
        artifacts=m.artifacts,
        providers=m.providers,
        record_count=m.record_count,
        record_ids_digest=m.record_ids_digest,
        annotations=[nb.document() for nb in notebooks] if notebooks else None,
        annotations_digest=annotations_digest(notebooks) if notebooks else None,
    )


def bundle_dict(
    records: Iterable[Evidence], notebooks: Iterable[Notebook] = (), unknowns: Iterable[Unknowns] = ()
) -> JSONObject:
    """The complete bundle as JSON-ready builtins."""
    recs = sorted_records(records)
    out: JSONObject = msgspec.to_builtins(_header(manifest(recs), kept_annotations(recs, notebooks)))
    out["records"] = [ev_mod.to_builtins(r) for r in recs]
    out.update(_tail(kept_unknowns(recs, unknowns)))
    return out


def canonical_chunks(
    records: Iterable[Evidence],
    ctx: CallContext | None = None,
    notebooks: Iterable[Notebook] = (),
    unknowns: Iterable[Unknowns] = (),
) -> Iterator[bytes]:
    """The bundle's RFC 8785 bytes, one record at a time; ``ctx`` is checked between records."""
    recs = sorted_records(records)
    head = canonical_json(_header(manifest(recs), kept_annotations(recs, notebooks)))
    # "records" sorts after every manifest key, so it can be appended as the last member.
    yield head[:-1] + b',"records":['
    for i, rec in enumerate(recs):
        if ctx is not None:
            ctx.check("export_evidence_bundle")
            ctx.progress(f"export: {i} of {len(recs)} records written", done=i, total=len(recs))
        yield (b"," if i else b"") + canonical_json(rec)
    tail = _tail(kept_unknowns(recs, unknowns))
    # "unknowns" sorts after "records": appended after it, so a bundle without any keeps its earlier bytes.
    yield b"]" + (b"," + canonical_json(tail)[1:] if tail else b"}")


# -- summary projection -----------------------------------------------------------------


def procedure_metadata(normalized: Any) -> JSONObject | None:
    """Native procedure identity when a result describes one procedure (``address``/``name``)."""
    normalized = ev_mod.as_object(normalized)
    if not isinstance(normalized, dict):
        return None
    candidates = [normalized]
    inner = ev_mod.as_object(normalized.get("procedure"))
    if isinstance(inner, dict):
        candidates.insert(0, inner)
    for cand in candidates:
        addr = cand.get("address")
        if isinstance(addr, str) and "name" in cand and (cand["name"] is None or isinstance(cand["name"], str)):
            meta: JSONObject = {"address": addr, "name": cand["name"]}
            for key in ("end", "size", "kind", "section", "signature"):
                value = cand.get(key)
                scalar = value is None or (isinstance(value, str | int) and not isinstance(value, bool))
                if key in cand and scalar:
                    meta[key] = value
            return meta
    return None


def summary_record(rec: Evidence) -> JSONObject:
    """One record without its payloads: identities, profile digest and procedure metadata."""
    s = rec.subject
    return {
        "evidence_id": rec.evidence_id,
        "operation": rec.operation,
        "target_sha256": None if s is None else s.digest.sha256,
        "subject": None
        if s is None
        else {
            "name": s.name,
            "local_path": s.local_path,
            "sha256": s.digest.sha256,
            "size": s.size,
            "format": s.format,
            "architecture": s.architecture,
        },
        "provider": {"id": rec.provider.id, "name": rec.provider.name, "version": rec.provider.version},
        "analysis_profile_digest": None if rec.analysis_profile is None else rec.analysis_profile.digest,
        "procedure": procedure_metadata(rec.normalized_result),
        "confidence": rec.confidence,
        "evidence_links": list(rec.evidence_links),
        # What is stored for this id: the whole record, never a truncated copy.
        "retention": "complete-record",
    }


def _matches(summary: JSONObject, filters: dict[str, str]) -> bool:
    for key, want in filters.items():
        if key == "procedure_address":
            proc = summary["procedure"]
            if not isinstance(proc, dict) or proc["address"] != want:
                return False
        elif summary[key] != want:
            return False
    return True


def check_detail(args: Arguments) -> tuple[str, dict[str, str]]:
    """The ``detail`` and ``filters`` arguments; filters without summary are refused."""
    detail = arg_str(args, "detail", "complete")
    filters = {k: str(v) for k, v in (arg_object(args, "filters") or {}).items()}
    if "filters" in args and detail != "summary":
        raise invalid_request(
            'filters require detail: "summary"',
            [
                issue(
                    "filters",
                    "invalid_value",
                    'filters apply only with detail: "summary"; add it or drop filters',
                )
            ],
        )
    return detail, filters


def project(
    records: Iterable[Evidence],
    detail: str,
    filters: dict[str, str],
    notebooks: Iterable[Notebook] = (),
    unknowns: Iterable[Unknowns] = (),
) -> JSONObject:
    """The complete bundle, or its summary projection restricted by exact ``filters``."""
    recs = sorted_records(records)
    if detail != "summary":
        return bundle_dict(recs, notebooks, unknowns)
    summaries = [summary_record(r) for r in recs]
    matched = [s for s in summaries if _matches(s, filters)]
    m = manifest(recs)
    out: JSONObject = {
        "bundle_version": BUNDLE_VERSION,
        "detail": "summary",
        "filters": filters,
        "record_count": m.record_count,
        "record_ids_digest": m.record_ids_digest,
        "matched_count": len(matched),
        "records": matched,
    }
    kept = kept_annotations(recs, notebooks)
    if kept:
        out["annotations"] = [
            {"sha256": nb.sha256, "revision": nb.revision, "address_count": len(nb.addresses)}
            | ({"type_count": len(nb.types)} if nb.types else {})
            for nb in kept
        ]
    kept_unk = kept_unknowns(recs, unknowns)
    if kept_unk:
        out["unknowns"] = [
            {"sha256": u.sha256, "revision": u.revision, "unknown_count": len(u.unknowns)} for u in kept_unk
        ]
    return out


# -- export -----------------------------------------------------------------------------


def _path_error(path: str, exc: OSError, field: str = "path") -> ReaError:
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return ReaError(
            "access_denied",
            f"permission denied for {path}: {exc.strerror}",
            details={
                "path": path,
                "system_code": errno.errorcode.get(exc.errno or 0, "EACCES"),
                "boundary": "filesystem-write",
            },
        )
    if exc.errno == errno.ENOSPC:
        return ReaError(
            "resource_constraint", f"no space left writing {path}", details={"resource": "disk", "path": path}
        )
    return invalid_request(
        f"cannot write {path}: {exc.strerror or exc}",
        [issue(field, "invalid_value", f"{exc.strerror or exc}")],
    )


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# Read once at import, while the process is still single-threaded: os.umask can only be read by setting it.
_UMASK: Final = _read_umask()


def _replaced_mode(dest: str) -> int:
    try:
        return stat.S_IMODE(os.stat(dest).st_mode)
    except OSError:
        return 0o666 & ~_UMASK


def _require_regular_or_absent(dest: str, named: str | None = None) -> None:
    """Refuse a destination that exists and is not a regular file (device, FIFO, socket, directory, link)."""
    try:
        st = os.lstat(dest)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _path_error(dest, exc) from None
    if stat.S_ISREG(st.st_mode):
        return
    kind = file_kind(st.st_mode)
    shown = f"{named} (a link to {dest})" if named else dest
    raise invalid_request(
        f"{shown} is {kind}, not a regular file; export writes regular files only",
        [issue("path", "invalid_value", f"path names {kind}; overwrite replaces regular files only")],
    )


def export(
    records: Iterable[Evidence],
    path: str,
    *,
    overwrite: bool,
    ctx: CallContext,
    notebooks: Iterable[Notebook] = (),
    unknowns: Iterable[Unknowns] = (),
) -> JSONObject:
    """Stream the canonical bundle to a staging file beside ``path`` and publish it atomically."""
    dest = os.path.abspath(path)
    if os.path.islink(dest):
        # A link to a regular file names that file: the rename publishes there, never over the link's target kind.
        _require_regular_or_absent(os.path.realpath(dest), named=dest)
        dest = os.path.realpath(dest)
    directory = os.path.dirname(dest)
    _require_regular_or_absent(dest)
    if not os.path.isdir(directory):
        raise invalid_request(
            f"directory {directory} does not exist",
            [issue("path", "invalid_value", "the destination directory must exist")],
        )
    if os.path.lexists(dest) and not overwrite:
        raise invalid_request(
            f"{dest} exists; pass overwrite: true to replace it",
            [issue("overwrite", "invalid_value", "destination exists and overwrite is not true")],
        )
    recs = sorted_records(records)
    kept = kept_annotations(recs, notebooks)
    kept_unk = kept_unknowns(recs, unknowns)
    # Named before it exists and noted with this process as its owner: a start after a kill removes it.
    staging = os.path.join(directory, f"{_STAGING_PREFIX}{secrets.token_hex(8)}.json.tmp")
    with leftovers.staging_noted(staging, _STAGING_PREFIX):
        try:
            fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise _path_error(dest, exc) from None
        digest = hashlib.sha256()
        size = 0
        try:
            # Created 0600; publish with the mode an ordinary open() would have given it.
            os.fchmod(fd, _replaced_mode(dest) if overwrite else 0o666 & ~_UMASK)
            with os.fdopen(fd, "wb") as fh:
                for chunk in canonical_chunks(recs, ctx, kept, kept_unk):
                    fh.write(chunk)
                    digest.update(chunk)
                    size += len(chunk)
                fh.flush()
                os.fsync(fh.fileno())
            ctx.check("export_evidence_bundle")
            if overwrite:
                # Checked again right before the rename: a device or FIFO put there since is never replaced.
                _require_regular_or_absent(dest)
                os.replace(staging, dest)
            else:
                # link() refuses an existing name, so a file created since the check above is never clobbered.
                try:
                    os.link(staging, dest)
                except FileExistsError:
                    raise invalid_request(
                        f"{dest} appeared during export; pass overwrite: true to replace it",
                        [issue("overwrite", "invalid_value", "destination exists and overwrite is not true")],
                    ) from None
                except OSError:
                    if os.path.lexists(dest):
                        raise
                    os.replace(staging, dest)
            fsync_dir(directory)
        except OSError as exc:
            raise _path_error(dest, exc) from None
        finally:
            if os.path.lexists(staging):
                try:
                    os.unlink(staging)
                except OSError:
                    pass
    ctx.finish(f"export: {len(recs)} records written")
    m = manifest(recs)
    return {
        "path": dest,
        "bytes": size,
        "sha256": digest.hexdigest(),
        "record_count": m.record_count,
        "record_ids_digest": m.record_ids_digest,
        "bundle_version": BUNDLE_VERSION,
        "annotated_targets": [nb.sha256 for nb in kept],
        "unknowns_targets": [u.sha256 for u in kept_unk],
    }


# -- import -----------------------------------------------------------------------------


def _integrity(message: str, **details: Any) -> ReaError:
    return ReaError(
        "evidence_integrity_mismatch",
        message,
        remediation="Export the bundle again from its source session; edited bundles are never accepted.",
        details=details,
    )


class _BundleMarkers(msgspec.Struct):
    """Only a bundle's two marker members, left raw (everything else is skipped, nothing materialized)."""

    bundle_version: msgspec.Raw = msgspec.Raw()
    records: msgspec.Raw = msgspec.Raw()


def _looks_like_bundle(data: bytes) -> bool:
    """A JSON object carrying both of a bundle's marker members (an edited bundle still does)."""
    try:
        markers = msgspec.json.decode(data, type=_BundleMarkers)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return False
    return len(markers.bundle_version) > 0 and len(markers.records) > 0


def _not_a_bundle(path: str, why: str) -> ReaError:
    return ReaError(
        "invalid_request",
        f"{path} is not an Evidence bundle: {why}",
        remediation="Give a file written by export_evidence_bundle (or `rea export-evidence-bundle`).",
        details={
            "path": path,
            "reason": "not_a_bundle",
            "issues": [{"path": "path", "reason": "invalid_value", "message": "not an Evidence bundle"}],
        },
    )


def _too_big(message: str, **details: Any) -> ReaError:
    return ReaError(
        "resource_constraint",
        message,
        remediation="Split the bundle or raise the named limit; rea will not materialize it whole.",
        details={"resource": "memory", **details},
    )


def read_bytes(path: str, max_bytes: int) -> bytes:
    """Read a bundle file, refusing one larger than ``max_bytes`` before reading it."""
    try:
        # A FIFO or device would block or never end: only regular files are bundles (refused before waiting).
        fh = os.fdopen(open_regular(path, what="bundle", field="path"), "rb")
    except OSError as exc:
        raise read_error(path, exc) from None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size > max_bytes:
            raise _too_big(
                f"bundle {path} is {size} bytes, above the {max_bytes}-byte import budget",
                limit="max_bytes",
                max_bytes=max_bytes,
                size=size,
                path=path,
            )
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise read_error(path, exc) from None
    if len(data) > max_bytes:  # the file grew after stat
        raise _too_big(
            f"bundle {path} exceeds the {max_bytes}-byte import budget",
            limit="max_bytes",
            max_bytes=max_bytes,
            path=path,
        )
    return data


def check_shape(
    value: Any, *, max_depth: int = MAX_DEPTH, max_string: int = MAX_STRING_BYTES, where: str = "bundle"
) -> None:
    """Refuse nesting deeper than ``max_depth`` and strings longer than ``max_string`` code points."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if len(item) > max_string:
                raise _too_big(
                    f"{where} holds a {len(item)}-character string, above the {max_string} limit",
                    limit="max_string_bytes",
                    max_string_bytes=max_string,
                    where=where,
                )
        elif isinstance(item, dict | list):
            if depth >= max_depth:
                raise _too_big(
                    f"{where} nests deeper than {max_depth} levels",
                    limit="max_depth",
                    max_depth=max_depth,
                    where=where,
                )
            children = item.values() if isinstance(item, dict) else item
            for child in children:
                if isinstance(child, str | dict | list):
                    stack.append((child, depth + 1))
            if isinstance(item, dict):
                for key in item:
                    if len(key) > max_string:
                        raise _too_big(
                            f"{where} holds an over-long key",
                            limit="max_string_bytes",
                            max_string_bytes=max_string,
                            where=where,
                        )


def _record_error(err: ReaError, index: int, path: str) -> ReaError:
    details = {**err.details, "record_index": index, "path": path}
    return ReaError(
        err.code, f"bundle {path} record {index}: {err.message}", remediation=err.remediation, details=details
    )


def parse(
    data: bytes,
    *,
    path: str = "bundle",
    ctx: CallContext | None = None,
    max_depth: int = MAX_DEPTH,
    max_string: int = MAX_STRING_BYTES,
) -> list[Evidence]:
    """Decode and authenticate every record and the manifest; returns records sorted by id."""
    return parse_bundle(data, path=path, ctx=ctx, max_depth=max_depth, max_string=max_string).records


def parse_bundle(
    data: bytes,
    *,
    path: str = "bundle",
    ctx: CallContext | None = None,
    max_depth: int = MAX_DEPTH,
    max_string: int = MAX_STRING_BYTES,
) -> Bundle:
    """Decode and authenticate every record, the annotations and the manifest."""
    # A record's fields sit three levels down (bundle, records, record): deeper than that plus the limit is refused
    # from the bytes, before a decoder recurses (its own limit differs between interpreters).
    if nests_deeper_than(data, max_depth + 3):
        raise _too_big(f"bundle {path} nests too deeply to decode", limit="max_depth", max_depth=max_depth, path=path)
    try:
        doc = msgspec.json.decode(data, type=_BundleFile)
    except RecursionError:
        raise _too_big(
            f"bundle {path} nests too deeply to decode", limit="max_depth", max_depth=max_depth, path=path
        ) from None
    except msgspec.ValidationError as exc:
        if not _looks_like_bundle(data):
            raise _not_a_bundle(path, "it has no bundle_version and records") from None
        # An altered bundle: say where its structure breaks, not the decoder's sentence.
        where = str(exc).rpartition(" - at ")[2] if " - at " in str(exc) else "$"
        raise _integrity(
            f"bundle {path} does not have the Evidence bundle structure (at {where})",
            path=path,
            reason="malformed_bundle",
            location=where,
        ) from None
    except msgspec.DecodeError:
        if b'"bundle_version"' in data[:4096]:  # a bundle cut short or damaged, not some other file
            raise _integrity(
                f"bundle {path} is damaged: it is not complete JSON", path=path, reason="malformed_json"
            ) from None
        raise _not_a_bundle(path, "it is not JSON") from None
    if doc.bundle_version != BUNDLE_VERSION:
        raise _integrity(
            f"bundle_version {doc.bundle_version} is not supported (expected {BUNDLE_VERSION})",
            path=path,
            reason="unsupported_bundle_version",
        )
    records: list[Evidence] = []
    seen: set[str] = set()
    total = len(doc.records)
    for index, raw_rec in enumerate(doc.records):
        if ctx is not None:
            ctx.check("import_evidence_bundle")
            ctx.progress(f"import: {index} of {total} records validated", done=index, total=total)
        try:
            rec = _decode_record(raw_rec, max_depth, max_string)
        except ReaError as err:
            raise _record_error(err, index, path) from None
        if rec.evidence_id in seen:
            raise _integrity(
                f"bundle {path} record {index} repeats {rec.evidence_id}",
                evidence_id=rec.evidence_id,
                record_index=index,
                path=path,
                reason="duplicate_record",
            )
        seen.add(rec.evidence_id)
        records.append(rec)
    ids = [r.evidence_id for r in records]
    if ids != sorted(ids):
        raise _integrity(f"bundle {path} records are not sorted by evidence_id", path=path, reason="unsorted_records")
    m = manifest(records)
    _check_manifest(doc, m, path)
    return Bundle(records=records, annotations=_parse_annotations(doc, m, path), unknowns=_parse_unknowns(doc, m, path))


def _parse_unknowns(doc: _BundleFile, m: Manifest, path: str) -> list[Unknowns]:
    if doc.unknowns is None:
        if doc.unknowns_digest is not None:
            raise _integrity(
                f"bundle {path} declares unknowns it does not carry",
                path=path,
                field="unknowns_digest",
                reason="manifest_mismatch",
            )
        return []
    described = {a.sha256 for a in m.artifacts}
    registries = [
        unk_mod.from_document(bytes(raw), where=f"bundle {path} unknowns {i}") for i, raw in enumerate(doc.unknowns)
    ]
    for reg in registries:
        if reg.sha256 not in described:
            raise _integrity(
                f"bundle {path} carries unknowns of {reg.sha256}, an artifact none of its records describes",
                path=path,
                sha256=reg.sha256,
                reason="unknowns_without_artifact",
            )
    shas = [u.sha256 for u in registries]
    if shas != sorted(set(shas)) or doc.unknowns_digest != unknowns_digest(registries):
        raise _integrity(
            f"bundle {path} manifest field unknowns_digest does not match its unknowns",
            path=path,
            field="unknowns_digest",
            reason="manifest_mismatch",
        )
    return registries


def _parse_annotations(doc: _BundleFile, m: Manifest, path: str) -> list[Notebook]:
    if doc.annotations is None:
        if doc.annotations_digest is not None:
            raise _integrity(
                f"bundle {path} declares annotations it does not carry",
                path=path,
                field="annotations_digest",
                reason="manifest_mismatch",
            )
        return []
    described = {a.sha256 for a in m.artifacts}
    notebooks: list[Notebook] = []
    for index, raw in enumerate(doc.annotations):
        nb = ann_mod.from_document(bytes(raw), where=f"bundle {path} annotations {index}")
        if nb.sha256 not in described:
            raise _integrity(
                f"bundle {path} annotates {nb.sha256}, an artifact none of its records describes",
                path=path,
                sha256=nb.sha256,
                reason="annotations_without_artifact",
            )
        notebooks.append(nb)
    shas = [nb.sha256 for nb in notebooks]
    if shas != sorted(set(shas)):
        raise _integrity(
            f"bundle {path} annotations are not sorted by target, or repeat one",
            path=path,
            reason="unsorted_annotations",
        )
    if doc.annotations_digest != annotations_digest(notebooks):
        raise _integrity(
            f"bundle {path} manifest field annotations_digest does not match its annotations",
            path=path,
            field="annotations_digest",
            reason="manifest_mismatch",
        )
    return notebooks


def _decode_record(raw: msgspec.Raw, max_depth: int, max_string: int) -> Evidence:
    try:
        rec = msgspec.json.decode(raw, type=Evidence)
    except RecursionError:
        raise _too_big("record nests too deeply to decode", limit="max_depth", max_depth=max_depth) from None
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise _integrity(f"not a valid Evidence record: {exc}", reason="malformed_record") from None
    # Depth and string limits are checked before hashing, so a hostile record costs no more than its bytes.
    check_shape(
        [rec.parameters, rec.raw_result, rec.normalized_result, rec.locations],
        max_depth=max_depth,
        max_string=max_string,
        where=f"record {rec.evidence_id}",
    )
    return ev_mod.validate(rec)


def _check_manifest(doc: _BundleFile, m: Manifest, path: str) -> None:
    for field, declared, actual in (
        ("record_count", doc.record_count, m.record_count),
        ("record_ids_digest", doc.record_ids_digest, m.record_ids_digest),
        ("artifacts", doc.artifacts, m.artifacts),
        ("providers", doc.providers, m.providers),
    ):
        if declared is not None and declared != actual:
            raise _integrity(
                f"bundle {path} manifest field {field} does not match its records",
                path=path,
                field=field,
                reason="manifest_mismatch",
            )


def load(path: str, *, ctx: CallContext | None = None, max_bytes: int | None = None) -> list[Evidence]:
    """Read and authenticate a bundle file under the import memory budget."""
    return load_bundle(path, ctx=ctx, max_bytes=max_bytes).records


def load_bundle(path: str, *, ctx: CallContext | None = None, max_bytes: int | None = None) -> Bundle:
    """Read and authenticate a bundle file, annotations included, under the import memory budget."""
    return parse_bundle(read_bytes(path, IMPORT_MAX_BYTES if max_bytes is None else max_bytes), path=path, ctx=ctx)
