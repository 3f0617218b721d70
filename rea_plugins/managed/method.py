"""inspect_managed_method: one method as text, its IL with every name resolved.

No maintained C# decompiler runs on this host: ICSharpCode.Decompiler (ILSpy's engine) is packaged by neither
Debian nor PyPI or npm, the registries rea installs from. So the view is the method's IL, written for a reader:
its signature with parameter names, its locals with their types, its exception regions, and each instruction with
its operand named (a call by the member's signature key, a field by its key, a string by its text, an argument by
its parameter name, a local by its type, a branch by its target label). ``language`` says which it is.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import msgspec
from dncil.cil.body import CilMethodBody  # type: ignore[import-untyped]
from dncil.cil.error import MethodBodyFormatError  # type: ignore[import-untyped]
from dncil.cil.opcode import OperandType  # type: ignore[import-untyped]
from dncil.clr.argument import Argument  # type: ignore[import-untyped]
from dncil.clr.local import Local  # type: ignore[import-untyped]
from dncil.clr.token import Token  # type: ignore[import-untyped]

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import ToolCall
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.managed import common
from rea_plugins.managed import il
from rea_plugins.managed import members
from rea_plugins.managed import reader
from rea_plugins.managed import references
from rea_plugins.managed import sites
from rea_plugins.managed.model import METHOD_OPERATION
from rea_plugins.managed.model import SCHEMA_VERSION
from rea_plugins.managed.model import Handler
from rea_plugins.managed.model import HandlerKind
from rea_plugins.managed.model import MethodView
from rea_plugins.managed.reader import Image
from rea_plugins.managed.reader import token_text

DEFAULT_LIMIT = 400
MAX_BODY_BYTES = 1 << 24
MAX_OPERAND_CHARS = 200
SUGGESTIONS = 10
NO_DECOMPILER = (
    "IL, not C#: no maintained C# decompiler runs on this host (ICSharpCode.Decompiler is packaged by neither "
    "Debian nor PyPI or npm). Operands are named; a C# reading made elsewhere can be recorded with "
    "import_managed_reconstruction."
)
_TOKEN = re.compile(r"^0x06[0-9a-fA-F]{6}$")
_SHORT = re.compile(r"^(ldarg|ldloc|stloc)\.(\d)$")


def find(image: Image, wanted: str) -> tuple[int, list[str]]:
    """The method ``wanted`` names (a token, a key, or Type::Name) and the other overloads the name matched."""
    text = wanted.strip()
    count = len(image.rows("MethodDef"))
    if _TOKEN.match(text):
        rid = int(text, 16) & 0xFFFFFF
        if 0 < rid <= count:
            return rid, []
    else:
        keys = [(rid, image.method_key(rid)) for rid in range(1, count + 1)]
        exact = [rid for rid, key in keys if key == text]
        if exact:
            return exact[0], []
        name = text.split("::")[-1].split("(", 1)[0]
        if "::" in text:
            match = references.name_matcher(text)
            hits = [key for _, key in keys if match(key)]
        else:  # a method's name alone
            hits = [key for _, key in keys if _member(key) == name]
        if hits:
            return next(rid for rid, key in keys if key == hits[0]), hits[1:]
        near = [key for _, key in keys if _member(key).lower() == name.lower()]
        message = f"no method {text} in {image.assembly_name()}"
        if near:
            message += "; methods of that name: " + "; ".join(near[:SUGGESTIONS])
        raise invalid_request(message, [issue("method", "invalid_value", message, candidates=near[:SUGGESTIONS])])
    message = f"no method with token {text} in {image.assembly_name()}"
    raise invalid_request(message, [issue("method", "invalid_value", message)])


def _member(key: str) -> str:
    return key.split("::", 1)[-1].split("(", 1)[0].split("<", 1)[0]


def _param_names(image: Image, rid: int) -> dict[int, str]:
    row = image.row("MethodDef", rid)
    names: dict[int, str] = {}
    for index in (row.ParamList or []) if row is not None else []:
        param = image.row("Param", reader._rid(index))
        if param is not None and int(param.Sequence or 0) > 0:
            names[int(param.Sequence)] = image.text(param, "Name", "Param")
    return names


def _short(text: str) -> str:
    return text if len(text) <= MAX_OPERAND_CHARS else text[: MAX_OPERAND_CHARS - 1] + "…"


class _Names:
    """How one method's operands read: its arguments by name, its locals by type, its tokens by what they name."""

    def __init__(self, image: Image, rid: int, static: bool, local_types: list[str]) -> None:
        self.image = image
        sig = image.method_sig(rid)
        names = _param_names(image, rid)
        types = sig[1] if sig else []
        self.args = [] if static else ["this"]
        self.args += [names.get(i) or f"A_{i}" for i in range(1, len(types) + 1)]
        self.locals = local_types

    def arg(self, index: int) -> str:
        return self.args[index] if 0 <= index < len(self.args) else f"A_{index}"

    def local(self, index: int) -> str:
        kind = self.locals[index] if 0 <= index < len(self.locals) else "?"
        return f"V_{index} ({kind})"

    def token(self, value: int) -> str:
        image = self.image
        table, rid = value >> 24, value & 0xFFFFFF
        name = image.token_name(value)
        if table == 0x06 and (sig := image.method_sig(rid)) is not None:
            return f"{sig[0]} {name}"
        if table == 0x0A:
            key, text = image.member_ref(rid)
            if "(" in key and text != reader.UNREADABLE:
                return f"{text.split(' ', 1)[0]} {key}"
        if table == 0x04:
            return f"{image.field_type(rid)} {name}"
        return name


def _operand(names: _Names, insn: Any, base: int) -> str:
    name = str(insn.opcode.name)
    value = insn.operand
    short = _SHORT.match(name)
    if short:
        index = int(short.group(2))
        return names.arg(index) if short.group(1) == "ldarg" else names.local(index)
    if value is None:
        return ""
    kind = insn.opcode.operand_type
    if kind in (OperandType.InlineBrTarget, OperandType.ShortInlineBrTarget):
        return f"IL_{int(value) - base:04x}"
    if isinstance(value, list):
        return "(" + ", ".join(f"IL_{int(v) - base:04x}" for v in value) + ")"
    if isinstance(value, Token):
        return _short(names.token(int(value.value)))
    if isinstance(value, Argument):
        return names.arg(int(value.index))
    if isinstance(value, Local):
        return names.local(int(value.index))
    return repr(value)


def _handlers(image: Image, body: Any) -> list[Handler]:
    out = []
    for eh in body.exception_handlers:
        kind: HandlerKind = (
            "catch" if eh.is_catch() else "filter" if eh.is_filter() else "finally" if eh.is_finally() else "fault"
        )
        catch = image.token_name(int(eh.catch_type.value)) if eh.is_catch() and eh.catch_type is not None else None
        out.append(
            Handler(
                kind=kind,
                try_start=int(eh.try_start),
                try_end=int(eh.try_end),
                handler_start=int(eh.handler_start),
                handler_end=int(eh.handler_end),
                catch_type=catch,
            )
        )
    return out


def render(image: Image, rid: int, args: Arguments) -> tuple[MethodView, list[str]]:
    row = image.required("MethodDef", rid)
    key = image.method_key(rid)
    flags = reader.member_flags(int(row.struct.Flags), method=True)
    signature = members.signature_text(image, rid)
    owner = common.owner_of(key)
    offset, limit = common.window(args, "", DEFAULT_LIMIT)
    header = [f"// {key}  token {token_text(0x06000000 | rid)}", f".method {' '.join(flags)} {signature}"]
    limitations = [NO_DECOMPILER]
    rva = int(row.Rva or 0)
    bound = min(arg_int(args, "max_method_body_bytes", 1 << 20), MAX_BODY_BYTES)

    def view(status: Any, lines: list[str], **extra: Any) -> MethodView:
        return MethodView(
            schema_version=SCHEMA_VERSION,
            method=key,
            token=token_text(0x06000000 | rid),
            declaring_type=owner,
            signature=signature,
            flags=flags,
            language="il",
            body_status=status,
            body_size=extra.get("body_size"),
            il_sha256=extra.get("il_sha256"),
            locals=extra.get("locals", []),
            handlers=extra.get("handlers", []),
            instructions=extra.get("instructions", 0),
            offset=offset,
            text="\n".join(lines),
            next_offset=extra.get("next_offset"),
        )

    start = image.file_offset(rva) if rva else None
    if not rva:
        why = "pinvoke: the body is native code" if "pinvoke" in flags else "abstract, extern or runtime-provided"
        return view("none", [*header, f"// no IL body ({why})"]), limitations
    if start is None:
        return view("malformed", [*header, "// the body's RVA is outside the file"]), limitations
    try:
        body = CilMethodBody(il._Reader(memoryview(image.data)[start : start + bound + 12]))
    except (MethodBodyFormatError, ValueError, IndexError, KeyError, TypeError, AttributeError, OverflowError):
        return view("malformed", [*header, "// the body does not decode"]), limitations
    if body.code_size > bound:
        return view("too-large", [*header, f"// {body.code_size} bytes of IL, over max_method_body_bytes"]), limitations
    base = body.header_size
    local_tok = int(body.local_var_sig_tok.value) if body.local_var_sig_tok is not None else None
    local_types = image.local_types(local_tok, rid)
    names = _Names(image, rid, "static" in flags, local_types)
    handlers = _handlers(image, body)
    lines = list(header)
    if local_types:
        lines.append(".locals (" + ", ".join(f"{t} V_{i}" for i, t in enumerate(local_types)) + ")")
    for h in handlers:
        what = f"catch {h.catch_type}" if h.catch_type else h.kind
        lines.append(
            f".try IL_{h.try_start:04x} to IL_{h.try_end:04x} {what} IL_{h.handler_start:04x} to IL_{h.handler_end:04x}"
        )
    insns = body.instructions
    starts = {h.try_start: "try {" for h in handlers} | {
        h.handler_start: (f"catch {h.catch_type} {{" if h.catch_type else f"{h.kind} {{") for h in handlers
    }
    for insn in insns[offset : offset + limit]:
        at = int(insn.offset) - base
        if at in starts:
            lines.append(f"          // {starts[at]}")
        operand = _operand(names, insn, base)
        # A short form's argument or local is implied by the opcode: its name reads as a comment.
        glue = " // " if _SHORT.match(str(insn.opcode.name)) else " "
        lines.append(f"IL_{at:04x}: {insn.opcode.name}" + (f"{glue}{operand}" if operand else ""))
    end = offset + limit
    il_bytes = body.raw_bytes[base : base + body.code_size]
    return (
        view(
            "ok",
            lines,
            body_size=body.code_size,
            il_sha256=hashlib.sha256(il_bytes).hexdigest(),
            locals=local_types,
            handlers=handlers,
            instructions=len(insns),
            next_offset=end if end < len(insns) else None,
        ),
        limitations,
    )


@common.guarded
def handle(call: ToolCall) -> Evidence:
    with sites.opened(call) as (target, image, _):
        rid, others = find(image, arg_str(call.args, "method", ""))  # required by the schema
        result, limitations = render(image, rid, call.args)
    if others:
        result = msgspec.structs.replace(result, overloads=others[: SUGGESTIONS * 2])
        limitations.append(f"The name matches {len(others) + 1} methods: this is the first; overloads lists the rest.")
    call.ctx.finish(f"{result.method}: {result.instructions} instructions")
    return common.static_evidence(call, METHOD_OPERATION, target, result, limitations)
