"""One emulation under Unicorn: the binary's load image, a stack, a heap, the caller's buffers, stubbed imports.

Runs in the emulation worker (``rea_plugins.emulation.worker``), never in the server: Unicorn is C, and the
guest's code only ever runs as Unicorn's translation of it. The plan (what to map and run) comes from the
server, built from the provider's segments and imports; this module only reads the target's file bytes.
Addresses inside the image are reported as static (file) addresses, whatever base the image was loaded at.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable
from typing import Any

import msgspec
from unicorn import UC_HOOK_CODE
from unicorn import UC_HOOK_INSN
from unicorn import UC_HOOK_INTR
from unicorn import UC_HOOK_MEM_INVALID
from unicorn import UC_MEM_FETCH_PROT
from unicorn import UC_MEM_FETCH_UNMAPPED
from unicorn import UC_MEM_READ_PROT
from unicorn import UC_MEM_READ_UNMAPPED
from unicorn import UC_MEM_WRITE_PROT
from unicorn import UC_MEM_WRITE_UNMAPPED
from unicorn import UC_PROT_ALL
from unicorn import UC_PROT_EXEC
from unicorn import UC_PROT_READ
from unicorn import UC_PROT_WRITE
from unicorn import Uc
from unicorn import UcError
from unicorn import unicorn_const as ucc
from unicorn import x86_const

from rea.plugin import ReaError
from rea.plugin import elf_relocations
from rea.plugin import open_regular
from rea.plugin import relr_slots
from rea_plugins.emulation.arch import ARCHES
from rea_plugins.emulation.arch import THUMB_MODE
from rea_plugins.emulation.arch import Arch
from rea_plugins.emulation.arch import register_id
from rea_plugins.emulation.plan import Plan
from rea_plugins.emulation.plan import Value
from rea_plugins.emulation.shapes import Buffer
from rea_plugins.emulation.shapes import Heap
from rea_plugins.emulation.shapes import ImportCall
from rea_plugins.emulation.shapes import MemoryWritten
from rea_plugins.emulation.shapes import Pointed
from rea_plugins.emulation.shapes import ReturnValue
from rea_plugins.emulation.shapes import Run
from rea_plugins.emulation.shapes import StopInfo
from rea_plugins.emulation.shapes import StopReason
from rea_plugins.emulation.shapes import WrittenRun

PAGE = 0x1000
STUB_SLOT = 16
TLS_BYTES = 0x10000
STUB_BYTES = 0x10000
# Relocation types that name a symbol: (absolute word, GOT entry, PLT slot) per architecture.
_SYMBOLIC = {"x86_64": (1, 6, 7), "x86": (1, 6, 7), "arm64": (257, 1025, 1026), "arm": (2, 21, 22)}


class _File:
    """The target's file opened for reading (never blocking on a FIFO), closed on exit."""

    def __init__(self, path: str) -> None:
        self.fd = open_regular(path, code="target_unavailable", what="target")

    def __enter__(self) -> int:
        return self.fd

    def __exit__(self, *_exc: object) -> None:
        os.close(self.fd)


# Reads a modelled libc function makes of guest memory (a string without its terminator) stop here.
MAX_STRING = 1 << 20
# Imports the emulator answers itself: name -> argument count. Others return what the caller set, or stop.
MODELLED = {
    "memcpy": 3,
    "memmove": 3,
    "memset": 3,
    "memcmp": 3,
    "strlen": 1,
    "strnlen": 2,
    "strcpy": 2,
    "strncpy": 3,
    "strcmp": 2,
    "strncmp": 3,
    "strdup": 1,
    "malloc": 1,
    "calloc": 2,
    "realloc": 2,
    "free": 1,
    "__memcpy_chk": 4,
    "__memmove_chk": 4,
    "__memset_chk": 4,
    "__strcpy_chk": 3,
    "__stack_chk_fail": 0,
    "abort": 0,
    "exit": 1,
    "_exit": 1,
}
# What the caller's unset imports report besides their name: this many argument registers.
UNMODELLED_ARGUMENTS = 4
_FAULTS = {
    UC_MEM_READ_UNMAPPED: ("read", "unmapped"),
    UC_MEM_WRITE_UNMAPPED: ("write", "unmapped"),
    UC_MEM_FETCH_UNMAPPED: ("fetch", "unmapped"),
    UC_MEM_READ_PROT: ("read", "protected"),
    UC_MEM_WRITE_PROT: ("write", "read-only"),
    UC_MEM_FETCH_PROT: ("fetch", "not executable"),
}


class _Placed(msgspec.Struct, frozen=True, kw_only=True):
    """A caller's buffer as placed: its label, runtime address and capacity."""

    label: str
    address: int
    size: int


class Stop(Exception):
    """Raised inside the emulator's bookkeeping (never across Unicorn) to end the run with a reason."""

    def __init__(self, reason: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
        self.extra = extra


def _perms(text: str) -> int:
    out = 0
    if "r" in text:
        out |= UC_PROT_READ
    if "w" in text:
        out |= UC_PROT_WRITE
    if "x" in text:
        out |= UC_PROT_EXEC
    return out or UC_PROT_READ


def _down(value: int) -> int:
    return value & ~(PAGE - 1)


def _up(value: int) -> int:
    return (value + PAGE - 1) & ~(PAGE - 1)


def _hex(value: int) -> str:
    return f"0x{value:x}"


def text_of(data: bytes) -> str | None:
    """The bytes up to the first NUL as text, when they read as text (a decrypted string); None otherwise."""
    head = data.split(b"\0", 1)[0]
    if not head:
        return None
    decoded = head.decode("utf-8", errors="replace")
    printable = sum(1 for c in decoded if c.isprintable() or c in "\t\r\n")
    return decoded if printable * 10 >= len(decoded) * 9 else None


class Emulation:
    """The machine of one run: memory map, registers, stubs and what the run did."""

    def __init__(self, plan: Plan) -> None:
        arch = ARCHES.get(plan.arch)
        if arch is None:
            raise ReaError(
                "unsupported_target",
                f"the emulator does not run {plan.arch} code",
                details={"architecture": plan.arch, "supported": sorted(ARCHES)},
            )
        self.arch: Arch = arch
        self.plan = plan
        limits = plan.limits
        self.limits = limits
        self.thumb = plan.thumb
        mode = arch.uc_mode | (THUMB_MODE if self.thumb else 0)
        self.uc = Uc(arch.uc_arch, mode)
        self.word = arch.bits // 8
        layout = arch.layout
        segments = plan.image.segments
        lowest = min((s.start for s in segments), default=0)
        # A position-independent image (linked at 0) is loaded higher, so that page 0 stays unmapped.
        self.bias = layout.pie_base if lowest < 0x10000 else 0
        self.image: list[tuple[int, int, str]] = []  # (static start, static end, name) of each segment
        self.sections: list[tuple[int, int, str]] = [
            (s.start, s.end, s.name) for s in plan.image.sections if s.end > s.start
        ]
        self.mapped_bytes = 0
        self.writable: list[tuple[int, bytes]] = []  # (runtime start, bytes before the run) of writable pages
        self.writable_runs: list[tuple[int, int]] = []
        self.heap_next = layout.heap
        self.heap_end = layout.heap + limits.heap_bytes
        self.allocations: dict[int, int] = {}
        self.freed: set[int] = set()
        self.heap_failures = 0
        self.calls: list[ImportCall] = []
        self.calls_total = 0
        self.stop: Stop | None = None
        # A memory fault, as it is reported (its pc added when the run ends).
        self.fault: StopInfo | None = None
        self.buffers: list[_Placed] = []
        self.buffer_next = layout.buffers
        self.stub_names: dict[int, str] = {}
        self.stubs_by_name: dict[str, int] = {}
        self.import_at: dict[int, str] = {}
        self.sentinel = layout.stubs
        self.returns: dict[str, int] = dict(plan.import_returns)

    # -- addresses ---------------------------------------------------------------------------------

    def runtime(self, static: int) -> int:
        return static + self.bias

    def in_image(self, runtime: int) -> bool:
        static = runtime - self.bias
        return any(lo <= static < hi for lo, hi, _ in self.image)

    def shown(self, runtime: int) -> str:
        """An address as the result shows it: static inside the image, the emulator's own elsewhere."""
        return _hex(runtime - self.bias if self.in_image(runtime) else runtime)

    def region_of(self, runtime: int) -> str:
        layout = self.arch.layout
        if self.in_image(runtime):
            static = runtime - self.bias
            names = [n for lo, hi, n in self.sections if lo <= static < hi]
            if names:
                return names[-1]
            return next(n for lo, hi, n in self.image if lo <= static < hi)
        if layout.heap <= runtime < self.heap_end:
            return "heap"
        if layout.buffers <= runtime < self.buffer_next:
            return "buffer"
        if layout.stack_top - self.limits.stack_bytes <= runtime < layout.stack_top:
            return "stack"
        if layout.stubs <= runtime < layout.stubs + STUB_BYTES:
            return "import stubs"
        if layout.tls <= runtime < layout.tls + TLS_BYTES:
            return "thread-local storage"
        return "unmapped"

    # -- memory ------------------------------------------------------------------------------------

    def _map(self, start: int, size: int, perms: int, what: str) -> None:
        self.mapped_bytes += size
        if self.mapped_bytes > self.limits.max_memory_bytes:
            raise ReaError(
                "resource_constraint",
                f"the emulation needs more than {self.limits.max_memory_bytes} bytes of memory ({what})",
                remediation="Raise max_memory_mb, or lower stack_kb/heap_kb.",
                details={"resource": "memory", "limit_bytes": self.limits.max_memory_bytes, "mapping": what},
            )
        try:
            self.uc.mem_map(start, size, perms)
        except UcError as exc:
            raise ReaError(
                "unsupported_target",
                f"the emulator cannot map {what} at {_hex(start)}: {exc}",
                details={"reason": "layout_clash", "address": _hex(start), "size": size},
            ) from None

    def load_image(self) -> None:
        segments = [seg for seg in self.plan.image.segments if seg.end > seg.start]
        # Bounded before anything is built per page: a hostile header can declare terabytes.
        declared = sum(_up(seg.end - seg.start) for seg in segments)
        if declared > self.limits.max_memory_bytes:
            raise ReaError(
                "resource_constraint",
                f"the image's segments span {declared} bytes, more than the {self.limits.max_memory_bytes} allowed",
                remediation="Raise max_memory_mb (the segments are mapped whole).",
                details={"resource": "memory", "limit_bytes": self.limits.max_memory_bytes, "mapping": "the image"},
            )
        pages: dict[int, int] = {}
        for seg in segments:
            self.image.append((seg.start, seg.end, seg.name))
            for page in range(_down(self.runtime(seg.start)), _up(self.runtime(seg.end)), PAGE):
                pages[page] = pages.get(page, 0) | _perms(seg.permissions)
        # Contiguous pages of equal permissions are one mapping.
        runs: list[list[int]] = []
        for page in sorted(pages):
            if runs and runs[-1][1] == page and runs[-1][2] == pages[page]:
                runs[-1][1] = page + PAGE
            else:
                runs.append([page, page + PAGE, pages[page]])
        for lo, hi, perms in runs:
            self._map(lo, hi - lo, perms, "the image")
        with _File(self.plan.image.path) as fd:
            for seg in self.plan.image.segments:
                size = min(seg.file_size, seg.end - seg.start)
                if size > 0:
                    self.uc.mem_write(self.runtime(seg.start), os.pread(fd, size, seg.file_offset))
        self.writable_runs = [(lo, hi) for lo, hi, perms in runs if perms & UC_PROT_WRITE]

    def snapshot(self) -> None:
        """The writable image pages as the run starts (relocated, GOT slots pointing at the stubs)."""
        self.writable = [(lo, bytes(self.uc.mem_read(lo, hi - lo))) for lo, hi in self.writable_runs]

    def relocate(self) -> None:
        """Do what the dynamic loader would for this image alone: RELATIVE slots get the load base, slots of
        symbols the image defines get their loaded address, slots of imports get the import's stub (a weak
        undefined one stays null)."""
        tables = self.plan.image.relocations
        if not tables:
            return
        with _File(self.plan.image.path) as fd:
            symbols = self._symbols(fd, "dynsym", "dynstr")
            for table in tables:
                data = os.pread(fd, table.size, table.file_offset)
                if table.kind == "relr":
                    for slot in relr_slots(data, self.word, True):
                        self._add_bias(slot)
                    continue
                self._apply(data, table.kind == "rela", symbols)
            if self.arch.name == "arm" and not self.thumb:
                entry = self.plan.entry
                functions = symbols + self._symbols(fd, "symtab", "strtab")
                self.thumb = any(value == entry | 1 and kind == 2 for _n, value, _d, _w, kind in functions)

    def _apply(self, data: bytes, rela: bool, symbols: list[tuple[str, int, bool, bool, int]]) -> None:
        arch = self.arch
        absolute, glob_dat, jump_slot = _SYMBOLIC[arch.name]
        for slot, kind, index, addend in elf_relocations(
            data, rela=rela, wide=arch.bits == 64, little=True, limit=1 << 22
        ):
            where = self.runtime(slot)
            if not self.in_image(where):
                continue
            if kind == arch.relative_type:
                if rela and addend is not None:
                    self.write_word(where, (addend + self.bias) & arch.mask)
                else:
                    self._add_bias(slot)
                continue
            if kind not in (absolute, glob_dat, jump_slot) or not 0 < index < len(symbols):
                continue
            name, value, defined, weak, _type = symbols[index]
            if defined:
                target = value + self.bias
            elif weak or not name:
                target = 0
            else:
                target = self.stub_for(name)
            # RELA carries the addend; REL keeps it in the slot, for the absolute type only.
            extra = (addend or 0) if rela else (self.read_word(where) if kind == absolute else 0)
            self.write_word(where, (target + extra) & arch.mask)

    def _symbols(self, fd: int, table: str, strings: str) -> list[tuple[str, int, bool, bool, int]]:
        """(name, value, defined, weak, type) of each entry of a symbol table, in index order."""
        found = self.plan.image.symbols
        if table not in found or strings not in found:
            return []
        t, st = found[table], found[strings]
        data = os.pread(fd, min(t.size, 64 << 20), t.file_offset)
        names = os.pread(fd, min(st.size, 64 << 20), st.file_offset)
        layout = struct.Struct("<IBBHQQ" if self.arch.bits == 64 else "<IIIBBH")
        out = []
        for entry in layout.iter_unpack(data[: len(data) // layout.size * layout.size]):
            if self.arch.bits == 64:
                name_at, info, _other, shndx, value, _size = entry
            else:
                name_at, value, _size, info, _other, shndx = entry
            end = names.find(b"\0", name_at)
            name = names[name_at : end if end >= 0 else len(names)].decode("utf-8", "replace")
            out.append((name, value, shndx != 0, info >> 4 == 2, info & 0xF))
        return out

    def _add_bias(self, slot: int) -> None:
        if self.bias and self.in_image(self.runtime(slot)):
            where = self.runtime(slot)
            self.write_word(where, (self.read_word(where) + self.bias) & self.arch.mask)

    def read_word(self, address: int) -> int:
        return int.from_bytes(bytes(self.uc.mem_read(address, self.word)), "little")

    def write_word(self, address: int, value: int) -> None:
        self.uc.mem_write(address, (value & self.arch.mask).to_bytes(self.word, "little"))

    def read(self, address: int, size: int) -> bytes:
        try:
            return bytes(self.uc.mem_read(address, size))
        except UcError:
            raise Stop("import_fault", f"an import read {size} bytes at unmapped {self.shown(address)}") from None

    def write(self, address: int, data: bytes) -> None:
        try:
            self.uc.mem_write(address, data)
        except UcError:
            raise Stop("import_fault", f"an import wrote {len(data)} bytes at unmapped {self.shown(address)}") from None

    def cstring(self, address: int, limit: int = MAX_STRING) -> bytes:
        out = bytearray()
        while len(out) < limit:
            chunk = self.read_some(address + len(out), min(256, limit - len(out)))
            nul = chunk.find(b"\0")
            if nul >= 0:
                out += chunk[:nul]
                return bytes(out)
            out += chunk
        raise Stop("import_fault", f"no string terminator within {limit} bytes at {self.shown(address)}")

    def read_some(self, address: int, size: int) -> bytes:
        """Up to ``size`` bytes at ``address``, fewer where the mapping ends first (a string near a page end)."""
        end = min(address + size, _up(address + 1))
        first = self.read(address, end - address)
        if len(first) == size:
            return first
        try:
            return first + bytes(self.uc.mem_read(end, size - len(first)))
        except UcError:
            return first

    # -- heap, buffers, stack ----------------------------------------------------------------------

    def malloc(self, size: int) -> int:
        size = max(size, 1)
        start = (self.heap_next + 15) & ~15
        if start + size > self.heap_end:
            self.heap_failures += 1
            return 0
        self.heap_next = start + size
        self.allocations[start] = size
        return start

    def free(self, address: int) -> None:
        if address == 0:
            return
        if address not in self.allocations or address in self.freed:
            what = "twice" if address in self.freed else "that malloc did not return"
            raise Stop("heap_misuse", f"free of {self.shown(address)}, a pointer {what}", address=self.shown(address))
        self.freed.add(address)

    def place_buffer(self, data: bytes, capacity: int, label: str) -> int:
        capacity = max(len(data), capacity, 1)
        start = self.buffer_next
        self.buffer_next = _up(start + capacity + PAGE)  # a guard page after each buffer
        self._map(start, _up(capacity), UC_PROT_READ | UC_PROT_WRITE, f"buffer {label}")
        self.uc.mem_write(start, data)
        self.buffers.append(_Placed(label=label, address=start, size=capacity))
        return start

    def value(self, value: Value, label: str) -> int:
        if value.integer is not None:
            return value.integer & self.arch.mask
        if value.address is not None:
            return self.runtime(value.address) & self.arch.mask
        if value.pointers is not None:
            # An array of pointers to buffers, NULL-terminated (char **argv); the array is a buffer itself.
            targets = [self.value(v, f"{label}[{i}]") for i, v in enumerate(value.pointers)]
            table = b"".join(t.to_bytes(self.word, "little") for t in [*targets, 0])
            return self.place_buffer(table, 0, label)
        return self.place_buffer(value.data, value.capacity, label)

    def setup_memory(self) -> None:
        layout = self.arch.layout
        stack = self.limits.stack_bytes
        self._map(layout.stack_top - stack, stack, UC_PROT_READ | UC_PROT_WRITE, "the stack")
        self._map(layout.heap, _up(self.limits.heap_bytes), UC_PROT_READ | UC_PROT_WRITE, "the heap")
        self._map(layout.stubs, STUB_BYTES, UC_PROT_ALL, "the import stubs")
        if self.arch.thread_pointer is not None:
            self._map(layout.tls, TLS_BYTES, UC_PROT_READ | UC_PROT_WRITE, "thread-local storage")
            self.uc.reg_write(self.arch.thread_pointer, layout.tls + TLS_BYTES // 2)
        for address, name, kind in self.plan.image.imports:
            stub = self.stub_for(name)
            if kind == "slot":
                # A GOT slot: the code loads the import's address from it, and lands on the stub.
                if self.in_image(self.runtime(address)):
                    self.write_word(self.runtime(address), stub)
            else:
                self.import_at[self.runtime(address)] = name

    def stub_for(self, name: str) -> int:
        """The stub address of import ``name`` (one 16-byte slot each; the first slot is the return sentinel)."""
        stub = self.stubs_by_name.get(name)
        if stub is None:
            if len(self.stubs_by_name) + 2 > STUB_BYTES // STUB_SLOT:
                return 0  # more imports than slots: the rest stay null and fault where called
            stub = self.arch.layout.stubs + STUB_SLOT * (len(self.stubs_by_name) + 1)
            self.stubs_by_name[name] = stub
            self.stub_names[stub] = name
        return stub

    # -- imports -----------------------------------------------------------------------------------

    def argument(self, index: int) -> int:
        arch = self.arch
        if index < len(arch.arguments):
            return int(self.uc.reg_read(arch.arguments[index])) & arch.mask
        sp = int(self.uc.reg_read(arch.sp))
        # On x86 the return address is on the stack above the arguments.
        skip = self.word if arch.link is None else 0
        return self.read_word(sp + skip + (index - len(arch.arguments)) * self.word)

    def return_from_stub(self, value: int | None) -> int:
        arch = self.arch
        if value is not None:
            self.uc.reg_write(arch.result, value & arch.mask)
        if arch.link is not None:
            back = int(self.uc.reg_read(arch.link))
        else:
            sp = int(self.uc.reg_read(arch.sp))
            back = self.read_word(sp)
            self.uc.reg_write(arch.sp, sp + self.word)
        self.uc.reg_write(arch.pc, back)
        return back

    def on_import(self, name: str) -> None:
        base = name.split("@", 1)[0]
        arity = MODELLED.get(base)
        args = [self.argument(i) for i in range(arity if arity is not None else UNMODELLED_ARGUMENTS)]
        arch = self.arch
        back = (
            int(self.uc.reg_read(arch.link))
            if arch.link is not None
            else self.read_word(int(self.uc.reg_read(arch.sp)))
        )
        entry = ImportCall(name=name, arguments=[_hex(a) for a in args], return_address=self.shown(back))
        self.calls_total += 1
        # Listed before it runs: a call that stops the run is shown, without a return value.
        index = len(self.calls) if len(self.calls) < self.limits.max_calls else None
        if index is not None:
            self.calls.append(entry)
        stubbed = None
        if arity is not None:
            result = self.modelled(base, args)
        elif base in self.returns or "*" in self.returns:
            result = self.returns.get(base, self.returns.get("*", 0))
            stubbed = "import_returns"
        else:
            raise Stop(
                "unmodelled_import",
                f"{name} is not modelled; set import_returns[{name!r}] to its return value to go on",
                import_name=name,
                address=entry.return_address,
            )
        if index is not None:
            returned = _hex(result & arch.mask) if result is not None else None
            self.calls[index] = msgspec.structs.replace(entry, return_value=returned, stubbed=stubbed)
        self.return_from_stub(result)

    def modelled(self, name: str, a: list[int]) -> int | None:
        if name in ("memcpy", "memmove", "__memcpy_chk", "__memmove_chk"):
            self.write(a[0], self.read(a[1], self._bounded(a[2])))
            return a[0]
        if name in ("memset", "__memset_chk"):
            self.write(a[0], bytes([a[1] & 0xFF]) * self._bounded(a[2]))
            return a[0]
        if name == "memcmp":
            x, y = self.read(a[0], self._bounded(a[2])), self.read(a[1], self._bounded(a[2]))
            return _compare(x, y)
        if name == "strlen":
            return len(self.cstring(a[0]))
        if name == "strnlen":
            return len(self.cstring_bounded(a[0], a[1]))
        if name in ("strcpy", "__strcpy_chk"):
            self.write(a[0], self.cstring(a[1]) + b"\0")
            return a[0]
        if name == "strncpy":
            n = self._bounded(a[2])
            src = self.cstring_bounded(a[1], n)
            self.write(a[0], (src + b"\0" * n)[:n])
            return a[0]
        if name == "strcmp":
            return _compare(self.cstring(a[0]), self.cstring(a[1]))
        if name == "strncmp":
            n = self._bounded(a[2])
            return _compare(self.cstring_bounded(a[0], n), self.cstring_bounded(a[1], n))
        if name == "strdup":
            text = self.cstring(a[0]) + b"\0"
            out = self.malloc(len(text))
            if out:
                self.write(out, text)
            return out
        if name == "malloc":
            return self.malloc(self._bounded(a[0], heap=True))
        if name == "calloc":
            out = self.malloc(self._bounded(a[0] * a[1], heap=True))
            if out:
                self.write(out, b"\0" * max(a[0] * a[1], 1))
            return out
        if name == "realloc":
            size = self._bounded(a[1], heap=True)
            out = self.malloc(size)
            if out and a[0]:
                old = self.allocations.get(a[0], 0)
                self.write(out, self.read(a[0], min(old, size)))
                self.free(a[0])
            return out
        if name == "free":
            self.free(a[0])
            return None
        if name == "__stack_chk_fail":
            raise Stop("stack_check_failed", "__stack_chk_fail was called: the stack canary was overwritten")
        if name == "abort":
            raise Stop("exit_called", "abort was called")
        raise Stop("exit_called", f"{name}({a[0] & 0xFFFFFFFF}) was called", exit_status=a[0] & 0xFF)

    def cstring_bounded(self, address: int, limit: int) -> bytes:
        out = bytearray()
        while len(out) < limit:
            chunk = self.read_some(address + len(out), min(256, limit - len(out)))
            nul = chunk.find(b"\0")
            if nul >= 0:
                return bytes(out + chunk[:nul])
            out += chunk
        return bytes(out)

    def _bounded(self, size: int, heap: bool = False) -> int:
        limit = int(self.limits.heap_bytes if heap else self.limits.max_memory_bytes)
        if size > limit:
            if heap:
                return limit + 1  # malloc then fails as a real one would: NULL
            raise Stop("import_fault", f"an import was asked to touch {size} bytes (more than the memory bound)")
        return size

    # -- hooks -------------------------------------------------------------------------------------

    def install_hooks(self) -> None:
        uc = self.uc
        layout = self.arch.layout
        uc.hook_add(UC_HOOK_CODE, self._hook_stub, begin=layout.stubs + STUB_SLOT, end=layout.stubs + STUB_BYTES)
        for lo, hi in _clusters(sorted(self.import_at)):
            uc.hook_add(UC_HOOK_CODE, self._hook_import, begin=lo, end=hi)
        uc.hook_add(UC_HOOK_MEM_INVALID, self._hook_fault)
        uc.hook_add(UC_HOOK_INTR, self._hook_interrupt)
        if self.arch.name == "x86_64":
            uc.hook_add(UC_HOOK_INSN, self._hook_syscall, aux1=x86_const.UC_X86_INS_SYSCALL)
        elif self.arch.name == "x86":
            uc.hook_add(UC_HOOK_INSN, self._hook_syscall, aux1=x86_const.UC_X86_INS_SYSENTER)

    def _guard(self, uc: Uc, action: Callable[[], None]) -> None:
        if self.stop is not None:
            uc.emu_stop()
            return
        try:
            action()
        except Stop as stop:
            self.stop = stop
            uc.emu_stop()

    def _hook_stub(self, uc: Uc, address: int, size: int, _user: object) -> None:
        name = self.stub_names.get(address)
        if name is not None:
            self._guard(uc, lambda: self.on_import(name))

    def _hook_import(self, uc: Uc, address: int, size: int, _user: object) -> None:
        name = self.import_at.get(address)
        if name is not None:
            self._guard(uc, lambda: self.on_import(name))

    def _hook_fault(self, uc: Uc, access: int, address: int, size: int, value: int, _user: object) -> bool:
        what, why = _FAULTS.get(access, ("access", "invalid"))
        shown = self.shown(address)
        self.fault = StopInfo(
            reason="memory_fault",
            detail=f"{what} of {size} bytes at {shown} ({why})",
            pc="",
            fault_address=shown,
            access=what,
        )
        return False

    def _hook_interrupt(self, uc: Uc, number: int, _user: object) -> None:
        self.stop = Stop("interrupt", f"the code raised interrupt {number} (a system call or trap)", number=number)
        uc.emu_stop()

    def _hook_syscall(self, uc: Uc, _user: object) -> None:
        self.stop = Stop("interrupt", "the code made a system call")
        uc.emu_stop()

    # -- run ---------------------------------------------------------------------------------------

    def prepare_stack(self, stack_values: list[int]) -> int:
        """The stack pointer at entry: arguments beyond the registers above it, the return sentinel as a call
        leaves it (pushed on x86, in the link register elsewhere)."""
        arch = self.arch
        sp = self.arch.layout.stack_top - 0x1000  # room above for the callee's home area / red zone
        sp -= len(stack_values) * self.word
        sp &= ~0xF
        for i, v in enumerate(stack_values):
            self.write_word(sp + i * self.word, v)
        if arch.link is None:
            sp -= self.word
            self.write_word(sp, self.sentinel)
        else:
            self.uc.reg_write(arch.link, self.sentinel)
        self.uc.reg_write(arch.sp, sp)
        return sp

    def run(self, begin: int, until: int) -> tuple[StopInfo, float]:
        """Why and where the run from ``begin`` stopped, and how long it took (ms)."""
        limits = self.limits
        started = time.perf_counter()
        error: UcError | None = None
        try:
            self.uc.emu_start(
                begin | (1 if self.thumb else 0),
                until,
                timeout=limits.timeout_ms * 1000,
                count=limits.max_instructions,
            )
        except UcError as exc:
            error = exc
        elapsed_ms = (time.perf_counter() - started) * 1000
        pc = int(self.uc.reg_read(self.arch.pc))
        return self._stop(pc, until, error, elapsed_ms), round(elapsed_ms, 3)

    def _stop(self, pc: int, until: int, error: UcError | None, elapsed_ms: float) -> StopInfo:
        stop = self._stopped(self.shown(pc), until == self.sentinel, pc == until, error, elapsed_ms)
        if stop.detail:
            return stop
        return msgspec.structs.replace(
            stop, detail="the procedure returned" if stop.reason == "returned" else "the end address was reached"
        )

    def _stopped(self, pc: str, returns: bool, at_end: bool, error: UcError | None, elapsed_ms: float) -> StopInfo:
        if self.stop is not None:
            # The extra facts a Stop carries are StopInfo's fields by name (import_name, address, ...).
            facts = {"reason": self.stop.reason, "detail": self.stop.detail, **self.stop.extra, "pc": pc}
            return msgspec.convert(facts, StopInfo)
        if self.fault is not None:
            return msgspec.structs.replace(self.fault, pc=pc)
        if error is not None:
            reason: StopReason = "invalid_instruction" if error.errno == ucc.UC_ERR_INSN_INVALID else "emulator_error"
            return StopInfo(reason=reason, detail=str(error), pc=pc)
        if at_end:
            return StopInfo(reason="returned" if returns else "reached_end", detail="", pc=pc)
        if elapsed_ms >= self.limits.timeout_ms * 0.95:
            return StopInfo(reason="time_limit", detail=f"stopped after {self.limits.timeout_ms} ms", pc=pc)
        limit = self.limits.max_instructions
        return StopInfo(reason="instruction_limit", detail=f"stopped after {limit} instructions", pc=pc)

    # -- results -----------------------------------------------------------------------------------

    def memory_written(self) -> MemoryWritten:
        """Bytes outside the stack that differ from before the run: the image's writable pages and the heap's
        live blocks (buffers are reported on their own), bounded to max_written_bytes of hex."""
        runs: list[tuple[int, bytes]] = []
        for start, before in self.writable:
            after = bytes(self.uc.mem_read(start, len(before)))
            if after != before:
                runs.extend(_differences(start, before, after))
        for address, size in sorted(self.allocations.items()):
            if address not in self.freed:
                runs.append((address, bytes(self.uc.mem_read(address, size))))
        budget = self.limits.max_written_bytes
        shown: list[WrittenRun] = []
        total = sum(len(d) for _, d in runs)
        for address, data in runs:
            if len(shown) >= 64 or budget <= 0:
                break
            part = data[:budget]
            budget -= len(part)
            shown.append(
                WrittenRun(
                    address=self.shown(address),
                    region=self.region_of(address),
                    length=len(data),
                    hex=part.hex(),
                    text=text_of(part),
                    truncated=len(part) < len(data),
                )
            )
        return MemoryWritten(runs=shown, total_runs=len(runs), total_bytes=total, truncated=len(shown) < len(runs))

    def buffer_results(self) -> list[Buffer]:
        out = []
        cap = self.limits.max_buffer_bytes
        for b in self.buffers:
            data = bytes(self.uc.mem_read(b.address, b.size))
            text = text_of(data)
            out.append(
                Buffer(
                    label=b.label,
                    address=_hex(b.address),
                    size=b.size,
                    hex=data[:cap].hex(),
                    text=text[:cap] if text is not None else None,
                    truncated=b.size > cap,
                )
            )
        return out

    def pointed(self, value: int) -> Pointed | None:
        """What a returned pointer points at, when it points into emulated memory (a decrypted string)."""
        region = self.region_of(value)
        if region in ("unmapped", "import stubs"):
            return None
        data = self.read_some(value, 64) if value else b""
        if not data:
            return None
        text = text_of(self.cstring_bounded(value, 4096) + b"\0")
        return Pointed(
            address=self.shown(value), region=region, text=text, hex=data[:32].hex() if text is None else None
        )

    def registers(self) -> dict[str, str]:
        return {name: _hex(int(self.uc.reg_read(rid))) for name, rid in self.arch.registers}

    def result(
        self,
        stop: StopInfo,
        elapsed_ms: float,
        *,
        return_value: ReturnValue | None = None,
        registers: dict[str, str] | None = None,
    ) -> Run:
        """What the run did, after it stopped."""
        live = [a for a in self.allocations if a not in self.freed]
        return Run(
            architecture=self.arch.name,
            load_bias=_hex(self.bias),
            stop=stop,
            elapsed_ms=elapsed_ms,
            return_value=return_value,
            registers=registers,
            buffers=self.buffer_results(),
            calls=self.calls,
            calls_total=self.calls_total,
            memory_written=self.memory_written(),
            heap=Heap(
                allocations=len(self.allocations),
                live=len(live),
                live_bytes=sum(self.allocations[a] for a in live),
                failed=self.heap_failures,
            ),
        )


def _compare(x: bytes, y: bytes) -> int:
    for a, b in zip(x, y, strict=False):
        if a != b:
            return (a - b) & 0xFFFFFFFF
    return (len(x) - len(y)) & 0xFFFFFFFF if len(x) != len(y) else 0


def _clusters(addresses: list[int], gap: int = 64) -> list[tuple[int, int]]:
    """Ranges covering ``addresses`` (sorted), one per run whose neighbours lie within ``gap`` bytes."""
    out: list[tuple[int, int]] = []
    for a in addresses:
        if out and a - out[-1][1] <= gap:
            out[-1] = (out[-1][0], a)
        else:
            out.append((a, a))
    return out


def _differences(start: int, before: bytes, after: bytes, gap: int = 8) -> list[tuple[int, bytes]]:
    """Runs of changed bytes (runs closer than ``gap`` merged), compared a 64-byte block at a time."""
    runs: list[list[int]] = []
    for block in range(0, len(before), 64):
        if before[block : block + 64] == after[block : block + 64]:
            continue
        for i in range(block, min(block + 64, len(before))):
            if before[i] != after[i]:
                if runs and i - runs[-1][1] <= gap:
                    runs[-1][1] = i + 1
                else:
                    runs.append([i, i + 1])
    return [(start + lo, after[lo:hi]) for lo, hi in runs]


def _initial_registers(em: Emulation, registers: dict[str, Value]) -> None:
    for name, value in registers.items():
        rid = register_id(em.arch, name)
        if rid is None:
            raise ReaError(
                "invalid_request",
                f"{em.arch.name} has no register {name}",
                details={
                    "issues": [{"path": f"registers/{name}", "code": "invalid_value", "message": "no such register"}]
                },
            )
        em.uc.reg_write(rid, em.value(value, name))


def emulate(plan: Plan) -> Run:
    """Run a procedure (``plan.mode == "procedure"``) or a range, and say what it did."""
    em = Emulation(plan)
    em.load_image()
    em.setup_memory()
    em.relocate()
    em.install_hooks()
    em.snapshot()
    arch = em.arch
    entry = em.runtime(plan.entry)
    if plan.mode == "procedure":
        values = [em.value(v, f"argument {i}") for i, v in enumerate(plan.arguments)]
        in_registers, on_stack = values[: len(arch.arguments)], values[len(arch.arguments) :]
        for rid, v in zip(arch.arguments, in_registers, strict=False):
            em.uc.reg_write(rid, v)
        em.prepare_stack(on_stack)
        _initial_registers(em, plan.registers)
        stop, elapsed_ms = em.run(entry, em.sentinel)
        result = int(em.uc.reg_read(arch.result)) & arch.mask
        returned: ReturnValue | None = None
        if stop.reason == "returned":
            signed = result - (1 << arch.bits) if result >> (arch.bits - 1) else result
            low = result & 0xFFFFFFFF
            returned = ReturnValue(
                hex=_hex(result),
                signed=signed,
                int32=low - (1 << 32) if low >> 31 else low,
                points_to=em.pointed(result),
            )
        return em.result(stop, elapsed_ms, return_value=returned)
    em.prepare_stack([])
    _initial_registers(em, plan.registers)
    stop, elapsed_ms = em.run(entry, em.runtime(plan.until))
    return em.result(stop, elapsed_ms, registers=em.registers())
