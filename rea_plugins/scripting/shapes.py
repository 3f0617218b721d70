"""The result of ``run_analysis_script``."""

from __future__ import annotations

from typing import Any

from rea.plugin import Record


class ScriptRun(Record):
    """One script's run: what it printed, its result, and the Evidence of the tool calls it made."""

    # What the script printed (stdout and stderr), its first max-output bytes as text.
    printed: str
    printed_bytes: int
    printed_truncated: bool
    # The script's result (rea.answer(value), else a module-level ``result``) as JSON; absent: it set none.
    result: Any = None
    # Inner tool calls made, and the Evidence ids of those that recorded Evidence (first-call order, each once).
    calls: int
    call_evidence_ids: list[str]
    elapsed_ms: int
    # The isolation it ran under: "bubblewrap".
    sandbox: str
