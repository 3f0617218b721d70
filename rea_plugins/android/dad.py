"""Corrections to androguard's DAD writer, so the decompiled source says what the bytecode does.

Three garblings seen in DAD's output, each fixed where the writer renders it (the decompiler's analysis is kept):

- a catch clause typed from a later reuse of its register (``catch (String v1)``): the handler's type is kept on the
  move-exception expression, and is written instead;
- a float or double literal written as its raw IEEE-754 bits (``x * 4609434218613702656`` for ``x * 1.5``): DAD
  types every ``const``/``const-wide`` as an integer; where the literal meets a float or double (the other operand
  of an arithmetic operator, a parameter, the return value, an assignment), it is written as that number;
- a character outside the Basic Multilingual Plane escaped with five hex digits (``\\u1f600``, not Java): it is
  written as its UTF-16 surrogate pair.
"""

from __future__ import annotations

import math
import struct
from typing import Any

FLOATS = ("F", "D")


def _float_text(bits: int, kind: str) -> str:
    """The Java literal of a float (F) or double (D) given as its bit pattern."""
    if kind == "D":
        value = struct.unpack("<d", struct.pack("<Q", bits & 0xFFFFFFFFFFFFFFFF))[0]
        box, suffix = "Double", ""
        text = repr(value)
    else:
        value = struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]
        box, suffix = "Float", "f"
        # The shortest decimal that reads back as the same float32.
        text = next(
            (
                t
                for p in range(1, 10)
                for t in [f"{value:.{p}g}"]
                if struct.pack("<f", float(t)) == struct.pack("<f", value)
            ),
            repr(value),
        )
    if math.isnan(value):
        return f"{box}.NaN"
    if math.isinf(value):
        return f"{box}.{'POSITIVE' if value > 0 else 'NEGATIVE'}_INFINITY"
    if "." not in text and "e" not in text and "inf" not in text:
        text += ".0"
    return text + suffix


def java_string(s: str) -> str:
    """A Java string literal of ``s``: ASCII kept, the rest as \\uXXXX escapes (surrogate pairs above U+FFFF)."""
    out = ['"']
    for c in s:
        if " " <= c < "\x7f":
            out.append("\\" + c if c in "\"'\\" else c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        else:
            units = c.encode("utf-16-be", "surrogatepass")
            out += [f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2)]
    out.append('"')
    return "".join(out)


def writer_class() -> Any:
    """DAD's Writer with the three corrections above."""
    from androguard.decompiler.instruction import Constant  # type: ignore[import-untyped]
    from androguard.decompiler.writer import Writer  # type: ignore[import-untyped]

    class Literal:
        """A float or double literal standing in for an integer-typed Constant node while it is written."""

        def __init__(self, text: str, kind: str) -> None:
            self.text, self.kind = text, kind

        def visit(self, visitor: Any) -> None:
            visitor.write(self.text, data="CONSTANT_FLOAT")

        def get_type(self) -> str:
            return self.kind

    def typed(node: Any, kind: Any) -> Any:
        if kind in FLOATS and isinstance(node, Constant) and node.get_type() in ("I", "J"):
            return Literal(_float_text(int(node.get_int_value()), kind), kind)
        return node

    def type_of(node: Any) -> Any:
        getter = getattr(node, "get_type", None)
        return getter() if callable(getter) else None

    class DadWriter(Writer):  # type: ignore[misc]
        def visit_move_exception(self, var: Any, data: Any = None) -> None:
            if data is not None and getattr(data, "type", None):
                var.type = data.type
            super().visit_move_exception(var, data)

        def visit_constant(self, cst: Any) -> None:
            if isinstance(cst, str):
                self.write(java_string(cst), data="CONSTANT_STRING")
                return
            super().visit_constant(cst)

        def visit_binary_expression(self, op: Any, arg1: Any, arg2: Any) -> None:
            super().visit_binary_expression(op, typed(arg1, type_of(arg2)), typed(arg2, type_of(arg1)))

        def visit_invoke(self, name: Any, base: Any, ptype: Any, rtype: Any, args: Any, ins: Any) -> None:
            kinds = list(ptype or [])
            args = [typed(a, kinds[i] if i < len(kinds) else None) for i, a in enumerate(args)]
            super().visit_invoke(name, base, ptype, rtype, args, ins)

        def visit_return(self, arg: Any) -> None:
            super().visit_return(typed(arg, self.method.type))

        def visit_assign(self, lhs: Any, rhs: Any) -> None:
            super().visit_assign(lhs, typed(rhs, type_of(lhs)) if lhs is not None else rhs)

    return DadWriter
