"""A test plugin loaded through REA_PLUGIN_MODULES: tools whose duration and size the tests choose."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import msgspec

from rea import evidence
from rea import hookimpl
from rea.catalog.tool import ToolCall
from rea.catalog.tool import ToolDef
from rea.evidence import Evidence
from rea.evidence import ProviderIdentity
from rea.providers import OperationResult

PROBE = ProviderIdentity(id="probe", name="Probe", version="1")


class Count(msgspec.Struct):
    """What probe_mistyped declares it returns (and does not: a negative control for output validation)."""

    count: int


def _wait(call: ToolCall) -> Evidence:
    steps, step_ms = call.args["steps"], call.args.get("step_ms", 10)
    if marker := os.environ.get("REA_TEST_PROBE_STARTED"):  # a test signalling the call waits for this file
        Path(marker).touch()
    for i in range(steps):
        call.ctx.check("waiting")
        call.ctx.progress(f"probe: step {i + 1} of {steps}")
        time.sleep(step_ms / 1000)
    call.ctx.finish(f"probe: {steps} steps done")
    return call.session.evidence(
        "probe_wait", dict(call.args), OperationResult(normalized={"steps": steps}), bound=False, provider=PROBE
    )


def _payload(call: ToolCall) -> Evidence:
    size = call.args["size"]
    return evidence.build(
        operation="probe_payload",
        provider=PROBE,
        subject=None,
        analysis_profile=None,
        parameters=dict(call.args),
        normalized_result={"blob": "x" * size},
    )


def _mistyped(call: ToolCall) -> Evidence:
    return evidence.build(
        operation="probe_mistyped",
        provider=PROBE,
        subject=None,
        analysis_profile=None,
        parameters={},
        normalized_result={"count": "not a number"},
    )


def _fail(call: ToolCall) -> Evidence:
    from rea.errors import ReaError

    details: dict[str, Any] = {"probe": True}
    if call.args.get("detail_bytes"):
        details["dump"] = "d" * call.args["detail_bytes"]
    err = ReaError(call.args["code"], f"probe failure {call.args['code']}", details=details)
    if call.args.get("cleanup_left"):
        err = err.with_cleanup_incomplete(["probe-worker"], "probe could not stop its worker")
    raise err


@hookimpl
def rea_register_tools(register: Any) -> None:
    register(
        ToolDef(
            name="probe_wait",
            family="test",
            description="Wait in steps, reporting progress.",
            task_support="optional",
            input_schema={
                "type": "object",
                "properties": {
                    "steps": {"type": "integer", "minimum": 0},
                    "step_ms": {"type": "integer", "minimum": 0},
                },
                "required": ["steps"],
                "additionalProperties": False,
            },
            examples=({"steps": 1},),
            handler=_wait,
        )
    )
    register(
        ToolDef(
            name="probe_payload",
            family="test",
            description="Return Evidence with a blob of the given size.",
            input_schema={
                "type": "object",
                "properties": {"size": {"type": "integer", "minimum": 0}},
                "required": ["size"],
                "additionalProperties": False,
            },
            examples=({"size": 1},),
            handler=_payload,
        )
    )
    register(
        ToolDef(
            name="probe_sampling",
            family="test",
            description="A tool that needs the client's sampling capability.",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            client_features_required=("sampling",),
            client_features_optional=("progress",),
            examples=({},),
            output_schema={"type": "object"},
            handler=lambda call: {"sampled": False},
        )
    )
    register(
        ToolDef(
            name="probe_mistyped",
            family="test",
            description="Return a result that is not the shape the tool declares.",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            examples=({},),
            result_type=Count,
            handler=_mistyped,
        )
    )
    from rea.errors import CODES

    register(
        ToolDef(
            name="probe_fail",
            family="test",
            task_support="optional",
            description="Fail with the given canonical error code.",
            input_schema={
                "type": "object",
                "properties": {
                    "code": {"type": "string", "enum": sorted(CODES)},
                    "cleanup_left": {"type": "boolean"},
                    "detail_bytes": {"type": "integer", "minimum": 0},
                },
                "required": ["code"],
                "additionalProperties": False,
            },
            examples=({"code": "cancelled"},),
            handler=_fail,
        )
    )
