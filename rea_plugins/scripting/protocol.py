"""What the server and a script's worker say to each other, beyond rea's worker frames.

The frames are the kernel's (``rea.process.frames``): the server sends one ``run`` request; while it runs, the
worker sends ``call`` requests of its own (one inner tool call each) and the server answers each with a reply
or a failure; the worker ends with the reply (or failure) to ``run``. These Structs are those messages' bodies.
"""

from __future__ import annotations

from typing import Any

import msgspec

from rea.plugin import JSONObject

# The id of the one ``run`` request; the worker numbers its ``call`` requests from CALL_BASE up.
RUN_ID = 1
CALL_BASE = 2
RUN = "run"
CALL = "call"
# Frames either side accepts: a tool's result rarely passes the server's 10 MiB response budget.
MAX_FRAME_BYTES = 64 * 1024 * 1024


class ToolEntry(msgspec.Struct, frozen=True, kw_only=True):
    """A tool the script's ``rea`` object offers: its name and the first sentence of its description."""

    name: str
    summary: str
    read_only: bool


class RunParams(msgspec.Struct, frozen=True, kw_only=True):
    """The ``run`` request: the script and the bounds the worker keeps itself."""

    source: str
    filename: str
    tools: list[ToolEntry]
    max_output_bytes: int
    # The caller's JSON values, the script's ``args`` (a user's document: any JSON).
    arguments: JSONObject = {}


class CallParams(msgspec.Struct, frozen=True, kw_only=True):
    """One inner tool call the script makes."""

    tool: str
    # The script's arguments for that tool (the user's JSON; the tool's input schema checks them).
    arguments: JSONObject = {}


class CallAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """An inner call's answer: the plain JSON result and the Evidence that recorded it (None: a session tool)."""

    result: Any
    evidence_id: str | None = None


class RunOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """The reply to ``run``: what the script printed (bounded) and its result as JSON text (None: no result)."""

    printed: str
    printed_bytes: int
    printed_truncated: bool
    result_json: str | None = None
