"""capture_electron_scenario: rea launches an Electron app as an owned, sandboxed process, drives its renderer
through the declared actions and captures the renderer and the main process.

The executable runs as ``EXECUTABLE --inspect=127.0.0.1:0 --remote-debugging-address=127.0.0.1
--remote-debugging-port=0 --user-data-dir=<private>/profile ARGS... APPLICATION_PATH`` under bubblewrap (loopback
only; the application root and the executable's folder read-only; the profile in rea's private directory), so
Electron opens its renderers' DevTools endpoint (its port file in the profile) and the main process's V8 inspector
(its "Debugger listening" line on stderr) on loopback only. The first renderer page inside application_root is
driven with the browser scenario's actions (trusted input through CDP); afterwards the renderer is inspected
(inspect_electron_page's record) and the main process observed through observe_javascript_runtime, called through
the kernel's tool invocation. The process is terminated and reaped before the call returns.
"""

from __future__ import annotations

import os
import re
import time

import msgspec

from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import OwnedProcess
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import arg_int
from rea.plugin import arg_object
from rea.plugin import arg_objects
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea.plugin import devtools
from rea.plugin import invalid_request
from rea.plugin import invoke
from rea.plugin import issue
from rea.plugin import require_regular
from rea_plugins.cdp import connection as cdp
from rea_plugins.cdp import schemas
from rea_plugins.cdp.actions import Page
from rea_plugins.cdp.actions import StepFailed
from rea_plugins.cdp.actions import run_action
from rea_plugins.cdp.browser import start_on_loopback
from rea_plugins.cdp.electron import ElectronPage
from rea_plugins.cdp.electron import inspect_page
from rea_plugins.cdp.model import BrowserRecord
from rea_plugins.cdp.pagescripts import page_session
from rea_plugins.cdp.targets import attach
from rea_plugins.cdp.targets import target_infos

SCHEMA_VERSION = 1
RESOURCE = "electron-app"
OWNER = "cdp-electron"
PORT_FILE = "DevToolsActivePort"
_INSPECTOR = re.compile(r"Debugger listening on ws://127\.0\.0\.1:(\d+)/")
OBSERVE_TOOL = "observe_javascript_runtime"
LIST_TOOL = "list_javascript_runtime_targets"


class ElectronStep(BrowserRecord):
    step_index: int
    step_id: str
    action: str
    status: str
    error: str | None
    elapsed_ms: int


class MainProcess(BrowserRecord):
    """The main process as observe_javascript_runtime recorded it (that Evidence holds the whole record)."""

    evidence_id: str
    application_scripts: int
    console: int
    exceptions: int


class ElectronCapture(BrowserRecord):
    """capture_electron_scenario: the run's steps, its renderer and main process, and how it was confined."""

    schema_version: int
    executable_path: str
    application_root: str
    application_path: str
    # The sandbox's isolation record (the kernel's, as JSON): this record does not restate the kernel's schema.
    isolation: JSONObject
    startup_ms: int
    steps: list[ElectronStep]
    renderer: ElectronPage | None
    main: MainProcess | None
    cleanup: str
    limitations: list[str]


def _executable(path: str) -> str:
    real = os.path.realpath(path)
    require_regular(real, what="Electron executable", field="executable_path")
    if not os.access(real, os.X_OK):
        raise invalid_request(
            "executable_path is not executable", [issue("executable_path", "invalid_value", "expected an executable")]
        )
    return real


def _application(path: str, root: str) -> str:
    real = os.path.realpath(path)
    if not os.path.isdir(real):
        require_regular(real, what="application", field="application_path")
    if not devtools.inside(real, [root]):
        raise invalid_request(
            "application_path lies outside application_root",
            [issue("application_path", "invalid_value", "expected a path inside application_root")],
        )
    return real


def _literal(value: JSONObject) -> str:
    """A value object of the caller's request (its document, as the input schema shapes it), literal only."""
    if value.get("source") != "literal":
        raise StepFailed("capture_electron_scenario takes literal values only (no secret sources)")
    return str(value["value"])


def _wait_endpoints(proc: OwnedProcess, deadline: float, ctx: CallContext) -> tuple[str, str | None]:
    """The renderers' DevTools endpoint (the port file in the profile) and the main process's inspector endpoint."""
    port_file = os.path.join(proc.private_dir, "profile", PORT_FILE)
    cdp_port: int | None = None
    while True:
        ctx.check("Electron startup")
        if cdp_port is None:
            try:
                with open(port_file, encoding="ascii") as fh:
                    first = fh.readline(16).strip()
                cdp_port = int(first) if first.isdigit() else None
            except (OSError, UnicodeDecodeError):
                pass
        found = _INSPECTOR.search(proc.stderr_tail())
        if cdp_port is not None and (found is not None or time.monotonic() >= deadline):
            return f"http://127.0.0.1:{cdp_port}", f"http://127.0.0.1:{found.group(1)}" if found else None
        if proc.exit_status() is not None:
            raise ReaError(
                "process_capture_failed",
                "the Electron app exited before opening its DevTools endpoint",
                remediation="Check executable_path and application_path (the app must open a window).",
                details={"reason": "startup_failed", "stderr": proc.stderr_tail()[-400:]},
            )
        if time.monotonic() >= deadline:
            raise ReaError(
                "provider_timeout",
                "the Electron app did not open its DevTools endpoint in time",
                remediation="Raise limits.startup_ms, or check that the app starts on this host (a display).",
                details={"reason": "startup_timeout", "stderr": proc.stderr_tail()[-400:]},
            )
        devtools.wait(ctx, 0.1, "Electron startup")


def _renderer_target(endpoint: str, root: str, deadline: float, ctx: CallContext) -> str:
    with cdp.opened(endpoint, ctx) as conn:
        while True:
            for info in target_infos(conn, ctx):
                path = devtools.file_path(str(info.get("url", "")))
                if info.get("type") == "page" and path is not None and devtools.inside(path, [root]):
                    return str(info["targetId"])
            if time.monotonic() >= deadline:
                raise ReaError(
                    "process_capture_failed",
                    "the Electron app opened no renderer page inside application_root",
                    remediation="Check that the app loads a file inside application_root (BrowserWindow.loadFile).",
                    details={"reason": "no_renderer"},
                )
            devtools.wait(ctx, 0.1, "waiting for the renderer")


# The actions are the caller's request as its input schema shapes them (see scenario_request.ScenarioRequest).
def _drive(
    endpoint: str, target_id: str, actions: list[JSONObject], loaded_by: float, ctx: CallContext
) -> list[ElectronStep]:
    steps: list[ElectronStep] = []
    with cdp.opened(endpoint, ctx) as conn:
        session = attach(conn, target_id, ctx)
        page = Page(conn, session, ctx)
        # The renderer is listed as soon as its navigation starts; its steps act on the loaded document (a step's
        # own wait still covers what the app builds later). Not loaded by the startup deadline: the steps say so.
        page.wait_loaded(loaded_by)

        def no_navigation(_action: JSONObject, _deadline: float) -> None:
            raise StepFailed("goto is not an Electron action: the app navigates its own windows")

        for index, action in enumerate(actions):
            began = time.monotonic()
            deadline = began + arg_int(action, "timeout_ms", 10_000) / 1000
            step_id = arg_str(action, "step_id", "")
            ctx.progress(f"step {step_id}", done=index, total=len(actions))
            error = None
            try:
                run_action(page, action, _literal, no_navigation, deadline)
            except StepFailed as exc:
                error = exc.message
            except cdp.CommandFailed as exc:
                error = exc.message
            steps.append(
                ElectronStep(
                    step_index=index,
                    step_id=step_id,
                    action=arg_str(action, "action", ""),
                    status="failed" if error else "completed",
                    error=error,
                    elapsed_ms=int((time.monotonic() - began) * 1000),
                )
            )
            if error:
                break
    return steps


def _main(call: ToolCall, inspector: str, root: str, observation_ms: int) -> tuple[MainProcess | None, str | None]:
    """The main process through the runtime tools (invoked, not imported), or why it could not be."""
    registry = call.session.registry.tools
    if OBSERVE_TOOL not in registry or LIST_TOOL not in registry:
        return None, "The runtime tools are not loaded: the main process was not observed."
    listing = invoke(
        call.session, registry[LIST_TOOL], {"inspector_endpoint": inspector, "allowed_file_roots": [root]}, call.ctx
    ).evidence
    targets = listing.normalized_result.get("targets", []) if listing is not None else []
    if not targets:
        return None, "The main process's inspector listed no target inside application_root."
    out = invoke(
        call.session,
        registry[OBSERVE_TOOL],
        {
            "inspector_endpoint": inspector,
            "target_id": targets[0]["target_id"],
            "runtime_kind": "electron-main",
            "allowed_file_roots": [root],
            "observation_ms": observation_ms,
            "detail": "complete",
        },
        call.ctx,
    ).evidence
    if out is None:
        return None, "observe_javascript_runtime recorded no Evidence."
    result = out.normalized_result
    return (
        MainProcess(
            evidence_id=out.evidence_id,
            application_scripts=int(result["counts"]["application"]),
            console=len(result["console"]) + int(result["console_dropped"]),
            exceptions=len(result["exceptions"]) + int(result["exceptions_dropped"]),
        ),
        None,
    )


def capture(call: ToolCall) -> ElectronCapture:
    a = call.args
    ctx = call.ctx
    root = devtools.file_roots([arg_str(a, "application_root", "")], "application_root")[0]
    executable = _executable(arg_str(a, "executable_path", ""))
    application = _application(arg_str(a, "application_path", ""), root)
    limits = arg_object(a, "limits") or {}
    startup_s = arg_int(limits, "startup_ms", 30_000) / 1000
    observation_ms = arg_int(limits, "observation_ms", 500)
    argv = (
        executable,
        "--inspect=127.0.0.1:0",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        "--user-data-dir={private}/profile",
        *(arg_strs(a, "args") or []),
        application,
    )
    began = time.monotonic()
    proc = start_on_loopback(argv, RESOURCE, OWNER, readable=(root, os.path.dirname(executable)))
    limitations: list[str] = []
    cleanup = "terminated-owned-process"
    # Ownership snapshots (started, with its descendants once driven, closed) go to the session whatever happens.
    lineage = [proc.observe("started")]
    try:
        deadline = began + startup_s
        endpoint, inspector = _wait_endpoints(proc, deadline, ctx)
        target_id = _renderer_target(endpoint, root, deadline, ctx)
        startup_ms = int((time.monotonic() - began) * 1000)
        actions = arg_objects(a, "actions") or []
        steps = _drive(endpoint, target_id, actions, deadline, ctx) if actions else []
        with page_session(endpoint, target_id, [], ctx, file_roots=[root]) as page:
            renderer = inspect_page(page, observation_ms, arg_int(limits, "max_events", 200), 0, 50, ctx)
        main, why = (
            (None, "The main process opened no inspector.")
            if inspector is None
            else _main(call, inspector, root, observation_ms)
        )
        if why:
            limitations.append(why)
        lineage.append(proc.observe("snapshot"))
    finally:
        outcome = proc.terminate(2.0)
        lineage.append(proc.observe("closed"))
        call.session.record_lineage(lineage)
        if outcome.remaining:
            cleanup = "incomplete"
    failed = [s for s in steps if s.status != "completed"]
    if failed:
        limitations.append(f"Step {failed[0].step_id} failed: {failed[0].error}")
    return ElectronCapture(
        schema_version=SCHEMA_VERSION,
        executable_path=executable,
        application_root=root,
        application_path=application,
        isolation=msgspec.to_builtins(proc.isolation),
        startup_ms=startup_ms,
        steps=steps,
        renderer=renderer,
        main=main,
        cleanup=cleanup,
        limitations=limitations,
    )


def request_schema() -> JSONObject:
    """REA's arguments (a JSON Schema document); the actions are the browser scenario's, less goto (the app navigates
    its own windows)."""
    actions = [a for a in schemas._ACTIONS if a is not schemas.GOTO]
    schema: JSONObject = {
        "type": "object",
        "$defs": {**schemas._DEFS, **{f"Action{i}": act for i, act in enumerate(actions)}},
        "properties": {
            "schema_version": {"const": 1, "description": "The scenario request version (1)."},
            "executable_path": {"type": "string", "minLength": 1, "description": "The app's Electron executable."},
            "application_root": {"type": "string", "minLength": 1, "description": "The app's folder (read-only)."},
            "application_path": {"type": "string", "minLength": 1, "description": "The app (folder or main script)."},
            "args": {
                "type": "array",
                "maxItems": 32,
                "items": {"type": "string", "maxLength": 4096},
                "description": "More arguments, before the app path.",
            },
            "actions": {
                "type": "array",
                "maxItems": 128,
                "items": {"oneOf": [{"$ref": f"#/$defs/Action{i}"} for i in range(len(actions))]},
                "description": "Steps on the first renderer, in order (literal values only); the run stops at a "
                "failed step.",
            },
            "limits": {
                "type": "object",
                "properties": {
                    "startup_ms": {"type": "integer", "minimum": 1000, "maximum": 300_000, "default": 30_000},
                    "observation_ms": {"type": "integer", "minimum": 0, "maximum": 60_000, "default": 500},
                    "max_events": {"type": "integer", "minimum": 1, "maximum": 100_000, "default": 200},
                },
                "additionalProperties": False,
                "description": "Startup deadline, the closing observation window, console messages kept.",
            },
        },
        "required": ["schema_version", "executable_path", "application_root", "application_path"],
        "additionalProperties": False,
    }
    return schema
