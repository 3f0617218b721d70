"""recover_javascript_sources: a bundle split back into its modules by Wakaru (npm ``@wakaru/cli``: webpack,
browserify and esbuild bundles), run as an owned, sandboxed process with a time and memory bound.

Wakaru reads the bundle and writes the modules it recovers, with ``provenance.json`` giving each module's byte ranges
in the bundle, into a fresh ``rea-extract-recovered-*`` directory (the only folder it may write; no network). rea
hashes every file written and links each module to its ranges; the bundle is never executed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from typing import TYPE_CHECKING

from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import arg_int
from rea.plugin import arg_object
from rea.plugin import arg_str
from rea.plugin import cancelled
from rea.plugin import leftovers
from rea.plugin import read_regular
from rea_plugins.javascript.recovered import RecoveredModule
from rea_plugins.javascript.recovered import RecoveredSources
from rea_plugins.javascript.recovered import Unbundler
from rea_plugins.javascript.settings import WAKARU_MEMORY_MB
from rea_plugins.javascript.settings import WAKARU_PATH

if TYPE_CHECKING:
    from rea.plugin import OwnedProcess

SCHEMA_VERSION = 1
PREFIX = leftovers.EXTRACT_PREFIX + "recovered-"
RESOURCE = "wakaru"
MAX_BUNDLE_BYTES = 256 << 20
PROVENANCE = "provenance.json"


def find_wakaru() -> str:
    configured = WAKARU_PATH.read()
    found = configured or shutil.which("wakaru")
    if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise ReaError(
            "provider_unavailable",
            "the unbundler (wakaru) is not installed" + (f" at {configured}" if configured else ""),
            remediation="Install it with `npm install @wakaru/cli` and set REA_WAKARU_PATH to "
            "node_modules/@wakaru/cli-linux-x64/wakaru (or put wakaru on PATH).",
            details={"reason": "executable_missing", "setting": WAKARU_PATH.name},
        )
    return os.path.realpath(found)


def _version(executable: str) -> str | None:
    """The version its npm package declares (the binary's package.json beside it)."""
    with contextlib.suppress(OSError, ValueError, ReaError):
        data = json.loads(read_regular(os.path.join(os.path.dirname(executable), "package.json"), 1 << 20))
        version = data.get("version") if isinstance(data, dict) else None
        return version if isinstance(version, str) else None
    return None


def _run(proc: OwnedProcess, timeout_s: float, ctx: CallContext) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        status = proc.wait_exit(0.1)
        if status is not None:
            return status
        if ctx.cancelled:
            raise cancelled("unbundling")
        if time.monotonic() >= deadline:
            raise ReaError(
                "provider_timeout",
                f"the unbundler did not finish within {timeout_s:g} s",
                remediation="Raise limits.timeout_ms, or unbundle a smaller file.",
                details={"reason": "timeout", "timeout_ms": int(timeout_s * 1000)},
            )
        ctx.progress("unbundling")


def discard(output_directory: str) -> None:
    """Remove what a recovery wrote (its folder holds the modules folder)."""
    shutil.rmtree(os.path.dirname(output_directory), ignore_errors=True)


def recover(call: ToolCall) -> RecoveredSources:
    from rea.plugin import OwnedProcess
    from rea.plugin import ProcessSpec
    from rea.plugin import SandboxPolicy

    a = call.args
    ctx = call.ctx
    bundle = os.path.realpath(arg_str(a, "input_path", ""))
    data = read_regular(bundle, MAX_BUNDLE_BYTES, what="bundle", field="input_path")
    executable = find_wakaru()
    limits = arg_object(a, "limits") or {}
    out_root = tempfile.mkdtemp(prefix=PREFIX)
    modules_dir = os.path.join(out_root, "modules")
    noted = contextlib.ExitStack()
    noted.enter_context(leftovers.staging_noted(out_root, leftovers.EXTRACT_PREFIX))
    package_root = os.path.dirname(executable)
    if os.path.basename(os.path.dirname(package_root)) == "@wakaru":
        package_root = os.path.dirname(os.path.dirname(package_root))  # node_modules: the launcher and the binary
    try:
        proc = OwnedProcess.start(
            ProcessSpec(
                argv=(executable, bundle, "--unpack", "-o", modules_dir, "--provenance"),
                resource=RESOURCE,
                owner="javascript",
                stdin="null",
                stdout="null",
                address_space_bytes=WAKARU_MEMORY_MB.read() << 20,
                memory_setting=WAKARU_MEMORY_MB.name,
                sandbox=SandboxPolicy(
                    allow_loopback=False,
                    accept_none=True,
                    readable_roots=(os.path.dirname(bundle), package_root),
                    writable_roots=(out_root,),
                ),
            )
        )
        try:
            status = _run(proc, arg_int(limits, "timeout_ms", 120_000) / 1000, ctx)
            stderr = proc.stderr_tail()
        finally:
            proc.terminate(1.0)
        if status != 0:
            raise ReaError(
                "execution_failure",
                f"the unbundler failed (exit status {status})",
                remediation="Check that the input is a JavaScript bundle; details.stderr has the unbundler's words.",
                details={"reason": "unbundler_failed", "exit_status": status, "stderr": stderr[-400:]},
            )
        provenance = _provenance(modules_dir)
        modules = _modules(modules_dir, provenance)
    except BaseException:
        shutil.rmtree(out_root, ignore_errors=True)
        noted.close()
        raise
    noted.close()
    offset, limit = arg_int(a, "offset", 0), arg_int(a, "limit", 50)
    end = offset + limit
    limitations = []
    if provenance.get("format") in (None, "unknown"):
        limitations.append(
            "No bundle format was recognized (a scope-hoisted or minified ESM bundle keeps no module boundaries): "
            "the whole file is one module."
        )
    return RecoveredSources(
        schema_version=SCHEMA_VERSION,
        unbundler=Unbundler(name="wakaru", version=_version(executable), executable=executable),
        input_path=bundle,
        input_sha256=hashlib.sha256(data).hexdigest(),
        input_bytes=len(data),
        output_directory=modules_dir,
        format=str(provenance.get("format") or "unknown"),
        strategy=strategy if isinstance(strategy := provenance.get("strategy"), str) else None,
        total=len(modules),
        offset=offset,
        limit=limit,
        next_offset=end if end < len(modules) else None,
        modules=modules[offset:end],
        isolation=proc.isolation,
        limitations=limitations,
    )


def _provenance(modules_dir: str) -> JSONObject:
    """Wakaru's provenance.json (its JSON, read with every value checked for its kind before use)."""
    try:
        raw = json.loads(read_regular(os.path.join(modules_dir, PROVENANCE), 64 << 20, what="provenance file"))
    except (OSError, ValueError):
        raise ReaError(
            "unreadable_output",
            "the unbundler wrote no readable provenance.json",
            remediation="Use a Wakaru release with --provenance (1.12 or later).",
            details={"reason": "no_provenance"},
        ) from None
    return raw if isinstance(raw, dict) else {}


def _modules(modules_dir: str, provenance: JSONObject) -> list[RecoveredModule]:
    entries = provenance.get("modules") if isinstance(provenance.get("modules"), dict) else {}
    assert isinstance(entries, dict)
    out = []
    for rel, entry in sorted(entries.items()):
        path = os.path.realpath(os.path.join(modules_dir, rel))
        if not path.startswith(os.path.realpath(modules_dir) + os.sep):
            continue  # a name that would leave the output directory is not a module of it
        try:
            data = read_regular(path, MAX_BUNDLE_BYTES, what="recovered module")
        except OSError:
            continue
        ranges = entry.get("ranges") if isinstance(entry, dict) else None
        out.append(
            RecoveredModule(
                path=rel,
                sha256=hashlib.sha256(data).hexdigest(),
                bytes=len(data),
                ranges=[
                    [int(start), int(end)]
                    for r in (ranges if isinstance(ranges, list) else [])
                    if isinstance(r, list) and len(r) == 2
                    for start, end in [r]
                    if isinstance(start, int) and isinstance(end, int)
                ],
                # A string, as the schema says; anything else Wakaru might write there is left out.
                extraction=extraction
                if isinstance(entry, dict) and isinstance(extraction := entry.get("extraction"), str)
                else None,
            )
        )
    return out
