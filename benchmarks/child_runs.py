"""A measurement run in a fresh interpreter (so its peak RSS is its own), and how two such runs' times compare."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def run(script: str, path: Path) -> dict[str, object]:
    """The JSON object ``script`` prints last when run on ``path``, or its error (the last line of its stderr)."""
    proc = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1][:300] if proc.stderr.strip() else proc.returncode}
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def time_ratio(ours: dict[str, object], theirs: dict[str, object]) -> float | None:
    """``ours``'s seconds over ``theirs``'s (theirs at least 10 ms), or None when either has no time."""
    if isinstance(ours.get("seconds"), float | int) and isinstance(theirs.get("seconds"), float | int):
        return round(float(ours["seconds"]) / max(float(theirs["seconds"]), 0.01), 2)  # type: ignore[arg-type]
    return None
