"""Method bodies decoded by dncil, their operands named through the metadata, and their hashes."""

from __future__ import annotations

import hashlib
from typing import Any
from typing import Literal

from dncil.cil.body import CilMethodBody  # type: ignore[import-untyped]
from dncil.cil.body.reader import CilMethodBodyReaderBase  # type: ignore[import-untyped]
from dncil.cil.error import MethodBodyFormatError  # type: ignore[import-untyped]
from dncil.cil.opcode import OperandType  # type: ignore[import-untyped]
from dncil.clr.argument import Argument  # type: ignore[import-untyped]
from dncil.clr.local import Local  # type: ignore[import-untyped]
from dncil.clr.token import Token  # type: ignore[import-untyped]

from rea_plugins.managed.model import Instruction
from rea_plugins.managed.reader import Image

CALL_OPCODES = frozenset({"call", "callvirt", "newobj"})
BodyStatus = Literal["ok", "none", "malformed", "too-large", "truncated"]


class Body:
    """One method's decoded body: hashes, the instruction list with named operands."""

    def __init__(
        self,
        status: BodyStatus,
        code_size: int | None = None,
        il_sha256: str | None = None,
        instructions: list[Instruction] | None = None,
        instructions_sha256: str | None = None,
    ) -> None:
        self.status = status
        self.code_size = code_size
        self.il_sha256 = il_sha256
        self.instructions = instructions or []
        self.instructions_sha256 = instructions_sha256


class _Reader(CilMethodBodyReaderBase):  # type: ignore[misc]
    """A dncil reader over a bounded slice of the file, so a body can never read past ``max_body_bytes``. The slice
    may be a memoryview (a window, not a copy): what dncil reads is handed out as bytes."""

    def __init__(self, data: bytes | memoryview) -> None:
        self.data = data
        self.pos = 0

    def read(self, n: int) -> bytes:
        out = bytes(self.data[self.pos : self.pos + n])
        self.pos += len(out)
        return out

    def tell(self) -> int:
        return self.pos

    def seek(self, loc: int) -> int:
        self.pos = loc
        return loc


def _operand(image: Image, insn: Any, base: int) -> str | None:
    value = insn.operand
    kind = insn.opcode.operand_type
    if value is None:
        return None
    if kind in (OperandType.InlineBrTarget, OperandType.ShortInlineBrTarget):
        return f"IL_{int(value) - base:04x}"
    if isinstance(value, list):
        return "(" + ", ".join(f"IL_{int(v) - base:04x}" for v in value) + ")"
    if isinstance(value, Token):
        return image.token_name(int(value.value))
    if isinstance(value, Local):
        return f"V_{value.index}"
    if isinstance(value, Argument):
        return f"A_{value.index}"
    return repr(value)


def decode(
    image: Image, rva: int, max_body_bytes: int, max_instructions: int, only: frozenset[str] | None = None
) -> Body:
    """Decode the body at ``rva``. A damaged body is a status on the method, never a failed request.

    ``only`` names operands of those opcodes alone (a call-site scan), and then nothing is hashed."""
    if not rva:
        return Body("none")
    start = image.file_offset(rva)
    if start is None:
        return Body("malformed")
    # Header (12) + code + exception sections: a body needing more than the bound stops at the slice's end.
    window = memoryview(image.data)[start : start + max_body_bytes + 12]
    try:
        body = CilMethodBody(_Reader(window))
    except (MethodBodyFormatError, ValueError, IndexError, KeyError, TypeError, AttributeError, OverflowError):
        cut = start + len(window) < len(image.data)
        return Body("too-large" if cut and len(window) >= max_body_bytes else "malformed")
    if body.code_size > max_body_bytes:
        return Body("too-large", code_size=body.code_size)
    il = body.raw_bytes[body.header_size : body.header_size + body.code_size]
    il_sha = hashlib.sha256(il).hexdigest()
    insns = body.instructions
    truncated = len(insns) > max_instructions
    listed = [
        Instruction(
            offset=int(i.offset) - body.header_size,
            opcode=str(i.opcode.name),
            operand=_operand(image, i, body.header_size) if only is None or i.opcode.name in only else None,
        )
        for i in insns[:max_instructions]
    ]
    if truncated or only is not None:
        return Body("truncated" if truncated else "ok", code_size=body.code_size, il_sha256=il_sha, instructions=listed)
    digest = hashlib.sha256()
    for ins in listed:
        # Offsets follow from the opcodes and operands, so they are left out; operands are names, not tokens.
        digest.update(f"{ins.opcode} {ins.operand or ''}\n".encode())
    return Body(
        "ok", code_size=body.code_size, il_sha256=il_sha, instructions=listed, instructions_sha256=digest.hexdigest()
    )
