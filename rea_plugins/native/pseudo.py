"""``procedure_pseudo_code`` for the native provider: one procedure's decompiled C, named (``csource``)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

import msgspec

from rea.plugin import Arguments
from rea.plugin import CallContext
from rea.plugin import DataFlow
from rea.plugin import FlowStep
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import PseudoCode
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import arg_object
from rea.plugin import arg_strs
from rea.plugin import hexa
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import no_code_here
from rea.plugin import parse_address
from rea_plugins.native import csource
from rea_plugins.native import decompile
from rea_plugins.native.decompile_worker import Decompiled

if TYPE_CHECKING:
    from rea_plugins.native.program import Proc
    from rea_plugins.native.provider import NativeClient

LIMITATION = (
    "Pseudo code is Ghidra's decompiler (flatline) over native's load image: a reading aid, not compilable source; "
    "names, strings and declared prototypes are applied to its text by address."
)
_LP64 = ("elf", "mach-o", "mach-o-universal")


class BatchItem(Record):
    """One selector's outcome in procedure_pseudo_code_batch: its pseudo code, or its typed error."""

    procedure: str
    status: str
    # The typed error's projection and the pseudo code's answer, as every operation's answer is read: JSON objects.
    error: JSONObject | msgspec.UnsetType = msgspec.UNSET
    result: JSONObject | msgspec.UnsetType = msgspec.UNSET


class Batch(Record):
    items: list[BatchItem]


def pseudo_code(client: NativeClient, params: Arguments, ctx: CallContext) -> OperationResult:
    if not decompile.engine().available:
        raise decompile.unavailable()
    p = _local(client, params)
    out = client.decompiler().decompiled(p, ctx)
    if out.text is None:
        raise decompile.failure(out, p)
    return render(client, p, out, params)


def _local(client: NativeClient, params: Arguments) -> Proc:
    with client._lock:
        client.program.check_unchanged()
        p = client.ops.proc(params)
    if p.kind in ("import", "external"):
        raise no_code_here(p.name, p.address, p.kind)
    return p


def batch(client: NativeClient, params: Arguments, ctx: CallContext) -> OperationResult:
    """``params["procedures"]`` decompiled on every decompile worker at once: an item per selector, in order, each
    ``ok`` with its pseudo code or ``error`` with its typed error."""
    given = params.get("procedures")
    if not isinstance(given, list) or not all(isinstance(s, str) for s in given):
        raise ReaError("invalid_request", "procedures must be a list of procedure names or addresses")
    selectors = [s for s in given if isinstance(s, str)]  # every one, as checked
    found: list[Proc | ReaError] = []
    for sel in selectors:
        try:
            found.append(_local(client, {"procedure": sel}))
        except ReaError as exc:
            found.append(exc)
    procs = list({f.address: f for f in found if not isinstance(f, ReaError)}.values())
    done: dict[int, Decompiled | ReaError] = {}
    total = len(procs)

    def heard(p: Proc, result: Decompiled | ReaError) -> None:
        done[p.address] = result
        ctx.progress(f"batch_decompile: {len(done)} of {total} done", done=len(done), total=total)

    if not decompile.engine().available:  # each item says so (the unknown selectors keep their own error)
        missing = decompile.unavailable()
        for p in procs:
            done[p.address] = missing
    else:
        ctx.progress(f"batch_decompile: 0 of {total} done", done=0, total=total)
        client.decompiler().many(procs, ctx, heard)
    items: list[BatchItem] = []
    for sel, chosen in zip(selectors, found, strict=True):
        result: Decompiled | ReaError = chosen if isinstance(chosen, ReaError) else done[chosen.address]
        if isinstance(chosen, ReaError) or isinstance(result, ReaError):
            error = chosen if isinstance(chosen, ReaError) else result
            assert isinstance(error, ReaError)
            items.append(BatchItem(procedure=sel, status="error", error=error.projection_dict()))
        elif result.text is None:
            failed = decompile.failure(result, chosen).projection_dict()
            items.append(BatchItem(procedure=sel, status="error", error=failed))
        else:
            shown = render(client, chosen, result, params).normalized
            items.append(BatchItem(procedure=sel, status="ok", result=shown))
    return OperationResult(normalized=msgspec.to_builtins(Batch(items=items)), limitations=[LIMITATION])


def render(client: NativeClient, p: Proc, out: Decompiled, params: Arguments) -> OperationResult:
    """The engine's output for ``p`` as the operation's result, named from native and the notebook."""
    program = client.program
    limitations = [LIMITATION]
    proto: csource.Prototype | None = None
    types = params.get("types")
    if isinstance(types, dict):  # the analyst's types (annotate.for_engine): declarations and prototypes
        text = (arg_object(types, "prototypes") or {}).get(hexa(p.address) or "")
        if isinstance(text, str):
            try:
                declarations = arg_strs(types, "declarations") or []
                proto = csource.prototype(text, declarations, program.model.format, program.model.arch)
                limitations.append("the analyst's prototype replaces the signature; struct fields by declared offset")
            except ReaError as exc:
                limitations.append(f"the declared prototype was not applied: {exc.message}")
    with client._lock:
        strings: dict[int, str] = {}
        for ref in program.instruction_refs(p):
            if ref.dst is not None and ref.dst not in strings:
                found = _string(program, ref.dst)
                if found is not None:
                    strings[ref.dst] = found
        names = csource.Names(_name_at(program), dict(program.import_slots), strings, _slot_target(program))
        text = csource.rewrite(
            out, p.name, p.address, names, program.model.format in _LP64 and program.pointer == 8, proto
        )
    if not out.complete:
        limitations.append("the decompiler reports this function incomplete")
    limitations.extend(f"decompiler: {w}" for w in out.warnings[:10])
    shape = PseudoCode(
        address=hex(p.address), name=p.name, language="c", text=text, decompiler=_decompiler(), dialect="ghidra"
    )
    # A plain value, as every operation answers: the notebook layer rewrites names in it (annotate.apply).
    return OperationResult(normalized=msgspec.to_builtins(shape), limitations=limitations)


def at(client: NativeClient, params: Arguments, ctx: CallContext) -> OperationResult:
    """``decompile_at``: the code at ``params["address"]`` decompiled as a function, whether or not native knows a
    procedure starting there (a reverser's "make function here"); ``end`` bounds it where given."""
    if not decompile.engine().available:
        raise decompile.unavailable()
    address = parse_address(params.get("address"))
    end = parse_address(params["end"], "end") if params.get("end") is not None else None
    if end is not None and end <= address:
        raise invalid_request("end must be above address", [issue("end", "out_of_range", "an address above address")])
    program = client.program
    with client._lock:
        program.check_unchanged()
        known = program.procedure(address)
        if known is None and program.code_region_at(address) is None:
            raise invalid_request(
                f"{address:#x} is not in a file-backed code region",
                [issue("address", "invalid_value", "an address inside code (list_segments shows them)")],
            )
    if known is not None and end is None:
        p = known
    else:
        from rea_plugins.native.index import Proc

        name = known.name if known is not None else program.name_at(address) or f"sub_{address:x}"
        p = Proc(address, name, "local", end, "user")
    out = client.decompiler().decompiled(p, ctx)
    if out.text is None:
        raise decompile.failure(out, p)
    result = render(client, p, out, params)
    if known is None:
        result.limitations.append(f"no procedure of native's starts at {address:#x}: decompiled as one from there")
    return result


_PRINTABLE = frozenset(range(0x20, 0x7F)) | {0x09, 0x0A, 0x0D}


def _string(program: Any, address: int) -> str | None:
    """The C string an instruction's reference to ``address`` names, as ``csource.Names`` keeps it (``"text``, or
    ``u"text`` for UTF-16): native's string starting there, else NUL-ended printable bytes in read-only data (a
    string shorter than the scan's minimum, or the tail of a longer one that the linker merged: "coreutils" inside
    "GNU coreutils")."""
    item = program.string_at(address)
    if item is not None and item.address == address:
        # A UTF-16 string reads as C's u"..." literal (its own prefix marks it for the rewrite).
        return ("u" if item.encoding == "utf-16le" else "") + '"' + str(program.string_value(item)[0])
    region = program.region_at(address)
    if region is None or "w" in region.perms or "x" in region.perms:
        return None
    raw: bytes | None = program.read(address, 256) or program.read(address, 16)
    if not raw:
        return None
    end = raw.find(0)
    if end < 1 or any(b not in _PRINTABLE for b in raw[:end]):
        return None
    return '"' + raw[:end].decode("ascii")


_SLOT_SECTIONS = (".got", ".got.plt", ".idata", "__got", "__la_symbol_ptr", "__auth_got")


def _slot_target(program: Any) -> Any:
    """The function a GOT (or IAT) slot holds once relocated, by native's pointer slots; None for other memory (a
    writable datum's first value is not what it holds when the code runs)."""

    def target(address: int) -> str | None:
        region = program.region_at(address)
        if region is None or region.name not in _SLOT_SECTIONS:
            return None
        local = program.an.local_slots.get(address)  # bound to a symbol this binary defines (GLOB_DAT, JUMP_SLOT)
        if local is not None:
            return str(local[0])
        value = program.pointer_slot(address)
        if value is None:
            return None
        p = program.procedure(value)
        return p.name if p is not None else None

    return target


def _name_at(program: Any) -> Any:
    def name_at(address: int) -> str | None:
        return program.name_at(address)  # type: ignore[no-any-return]

    return name_at


def _decompiler() -> str:
    e = decompile.engine()
    return f"{decompile.DECOMPILER_NAME} {e.flatline}" if e.flatline else decompile.DECOMPILER_NAME


# SLEIGH register-space offsets of the registers a data-flow step names (x86-64 and AArch64 general purpose);
# another register reads as reg:<offset>.
_X86_64 = ("RAX", "RCX", "RDX", "RBX", "RSP", "RBP", "RSI", "RDI")
_REGISTERS: dict[str, dict[int, str]] = {
    "x86_64": {
        **{8 * i: n for i, n in enumerate(_X86_64)},
        **{0x80 + 8 * i: f"R{8 + i}" for i in range(8)},
    },
    "arm64": {0x4000 + 8 * i: f"x{i}" for i in range(31)},
}
MAX_FLOW_OPS = 1000


def data_flow(client: NativeClient, params: Arguments, ctx: CallContext) -> OperationResult:
    """``procedure_data_flow``: where argument ``argument`` of the call at ``site`` comes from, inside the function:
    the decompiler's p-code ops that define it, breadth first (its SSA after simplification), and the values they
    start from (constants, named data, the function's inputs)."""
    if not decompile.engine().available:
        raise decompile.unavailable()
    p = _local(client, params)
    site = parse_address(params.get("site"), "site")
    argument = params.get("argument", 0)
    max_ops = params.get("max_nodes", 64)
    if not isinstance(argument, int) or isinstance(argument, bool) or argument < 0:
        raise invalid_request("argument must be a 0-based index", [issue("argument", "invalid_value", "0, 1, ...")])
    if not isinstance(max_ops, int) or isinstance(max_ops, bool) or not 1 <= max_ops <= MAX_FLOW_OPS:
        raise invalid_request(
            f"max_nodes must be 1 to {MAX_FLOW_OPS}", [issue("max_nodes", "out_of_range", f"1 to {MAX_FLOW_OPS}")]
        )
    flow = client.decompiler().flow(p, site, argument, max_ops, ctx)
    if flow.error is not None:
        raise decompile.failure(Decompiled(text=None, error=flow.error, reason=flow.reason), p)
    if not flow.found:
        raise invalid_request(
            f"no call at {site:#x} in {p.name} with an argument {argument}"
            + (f" (the decompiler gives it {flow.arguments})" if flow.calls_at_site else ""),
            [issue("site", "invalid_value", "the address of a call instruction in the procedure", value=hex(site))],
        )
    program = client.program
    regs = _REGISTERS.get(program.model.arch, {})
    with client._lock:
        texts = [_varnode(program, regs, v) for v in flow.varnodes]
    # A LOAD's or STORE's first input is the address space's identifier (an engine pointer), not a value.
    spaced = [op.inputs[1:] if op.opcode in ("LOAD", "STORE") else op.inputs for op in flow.ops]
    sources = sorted(
        {texts[i] for ins in spaced for i in ins if flow.varnodes[i].constant or flow.varnodes[i].input}
        | {texts[i] for ins in spaced for i in ins if flow.varnodes[i].space == "ram"}
    )
    if flow.value is not None and not flow.ops:
        sources = [texts[flow.value]]
    steps = [
        FlowStep(
            depth=op.depth,
            address=hex(op.address),
            opcode=op.opcode,
            output=texts[op.output] if op.output is not None else None,
            inputs=(["ram"] if len(ins) < len(op.inputs) else []) + [texts[i] for i in ins],
        )
        for op, ins in zip(flow.ops, spaced, strict=True)
    ]
    normalized = DataFlow(
        address=hex(p.address),
        name=p.name,
        site=hex(site),
        argument=argument,
        arguments=flow.arguments,
        value=texts[flow.value] if flow.value is not None else "",
        steps=steps,
        sources=sources,
        truncated=flow.truncated,
    )
    limitations = [
        "Steps are the decompiler's p-code after simplification (its SSA), inside this function only; a value from "
        "memory is where the flow leaves it."
    ]
    return OperationResult(normalized=msgspec.to_builtins(normalized), limitations=limitations)


# Address spaces whose offsets are the decompiler's own pointers, not addresses of the program.
_HANDLE_SPACES = frozenset({"fspec", "iop"})


def _varnode(program: Any, regs: dict[int, str], v: Any) -> str:
    """One varnode as a step shows it: a constant (with the string or name at that address), a register, memory."""
    if v.constant:
        text = f"{v.offset:#x}"
        if v.offset >= 0x1000:
            found = _string(program, v.offset)
            if found is not None:
                prefix, _, body = found.partition('"')
                return f"{text} {prefix}{csource.c_literal(body)}"
            name = program.name_at(v.offset)
            if name:
                return f"{text} ({name})"
        return text
    if v.space == "register":
        name = regs.get(v.offset, f"reg:{v.offset:#x}")
        text = f"{name}:{v.size}" if name in regs.values() and v.size != program.pointer else name
    elif v.space == "ram":
        name = program.name_at(v.offset)
        text = f"[{v.offset:#x}{' ' + name if name else ''}]"
    elif v.space == "stack":
        signed = v.offset - (1 << 64) if v.offset >= 1 << 63 else v.offset
        text = f"stack[{signed:#x}]"
    elif v.space in _HANDLE_SPACES:
        # A CALL's callee spec (fspec) or an INDIRECT's causing op (iop): the offset is a pointer inside the
        # decompiler, different in every run, so only the space is shown (the answer, and its Evidence id, stay
        # the same from run to run).
        text = v.space
    else:  # the decompiler's temporaries (its unique space)
        text = f"{'tmp' if v.space == 'unique' else v.space}:{v.offset:#x}"
    return f"{text} (input)" if v.input else text


HANDLERS = {
    "procedure_pseudo_code": pseudo_code,
    "procedure_pseudo_code_batch": batch,
    "pseudo_code_at": at,
    "procedure_data_flow": data_flow,
}
