"""Ghidra's view of one program as rea's records: the API layer of the worker (runs under pyghidra only).

Every call here goes to Ghidra's Java API through JPype (``ghidra.*`` and ``java.*`` are imported inside the
functions, so the layer is unit-tested against stub modules). Only default-space memory addresses become
record addresses; an external (import) is placed at its thunk (PLT stub) when it has one, else at the slot
(GOT/IAT entry) that refers to it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from collections.abc import Iterator
from typing import Any

from rea.plugin import Block
from rea.plugin import CallSite
from rea.plugin import Detail
from rea.plugin import Document
from rea.plugin import Instruction
from rea.plugin import Inventory
from rea.plugin import Name
from rea.plugin import NameKind
from rea.plugin import Procedure
from rea.plugin import ProcedureKind
from rea.plugin import ReaError
from rea.plugin import Reference
from rea.plugin import ReferenceKind
from rea.plugin import Segment
from rea.plugin import String
from rea.plugin import StringEncoding

MAX_STRING_CHARS = 1024
_FORMATS = (("ELF", "elf"), ("Portable Executable", "pe"), ("Mach-O", "mach-o"))
_ARCHES = {("x86", 64): "x86_64", ("x86", 32): "x86", ("AARCH64", 64): "arm64", ("ARM", 32): "arm"}
_NO_CONVENTION = frozenset({"unknown", "default", ""})


def java_iter(it: Any) -> Iterator[Any]:
    """Items of a Java iterator that is not a ``java.util.Iterator`` (Ghidra's block iterators)."""
    while it.hasNext():
        yield it.next()


def perms(block: Any) -> str:
    return ("r" if block.isRead() else "-") + ("w" if block.isWrite() else "-") + ("x" if block.isExecute() else "-")


def string_encoding(charset: str, value: str) -> StringEncoding | None:
    """The contract's encoding of a Ghidra string's charset; None for encodings the contract has no name for."""
    upper = charset.upper().replace("_", "-")
    if upper.startswith("UTF-16"):
        return "utf-16le"
    if upper.startswith("UTF-32"):
        return None
    return "ascii" if value.isascii() else "utf-8"


class GhidraSource:
    """A ``model.Source`` over one imported and analysed Ghidra ``Program``."""

    def __init__(self, program: Any, name: str, sha256: str) -> None:
        from ghidra.util.task import TaskMonitor  # type: ignore[import-not-found]

        self.program = program
        self.name = name
        self.sha256 = sha256
        self.monitor = TaskMonitor.DUMMY
        self.listing = program.getListing()
        self.functions = program.getFunctionManager()
        self.symbols = program.getSymbolTable()
        self.references = program.getReferenceManager()
        self.space = program.getAddressFactory().getDefaultAddressSpace()
        self._inventory: Inventory | None = None
        # name -> (stub, slot) of every external function rea places as an import procedure.
        self.import_stub: dict[str, int] = {}
        self.import_slot: dict[str, int] = {}
        self._slot_names: dict[int, str] = {}
        # Import procedures placed at a slot (no stub): data, not code.
        self._slot_imports: set[int] = set()
        self._starts: dict[int, Procedure] = {}
        self._decompiler: Any = None
        self._types: Any = None  # the analyst's types applied to the program (rea_plugins.ghidra.types.Applied)

    # -- addresses -----------------------------------------------------------------------------

    def off(self, address: Any) -> int | None:
        """A default-space memory address as an integer; None for external, stack, register and other spaces."""
        if address is None or not address.isMemoryAddress() or address.isExternalAddress():
            return None
        if address.getAddressSpace().getName() != self.space.getName():
            return None
        return int(address.getUnsignedOffset())

    def addr(self, value: int) -> Any:
        return self.space.getAddress(value)

    # -- inventory -----------------------------------------------------------------------------

    def inventory(self) -> Inventory:
        if self._inventory is None:
            document = self._document()
            segments = tuple(self._segments())
            # Procedures before names and strings: they decide where each import is placed.
            procedures = tuple(self._procedures())
            self._inventory = Inventory(
                document=document,
                segments=segments,
                procedures=procedures,
                names=tuple(self._names()),
                strings=tuple(self._strings(segments)),
            )
        return self._inventory

    def _document(self) -> Document:
        program = self.program
        language = program.getLanguage()
        engine_format = str(program.getExecutableFormat() or "")
        fmt = next((ours for theirs, ours in _FORMATS if theirs in engine_format), "raw")
        processor = str(language.getProcessor())
        bits = int(language.getLanguageDescription().getSize())
        arch = _ARCHES.get((processor, bits), processor.lower())
        digest = str(program.getExecutableSHA256() or "").lower()
        if digest and self.sha256 and digest != self.sha256:
            raise ReaError(
                "artifact_changed",
                f"{self.name} changed between open_binary and Ghidra's import",
                remediation="Close the target and open it again, so every answer describes one file.",
                details={"expected_sha256": self.sha256, "imported_sha256": digest},
            )
        return Document(
            name=self.name,
            format=fmt,
            architecture=arch,
            sha256=self.sha256 or digest,
            entry=self._entry(),
            bits=bits,
            endianness="big" if language.isBigEndian() else "little",
            image_base=self.off(program.getImageBase()) or 0,
            engine_format=engine_format,
            language=str(program.getLanguageID()),
            compiler=str(program.getCompilerSpec().getCompilerSpecID()),
        )

    def _entry(self) -> int | None:
        # Ghidra's loaders label the program's entry point "entry" (ELF e_entry, PE AddressOfEntryPoint, Mach-O).
        for sym in self.symbols.getGlobalSymbols("entry"):
            found = self.off(sym.getAddress())
            if found is not None:
                return found
        points = sorted(p for p in (self.off(a) for a in self.symbols.getExternalEntryPointIterator()) if p is not None)
        return points[0] if points else None

    def _segments(self) -> list[Segment]:
        out = []
        for block in self.program.getMemory().getBlocks():
            start = self.off(block.getStart())
            if start is None or not block.isLoaded():
                continue
            size = int(block.getSize())
            file_offset: int | None = None
            if block.isInitialized():
                infos = list(block.getSourceInfos())
                if infos:
                    at = int(infos[0].getFileBytesOffset())
                    file_offset = at if at >= 0 else None
            out.append(
                Segment(
                    name=str(block.getName()),
                    start=start,
                    end=start + size,
                    permissions=perms(block),
                    file_offset=file_offset,
                    file_size=size if file_offset is not None else 0,
                    kind="section",
                )
            )
        return out

    def _procedures(self) -> list[Procedure]:
        out: list[Procedure] = []
        for f in self.functions.getFunctions(True):
            entry = self.off(f.getEntryPoint())
            if entry is None:
                continue
            ranges = self._ranges(f.getBody()) or ((entry, entry + 1),)
            kind: ProcedureKind = "local"
            thunk_of: str | None = None
            if f.isThunk():
                target = f.getThunkedFunction(True)
                thunk_of = None if target is None else str(target.getName())
                kind = "import" if target is not None and target.isExternal() else "thunk"
                if kind == "import" and thunk_of is not None:
                    self.import_stub.setdefault(thunk_of, entry)
            convention = str(f.getCallingConventionName() or "")
            proc = Procedure(
                address=entry,
                name=str(f.getName()),
                end=max(e for _, e in ranges),
                kind=kind,
                ranges=ranges,
                signature=str(f.getPrototypeString(False, False) or "") or None,
                calling_convention=None if convention in _NO_CONVENTION else convention,
                thunk_of=thunk_of,
            )
            out.append(proc)
        word = int(self.program.getDefaultPointerSize())
        for ext in self.functions.getExternalFunctions():
            name = str(ext.getName())
            slots = sorted(
                s
                for s in (self.off(r.getFromAddress()) for r in self.references.getReferencesTo(ext.getEntryPoint()))
                if s is not None
            )
            if slots:
                self.import_slot.setdefault(name, slots[0])
                for slot in slots:
                    self._slot_names.setdefault(slot, name)
            # An import without a stub (PE imports, -fno-plt) is placed at its slot.
            if name not in self.import_stub and slots:
                out.append(
                    Procedure(
                        address=slots[0],
                        name=name,
                        end=slots[0] + word,
                        kind="import",
                        ranges=((slots[0], slots[0] + word),),
                        thunk_of=name,
                    )
                )
                self._slot_imports.add(slots[0])
        out.sort(key=lambda p: (p.address, p.name))
        for p in out:
            self._starts.setdefault(p.address, p)
        return out

    def _ranges(self, body: Any) -> tuple[tuple[int, int], ...]:
        ranges = []
        for r in body.getAddressRanges():
            start, last = self.off(r.getMinAddress()), self.off(r.getMaxAddress())
            if start is not None and last is not None:
                ranges.append((start, last + 1))
        return tuple(sorted(ranges))

    def import_address(self, name: str) -> int | None:
        """Where rea places import ``name``: its stub, else its slot."""
        stub = self.import_stub.get(name)
        return stub if stub is not None else self.import_slot.get(name)

    def _names(self) -> list[Name]:
        out: list[Name] = []
        seen: set[tuple[int, str, str]] = set()
        # False: dynamic names (LAB_..., DAT_...) Ghidra derives on the fly are not symbols of the binary.
        for sym in self.symbols.getAllSymbols(False):
            kind_text = str(sym.getSymbolType())
            name = str(sym.getName())
            kind: NameKind
            if sym.isExternal():
                if kind_text != "Function" and kind_text != "Label":
                    continue
                address = self.import_address(name)
                kind, external = "import", True
            else:
                if kind_text not in ("Function", "Label"):
                    continue
                address = self.off(sym.getAddress())
                if sym.isExternalEntryPoint():
                    kind = "export"
                elif kind_text == "Function":
                    kind = "function"
                else:
                    kind = "data" if self.listing.getDefinedDataAt(sym.getAddress()) is not None else "label"
                external = False
            if address is None or (address, name, kind) in seen:
                continue
            seen.add((address, name, kind))
            out.append(Name(address=address, name=name, kind=kind, external=external))
        return out

    def _strings(self, segments: tuple[Segment, ...]) -> list[String]:
        from ghidra.program.model.data import StringDataInstance  # type: ignore[import-not-found]
        from ghidra.program.util import DefinedStringIterator  # type: ignore[import-not-found]

        sections = sorted((b.start, b.end, b.name) for b in segments)
        starts = [s[0] for s in sections]
        out = []
        for data in DefinedStringIterator.forProgram(self.program):
            address = self.off(data.getAddress())
            if address is None:
                continue
            instance = StringDataInstance.getStringDataInstance(data)
            value = instance.getStringValue()
            if value is None:
                continue
            value = str(value)
            encoding = string_encoding(str(instance.getCharsetName() or ""), value)
            if encoding is None:
                continue
            raw = bytes(b & 0xFF for b in data.getBytes())
            unit = 2 if encoding == "utf-16le" else 1
            while len(raw) >= unit and raw[-unit:] == b"\0" * unit:
                raw = raw[:-unit]
            i = bisect.bisect_right(starts, address) - 1
            section = sections[i][2] if i >= 0 and sections[i][0] <= address < sections[i][1] else None
            out.append(
                String(
                    address=address,
                    value=value[:MAX_STRING_CHARS],
                    encoding=encoding,
                    byte_length=len(raw),
                    truncated=len(value) > MAX_STRING_CHARS,
                    section=section,
                )
            )
        return out

    # -- one procedure -------------------------------------------------------------------------

    def _function(self, proc: Procedure) -> Any:
        f = self.functions.getFunctionAt(self.addr(proc.address))
        if f is None:
            raise ReaError(
                "execution_failure",
                f"Ghidra has no function at {hex(proc.address)} ({proc.name})",
                details={"procedure": hex(proc.address), "reason": "no_function"},
            )
        return f

    def detail(self, proc: Procedure) -> Detail:
        self.inventory()
        if proc.address in self._slot_imports:
            # An import placed at its slot is data, not code.
            return Detail(blocks=(), instructions=(), outgoing=(), calls=())
        f = self._function(proc)
        body = f.getBody()
        insns = list(self.listing.getInstructions(body, True))
        instructions = tuple(self._instruction(i) for i in insns)
        outgoing: list[Reference] = []
        calls: list[CallSite] = []
        inside = {(s, e) for s, e in proc.ranges}
        for insn in insns:
            self._refs_from(insn, proc, inside, outgoing, calls)
        return Detail(
            blocks=tuple(self._blocks(body, instructions, inside)),
            instructions=instructions,
            outgoing=tuple(outgoing),
            calls=tuple(calls),
        )

    def _instruction(self, insn: Any) -> Instruction:
        operands = ", ".join(str(insn.getDefaultOperandRepresentation(k)) for k in range(int(insn.getNumOperands())))
        address = self.off(insn.getAddress())
        return Instruction(
            address=address if address is not None else 0,
            bytes=bytes(b & 0xFF for b in insn.getBytes()).hex(),
            mnemonic=str(insn.getMnemonicString()).lower(),
            operands=operands,
        )

    def _blocks(self, body: Any, instructions: tuple[Instruction, ...], inside: set[tuple[int, int]]) -> list[Block]:
        from ghidra.program.model.block import BasicBlockModel  # type: ignore[import-not-found]

        addresses = [i.address for i in instructions]
        out = []
        for block in java_iter(BasicBlockModel(self.program).getCodeBlocksContaining(body, self.monitor)):
            start, last = self.off(block.getMinAddress()), self.off(block.getMaxAddress())
            if start is None or last is None:
                continue
            end = last + 1
            count = bisect.bisect_left(addresses, end) - bisect.bisect_left(addresses, start)
            successors, kinds = [], []
            for dest in java_iter(block.getDestinations(self.monitor)):
                to = self.off(dest.getDestinationAddress())
                flow = dest.getFlowType()
                if to is None or flow.isCall() or not _within(to, inside):
                    continue
                successors.append(to)
                kinds.append(
                    "fallthrough" if flow.isFallthrough() else "conditional" if flow.isConditional() else "jump"
                )
            out.append(
                Block(
                    start=start, end=end, instruction_count=count, successors=tuple(successors), edge_kinds=tuple(kinds)
                )
            )
        out.sort(key=lambda b: b.start)
        return out

    def _proc_name(self, address: int) -> str | None:
        p = self._starts.get(address)
        return None if p is None else p.name

    def _refs_from(
        self, insn: Any, proc: Procedure, inside: set[tuple[int, int]], outgoing: list[Reference], calls: list[CallSite]
    ) -> None:
        src = self.off(insn.getAddress())
        if src is None:
            return
        flow = insn.getFlowType()
        resolved = False

        def emit(dst: int | None, kind: ReferenceKind, name: str | None = None) -> None:
            outgoing.append(
                Reference(
                    src=src,
                    dst=dst,
                    kind=kind,
                    from_procedure=proc.address,
                    to_name=name if name is not None else self._proc_name(dst) if dst else None,
                )
            )

        def through_import(name: str, slot: int | None, is_call: bool) -> None:
            # The instruction reads an import slot: the external read, then the call (or jump) reaching the import.
            if slot is not None:
                emit(slot, "external", name)
            target = self.import_address(name)
            if target == proc.address:
                return  # the import's own stub jumping through its slot
            emit(target, "call" if is_call else "jump", name)
            if is_call:
                calls.append(CallSite(insn=src, target=target, name=name, kind="import"))

        for ref in insn.getReferencesFrom():
            kind = ref.getReferenceType()
            to = ref.getToAddress()
            if to.isExternalAddress():
                sym = self.symbols.getPrimarySymbol(to)
                name = str(sym.getName()) if sym is not None else None
                if name is not None and (kind.isCall() or kind.isJump() or flow.isCall() or flow.isJump()):
                    through_import(name, self.import_slot.get(name), kind.isCall() or flow.isCall())
                    resolved = True
                continue
            dst = self.off(to)
            if dst is None:
                continue
            if kind.isCall():
                target = self._starts.get(dst)
                callee_kind = (
                    "import"
                    if target is not None and target.kind == "import"
                    else ("indirect" if kind.isComputed() else "direct")
                )
                emit(dst, "call")
                calls.append(CallSite(insn=src, target=dst, name=self._proc_name(dst), kind=callee_kind))
                resolved = True
            elif kind.isJump():
                if kind.isComputed():
                    emit(dst, "computed")
                    resolved = True
                elif not _within(dst, inside):
                    emit(dst, "jump")
                    target = self._starts.get(dst)
                    if target is not None and dst != proc.address:
                        calls.append(
                            CallSite(
                                insn=src,
                                target=dst,
                                name=target.name,
                                kind="import" if target.kind == "import" else "direct",
                            )
                        )
            elif dst in self._slot_names and (flow.isCall() or flow.isJump()):
                through_import(self._slot_names[dst], dst, flow.isCall())
                resolved = True
            elif kind.isData() or kind.isRead() or kind.isWrite():
                emit(dst, "write" if kind.isWrite() else "read" if kind.isRead() else "data")
        if flow.isComputed() and not resolved:
            emit(None, "indirect")
            if flow.isCall():
                calls.append(CallSite(insn=src, target=None, name=None, kind="indirect"))

    # -- incoming references -------------------------------------------------------------------

    def incoming(self, address: int) -> list[Reference]:
        self.inventory()
        out: list[Reference] = []
        slot_name = self._slot_names.get(address)
        for ref in self.references.getReferencesTo(self.addr(address)):
            src = self.off(ref.getFromAddress())
            if src is None:
                continue
            owner = self.functions.getFunctionContaining(ref.getFromAddress())
            from_proc = None if owner is None else self.off(owner.getEntryPoint())
            kind = ref.getReferenceType()
            name = self._proc_name(address)
            if slot_name is not None:
                insn = self.listing.getInstructionAt(ref.getFromAddress())
                flow = None if insn is None else insn.getFlowType()
                if flow is not None and (flow.isCall() or flow.isJump()):
                    out.append(
                        Reference(src=src, dst=address, kind="external", from_procedure=from_proc, to_name=slot_name)
                    )
                    out.append(
                        Reference(
                            src=src,
                            dst=address,
                            kind="call" if flow.isCall() else "jump",
                            from_procedure=from_proc,
                            to_name=slot_name,
                        )
                    )
                    continue
            out.append(Reference(src=src, dst=address, kind=_kind(kind), from_procedure=from_proc, to_name=name))
        return out

    # -- pseudo code ---------------------------------------------------------------------------

    def pseudo_code(self, proc: Procedure, timeout_s: int) -> str:
        f = self._function(proc)
        decompiler = self._decompiler_for()
        result = decompiler.decompileFunction(f, int(timeout_s), self.monitor)
        if result.isTimedOut():
            raise ReaError(
                "provider_timeout",
                f"Ghidra's decompiler did not finish {proc.name} within {timeout_s} s",
                remediation="Raise REA_GHIDRA_DECOMPILE_TIMEOUT_MS, or read procedure_assembly instead.",
                details={
                    "procedure": hex(proc.address),
                    "timeout_ms": timeout_s * 1000,
                    "setting": "REA_GHIDRA_DECOMPILE_TIMEOUT_MS",
                },
            )
        decompiled = result.getDecompiledFunction() if result.decompileCompleted() else None
        if decompiled is None:
            message = str(result.getErrorMessage() or "").strip()
            raise ReaError(
                "execution_failure",
                f"Ghidra's decompiler produced no code for {proc.name}",
                remediation="Read procedure_assembly for this procedure instead.",
                details={"procedure": hex(proc.address), "reason": "no_output", "decompiler_message": message[:300]},
            )
        return str(decompiled.getC())

    def apply_user_types(self, types: Any) -> tuple[bool, list[str]]:
        """The analyst's library and prototypes into the program (``rea_plugins.ghidra.types``); when they
        changed, the decompiler forgets what it decompiled before them."""
        from rea_plugins.ghidra.types import Applied

        if self._types is None:
            self._types = Applied()
        changed, problems = self._types.apply(self, types)
        if changed and self._decompiler is not None:
            self._decompiler.flushCache()
        return changed, problems

    def _decompiler_for(self) -> Any:
        if self._decompiler is None:
            from ghidra.app.decompiler import DecompileOptions  # type: ignore[import-not-found]
            from ghidra.app.decompiler import DecompInterface  # type: ignore[import-not-found]

            decompiler = DecompInterface()
            decompiler.setOptions(DecompileOptions())
            if not decompiler.openProgram(self.program):
                raise ReaError(
                    "provider_unavailable",
                    "Ghidra's decompiler could not start",
                    remediation="Check the Ghidra installation (`rea doctor`); the decompiler is a "
                    "native program shipped with Ghidra.",
                    details={
                        "reason": "decompiler_unavailable",
                        "decompiler_message": str(decompiler.getLastMessage() or "")[:300],
                    },
                )
            self._decompiler = decompiler
        return self._decompiler

    def close(self) -> None:
        if self._decompiler is not None:
            self._decompiler.dispose()
            self._decompiler = None


def _within(address: int, ranges: Iterable[tuple[int, int]]) -> bool:
    return any(start <= address < end for start, end in ranges)


def _kind(ref_type: Any) -> ReferenceKind:
    """The contract's reference kind of a Ghidra ``RefType``."""
    if ref_type.isCall():
        return "call"
    if ref_type.isJump():
        return "computed" if ref_type.isComputed() else "jump"
    if ref_type.isWrite():
        return "write"
    if ref_type.isRead():
        return "read"
    return "data"
