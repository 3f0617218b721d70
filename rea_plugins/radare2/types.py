"""The analyst's C types in radare2: ``td`` for the type library and ``afs`` for prototypes, before ``pdc``.

radare2 5.7's C type parser takes struct, union and enum declarations; its function signatures do not
resolve typedef names, so a plain typedef (``typedef struct opts opts_t;``) is spelled out in the
prototype given to ``afs``. What radare2 refuses is reported, never fatal: the tool layer shows the
prototype in ``procedure_info`` whatever the engine made of it.
"""

from __future__ import annotations

import re
from typing import Any

from rea.plugin import JSONObject
from rea.plugin import arg_object
from rea.plugin import arg_strs
from rea.plugin import types_key

# ``typedef <type words> <name>;`` with no declarator: the only typedefs spelled out textually.
_PLAIN_TYPEDEF = re.compile(r"^typedef ((?:(?:struct|union|enum) )?[A-Za-z_][\w ]*?) ([A-Za-z_]\w*);$")
_ERROR = re.compile(r"error|cannot|unknown|unrecognized", re.I)


class Applied:
    """The set of types this worker gave radare2, and the signatures it replaced."""

    def __init__(self) -> None:
        self.key = ""
        self.saved: dict[int, str] = {}
        self.problems: list[str] = []

    def apply(self, core: Any, types: JSONObject | None) -> list[str]:
        """Give radare2 the request's ``types`` (``declarations``: C text, ``prototypes``: address -> C)."""
        key = types_key(types)
        if key == self.key:
            return self.problems
        for addr, old in self.saved.items():
            if old:
                core.cmd(f'"afs {old}" @ {addr}')
        self.saved.clear()
        self.key, self.problems = key, []
        if not types:
            return []
        plain: dict[str, str] = {}
        for decl in arg_strs(types, "declarations") or []:
            line = " ".join(str(decl).split())
            if '"' in line or "@" in line:
                self.problems.append("radare2 was not given a declaration with quotes or '@'")
                continue
            m = _PLAIN_TYPEDEF.match(line)
            if m:
                plain[m.group(2)] = m.group(1)
            out = core.cmd(f'"td {line}"')
            if _ERROR.search(out or ""):
                self.problems.append(f"radare2's td refused: {line[:80]}")
        for address, proto in sorted((arg_object(types, "prototypes") or {}).items()):
            text = " ".join(str(proto).split()).rstrip(";")
            for _ in range(8):  # typedefs of typedefs, bounded
                spelled = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: plain.get(m.group(0), m.group(0)), text)
                if spelled == text:
                    break
                text = spelled
            if '"' in text or "@" in text or not re.match(r"^0x[0-9a-fA-F]+$", address):
                continue
            addr = int(address, 16)
            self.saved.setdefault(addr, (core.cmd(f"afs @ {addr}") or "").strip().rstrip(";"))
            out = core.cmd(f'"afs {text}" @ {addr}')
            if _ERROR.search(out or ""):
                self.problems.append(f"radare2's afs refused the prototype at {address}")
        return self.problems
