"""The Ghidra worker's type path over stub Ghidra classes (Ghidra itself is not needed): the library goes to
``CParser``, prototypes through ``ApplyFunctionSignatureCmd`` in one transaction, and another set of types
puts the replaced signatures back."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from rea_plugins.ghidra.types import Applied

LOG: list[tuple[Any, ...]] = []


class CParser:
    def __init__(self, dtm: Any, store: bool, subs: Any) -> None:
        LOG.append(("parser", dtm, store))

    def parse(self, text: str) -> Any:
        if "bad" in text:
            raise ValueError("syntax error")
        LOG.append(("parse", text))
        return ("sig", text)


class ApplyFunctionSignatureCmd:
    def __init__(self, address: int, signature: Any, source: str) -> None:
        self.args = (address, signature, source)

    def applyTo(self, program: Any, monitor: Any) -> bool:
        LOG.append(("apply", *self.args))
        return True

    def getStatusMsg(self) -> str:
        return ""


class Function:
    def getSignature(self) -> Any:
        return "engine-signature"

    def getSignatureSource(self) -> str:
        return "ANALYSIS"


class Program:
    def startTransaction(self, what: str) -> int:
        LOG.append(("begin",))
        return 7

    def endTransaction(self, tx: int, commit: bool) -> None:
        LOG.append(("end", tx, commit))

    def getFunctionManager(self) -> Any:
        return types.SimpleNamespace(getFunctionAt=lambda a: Function() if a == 0x1139 else None)

    def getDataTypeManager(self) -> str:
        return "dtm"

    def getDefaultPointerSize(self) -> int:
        return 8


@pytest.fixture
def ghidra(monkeypatch: pytest.MonkeyPatch) -> None:
    modules = {
        "ghidra": {},
        "ghidra.app": {},
        "ghidra.app.cmd": {},
        "ghidra.app.cmd.function": {"ApplyFunctionSignatureCmd": ApplyFunctionSignatureCmd},
        "ghidra.app.util": {},
        "ghidra.app.util.cparser": {},
        "ghidra.app.util.cparser.C": {"CParser": CParser},
        "ghidra.program": {},
        "ghidra.program.model": {},
        "ghidra.program.model.symbol": {"SourceType": types.SimpleNamespace(USER_DEFINED="USER_DEFINED")},
    }
    for name, attrs in modules.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, module)
    LOG.clear()


def test_types_and_prototypes_are_applied_in_one_transaction_and_put_back(ghidra: None) -> None:
    source = types.SimpleNamespace(program=Program(), addr=lambda a: a, monitor=None)
    applied = Applied()
    wanted = {
        "declarations": ["struct opts { int verbose; const char *extensions; };", "struct bad {"],
        "prototypes": {"0x1139": "int apply_opts(struct opts *opts)", "0x9999": "void gone(void)"},
    }
    changed, problems = applied.apply(source, wanted)
    assert changed and len(problems) == 1 and "struct bad" in problems[0]
    parsed = [e[1] for e in LOG if e[0] == "parse"]
    assert "uint64_t" in parsed[0] and parsed[1].startswith("struct opts")
    assert parsed[2] == "int apply_opts(struct opts *opts);"
    assert ("apply", 0x1139, ("sig", parsed[2]), "USER_DEFINED") in LOG
    assert LOG[0] == ("begin",) and LOG[-1] == ("end", 7, True)
    # The same types again: nothing to do.
    LOG.clear()
    assert applied.apply(source, wanted) == (False, problems) and LOG == []
    # None: the engine's signature comes back, with its source.
    changed, problems = applied.apply(source, None)
    assert changed and problems == []
    assert ("apply", 0x1139, "engine-signature", "ANALYSIS") in LOG and not [e for e in LOG if e[0] == "parse"]
