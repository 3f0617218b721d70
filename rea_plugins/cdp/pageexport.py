"""export_web_scripts: the page's script sources written to a fresh directory rea makes, each with its SHA-256.

The directory is ``rea-extract-web-scripts-*`` in the temporary directory (the extraction prefix: kept by rea's
leftover sweep once complete, removed while it is being written if the server dies). Files are named by their
position and the URL's last path segment, never by a path the page chose, so nothing is written outside it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import urllib.parse
from collections.abc import Iterator

import msgspec

from rea.plugin import CallContext
from rea.plugin import ReaError
from rea.plugin import leftovers
from rea_plugins.cdp.pagemodel import ExportedScript
from rea_plugins.cdp.pagemodel import ScriptExport
from rea_plugins.cdp.pagemodel import page_of
from rea_plugins.cdp.pagescripts import PageSession
from rea_plugins.cdp.pagescripts import in_scope
from rea_plugins.cdp.pagescripts import read_source

SCHEMA_VERSION = 1
PREFIX = leftovers.EXTRACT_PREFIX + "web-scripts-"
MANIFEST = "rea-scripts.json"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _name(index: int, url: str, inline: bool, line: int, column: int) -> str:
    last = urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1] or "index"
    stem = _UNSAFE.sub("_", last)[:80].lstrip(".") or "script"
    if inline:
        stem = f"{stem}.inline-{line + 1}-{column + 1}"
    return f"{index:04d}-{stem}" + ("" if stem.endswith((".js", ".mjs", ".cjs")) else ".js")


def discard(directory: str) -> None:
    shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def staging(prefix: str, what: str) -> Iterator[str]:
    """A fresh directory, noted as staging while it is written (the leftover sweep removes it if the server dies);
    a failed write removes it, a failure of the file system as a typed error saying ``what`` failed."""
    root = tempfile.mkdtemp(prefix=prefix)
    with leftovers.staging_noted(root, leftovers.EXTRACT_PREFIX):
        try:
            yield root
        except BaseException as exc:
            discard(root)
            if isinstance(exc, OSError):
                raise ReaError(
                    "artifact_operation_failed",
                    f"writing {what} failed: {exc.strerror or exc}",
                    details={"reason": "write_failed"},
                ) from None
            raise


def export_scripts(
    page: PageSession, max_scripts: int, max_total_bytes: int, offset: int, limit: int, ctx: CallContext
) -> ScriptExport:
    scripts, anonymous, outside = in_scope(page)
    files: list[ExportedScript] = []
    total = skipped = 0
    limitations: list[str] = []
    with staging(PREFIX, "the scripts") as out_dir:
        for i, script in enumerate(scripts):
            ctx.progress("exporting scripts", done=i, total=len(scripts))
            if len(files) >= max_scripts:
                skipped += len(scripts) - i
                limitations.append(f"Only the first {max_scripts} scripts were written (max_scripts).")
                break
            source = read_source(page, script, ctx)
            if source is None or script.sha256 is None:
                skipped += 1
                continue
            data = source.encode("utf-8", "surrogatepass")
            if total + len(data) > max_total_bytes:
                skipped += 1
                continue
            name = _name(i, script.url, script.inline, script.start_line, script.start_column)
            fd = os.open(os.path.join(out_dir, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            total += len(data)
            files.append(
                ExportedScript(
                    url=script.url,
                    script_id=script.script_id,
                    inline=script.inline,
                    is_module=script.is_module,
                    path=name,
                    sha256=script.sha256,
                    bytes=len(data),
                )
            )
        # The whole listing beside the files (the answer pages it): url, path, sha256 and size of each.
        manifest = os.path.join(out_dir, MANIFEST)
        with os.fdopen(os.open(manifest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644), "wb") as fh:
            fh.write(msgspec.json.encode(files))
    if skipped and not limitations:
        limitations.append(f"{skipped} scripts were not written (unreadable, or past max_total_bytes).")
    if anonymous or outside:
        limitations.append(
            f"{anonymous} unnamed scripts and {outside} scripts outside allowed_origins were not written."
        )
    return ScriptExport(
        schema_version=SCHEMA_VERSION,
        target=page.target,
        allowed_origins=page.scope,
        output_directory=out_dir,
        written=len(files),
        total_bytes=total,
        skipped=skipped,
        page=page_of(len(files), offset, limit),
        files=files[offset : offset + limit],
        limitations=limitations,
    )
