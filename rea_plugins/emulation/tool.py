"""``emulate_procedure`` and ``emulate_range``: run code of the open binary under Unicorn, in an owned worker.

The server builds the plan from what the provider reports (segments, sections, imports) and the caller's
arguments; the worker maps the image from the target's file and runs it. Nothing of the guest runs on the host.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from importlib import metadata

import msgspec

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import OperationResult
from rea.plugin import ProviderIdentity
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import WorkerChannel
from rea.plugin import arg_int
from rea.plugin import arg_list
from rea.plugin import arg_object
from rea.plugin import arg_str
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import memory_limit_setting
from rea.plugin import python_worker_spec
from rea.plugin import verify_unchanged
from rea_plugins.emulation.plan import FileRange
from rea_plugins.emulation.plan import Image
from rea_plugins.emulation.plan import Plan
from rea_plugins.emulation.plan import PlanLimits
from rea_plugins.emulation.plan import RelocationTable
from rea_plugins.emulation.plan import Section
from rea_plugins.emulation.plan import Segment
from rea_plugins.emulation.plan import Value
from rea_plugins.emulation.shapes import Emulation
from rea_plugins.emulation.shapes import Limits
from rea_plugins.emulation.shapes import Run

SUPPORTED = ("x86_64", "x86", "arm64", "arm")
TOOLSET = "emulation"
_IMAGE = "emulation.image"
_WORKERS = "emulation.workers"
# Bounds the caller may raise, and their ceilings.
DEFAULTS = {
    "max_instructions": (1_000_000, 1, 500_000_000),
    "timeout_ms": (5_000, 10, 120_000),
    "max_memory_mb": (256, 16, 4096),
    "stack_kb": (1024, 16, 65_536),
    "heap_kb": (16_384, 4, 1_048_576),
    "max_calls": (64, 0, 10_000),
    "max_written_bytes": (512, 0, 65_536),
}
MAX_BUFFER = 16 << 20
# JSON integers are exact up to 2**53 (and Evidence parameters are canonical JSON); wider values go as hex text.
SAFE = (1 << 53) - 1
HEX_INTEGER = "^-?0x[0-9a-fA-F]{1,16}$"

# The address-space bound of the emulation worker (Unicorn's translation cache and the guest's memory).
MEMORY_LIMIT = memory_limit_setting("REA_EMULATION_MEMORY_LIMIT_MB", "emulation")

# The input schemas' pieces are JSON Schema (its vocabulary, not rea records), hence JSONObject.
_VALUE: JSONObject = {
    "anyOf": [
        {"type": "integer", "minimum": -SAFE, "maximum": SAFE},
        {"type": "string", "pattern": HEX_INTEGER, "description": "An integer as hex text (any width)."},
        {
            "type": "object",
            "properties": {
                "text": {"type": "string", "maxLength": 1 << 20, "description": "UTF-8 text, NUL added."},
                "hex": {"type": "string", "pattern": "^([0-9a-fA-F]{2})*$", "maxLength": 1 << 21},
                "size": {"type": "integer", "minimum": 1, "maximum": MAX_BUFFER, "description": "Buffer bytes."},
                "address": {"type": "string", "pattern": "^0x[0-9a-fA-F]{1,16}$", "description": "Static address."},
                "pointers": {
                    "type": "array",
                    "maxItems": 256,
                    "items": {
                        "type": "object",
                        "properties": {
                            "text": {"type": "string", "maxLength": 1 << 16},
                            "hex": {"type": "string", "pattern": "^([0-9a-fA-F]{2})*$", "maxLength": 1 << 17},
                            "size": {"type": "integer", "minimum": 1, "maximum": 1 << 20},
                        },
                        "additionalProperties": False,
                        "minProperties": 1,
                    },
                    "description": "An array of pointers to these buffers, NULL-terminated (char **argv).",
                },
            },
            "additionalProperties": False,
            "minProperties": 1,
        },
    ],
    "description": "An integer (or hex text); a buffer by pointer: text, hex and/or size; a static address; pointers.",
}


def _bound(name: str, description: str) -> JSONObject:
    default, lo, hi = DEFAULTS[name]
    return {"type": "integer", "minimum": lo, "maximum": hi, "default": default, "description": description}


_COMMON: JSONObject = {
    "registers": {
        "type": "object",
        "additionalProperties": _VALUE,
        "maxProperties": 64,
        "description": "Registers set before the run, by name (rdi, x0, r0...).",
    },
    "import_returns": {
        "type": "object",
        "additionalProperties": {
            "anyOf": [
                {"type": "integer", "minimum": -SAFE, "maximum": SAFE},
                {"type": "string", "pattern": HEX_INTEGER},
            ]
        },
        "maxProperties": 256,
        "description": "Return values of unmodelled imports by name; '*' for any other.",
        "examples": [{"puts": 0, "*": 0}],
    },
    "max_instructions": _bound("max_instructions", "Stop after this many instructions."),
    "timeout_ms": _bound("timeout_ms", "Stop after this much time."),
    "max_memory_mb": _bound("max_memory_mb", "Bound of the memory mapped for the run."),
    "stack_kb": _bound("stack_kb", "Stack size."),
    "heap_kb": _bound("heap_kb", "Heap size that malloc draws from."),
    "max_calls": _bound("max_calls", "Import calls listed (all are counted)."),
    "max_written_bytes": _bound("max_written_bytes", "Bytes shown of written memory, and of each buffer."),
}

PROCEDURE_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "procedure": {
            "type": "string",
            "minLength": 1,
            "description": "Procedure name, notebook name or static address.",
            "examples": ["decrypt_string", "0x401126"],
        },
        "arguments": {
            "type": "array",
            "items": _VALUE,
            "maxItems": 16,
            "default": [],
            "description": "Arguments by the calling convention: integers or buffers.",
            "examples": [[{"size": 64}, {"hex": "2b262f2f2c"}, 5]],
        },
        **_COMMON,
    },
    "required": ["procedure"],
    "additionalProperties": False,
}

RANGE_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "start": {
            "type": "string",
            "pattern": "^0x[0-9a-fA-F]{1,16}$",
            "description": "Static address of the first instruction.",
        },
        "end": {
            "type": "string",
            "pattern": "^0x[0-9a-fA-F]{1,16}$",
            "description": "Static address where the run stops, not executed.",
        },
        **_COMMON,
    },
    "required": ["start", "end"],
    "additionalProperties": False,
}


def unicorn_version() -> str:
    try:
        return metadata.version("unicorn")
    except metadata.PackageNotFoundError:
        return "not-installed"


def _require_unicorn() -> None:
    if importlib.util.find_spec("unicorn") is None:
        raise ReaError(
            "provider_unavailable",
            "the emulator needs Unicorn, which is not installed",
            remediation="pip install 'rea-reverse[emulation]' (the unicorn wheel).",
            details={"provider_id": "unicorn", "reason": "runtime_missing"},
        )


def _target(call: ToolCall) -> Target:
    target = call.session.require_target()
    if target.architecture not in SUPPORTED:
        raise ReaError(
            "unsupported_target",
            f"the emulator runs {', '.join(SUPPORTED)} code, not {target.architecture or 'this target'}",
            details={"reason": "architecture", "architecture": target.architecture, "supported": list(SUPPORTED)},
        )
    return target


def _hex(value: int) -> str:
    return f"0x{value:x}"


# -- the load image --------------------------------------------------------------------------------------


def _image(call: ToolCall, target: Target) -> Image:
    """Segments, sections, dynamic relocation tables and imports of the open target (cached per target)."""
    session = call.session
    provider = session.provider.descriptor.id if session.provider else ""
    key = (target.sha256, provider)
    cached = session.state.get(_IMAGE)
    if isinstance(cached, tuple) and cached[0] == key and isinstance(cached[1], Image):
        return cached[1]
    listed = session.execute("list_segments", {}, call.ctx).normalized["segments"]
    regions = [
        (
            r.get("kind"),
            Segment(
                name=str(r["name"]),
                start=int(r["start"], 16),
                end=int(r["end"], 16),
                permissions=r.get("permissions") or "",
                file_offset=int(r.get("file_offset") or 0),
                file_size=int(r.get("file_size") or 0),
            ),
        )
        for r in listed
        if isinstance(r.get("start"), str) and isinstance(r.get("end"), str)
    ]
    segments = [r for kind, r in regions if kind == "segment"] or [r for kind, r in regions if kind == "section"]
    # A segment without permissions (Mach-O's __PAGEZERO) is a guard, never mapped.
    segments = [s for s in segments if s.permissions.strip("-") and s.end > s.start]
    sections = [r for kind, r in regions if kind == "section"]
    relocations = []
    if target.format == "elf":
        for r in sections:
            kind = {
                ".rela.dyn": "rela",
                ".rela.plt": "rela",
                ".rel.dyn": "rel",
                ".rel.plt": "rel",
                ".relr.dyn": "relr",
            }.get(r.name)
            if kind and r.file_size:
                relocations.append(RelocationTable(file_offset=r.file_offset, size=r.file_size, kind=kind))
    symbols = {
        r.name.lstrip("."): FileRange(file_offset=r.file_offset, size=r.file_size)
        for r in sections
        if r.name in (".dynsym", ".dynstr", ".symtab", ".strtab") and r.file_size
    }
    executable = [(s.start, s.end) for s in segments if "x" in s.permissions]
    imports: dict[int, str] = {}
    offset: int | None = 0
    while offset is not None:
        call.ctx.check("listing the imports")
        page = session.execute("list_procedures", {"offset": offset, "limit": 1000}, call.ctx).normalized
        for p in page["procedures"]:
            if p.get("kind") == "import" and isinstance(p.get("address"), str):
                imports[int(p["address"], 16)] = str(p["name"])
        offset = page.get("next_offset")
    if session.supports("list_names"):
        offset = 0
        while offset is not None:
            page = session.execute("list_names", {"offset": offset, "limit": 1000}, call.ctx).normalized
            for n in page["names"]:
                # An import bound by name only (a Mach-O lazy symbol) has no slot address: nothing to fill.
                if n.get("kind") == "import" and isinstance(n.get("address"), str):
                    imports.setdefault(int(n["address"], 16), str(n["name"]))
            offset = page.get("next_offset")
    rows = [
        (address, name, "code" if any(lo <= address < hi for lo, hi in executable) else "slot")
        for address, name in sorted(imports.items())
    ]
    image = Image(
        path=target.resolved_path,
        segments=segments,
        sections=[Section(name=s.name, start=s.start, end=s.end) for s in sections],
        relocations=relocations,
        symbols=symbols if target.format == "elf" else {},
        imports=rows,
    )
    session.state[_IMAGE] = (key, image)
    return image


# -- arguments -------------------------------------------------------------------------------------------


def _integer(value: JSONValue, path: str) -> int:
    """A register-wide value (an integer, or hex text): two's complement in 64 bits (the worker narrows it to the
    architecture's width)."""
    if isinstance(value, str):
        return int(value, 16) & ((1 << 64) - 1)
    if isinstance(value, int) and not isinstance(value, bool):
        return value & ((1 << 64) - 1)
    raise invalid_request(f"{path} must be an integer or hex text", [issue(path, "invalid_type", "an integer")])


def _value(value: JSONValue, path: str) -> Value:
    if isinstance(value, int | str) and not isinstance(value, bool):
        return Value(integer=_integer(value, path))
    if not isinstance(value, dict):
        raise invalid_request(f"{path} must be an integer or an object", [issue(path, "invalid_type", "a value")])
    if "pointers" in value:
        if len(value) > 1:
            raise invalid_request(
                "a pointer array takes nothing else", [issue(path, "invalid_value", "pointers with other fields")]
            )
        pointers = arg_list(value, "pointers") or []
        return Value(pointers=[_value(v, f"{path}/pointers/{i}") for i, v in enumerate(pointers)])
    if "address" in value:
        if len(value) > 1:
            raise invalid_request(
                "an address argument takes nothing else", [issue(path, "invalid_value", "address with buffer fields")]
            )
        return Value(address=int(arg_str(value, "address", ""), 16))
    data = b""
    if "text" in value:
        data = arg_str(value, "text", "").encode("utf-8") + b"\0"
    if "hex" in value:
        if "text" in value:
            raise invalid_request("give text or hex, not both", [issue(path, "invalid_value", "text and hex")])
        data = bytes.fromhex(arg_str(value, "hex", ""))
    size = arg_int(value, "size", 0)
    if size and size < len(data):
        raise invalid_request(
            f"size {size} is smaller than the {len(data)} bytes given",
            [issue(f"{path}/size", "invalid_value", "smaller than the data")],
        )
    capacity = max(size, len(data))
    if capacity > MAX_BUFFER:
        raise invalid_request("a buffer is at most 16 MiB", [issue(path, "invalid_value", "buffer too large")])
    return Value(data=data, capacity=capacity)


def _limits(args: Arguments) -> PlanLimits:
    got = {name: arg_int(args, name, default) for name, (default, _lo, _hi) in DEFAULTS.items()}
    return PlanLimits(
        max_instructions=got["max_instructions"],
        timeout_ms=got["timeout_ms"],
        max_memory_bytes=got["max_memory_mb"] << 20,
        stack_bytes=got["stack_kb"] << 10,
        heap_bytes=got["heap_kb"] << 10,
        max_calls=got["max_calls"],
        max_written_bytes=got["max_written_bytes"],
        max_buffer_bytes=got["max_written_bytes"],
    )


def _resolve_procedure(call: ToolCall, target: Target, text: str) -> tuple[int, str | None]:
    """A procedure's static address and name, from an address, a notebook name or the engine's name."""
    session = call.session
    nb = session.annotations.load(target.sha256)
    if text.lower().startswith("0x"):
        try:
            address = int(text, 16)
        except ValueError:
            raise invalid_request(
                f"{text} is not an address", [issue("procedure", "invalid_value", "not hex")]
            ) from None
        return address, _name_at(call, target, address)
    noted = nb.address_of(text)
    if noted is not None:
        return int(noted, 16), text
    found = session.execute("procedure_address", {"procedure": text}, call.ctx).normalized
    return int(found["address"], 16), str(found.get("name") or text)


def _name_at(call: ToolCall, target: Target, address: int) -> str | None:
    """The procedure holding ``address`` (a notebook name first), or None where none does."""
    nb = call.session.annotations.load(target.sha256)
    try:
        found = call.session.execute("resolve_containing_procedure", {"address": _hex(address)}, call.ctx).normalized
    except ReaError:
        return None
    procedure = found.get("procedure") if isinstance(found, dict) else None
    if not isinstance(procedure, dict):
        return None
    start = str(procedure.get("address"))
    name = nb.names().get(start) or procedure.get("name")
    if name is None:
        return None
    delta = address - int(start, 16)
    return str(name) if delta == 0 else f"{name}+0x{delta:x}"


# -- the run ---------------------------------------------------------------------------------------------


class Workers:
    """The session's emulation worker, kept between calls (a start costs Python and Unicorn's import); each
    request builds a fresh machine, and a worker that crashed is replaced by the next request."""

    def __init__(self) -> None:
        spec = python_worker_spec(
            "rea_plugins.emulation.worker",
            resource="emulation-worker",
            owner="emulation",
            address_space_bytes=MEMORY_LIMIT.read() << 20,
            memory_setting=MEMORY_LIMIT.name,
        )
        self.channel = WorkerChannel(spec, label="emulation", stateful=False)

    def close_with_session(self) -> list[str]:
        return list(self.channel.close().remaining)


def _workers(call: ToolCall) -> Workers:
    found = call.session.state.get(_WORKERS)
    if isinstance(found, Workers):
        return found
    workers = Workers()
    call.session.state[_WORKERS] = workers
    return workers


def _run(call: ToolCall, plan: Plan) -> Run:
    channel = _workers(call).channel
    try:
        reply = channel.request(
            "emulate",
            # As msgpack builtins (a buffer's bytes stay bytes); the worker converts it back.
            msgspec.to_builtins(plan, builtin_types=(bytes,)),
            call.ctx,
            deadline_s=plan.limits.timeout_ms / 1000 + 60,
            phase="emulating",
            announce=True,
        )
    except ReaError:
        call.session.record_lineage(channel.lineage())
        raise
    return msgspec.convert(reply.result(), Run)


def _emulate(call: ToolCall, mode: str) -> Evidence:
    _require_unicorn()
    target = _target(call)
    args = call.args
    image = _image(call, target)
    limits = _limits(args)
    returns = arg_object(args, "import_returns") or {}
    registers = arg_object(args, "registers") or {}
    name: str | None = None
    end: str | None = None
    until = 0
    arguments: list[Value] = []
    if mode == "procedure":
        entry, name = _resolve_procedure(call, target, arg_str(args, "procedure", ""))  # required by the schema
        arguments = [_value(v, f"arguments/{i}") for i, v in enumerate(arg_list(args, "arguments") or [])]
    else:
        entry = int(arg_str(args, "start", ""), 16)  # start and end: required by the schema
        until = int(arg_str(args, "end", ""), 16)
        end = _hex(until)
        name = _name_at(call, target, entry)
    # An odd ARM address is Thumb code (the symbol's low bit), run from the even address.
    thumb = target.architecture == "arm" and bool(entry & 1)
    plan = Plan(
        image=image,
        arch=target.architecture or "",
        mode=mode,
        limits=limits,
        entry=entry & ~1 if thumb else entry,
        thumb=thumb,
        until=until,
        import_returns={str(k): _integer(v, f"import_returns/{k}") for k, v in returns.items()},
        registers={k.lower(): _value(v, f"registers/{k}") for k, v in registers.items()},
        arguments=arguments,
    )
    verify_unchanged(target, ctx=call.ctx)
    run = _run(call, plan)
    ran = msgspec.structs.asdict(run)
    stop = run.stop
    if stop.reason not in ("returned",) and stop.pc.startswith("0x"):
        pc = int(stop.pc, 16)
        if any(s.start <= pc < s.end for s in image.segments):
            ran["stop"] = msgspec.structs.replace(stop, procedure=_name_at(call, target, pc))
    result = Emulation(
        **ran,
        procedure=name,
        start=_hex(plan.entry),
        end=end,
        limits=Limits(
            max_instructions=limits.max_instructions,
            timeout_ms=limits.timeout_ms,
            max_memory_bytes=limits.max_memory_bytes,
            stack_bytes=limits.stack_bytes,
            heap_bytes=limits.heap_bytes,
        ),
        engine=f"unicorn {unicorn_version()}",
    )
    limitations = [
        "Only the binary's own image is loaded: imports are stubbed (memcpy, memset, strlen, malloc/free and a few "
        "more modelled; others return import_returns or stop), system calls stop the run.",
        "Thread-local storage and the stack canary read zeros; global state is the file's initial data.",
    ]
    parameters = {k: v for k, v in args.items()}
    return call.session.evidence(
        call.tool.name,
        parameters,
        OperationResult(normalized=result, limitations=limitations, confidence="observed"),
        bound=False,
        target=target,
        provider=ProviderIdentity(id="unicorn", name="Unicorn", version=unicorn_version()),
        analysis_profile=None,
    )


def _procedure(call: ToolCall) -> Evidence:
    return _emulate(call, "procedure")


def _range(call: ToolCall) -> Evidence:
    return _emulate(call, "range")


# A pure query: the guest runs only inside the emulator (its worker is rea's own engine process, as angr's is).
_EFFECTS = ToolEffects(records_evidence=True, idempotent=True)


def _tool(
    name: str,
    title: str,
    description: str,
    input_schema: JSONObject,
    handler: Callable[[ToolCall], Evidence],
    operations: tuple[str, ...],
    examples: tuple[Arguments, ...],
    cli_subject: str = "",
) -> ToolDef:
    """One emulation tool: run code of the open binary, answered as an Emulation."""
    return ToolDef(
        result_type=Emulation,
        name=name,
        family="emulation",
        toolset=TOOLSET,
        title=title,
        description=description,
        input_schema=input_schema,
        handler=handler,
        requires_target=True,
        requires_operations=operations,
        effects=_EFFECTS,
        cli_subject=cli_subject,
        examples=examples,
    )


EMULATE_PROCEDURE = _tool(
    "emulate_procedure",
    "Emulate Procedure",
    "Run one procedure of the open binary (x86-64, x86, AArch64, ARM) under an emulator (Unicorn) with "
    "arguments by its calling convention, and say what it returned, wrote and called. Buffers are passed by "
    "pointer and shown after the run, imports are stubbed (memcpy, strlen, malloc/free... modelled; others "
    "return import_returns or stop), and the run is bounded by instructions, time and memory.",
    PROCEDURE_SCHEMA,
    _procedure,
    ("list_segments", "list_procedures", "procedure_address"),
    (
        {"procedure": "checksum", "arguments": [{"text": "hello"}, 5]},
        {"procedure": "decrypt", "arguments": [{"size": 64}, {"address": "0x2004"}, 11, 67]},
    ),
    cli_subject="procedure",
)

EMULATE_RANGE = _tool(
    "emulate_range",
    "Emulate Range",
    "Run the code of the open binary from start until it reaches end, from the registers given, under an "
    "emulator (Unicorn), and return the registers, the memory written and the imports called. Same stubs and "
    "bounds as emulate_procedure.",
    RANGE_SCHEMA,
    _range,
    ("list_segments", "list_procedures"),
    ({"start": "0x401130", "end": "0x401150", "registers": {"rdi": {"text": "key"}, "rsi": 3}},),
)
