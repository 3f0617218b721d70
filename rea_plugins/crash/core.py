"""An ELF core file as plain values: threads (NT_PRSTATUS), the signal (NT_SIGINFO), mapped files (NT_FILE), the
auxiliary vector (NT_AUXV) and the memory the core holds (its PT_LOAD segments with file bytes), read with LIEF."""

from __future__ import annotations

import bisect
import signal as signals
import struct
import warnings
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from rea.plugin import ReaError

ARCHITECTURES = {"X86_64": "x86_64", "AARCH64": "arm64", "I386": "x86", "ARM": "arm"}
# The register LIEF's CorePrStatus names each architecture's frame pointer with.
FRAME_POINTER = {"x86_64": "RBP", "x86": "EBP", "arm64": "X29", "arm": "R11"}
# si_code names (asm-generic/siginfo.h) for the signals a fault raises; others are named by their generic codes.
CODE_NAMES: dict[int, dict[int, str]] = {
    signals.SIGSEGV: {1: "SEGV_MAPERR", 2: "SEGV_ACCERR", 3: "SEGV_BNDERR", 4: "SEGV_PKUERR"},
    signals.SIGBUS: {1: "BUS_ADRALN", 2: "BUS_ADRERR", 3: "BUS_OBJERR"},
    signals.SIGILL: {1: "ILL_ILLOPC", 2: "ILL_ILLOPN", 3: "ILL_ILLADR", 4: "ILL_ILLTRP", 5: "ILL_PRVOPC"},
    signals.SIGFPE: {1: "FPE_INTDIV", 2: "FPE_INTOVF", 3: "FPE_FLTDIV", 4: "FPE_FLTOVF", 5: "FPE_FLTUND"},
    signals.SIGTRAP: {1: "TRAP_BRKPT", 2: "TRAP_TRACE"},
}
GENERIC_CODES = {0: "SI_USER", 0x80: "SI_KERNEL", -1: "SI_QUEUE", -6: "SI_TKILL"}
FAULTS = frozenset(int(n) for n in CODE_NAMES)
MAX_THREADS = 100_000
MAX_MAPPINGS = 1_000_000
SAFE_INTEGER = 1 << 53


@dataclass
class CoreThread:
    tid: int
    signal: int
    registers: dict[str, int]
    pc: int
    sp: int
    fp: int | None


@dataclass
class CoreMapping:
    path: str
    start: int
    end: int
    offset: int  # bytes


@dataclass
class Core:
    architecture: str
    word: int
    little: bool
    data: bytes
    pid: int | None = None
    command: str = ""
    signo: int | None = None
    code: int | None = None
    fault_address: int | None = None
    threads: list[CoreThread] = field(default_factory=list)
    mappings: list[CoreMapping] = field(default_factory=list)
    auxv: dict[str, int] = field(default_factory=dict)
    # (address, file offset, size) of each segment whose bytes the core holds, by address
    memory: list[tuple[int, int, int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def read(self, address: int, length: int) -> bytes | None:
        """The process's bytes at ``address`` as the core recorded them; None when the core does not hold them."""
        i = bisect.bisect_right(self.memory, (address, float("inf"), 0)) - 1
        if i < 0:
            return None
        start, offset, size = self.memory[i]
        if address < start or address + length > start + size:
            return None
        lo = offset + address - start
        return self.data[lo : lo + length] if lo + length <= len(self.data) else None

    def pointer(self, address: int) -> int | None:
        raw = self.read(address, self.word)
        if raw is None:
            return None
        return int.from_bytes(raw, "little" if self.little else "big")

    def mapping_at(self, address: int) -> CoreMapping | None:
        for m in self.mappings:
            if m.start <= address < m.end:
                return m
        return None


def malformed(what: str) -> ReaError:
    return ReaError(
        "unsupported_target",
        f"not a readable ELF core file: {what}",
        remediation="Pass a core file the kernel or gcore wrote (ELF type CORE), complete and untruncated.",
        details={"reason": what},
    )


def signal_name(number: int) -> str:
    try:
        return signals.Signals(number).name
    except ValueError:
        return f"SIG{number}"


def code_name(signo: int, code: int) -> str | None:
    return CODE_NAMES.get(signo, {}).get(code) if code > 0 and code != 0x80 else GENERIC_CODES.get(code)


def _siginfo(core: Core, raw: bytes) -> None:
    order = "<" if core.little else ">"
    if len(raw) < 12:
        return
    core.signo, _errno, core.code = struct.unpack_from(order + "iii", raw, 0)
    at = 16 if core.word == 8 else 12
    if core.signo in FAULTS and len(raw) >= at + core.word:
        core.fault_address = int.from_bytes(raw[at : at + core.word], "little" if core.little else "big")


def parse(data: bytes) -> Core:
    """The core file's notes and memory; ``unsupported_target`` when it is not an ELF core LIEF can read."""
    import lief

    lief.logging.disable()
    if not data.startswith(b"\x7fELF"):
        raise malformed("no ELF header")
    with warnings.catch_warnings():
        # LIEF warns of auxiliary vector entries newer than its table (AT_MINSIGSTKSZ, ...); they are kept by number.
        warnings.simplefilter("ignore", RuntimeWarning)
        binary = lief.ELF.parse(data)
        if binary is None:
            raise malformed("LIEF cannot parse it")
        if binary.header.file_type != lief.ELF.Header.FILE_TYPE.CORE:
            raise malformed(f"its ELF type is {str(binary.header.file_type).rsplit('.', 1)[-1]}, not CORE")
        arch = ARCHITECTURES.get(str(binary.header.machine_type).rsplit(".", 1)[-1])
        if arch is None:
            raise ReaError(
                "unsupported_target",
                f"rea reads cores of x86-64, x86, AArch64 and ARM, not {binary.header.machine_type}",
                remediation="Read the core with the debugger of its architecture.",
                details={"machine": str(binary.header.machine_type)},
            )
        word = 8 if binary.header.identity_class == lief.ELF.Header.CLASS.ELF64 else 4
        little = binary.header.identity_data == lief.ELF.Header.ELF_DATA.LSB
        core = Core(architecture=arch, word=word, little=little, data=data)
        for s in binary.segments:
            if s.type == lief.ELF.Segment.TYPE.LOAD and s.physical_size > 0:
                size = min(int(s.physical_size), max(0, len(data) - int(s.file_offset)))
                if size < int(s.physical_size):
                    core.notes.append(
                        f"The segment at {int(s.virtual_address):#x} is cut short: the core is truncated."
                    )
                if size > 0:
                    core.memory.append((int(s.virtual_address), int(s.file_offset), size))
        core.memory.sort()
        _notes(core, binary, lief)
    if not core.threads:
        raise malformed("it records no thread (NT_PRSTATUS)")
    return core


def _notes(core: Core, binary: Any, lief: Any) -> None:
    page = 4096
    files: list[Any] = []
    for note in binary.notes:
        if isinstance(note, lief.ELF.CorePrStatus):
            if len(core.threads) >= MAX_THREADS:
                continue
            _thread(core, note)
        elif isinstance(note, lief.ELF.CorePrPsInfo):
            info = note.info
            core.pid = int(info.pid)
            core.command = str(info.args_stripped or info.filename_stripped)
        elif isinstance(note, lief.ELF.CoreSigInfo):
            _siginfo(core, bytes(note.description))
        elif isinstance(note, lief.ELF.CoreAuxv):
            for key, value in note.values.items():
                name = key.name if hasattr(key, "name") else str(key)
                core.auxv[name] = int(value)
        elif isinstance(note, lief.ELF.CoreFile):
            files = list(note.files)[:MAX_MAPPINGS]
    page = core.auxv.get("PAGESZ", page) or page
    # NT_FILE gives each mapping's file offset in pages.
    mappings = [CoreMapping(str(f.path), int(f.start), int(f.end), int(f.file_ofs) * page) for f in files]
    # A damaged NT_FILE can name any numbers: keep what an address space can hold (offsets JSON carries exactly).
    core.mappings = [m for m in mappings if 0 <= m.start < m.end < 1 << 64 and 0 <= m.offset < SAFE_INTEGER]
    if len(core.mappings) < len(mappings):
        core.notes.append(f"{len(mappings) - len(core.mappings)} NT_FILE entries are impossible and were left out.")
    if not files:
        core.notes.append("The core lists no mapped files (NT_FILE): addresses are not placed in files.")


def _thread(core: Core, note: Any) -> None:
    names = [n for n in type(note).Registers.__dict__.get(_enum(core.architecture)).__members__]
    values = list(note.register_values)
    registers = {name.lower(): int(v) for name, v in zip(names, values, strict=False)}
    fp_name = FRAME_POINTER[core.architecture].lower()
    status = note.status
    core.threads.append(
        CoreThread(
            tid=int(status.pid),
            signal=int(status.cursig),
            registers=registers,
            pc=int(note.pc),
            sp=int(note.sp),
            fp=registers.get(fp_name),
        )
    )


def _enum(architecture: str) -> str:
    return {"x86_64": "X86_64", "x86": "X86", "arm64": "AARCH64", "arm": "ARM"}[architecture]
