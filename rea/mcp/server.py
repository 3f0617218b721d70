"""``rea serve``: the MCP server over stdio, a thin layer over the catalog's handlers."""

from __future__ import annotations

import functools
import json
import logging
import signal
import threading
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp_types as types
import msgspec
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.lowlevel.server import Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPDeprecationWarning

from rea import __version__
from rea import evidence as ev_mod
from rea import logs
from rea import warmup
from rea.annotations import AnnotationStore
from rea.budget import encode_result
from rea.budget import error_size
from rea.budget import known_oversize
from rea.budget import success_size
from rea.budget import transport_error
from rea.catalog.document import advertised_description
from rea.catalog.document import advertised_input_schema
from rea.catalog.document import with_target
from rea.catalog.invoke import ToolResult
from rea.catalog.invoke import invoke
from rea.catalog.manifest import ToolSpec
from rea.catalog.refusals import not_advertised
from rea.catalog.refusals import unknown_tool
from rea.catalog.resource import ResourceDef
from rea.catalog.resource import ResourceTemplateDef
from rea.catalog.schemas import advertised_or_none
from rea.catalog.schemas import output_schema
from rea.catalog.schemas import shallow_output
from rea.catalog.tool import ToolDef
from rea.config import Settings
from rea.context import CallContext
from rea.context import CancelSignal
from rea.context import ProgressSink
from rea.errors import ReaError
from rea.evidence import ProviderIdentity
from rea.mcp import tasks
from rea.mcp.tasks import SessionTasks
from rea.presentation import COMPLETE
from rea.presentation import output_schema_for
from rea.presentation import present
from rea.process import owned
from rea.records import JSONObject
from rea.registry import Registry
from rea.session import ConnectionSettings
from rea.session import Session
from rea.session import Toolsets

if TYPE_CHECKING:
    from anyio.lowlevel import EventLoopToken

MAX_ARGUMENT_BYTES = 64 * 1024 * 1024
# Requests larger than this are followed by a trim of the allocator's free memory.
TRIM_AFTER_BYTES = 1 << 20
# How long closing the session (owned processes, private directories) may take at shutdown.
CLOSE_BOUND_S = 15.0
INSTRUCTIONS = (
    "rea reverse engineers native binaries, archives, .NET, Android and JavaScript applications, web pages and "
    "running programs. Call binary_session first to see which tools are available, then open_binary to bind a "
    "provider to a target. Tools not in the list (managed, android, javascript, browser, dynamic, navigation, "
    "corpus, investigation) are found with search_tools and run with call_tool_by_name, or listed with "
    "enable_toolsets."
)


def _hints(ann: dict[str, bool]) -> types.ToolAnnotations:
    if ann["readOnlyHint"]:
        # MCP: the destructive and idempotent hints mean something only for a tool that is not read-only.
        return types.ToolAnnotations(read_only_hint=True, open_world_hint=ann["openWorldHint"])
    return types.ToolAnnotations(
        read_only_hint=False,
        destructive_hint=ann["destructiveHint"],
        idempotent_hint=ann["idempotentHint"],
        open_world_hint=ann["openWorldHint"],
    )


def build_tool_list(
    registry: Registry,
    profile: str,
    presentation: str = COMPLETE,
    toolsets: tuple[str, ...] | None = None,
    multi_target: bool = False,
) -> list[types.Tool]:
    """The tool inventory of the selected toolsets, in the configured projection and result presentation
    (``multi_target``: target-bound tools take ``target``). Built from the listing kept beside the tool manifest
    (``Registry.derived``): no tool module is imported and no schema projected to list them."""
    listing = registry.derived(
        f"tools-list-2/{profile}/{presentation}",
        list[ListedTool],
        lambda: listed_tools(registry, profile, presentation),
    )
    return [
        types.Tool(
            name=t.name,
            title=t.title,
            description=t.description,
            input_schema=with_target(t.input_schema, t.requires_target, profile) if multi_target else t.input_schema,
            output_schema=t.output_schema,
            annotations=_hints(t.annotations),
            # MCP Tasks (2025-11-25): a long tool may be run as a task (rea.mcp.tasks); absent means forbidden.
            execution=None if t.task_support == "forbidden" else types.ToolExecution(task_support=t.task_support),
        )
        for t in listing
        if toolsets is None or t.toolset in toolsets
    ]


class ListedTool(msgspec.Struct, frozen=True, kw_only=True):
    """One tools/list entry as a single-target connection is sent it, before the toolsets are chosen."""

    name: str
    title: str | None
    description: str
    # The advertised schemas are JSON Schema documents (JSON Schema's vocabulary, not rea records).
    input_schema: JSONObject
    # None where the result is an object the schema says nothing more about (session tools' open reports).
    output_schema: JSONObject | None
    # The effects' annotation hints (ToolEffects.annotations).
    annotations: dict[str, bool]
    toolset: str
    requires_target: bool
    task_support: Literal["forbidden", "optional", "required"] = "forbidden"


def listed_tools(registry: Registry, profile: str, presentation: str) -> list[ListedTool]:
    """Every tool's tools/list entry in ``profile`` and ``presentation``, by name (from the tools' specs)."""
    return [
        ListedTool(
            name=t.name,
            # A title only where a plugin gave one: the name says the rest, in every request.
            title=t.title or None,
            description=advertised_description(t, profile),
            input_schema=advertised_input_schema(registry, t, profile),
            output_schema=advertised_or_none(_advertised_output(registry, t, presentation)),
            annotations=t.effects.annotations(),
            toolset=t.toolset_id,
            requires_target=t.requires_target,
            task_support=t.task_support,
        )
        for t in sorted(registry.tool_specs().values(), key=lambda t: t.name)
    ]


def _advertised_output(registry: Registry, spec: ToolSpec, presentation: str) -> JSONObject:
    found = spec.advertised_output.get(presentation)
    if found is not None:
        return found
    tool = registry.tools[spec.name]
    return shallow_output(output_schema_for(tool.output_schema, output_schema(tool), presentation, tool.result_type))


@dataclass(frozen=True, slots=True)
class ConnectionState:
    """What rea's lifespan gives each MCP connection (the SDK's lifespan state): its session and its tasks."""

    session: Session
    tasks: SessionTasks


class ReaServer:
    """One server process; each connection gets its own Session and ledger."""

    def __init__(self, registry: Registry, settings: Settings) -> None:
        self.registry = registry
        self.settings = settings
        # Every connection starts with these toolsets; with on-demand toolsets it may enable the others.
        self.initial_toolsets = settings.toolsets or registry.toolsets()
        self._tool_lists: dict[tuple[frozenset[str], bool], list[types.Tool]] = {}
        # Set once a tools/list has been answered (prewarm waits for it).
        self.listed = threading.Event()
        self.tools = self._tool_list(frozenset(self.initial_toolsets), False)
        self.max_request_bytes = max_request_bytes(settings)
        # Tools this server has read from the registry (built, their plugin imported), by name.
        self._built: dict[str, ToolDef] = {}
        # Only prompts whose every tool is registered.
        self.prompts = {
            name: p for name, p in sorted(registry.prompts.items()) if all(t in registry.tools for t in p.tools)
        }
        has_prompts = bool(self.prompts)
        # logging/setLevel is what advertises the logging capability to clients of the handshake protocol versions;
        # the SDK marks it deprecated for the newer versions (where a request opts in itself), so it warns.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            self.server: Server[ConnectionState] = self._server(has_prompts)
        tasks.Tasks(self._task_support, self._cancelled_task).install(self.server)
        # After Tasks took the handler a task runs (it keeps the CallToolResult): a direct call answers its dump.
        self.server.add_request_handler("tools/call", types.CallToolRequestParams, self._call_tool_dumped)

    def _server(self, has_prompts: bool) -> Server[ConnectionState]:
        return Server(
            "rea",
            version=__version__,
            instructions=INSTRUCTIONS,
            lifespan=self._lifespan,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_prompts=self._list_prompts if has_prompts else None,
            on_get_prompt=self._get_prompt if has_prompts else None,
            # Always answered (an empty list when no plugin contributes one): "method not found" reads as a failure.
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
            on_set_logging_level=self._set_logging_level,
        )

    def initialization_options(self) -> InitializationOptions:
        """What initialize answers: the SDK's capabilities from the handlers, and Tasks (rea.mcp.tasks)."""
        options = self.server.create_initialization_options(NotificationOptions(tools_changed=True))
        options.capabilities.tasks = tasks.CAPABILITY
        return options

    def _task_support(self, name: str) -> tasks.TaskSupport | None:
        info = self.registry.tool_info().get(name)
        return None if info is None else info.task_support

    def _cancelled_task(self, ctx: ServerRequestContext[ConnectionState]) -> types.CallToolResult:
        session = ctx.lifespan_context.session
        return self._error(session, ReaError("cancelled", "the task was cancelled (tasks/cancel) before it ended"))

    async def _set_logging_level(
        self, ctx: ServerRequestContext[ConnectionState], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        """The least level of the log records this connection's tool calls send it (notifications/message)."""
        session = ctx.lifespan_context.session
        session.connection.log_level = params.level
        return types.EmptyResult()

    @asynccontextmanager
    async def _lifespan(self, _server: Server[ConnectionState]) -> AsyncIterator[ConnectionState]:
        store = AnnotationStore(self.settings.annotations_dir) if self.settings.annotations_dir else None
        session = Session(self.registry, annotations=store)
        session.connection.settings = ConnectionSettings(
            max_response_bytes=self.settings.max_response_bytes,
            input_schema_profile=self.settings.input_schema_profile,
            result_presentation=self.settings.result_presentation,
            toolsets=Toolsets(
                advertised=list(self.initial_toolsets),
                available=list(self.registry.toolsets()),
                on_demand=self.settings.toolsets_on_demand,
                enabled=list(self.initial_toolsets),
            ),
        )
        try:
            # The session's tasks (rea.mcp.tasks) end before it closes: their calls are cancelled first.
            async with tasks.session_tasks() as session_tasks:
                yield ConnectionState(session=session, tasks=session_tasks)
        finally:
            # Shielded and bounded: a shutdown's cancellation must not skip releasing owned processes, and a
            # close stuck behind a blocked call must not keep the server alive (exit then kills what remains).
            with anyio.move_on_after(CLOSE_BOUND_S, shield=True):
                # Profiles that can hold a scenario's secrets go before the slower release of everything else.
                await anyio.to_thread.run_sync(owned.release_secret_holders, abandon_on_cancel=True)
                await anyio.to_thread.run_sync(session.close, abandon_on_cancel=True)

    def _tool_list(self, toolsets: frozenset[str], multi_target: bool) -> list[types.Tool]:
        key = (toolsets, multi_target)
        found = self._tool_lists.get(key)
        if found is None:
            s = self.settings
            found = build_tool_list(
                self.registry,
                s.input_schema_profile,
                s.result_presentation,
                tuple(t for t in self.registry.toolsets() if t in toolsets),
                multi_target,
            )
            self._tool_lists[key] = found
        return found

    @staticmethod
    def _view(session: Session) -> tuple[frozenset[str], bool]:
        """What this connection's tools/list shows: its enabled toolsets, and whether several targets are open."""
        return frozenset(_toolsets(session).enabled), len(session.open_targets()) > 1

    async def _list_tools(
        self, ctx: ServerRequestContext[ConnectionState], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        session = ctx.lifespan_context.session
        # The first list of a view is built from the cached listing (a file read): in a worker thread.
        tools = await anyio.to_thread.run_sync(self._tool_list, *self._view(session))
        result = types.ListToolsResult(tools=tools)
        self.listed.set()
        return result

    async def _list_prompts(
        self, ctx: ServerRequestContext[ConnectionState], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        session = ctx.lifespan_context.session
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=p.name,
                    title=p.title,
                    description=p.description,
                    arguments=[
                        types.PromptArgument(name=a.name, description=a.description, required=a.required)
                        for a in p.arguments
                    ],
                )
                for p in self.prompts.values()
                if self._reachable(session, p.tools)
            ]
        )

    def _reachable(self, session: Session, tools: tuple[str, ...]) -> bool:
        """Whether this connection may call every one of ``tools`` (listed, or in a toolset it may enable)."""
        toolsets = _toolsets(session)
        info = self.registry.tool_info()
        return toolsets.on_demand or all(info[t].toolset_id in toolsets.enabled for t in tools)

    def _unlisted(self, session: Session, tools: tuple[str, ...]) -> list[str]:
        """The tools among ``tools`` this connection's tools/list does not show now."""
        enabled = _toolsets(session).enabled
        info = self.registry.tool_info()
        return [t for t in tools if info[t].toolset_id not in enabled]

    async def _get_prompt(
        self, ctx: ServerRequestContext[ConnectionState], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        from mcp.shared.exceptions import MCPError

        session = ctx.lifespan_context.session
        prompt = self.prompts.get(params.name)
        if prompt is None or not self._reachable(session, prompt.tools):
            raise MCPError(types.INVALID_PARAMS, f"no prompt named {params.name!r}", {"prompts": sorted(self.prompts)})
        try:
            text = prompt.render(params.arguments)
        except ReaError as err:
            raise MCPError(types.INVALID_PARAMS, err.message, {"issues": err.details.get("issues", [])}) from None
        unlisted = self._unlisted(session, prompt.tools)
        if unlisted:
            # The workflow names tools the client's list lacks: say how to reach them without a list change.
            text += (
                f"\n\n{', '.join(unlisted)} {'is' if len(unlisted) == 1 else 'are'} not in your tool list: run "
                "them with call_tool_by_name (name and arguments), or enable their toolset with enable_toolsets."
            )
        return types.GetPromptResult(
            description=prompt.description,
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
        )

    async def _list_resources(
        self, ctx: ServerRequestContext[ConnectionState], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=r.uri, name=r.name, title=r.title, description=r.description, mime_type=r.mime_type)
                for r in sorted(self.registry.resources.values(), key=lambda r: r.key)
                if isinstance(r, ResourceDef)
            ]
        )

    async def _list_resource_templates(
        self, ctx: ServerRequestContext[ConnectionState], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=r.uri_template,
                    name=r.name,
                    title=r.title,
                    description=r.description,
                    mime_type=r.mime_type,
                )
                for r in sorted(self.registry.resources.values(), key=lambda r: r.key)
                if isinstance(r, ResourceTemplateDef)
            ]
        )

    async def _read_resource(
        self, ctx: ServerRequestContext[ConnectionState], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        from mcp.shared.exceptions import MCPError

        session = ctx.lifespan_context.session
        uri = str(params.uri)
        # Fixed URIs first, then templates: rea://unknowns/active is never read as a template's variable.
        ordered = sorted(self.registry.resources.values(), key=lambda r: (isinstance(r, ResourceTemplateDef), r.key))
        for resource in ordered:
            variables = resource.match(uri)
            if variables is None:
                continue
            try:
                text = await anyio.to_thread.run_sync(resource.reader, session, variables)
            except ReaError as err:
                raise MCPError(types.INVALID_PARAMS, err.message, {"error": err.projection_dict()}) from None
            return types.ReadResourceResult(
                contents=[types.TextResourceContents(uri=uri, mime_type=resource.mime_type, text=text)]
            )
        raise MCPError(
            types.INVALID_PARAMS,
            f"no resource at {uri!r}",
            {"uri": uri, "templates": sorted(self.registry.resources)},
        )

    def _note_connection(self, ctx: ServerRequestContext[ConnectionState], session: Session) -> None:
        conn = session.connection
        conn.protocol_version = ctx.protocol_version
        params = ctx.session.client_params
        if params is not None and conn.client_info is None:
            conn.client_info = params.client_info.model_dump(mode="json", exclude_none=True)
        caps = ctx.session.client_capabilities
        if caps is not None and conn.client_features is None:
            dumped = caps.model_dump(mode="json", exclude_none=True)
            conn.client_features = sorted(k for k, v in dumped.items() if v is not None)

    async def _call_tool(
        self, ctx: ServerRequestContext[ConnectionState], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        session = ctx.lifespan_context.session
        self._note_connection(ctx, session)
        try:
            # The first read of a tool imports its plugin (file I/O): in a worker thread, like the call itself,
            # so the event loop keeps answering ping and cancellation whatever a request touches.
            # A tool already built is taken without that hop: each hop waits for a CPU twice on a busy host.
            tool = self._built.get(params.name)
            if tool is None:
                tool = await anyio.to_thread.run_sync(self.registry.tools.get, params.name)
                if tool is not None:
                    self._built[params.name] = tool
        except ReaError as err:  # its plugin no longer builds the tools its manifest names
            return self._error(session, err)
        if tool is None:
            return self._error(
                session, unknown_tool(params.name, "Call tools/list or binary_session for the tool names.")
            )
        shown = self._view(session)
        toolsets = _toolsets(session)
        if tool.toolset_id not in toolsets.enabled:
            if not toolsets.on_demand:
                return self._error(session, not_advertised(tool.toolset_id, toolsets.enabled, tool=tool.name))
            # A call is the clearest request for a toolset: it joins this connection's list.
            toolsets.enabled.append(tool.toolset_id)
        args = params.arguments if params.arguments is not None else {}
        size = len(msgspec.json.encode(args))
        try:
            return await self._call_checked(ctx, session, tool, args, size)
        finally:
            if size > TRIM_AFTER_BYTES:
                release_free_memory()
            if self._view(session) != shown:
                await _tools_changed(ctx)

    async def _call_tool_dumped(
        self, ctx: ServerRequestContext[ConnectionState], params: types.CallToolRequestParams
    ) -> JSONObject:
        return dumped_result(await self._call_tool(ctx, params))

    async def _call_checked(
        self,
        ctx: ServerRequestContext[ConnectionState],
        session: Session,
        tool: ToolDef,
        args: JSONObject,
        size: int,
    ) -> types.CallToolResult:
        limit = self.max_request_bytes
        if size > limit:
            return self._error(
                session,
                ReaError(
                    "resource_constraint",
                    f"arguments of {size} bytes exceed the {limit}-byte request limit",
                    remediation="Pass a retained-evidence reference instead of inline Evidence.",
                    details={"resource": "memory", "reported_limits": {"max_request_bytes": limit}},
                ),
            )
        token = ctx.meta.get("progress_token", ctx.meta.get("progressToken")) if ctx.meta else None
        cancel = CancelSignal()
        sink: ProgressSink | None = None
        if token is not None:
            from anyio.lowlevel import current_token

            # Progress may come from any thread (a provider's decompile pool, a check in an extraction worker), not
            # only the tool's AnyIO worker thread: the loop's token takes it back to the event loop from all of them.
            loop = current_token()

            def sink(progress: float, total: float | None, message: str) -> None:
                anyio.from_thread.run(
                    functools.partial(ctx.session.report_progress, progress, total, message), token=loop
                )

        run = tasks.current()
        if run is not None:
            # Run as a task: tasks/cancel sets this call's signal, and its progress becomes the task's statusMessage.
            sink = run.follow(cancel, sink)
        call_ctx = CallContext(cancel, sink)
        log_loop = current_log_token()
        # Warnings and errors unless the client asked for more (logging/setLevel): a quiet default.
        least = logs.FROM_MCP.get(session.connection.log_level, logging.WARNING)

        def forward(level: logs.McpLevel, name: str, message: str) -> None:
            # This call's records go to its own client, on its own request (from the worker thread).
            if logs.FROM_MCP[level] >= least:
                send = functools.partial(
                    ctx.session.send_log_message, level, {"message": message}, name, ctx.request_id
                )
                anyio.from_thread.run(send, token=log_loop)

        def work() -> tuple[list[tuple[str, str]], types.CallToolResult]:
            call_ctx.progress(f"{tool.name}: started")
            with logs.forwarding(forward):
                logs.LOGGER.info("%s: started", tool.name)
                try:
                    out = invoke(session, tool, args, call_ctx)
                except ReaError as err:
                    # A typed error is the call's answer, not a server fault: info, like a completion.
                    logs.LOGGER.info(
                        "%s: failed (%s) after %d ms: %s", tool.name, err.code, call_ctx.elapsed_ms(), err.message
                    )
                    raise
                logs.LOGGER.info("%s: completed in %d ms", tool.name, call_ctx.elapsed_ms())
            images = tool.images(out.evidence) if tool.images is not None and out.evidence is not None else []
            # Encoded in the same worker thread (a large result takes time, an oversized one is spilled to disk):
            # one hop off the event loop per call, not two.
            return images, self._success(session, out)

        try:
            images, answer = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except ReaError as err:
            await self._terminal(ctx, token, call_ctx, f"{tool.name}: failed ({err.code})")
            # An oversized error is retained in the ledger, which may write to disk: off the event loop.
            return await anyio.to_thread.run_sync(self._error, session, err)
        except anyio.get_cancelled_exc_class():
            # The request scope was cancelled: stop the worker thread through the shared signal.
            cancel.cancel()
            raise
        await self._terminal(ctx, token, call_ctx, f"{tool.name}: completed")
        # Only where the image fits beside the result within a quarter of the budget; the Evidence keeps it anyway.
        if images and not answer.is_error and sum(len(d) for d, _ in images) <= self.settings.response_budget // 4:
            # Besides the Evidence: the image itself, so a host can show it.
            answer.content.extend(types.ImageContent(type="image", data=data, mime_type=mime) for data, mime in images)
        return answer

    async def _terminal(
        self,
        ctx: ServerRequestContext[ConnectionState],
        token: object,  # the request's progress token, as its _meta held it: only whether there is one matters
        call_ctx: CallContext,
        message: str,
    ) -> None:
        """The terminal progress update, always sent (from the event loop) when a token was given."""
        if token is None:
            return
        progress, total, text = call_ctx.next_progress(message)
        await ctx.session.report_progress(progress, total, text)

    def _success(self, session: Session, result: ToolResult) -> types.CallToolResult:
        payload: Any = result.evidence if result.evidence is not None else result.structured
        if result.evidence is not None:
            # Known too large from hashing it: refuse before building a document-sized string.
            oversize = known_oversize(result.evidence, self.settings.response_budget)
            if oversize is not None:
                return self._refuse_oversize(session, result, oversize)
        if self.settings.result_presentation != COMPLETE and result.evidence is not None:
            payload = present(result.evidence, self.settings.result_presentation)
        encoded = encode_result(payload)
        required = success_size(encoded)
        if required > self.settings.response_budget:
            del encoded, payload
            return self._refuse_oversize(session, result, required)
        structured = msgspec.json.decode(encoded)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=encoded.decode())],
            structured_content=structured,
            is_error=False,
        )

    def _refuse_oversize(self, session: Session, result: ToolResult, required: int) -> types.CallToolResult:
        """Refuse a result beyond the response budget; the record stays retained, on disk rather than in memory."""
        eid = result.evidence.evidence_id if result.evidence is not None else None
        if eid is not None and session.ledger.spill(eid):
            result.evidence = None
            release_free_memory()
        return self._error(session, transport_error(self.settings, required, eid))

    def _error(self, session: Session, err: ReaError) -> types.CallToolResult:
        encoded = msgspec.json.encode({"error": err.projection()})
        if error_size(encoded) > self.settings.response_budget:
            encoded = self._bounded_error(session, err, encoded)
        return types.CallToolResult(content=[types.TextContent(type="text", text=encoded.decode())], is_error=True)

    def _bounded_error(self, session: Session, err: ReaError, encoded: bytes) -> bytes:
        """Retain an oversized diagnostic as Evidence and deliver a bounded one naming it."""
        # An error's details are open JSON (rea.errors.ErrorProjection); the limits are filled in as retention goes.
        limits: JSONObject = {
            "max_response_bytes": self.settings.max_response_bytes,
            "required_bytes": error_size(encoded),
        }
        details: JSONObject = {"resource": "transport", "original_code": err.code, "reported_limits": limits}
        try:
            record = ev_mod.build(
                operation="error_diagnostic",
                provider=ProviderIdentity(id="rea", name="rea", version=__version__),
                subject=None,
                analysis_profile=None,
                parameters={},
                normalized_result=json.loads(encoded),
            )
            session.ledger.record(record)
            limits["evidence_reference"] = {**ev_mod.retained_reference(record.evidence_id)}
        except Exception as exc:
            details["retention"] = f"unavailable: {exc}"
        bounded = ReaError(
            "resource_constraint",
            f"{err.code}: {err.message[:512]} (diagnostic too large to deliver)",
            remediation="Export the retained diagnostic with export_evidence_bundle.",
            details=details,
        )
        return msgspec.json.encode({"error": bounded.projection()})


def current_log_token() -> EventLoopToken:
    from anyio.lowlevel import current_token

    return current_token()


async def _tools_changed(ctx: ServerRequestContext[ConnectionState]) -> None:
    """Tell the client its tools/list changed (a toolset enabled, a second target opened or the last closed)."""
    try:
        await ctx.session.send_tool_list_changed()
    except Exception:  # a client gone or an era without the notification: the next tools/list shows the change
        pass


def _toolsets(session: Session) -> Toolsets:
    """A served connection's toolsets (its settings are set as the connection starts, in _lifespan)."""
    settings = session.connection.settings
    assert settings is not None, "a served connection's settings are set in _lifespan"
    return settings.toolsets


def dumped_result(result: types.CallToolResult) -> JSONObject:
    """The result as the SDK's JSON-mode dump. Its structured content is decoded JSON already (``_success``), so only
    the envelope goes through pydantic: dumping a large answer's content there walks every row once more."""
    structured = result.structured_content
    if structured is None:
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    out = result.model_copy(update={"structured_content": None}).model_dump(
        by_alias=True, mode="json", exclude_none=True
    )
    out["structuredContent"] = structured
    return out


def release_free_memory() -> None:
    """Hand freed heap back to the OS (glibc): a large request should not leave the server large."""
    import gc

    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def max_request_bytes(settings: Settings) -> int:
    """The longest request line accepted: two inline results of the response budget, plus room."""
    return min(MAX_ARGUMENT_BYTES, 2 * settings.max_response_bytes + (1 << 20))


async def serve_stdio(registry: Registry, settings: Settings) -> str | None:
    """Serve until the client closes stdin (None) or SIGTERM/SIGINT arrives (its name): either way in-flight
    calls are cancelled and the session closed, which releases every owned process and private directory."""
    from rea.mcp.stdio import stdio_transport
    from rea.process import leftovers

    leftovers.sweep()  # what a server killed earlier left behind, where its owner is provably gone
    app = ReaServer(registry, settings)
    from rea.collector import collector_on

    collector_on()  # the SDK, rea and the tool listing are loaded: freeze them, collect what serving creates
    warmup.prewarm(registry, app.listed)
    stopped_by: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_stop_on_signal, tg.cancel_scope, stopped_by)
        async with stdio_transport(max_request_bytes(settings)) as (read_stream, write_stream):
            await app.server.run(read_stream, write_stream, app.initialization_options())
        tg.cancel_scope.cancel()
    return stopped_by[0] if stopped_by else None


async def _stop_on_signal(scope: anyio.CancelScope, stopped_by: list[str]) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as received:
        async for signum in received:
            stopped_by.append(signal.Signals(signum).name)
            scope.cancel()
            return
