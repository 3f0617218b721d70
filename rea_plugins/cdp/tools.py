"""The browser tools as ToolDefs: passive observation, the scenario, and the local comparisons."""

from __future__ import annotations

from typing import Literal
from typing import TypeVar

import msgspec

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import OperationResult
from rea.plugin import ProviderIdentity
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import arg_int
from rea.plugin import arg_object
from rea.plugin import arg_objects
from rea.plugin import arg_str
from rea.plugin import canonical_digest
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.cdp import compare
from rea_plugins.cdp import connection as cdp
from rea_plugins.cdp import passive
from rea_plugins.cdp import schemas
from rea_plugins.cdp import targets
from rea_plugins.cdp.model import Inspection
from rea_plugins.cdp.model import NotRequested
from rea_plugins.cdp.model import PassiveComparison
from rea_plugins.cdp.model import ScenarioBrowser
from rea_plugins.cdp.model import ScenarioCapture
from rea_plugins.cdp.model import ScenarioComparison
from rea_plugins.cdp.model import ScenarioEvents
from rea_plugins.cdp.model import ScenarioInfo
from rea_plugins.cdp.model import ScenarioStep
from rea_plugins.cdp.model import Screenshot
from rea_plugins.cdp.model import ScreenshotComparison
from rea_plugins.cdp.model import StepArtifacts
from rea_plugins.cdp.model import TargetList
from rea_plugins.cdp.model import UrlCaptured
from rea_plugins.cdp.model import WebMcpDiscovery
from rea_plugins.cdp.model import completeness
from rea_plugins.cdp.model import to_json
from rea_plugins.cdp.scenario import VERSION
from rea_plugins.cdp.scenario import BrowserScenarioDriver
from rea_plugins.cdp.urls import page_scope
from rea_plugins.cdp.urls import sanitize

FAMILY = "browser"
CDP = ProviderIdentity(id="cdp", name="rea Chrome DevTools Protocol tools", version=VERSION)
DRIVER_ID = "cdp-browser"

# Attaching to a loopback DevTools endpoint is network access; nothing here runs or drives page code.
_OBSERVE = ToolEffects(records_evidence=True, accesses_network=True)
_LOCAL = ToolEffects(records_evidence=True)


def evidence(
    call: ToolCall,
    operation: str,
    params: Arguments,
    result: msgspec.Struct,
    limitations: list[str],
    confidence: Literal["observed", "derived", "inferred"] = "observed",
    links: list[str] | None = None,
) -> Evidence:
    """The Evidence of a browser tool's answer (``params`` as recorded, the provider the cdp tools)."""
    out = OperationResult(normalized=msgspec.to_builtins(result), limitations=limitations, confidence=confidence)
    return call.session.evidence(operation, params, out, bound=False, provider=CDP, analysis_profile=None, links=links)


# The options of inspect_web_page and discover_webmcp_tools with their defaults, in the order they are recorded
# (every one, default or not).
class InspectOptions(Record, omit_defaults=False):
    observation_ms: int = 500
    include_console_text: bool = True
    include_storage_keys: bool = True
    max_dom_nodes: int = 2000
    max_events: int = 1000
    include_text: bool = False


class DiscoverOptions(Record, omit_defaults=False):
    observation_ms: int = 100
    max_tools: int = 256
    max_schema_bytes: int = 65_536
    max_schema_depth: int = 32
    max_schema_nodes: int = 4096


_Options = TypeVar("_Options", InspectOptions, DiscoverOptions)


def _options(call: ToolCall, kind: type[_Options]) -> _Options:
    """The call's value of each option of ``kind`` (its default when absent)."""
    given = {name: call.args[name] for name in kind.__struct_fields__ if call.args.get(name) is not None}
    try:
        return msgspec.convert(given, kind)
    except msgspec.ValidationError as exc:
        raise invalid_request(f"invalid option: {exc}", [issue("", "invalid_value", str(exc))]) from None


def _page_evidence(
    call: ToolCall,
    operation: str,
    endpoint: str,
    opts: InspectOptions | DiscoverOptions,
    result: Inspection | WebMcpDiscovery,
) -> Evidence:
    """The Evidence of a passive read of one page: the page, the origins it kept and the options recorded."""
    params: Arguments = {
        "cdp_endpoint": endpoint,
        "target_id": arg_str(call.args, "target_id"),
        "allowed_origins": list[JSONValue](result.allowed_origins),
        **msgspec.to_builtins(opts),
    }
    return evidence(call, operation, params, result, result.limitations)


def _list_targets(call: ToolCall) -> Evidence:
    endpoint, origins = page_scope(call.args)
    offset, limit = arg_int(call.args, "offset", 0), arg_int(call.args, "limit", 100)
    info = cdp.browser_version(endpoint, call.ctx)
    with cdp.opened(endpoint, call.ctx, info) as conn:
        listing = targets.list_targets(conn, info, origins, offset, limit, call.ctx)
    return evidence(
        call,
        "list_browser_targets",
        {"cdp_endpoint": endpoint, "allowed_origins": list[JSONValue](origins), "offset": offset, "limit": limit},
        listing,
        listing.limitations,
    )


def _inspect(call: ToolCall) -> Evidence:
    endpoint, origins = page_scope(call.args)
    a = call.args
    opts = _options(call, InspectOptions)
    ins = passive.inspect_page(
        endpoint, arg_str(a, "target_id", ""), origins, ctx=call.ctx, **msgspec.structs.asdict(opts)
    )
    call.ctx.finish(
        f"inspect: {len(ins.scripts.items)} scripts, {len(ins.network.requests)} requests, "
        f"{len(ins.console.events)} console messages"
    )
    return _page_evidence(call, "inspect_web_page", endpoint, opts, ins)


def _discover(call: ToolCall) -> Evidence:
    endpoint, origins = page_scope(call.args)
    a = call.args
    opts = _options(call, DiscoverOptions)
    found = passive.discover_tools(
        endpoint, arg_str(a, "target_id", ""), origins, ctx=call.ctx, **msgspec.structs.asdict(opts)
    )
    call.ctx.finish(f"webmcp: {found.tools.total} tools ({found.status})")
    return _page_evidence(call, "discover_webmcp_tools", endpoint, opts, found)


def _screenshot(call: ToolCall) -> Evidence:
    endpoint, origins = page_scope(call.args)
    maximum = arg_int(call.args, "maximum_image_bytes", 5_242_880)
    target_id = arg_str(call.args, "target_id", "")
    shot = passive.capture_screenshot(endpoint, target_id, origins, maximum, call.ctx)
    return evidence(
        call,
        "capture_web_screenshot",
        {
            "cdp_endpoint": endpoint,
            "target_id": target_id,
            "allowed_origins": list[JSONValue](origins),
            "maximum_image_bytes": maximum,
        },
        shot,
        shot.limitations,
    )


def _scenario(call: ToolCall) -> Evidence:
    driver = call.session.registry.drivers.get(DRIVER_ID)
    if not isinstance(driver, BrowserScenarioDriver):
        raise ReaError(
            "capability_unavailable",
            f"the {DRIVER_ID} scenario driver is not loaded",
            remediation="Enable the cdp plugin (check REA_DISABLE_PLUGINS / REA_LOAD_PLUGINS).",
            details={"driver": DRIVER_ID},
        )
    capture = driver.capture(call.args, call.ctx, call.session.record_lineage)
    failed = [s for s in capture.steps if s.status != "completed"]
    limitations = list(capture.limitations)
    if failed:
        limitations.append(f"Step {failed[0].step_id} {failed[0].status}: {failed[0].error}")
    # The request is recorded as given: secret values never appear in it, only their ids and variables.
    return evidence(call, "capture_browser_scenario", dict(call.args), capture, limitations)


def _compare_captures(call: ToolCall) -> Evidence:
    a = call.args
    result: PassiveComparison | ScenarioComparison
    if "before" in a:
        before, after = arg_object(a, "before") or {}, arg_object(a, "after") or {}
        result = compare.compare_passive(before, after, call.ctx)
        params: Arguments = {
            "family": "passive",
            "before_sha256": canonical_digest(before),
            "after_sha256": canonical_digest(after),
        }
    else:
        before, after = arg_object(a, "before_scenario") or {}, arg_object(a, "after_scenario") or {}
        rules = arg_objects(arg_object(a, "normalization") or {}, "rules") or []
        result = compare.compare_scenarios(before, after, rules, call.ctx)
        params = {
            "family": "scenario",
            "before_sha256": canonical_digest(before),
            "after_sha256": canonical_digest(after),
            "normalization": {"rules": list[JSONValue](rules)},
        }
    call.ctx.check("publishing the comparison")
    limitations = (
        []
        if result.equality_eligible
        else ["A side is incomplete or truncated (or steps do not align): an absent difference proves nothing."]
    )
    return evidence(call, "compare_web_captures", params, result, limitations, confidence="derived")


def _screenshot_image(ev: Evidence) -> list[tuple[str, str]]:
    """The captured PNG, for MCP image content."""
    artifact = ev.normalized_result.get("artifact") if isinstance(ev.normalized_result, dict) else None
    if not isinstance(artifact, dict) or not isinstance(artifact.get("data_base64"), str):
        return []
    return [(artifact["data_base64"], str(artifact.get("media_type") or "image/png"))]


def _screenshot_side(call: ToolCall, name: str) -> tuple[bytes, str | None]:
    value = arg_object(call.args, name) or {}
    if "data_base64" in value:
        return compare.verified_png(value, name), None
    ev = call.session.resolve_evidence(value, name)
    if ev.operation != "capture_web_screenshot" or not isinstance(ev.normalized_result, dict):
        raise invalid_request(
            f"{name} is {ev.operation} Evidence, not capture_web_screenshot",
            [issue(name, "invalid_value", "expected capture_web_screenshot Evidence")],
        )
    return compare.verified_png(ev.normalized_result["artifact"], f"{name}/normalized_result/artifact"), ev.evidence_id


def _compare_screenshots(call: ToolCall) -> Evidence:
    before, before_id = _screenshot_side(call, "before")
    after, after_id = _screenshot_side(call, "after")
    threshold = arg_int(call.args, "channel_threshold", 0)
    maximum = arg_int(call.args, "maximum_pixels", 16_777_216)
    result = compare.compare_pngs(before, after, threshold, maximum, call.ctx)
    params: Arguments = {
        "before_sha256": result.before.sha256,
        "after_sha256": result.after.sha256,
        "channel_threshold": threshold,
    }
    call.ctx.check("publishing the comparison")
    return evidence(
        call,
        "compare_web_screenshots",
        params,
        result,
        [] if result.dimensions_match else ["The images differ in size: pixels were not compared."],
        confidence="derived",
        links=[i for i in (before_id, after_id) if i],
    )


def _example_capture(title: str) -> JSONObject:
    """A minimal complete scenario capture: the shape compare_web_captures accepts."""
    url = sanitize(schemas.ORIGIN_EXAMPLE + "/")
    none = NotRequested()
    step = ScenarioStep(
        step_index=0,
        step_id="scenario_start",
        action="scenario_start",
        status="completed",
        error=None,
        elapsed_ms=120,
        before_url=sanitize("about:blank"),
        after_url=url,
        event_sequence_start=1,
        event_sequence_end=0,
        artifacts=StepArtifacts(url=UrlCaptured(value=url), title=none, dom=none, screenshot=none, storage=none),
        completeness=completeness(set(), set()),
    )
    second = msgspec.structs.replace(step, step_index=1, step_id="open-settings", action="click", before_url=url)
    capture = ScenarioCapture(
        schema_version=1,
        browser=ScenarioBrowser(
            mode="launch",
            process_ownership="provider-owned",
            cleanup="terminated-owned-process",
            product="Chrome",
            version=title,
            isolation=None,
        ),
        scenario=ScenarioInfo(
            start_origin=schemas.ORIGIN_EXAMPLE,
            allowed_origins=[schemas.ORIGIN_EXAMPLE],
            action_count=1,
            secret_references=[],
        ),
        duration_ms=300,
        steps=[step, second],
        events=ScenarioEvents(retained=0, dropped=0, items=[]),
        completeness=completeness(set(), set()),
        limitations=[],
    )
    return to_json(capture)


LIST_BROWSER_TARGETS = ToolDef(
    name="list_browser_targets",
    result_type=TargetList,
    family=FAMILY,
    description=(
        "List the page targets of a loopback Chrome DevTools endpoint (http://127.0.0.1:PORT): target_id, "
        "title, URL and origin, optionally only those on allowed_origins; non-page and non-http(s) targets "
        "are counted, not listed. Use a target_id with the other browser tools."
    ),
    input_schema=schemas.LIST_TARGETS,
    handler=_list_targets,
    effects=_OBSERVE,
    examples=(
        {"cdp_endpoint": schemas.ENDPOINT_EXAMPLE},
        {"cdp_endpoint": schemas.ENDPOINT_EXAMPLE, "allowed_origins": [schemas.ORIGIN_EXAMPLE]},
    ),
    cli_subject="cdp_endpoint",
)

INSPECT_WEB_PAGE = ToolDef(
    name="inspect_web_page",
    result_type=Inspection,
    family=FAMILY,
    description=(
        "Passively inspect one page target. It reports frames, DOM structure (with the HTML's digest), "
        "forms, scripts (URL, inline position, SHA-256 of the source), resources, network requests "
        "observed during observation_ms, console messages (including those logged before attaching), "
        "and storage keys (never values), scoped to allowed_origins (default: the page's origin). Never "
        "evaluates page JavaScript, navigates or clicks."
    ),
    input_schema=schemas.INSPECT_PAGE,
    handler=_inspect,
    effects=_OBSERVE,
    examples=(
        schemas.PAGE_EXAMPLE,
        {
            **schemas.PAGE_EXAMPLE,
            "observation_ms": 2000,
            "allowed_origins": [schemas.ORIGIN_EXAMPLE, "https://api.example.test"],
        },
    ),
)

DISCOVER_WEBMCP_TOOLS = ToolDef(
    name="discover_webmcp_tools",
    result_type=WebMcpDiscovery,
    family=FAMILY,
    description=(
        "Inventory the WebMCP tools a page registered (document.modelContext.registerTool, or declarative "
        "<form toolname>). It reads Chromium's experimental WebMCP DevTools domain: name, description, "
        "input schema (summarized when over the size/depth/node limits), annotations, frame and "
        "registration source. Page-declared and untrusted; rea never invokes them. A browser without the "
        "domain reports status unavailable."
    ),
    input_schema=schemas.DISCOVER_WEBMCP,
    handler=_discover,
    effects=_OBSERVE,
    examples=(
        schemas.PAGE_EXAMPLE,
        {
            **schemas.PAGE_EXAMPLE,
            "observation_ms": 500,
            "max_schema_bytes": 16384,
        },
    ),
)

CAPTURE_WEB_SCREENSHOT = ToolDef(
    name="capture_web_screenshot",
    result_type=Screenshot,
    family=FAMILY,
    description=(
        "Capture the visible viewport of one page target as a PNG artifact (sha256, bytes, width, height, "
        "base64 data) retained in the session's Evidence; over maximum_image_bytes is resource_constraint. "
        "Never scrolls, navigates or evaluates page JavaScript."
    ),
    input_schema=schemas.CAPTURE_SCREENSHOT,
    handler=_screenshot,
    effects=_OBSERVE,
    images=_screenshot_image,
    examples=(
        schemas.PAGE_EXAMPLE,
        {**schemas.PAGE_EXAMPLE, "maximum_image_bytes": 1048576},
    ),
)

CAPTURE_BROWSER_SCENARIO = ToolDef(
    name="capture_browser_scenario",
    task_support="optional",
    result_type=ScenarioCapture,
    family=FAMILY,
    description=(
        "Run a declared browser scenario and capture it. It opens start_url, then runs each action (goto, "
        "click, fill, press, select_option, check/uncheck, wait_for, wait_for_timeout); per step the URL, "
        "DOM, title, screenshot or storage snapshot asked for, plus console, page errors, network and frame "
        "events, each tied to its step. The browser is a headless Chromium rea launches and owns (default) "
        "or a page of a loopback CDP endpoint. Requests outside allowed_origins are blocked; secret values "
        "come from rea's environment and are redacted everywhere. Drives page code: destructive."
    ),
    input_schema=schemas.CAPTURE_SCENARIO,
    handler=_scenario,
    effects=schemas.SCENARIO_EFFECTS,
    examples=(
        schemas.SCENARIO_EXAMPLE,
        {
            "browser": {"mode": "connect", **schemas.PAGE_EXAMPLE},
            "start_url": {
                "url": schemas.ORIGIN_EXAMPLE + "/search",
                "query": [{"name": "q", "value": {"source": "literal", "value": "invoices"}}],
            },
            "actions": [
                {
                    "step_id": "results",
                    "action": "wait_for",
                    "locator": {"kind": "css", "selector": ".result"},
                    "state": "attached",
                }
            ],
        },
    ),
)

COMPARE_WEB_CAPTURES = ToolDef(
    name="compare_web_captures",
    family=FAMILY,
    description=(
        "Compare two web captures, locally. Passive: before and after, each {inspection: inspect_web_page "
        "normalized_result, webmcp: discover_webmcp_tools normalized_result or null}; reports changed, "
        "added and removed scripts (by URL and digest), requests, resources, frames, console messages, "
        "forms, storage keys and WebMCP tools. Scenario: before_scenario and after_scenario "
        "(capture_browser_scenario normalized_results) with optional normalization.rules; steps align by "
        "step_id. Exactly one group. Missing or truncated data never proves equality."
    ),
    input_schema=schemas.compare_captures_schema(),
    handler=_compare_captures,
    effects=_LOCAL,
    result_type=(PassiveComparison, ScenarioComparison),
    examples=(
        {
            "before_scenario": _example_capture("156"),
            "after_scenario": _example_capture("157"),
            "normalization": {
                "rules": [{"rule_id": "build-id", "artifacts": ["dom"], "match": "build-123", "replacement": "[BUILD]"}]
            },
        },
    ),
)

COMPARE_WEB_SCREENSHOTS = ToolDef(
    name="compare_web_screenshots",
    family=FAMILY,
    description=(
        "Compare two PNG screenshots pixel by pixel, locally: changed pixels and ratio, per-channel "
        "maximum and mean deltas, and the bounding box of the change. Each side is a self-verifying "
        "artifact (its sha256 and bytes are checked) or capture_web_screenshot Evidence (inline or "
        "retained)."
    ),
    input_schema=schemas.COMPARE_SCREENSHOTS,
    handler=_compare_screenshots,
    effects=_LOCAL,
    result_type=ScreenshotComparison,
    examples=schemas.SCREENSHOT_EXAMPLES,
)


def tools() -> list[ToolDef]:
    """The tools this module declares, in the order they are registered (the plugin's ``TOOL_MODULES`` reads it)."""
    return [
        LIST_BROWSER_TARGETS,
        INSPECT_WEB_PAGE,
        DISCOVER_WEBMCP_TOOLS,
        CAPTURE_WEB_SCREENSHOT,
        CAPTURE_BROWSER_SCENARIO,
        COMPARE_WEB_CAPTURES,
        COMPARE_WEB_SCREENSHOTS,
    ]
