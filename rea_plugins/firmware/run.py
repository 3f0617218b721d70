"""Running unblob as an owned, sandboxed process with time, memory and output bounds.

The image is copied (checked against its hash) into a private input directory the sandbox sees read-only; unblob
writes only into the output directory the sandbox is given. rea watches that directory while unblob runs and
ends the process the moment it holds more bytes or files than allowed; each file is capped besides by
RLIMIT_FSIZE in the runner, so a single decompression bomb cannot outgrow the bound between two looks.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass

import msgspec

from rea.plugin import OUT_OF_MEMORY
from rea.plugin import CallContext
from rea.plugin import OwnedProcess
from rea.plugin import ReaError
from rea.plugin import SandboxPolicy
from rea.plugin import Target
from rea.plugin import cancelled
from rea.plugin import leftovers
from rea.plugin import pinned_copy
from rea.plugin import python_worker_spec
from rea.plugin import status_details
from rea_plugins.firmware.shapes import Summary

RUNNER = "rea_plugins.firmware.runner"
RESOURCE = "unblob"
OWNER = "firmware"
INPUT_PREFIX = "rea-firmware-in-"
# Largest image rea copies for unblob.
MAX_INPUT_BYTES = 4 << 30
# The address-space bound of unblob and every extractor it starts (hyperscan's pattern database needs room).
MEMORY_BYTES = 4 << 30
POLL_S = 0.05
GRACE_S = 1.0
SUMMARY = "summary.json"


@dataclass(frozen=True)
class Bounds:
    timeout_s: int
    max_output_bytes: int
    max_files: int
    max_depth: int


def available() -> None:
    """unblob importable in rea's environment, else ``provider_unavailable`` naming the extra to install."""
    if importlib.util.find_spec("unblob") is None:
        raise ReaError(
            "provider_unavailable",
            "unblob is not installed",
            remediation="pip install 'rea-reverse[firmware]' (unblob), and its extractors (7z from p7zip-full, "
            "debugfs from e2fsprogs; `unblob --show-external-dependencies` lists them).",
            details={"reason": "runtime_missing", "provider_id": "unblob"},
        )


def measure(root: str, max_bytes: int, max_files: int) -> tuple[int, int]:
    """Bytes and entries under ``root`` (never following links), stopping once either bound is passed."""
    size = count = 0
    stack = [root]
    while stack:
        top = stack.pop()
        try:
            with os.scandir(top) as entries:
                for entry in entries:
                    count += 1
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(entry.path)
                    elif stat.S_ISREG(st.st_mode):
                        # Allocated blocks as well as the length: a sparse file still counts what it claims.
                        size += max(st.st_size, st.st_blocks * 512)
                    if size > max_bytes or count > max_files:
                        return size, count
        except OSError:
            continue
    return size, count


def output_exceeded(resource: str, limit: int, observed: int) -> ReaError:
    argument = "max_output_bytes" if resource == "output_bytes" else "max_files"
    what = "bytes" if resource == "output_bytes" else "files"
    return ReaError(
        "resource_constraint",
        f"the extraction wrote more than {limit} {what}; it was stopped and everything it wrote removed",
        remediation=f"Raise {argument} if the image is trusted, or lower max_depth.",
        details={"resource": resource, "limit": limit, "observed": observed, "argument": argument},
    )


def run(mode: str, target: Target, output: str, bounds: Bounds, ctx: CallContext) -> Summary:
    """Run unblob on ``target`` writing into ``output`` (an existing, empty directory); its summary."""
    available()
    if target.size > MAX_INPUT_BYTES:
        raise ReaError(
            "resource_constraint",
            f"the image is larger than {MAX_INPUT_BYTES} bytes",
            remediation="Carve the part of interest first.",
            details={"resource": "input_bytes", "limit": MAX_INPUT_BYTES, "observed": target.size},
        )
    # Marked as this server's: removed by the next start if the server is killed before it removes it itself.
    staging = tempfile.mkdtemp(prefix=INPUT_PREFIX)
    leftovers.mark(staging)
    try:
        source = pinned_copy(target.resolved_path, target.sha256, staging, MAX_INPUT_BYTES)
        ctx.check(mode)
        return _drive(mode, source, staging, output, bounds, ctx)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _drive(mode: str, source: str, staging: str, output: str, bounds: Bounds, ctx: CallContext) -> Summary:
    spec = msgspec.structs.replace(
        python_worker_spec(
            RUNNER,
            resource=RESOURCE,
            owner=OWNER,
            address_space_bytes=MEMORY_BYTES,
            args=(
                mode,
                source,
                output,
                "{private}/" + SUMMARY,
                str(bounds.max_output_bytes + 1),
                str(bounds.max_depth),
            ),
        ),
        stdin="null",
        stdout="null",
        # No network; the system's trees and rea's runtime read-only; the copy read-only; the output writable.
        sandbox=SandboxPolicy(writable_roots=(output,), readable_roots=(staging,), max_tasks=128),
    )
    proc = OwnedProcess.start(spec)
    deadline = time.monotonic() + bounds.timeout_s
    failure: ReaError | None = None
    summary: Summary | None = None
    status: int | None = None
    try:
        while True:
            status = proc.wait_exit(POLL_S)
            size, count = measure(output, bounds.max_output_bytes, bounds.max_files)
            if size > bounds.max_output_bytes:
                failure = output_exceeded("output_bytes", bounds.max_output_bytes, size)
            elif count > bounds.max_files:
                failure = output_exceeded("output_files", bounds.max_files, count)
            elif status is not None:
                break
            elif ctx.cancelled:
                failure = cancelled(mode)
            elif time.monotonic() > deadline:
                failure = ReaError(
                    "provider_timeout",
                    f"unblob did not finish within {bounds.timeout_s} s",
                    remediation="Raise timeout_s, or lower max_depth.",
                    details={"timeout_ms": bounds.timeout_s * 1000, "operation": mode, "argument": "timeout_s"},
                )
            if failure is not None:
                break
            ctx.progress(f"{mode}: {count} files written", done=None, total=None)
        if failure is None:
            summary = _read_summary(proc, status, mode)
    except ReaError as exc:
        failure = exc
    finally:
        closed = proc.terminate(GRACE_S)
    if closed.remaining:
        base = failure or ReaError("execution_failure", "unblob finished", details={"completed": True})
        raise base.with_cleanup_incomplete(list(closed.remaining), closed.reason or "unblob")
    if failure is not None:
        raise failure
    assert summary is not None
    return msgspec.structs.replace(summary, sandbox=proc.isolation.sandbox)


def _read_summary(proc: OwnedProcess, status: int | None, mode: str) -> Summary:
    path = os.path.join(proc.private_dir, SUMMARY)
    if status != 0:
        tail = proc.stderr_tail()
        if OUT_OF_MEMORY.search(tail):
            raise ReaError(
                "resource_constraint",
                f"unblob ran out of its {MEMORY_BYTES >> 20} MiB address-space bound",
                remediation="Extract a smaller image, or lower max_depth.",
                details={"resource": "memory", "limit": MEMORY_BYTES, "operation": mode},
            )
        raise ReaError(
            "artifact_operation_failed",
            "unblob failed on this image",
            remediation="The image may be hostile to unblob or an extractor; inspect_firmware_regions shows what "
            "was recognized.",
            details={"reason": "engine_failed", "engine": "unblob", **status_details(status)},
        )
    try:
        with open(path, "rb") as fh:
            data = fh.read(16 << 20)
        return msgspec.json.decode(data, type=Summary)
    except (OSError, msgspec.DecodeError):
        raise ReaError(
            "unreadable_output",
            "unblob ended without a readable summary",
            remediation="Retry; if it fails again the image may be hostile to unblob.",
            details={"engine": "unblob"},
        ) from None
