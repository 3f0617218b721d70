"""A tool definition: name, schemas, effects, requirements and handler, as one value."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Literal

import msgspec

from rea.arguments import Arguments
from rea.records import JSONObject
from rea.records import JSONValue

if TYPE_CHECKING:
    from rea.context import CallContext
    from rea.evidence import Evidence
    from rea.session import Session


class ToolEffects(msgspec.Struct, frozen=True, kw_only=True):
    """What a tool may do; annotations are derived from these, never from its name."""

    records_evidence: bool = True
    mutates_target: bool = False
    mutates_session: bool = False
    writes_filesystem: bool = False
    launches_process: bool = False
    accesses_network: bool = False
    changes_ui_state: bool = False
    may_discard_data: bool = False
    executes_foreign_code: bool = False
    mutates_device: bool = False
    idempotent: bool = True

    def annotations(self) -> dict[str, bool]:
        """MCP's hints, by one rule. Read-only is "changes nothing a caller could see": recording the answer as
        Evidence (the server's own record of what it said) and reading a page over a loopback endpoint change
        nothing; a tool that changes the session or notebook, writes a file, starts a process or drives a browser
        does. Hosts ask a user to approve every call not marked read-only, so a pure query must be."""
        read_only = not (
            self.mutates_target
            or self.mutates_session
            or self.writes_filesystem
            or self.launches_process
            or self.changes_ui_state
            or self.may_discard_data
            or self.executes_foreign_code
            or self.mutates_device
        )
        return {
            "readOnlyHint": read_only,
            "destructiveHint": self.may_discard_data or self.executes_foreign_code or self.mutates_device,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.launches_process or self.accesses_network,
        }


class ToolMode(msgspec.Struct, frozen=True, kw_only=True):
    """One way a tool can be called, reported separately in ``binary_session.tool_availability``."""

    name: str
    description: str
    requires_operations: tuple[str, ...] = ()
    # Arguments the caller must supply in this mode (e.g. ``document`` for explicit_document).
    requires_arguments: tuple[str, ...] = ()


# Toolsets (what REA_MCP_TOOLSETS selects) of the families whose name differs.
FAMILY_TOOLSETS = {"application": "javascript"}
# Always advertised: without the session tools nothing else can be opened.
ALWAYS_TOOLSET = "session"

# Client features a tool may rely on. Negotiated capabilities can be missing; progress and cancellation
# are per-request features every MCP client has (a tool still degrades without a progress token).
NEGOTIATED_FEATURES = frozenset({"roots", "sampling", "elicitation"})
REQUEST_FEATURES = frozenset({"progress", "cancellation"})


class ToolCall:
    """One invocation: validated arguments, the session, and the call context."""

    def __init__(self, tool: ToolDef, args: Arguments, session: Session, ctx: CallContext) -> None:
        self.tool = tool
        self.args = args
        self.session = session
        self.ctx = ctx
        self.abandon_callbacks: list[Callable[[], None]] = []

    def on_abandon(self, callback: Callable[[], None]) -> None:
        """Undo a side effect (files written, ...) if the call is cancelled after the handler returned."""
        self.abandon_callbacks.append(callback)


ResultType = type[msgspec.Struct] | tuple[type[msgspec.Struct], ...]

# A handler returns Evidence (recorded in the ledger) or a plain JSON object (session tools).
Handler = Callable[[ToolCall], "Evidence | JSONObject"]


def lazy_handler(module: str, function: str) -> Handler:
    """The handler ``module.function``, imported on the tool's first call: declaring a family of tools then loads
    none of the engines its handlers need."""

    def handle(call: ToolCall) -> Evidence | JSONObject:
        import importlib

        handler: Handler = getattr(importlib.import_module(module), function)
        return handler(call)

    return handle


class ToolFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What a tool is, as plain data: shared by its definition (``ToolDef``) and its manifest entry."""

    name: str
    description: str
    family: str
    effects: ToolEffects = ToolEffects()
    requires_target: bool = False
    requires_operations: tuple[str, ...] = ()
    client_features_required: tuple[str, ...] = ()
    client_features_optional: tuple[str, ...] = ()
    modes: tuple[ToolMode, ...] = ()
    # Path arguments besides ``path`` and ``*_path`` (resolved by rea.paths before the handler runs).
    path_arguments: tuple[str, ...] = ()
    # CLI: the main argument, also accepted as the positional after TARGET (see rea.cli.tools).
    cli_subject: str = ""
    # CLI: a command group this tool belongs to, and its name there (``rea <cli_group> <cli_command>``, e.g.
    # ``rea corpus triage``); the flat ``rea <cli_name>`` works as well. Empty: no group.
    cli_group: str = ""
    cli_command: str = ""
    title: str = ""
    # The toolset a server may advertise it in (REA_MCP_TOOLSETS); empty: the one its family maps to.
    toolset: str = ""
    # Whether an MCP client may run it as a task (tools/list's execution.taskSupport): "optional" for long work
    # (whole-program analysis, batch decompilation, corpus triage, comparisons, scenario captures) that can outlive
    # a client's request timeout; see rea.mcp.tasks.
    task_support: Literal["forbidden", "optional", "required"] = "forbidden"

    @property
    def display_title(self) -> str:
        return self.title or self.name.replace("_", " ").title()

    @property
    def toolset_id(self) -> str:
        return self.toolset or FAMILY_TOOLSETS.get(self.family, self.family)

    @property
    def cli_name(self) -> str:
        return self.name.replace("_", "-")


class ToolDef(ToolFacts, frozen=True, kw_only=True):
    """A tool, declared as data. MCP, CLI and the catalog document all read this one value."""

    # The schemas are JSON Schema documents (JSON Schema's vocabulary, not rea records).
    input_schema: JSONObject
    handler: Handler
    # None: the tool returns an Evidence record and advertises the Evidence output schema.
    output_schema: JSONObject | None = None
    # The Struct an Evidence result's normalized_result decodes into (a tuple: one of them, e.g. the complete record
    # or its summary view); its schema constrains that field in the advertised output schema (None: left open).
    result_type: ResultType | None = None
    # Canonical examples; inline-Evidence examples are tested but not advertised. Each is a call's arguments (JSON,
    # like every call's), only read: any JSON object, a dict[str, str] as well.
    examples: tuple[Mapping[str, JSONValue], ...] = ()
    unadvertised_examples: tuple[Mapping[str, JSONValue], ...] = ()
    # Images in the result a host can show: (base64 data, MIME type) pairs the MCP server adds as image content.
    images: Callable[[Evidence], list[tuple[str, str]]] | None = None
