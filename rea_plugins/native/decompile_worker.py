"""The decompile worker: Ghidra's decompiler (flatline) in an owned process of its own (``rea.process``).

It is not a route of the parse worker: a decompiler crash, a runaway function or an exhausted address space then
costs one decompile call and a fresh decompile worker, never the parse worker the server's index work shares; and
``batch_decompile`` runs two of these side by side. Routes: ``load`` (a ``LoadJob``: the flat load image of one
file, kept until the next load) and ``decompile`` (a ``DecompileJob`` against that image). flatline is imported
here only; the server never loads it.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any
from typing import Literal

import msgspec

from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import Reporter
from rea.plugin import serve

MAX_FRAME_BYTES = 64 << 20
# A flat image wider than this (sparse segments far apart) is refused rather than allocated.
MAX_IMAGE_BYTES = 1 << 30
INSTALL = (
    "Run `bash scripts/install` from the rea checkout (it selects Python 3.13), or `pip install -e .` from the "
    "checkout under Python >= 3.13: the decompiler (flatline, ghidra-sleigh) installs only there."
)


class Piece(msgspec.Struct, frozen=True, array_like=True):
    """File bytes ``[file_offset, file_offset + size)`` at virtual address ``address``."""

    address: int
    file_offset: int
    size: int


class LoadJob(msgspec.Struct, frozen=True, kw_only=True):
    """One file's load image: its file-backed pieces, and pointer slots to write (relocations applied)."""

    key: str
    path: str
    pieces: list[Piece]
    pointer_size: int
    big_endian: bool = False
    slots: list[tuple[int, int]] = []


class DecompileJob(msgspec.Struct, frozen=True, kw_only=True):
    key: str
    address: int
    language: str
    compiler: str
    size_hint: int | None = None
    max_instructions: int = 100_000


class Decompiled(msgspec.Struct, frozen=True, kw_only=True):
    """What the server rewrites and keeps: the engine's text and the records it names things by."""

    text: str | None
    error: str | None = None  # flatline's error category
    reason: str | None = None  # why, in the engine's words (never an exception's text from Python)
    warnings: list[str] = []
    complete: bool = True
    # (instruction address, callee address or None)
    calls: list[tuple[int, int | None]] = []
    # (name, C type as the engine names it, storage space, offset) for parameters, then locals
    parameters: list[tuple[str, str, str, int]] = []
    locals: list[tuple[str, str, str, int]] = []


class FlowJob(msgspec.Struct, frozen=True, kw_only=True):
    """A backward slice from one call's argument over the decompiler's p-code (``enriched``), in the function."""

    job: DecompileJob
    site: int  # the call instruction's address
    argument: int  # 0-based
    max_ops: int = 64


class Varnode(msgspec.Struct, frozen=True, array_like=True):
    space: str
    offset: int
    size: int
    constant: bool
    input: bool  # a value the function receives (a parameter, or a register read before any write)


class FlowOp(msgspec.Struct, frozen=True, array_like=True):
    depth: int
    address: int
    opcode: str
    output: int | None  # varnode index in Flow.varnodes
    inputs: list[int]


class Flow(msgspec.Struct, frozen=True, kw_only=True):
    found: bool  # a CALL op at the site with that argument
    calls_at_site: int = 0
    arguments: int = 0  # how many arguments the decompiler gives that call
    value: int | None = None  # the argument's varnode
    ops: list[FlowOp] = []
    varnodes: list[Varnode] = []
    truncated: bool = False
    error: str | None = None
    reason: str | None = None


class _State:
    def __init__(self) -> None:
        self.key = ""
        self.image = b""
        self.base = 0
        self.session: Any = None


_STATE = _State()
_LOCK = threading.Lock()


class Loaded(msgspec.Struct, frozen=True, kw_only=True):
    """The ``load`` route's reply: the image's key and its size."""

    loaded: str
    bytes: int


# Each route's ``params`` is the worker protocol's request, JSON the route converts to its job Struct.
def load(params: JSONObject, reporter: Reporter) -> Loaded:
    job = msgspec.convert(params, LoadJob)
    if _STATE.key == job.key:
        return Loaded(loaded=job.key, bytes=len(_STATE.image))
    pieces = [p for p in job.pieces if p.size > 0]
    if not pieces:
        raise ReaError("unsupported_target", "the binary has no file-backed segment to decompile")
    low = min(p.address for p in pieces)
    high = max(p.address + p.size for p in pieces)
    if high - low > MAX_IMAGE_BYTES:
        raise ReaError(
            "resource_constraint",
            f"the load image spans {high - low} bytes, over the decompiler's {MAX_IMAGE_BYTES}",
            details={"resource": "memory", "limit": MAX_IMAGE_BYTES},
        )
    reporter.progress("building the load image")
    image = bytearray(high - low)
    try:
        with open(job.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            for p in sorted(pieces, key=lambda p: p.address):
                n = max(0, min(p.size, size - p.file_offset))
                f.seek(p.file_offset)
                image[p.address - low : p.address - low + n] = f.read(n)
    except OSError:
        raise ReaError("target_unavailable", "the decompile worker could not read the target") from None
    order: Literal["little", "big"] = "big" if job.big_endian else "little"
    mask = (1 << (8 * job.pointer_size)) - 1
    for slot, value in job.slots:
        at = slot - low
        if 0 <= at <= len(image) - job.pointer_size:
            image[at : at + job.pointer_size] = (value & mask).to_bytes(job.pointer_size, order)
    _STATE.key, _STATE.image, _STATE.base = job.key, bytes(image), low
    return Loaded(loaded=job.key, bytes=len(image))


def _session() -> Any:
    if _STATE.session is None:
        try:
            from flatline import DecompilerSession  # type: ignore[import-not-found,import-untyped,unused-ignore]

            _STATE.session = DecompilerSession()
        except (ImportError, OSError):
            raise ReaError(
                "provider_unavailable",
                "the decompiler (flatline) failed to load in the decompile worker",
                remediation=INSTALL,
                details={"provider_id": "native", "component": "decompiler"},
            ) from None
    return _STATE.session


def _c_type(t: Any) -> str:
    return str(t.name)


def decompile(params: JSONObject, reporter: Reporter) -> msgspec.Raw:
    with _LOCK:
        _session()  # a flatline that cannot load is provider_unavailable, before anything is imported from it
    from flatline import AnalysisBudget  # type: ignore[import-not-found,import-untyped,unused-ignore]
    from flatline import DecompileRequest  # type: ignore[import-not-found,import-untyped,unused-ignore]
    from flatline import FlatlineError  # type: ignore[import-not-found,import-untyped,unused-ignore]

    job = msgspec.convert(params, DecompileJob)
    if _STATE.key != job.key:
        # This worker was restarted since the server loaded the image: it loads it again and retries.
        raise ReaError("target_unavailable", "the load image is not loaded", details={"reason": "not_loaded"})
    image, base = _STATE.image, _STATE.base
    if not base <= job.address < base + len(image):
        raise ReaError(
            "invalid_request", f"{job.address:#x} is outside the load image", details={"address": hex(job.address)}
        )
    with _LOCK:
        try:
            result = _session().decompile_function(
                DecompileRequest(
                    memory_image=image,
                    base_address=base,
                    function_address=job.address,
                    language_id=job.language,
                    compiler_spec=job.compiler,
                    function_size_hint=job.size_hint,
                    analysis_budget=AnalysisBudget(max_instructions=job.max_instructions),
                )
            )
        except FlatlineError as exc:
            category = str(getattr(exc, "category", "") or "decompile_failed")
            out = Decompiled(text=None, error=category, reason=_engine_reason(category, str(exc)))
            return msgspec.Raw(msgspec.msgpack.encode(out))
    info = result.function_info
    out = Decompiled(
        text=result.c_code,
        error=result.error.category if result.error is not None else None,
        reason=_engine_reason(result.error.category, result.error.message) if result.error is not None else None,
        warnings=[w.message[:300] for w in result.warnings][:50],
        complete=bool(info.is_complete) if info is not None else False,
        calls=[(c.instruction_address, c.target_address) for c in info.call_sites] if info else [],
        parameters=[
            (p.name, _c_type(p.type), p.storage.space if p.storage else "", p.storage.offset if p.storage else 0)
            for p in info.prototype.parameters
        ]
        if info
        else [],
        locals=[
            (v.name, _c_type(v.type), v.storage.space if v.storage else "", v.storage.offset if v.storage else 0)
            for v in info.local_variables
        ]
        if info
        else [],
    )
    return msgspec.Raw(msgspec.msgpack.encode(out))


# flatline's categories whose messages are the engine's words about the input; the others (internal_error,
# configuration_error) can carry a Python exception's text from flatline's bridge, which rea never shows.
_ENGINE_WORDS = frozenset({"decompile_failed", "invalid_address", "unsupported_target", "invalid_argument"})


def _engine_reason(category: str, message: str) -> str:
    """Why the engine declined, bounded: its own message where it is the engine's, else a fixed sentence."""
    if category in _ENGINE_WORDS and message:
        return " ".join(message.split())[:300]
    return f"the decompiler failed ({category or 'internal'})"


def preload() -> None:
    """Start the decompiler's session (it reads the SLEIGH specs' index) while the worker waits for work."""
    try:
        with _LOCK:
            _session()
    except Exception:  # a decompiler that cannot start is reported by the decompile that needs it
        pass


def data_flow(params: JSONObject, reporter: Reporter) -> msgspec.Raw:
    """Where one call's argument comes from: its defining p-code ops, breadth first, up to ``max_ops``."""
    with _LOCK:
        _session()
    from flatline import AnalysisBudget  # type: ignore[import-not-found,import-untyped,unused-ignore]
    from flatline import DecompileRequest  # type: ignore[import-not-found,import-untyped,unused-ignore]
    from flatline import FlatlineError  # type: ignore[import-not-found,import-untyped,unused-ignore]

    flow = msgspec.convert(params, FlowJob)
    job = flow.job
    if _STATE.key != job.key:
        raise ReaError("target_unavailable", "the load image is not loaded", details={"reason": "not_loaded"})
    with _LOCK:
        try:
            result = _session().decompile_function(
                DecompileRequest(
                    memory_image=_STATE.image,
                    base_address=_STATE.base,
                    function_address=job.address,
                    language_id=job.language,
                    compiler_spec=job.compiler,
                    function_size_hint=job.size_hint,
                    analysis_budget=AnalysisBudget(max_instructions=job.max_instructions),
                    enriched=True,
                )
            )
        except FlatlineError as exc:
            category = str(getattr(exc, "category", "") or "decompile_failed")
            out = Flow(found=False, error=category, reason=_engine_reason(category, str(exc)))
            return msgspec.Raw(msgspec.msgpack.encode(out))
    pcode = result.enriched.pcode if result.enriched is not None else None
    if pcode is None:
        error = result.error.category if result.error is not None else "decompile_failed"
        reason = _engine_reason(error, result.error.message if result.error is not None else "")
        return msgspec.Raw(msgspec.msgpack.encode(Flow(found=False, error=error, reason=reason)))
    ops = {op.id: op for op in pcode.pcode_ops}
    vns = {v.id: v for v in pcode.varnodes}
    calls = [op for op in pcode.pcode_ops if op.opcode in ("CALL", "CALLIND") and op.instruction_address == flow.site]
    call = calls[0] if calls else None
    if call is None or flow.argument + 1 >= len(call.input_varnode_ids):
        out = Flow(
            found=False, calls_at_site=len(calls), arguments=max(0, len(call.input_varnode_ids) - 1) if call else 0
        )
        return msgspec.Raw(msgspec.msgpack.encode(out))
    index: dict[int, int] = {}
    table: list[Varnode] = []

    def vn(vid: int) -> int:
        if vid not in index:
            v = vns[vid]
            index[vid] = len(table)
            table.append(Varnode(v.space, v.offset, v.size, v.flags.is_constant, v.flags.is_input))
        return index[vid]

    start = call.input_varnode_ids[flow.argument + 1]
    value = vn(start)
    out_ops: list[FlowOp] = []
    seen: set[int] = set()
    frontier = [(start, 0)]
    truncated = False
    while frontier:
        vid, depth = frontier.pop(0)
        defining = vns[vid].defining_op_id
        if defining is None or defining in seen:
            continue
        if len(out_ops) >= flow.max_ops:
            truncated = True
            break
        seen.add(defining)
        op = ops[defining]
        out_ops.append(
            FlowOp(
                depth,
                op.instruction_address,
                op.opcode,
                vn(op.output_varnode_id) if op.output_varnode_id is not None else None,
                [vn(i) for i in op.input_varnode_ids],
            )
        )
        frontier.extend((i, depth + 1) for i in op.input_varnode_ids)
    out = Flow(
        found=True,
        calls_at_site=len(calls),
        arguments=len(call.input_varnode_ids) - 1,
        value=value,
        ops=out_ops,
        varnodes=table,
        truncated=truncated,
    )
    return msgspec.Raw(msgspec.msgpack.encode(out))


ROUTES = {"load": load, "decompile": decompile, "data_flow": data_flow}

if __name__ == "__main__":
    threading.Thread(target=preload, name="rea-native-decompiler-preload", daemon=True).start()
    sys.exit(serve(ROUTES, MAX_FRAME_BYTES))
