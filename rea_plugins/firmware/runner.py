"""unblob inside rea's sandbox: ``python -m rea_plugins.firmware.runner MODE INPUT OUTPUT SUMMARY MAX_FILE DEPTH``.

This module runs only in the owned, sandboxed process that rea.firmware starts (never in the server). It bounds
every file it or an extractor writes (RLIMIT_FSIZE, with SIGXFSZ ignored so a write past it fails instead of
killing the writer), runs unblob's processing on the private copy of the image, and writes a small summary (the
top-level regions with their entropy, and unblob's errors) for the server to read. The server itself walks and
hashes what was written: nothing here is trusted about the files.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from rea_plugins.firmware.shapes import EngineError
from rea_plugins.firmware.shapes import Region
from rea_plugins.firmware.shapes import Summary

if TYPE_CHECKING:
    from rea.plugin import JSONValue

MAX_ERRORS = 50
_BLOCK = 1 << 20


def _entropy(path: str, start: int, end: int) -> float | None:
    """Shannon entropy of bytes [start, end) in bits per byte (0-8), block-weighted, with unblob's own routine."""
    from unblob import math_tools

    if end <= start:
        return None
    total = 0.0
    with open(path, "rb") as fh:
        fh.seek(start)
        left = end - start
        while left > 0:
            block = fh.read(min(_BLOCK, left))
            if not block:
                break
            total += math_tools.shannon_entropy(block) * len(block)
            left -= len(block)
    return round(total / (end - start), 4)


# unblob's JSON report, as its version writes it (foreign JSON: each key read with a type check, .get where a key
# may be missing).
def _summary(report: list[JSONValue], source: str) -> Summary:
    regions: list[Region] = []
    errors: list[EngineError] = []
    tasks = 0
    for task in report:
        tasks += 1
        if not isinstance(task, dict):
            continue
        info, reports = task.get("task"), task.get("reports")
        top = isinstance(info, dict) and info.get("depth") == 0
        for item in reports if isinstance(reports, list) else []:
            if not isinstance(item, dict):
                continue
            kind = str(item.get("__typename__", ""))
            if top and kind in ("ChunkReport", "UnknownChunkReport"):
                start, end = int(str(item["start_offset"])), int(str(item["end_offset"]))
                regions.append(
                    Region(
                        offset=start,
                        size=end - start,
                        kind=str(item.get("handler_name", "unknown")) if kind == "ChunkReport" else "unknown",
                        entropy=_entropy(source, start, end),
                        encrypted=bool(item.get("is_encrypted", False)),
                    )
                )
            elif "severity" in item and len(errors) < MAX_ERRORS:
                errors.append(
                    EngineError(
                        type=kind,
                        severity=str(item.get("severity", "")),
                        message=str(item.get("message") or item.get("command") or kind)[:300],
                    )
                )
    regions.sort(key=lambda r: (r.offset, r.size))
    return Summary(regions=regions, errors=errors, tasks=tasks)


def main(argv: list[str]) -> int:
    mode, source, output, summary_path, max_file, depth = argv
    limit = int(max_file)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Inherited by the extractors unblob starts: a write past the bound fails with EFBIG, nobody dies of it.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    from unblob.processing import ExtractionConfig
    from unblob.processing import process_file

    config = ExtractionConfig(
        extract_root=Path(output),
        randomness_depth=0,
        max_depth=int(depth),
        skip_extraction=mode == "regions",
        process_num=1,
        verbose=0,
    )
    report_path = os.path.join(tempfile.gettempdir(), "unblob-report.json")
    process_file(config, Path(source), Path(report_path))
    with open(report_path, "rb") as fh:
        report = json.load(fh)
    with open(summary_path, "wb") as out:
        out.write(msgspec.json.encode(_summary(report, source)))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except MemoryError:
        sys.stderr.write("MemoryError\n")
        sys.exit(3)
