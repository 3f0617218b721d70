"""Objective-C runtime metadata of a Mach-O image, read from a LIEF binary: classes, protocols, categories, selectors.

One reader for the tools that need it (the apple family's class listings and native's procedure names, which name
an implementation ``-[Class selector]``). The structures are the objc4 runtime's (``objc-runtime-new.h``), as the
linker lays them out in ``__objc_classlist``, ``__objc_catlist``, ``__objc_protolist`` and ``__objc_selrefs``:

- ``class_t {isa, superclass, cache, vtable, data}``: ``data`` (low bits are flags; bit 0/1 mark a Swift class) is a
  ``class_ro_t {flags, instanceStart, instanceSize, [reserved,] ivarLayout, name, baseMethods, baseProtocols, ivars,
  weakIvarLayout, baseProperties}``; ``isa`` points to the metaclass, whose ``class_ro_t`` lists the class methods.
- ``method_list_t {entsizeAndFlags, count}`` then ``{name, types, imp}`` pointers, or (flag ``0x80000000``) three
  32-bit offsets relative to each field, the name's pointing to a selector reference.
- ``ivar_list_t`` of ``{offset*, name, type, alignment, size}``, ``property_list_t`` of ``{name, attributes}``,
  ``protocol_list_t {count, protocol_t*...}``, ``protocol_t {isa, name, protocols, instanceMethods, classMethods,
  optionalInstanceMethods, optionalClassMethods, instanceProperties, ...}``, ``category_t {name, cls,
  instanceMethods, classMethods, protocols, instanceProperties}``.

No maintained Python library reads these (ktool/k2l 2.0 gives no implementation addresses and needs the removed
``pkg_resources``; LIEF's ObjC support is in its commercial edition). Pointers are read as the file stores them:
plain addresses, or chained fixups (``DYLD_CHAINED_PTR_64``/``_OFFSET``/arm64e), whose target is decoded and whose
binds name the external class (``_OBJC_CLASS_$_NSObject``). Every read is bounded and checked; a structure that does
not fit is skipped and noted in ``problems``, never an exception.
"""

from __future__ import annotations

import bisect
import struct
from typing import Any

import msgspec

MAX_CLASSES = 200_000
SAFE = (1 << 53) - 1
MAX_LIST = 65_536  # entries of one method/ivar/property/protocol list
CLASS_PREFIX = "_OBJC_CLASS_$_"


class Method(msgspec.Struct, frozen=True, kw_only=True):
    """An Objective-C method: ``name`` is ``-[Class selector]`` (``+`` for a class method)."""

    name: str
    selector: str
    types: str
    imp: int | None
    class_method: bool


class Ivar(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    type: str
    offset: int | None
    size: int


class Property(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    attributes: str


class ObjCClass(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    address: int
    superclass: str | None
    protocols: list[str]
    methods: list[Method]
    ivars: list[Ivar]
    properties: list[Property]
    swift: bool = False


class Protocol(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    protocols: list[str]
    required: list[str]
    optional: list[str]
    class_methods: list[str] = []


class Category(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    class_name: str | None
    methods: list[Method]
    protocols: list[str]
    properties: list[Property]


class Metadata(msgspec.Struct, frozen=True, kw_only=True):
    classes: list[ObjCClass]
    categories: list[Category]
    protocols: list[Protocol]
    selector_references: list[str]
    problems: list[str]


class _Bad(Exception):
    """A pointer or count that does not fit the image (caught per structure)."""


class _Memory:
    """The image's file-backed segments by virtual address, read as the file stores them."""

    def __init__(self, binary: Any) -> None:
        self.ptr = 8 if "64" in str(binary.header.magic) else 4
        self.base = int(binary.imagebase)
        spans = []
        for seg in binary.segments:
            data = bytes(seg.content)
            # Addresses stay inside JSON's exact integers (results are canonical JSON): a segment past them is
            # a damaged header or a kernel image, whose metadata this reader leaves alone.
            if data and int(seg.virtual_size) and int(seg.virtual_address) + len(data) < SAFE:
                spans.append((int(seg.virtual_address), data))
        spans.sort(key=lambda s: s[0])
        self.starts = [s[0] for s in spans]
        self.spans = spans
        # Binds by the address they patch: a pointer to a class defined in another image.
        self.binds: dict[int, str] = {}
        try:
            for bind in binary.bindings:
                if bind.has_symbol and bind.symbol.name:
                    self.binds.setdefault(int(bind.address), str(bind.symbol.name))
        except (RuntimeError, ValueError, TypeError):
            pass  # a damaged bind table: external classes stay unnamed
        self.chained = bool(getattr(binary, "has_dyld_chained_fixups", False) and binary.has_dyld_chained_fixups)

    def read(self, address: int, size: int) -> bytes:
        i = bisect.bisect_right(self.starts, address) - 1
        if i < 0:
            raise _Bad(f"{address:#x} is not mapped")
        start, data = self.spans[i]
        off = address - start
        if off + size > len(data):
            raise _Bad(f"{address:#x}+{size} is not in the file")
        return data[off : off + size]

    def u32(self, address: int) -> int:
        return int(struct.unpack("<I", self.read(address, 4))[0])

    def i32(self, address: int) -> int:
        return int(struct.unpack("<i", self.read(address, 4))[0])

    def raw_pointer(self, address: int) -> int:
        return int(struct.unpack("<Q" if self.ptr == 8 else "<I", self.read(address, self.ptr))[0])

    def pointer(self, address: int) -> int:
        """The address a pointer slot refers to (0 for null or a bind), chained-fixup encodings decoded."""
        value = self.raw_pointer(address)
        if self.ptr == 4 or value == 0:
            return value
        if value >> 63 and self.chained:  # a bind (DYLD_CHAINED_PTR_64) or an arm64e auth pointer
            if address in self.binds or (value >> 62) & 1:
                return 0
            return self.base + (value & 0xFFFFFFFF)  # arm64e auth rebase: an offset from the image base
        if value >> 36 and self.chained:
            target = value & 0xFFFFFFFFF
            return target if target >= self.base else self.base + target
        return value & 0x7FFFFFFFFFFFFFF8 if value >> 56 else value

    def mapped(self, address: int) -> bool:
        i = bisect.bisect_right(self.starts, address) - 1
        return i >= 0 and address - self.spans[i][0] < len(self.spans[i][1])

    def cstring(self, address: int, limit: int = 4096) -> str:
        i = bisect.bisect_right(self.starts, address) - 1
        if i < 0 or address == 0:
            raise _Bad(f"string at {address:#x} is not mapped")
        start, data = self.spans[i]
        off = address - start
        if off >= len(data):
            raise _Bad(f"string at {address:#x} is not in the file")
        end = data.find(b"\0", off, off + limit)
        if end < 0:
            raise _Bad(f"string at {address:#x} is not terminated")
        return data[off:end].decode("utf-8", "replace")


class _Reader:
    def __init__(self, binary: Any) -> None:
        self.m = _Memory(binary)
        self.binary = binary
        self.problems: list[str] = []
        self._class_names: dict[int, str] = {}

    def note(self, what: str) -> None:
        if len(self.problems) < 100:
            self.problems.append(what)

    def section(self, name: str) -> list[int]:
        """The pointers a ``__objc_*list`` section holds (any segment: __DATA, __DATA_CONST)."""
        out: list[int] = []
        for sec in self.binary.sections:
            if sec.name != name:
                continue
            start, size = int(sec.virtual_address), int(sec.size)
            count = min(size // self.m.ptr, MAX_CLASSES)
            out.extend(start + i * self.m.ptr for i in range(count))
        return out

    def ro_of(self, cls: int) -> tuple[int, bool]:
        data = self.m.pointer(cls + 4 * self.m.ptr)
        swift = bool(data & 3)
        return data & ~7, swift

    def ro_field(self, ro: int, index: int) -> int:
        """Pointer field ``index`` of a class_ro_t (0 ivarLayout, 1 name, 2 methods, 3 protocols, 4 ivars, 5 weak
        layout, 6 properties); the 64-bit layout has a reserved word after the three 32-bit fields."""
        head = 16 if self.m.ptr == 8 else 12
        return self.m.pointer(ro + head + index * self.m.ptr)

    def class_name(self, cls: int) -> str:
        if cls in self._class_names:
            return self._class_names[cls]
        ro, _ = self.ro_of(cls)
        name = self.m.cstring(self.ro_field(ro, 1))
        self._class_names[cls] = name
        return name

    def referenced_class(self, slot: int) -> str | None:
        """The class a pointer slot names: defined here (read it) or bound from another image (the symbol)."""
        bound = self.m.binds.get(slot)
        if bound is not None:
            return bound[len(CLASS_PREFIX) :] if bound.startswith(CLASS_PREFIX) else bound
        target = self.m.pointer(slot)
        if target == 0:
            return None
        try:
            return self.class_name(target)
        except _Bad:
            return None

    def methods(self, address: int, owner: str, class_method: bool) -> list[Method]:
        if address == 0:
            return []
        flags = self.m.u32(address)
        count = self.m.u32(address + 4)
        entsize = flags & 0xFFFC
        relative = bool(flags & 0x80000000)
        if count > MAX_LIST or entsize < (12 if relative else 3 * self.m.ptr):
            raise _Bad(f"method list at {address:#x}: {count} entries of {entsize} bytes")
        out = []
        sign = "+" if class_method else "-"
        for i in range(count):
            at = address + 8 + i * entsize
            if relative:
                name_ref = at + self.m.i32(at)
                selector = self.m.cstring(self.m.pointer(name_ref)) if not flags & 0x40000000 else f"sel_{name_ref:x}"
                types = self.m.cstring(at + 4 + self.m.i32(at + 4))
                imp_off = self.m.i32(at + 8)
                imp: int | None = at + 8 + imp_off if imp_off else None
            else:
                selector = self.m.cstring(self.m.pointer(at))
                types = self.m.cstring(self.m.pointer(at + self.m.ptr))
                imp = self.m.pointer(at + 2 * self.m.ptr) or None
            if imp is not None and not self.m.mapped(imp):
                imp = None  # an implementation outside the image's file-backed segments: not one to name
            out.append(
                Method(
                    name=f"{sign}[{owner} {selector}]",
                    selector=selector,
                    types=types,
                    imp=imp,
                    class_method=class_method,
                )
            )
        return out

    def ivars(self, address: int) -> list[Ivar]:
        if address == 0:
            return []
        entsize, count = self.m.u32(address), self.m.u32(address + 4)
        if count > MAX_LIST or entsize < 3 * self.m.ptr + 8:
            raise _Bad(f"ivar list at {address:#x}: {count} entries of {entsize} bytes")
        out = []
        for i in range(count):
            at = address + 8 + i * entsize
            offset_at = self.m.pointer(at)
            try:
                offset: int | None = self.m.u32(offset_at) if offset_at else None
            except _Bad:
                offset = None
            name = self.m.cstring(self.m.pointer(at + self.m.ptr))
            type_at = self.m.pointer(at + 2 * self.m.ptr)
            out.append(
                Ivar(
                    name=name,
                    type=self.m.cstring(type_at) if type_at else "",
                    offset=offset,
                    size=self.m.u32(at + 3 * self.m.ptr + 4),
                )
            )
        return out

    def properties(self, address: int) -> list[Property]:
        if address == 0:
            return []
        entsize, count = self.m.u32(address), self.m.u32(address + 4)
        if count > MAX_LIST or entsize < 2 * self.m.ptr:
            raise _Bad(f"property list at {address:#x}: {count} entries of {entsize} bytes")
        return [
            Property(
                name=self.m.cstring(self.m.pointer(address + 8 + i * entsize)),
                attributes=self.m.cstring(self.m.pointer(address + 8 + i * entsize + self.m.ptr)),
            )
            for i in range(count)
        ]

    def protocol_names(self, address: int) -> list[str]:
        if address == 0:
            return []
        count = self.m.raw_pointer(address)
        if count > MAX_LIST:
            raise _Bad(f"protocol list at {address:#x}: {count} entries")
        out = []
        for i in range(count):
            slot = address + self.m.ptr * (1 + i)
            proto = self.m.pointer(slot)
            out.append(self.m.cstring(self.m.pointer(proto + self.m.ptr)) if proto else self.m.binds.get(slot, "?"))
        return out

    def read_class(self, slot: int) -> ObjCClass | None:
        cls = self.m.pointer(slot)
        try:
            ro, swift = self.ro_of(cls)
            name = self.class_name(cls)
            superclass = self.referenced_class(cls + self.m.ptr)
            methods = self.methods(self.ro_field(ro, 2), name, False)
            meta = self.m.pointer(cls)
            if meta:
                meta_ro, _ = self.ro_of(meta)
                methods += self.methods(self.ro_field(meta_ro, 2), name, True)
            return ObjCClass(
                name=name,
                address=cls,
                superclass=superclass,
                protocols=self.protocol_names(self.ro_field(ro, 3)),
                methods=methods,
                ivars=self.ivars(self.ro_field(ro, 4)),
                properties=self.properties(self.ro_field(ro, 6)),
                swift=swift,
            )
        except _Bad as exc:
            self.note(f"class at {cls:#x}: {exc}")
            return None

    def read_protocol(self, slot: int) -> Protocol | None:
        proto = self.m.pointer(slot)
        p = self.m.ptr
        try:
            name = self.m.cstring(self.m.pointer(proto + p))

            def sels(field: int) -> list[str]:
                return [m.selector for m in self.methods(self.m.pointer(proto + field * p), name, False)]

            return Protocol(
                name=name,
                protocols=self.protocol_names(self.m.pointer(proto + 2 * p)),
                required=sels(3),
                class_methods=sels(4),
                optional=sels(5),
            )
        except _Bad as exc:
            self.note(f"protocol at {proto:#x}: {exc}")
            return None

    def read_category(self, slot: int) -> Category | None:
        cat = self.m.pointer(slot)
        p = self.m.ptr
        try:
            name = self.m.cstring(self.m.pointer(cat))
            owner = self.referenced_class(cat + p)
            label = f"{owner or '?'}({name})"
            return Category(
                name=name,
                class_name=owner,
                methods=self.methods(self.m.pointer(cat + 2 * p), label, False)
                + self.methods(self.m.pointer(cat + 3 * p), label, True),
                protocols=self.protocol_names(self.m.pointer(cat + 4 * p)),
                properties=self.properties(self.m.pointer(cat + 5 * p)),
            )
        except _Bad as exc:
            self.note(f"category at {cat:#x}: {exc}")
            return None

    def selector_references(self) -> list[str]:
        out = []
        for slot in self.section("__objc_selrefs"):
            try:
                out.append(self.m.cstring(self.m.pointer(slot)))
            except _Bad as exc:
                self.note(f"selector reference at {slot:#x}: {exc}")
        return out


def read(binary: Any, *, check: Any = None) -> Metadata:
    """The Objective-C metadata of one LIEF Mach-O binary (one slice); ``check()`` is called between classes."""
    r = _Reader(binary)
    classes: list[ObjCClass] = []
    for n, slot in enumerate(r.section("__objc_classlist")):
        if check is not None and n % 256 == 0:
            check()
        c = r.read_class(slot)
        if c is not None:
            classes.append(c)
    categories = [c for c in (r.read_category(s) for s in r.section("__objc_catlist")) if c is not None]
    protocols = [p for p in (r.read_protocol(s) for s in r.section("__objc_protolist")) if p is not None]
    return Metadata(
        classes=classes,
        categories=categories,
        protocols=protocols,
        selector_references=r.selector_references(),
        problems=r.problems,
    )


def has_metadata(binary: Any) -> bool:
    return any(sec.name in ("__objc_classlist", "__objc_catlist") for sec in binary.sections)


def implementation_names(binary: Any) -> dict[int, str]:
    """Each method implementation's address with its name, ``-[Class selector]`` (``+`` for class methods,
    ``-[Class(Category) selector]`` for a category's); the first name an address gets wins."""
    if not has_metadata(binary):
        return {}
    meta = read(binary)
    out: dict[int, str] = {}
    for c in meta.classes:
        for m in c.methods:
            if m.imp is not None:
                out.setdefault(m.imp, m.name)
    for cat in meta.categories:
        for m in cat.methods:
            if m.imp is not None:
                out.setdefault(m.imp, m.name)
    return out
