"""``search_tools`` and ``call_tool_by_name``: every tool reachable from a client that lists only a few.

Hosts send the tool list with every model request and warn above about 80 tools, and several never act on
``notifications/tools/list_changed``, so a toolset enabled later may never reach the model. These two tools are
always listed and need no list change: the first finds tools of any toolset by words (their names, compact input
schemas and one-line descriptions), the second validates and runs any of them. A dispatched call takes the
kernel's one invocation path (``rea.catalog.invoke.invoke``): the same validation, availability, cancellation
and Evidence as a direct call, and the answer is the tool's own result.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import msgspec

from rea.arguments import arg_int
from rea.arguments import arg_object
from rea.arguments import arg_str
from rea.catalog.document import advertised_description
from rea.catalog.document import advertised_input_schema
from rea.catalog.invoke import invoke
from rea.catalog.refusals import not_advertised
from rea.catalog.refusals import unknown_tool
from rea.catalog.schemas import struct_output_schema
from rea.catalog.tool import ToolCall
from rea.catalog.tool import ToolDef
from rea.catalog.tool import ToolEffects
from rea.errors import ReaError
from rea.records import JSONObject

if TYPE_CHECKING:
    from rea.catalog.manifest import ToolSpec
    from rea.evidence import Evidence
    from rea.session import Session

SEARCH_TOOLS = "search_tools"
CALL_TOOL_BY_NAME = "call_tool_by_name"
# The input schema profile of the matches: compact says each argument's type and bounds, a third of full's size.
MATCH_PROFILE = "compact"
DEFAULT_MATCHES = 5
MAX_MATCHES = 25
_WORD = re.compile(r"[a-z0-9]+")


class ToolMatch(msgspec.Struct, frozen=True, kw_only=True):
    """One tool that matches a search: enough to call it (``call_tool_by_name``, or directly when listed)."""

    name: str
    toolset: str
    description: str
    # The tool's compact input schema: a JSON Schema document, not a rea record.
    input_schema: JSONObject
    read_only: bool
    # Whether this connection's tools/list already shows it (else call it through call_tool_by_name).
    listed: bool
    requires_target: bool


class ToolSearch(msgspec.Struct, frozen=True, kw_only=True):
    """The best matches of a query over every registered tool, paged."""

    query: str
    matches: list[ToolMatch]
    total: int
    offset: int
    next_offset: int | None


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


# Words an agent says for what the catalog words otherwise (a query word matches when any of these does).
SYNONYMS: dict[str, tuple[str, ...]] = {
    "dotnet": ("net", "managed"),
    "csharp": ("managed", "net"),
    "clr": ("managed", "net"),
    "il": ("managed", "il"),
    "apk": ("android", "apk"),
    "dex": ("android", "dex"),
    "js": ("javascript",),
    "node": ("javascript", "node"),
    "electron": ("javascript", "electron", "asar"),
    "decompile": ("decompil", "pseudo"),
    "decompiler": ("decompil", "pseudo"),
    "pseudocode": ("pseudo",),
    "xref": ("xref", "reference"),
    "xrefs": ("xref", "reference"),
    "function": ("function", "procedure"),
    "functions": ("function", "procedure"),
    "web": ("web", "browser", "page"),
    "diff": ("diff", "compare"),
    "debug": ("debug", "lldb", "observe"),
    "rename": ("set", "name"),
}


# Words that say nothing about a tool ("callers of a function").
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "at",
        "by",
        "for",
        "from",
        "how",
        "in",
        "into",
        "is",
        "it",
        "of",
        "on",
        "or",
        "the",
        "this",
        "to",
        "what",
        "where",
        "which",
        "who",
        "with",
    ]
)


def _terms(word: str) -> tuple[str, ...]:
    """What one query word matches as a prefix: its synonyms, else itself (a plural matches its singular)."""
    found = SYNONYMS.get(word)
    if found is not None:
        return found
    return (word[:-1],) if len(word) > 3 and word.endswith("s") else (word,)


def _score(spec: ToolSpec, words: list[str]) -> tuple[int, int]:
    """How well a tool matches: (query words it matches, points). A word in its name counts most, then in its
    toolset or family, then in its description; a word matches as a prefix ("decompil" finds "decompile")."""
    name = _words(spec.name.replace("_", " "))
    group = _words(f"{spec.toolset_id} {spec.family}")
    prose = _words(spec.description)
    matched = points = 0
    for word in words:
        best = max(
            6 * any(w.startswith(t) for w in name)
            + 3 * any(w.startswith(t) for w in group)
            + any(w.startswith(t) for w in prose)
            for t in _terms(word)
        )
        matched += best > 0
        points += best
    return matched, points


def listed_toolsets(session: Session) -> list[str] | None:
    """The toolsets this connection's tools/list shows (None outside a server, where every tool is callable)."""
    settings = session.connection.settings
    return None if settings is None else list(settings.toolsets.enabled)


def _search_tools(call: ToolCall) -> JSONObject:
    session = call.session
    args = call.args
    query = arg_str(args, "query", "")
    words = [w for w in _words(query) if w not in STOP_WORDS]
    if not words:
        raise ReaError(
            "invalid_request",
            "search_tools: the query has no words (letters or digits)",
            remediation="Describe the task in a few words, e.g. 'decompile function' or 'dotnet strings'.",
            details={"issues": [{"path": "query", "reason": "invalid_value", "message": "no words to search for"}]},
        )
    wanted = arg_str(args, "toolset")
    specs = session.registry.tool_specs()
    # Tools matching more of the words first, then by points; a tool matching none is no match.
    ranked = sorted(
        (-matched, -points, name)
        for name, spec in specs.items()
        if (not wanted or spec.toolset_id == wanted) and name not in DISPATCH_NAMES
        for matched, points in (_score(spec, words),)
        if matched
    )
    offset, limit = arg_int(args, "offset", 0), arg_int(args, "limit", DEFAULT_MATCHES)
    page = ranked[offset : offset + limit]
    shown = listed_toolsets(session)
    matches = [
        ToolMatch(
            name=name,
            toolset=(spec := specs[name]).toolset_id,
            description=advertised_description(spec, MATCH_PROFILE),
            input_schema=advertised_input_schema(session.registry, spec, MATCH_PROFILE),
            read_only=spec.effects.annotations()["readOnlyHint"],
            listed=shown is None or spec.toolset_id in shown,
            requires_target=spec.requires_target,
        )
        for _, _, name in page
    ]
    end = offset + len(page)
    found = ToolSearch(
        query=query,
        matches=matches,
        total=len(ranked),
        offset=offset,
        next_offset=end if end < len(ranked) else None,
    )
    answer: JSONObject = msgspec.to_builtins(found)
    return answer


def _call_tool_by_name(call: ToolCall) -> Evidence | JSONObject:
    session = call.session
    name = arg_str(call.args, "name", "")
    if name in DISPATCH_NAMES:
        raise ReaError(
            "invalid_request",
            f"call_tool_by_name does not run {name}",
            remediation=f"Call {name} directly: it is always listed.",
            details={"issues": [{"path": "name", "reason": "invalid_value", "message": "a dispatch tool"}]},
        )
    tool = session.registry.tools.get(name)
    if tool is None:
        raise unknown_tool(name, "Call search_tools with a few words about the task to find a tool's name.")
    settings = session.connection.settings
    if settings is not None and tool.toolset_id not in settings.toolsets.enabled and not settings.toolsets.on_demand:
        raise not_advertised(tool.toolset_id, settings.toolsets.enabled, tool=tool.name)
    # The connection's tools/list stays as it is: the client chose this path because it does not follow changes.
    result = invoke(session, tool, arg_object(call.args, "arguments") or {}, call.ctx)
    # A handler answers one or the other (Handler), so structured is set where evidence is not.
    return result.evidence if result.evidence is not None else result.structured or {}


SEARCH_TOOLS_DEF = ToolDef(
    name=SEARCH_TOOLS,
    family="session",
    description=(
        "Find tools of every toolset, listed or not, by a few words about the task: each match's name, one-line "
        "description and compact input schema. Call a match directly when listed, else through call_tool_by_name."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "description": "Words about the task; tools matching more of them come first.",
                "examples": ["dotnet strings"],
            },
            "toolset": {
                "type": "string",
                "pattern": "^[a-z][a-z0-9_-]{0,63}$",
                "description": "Only tools of this toolset (binary_session lists them).",
                "examples": ["managed"],
            },
            "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "First match of the page."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_MATCHES,
                "default": DEFAULT_MATCHES,
                "description": "Matches in the page.",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    output_schema=struct_output_schema(ToolSearch),
    effects=ToolEffects(records_evidence=False),
    examples=({"query": "decompile"}, {"query": "strings", "toolset": "managed", "limit": 3}),
    handler=_search_tools,
)

CALL_TOOL_BY_NAME_DEF = ToolDef(
    name=CALL_TOOL_BY_NAME,
    family="session",
    description=(
        "Run any tool of any toolset by name with its arguments, validated and recorded exactly like a direct call, "
        "for clients that list only some tools; the answer is that tool's own result."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "pattern": "^[a-z][a-z0-9_]{0,63}$",
                "description": "The tool's name, as search_tools or binary_session gives it.",
                "examples": ["inspect_managed_artifact"],
            },
            "arguments": {
                "type": "object",
                "description": "The tool's arguments, as its input schema (search_tools) says.",
                "examples": [{"path": "/tmp/app.dll"}],
            },
        },
        "required": ["name"],
        "additionalProperties": False,
    },
    # Whatever the named tool answers: an Evidence record or a session object.
    output_schema={"type": "object"},
    # It runs any tool, so it may do what any tool does: hosts should ask as they would for the riskiest.
    effects=ToolEffects(
        records_evidence=True,
        mutates_session=True,
        writes_filesystem=True,
        launches_process=True,
        accesses_network=True,
        idempotent=False,
    ),
    examples=({"name": "binary_session", "arguments": {}},),
    handler=_call_tool_by_name,
)

DISPATCH_NAMES = frozenset({SEARCH_TOOLS, CALL_TOOL_BY_NAME})
