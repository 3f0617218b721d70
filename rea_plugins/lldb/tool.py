"""``observe_native_calls``: run a program under LLDB and record entries of the functions asked for."""

from __future__ import annotations

import os
import shutil

import msgspec

from rea.plugin import AnalysisClient
from rea.plugin import AnalysisProvider
from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import ProviderIdentity
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import arg_bool
from rea.plugin import arg_int
from rea.plugin import arg_list
from rea.plugin import arg_object
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea.plugin import evidence_input
from rea.plugin import identify
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import with_evidence_defs
from rea_plugins.lldb.abi import ABIS
from rea_plugins.lldb.shapes import AddressRequest
from rea_plugins.lldb.shapes import ModuleRequest
from rea_plugins.lldb.shapes import NativeCallObservation
from rea_plugins.lldb.shapes import ObserveRequest

PROVIDER_ID = "lldb"
DEFAULT_INHERIT = ["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ"]
# Input schema pieces: JSON Schema (its vocabulary, not rea records).
HEX: JSONObject = {"type": "string", "pattern": "^0x[0-9a-fA-F]{1,16}$"}
_EV = evidence_input("Evidence with an address (procedure_info...), inline or retained. Its address is observed.")

# How the program is started, the same for observe_native_calls and debug_launch.
ARGUMENTS: JSONObject = {
    "type": "array",
    "items": {"type": "string"},
    "maxItems": 1024,
    "default": [],
    "description": "Arguments after the program name.",
}
ENVIRONMENT: JSONObject = {
    "type": "object",
    "additionalProperties": {"type": "string"},
    "default": {},
    "description": "Variables set explicitly (HOME and TMPDIR default to a private folder).",
}
INHERIT_ENVIRONMENT: JSONObject = {
    "type": "array",
    "items": {"type": "string", "minLength": 1},
    "maxItems": 256,
    "description": "Names of server variables the program inherits; default: " + ", ".join(DEFAULT_INHERIT) + ".",
}

INPUT_SCHEMA: JSONObject = with_evidence_defs(
    {
        "type": "object",
        "properties": {
            "executable": {
                "type": "string",
                "minLength": 1,
                "description": "Program to launch; omitted: the open target.",
                "examples": ["/tmp/build/app"],
            },
            "arguments": ARGUMENTS,
            "working_directory": {
                "type": "string",
                "minLength": 1,
                "description": "Working directory of the program; default: the program's folder.",
            },
            "environment": ENVIRONMENT,
            "inherit_environment": INHERIT_ENVIRONMENT,
            "functions": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "maxItems": 256,
                "default": [],
                "description": "Function names whose entries are recorded. Every module's, shared libraries included.",
                "examples": [["main", "add"]],
            },
            "addresses": {
                "type": "array",
                "items": {"anyOf": [HEX, _EV]},
                "maxItems": 256,
                "default": [],
                "description": "Static (file) addresses of function entries: hex text or Evidence.",
            },
            "module_procedures": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "module": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Module file name; default: the program itself.",
                    },
                    "max_functions": {"type": "integer", "minimum": 1, "maximum": 5000, "default": 200},
                },
                "description": "Every code symbol of one module, up to max_functions. More is reported as a limit.",
            },
            "max_events": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100_000,
                "default": 1000,
                "description": "Stop after this many recorded calls.",
            },
            "duration_ms": {
                "type": "integer",
                "minimum": 100,
                "maximum": 600_000,
                "default": 10_000,
                "description": "Stop after the program ran this long.",
            },
            "argument_count": {
                "type": "integer",
                "minimum": 0,
                "maximum": 8,
                "default": 6,
                "description": "Argument registers read at each entry (per the ABI).",
            },
            "return_values": {
                "type": "boolean",
                "default": False,
                "description": "Also record each call's return value register.",
            },
            "max_backtrace_frames": {
                "type": "integer",
                "minimum": 1,
                "maximum": 64,
                "default": 8,
                "description": "Frames of each hit's backtrace.",
            },
            "filesystem_roots": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "maxItems": 64,
                "default": [],
                "description": "Folders the sandboxed program may write, besides its working directory.",
            },
            "sandbox": {
                "type": "string",
                "enum": ["required", "preferred", "none"],
                "default": "required",
                "description": "required: run under bubblewrap or fail; preferred: without it when the host "
                "cannot; none: unsandboxed. The isolation that applied is recorded.",
            },
        },
        "additionalProperties": False,
    }
)


def _address_of(call: ToolCall, value: JSONValue, index: int) -> AddressRequest:
    if isinstance(value, str):
        return AddressRequest(address=value.lower())
    ev = call.session.resolve_evidence(value, f"addresses/{index}")
    result = ev.normalized_result if isinstance(ev.normalized_result, dict) else {}
    address = result.get("address")
    if not isinstance(address, str) and isinstance(result.get("procedure"), dict):
        address = result["procedure"].get("address")
    if not isinstance(address, str) or not address.startswith("0x"):
        raise invalid_request(
            "the Evidence names no address",
            [issue(f"addresses/{index}", "invalid_value", "expected Evidence with an address")],
        )
    name = result.get("name")
    return AddressRequest(
        address=address.lower(), name=name if isinstance(name, str) else None, evidence_id=ev.evidence_id
    )


def _program(call: ToolCall) -> Target:
    executable = arg_str(call.args, "executable")
    if executable is None:
        return call.session.require_target()
    path = executable if os.sep in executable else shutil.which(executable) or executable
    target = identify(path, call.ctx)
    if not os.access(target.resolved_path, os.X_OK):
        raise ReaError(
            "target_unavailable",
            f"{executable} is not executable",
            details={"reason": "not_executable", "path": executable},
        )
    return target


def working_directory(call: ToolCall, program: Target) -> str:
    """The program's working directory (the call's, else the program's folder), resolved; it must exist."""
    cwd = arg_str(call.args, "working_directory") or os.path.dirname(program.resolved_path)
    if not os.path.isdir(cwd):
        raise ReaError(
            "target_unavailable",
            f"working directory {cwd} does not exist",
            details={"reason": "working_directory_missing", "path": cwd},
        )
    return os.path.realpath(cwd)


def _params(call: ToolCall, target: Target) -> ObserveRequest:
    args = call.args
    addresses = [_address_of(call, v, i) for i, v in enumerate(arg_list(args, "addresses") or [])]
    module = arg_object(args, "module_procedures")
    functions = arg_strs(args, "functions") or []
    if not functions and not addresses and module is None:
        raise invalid_request(
            "name at least one function, address or module_procedures",
            [issue("functions", "missing_argument", "nothing to observe")],
        )
    cwd = working_directory(call, target)
    architecture = target.architecture or ""
    return ObserveRequest(
        arguments=arg_strs(args, "arguments") or [],
        working_directory=cwd,
        environment=environment_of(args),
        inherit_environment=inherited(args),
        functions=functions,
        addresses=addresses,
        module_procedures=None
        if module is None
        else ModuleRequest(module=arg_str(module, "module"), max_functions=arg_int(module, "max_functions", 200)),
        max_events=arg_int(args, "max_events", 1000),
        duration_ms=arg_int(args, "duration_ms", 10_000),
        argument_count=arg_int(args, "argument_count", 6),
        return_values=arg_bool(args, "return_values"),
        max_backtrace_frames=arg_int(args, "max_backtrace_frames", 8),
        filesystem_roots=filesystem_roots(args),
        sandbox=arg_str(args, "sandbox", "required"),
        architecture=architecture,
        abi=ABIS[architecture].name if architecture in ABIS else None,
    )


def environment_of(args: Arguments) -> dict[str, str]:
    """The variables the call sets explicitly (the schema holds each value to a string)."""
    given = arg_object(args, "environment") or {}
    return {k: v if isinstance(v, str) else str(v) for k, v in given.items()}


def inherited(args: Arguments) -> list[str]:
    """The names of the server's variables the program inherits."""
    names = arg_strs(args, "inherit_environment")
    return list(DEFAULT_INHERIT) if names is None else names


def filesystem_roots(args: Arguments) -> list[str]:
    """The folders the sandboxed program may write besides its working directory, resolved."""
    return [os.path.realpath(r) for r in arg_strs(args, "filesystem_roots") or []]


def require_available(provider: AnalysisProvider) -> None:
    """Nothing when the lldb provider can run here; else its reason as a typed error."""
    available = provider.availability()
    if available.status != "available":
        raise ReaError(
            "provider_unavailable",
            f"lldb is unavailable: {available.reason}",
            remediation=available.remediation or "",
            details={"provider_id": PROVIDER_ID, "reason": available.code},
        )


def _handle(call: ToolCall) -> Evidence:
    session = call.session
    provider = session.registry.providers.get(PROVIDER_ID)
    if provider is None:
        raise ReaError(
            "capability_unavailable",
            "the lldb plugin is not loaded",
            remediation="pip install 'rea-reverse[lldb]' and check REA_DISABLE_PLUGINS.",
            details={"provider_id": PROVIDER_ID},
        )
    require_available(provider)
    target = _program(call)
    support = provider.target_support(target)
    if support.status == "unsupported":
        raise ReaError(
            "unsupported_target",
            f"lldb cannot observe this program: {support.reason}",
            details={"reason": support.code, "format": target.format, "architecture": target.architecture},
        )
    params: Arguments = msgspec.to_builtins(_params(call, target))
    bound = arg_str(call.args, "executable") is None and session.provider is provider
    if bound:
        # The open target is bound to lldb: the observation runs in the session's client.
        result = session.execute("observe_native_calls", params, call.ctx)
        return session.evidence(call.tool.name, _recorded(params), result)
    client: AnalysisClient = provider.open(target, session.run_id or "", call.ctx)
    try:
        result = client.execute("observe_native_calls", params, call.ctx)
    finally:
        session.record_lineage(client.lineage())
    d = provider.descriptor
    return session.evidence(
        call.tool.name,
        _recorded(params),
        result,
        bound=False,
        target=target,
        provider=ProviderIdentity(id=d.id, name=d.name, version=d.version),
        analysis_profile=None,
    )


def _recorded(params: Arguments) -> Arguments:
    return {k: v for k, v in params.items() if k not in ("architecture",)}


OBSERVE_NATIVE_CALLS = ToolDef(
    result_type=NativeCallObservation,
    name="observe_native_calls",
    family="dynamic",
    title="Observe Native Calls",
    description=(
        "Run the open target (or executable) under LLDB, sandboxed, and record each entry of the requested "
        "functions. Functions are names, static addresses or Evidence, or every procedure of a module; each hit "
        "has its function, address, thread, the first argument registers per the ABI, optionally the return value, "
        "and a bounded backtrace; every hit auto-continues. Stops at max_events, duration_ms or exit, and the "
        "program is killed. A crash, timeout or cancellation keeps what was recorded in "
        "details.partial_observation, with the cleanup status beside it. x86-64 ELF on Linux; arm64 and "
        "Mach-O where the host runs them (unsupported_host otherwise)."
    ),
    input_schema=INPUT_SCHEMA,
    handler=_handle,
    effects=ToolEffects(records_evidence=True, launches_process=True, executes_foreign_code=True, idempotent=False),
    examples=(
        {"functions": ["main"]},
        {
            "executable": "/tmp/build/app",
            "arguments": ["--fast"],
            "functions": ["parse_header"],
            "return_values": True,
            "max_events": 50,
        },
    ),
)
