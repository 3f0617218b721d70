"""TEST ONLY: a fake of Hopper's Python scripting API (the classes Hopper gives scripts), over a small document.

The bridge loads this file (REA_HOPPER_TEST_FACADE) when it is not running inside Hopper. Names and behaviour
follow Hopper 5's API: BAD_ADDRESS for "none", basic blocks with exclusive ends, CallReference types, labels
and named addresses in the same order, bookmarks and comments per address. The document is a small x86-64
Mach-O: ``_main`` calls ``_greet`` and the ``_puts`` stub, ``_greet`` loads a C string.
"""

from __future__ import annotations

from typing import Any

BAD_ADDRESS = -1


class CallReference:
    CALL_NONE, CALL_UNKNOWN, CALL_DIRECT, CALL_OBJC = 0, 1, 2, 3

    def __init__(self, kind: int, src: int, dst: int) -> None:
        self._kind, self._from, self._to = kind, src, dst

    def type(self) -> int:
        return self._kind

    def fromAddress(self) -> int:
        return self._from

    def toAddress(self) -> int:
        return self._to


class Instruction:
    def __init__(self, mnemonic: str, args: list[str], length: int, cjmp: bool = False, ijmp: bool = False) -> None:
        self._m, self._args, self._len, self._cjmp, self._ijmp = mnemonic, args, length, cjmp, ijmp

    def getInstructionString(self) -> str:
        return self._m

    def getArgumentCount(self) -> int:
        return len(self._args)

    def getFormattedArgument(self, i: int) -> str:
        return self._args[i]

    def getInstructionLength(self) -> int:
        return self._len

    def isAConditionalJump(self) -> bool:
        return self._cjmp

    def isAnInconditionalJump(self) -> bool:
        return self._ijmp


class Section:
    def __init__(self, name: str, start: int, length: int, flags: int = 0) -> None:
        self._name, self._start, self._length, self._flags = name, start, length, flags

    def getName(self) -> str:
        return self._name

    def getStartingAddress(self) -> int:
        return self._start

    def getLength(self) -> int:
        return self._length

    def getFlags(self) -> int:
        return self._flags


class BasicBlock:
    def __init__(self, start: int, end: int, successors: list[int]) -> None:
        self._start, self._end, self._succ = start, end, successors

    def getStartingAddress(self) -> int:
        return self._start

    def getEndingAddress(self) -> int:
        return self._end

    def getSuccessorCount(self) -> int:
        return len(self._succ)

    def getSuccessorAddressAtIndex(self, i: int) -> int:
        return self._succ[i]


class Procedure:
    def __init__(
        self, entry: int, blocks: list[BasicBlock], callees: list[CallReference], code: str | None, signature: str
    ) -> None:
        self._entry, self._blocks, self._callees, self._code, self._sig = entry, blocks, callees, code, signature

    def getEntryPoint(self) -> int:
        return self._entry

    def basicBlockIterator(self) -> Any:
        yield from self._blocks

    def getAllCallees(self) -> list[CallReference]:
        return self._callees

    def decompile(self) -> str | None:
        return self._code

    def signatureString(self) -> str:
        return self._sig


class Segment:
    TYPE_UNDEFINED, TYPE_ASCII, TYPE_UNICODE, TYPE_CODE = 0, 7, 8, 65
    BAD_ADDRESS = BAD_ADDRESS

    def __init__(self, name: str, start: int, length: int, file_offset: int, sections: list[Section]) -> None:
        self._name, self._start, self._length, self._offset, self._sections = name, start, length, file_offset, sections
        self.procedures: list[Procedure] = []
        self.labels: list[tuple[int, str]] = []
        self.strings: list[tuple[int, str, bool]] = []
        self.insns: dict[int, tuple[Instruction, bytes, list[int]]] = {}
        self.comments: dict[int, str] = {}
        self.inline: dict[int, str] = {}

    def contains(self, address: int) -> bool:
        return self._start <= address < self._start + self._length

    def getName(self) -> str:
        return self._name

    def getStartingAddress(self) -> int:
        return self._start

    def getLength(self) -> int:
        return self._length

    def getFileOffset(self) -> int:
        return self._offset

    def getSectionsList(self) -> list[Section]:
        return self._sections

    def getSectionAtAddress(self, address: int) -> Section | None:
        return next(
            (s for s in self._sections if s.getStartingAddress() <= address < s.getStartingAddress() + s.getLength()),
            None,
        )

    def getProcedureCount(self) -> int:
        return len(self.procedures)

    def getProcedureAtIndex(self, i: int) -> Procedure:
        return self.procedures[i]

    def getProcedureAtAddress(self, address: int) -> Procedure | None:
        for p in self.procedures:
            if any(b.getStartingAddress() <= address < b.getEndingAddress() for b in p.basicBlockIterator()):
                return p
        return None

    def getNameAtAddress(self, address: int) -> str | None:
        return next((n for a, n in self.labels if a == address), None)

    def getLabelsList(self) -> list[str]:
        return [n for _, n in self.labels]

    def getNamedAddresses(self) -> list[int]:
        return [a for a, _ in self.labels]

    def getStringCount(self) -> int:
        return len(self.strings)

    def getStringAtIndex(self, i: int) -> str:
        return self.strings[i][1]

    def getStringAddressAtIndex(self, i: int) -> int:
        return self.strings[i][0]

    def getTypeAtAddress(self, address: int) -> int:
        for a, _, wide in self.strings:
            if a == address:
                return self.TYPE_UNICODE if wide else self.TYPE_ASCII
        return self.TYPE_CODE if address in self.insns else self.TYPE_UNDEFINED

    def getInstructionAtAddress(self, address: int) -> Instruction | None:
        found = self.insns.get(address)
        return None if found is None else found[0]

    def readBytes(self, address: int, length: int) -> bytes:
        found = self.insns.get(address)
        return found[1][:length] if found is not None else b"\0" * length

    def getReferencesFromAddress(self, address: int) -> list[int]:
        found = self.insns.get(address)
        return list(found[2]) if found is not None else []

    def getReferencesOfAddress(self, address: int) -> list[int]:
        return sorted(a for seg in DOCUMENT.segments for a, (_, _, refs) in seg.insns.items() if address in refs)

    def getCommentAtAddress(self, address: int) -> str | None:
        return self.comments.get(address)

    def getInlineCommentAtAddress(self, address: int) -> str | None:
        return self.inline.get(address)


class Document:
    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self.bookmarks: dict[int, str] = {}
        self.closed = False
        self.analysis_running = True

    @staticmethod
    def getCurrentDocument() -> Document:
        return DOCUMENT

    def getDocumentName(self) -> str:
        return "program"

    def getExecutableFilePath(self) -> str:
        return "/targets/program"

    def getEntryPoint(self) -> int:
        return 0x100000F00

    def is64Bits(self) -> bool:
        return True

    def getSegmentsList(self) -> list[Segment]:
        return self.segments

    def getSegmentAtAddress(self, address: int) -> Segment | None:
        return next((s for s in self.segments if s.contains(address)), None)

    def waitForBackgroundProcessToEnd(self) -> None:
        self.analysis_running = False

    def backgroundProcessActive(self) -> bool:
        return self.analysis_running

    def requestBackgroundProcessStop(self) -> None:
        self.analysis_running = False

    def closeDocument(self) -> None:
        self.closed = True

    def hasBookmarkAtAddress(self, address: int) -> bool:
        return address in self.bookmarks

    def getBookmarkName(self, address: int) -> str:
        return self.bookmarks[address]


class GlobalInformation:
    @staticmethod
    def getHopperVersion() -> str:
        return "5.19.6-fake"


def _build() -> Document:
    doc = Document()
    text = Segment(
        "__TEXT",
        0x100000000,
        0x2000,
        0,
        [
            Section("__text", 0x100000F00, 0x60),
            Section("__stubs", 0x100000F80, 0x10),
            Section("__cstring", 0x100000FA0, 0x40),
        ],
    )
    data = Segment("__DATA", 0x100002000, 0x1000, 0x2000, [Section("__data", 0x100002000, 0x10)])
    doc.segments = [text, data]
    main, greet, puts, entry_cstring, wide = 0x100000F00, 0x100000F40, 0x100000F80, 0x100000FA0, 0x100000FB0

    def insn(
        at: int,
        m: str,
        args: list[str],
        raw: str,
        refs: list[int] | None = None,
        cjmp: bool = False,
        ijmp: bool = False,
    ) -> None:
        data_bytes = bytes.fromhex(raw)
        text.insns[at] = (Instruction(m, args, len(data_bytes), cjmp, ijmp), data_bytes, refs or [])

    insn(main, "push", ["rbp"], "55")
    insn(main + 1, "call", ["_greet"], "e83a000000", [greet])
    insn(main + 6, "call", ["imp___stubs__puts"], "e875000000", [puts])
    insn(main + 11, "test", ["eax", "eax"], "85c0")
    insn(main + 13, "je", ["0x100000f12"], "7403", [main + 18], cjmp=True)
    insn(main + 15, "call", ["rax"], "ffd0")
    insn(main + 17, "nop", [], "90")
    insn(main + 18, "ret", [], "c3")
    insn(greet, "lea", ["rdi", "[rip+0x59]"], "488d3d59000000", [entry_cstring])
    insn(greet + 7, "jmp", ["imp___stubs__puts"], "e934000000", [puts], ijmp=True)
    insn(puts, "jmp", ["qword [_puts_ptr]"], "ff2572100000", [0x100002000], ijmp=True)
    text.procedures = [
        Procedure(
            main,
            [
                BasicBlock(main, main + 15, [main + 15, main + 18]),
                BasicBlock(main + 15, main + 18, [main + 18]),
                BasicBlock(main + 18, main + 19, []),
            ],
            [
                CallReference(CallReference.CALL_DIRECT, main + 1, greet),
                CallReference(CallReference.CALL_DIRECT, main + 6, puts),
                CallReference(CallReference.CALL_UNKNOWN, main + 15, BAD_ADDRESS),
            ],
            'int _main() {\n    _greet();\n    puts("x");\n    return 0;\n}\n',
            "int _main()",
        ),
        Procedure(greet, [BasicBlock(greet, greet + 12, [puts])], [], None, "void _greet()"),
        Procedure(puts, [BasicBlock(puts, puts + 6, [])], [], None, "int puts(const char *)"),
    ]
    text.labels = [(main, "_main"), (greet, "_greet"), (puts, "imp___stubs__puts"), (entry_cstring, "aHello")]
    data.labels = [(0x100002000, "_puts_ptr")]
    text.strings = [(entry_cstring, "REA_HOPPER_GREETING", False), (wide, "WIDE", True)]
    text.comments = {main: "entry of the program"}
    text.inline = {main + 1: "says hello"}
    doc.bookmarks = {greet: "greeting"}
    return doc


DOCUMENT = _build()
