"""What every Apple handler shares: the provider identity, reading the target, LIEF slices, paging, Evidence."""

from __future__ import annotations

import datetime
import functools
import itertools
import os
import plistlib
import struct
from collections.abc import Callable
from collections.abc import Sequence
from importlib import metadata
from typing import Any
from typing import TypeVar

import msgspec

from rea.plugin import AnalysisProfile
from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import Paged
from rea.plugin import ProviderIdentity
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import __version__
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import evidence as ev_mod
from rea.plugin import identify
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import open_regular
from rea.plugin import read_identified
from rea.plugin import search
from rea.plugin import typed_failures

T = TypeVar("T")
# A property list's value as plistlib (or bpylist2) decodes it: JSON's kinds and bytes, dates and archive UIDs.
PlistValue = (
    str | int | float | bool | bytes | datetime.datetime | plistlib.UID | list["PlistValue"] | dict[str, "PlistValue"]
)
PlistDict = dict[str, PlistValue]
# A file larger than this is refused before it is read (the tools hold one file's bytes at a time).
MAX_FILE_BYTES = 512 << 20
MAX_PAGE = 5000
STATIC = "Static reading only: no application code was loaded or executed."
FAT_MAGIC = {b"\xca\xfe\xba\xbe": 20, b"\xca\xfe\xba\xbf": 32}  # fat_arch / fat_arch_64 entry sizes
THIN_MAGIC = (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xcf", b"\xfe\xed\xfa\xce")


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


@functools.cache
def provider() -> ProviderIdentity:
    return ProviderIdentity(
        id="apple", name="rea Apple reader (LIEF, plistlib, bpylist2, signify)", version=__version__
    )


def profile() -> AnalysisProfile:
    """The readers whose versions shape every result."""
    return ev_mod.make_profile(
        provider(), {"lief": _version("lief"), "bpylist2": _version("bpylist2"), "signify": _version("signify")}
    )


def evidence(
    call: ToolCall, target: Target | None, result: msgspec.Struct, limitations: list[str] | None = None
) -> Evidence:
    """Evidence of ``result`` about ``target``; parameters are the call's arguments but the path."""
    params = {k: v for k, v in sorted(call.args.items()) if k != "path"}
    out = OperationResult(normalized=msgspec.to_builtins(result), limitations=[STATIC, *(limitations or [])])
    return call.session.evidence(
        call.tool.name, params, out, bound=False, target=target, provider=provider(), analysis_profile=profile()
    )


def malformed(what: str, details: JSONObject | None = None) -> ReaError:
    """The typed error of a damaged Mach-O; ``details`` (JSON the error carries) add to its reason."""
    return ReaError(
        "unsupported_target",
        f"malformed Mach-O: {what}",
        remediation="Check that the file is a complete, undamaged Mach-O (or pick another slice or file).",
        details={"reason": "malformed", **(details or {})},
    )


def guarded(handler: Callable[[ToolCall], Evidence]) -> Callable[[ToolCall], Evidence]:
    """A structure that does not decode is a typed error, never a parser's traceback."""
    return typed_failures(
        handler,
        undecodable,
        deep="its structures nest or repeat beyond what can be read",
        broken="a structure in it does not decode",
    )


def undecodable(call: ToolCall, why: str) -> ReaError:
    """The typed error of an input a reader could not decode, named by the tool (not only Mach-O reaches here)."""
    return ReaError(
        "unsupported_target",
        f"{call.tool.name} cannot read this input: {why}",
        remediation="Check that the file is complete and of the kind the tool reads (see its description).",
        details={"reason": "malformed"},
    )


# -- the target -------------------------------------------------------------------------------------


def bundle_executable(directory: str) -> str | None:
    """The main executable of an .app/.framework folder: Info.plist's CFBundleExecutable, else the folder's stem."""
    for info in (os.path.join(directory, "Info.plist"), os.path.join(directory, "Contents", "Info.plist")):
        try:
            with os.fdopen(open_regular(info), "rb") as fh:
                data = plistlib.loads(fh.read(1 << 20))
        except (OSError, ValueError, ReaError, plistlib.InvalidFileException):
            continue
        name = data.get("CFBundleExecutable") if isinstance(data, dict) else None
        if isinstance(name, str) and name and "/" not in name:
            base = os.path.dirname(info)
            for where in (os.path.join(base, "MacOS", name), os.path.join(base, name)):
                if os.path.isfile(where):
                    return where
    stem = os.path.splitext(os.path.basename(directory.rstrip("/")))[0]
    for where in (os.path.join(directory, stem), os.path.join(directory, "Contents", "MacOS", stem)):
        if os.path.isfile(where):
            return where
    return None


def target_of(call: ToolCall, key: str = "path") -> Target:
    """The file ``key`` names (an .app/.framework folder stands for its main executable), or the open binary."""
    path = arg_str(call.args, key)
    if not path:
        return call.session.require_target()
    if os.path.isdir(path):
        exe = bundle_executable(path)
        if exe is None:
            raise invalid_request(
                f"{path} is a folder without a bundle executable",
                [issue(key, "invalid_value", "no Info.plist CFBundleExecutable or same-named file")],
            )
        path = exe
    return identify(path, call.ctx)


def given_target(call: ToolCall) -> Target:
    """The file ``path`` names, as it is (a folder is not read as its bundle's executable), or the open binary."""
    path = arg_str(call.args, "path")
    return identify(path, call.ctx) if path else call.session.require_target()


def given_path(call: ToolCall) -> str:
    """The path ``path`` names (a file or a bundle folder), or the open binary's."""
    return arg_str(call.args, "path") or call.session.require_target().resolved_path


def name_filter(args: Arguments) -> Callable[[str], bool]:
    """The call's name filter (``pattern``, ``mode``, ``case_sensitive``, as the kernel's search reads them); every
    name passes when no pattern is given."""
    if not arg_str(args, "pattern"):
        return lambda _name: True
    return search.matcher(args)


def read_bytes(target: Target) -> bytes:
    """The target's bytes, checked against its hash; bounded by MAX_FILE_BYTES."""
    if target.is_directory:
        raise ReaError("unsupported_target", f"{target.path} is a directory", details={"path": target.path})
    if target.size > MAX_FILE_BYTES:
        raise ReaError(
            "resource_constraint",
            f"{target.path} is {target.size} bytes, over the {MAX_FILE_BYTES}-byte limit",
            remediation="Extract the slice or file of interest first.",
            details={"resource": "file_size", "reported_limits": {"max_bytes": MAX_FILE_BYTES}},
        )
    return read_identified(
        target, MAX_FILE_BYTES, remediation="Open the target again: its bytes are no longer the ones rea hashed."
    )


# -- Mach-O slices through LIEF ---------------------------------------------------------------------


def lief() -> Any:
    import lief as module

    module.logging.disable()
    return module


def enum_name(value: Any) -> str:
    return str(getattr(value, "name", value)).split(".")[-1]


class FatEntry(msgspec.Struct, frozen=True):
    cpu_type: int
    cpu_subtype: int
    offset: int
    size: int
    align: int


def fat_entries(data: bytes) -> list[FatEntry] | None:
    """The fat header's arch table (LIEF does not expose sizes and alignments), checked: every slice inside the file,
    no two overlapping. None for a thin file."""
    width = FAT_MAGIC.get(data[:4])
    if width is None:
        return None
    if len(data) < 8:
        raise malformed("the universal header is cut short")
    (count,) = struct.unpack_from(">I", data, 4)
    if count == 0 or count > 64 or 8 + count * width > len(data):
        raise malformed(f"the universal header claims {count} slices", {"structure": "fat_header"})
    out = []
    for i in range(count):
        at = 8 + i * width
        if width == 20:
            cpu, sub, off, size, align = struct.unpack_from(">iIIII", data, at)
        else:
            cpu, sub, off, size, align, _ = struct.unpack_from(">iIQQII", data, at)
        if off + size > len(data) or size == 0:
            raise malformed(f"slice {i} lies past the end of the file", {"structure": "fat_arch", "slice": i})
        out.append(FatEntry(cpu, sub & 0xFFFFFF, off, size, align))
    spans = sorted((e.offset, e.offset + e.size, i) for i, e in enumerate(out))
    for (_, end, a), (start, _, b) in itertools.pairwise(spans):
        if start < end:
            raise malformed(f"slices {a} and {b} overlap", {"structure": "fat_arch", "slices": [a, b]})
    if spans[0][0] < 8 + count * width:
        raise malformed("a slice overlaps the universal header", {"structure": "fat_arch"})
    return out


class MachOFile:
    """A Mach-O file parsed by LIEF from bytes, with its slices checked against the file's size."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        if data[:4] not in THIN_MAGIC and data[:4] not in FAT_MAGIC:
            raise ReaError(
                "unsupported_target",
                "not a Mach-O file",
                remediation="Pass a Mach-O executable, dylib or bundle (or an .app/.framework folder).",
                details={"reason": "format"},
            )
        self.fat = fat_entries(data)
        parsed = lief().MachO.parse(data)
        if parsed is None or parsed.size == 0:
            raise malformed("LIEF could not parse the headers")
        self.binaries = [parsed.at(i) for i in range(parsed.size)]
        self._parsed = parsed  # owns the binaries
        for i, b in enumerate(self.binaries):
            _, size = self.slice_span(i)
            header = 32 if enum_name(b.header.magic).endswith("64") else 28
            if header + int(b.header.sizeof_cmds) > size:
                raise malformed(
                    f"slice {i}: the load commands run past the end of the file",
                    {"structure": "load_commands", "slice": i, "sizeofcmds": int(b.header.sizeof_cmds)},
                )
            if self.fat is not None and len(self.binaries) != len(self.fat):
                raise malformed("LIEF read another number of slices than the universal header lists")

    def slice_span(self, index: int) -> tuple[int, int]:
        """(file offset, size) of slice ``index``."""
        if self.fat is None:
            return 0, len(self.data)
        e = self.fat[index]
        return e.offset, e.size

    def slice_bytes(self, index: int) -> bytes:
        start, size = self.slice_span(index)
        return self.data[start : start + size]

    def cpu(self, index: int) -> str:
        return CPU_NAMES.get(
            enum_name(self.binaries[index].header.cpu_type), enum_name(self.binaries[index].header.cpu_type).lower()
        )

    def pick(self, arch: str | None, key: str = "architecture") -> list[int]:
        """The slice indices ``arch`` selects (all of them when None)."""
        if arch is None:
            return list(range(len(self.binaries)))
        found = [i for i in range(len(self.binaries)) if self.cpu(i) == arch]
        if not found:
            names = [self.cpu(i) for i in range(len(self.binaries))]
            raise invalid_request(f"no {arch} slice", [issue(key, "invalid_value", "no such slice", candidates=names)])
        return found


CPU_NAMES = {"X86_64": "x86_64", "X86": "x86", "ARM64": "arm64", "ARM": "arm", "POWERPC": "ppc", "POWERPC64": "ppc64"}


def load_macho(call: ToolCall) -> tuple[Target, MachOFile]:
    target = target_of(call)
    return target, MachOFile(read_bytes(target))


# -- pages ------------------------------------------------------------------------------------------


def window(args: Arguments, name: str, default: int) -> tuple[int, int]:
    """The ``<name>_offset`` and ``<name>_limit`` a call asks for (``offset``, ``limit`` when ``name`` is empty)."""
    prefix = f"{name}_" if name else ""
    return arg_int(args, f"{prefix}offset") or 0, min(arg_int(args, f"{prefix}limit") or default, MAX_PAGE)


def page(items: Sequence[T], args: Arguments, name: str, default: int) -> tuple[list[T], Paged]:
    offset, limit = window(args, name, default)
    chosen = list(items[offset : offset + limit])
    nxt = offset + limit if offset + limit < len(items) else None
    return chosen, Paged(total=len(items), offset=offset, limit=limit, next_offset=nxt)


def hexa(value: int) -> str:
    return f"0x{value:x}"


SAFE = (1 << 53) - 1  # JSON's exact integers: Evidence is canonical JSON


def safe(value: int, what: str) -> int:
    """A file offset or size as an integer; one no file can have is a malformed header, not a number to report."""
    if not 0 <= value <= SAFE:
        raise malformed(f"{what} is {value:#x}", {"structure": "load_commands"})
    return value
