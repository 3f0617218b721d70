"""Canonical input schemas of the browser tools (REA's argument names) and their examples.

The schemas are JSON Schema documents (``JSONObject``: JSON Schema's vocabulary, not rea records).
"""

from __future__ import annotations

import base64
import copy
import functools
import hashlib

from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import ToolEffects
from rea_plugins.cdp.model import Inspection
from rea_plugins.cdp.model import ScenarioCapture
from rea_plugins.cdp.model import WebMcpDiscovery
from rea_plugins.cdp.model import json_schema
from rea_plugins.cdp.urls import ENDPOINT_PATTERN
from rea_plugins.cdp.urls import ORIGIN_PATTERN

# What a scenario tool (browser or Electron) may do: both tool modules declare theirs with it.
SCENARIO_EFFECTS = ToolEffects(
    records_evidence=True,
    accesses_network=True,
    launches_process=True,
    executes_foreign_code=True,
    changes_ui_state=True,
    writes_filesystem=True,
    idempotent=False,
)

MAX_INT32 = 2_147_483_647
ENDPOINT_EXAMPLE = "http://127.0.0.1:9222"
TARGET_EXAMPLE = "TARGET_ID_FROM_LIST_BROWSER_TARGETS"
ORIGIN_EXAMPLE = "https://app.example.test"
# The arguments that name one page: every page tool's examples start from them.
PAGE_EXAMPLE: JSONObject = {"cdp_endpoint": ENDPOINT_EXAMPLE, "target_id": TARGET_EXAMPLE}
IDENTIFIER: JSONObject = {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9._-]{0,63}$"}

CDP_ENDPOINT: JSONObject = {
    "type": "string",
    "pattern": ENDPOINT_PATTERN,
    "maxLength": 64,
    "description": "Loopback DevTools HTTP endpoint: http://127.0.0.1:PORT or http://[::1]:PORT. "
    "Anything else is refused.",
    "examples": [ENDPOINT_EXAMPLE],
}
TARGET_ID: JSONObject = {
    "type": "string",
    "minLength": 1,
    "maxLength": 256,
    "description": "A page target_id from list_browser_targets.",
    "examples": [TARGET_EXAMPLE],
}
ALLOWED_ORIGINS: JSONObject = {
    "type": "array",
    "maxItems": 32,
    "items": {"type": "string", "pattern": ORIGIN_PATTERN, "maxLength": 2048},
    "description": "Exact http(s) origins in scope. Default: the page's own origin (list_browser_"
    "targets: every http(s) origin). Frames, scripts, requests and tools of other "
    "origins are left out and counted.",
    "examples": [[ORIGIN_EXAMPLE]],
}
OBSERVATION_MS: JSONObject = {
    "type": "integer",
    "minimum": 0,
    "maximum": 60_000,
    "description": "How long to listen after attaching (ms). Network requests and WebMCP "
    "registrations seen in this window are reported.",
}


def _with(schema: JSONObject, default: JSONValue, **more: JSONValue) -> JSONObject:
    return {**schema, "default": default, **more}


def _obj(properties: JSONObject, required: list[str] | None = None, **more: JSONValue) -> JSONObject:
    out: JSONObject = {"type": "object", "properties": properties, "additionalProperties": False, **more}
    if required:
        out["required"] = list[JSONValue](required)
    return out


LIST_TARGETS = _obj(
    {
        "cdp_endpoint": CDP_ENDPOINT,
        "allowed_origins": ALLOWED_ORIGINS,
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 1000,
            "default": 100,
            "description": "At most this many targets (sorted by target_id).",
        },
        "offset": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_INT32,
            "default": 0,
            "description": "Targets to skip, for paging.",
        },
    },
    ["cdp_endpoint"],
)

INSPECT_PAGE = _obj(
    {
        "cdp_endpoint": CDP_ENDPOINT,
        "target_id": TARGET_ID,
        "allowed_origins": ALLOWED_ORIGINS,
        "observation_ms": _with(OBSERVATION_MS, 500),
        "include_console_text": {
            "type": "boolean",
            "default": True,
            "description": "Keep console message text (false: levels, sources and argument types only).",
        },
        "include_storage_keys": {
            "type": "boolean",
            "default": True,
            "description": "List the origin's storage keys and cookie, IndexedDB and cache names. "
            "Values are never read into the result.",
        },
        "max_dom_nodes": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100_000,
            "default": 2000,
            "description": "At most this many DOM nodes described (the HTML digest covers all).",
        },
        "include_text": {
            "type": "boolean",
            "default": False,
            "description": "Add visible text per text node (form values redacted).",
        },
        "max_events": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100_000,
            "default": 1000,
            "description": "At most this many network requests and console messages each.",
        },
    },
    ["cdp_endpoint", "target_id"],
)

DISCOVER_WEBMCP = _obj(
    {
        "cdp_endpoint": CDP_ENDPOINT,
        "target_id": TARGET_ID,
        "allowed_origins": ALLOWED_ORIGINS,
        "observation_ms": _with(OBSERVATION_MS, 100),
        "max_tools": {
            "type": "integer",
            "minimum": 1,
            "maximum": 10_000,
            "default": 256,
            "description": "At most this many tools listed (more: truncated).",
        },
        "max_schema_bytes": {
            "type": "integer",
            "minimum": 2,
            "maximum": 16_777_216,
            "default": 65_536,
            "description": "Summarize a tool input schema larger than this (canonical JSON bytes).",
        },
        "max_schema_depth": {
            "type": "integer",
            "minimum": 1,
            "maximum": 256,
            "default": 32,
            "description": "A tool input schema nested deeper than this is summarized, not included.",
        },
        "max_schema_nodes": {
            "type": "integer",
            "minimum": 1,
            "maximum": 1_000_000,
            "default": 4096,
            "description": "A tool input schema with more JSON values than this is summarized, not included.",
        },
    },
    ["cdp_endpoint", "target_id"],
)

MAXIMUM_IMAGE_BYTES: JSONObject = {
    "type": "integer",
    "minimum": 1024,
    "maximum": 67_108_864,
    "default": 5_242_880,
    "description": "Largest PNG accepted (bytes); a larger screenshot is resource_constraint.",
}

CAPTURE_SCREENSHOT = _obj(
    {
        "cdp_endpoint": CDP_ENDPOINT,
        "target_id": TARGET_ID,
        "allowed_origins": ALLOWED_ORIGINS,
        "maximum_image_bytes": MAXIMUM_IMAGE_BYTES,
    },
    ["cdp_endpoint", "target_id"],
)

_PNG_ARTIFACT = _obj(
    {
        "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "bytes": {"type": "integer", "minimum": 1},
        "media_type": {"const": "image/png"},
        "width": {"type": "integer", "minimum": 1},
        "height": {"type": "integer", "minimum": 1},
        "data_base64": {"type": "string", "minLength": 1},
    },
    ["sha256", "bytes", "media_type", "data_base64"],
)
_RETAINED = _obj(
    {"kind": {"const": "retained-evidence"}, "evidence_id": {"type": "string", "pattern": "^ev_[0-9a-f]{64}$"}},
    ["kind", "evidence_id"],
)
_SCREENSHOT_SIDE: JSONObject = {
    "oneOf": [_PNG_ARTIFACT, _RETAINED, {"type": "object", "required": ["evidence_id", "normalized_result"]}]
}

COMPARE_SCREENSHOTS = _obj(
    {
        "before": {
            **_SCREENSHOT_SIDE,
            "description": "The earlier PNG: an artifact, or capture_web_screenshot Evidence. "
            "The artifact is {sha256, bytes, media_type, data_base64} (verified against its digest); "
            "Evidence is inline or a retained reference.",
        },
        "after": {**_SCREENSHOT_SIDE, "description": "The later PNG, in the same forms as before."},
        "channel_threshold": {
            "type": "integer",
            "minimum": 0,
            "maximum": 255,
            "default": 0,
            "description": "A pixel counts as changed when any RGBA channel differs by more than this.",
        },
        "maximum_pixels": {
            "type": "integer",
            "minimum": 1,
            "maximum": 67_108_864,
            "default": 16_777_216,
            "description": "Largest image (width x height) decoded; larger is resource_constraint.",
        },
    },
    ["before", "after"],
)

# -- capture_browser_scenario ----------------------------------------------------------------------

_DEFS: JSONObject = {
    "Value": {
        "oneOf": [
            _obj(
                {"source": {"const": "literal"}, "value": {"type": "string", "maxLength": 65_536}}, ["source", "value"]
            ),
            _obj({"source": {"const": "secret"}, "secret_id": IDENTIFIER}, ["source", "secret_id"]),
        ]
    },
    "Url": _obj(
        {
            "url": {"type": "string", "minLength": 1, "maxLength": 4096, "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://"},
            "query": {
                "type": "array",
                "maxItems": 64,
                "items": _obj(
                    {"name": {"type": "string", "minLength": 1, "maxLength": 256}, "value": {"$ref": "#/$defs/Value"}},
                    ["name", "value"],
                ),
            },
        },
        ["url"],
    ),
    "Locator": {
        "oneOf": [
            _obj(
                {"kind": {"const": "css"}, "selector": {"type": "string", "minLength": 1, "maxLength": 4096}},
                ["kind", "selector"],
            ),
            _obj(
                {"kind": {"const": "test_id"}, "value": {"type": "string", "minLength": 1, "maxLength": 1024}},
                ["kind", "value"],
            ),
            _obj(
                {
                    "kind": {"const": "role"},
                    "role": {
                        "enum": [
                            "button",
                            "checkbox",
                            "combobox",
                            "dialog",
                            "heading",
                            "link",
                            "listbox",
                            "menuitem",
                            "option",
                            "radio",
                            "slider",
                            "spinbutton",
                            "switch",
                            "tab",
                            "textbox",
                        ]
                    },
                    "name": {"type": "string", "minLength": 1, "maxLength": 1024},
                },
                ["kind", "role", "name"],
            ),
        ]
    },
}
_STEP: JSONObject = {"step_id": IDENTIFIER, "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 600_000}}
_LOCATOR: JSONObject = {"$ref": "#/$defs/Locator"}
GOTO = _obj(
    {
        **_STEP,
        "action": {"const": "goto"},
        "destination": {"$ref": "#/$defs/Url"},
        "wait_until": {"enum": ["commit", "domcontentloaded", "load"]},
    },
    ["step_id", "action", "destination", "wait_until"],
)
_ACTIONS: list[JSONObject] = [
    GOTO,
    _obj(
        {
            **_STEP,
            "action": {"const": "click"},
            "locator": _LOCATOR,
            "button": {"enum": ["left", "middle", "right"]},
            "click_count": {"type": "integer", "minimum": 1, "maximum": 3},
        },
        ["step_id", "action", "locator"],
    ),
    _obj(
        {**_STEP, "action": {"const": "fill"}, "locator": _LOCATOR, "value": {"$ref": "#/$defs/Value"}},
        ["step_id", "action", "locator", "value"],
    ),
    _obj(
        {
            **_STEP,
            "action": {"const": "press"},
            "locator": _LOCATOR,
            "key": {"type": "string", "minLength": 1, "maxLength": 32},
        },
        ["step_id", "action", "locator", "key"],
    ),
    _obj(
        {**_STEP, "action": {"const": "select_option"}, "locator": _LOCATOR, "value": {"$ref": "#/$defs/Value"}},
        ["step_id", "action", "locator", "value"],
    ),
    _obj({**_STEP, "action": {"enum": ["check", "uncheck"]}, "locator": _LOCATOR}, ["step_id", "action", "locator"]),
    _obj(
        {
            **_STEP,
            "action": {"const": "wait_for"},
            "locator": _LOCATOR,
            "state": {"enum": ["attached", "detached", "visible", "hidden"]},
        },
        ["step_id", "action", "locator", "state"],
    ),
    _obj(
        {
            "step_id": IDENTIFIER,
            "action": {"const": "wait_for_timeout"},
            "duration_ms": {"type": "integer", "minimum": 1, "maximum": 600_000},
        },
        ["step_id", "action", "duration_ms"],
    ),
]
_ENTRIES: JSONObject = {
    "type": "array",
    "maxItems": 512,
    "items": _obj(
        {"name": {"type": "string", "minLength": 1, "maxLength": 1024}, "value": {"$ref": "#/$defs/Value"}},
        ["name", "value"],
    ),
}
_AREA: JSONObject = {
    "type": "array",
    "maxItems": 32,
    "items": _obj(
        {"origin": {"type": "string", "pattern": ORIGIN_PATTERN, "maxLength": 2048}, "entries": _ENTRIES},
        ["origin", "entries"],
    ),
}
_STORAGE = _obj(
    {
        "cookies": {
            "type": "array",
            "maxItems": 256,
            "items": _obj(
                {
                    "name": {"type": "string", "minLength": 1, "maxLength": 1024},
                    "value": {"$ref": "#/$defs/Value"},
                    "destination": {"$ref": "#/$defs/Url"},
                    "http_only": {"type": "boolean"},
                    "secure": {"type": "boolean"},
                    "same_site": {"enum": ["Strict", "Lax", "None"]},
                },
                ["name", "value", "destination", "http_only", "secure", "same_site"],
            ),
        },
        "local_storage": _AREA,
        "session_storage": _AREA,
    },
    description="Initial state: cookies set before the start URL opens; local and session storage entries written "
    "into documents of their origin created while the start URL opens, before the page's own scripts "
    "run. Every origin must be allowed; values may be secrets.",
    examples=[
        {
            "cookies": [
                {
                    "name": "session",
                    "value": {"source": "secret", "secret_id": "session"},
                    "destination": {"url": ORIGIN_EXAMPLE + "/"},
                    "http_only": True,
                    "secure": True,
                    "same_site": "Lax",
                }
            ],
            "local_storage": [
                {
                    "origin": ORIGIN_EXAMPLE,
                    "entries": [{"name": "onboarded", "value": {"source": "literal", "value": "true"}}],
                }
            ],
        }
    ],
)
_HEADER_NAME: JSONObject = {
    "type": "string",
    "minLength": 1,
    "maxLength": 256,
    "pattern": "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$",
}
_REPLAY: JSONObject = {
    "oneOf": [
        _obj({"mode": {"const": "disabled"}}, ["mode"]),
        _obj(
            {
                "mode": {"const": "exact"},
                "unmatched": {"enum": ["abort", "passthrough-declared-origins"]},
                "routes": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 256,
                    "items": _obj(
                        {
                            "route_id": IDENTIFIER,
                            "method": {"enum": ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]},
                            "request": {"$ref": "#/$defs/Url"},
                            "response": {
                                "oneOf": [
                                    _obj(
                                        {
                                            "kind": {"const": "response"},
                                            "status": {"type": "integer", "minimum": 100, "maximum": 599},
                                            "headers": {
                                                "type": "array",
                                                "maxItems": 64,
                                                "items": _obj(
                                                    {"name": _HEADER_NAME, "value": {"$ref": "#/$defs/Value"}},
                                                    ["name", "value"],
                                                ),
                                            },
                                            "body": {"$ref": "#/$defs/Value"},
                                        },
                                        ["kind", "status"],
                                    ),
                                    _obj(
                                        {
                                            "kind": {"const": "redirect"},
                                            "status": {"enum": [301, 302, 303, 307, 308]},
                                            "destination": {"$ref": "#/$defs/Url"},
                                        },
                                        ["kind", "status", "destination"],
                                    ),
                                ]
                            },
                        },
                        ["route_id", "method", "request", "response"],
                    ),
                },
            },
            ["mode", "unmatched", "routes"],
        ),
    ],
    "default": {"mode": "disabled"},
    "description": "Answer declared routes without the network (default disabled). exact: requests matching a "
    "route (method and exact URL with its query) are answered by rea "
    "with the declared response or redirect, never reaching the network; others are aborted or, with "
    "passthrough-declared-origins, sent when their origin is allowed.",
    "examples": [
        {
            "mode": "exact",
            "unmatched": "passthrough-declared-origins",
            "routes": [
                {
                    "route_id": "flags",
                    "method": "GET",
                    "request": {"url": ORIGIN_EXAMPLE + "/api/flags"},
                    "response": {
                        "kind": "response",
                        "status": 200,
                        "headers": [
                            {"name": "content-type", "value": {"source": "literal", "value": "application/json"}}
                        ],
                        "body": {"source": "literal", "value": '{"beta": true}'},
                    },
                }
            ],
        }
    ],
}
_ARTIFACT_KINDS: JSONObject = {"enum": ["url", "title", "dom", "screenshot", "storage"]}
_EVENT_KINDS: JSONObject = {"enum": ["console", "page-errors", "network", "frames"]}

CAPTURE_SCENARIO: JSONObject = {
    "type": "object",
    "$defs": {**_DEFS, **{f"Action{i}": a for i, a in enumerate(_ACTIONS)}},
    "properties": {
        "schema_version": {"const": 1, "description": "The scenario request version (1)."},
        "browser": {
            "oneOf": [
                _obj({"mode": {"const": "launch"}}, ["mode"]),
                _obj(
                    {"mode": {"const": "connect"}, "cdp_endpoint": CDP_ENDPOINT, "target_id": TARGET_ID},
                    ["mode", "cdp_endpoint", "target_id"],
                ),
            ],
            "default": {"mode": "launch"},
            "description": "launch (default) or connect. launch: rea starts a headless Chromium it owns (PATH or "
            "REA_CHROMIUM_PATH; "
            "private profile; loopback DevTools; terminated and reaped at the end). connect: drive "
            "an existing page target of a loopback CDP endpoint (left where the scenario ends).",
            "examples": [
                {"mode": "launch"},
                {"mode": "connect", **PAGE_EXAMPLE},
            ],
        },
        "start_url": {
            "$ref": "#/$defs/Url",
            "description": "The first page (http/https, no credentials); query entries may name secrets.",
            "examples": [{"url": ORIGIN_EXAMPLE + "/"}],
        },
        "allowed_origins": {
            **ALLOWED_ORIGINS,
            "description": "Exact origins the page may reach; default: the start URL's origin. "
            "rea fails every other request before it leaves the browser.",
        },
        "actions": {
            "type": "array",
            "minItems": 1,
            "maxItems": 128,
            "items": {"oneOf": [{"$ref": f"#/$defs/Action{i}"} for i in range(len(_ACTIONS))]},
            "description": "The steps, in order, each with a unique step_id. Actions: goto, click, "
            "fill (type into a field), press, select_option, check/uncheck, wait_for (an "
            "element state), wait_for_timeout. The run stops at the first step that fails.",
            "examples": [
                [
                    {
                        "step_id": "email",
                        "action": "fill",
                        "locator": {"kind": "test_id", "value": "email"},
                        "value": {"source": "literal", "value": "a@example.test"},
                    }
                ]
            ],
        },
        "secrets": {
            "type": "array",
            "maxItems": 64,
            "items": {
                **_obj(
                    {
                        "secret_id": IDENTIFIER,
                        "environment_variable": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": 256,
                            "pattern": "^[^=\\u0000]+$",
                        },
                        "file": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": 4096,
                            "description": "Absolute path of a private (mode 600) file holding the value.",
                        },
                    },
                    ["secret_id"],
                ),
                "oneOf": [{"required": ["environment_variable"]}, {"required": ["file"]}],
            },
            "description": "Values for {source: secret} references, from a private file or rea's "
            "environment; captures show them as [secret:<id>].",
            "examples": [[{"secret_id": "password", "file": "/run/user/1000/app-password"}]],
        },
        "storage": _STORAGE,
        "request_replay": _REPLAY,
        "capture": _obj(
            {
                "after_each_step": {"type": "array", "items": _ARTIFACT_KINDS, "maxItems": 5},
                "at_end": {"type": "array", "items": _ARTIFACT_KINDS, "maxItems": 5},
                "events": {"type": "array", "items": _EVENT_KINDS, "maxItems": 4},
            },
            description="What to keep: artifacts after each step and at the end, and event "
            "families. Defaults: artifacts after each step (url, dom) and after the last "
            "(default url, title), and event families (default console, page-errors, "
            "network).",
            examples=[
                {
                    "after_each_step": ["url", "dom"],
                    "at_end": ["screenshot", "storage"],
                    "events": ["console", "network"],
                }
            ],
        ),
        "environment": _obj(
            {
                "viewport": _obj(
                    {
                        "width": {"type": "integer", "minimum": 100, "maximum": 7680},
                        "height": {"type": "integer", "minimum": 100, "maximum": 4320},
                        "device_scale_factor": {"type": "number", "exclusiveMinimum": 0, "maximum": 4},
                    }
                ),
                "locale": {"type": "string", "pattern": "^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$", "maxLength": 64},
                "timezone": {"type": "string", "pattern": "^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$", "maxLength": 64},
                "color_scheme": {"enum": ["light", "dark", "no-preference"]},
                "reduced_motion": {"enum": ["reduce", "no-preference"]},
            },
            description="Deterministic settings; default 1280x720 at scale 1, en-US, UTC, light, reduced motion.",
            examples=[{"viewport": {"width": 800, "height": 600}, "timezone": "Europe/Paris"}],
        ),
        "limits": _obj(
            {
                "max_events": {"type": "integer", "minimum": 0, "maximum": 100_000},
                "max_dom_bytes": {"type": "integer", "minimum": 1024, "maximum": 16_777_216},
                "maximum_image_bytes": {"type": "integer", "minimum": 1024, "maximum": 67_108_864},
                "navigation_timeout_ms": {"type": "integer", "minimum": 1, "maximum": 600_000},
                "step_timeout_ms": {"type": "integer", "minimum": 1, "maximum": 600_000},
                "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 3_600_000},
            },
            description="Bounds on what is kept and how long it runs. Events kept (10000), DOM "
            "text per snapshot (1 MiB), screenshot bytes "
            "(5 MiB), per-navigation and per-step deadlines (30 s), whole scenario (none).",
            examples=[{"max_events": 2000, "step_timeout_ms": 10000}],
        ),
    },
    "required": ["start_url", "actions"],
    "additionalProperties": False,
}

SCENARIO_EXAMPLE: JSONObject = {
    "start_url": {"url": ORIGIN_EXAMPLE + "/login"},
    "actions": [
        {
            "step_id": "user",
            "action": "fill",
            "locator": {"kind": "test_id", "value": "username"},
            "value": {"source": "literal", "value": "analyst"},
        },
        {
            "step_id": "password",
            "action": "fill",
            "locator": {"kind": "css", "selector": "input[type=password]"},
            "value": {"source": "secret", "secret_id": "password"},
        },
        {"step_id": "submit", "action": "click", "locator": {"kind": "role", "role": "button", "name": "Sign in"}},
        {
            "step_id": "dashboard",
            "action": "wait_for",
            "locator": {"kind": "css", "selector": "#dashboard"},
            "state": "visible",
        },
    ],
    "secrets": [{"secret_id": "password", "environment_variable": "APP_PASSWORD"}],
    "capture": {
        "after_each_step": ["url", "dom"],
        "at_end": ["url", "screenshot", "storage"],
        "events": ["console", "page-errors", "network"],
    },
}

# -- compare_web_captures --------------------------------------------------------------------------

_NORMALIZATION = _obj(
    {
        "rules": {
            "type": "array",
            "maxItems": 64,
            "items": _obj(
                {
                    "rule_id": IDENTIFIER,
                    "artifacts": {
                        "type": "array",
                        "minItems": 1,
                        "uniqueItems": True,
                        "items": {"enum": ["url", "title", "dom", "console", "network"]},
                    },
                    "match": {"type": "string", "minLength": 1, "maxLength": 4096},
                    "replacement": {"type": "string", "maxLength": 4096},
                },
                ["rule_id", "artifacts", "match", "replacement"],
            ),
        }
    },
    ["rules"],
)


@functools.cache
def compare_captures_schema() -> JSONObject:
    (inspection, webmcp, scenario), defs = json_schema(Inspection, WebMcpDiscovery, ScenarioCapture)
    side = _obj(
        {
            "inspection": {**inspection, "description": "The complete normalized_result of inspect_web_page."},
            "webmcp": {
                "anyOf": [webmcp, {"type": "null"}],
                "description": "The complete normalized_result of discover_webmcp_tools, or null.",
            },
        },
        ["inspection"],
    )
    return {
        "type": "object",
        "description": "Compare two passive captures (before and after) or two scenario captures (before_scenario "
        "and after_scenario); exactly one group.",
        "$defs": defs,
        "properties": {
            "before": {**copy.deepcopy(side), "description": "The earlier passive capture: {inspection, webmcp?}."},
            "after": {**copy.deepcopy(side), "description": "The later passive capture: {inspection, webmcp?}."},
            "before_scenario": {**scenario, "description": "The earlier capture_browser_scenario normalized_result."},
            "after_scenario": {**scenario, "description": "The later capture_browser_scenario normalized_result."},
            "normalization": {
                **_NORMALIZATION,
                "default": {"rules": []},
                "description": "Literal replacements before comparing scenarios (volatile ids, "
                "dates). They apply to the named artifacts of both sides.",
            },
        },
        "oneOf": [
            {
                "title": "passive captures",
                "required": ["before", "after"],
                "not": {
                    "anyOf": [
                        {"required": ["before_scenario"]},
                        {"required": ["after_scenario"]},
                        {"required": ["normalization"]},
                    ]
                },
            },
            {
                "title": "scenario captures",
                "required": ["before_scenario", "after_scenario"],
                "not": {"anyOf": [{"required": ["before"]}, {"required": ["after"]}]},
            },
        ],
        "additionalProperties": False,
    }


def _png_1x1() -> JSONObject:
    """A 1x1 PNG as compare_web_screenshots takes it: an example argument (JSON its input schema shapes)."""
    data = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PzWvWQAAAABJRU5ErkJggg=="
    )
    return {
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "media_type": "image/png",
        "width": 1,
        "height": 1,
        "data_base64": base64.b64encode(data).decode(),
    }


SCREENSHOT_EXAMPLES: tuple[JSONObject, ...] = (
    {"before": _png_1x1(), "after": _png_1x1(), "channel_threshold": 0},
    {
        "before": {"kind": "retained-evidence", "evidence_id": "ev_" + "1" * 64},
        "after": {"kind": "retained-evidence", "evidence_id": "ev_" + "2" * 64},
    },
)
