"""inspect_firmware_regions and extract_firmware: unblob, owned and sandboxed, with time, memory and output bounds."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile

import msgspec

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import ProviderIdentity
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import ToolStep
from rea.plugin import arg_str
from rea.plugin import cancelled
from rea.plugin import identify
from rea.plugin import int_param
from rea.plugin import leftovers
from rea.plugin import next_offset
from rea.plugin import retained_reference
from rea.plugin import sniff_format
from rea_plugins.firmware import run
from rea_plugins.firmware.shapes import ExtractedFile
from rea_plugins.firmware.shapes import FirmwareExtraction
from rea_plugins.firmware.shapes import FirmwareRegions
from rea_plugins.firmware.shapes import Listing
from rea_plugins.firmware.shapes import NativeBinary
from rea_plugins.firmware.shapes import Summary

VERSION = "0.1.0"
# An output folder is the caller's once complete, so it carries the kept extraction prefix (never swept by the next
# start) and, while it is written, a staging note under that prefix (removed by the next start if the server dies).
OUTPUT_PREFIX = leftovers.EXTRACT_PREFIX + "firmware-"
SCRATCH_PREFIX = "rea-firmware-scratch-"
NATIVE = frozenset({"elf", "pe", "mach-o", "mach-o-universal"})
# Rows an extraction lists inline; beyond, the complete record is retained and named (inspect_analysis_view pages).
LISTED_FILES = 100
LISTED_NATIVE = 50
REGIONS_DEFAULT = 100
_D_OUTPUT = 1 << 30
_D_FILES = 20_000
_D_TIMEOUT = 300
_HASH_CHUNK = 1 << 20
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def _provider() -> ProviderIdentity:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version

    try:
        engine = version("unblob")
    except PackageNotFoundError:
        engine = "missing"
    return ProviderIdentity(id="unblob", name=f"unblob {engine} (sandboxed)", version=VERSION)


def _bounds(args: Arguments) -> run.Bounds:
    return run.Bounds(
        timeout_s=int_param(args, "timeout_s", _D_TIMEOUT, 1, 3600),
        max_output_bytes=int_param(args, "max_output_bytes", _D_OUTPUT, 1 << 10, 1 << 40),
        max_files=int_param(args, "max_files", _D_FILES, 1, 1_000_000),
        max_depth=int_param(args, "max_depth", 4, 1, 16),
    )


def _bounds_record(b: run.Bounds) -> dict[str, int]:
    return {
        "timeout_s": b.timeout_s,
        "max_output_bytes": b.max_output_bytes,
        "max_files": b.max_files,
        "max_depth": b.max_depth,
    }


def _regions(call: ToolCall) -> Evidence:
    offset = int_param(call.args, "offset", 0, 0)
    limit = int_param(call.args, "limit", REGIONS_DEFAULT, 1, 1000)
    bounds = _bounds({**call.args, "max_depth": 1})
    target = identify(arg_str(call.args, "path", ""), call.ctx)  # required by the schema
    run.available()
    # unblob carves what it recognizes even when it extracts nothing: into a scratch directory removed here.
    scratch = tempfile.mkdtemp(prefix=SCRATCH_PREFIX)
    leftovers.mark(scratch)
    try:
        summary = run.run("regions", target, scratch, bounds, call.ctx)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    regions = summary.regions
    window = regions[offset : offset + limit]
    result = FirmwareRegions(
        image_size=target.size,
        regions=window,
        offset=offset,
        limit=limit,
        total=len(regions),
        next_offset=next_offset(offset, len(window), len(regions)),
        unknown_bytes=sum(r.size for r in regions if r.kind == "unknown"),
        errors=summary.errors[:20],
        sandbox=summary.sandbox,
    )
    call.ctx.finish(f"firmware: {len(regions)} regions")
    return call.session.evidence(
        "inspect_firmware_regions",
        {"offset": offset, "limit": limit, "bounds": _bounds_record(bounds)},
        OperationResult(normalized=msgspec.to_builtins(result), limitations=_limitations(result)),
        bound=False,
        target=target,
        provider=_provider(),
        analysis_profile=None,
    )


def _limitations(result: FirmwareRegions | FirmwareExtraction) -> list[str]:
    notes = []
    if result.errors:
        notes.append("unblob reported errors (see errors): some regions may be unextracted or cut short.")
    if result.sandbox != "bubblewrap":
        notes.append("unblob ran without a sandbox on this host.")
    return notes


def _extract(call: ToolCall) -> Evidence:
    bounds = _bounds(call.args)
    target = identify(arg_str(call.args, "path", ""), call.ctx)  # required by the schema
    run.available()
    out_dir = tempfile.mkdtemp(prefix=OUTPUT_PREFIX)
    noted = contextlib.ExitStack()
    noted.enter_context(leftovers.staging_noted(out_dir, leftovers.EXTRACT_PREFIX))
    try:
        summary = run.run("extract", target, out_dir, bounds, call.ctx)
        files, links = _walk(out_dir, call)
        result = _result(out_dir, files, links, summary)
        evidence = _extraction_evidence(call, target, bounds, result)
    except BaseException as exc:
        noted.close()
        _discard(out_dir, exc)
        raise
    noted.close()
    # A cancel arriving after this handler returns still removes what it wrote.
    call.on_abandon(lambda: _discard(out_dir, cancelled("recording the extraction")))
    return evidence


def _walk(root: str, call: ToolCall) -> tuple[list[ExtractedFile], int]:
    """Every regular file under ``root`` with its size, SHA-256 and sniffed format; links are counted, not followed."""
    files: list[ExtractedFile] = []
    links = 0
    for top, dirs, names in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(names) + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            path = os.path.join(top, name)
            try:
                fd = os.open(path, _READ)
            except OSError:
                links += 1  # a symbolic link (O_NOFOLLOW) or something unreadable: never followed
                continue
            with os.fdopen(fd, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    links += 1
                    continue
                digest = hashlib.sha256()
                head = b""
                size = 0
                while chunk := fh.read(_HASH_CHUNK):
                    if not head:
                        head = chunk[:4096]
                    digest.update(chunk)
                    size += len(chunk)
            fmt, arch = sniff_format(head)
            files.append(
                ExtractedFile(
                    path=os.path.relpath(path, root),
                    size=size,
                    sha256=digest.hexdigest(),
                    format=fmt,
                    architecture=arch or None,
                )
            )
            if len(files) % 256 == 0:
                call.ctx.check("extract_firmware")
                call.ctx.progress(f"extract_firmware: {len(files)} files hashed")
    files.sort(key=lambda f: f.path)
    return files, links


def _result(out_dir: str, files: list[ExtractedFile], links: int, summary: Summary) -> FirmwareExtraction:
    native = [
        NativeBinary(path=os.path.join(out_dir, f.path), format=f.format, architecture=f.architecture)
        for f in files
        if f.format in NATIVE
    ]
    steps: list[ToolStep] = []
    if native:
        steps.append(ToolStep(tool="open_binary", arguments={"path": native[0].path}))
        # Every native binary at once: the corpus index beside the output directory (the caller's, like it).
        steps.append(ToolStep(tool="triage_corpus", arguments={"paths": [out_dir], "index": out_dir + ".corpus.db"}))
    return FirmwareExtraction(
        output_directory=out_dir,
        file_count=len(files),
        total_bytes=sum(f.size for f in files),
        files=files,
        native_binaries=native,
        native_binary_count=len(native),
        links=links,
        regions=summary.regions,
        errors=summary.errors[:20],
        listing=Listing(status="complete", shown=len(files), total=len(files)),
        next_steps=steps,
        sandbox=summary.sandbox,
    )


def _extraction_evidence(call: ToolCall, target: Target, bounds: run.Bounds, result: FirmwareExtraction) -> Evidence:
    params = {"bounds": _bounds_record(bounds)}
    notes = _limitations(result)

    def evidence(normalized: FirmwareExtraction, extra: list[str], links: list[str] | None = None) -> Evidence:
        return call.session.evidence(
            "extract_firmware",
            params,
            OperationResult(normalized=msgspec.to_builtins(normalized), limitations=[*notes, *extra]),
            bound=False,
            target=target,
            provider=_provider(),
            analysis_profile=None,
            links=links,
        )

    complete = evidence(result, [])
    if len(result.files) <= LISTED_FILES and len(result.native_binaries) <= LISTED_NATIVE:
        call.ctx.finish(f"extract_firmware: {result.file_count} files")
        return complete
    # Too many rows for a lean answer: the complete record is retained, the answer lists the first rows and names it.
    ref = retained_reference(complete.evidence_id)
    bounded = msgspec.structs.replace(
        result,
        files=result.files[:LISTED_FILES],
        native_binaries=result.native_binaries[:LISTED_NATIVE],
        listing=Listing(
            status="bounded",
            shown=min(LISTED_FILES, len(result.files)),
            total=len(result.files),
            complete_evidence=ref,
            page_with=ToolStep(
                tool="inspect_analysis_view",
                arguments={
                    "source": dict(ref),
                    "view": {"kind": "page", "section": "files", "offset": 0, "limit": 256},
                },
            ),
        ),
    )
    answer = evidence(
        bounded,
        ["The listing is bounded: listing.complete_evidence names the complete record (inspect_analysis_view)."],
        [complete.evidence_id],
    )
    if not call.ctx.signal.commit(lambda: call.session.ledger.record(complete)):
        call.ctx.check("extract_firmware")
    call.ctx.finish(f"extract_firmware: {result.file_count} files")
    return answer


def _discard(out_dir: str, cause: BaseException) -> None:
    """Remove an extraction whose call failed; a failure to do so becomes ``cleanup_incomplete``."""
    try:
        shutil.rmtree(out_dir)
    except FileNotFoundError:
        return
    except OSError as exc:
        base = (
            cause
            if isinstance(cause, ReaError)
            else ReaError("artifact_operation_failed", "extraction failed", details={"reason": "write_failed"})
        )
        raise base.with_cleanup_incomplete([out_dir], f"could not remove {out_dir}: {exc.strerror}") from None


# Input-schema fragments: JSON Schema's vocabulary, not rea records.
_PATH: JSONObject = {
    "type": "string",
    "minLength": 1,
    "description": "Local path of the firmware image (any blob: flash dump, update file).",
    "examples": ["/tmp/router-fw.bin"],
}
_TIMEOUT: JSONObject = {
    "type": "integer",
    "minimum": 1,
    "maximum": 3600,
    "default": _D_TIMEOUT,
    "description": "Seconds unblob may run; past it the call stops and removes what it wrote.",
}
_MAX_OUTPUT: JSONObject = {
    "type": "integer",
    "minimum": 1024,
    "maximum": 1 << 40,
    "default": _D_OUTPUT,
    "description": "Most bytes unblob may write (zip-bomb guard); past it the call stops, nothing is left.",
}

INSPECT_FIRMWARE_REGIONS = ToolDef(
    name="inspect_firmware_regions",
    result_type=FirmwareRegions,
    family="firmware",
    title="Inspect Firmware Regions",
    description=(
        "The regions of a firmware image as unblob recognizes them (file systems, compressed streams, executables, "
        "unknown stretches): offset, size, kind and entropy, from a sandboxed unblob that extracts nothing."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": _PATH,
            "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Regions to skip."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1000,
                "default": REGIONS_DEFAULT,
                "description": "Most regions to list, by offset.",
            },
            "timeout_s": _TIMEOUT,
            "max_output_bytes": {**_MAX_OUTPUT, "description": "Most bytes unblob may carve while it looks."},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    handler=_regions,
    # unblob runs as an owned process (launches_process): never a read-only hint, though it leaves nothing.
    effects=ToolEffects(records_evidence=True, launches_process=True),
    examples=({"path": "/tmp/router-fw.bin"},),
    cli_subject="path",
)

EXTRACT_FIRMWARE = ToolDef(
    name="extract_firmware",
    result_type=FirmwareExtraction,
    family="firmware",
    title="Extract Firmware",
    description=(
        "Extract a firmware image with unblob (sandboxed, bounded in time, memory and bytes written) into a fresh "
        "directory rea creates, listing each file's SHA-256 and the native binaries to pass to open_binary. An "
        "image that writes past max_output_bytes or max_files stops the call and leaves nothing behind."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": _PATH,
            "max_depth": {
                "type": "integer",
                "minimum": 1,
                "maximum": 16,
                "default": 4,
                "description": "How deep to extract containers within containers.",
            },
            "timeout_s": _TIMEOUT,
            "max_output_bytes": _MAX_OUTPUT,
            "max_files": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1_000_000,
                "default": _D_FILES,
                "description": "Most files and folders unblob may write; past it the call stops, nothing is left.",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    handler=_extract,
    effects=ToolEffects(records_evidence=True, writes_filesystem=True, launches_process=True, idempotent=False),
    examples=({"path": "/tmp/router-fw.bin"}, {"path": "/tmp/router-fw.bin", "max_output_bytes": 268435456}),
    cli_subject="path",
)

TOOLS = (INSPECT_FIRMWARE_REGIONS, EXTRACT_FIRMWARE)
__all__ = ["TOOLS", "tools"]


def tools() -> list[ToolDef]:
    """The family's tools, for the kernel (the plugin lists this module in ``TOOL_MODULES``)."""
    return list(TOOLS)
