"""The analyst's C types in Ghidra: the library into the program's ``DataTypeManager`` (``CParser``) and
prototypes through ``ApplyFunctionSignatureCmd``, before the decompiler runs.

The binary tool family sends a pseudo-code request ``types`` (the library in dependency order, and C
prototypes by address). They are applied in one transaction of the worker's program; a later request
with other types (or none) puts back the signatures they replaced. What Ghidra refuses is reported in
the raw result, never fatal.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def key_of(types: Any) -> str:
    if not types:
        return ""
    return hashlib.sha256(json.dumps(types, sort_keys=True).encode()).hexdigest()


def _stdint(pointer_size: int) -> str:
    """The stdint names rea's library may use, for Ghidra's C parser (which has no stdint.h)."""
    word = "long long" if pointer_size == 8 else "int"
    pairs = (
        ("signed char", "int8_t"),
        ("unsigned char", "uint8_t"),
        ("short", "int16_t"),
        ("unsigned short", "uint16_t"),
        ("int", "int32_t"),
        ("unsigned int", "uint32_t"),
        ("long long", "int64_t"),
        ("unsigned long long", "uint64_t"),
        (word, "intptr_t"),
        ("unsigned " + word, "uintptr_t"),
        (word, "ssize_t"),
        (word, "ptrdiff_t"),
        ("unsigned " + word, "size_t"),
    )
    return "".join(f"typedef {t} {n};\n" for t, n in pairs)


class Applied:
    """The set of types applied to one program, and the signatures they replaced (to put back)."""

    def __init__(self) -> None:
        self.key = ""
        self.saved: dict[int, tuple[Any, Any]] = {}
        self.problems: list[str] = []

    def apply(self, source: Any, types: Any) -> tuple[bool, list[str]]:
        """Apply ``types`` to ``source.program``; returns (whether anything changed, the problems met)."""
        key = key_of(types)
        if key == self.key:
            return False, self.problems
        from ghidra.app.cmd.function import ApplyFunctionSignatureCmd  # type: ignore[import-not-found]
        from ghidra.app.util.cparser.C import CParser  # type: ignore[import-not-found]
        from ghidra.program.model.symbol import SourceType  # type: ignore[import-not-found]

        program = source.program
        functions = program.getFunctionManager()
        tx = program.startTransaction("rea: the analyst's types")
        committed = False
        problems: list[str] = []
        try:
            for at, (signature, kind) in self.saved.items():
                f = functions.getFunctionAt(source.addr(at))
                if f is not None and signature is not None:
                    ApplyFunctionSignatureCmd(source.addr(at), signature, kind).applyTo(program, source.monitor)
            self.saved.clear()
            if types:
                parser = CParser(program.getDataTypeManager(), True, None)
                try:
                    parser.parse(_stdint(int(program.getDefaultPointerSize())))
                except Exception as exc:  # a name the program already defines differently: keep going
                    problems.append(f"Ghidra's C parser refused the stdint names: {str(exc)[:160]}")
                for decl in types.get("declarations") or []:
                    try:
                        parser.parse(str(decl))
                    except Exception as exc:
                        problems.append(f"Ghidra's C parser refused {str(decl)[:60]!r}: {str(exc)[:160]}")
                for address, proto in sorted((types.get("prototypes") or {}).items()):
                    at = int(address, 16)
                    f = functions.getFunctionAt(source.addr(at))
                    if f is None:
                        continue
                    try:
                        signature = parser.parse(str(proto).rstrip(";") + ";")
                    except Exception as exc:
                        problems.append(f"Ghidra's C parser refused the prototype at {address}: {str(exc)[:160]}")
                        continue
                    self.saved.setdefault(at, (f.getSignature(), f.getSignatureSource()))
                    cmd = ApplyFunctionSignatureCmd(source.addr(at), signature, SourceType.USER_DEFINED)
                    if not cmd.applyTo(program, source.monitor):
                        problems.append(f"Ghidra did not apply the prototype at {address}: {cmd.getStatusMsg()}")
            committed = True
        finally:
            program.endTransaction(tx, committed)
        self.key, self.problems = key, problems
        return True, problems
