"""``capture_process_scenario`` and ``compare_process_captures``, declared as ToolDefs."""

from __future__ import annotations

import msgspec

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import ProviderIdentity
from rea.plugin import ReaError
from rea.plugin import ScenarioDriver
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import arg_object
from rea.plugin import arg_objects
from rea.plugin import evidence_input
from rea.plugin import identify
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import with_evidence_defs
from rea_plugins.process.compare import compare
from rea_plugins.process.driver import DEFAULT_INHERIT
from rea_plugins.process.driver import DEFAULT_LIMITS
from rea_plugins.process.driver import VERSION
from rea_plugins.process.shapes import ProcessCapture
from rea_plugins.process.shapes import ProcessComparison

DRIVER_ID = "process"
STRINGS: JSONObject = {"type": "array", "items": {"type": "string"}}
_EV_TEXT = "capture_process_scenario Evidence, inline or retained"
NORMALIZATION: JSONObject = {
    "type": "object",
    "additionalProperties": False,
    "description": "Volatile values replaced before comparing. The capture's pids (<pid>), times (<time>), its "
    "paths (<cwd>, <root0>, <private>), and caller rules (RE2 pattern -> replacement).",
    "properties": {
        "pids": {"type": "boolean", "default": True},
        "times": {"type": "boolean", "default": True},
        "paths": {"type": "boolean", "default": True},
        "rules": {
            "type": "array",
            "maxItems": 64,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["pattern"],
                "properties": {
                    "pattern": {"type": "string", "minLength": 1, "maxLength": 1000},
                    "replacement": {"type": "string", "maxLength": 200},
                },
            },
        },
    },
}

# JSON Schema fragments (JSON Schema's vocabulary, not rea records).
CAPTURE_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "executable": {
            "type": "string",
            "minLength": 1,
            "description": "Program to run (a path, or a name on the scenario's PATH).",
            "examples": ["/usr/bin/printf"],
        },
        "arguments": {**STRINGS, "maxItems": 1024, "default": [], "description": "Arguments after the program."},
        "working_directory": {"type": "string", "minLength": 1, "description": "Working directory (must exist)."},
        "environment": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "default": {},
            "description": "Variables set explicitly; HOME and TMPDIR default to a private folder.",
        },
        "inherit_environment": {
            **STRINGS,
            "maxItems": 256,
            "description": "Server variables the program inherits; default: " + ", ".join(DEFAULT_INHERIT) + ".",
        },
        "terminal": {
            "type": "object",
            "additionalProperties": False,
            "description": "Run under a pseudo-terminal (its controlling terminal and stdio); the "
            "capture is then one terminal transcript.",
            "properties": {
                "enabled": {"type": "boolean", "default": True},
                "rows": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 24},
                "columns": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 80},
            },
        },
        "checkpoints": {
            "type": "array",
            "maxItems": 256,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id"],
                "properties": {
                    "id": {"type": "string", "minLength": 1, "maxLength": 128},
                    "output_contains": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 4096,
                        "description": "Reached when this text appears in the output "
                        "after the previous checkpoint's match.",
                    },
                    "after_ms": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": 3_600_000,
                        "description": "Reached no earlier than this long after the start.",
                    },
                },
            },
            "description": "Named conditions events wait for.",
        },
        "events": {
            "type": "array",
            "maxItems": 1024,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["action"],
                "properties": {
                    "action": {"type": "string", "enum": ["input", "signal", "close_stdin"]},
                    "text": {"type": "string", "maxLength": 1 << 20},
                    "signal": {"type": "string", "pattern": "^SIG[A-Z0-9]+$", "examples": ["SIGINT"]},
                    "checkpoint": {"type": "string", "minLength": 1},
                    "delay_ms": {"type": "integer", "minimum": 0, "maximum": 600_000},
                },
            },
            "description": "Input, signals and stdin close, in order. Each waits for its checkpoint (if any) and "
            "delay, then writes input, sends a "
            "signal (its delivery result is recorded) or closes stdin.",
        },
        "timeout_ms": {
            "type": "integer",
            "minimum": 100,
            "maximum": 3_600_000,
            "default": 30_000,
            "description": "Hard bound (ms); past it the program is stopped and the call fails as "
            "provider_timeout with details.partial_observation.",
        },
        "idle_timeout_ms": {
            "type": "integer",
            "minimum": 0,
            "maximum": 3_600_000,
            "default": 0,
            "description": "End the capture (normally) after this long without output and no event due; 0: off.",
        },
        "filesystem_roots": {
            **STRINGS,
            "maxItems": 64,
            "description": "Folders whose file changes are captured (default: the working directory). "
            "The sandboxed program may write them.",
        },
        "limits": {
            "type": "object",
            "additionalProperties": False,
            "description": "Bounds on what is kept. Output bytes per stream, files listed and hashed, processes "
            "recorded, processes and threads alive at once, and the grace between SIGTERM and "
            "SIGKILL at the end.",
            "properties": {
                "max_output_bytes": {
                    "type": "integer",
                    "minimum": 1024,
                    "maximum": 1 << 28,
                    "default": DEFAULT_LIMITS["max_output_bytes"],
                },
                "max_files": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 1_000_000,
                    "default": DEFAULT_LIMITS["max_files"],
                },
                "max_hash_bytes": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 1 << 34,
                    "default": DEFAULT_LIMITS["max_hash_bytes"],
                },
                "max_processes": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 100_000,
                    "default": DEFAULT_LIMITS["max_processes"],
                },
                "max_tasks": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 100_000,
                    "default": DEFAULT_LIMITS["max_tasks"],
                },
                "termination_grace_ms": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 60_000,
                    "default": DEFAULT_LIMITS["termination_grace_ms"],
                },
            },
        },
        "normalization": NORMALIZATION,
        "sandbox": {
            "type": "string",
            "enum": ["required", "preferred", "none"],
            "default": "required",
            "description": "required: bubblewrap or fail; preferred: unsandboxed where the host cannot; "
            "none: unsandboxed (network_access still holds). The capture records the "
            "isolation that applied (the paths a sandboxed program was given), and what an unsandboxed "
            "program could reach.",
        },
        "program_folder": {
            "type": "boolean",
            "default": False,
            "description": "Give the sandboxed program its whole folder (read-only), not only its file. "
            "For libraries or data kept beside it.",
        },
        "network_access": {
            "type": "string",
            "enum": ["none", "host"],
            "default": "none",
            "description": "none: own network namespace, in every sandbox mode (a typed error where "
            "the host has none); host: the host's network (loopback).",
        },
    },
    "required": ["executable", "working_directory"],
    "additionalProperties": False,
}

COMPARE_SCHEMA: JSONObject = with_evidence_defs(
    {
        "type": "object",
        "properties": {
            "left": evidence_input("The earlier capture: " + _EV_TEXT + "."),
            "right": evidence_input("The later capture: " + _EV_TEXT + "."),
            "left_evidence_id": {
                "type": "string",
                "pattern": "^ev_[0-9a-f]{64}$",
                "description": "The earlier capture's retained evidence id (instead of left).",
            },
            "right_evidence_id": {
                "type": "string",
                "pattern": "^ev_[0-9a-f]{64}$",
                "description": "The later capture's retained evidence id (instead of right).",
            },
            "normalization": NORMALIZATION,
        },
        "additionalProperties": False,
    }
)


def _driver(call: ToolCall) -> ScenarioDriver:
    driver = call.session.registry.drivers.get(DRIVER_ID)
    if driver is None:
        raise ReaError(
            "capability_unavailable",
            "the process scenario driver is not loaded",
            remediation="Check REA_DISABLE_PLUGINS / REA_LOAD_PLUGINS.",
            details={"driver": DRIVER_ID},
        )
    available = driver.availability()
    if available.status != "available":
        raise ReaError(
            "provider_unavailable",
            f"process scenarios are unavailable: {available.reason}",
            remediation=available.remediation or "",
            details={"driver": DRIVER_ID},
        )
    return driver


def _capture(call: ToolCall) -> Evidence:
    driver = _driver(call)
    d = driver.descriptor
    try:
        capture = driver.run(dict(call.args), call.ctx)
    except ReaError as err:
        # The capture so far, as the driver's JSON in the error's details.
        partial = err.details.get("partial_observation")
        if isinstance(partial, dict):
            family = partial.get("process_family")
            call.session.record_lineage((arg_objects(family, "lineage") if isinstance(family, dict) else None) or [])
            call.ctx.finish(f"process scenario: failed ({err.code}), cleanup {err.details.get('cleanup', 'unknown')}")
        raise
    # The driver's report is JSON (ScenarioDriver.run); read here as the capture it is.
    record = msgspec.convert(capture, ProcessCapture)
    life = record.lifecycle
    call.session.record_lineage(record.process_family.lineage)
    call.ctx.finish(
        f"process scenario: finished ({life.end_reason}), {life.elapsed_ms} ms, cleanup {record.cleanup.cleanup}"
    )
    limitations = [
        "Timing, pids and the private directory are volatile: compare_process_captures normalises them.",
        "The process family is sampled from /proc: a process shorter-lived than the sampling interval may be missing.",
    ]
    if record.isolation.sandbox == "none":
        limitations.append(f"The program ran without a sandbox: {record.isolation.reason}")
    try:
        target = identify(life.executable)
    except ReaError:
        target = None
    return call.session.evidence(
        call.tool.name,
        dict(call.args),
        OperationResult(normalized=capture, limitations=limitations),
        bound=False,
        target=target,
        provider=ProviderIdentity(id=d.id, name=d.name, version=d.version),
        analysis_profile=None,
    )


def _side(call: ToolCall, name: str) -> Evidence:
    inline, by_id = call.args.get(name), call.args.get(f"{name}_evidence_id")
    if (inline is None) == (by_id is None):
        raise invalid_request(
            f"give exactly one of {name} and {name}_evidence_id",
            [
                issue(
                    name,
                    "missing_argument" if inline is None else "invalid_value",
                    f"exactly one of {name}, {name}_evidence_id",
                )
            ],
        )
    value = inline if inline is not None else {"kind": "retained-evidence", "evidence_id": by_id}
    return call.session.resolve_evidence(value, name)


def _compare(call: ToolCall) -> Evidence:
    left, right = _side(call, "left"), _side(call, "right")
    options = arg_object(call.args, "normalization") or {}
    call.ctx.check("comparing captures")
    result = compare(left, right, options)
    call.ctx.check("comparing captures")
    return call.session.evidence(
        call.tool.name,
        {"left": left.evidence_id, "right": right.evidence_id, "normalization": options},
        OperationResult(normalized=msgspec.to_builtins(result), confidence="derived"),
        bound=False,
        provider=ProviderIdentity(id=DRIVER_ID, name="Process scenarios", version=VERSION),
        analysis_profile=None,
        links=[left.evidence_id, right.evidence_id],
    )


CAPTURE_PROCESS_SCENARIO = ToolDef(
    result_type=ProcessCapture,
    name="capture_process_scenario",
    task_support="optional",
    family="dynamic",
    title="Capture Process Scenario",
    description=(
        "Run one declared program (sandboxed by bubblewrap by default) and capture what it does. Arguments, "
        "explicit + inherited environment, working directory and an optional pseudo-terminal are declared; it is "
        "driven with input, stdin close and signals at checkpoints, and rea captures stdout/stderr or the "
        "terminal transcript (bounded, with truncation flags), exit code or signal, elapsed time, files "
        "created/modified/deleted under filesystem_roots, and the process family; the isolation that applied "
        "is recorded. Idle timeout ends it normally; timeout_ms, cancellation or an unobserved exit fail with "
        "details.partial_observation (signal attempts included). Progress goes out only with a progress token."
    ),
    input_schema=CAPTURE_SCHEMA,
    handler=_capture,
    effects=ToolEffects(
        records_evidence=True,
        launches_process=True,
        executes_foreign_code=True,
        writes_filesystem=True,
        idempotent=False,
    ),
    examples=(
        {"executable": "/usr/bin/printf", "arguments": ["hello\\n"], "working_directory": "/tmp"},
        {
            "executable": "/usr/bin/python3",
            "arguments": ["-i"],
            "working_directory": "/tmp",
            "terminal": {"rows": 24, "columns": 80},
            "checkpoints": [{"id": "prompt", "output_contains": ">>> "}],
            "events": [{"action": "input", "text": "print(6*7)\n", "checkpoint": "prompt"}, {"action": "close_stdin"}],
            "idle_timeout_ms": 2000,
        },
    ),
    cli_subject="executable",
)

COMPARE_PROCESS_CAPTURES = ToolDef(
    result_type=ProcessComparison,
    name="compare_process_captures",
    family="dynamic",
    title="Compare Process Captures",
    description=(
        "Compare two capture_process_scenario records (inline, retained references, or left_evidence_id / "
        "right_evidence_id). Output streams (unified diff), exit, files and process family, each match, "
        "mismatch, truncated or unknown, after normalising volatile pids, times and paths (plus RE2 rules)."
    ),
    input_schema=COMPARE_SCHEMA,
    handler=_compare,
    effects=ToolEffects(records_evidence=True),
    examples=(
        {"left_evidence_id": "ev_" + "1" * 64, "right_evidence_id": "ev_" + "2" * 64},
        {
            "left_evidence_id": "ev_" + "1" * 64,
            "right_evidence_id": "ev_" + "2" * 64,
            "normalization": {"rules": [{"pattern": "took [0-9]+ ms", "replacement": "took <n> ms"}]},
        },
    ),
)


def tools() -> list[ToolDef]:
    """The tools this module declares, in the order they are registered (the plugin's ``TOOL_MODULES`` reads it)."""
    return [CAPTURE_PROCESS_SCENARIO, COMPARE_PROCESS_CAPTURES]
