"""Stub ``ghidra.*``, ``java.*`` and ``pyghidra`` modules and a small program, for the worker's API layer.

The stubs have exactly the methods rea's Ghidra layer calls, with Ghidra's semantics (inclusive block ends,
Java's signed bytes, external addresses in their own space, iterators with hasNext/next). The program is a
small x86-64 ELF as Ghidra would present it after auto-analysis: a PLT thunk for ``puts``, ``printf``
imported without a stub (called through its slot, as PE imports are), a jump table and an unresolved call.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from typing import Any


class Space:
    def __init__(self, name: str) -> None:
        self.name = name

    def getName(self) -> str:
        return self.name

    def getAddress(self, offset: int) -> Addr:
        return Addr(self, offset)


RAM, EXTERNAL, OTHER = Space("ram"), Space("EXTERNAL"), Space("OTHER")


@dataclass(frozen=True)
class Addr:
    space: Space
    offset: int

    def isMemoryAddress(self) -> bool:
        return self.space is RAM or self.space is OTHER

    def isExternalAddress(self) -> bool:
        return self.space is EXTERNAL

    def getAddressSpace(self) -> Space:
        return self.space

    def getUnsignedOffset(self) -> int:
        return self.offset


def ram(offset: int) -> Addr:
    return Addr(RAM, offset)


class JavaIterator:
    """Ghidra's own iterators (CodeBlockIterator, ...) are not java.util.Iterator: hasNext/next only."""

    def __init__(self, items: list[Any]) -> None:
        self._items = list(items)

    def hasNext(self) -> bool:
        return bool(self._items)

    def next(self) -> Any:
        return self._items.pop(0)


@dataclass(frozen=True)
class RefType:
    """RefType and FlowType: flags answered by the is* methods."""

    flags: frozenset[str]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("is"):
            flag = name[2:].lower()
            return lambda: flag in self.flags
        raise AttributeError(name)


def rt(*flags: str) -> RefType:
    return RefType(frozenset(flags))


CALL, COMPUTED_CALL = rt("call", "flow"), rt("call", "computed", "flow")
JUMP, COND_JUMP, COMPUTED_JUMP = rt("jump", "flow"), rt("jump", "conditional", "flow"), rt("jump", "computed", "flow")
FALL, READ, DATA, WRITE, NONE = rt("fallthrough", "flow"), rt("read", "data"), rt("data"), rt("write", "data"), rt()


@dataclass
class Ref:
    src: Addr
    dst: Addr
    kind: RefType

    def getFromAddress(self) -> Addr:
        return self.src

    def getToAddress(self) -> Addr:
        return self.dst

    def getReferenceType(self) -> RefType:
        return self.kind


@dataclass
class AddrRange:
    lo: Addr
    hi: Addr  # inclusive, as Ghidra's

    def getMinAddress(self) -> Addr:
        return self.lo

    def getMaxAddress(self) -> Addr:
        return self.hi


@dataclass
class Body:
    spans: list[tuple[int, int]]  # [start, end) offsets

    def getAddressRanges(self) -> list[AddrRange]:
        return [AddrRange(ram(s), ram(e - 1)) for s, e in self.spans]

    def contains(self, offset: int) -> bool:
        return any(s <= offset < e for s, e in self.spans)


@dataclass
class Insn:
    address: int
    raw: bytes
    mnemonic: str
    operands: list[str]
    flow: RefType = NONE
    refs: list[Ref] = field(default_factory=list)

    def getAddress(self) -> Addr:
        return ram(self.address)

    def getBytes(self) -> list[int]:
        return [b - 256 if b > 127 else b for b in self.raw]  # Java bytes are signed

    def getMnemonicString(self) -> str:
        return self.mnemonic

    def getNumOperands(self) -> int:
        return len(self.operands)

    def getDefaultOperandRepresentation(self, i: int) -> str:
        return self.operands[i]

    def getFlowType(self) -> RefType:
        return self.flow

    def getReferencesFrom(self) -> list[Ref]:
        return self.refs


class Func:
    def __init__(
        self,
        name: str,
        entry: Addr,
        body: Body,
        thunk: Func | None = None,
        external: bool = False,
        convention: str = "__stdcall",
        prototype: str = "",
    ) -> None:
        self.name, self.entry, self.body, self.thunk, self.external = name, entry, body, thunk, external
        self.convention, self.prototype = convention, prototype

    def getEntryPoint(self) -> Addr:
        return self.entry

    def getName(self) -> str:
        return self.name

    def getBody(self) -> Body:
        return self.body

    def isThunk(self) -> bool:
        return self.thunk is not None

    def getThunkedFunction(self, recursive: bool) -> Func | None:
        return self.thunk

    def isExternal(self) -> bool:
        return self.external

    def getCallingConventionName(self) -> str:
        return self.convention

    def getPrototypeString(self, formal: bool, with_convention: bool) -> str:
        return self.prototype


@dataclass
class Sym:
    name: str
    address: Addr
    kind: str  # "Function" | "Label" | ...
    exported: bool = False

    def getName(self) -> str:
        return self.name

    def getAddress(self) -> Addr:
        return self.address

    def getSymbolType(self) -> str:
        return self.kind

    def isExternal(self) -> bool:
        return self.address.isExternalAddress()

    def isExternalEntryPoint(self) -> bool:
        return self.exported


@dataclass
class SourceInfo:
    offset: int

    def getFileBytesOffset(self) -> int:
        return self.offset


@dataclass
class MemBlock:
    name: str
    start: Addr
    size: int
    perm: str
    loaded: bool = True
    initialized: bool = True
    file_offset: int = -1

    def getName(self) -> str:
        return self.name

    def getStart(self) -> Addr:
        return self.start

    def getSize(self) -> int:
        return self.size

    def isRead(self) -> bool:
        return "r" in self.perm

    def isWrite(self) -> bool:
        return "w" in self.perm

    def isExecute(self) -> bool:
        return "x" in self.perm

    def isLoaded(self) -> bool:
        return self.loaded

    def isInitialized(self) -> bool:
        return self.initialized

    def getSourceInfos(self) -> list[SourceInfo]:
        return [SourceInfo(self.file_offset)]


@dataclass
class StringData:
    address: int
    raw: bytes
    value: str
    charset: str

    def getAddress(self) -> Addr:
        return ram(self.address)

    def getBytes(self) -> list[int]:
        return [b - 256 if b > 127 else b for b in self.raw]


class CodeBlock:
    def __init__(self, lo: int, hi_exclusive: int, dests: list[tuple[int, RefType]]) -> None:
        self.lo, self.hi, self.dests = lo, hi_exclusive, dests

    def getMinAddress(self) -> Addr:
        return ram(self.lo)

    def getMaxAddress(self) -> Addr:
        return ram(self.hi - 1)

    def getDestinations(self, monitor: Any) -> JavaIterator:
        return JavaIterator([_Dest(ram(to), flow) for to, flow in self.dests])


@dataclass
class _Dest:
    to: Addr
    flow: RefType

    def getDestinationAddress(self) -> Addr:
        return self.to

    def getFlowType(self) -> RefType:
        return self.flow


class Program:
    """The stub program: every manager is the program itself, answering the calls rea makes."""

    def __init__(self) -> None:
        self.sha256 = "ab" * 32
        self.blocks: list[MemBlock] = []
        self.functions: list[Func] = []
        self.externals: list[Func] = []
        self.symbols: list[Sym] = []
        self.insns: dict[int, Insn] = {}
        self.data_refs: list[Ref] = []
        self.defined_data: set[int] = set()
        self.strings: list[StringData] = []
        self.code_blocks: dict[int, list[CodeBlock]] = {}
        self.pseudo: dict[int, str] = {}
        self.slow: set[int] = set()
        self.released = False

    # Program
    def getListing(self) -> Program:
        return self

    def getFunctionManager(self) -> Program:
        return self

    def getSymbolTable(self) -> Program:
        return self

    def getReferenceManager(self) -> Program:
        return self

    def getMemory(self) -> Program:
        return self

    def getAddressFactory(self) -> Any:
        return types.SimpleNamespace(getDefaultAddressSpace=lambda: RAM)

    def getLanguage(self) -> Any:
        return types.SimpleNamespace(
            getProcessor=lambda: "x86",
            isBigEndian=lambda: False,
            getLanguageDescription=lambda: types.SimpleNamespace(getSize=lambda: 64),
        )

    def getExecutableFormat(self) -> str:
        return "Executable and Linking Format (ELF)"

    def getExecutableSHA256(self) -> str:
        return self.sha256

    def getImageBase(self) -> Addr:
        return ram(0x100000)

    def getLanguageID(self) -> str:
        return "x86:LE:64:default"

    def getCompilerSpec(self) -> Any:
        return types.SimpleNamespace(getCompilerSpecID=lambda: "gcc")

    def getDefaultPointerSize(self) -> int:
        return 8

    def release(self, consumer: Any) -> None:
        self.released = True

    # Memory
    def getBlocks(self) -> list[MemBlock]:
        return self.blocks

    # FunctionManager
    def getFunctions(self, forward: bool) -> list[Func]:
        return sorted(self.functions, key=lambda f: f.entry.offset)

    def getExternalFunctions(self) -> list[Func]:
        return self.externals

    def getFunctionAt(self, address: Addr) -> Func | None:
        return next((f for f in self.functions if f.entry == address), None)

    def getFunctionContaining(self, address: Addr) -> Func | None:
        return next((f for f in self.functions if address.space is RAM and f.body.contains(address.offset)), None)

    # SymbolTable
    def getGlobalSymbols(self, name: str) -> list[Sym]:
        return [s for s in self.symbols if s.name == name]

    def getExternalEntryPointIterator(self) -> list[Addr]:
        return [s.address for s in self.symbols if s.exported]

    def getAllSymbols(self, include_dynamic: bool) -> list[Sym]:
        assert include_dynamic is False
        return list(self.symbols)

    def getPrimarySymbol(self, address: Addr) -> Sym | None:
        return next((s for s in self.symbols if s.address == address), None)

    # Listing
    def getInstructions(self, body: Body, forward: bool) -> list[Insn]:
        return [self.insns[a] for a in sorted(self.insns) if body.contains(a)]

    def getInstructionAt(self, address: Addr) -> Insn | None:
        return self.insns.get(address.offset) if address.space is RAM else None

    def getDefinedDataAt(self, address: Addr) -> object | None:
        return object() if address.offset in self.defined_data else None

    # ReferenceManager
    def getReferencesTo(self, address: Addr) -> list[Ref]:
        refs = [r for i in self.insns.values() for r in i.refs] + self.data_refs
        return [r for r in refs if r.dst == address]


@dataclass
class DecompileResult:
    code: str | None
    timed_out: bool = False

    def isTimedOut(self) -> bool:
        return self.timed_out

    def decompileCompleted(self) -> bool:
        return self.code is not None

    def getDecompiledFunction(self) -> Any:
        return types.SimpleNamespace(getC=lambda: self.code)

    def getErrorMessage(self) -> str:
        return "" if self.code is not None else "Low-level Error: bad instruction"


def build_program() -> Program:
    """The small program described in the module docstring."""
    p = Program()
    p.blocks = [
        MemBlock("_elfHeader", Addr(OTHER, 0), 64, "r--", loaded=False),
        MemBlock(".plt", ram(0x101020), 0x20, "r-x", file_offset=0x1020),
        MemBlock(".text", ram(0x101040), 0xC0, "r-x", file_offset=0x1040),
        MemBlock(".rodata", ram(0x102000), 0x40, "r--", file_offset=0x2000),
        MemBlock(".got", ram(0x103FD0), 0x20, "rw-", file_offset=0x2FD0),
        MemBlock(".bss", ram(0x104000), 0x10, "rw-", initialized=False),
    ]
    ext_puts = Func("puts", Addr(EXTERNAL, 1), Body([]), external=True)
    ext_printf = Func("printf", Addr(EXTERNAL, 2), Body([]), external=True)
    p.externals = [ext_puts, ext_printf]
    thunk = Func("puts", ram(0x101030), Body([(0x101030, 0x101036)]), thunk=ext_puts)
    main = Func("main", ram(0x101040), Body([(0x101040, 0x10105C)]), prototype="int main(void)")
    greet = Func("greet", ram(0x101060), Body([(0x101060, 0x101068)]), convention="unknown")
    dispatch = Func("dispatch", ram(0x101080), Body([(0x101080, 0x101098)]))
    p.functions = [thunk, main, greet, dispatch]
    p.symbols = [
        Sym("puts", Addr(EXTERNAL, 1), "Function"),
        Sym("printf", Addr(EXTERNAL, 2), "Function"),
        Sym("main", ram(0x101040), "Function", exported=True),
        Sym("entry", ram(0x101040), "Label"),
        Sym("greet", ram(0x101060), "Function"),
        Sym("dispatch", ram(0x101080), "Function"),
        Sym("GREETING", ram(0x102000), "Label"),
        Sym("note", ram(0x101070), "Label"),
        Sym("libc.so.6", Addr(EXTERNAL, 0), "Library"),
    ]
    p.defined_data = {0x102000}

    def add(
        addr: int,
        raw: str,
        mnemonic: str,
        operands: list[str],
        flow: RefType = NONE,
        refs: list[tuple[int | Addr, RefType]] | None = None,
    ) -> None:
        p.insns[addr] = Insn(
            addr,
            bytes.fromhex(raw),
            mnemonic,
            operands,
            flow,
            [Ref(ram(addr), t if isinstance(t, Addr) else ram(t), k) for t, k in (refs or [])],
        )

    # puts@plt: jmp [puts@got]
    add(0x101030, "ff25a22f0000", "JMP", ["qword ptr [0x00103fd8]"], COMPUTED_JUMP, [(0x103FD8, READ)])
    # main
    add(0x101040, "55", "PUSH", ["RBP"])
    add(0x101041, "e81a000000", "CALL", ["greet"], CALL, [(0x101060, CALL)])
    add(0x101046, "e8e5ffffff", "CALL", ["puts"], CALL, [(0x101030, CALL)])
    add(0x10104B, "ff158f2f0000", "CALL", ["qword ptr [0x00103fe0]"], COMPUTED_CALL, [(0x103FE0, READ)])
    add(0x101051, "85c0", "TEST", ["EAX", "EAX"])
    add(0x101053, "7403", "JZ", ["0x00101058"], COND_JUMP, [(0x101058, COND_JUMP)])
    add(0x101055, "8b0d", "MOV", ["ECX", "dword ptr [0x00104000]"], NONE, [(0x104000, WRITE)])
    add(0x101058, "eb06", "JMP", ["greet"], JUMP, [(0x101060, JUMP)])
    # greet
    add(0x101060, "488d3d99", "LEA", ["RDI", "[0x00102000]"], NONE, [(0x102000, DATA)])
    add(0x101064, "c3", "RET", [])
    # dispatch: a jump table with two resolved targets, then an unresolved computed call
    add(
        0x101080,
        "ff24c5",
        "JMP",
        ["qword ptr [RAX*0x8 + 0x102020]"],
        COMPUTED_JUMP,
        [(0x101088, COMPUTED_JUMP), (0x10108C, COMPUTED_JUMP)],
    )
    add(0x101088, "31c0", "XOR", ["EAX", "EAX"])
    add(0x10108C, "ffd0", "CALL", ["RAX"], COMPUTED_CALL)
    add(0x10108E, "c3", "RET", [])
    # The GOT slots refer to the externals (data), as Ghidra's ELF loader records them.
    p.data_refs = [Ref(ram(0x103FD8), Addr(EXTERNAL, 1), DATA), Ref(ram(0x103FE0), Addr(EXTERNAL, 2), DATA)]
    p.code_blocks = {
        0x101040: [
            CodeBlock(0x101040, 0x101055, [(0x101060, CALL), (0x101058, COND_JUMP), (0x101055, FALL)]),
            CodeBlock(0x101055, 0x101058, [(0x101058, FALL)]),
            CodeBlock(0x101058, 0x10105A, [(0x101060, JUMP)]),
        ],
        0x101060: [CodeBlock(0x101060, 0x101065, [])],
        0x101080: [
            CodeBlock(0x101080, 0x101083, [(0x101088, COMPUTED_JUMP), (0x10108C, COMPUTED_JUMP)]),
            CodeBlock(0x101088, 0x10108A, [(0x10108C, FALL)]),
            CodeBlock(0x10108C, 0x10108F, []),
        ],
        0x101030: [CodeBlock(0x101030, 0x101036, [])],
    }
    p.strings = [
        StringData(0x102000, b"hello rea\0", "hello rea", "US-ASCII"),
        StringData(0x102010, "WIDE".encode("utf-16le") + b"\0\0", "WIDE", "UTF-16"),
        StringData(0x102030, "no".encode("utf-32-le"), "no", "UTF-32"),
    ]
    p.pseudo = {0x101040: "int main(void)\n{\n  greet();\n  return 0;\n}\n"}
    p.slow = {0x101080}
    return p


class _Monitor:
    DUMMY = object()


class StubProgramLoader:
    """ProgramLoader.builder() ... .load() returning the configured program (or failing)."""

    program: Program | None = None
    fail = False
    sources: list[str] = []

    @classmethod
    def builder(cls) -> StubProgramLoader:
        return cls()

    def source(self, f: Any) -> StubProgramLoader:
        type(self).sources.append(str(f))
        return self

    def project(self, p: Any) -> StubProgramLoader:
        return self

    def monitor(self, m: Any) -> StubProgramLoader:
        return self

    def load(self) -> Any:
        if type(self).fail:
            raise RuntimeError("ghidra.app.util.opinion.LoadException: No load spec found")
        program = type(self).program
        closed: list[bool] = []
        return types.SimpleNamespace(getPrimaryDomainObject=lambda consumer: program, close=lambda: closed.append(True))


class StubProject:
    created: list[tuple[str, str, bool]] = []
    closed = 0

    @classmethod
    def createProject(cls, folder: str, name: str, temporary: bool) -> StubProject:
        cls.created.append((folder, name, temporary))
        return cls()

    def getProject(self) -> object:
        return object()

    def close(self) -> None:
        type(self).closed += 1


class StubLauncher:
    vmargs: list[str] = []
    fail = False
    install_dirs: list[str] = []

    def __init__(self, install_dir: Any = None) -> None:
        type(self).install_dirs.append(str(install_dir))

    def add_vmargs(self, *args: str) -> None:
        type(self).vmargs.extend(args)

    def start(self) -> None:
        if type(self).fail:
            raise ValueError("Java was not found in PATH or JAVA_HOME")


def _block_model(program: Program) -> Any:
    def containing(body: Body, monitor: Any) -> JavaIterator:
        return JavaIterator(
            [b for f in program.functions if f.body is body for b in program.code_blocks.get(f.entry.offset, [])]
        )

    return types.SimpleNamespace(getCodeBlocksContaining=containing)


def _decomp_factory(program_holder: list[Program]) -> type:
    class StubDecompInterface:
        def setOptions(self, options: Any) -> bool:
            return True

        def openProgram(self, program: Program) -> bool:
            program_holder.append(program)
            return True

        def getLastMessage(self) -> str:
            return ""

        def decompileFunction(self, func: Func, timeout: int, monitor: Any) -> DecompileResult:
            prog = program_holder[-1]
            if func.entry.offset in prog.slow:
                return DecompileResult(None, timed_out=True)
            return DecompileResult(prog.pseudo.get(func.entry.offset))

        def dispose(self) -> None:
            pass

    return StubDecompInterface


@contextlib.contextmanager
def installed() -> Iterator[dict[str, Any]]:
    """Install the stub modules for the duration of the block (sys.modules restored afterwards)."""
    holder: list[Program] = []
    stub_string_iterator = types.SimpleNamespace(forProgram=lambda program: iter(program.strings))
    stub_sdi = types.SimpleNamespace(
        getStringDataInstance=lambda data: types.SimpleNamespace(
            getStringValue=lambda: data.value, getCharsetName=lambda: data.charset
        )
    )
    analyzed: list[Program] = []
    modules: dict[str, dict[str, Any]] = {
        "ghidra": {},
        "ghidra.util": {},
        "ghidra.util.task": {"TaskMonitor": _Monitor},
        "ghidra.program": {},
        "ghidra.program.model": {},
        "ghidra.program.model.block": {"BasicBlockModel": _block_model},
        "ghidra.program.model.data": {"StringDataInstance": stub_sdi},
        "ghidra.program.util": {"DefinedStringIterator": stub_string_iterator},
        "ghidra.app": {},
        "ghidra.app.decompiler": {"DecompInterface": _decomp_factory(holder), "DecompileOptions": lambda: object()},
        "ghidra.app.util": {},
        "ghidra.app.util.importer": {"ProgramLoader": StubProgramLoader},
        "ghidra.base": {},
        "ghidra.base.project": {"GhidraProject": StubProject},
        "java": {},
        "java.io": {"File": lambda path: path},
        "java.lang": {"Object": object},
        "pyghidra": {"HeadlessPyGhidraLauncher": StubLauncher, "analyze": analyzed.append},
    }
    saved = {name: sys.modules.get(name) for name in modules}
    for name, attrs in modules.items():
        module = types.ModuleType(name)
        for key, value in attrs.items():
            setattr(module, key, value)
        sys.modules[name] = module
    StubProgramLoader.fail, StubLauncher.fail = False, False
    StubProgramLoader.sources, StubLauncher.vmargs, StubLauncher.install_dirs = [], [], []
    StubProject.created, StubProject.closed = [], 0
    try:
        yield {"analyzed": analyzed}
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
