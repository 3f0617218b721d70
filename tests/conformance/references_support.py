"""Builds and ground truth for the references-from-data and indirect-site conformance tests.

Programs are compiled in the session and cached by content under ``tests/.fixtures/conformance-references``;
every expected fact comes from the symbolized build (``nm`` symbols, the file's bytes decoded with capstone,
relocations read with LIEF), never from a provider under test. ``EXPECTED`` is the table of what each provider
must meet; a facet a provider is known not to meet yet is named in its ``pending`` set and runs as a strict
xfail, so it turns into a failure the day it passes (then remove it from ``pending``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from typing import NamedTuple
from typing import NoReturn

import capstone
import lief
import pytest

from rea.annotations import AnnotationStore
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from tests import toolchains

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "fixtures" / "conformance" / "dispatch.c"
CACHE = ROOT / ".fixtures" / "conformance-references"
NATIVE_PENDING = "native: issue 18 engine half pending"

# Facets of the contract these tests check, one name each.
DATA_REFS = "data-references"  # pointer slots are `data` references (xrefs, procedure_references)
INDIRECT = "indirect-sites"  # a dispatch that is no jump table is an `indirect` callee, counted unresolved
POINTER_TABLE = "pointer-table"  # resolve_native_call_targets returns a bounded table's targets
SYMBOLIZED = "symbolized-operands"  # instruction rows name call targets and annotate string loads
STUBS = "stub-procedures"  # PLT0 is a thunk of its own size; no procedure spans import stubs
DATA_TYPES = "data-types"  # inspect_native_data_type types a pointer slot and a string
LUA = "lua-data-references"  # data-reference recall on the Lua build reaches the row's lua_recall


class Expected(NamedTuple):
    lua_recall: float  # data-reference recall of address-taken functions on the Lua build
    # Facets not met yet (strict xfail): a facet name for every target, or "facet@target" for one.
    pending: frozenset[str] = frozenset()


# One row per native-analysis provider. ghidra and hopper answer the same operations through their own
# engines; their rows hold the same bar and run where those engines are installed.
EXPECTED: dict[str, Expected] = {
    "angr": Expected(0.95),
    "radare2": Expected(0.95),
    "native": Expected(0.95),
    "ghidra": Expected(0.95),
    "hopper": Expected(0.95),
}


class Target(NamedTuple):
    id: str
    compiler: str  # a tests.toolchains tool name
    flags: tuple[str, ...]
    format: str
    arch: str


TARGETS: dict[str, Target] = {
    t.id: t
    for t in (
        Target("elf-x64", "gcc", ("-O2",), "elf", "x86_64"),
        # Indirect-branch tracking puts the import stubs in .plt.sec (the lazy stubs stay in .plt).
        Target("elf-x64-ibt", "gcc", ("-O2", "-fcf-protection=full", "-Wl,-z,ibtplt"), "elf", "x86_64"),
        Target("elf-arm64", "aarch64-linux-gnu-gcc", ("-O2",), "elf", "arm64"),
        Target("pe-x64", "x86_64-w64-mingw32-gcc", ("-O2",), "pe", "x86_64"),
    )
}
TABLE_TARGETS = ("elf-x64", "elf-arm64", "pe-x64")
OPS = ("op_add", "op_sub", "op_mul", "op_xor")


class Build(NamedTuple):
    target: Target
    symbolized: Path
    stripped: Path


class Truth(NamedTuple):
    symbols: dict[str, int]  # C name -> address, from nm on the symbolized build
    slots: dict[str, int]  # op name -> its table slot
    dispatch: int  # the indirect jump of apply
    string: int  # address of "LS_COLORS"


def missing(reason: str, needed: str = "the conformance inputs") -> NoReturn:
    """Skip when a prerequisite cannot be had; under ``CI=true`` fail instead, saying what is ``needed``."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: {needed} must be available)", pytrace=False)
    pytest.skip(reason)


def publish(staged: Path, final: Path) -> None:
    """Move a staged build into the cache; a concurrent session that got there first wins."""
    try:
        os.rename(staged, final)
    except OSError:
        if not final.exists():
            raise
        shutil.rmtree(staged, ignore_errors=True)


def first_line(cmd: list[str]) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    return (out.splitlines() or [""])[0].strip()


def build(target_id: str) -> Build:
    """The dispatch program for one target, symbolized and stripped (``-s``), from the cache or the compiler."""
    t = TARGETS[target_id]
    cc = toolchains.require(t.compiler)
    recipe = repr((SOURCE.read_bytes(), t, first_line([cc, "--version"])))
    out = CACHE / f"dispatch-{t.id}-{hashlib.sha256(recipe.encode()).hexdigest()[:20]}"
    ext = ".exe" if t.format == "pe" else ""
    result = Build(t, out / f"dispatch{ext}", out / f"dispatch-stripped{ext}")
    if result.symbolized.exists() and result.stripped.exists():
        return result
    CACHE.mkdir(parents=True, exist_ok=True)
    staged = CACHE / f"{out.name}.partial-{os.getpid()}"
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir()
    for strip, name in (((), result.symbolized.name), (("-s",), result.stripped.name)):
        cmd = [cc, *t.flags, *strip, "-o", str(staged / name), str(SOURCE)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"building {t.id} failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}"
    publish(staged, out)
    return result


def _nm(path: Path) -> dict[str, int]:
    nm = toolchains.require("nm")
    proc = subprocess.run([nm, str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, int] = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            out.setdefault(parts[2], int(parts[0], 16))
    return out


def _image(path: Path) -> tuple[Any, int]:
    """The LIEF binary and the base to add to its section addresses (a PE's image base)."""
    binary = lief.parse(str(path))
    assert binary is not None, f"LIEF could not read {path}"
    base = int(binary.optional_header.imagebase) if isinstance(binary, lief.PE.Binary) else 0
    return binary, base


def _read(binary: Any, base: int, address: int, size: int) -> bytes:
    for s in binary.sections:
        start = base + int(s.virtual_address)
        if start <= address < start + len(bytes(s.content)):
            data = bytes(s.content)
            return data[address - start : address - start + size]
    raise AssertionError(f"{address:#x} is in no section")


def truth(b: Build) -> Truth:
    symbols = _nm(b.symbolized)
    missing_names = [n for n in (*OPS, "apply", "main", "table") if n not in symbols]
    assert not missing_names, f"the symbolized build lacks {missing_names}"
    binary, base = _image(b.symbolized)
    arm = b.target.arch == "arm64"
    cs = (
        capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)
        if arm
        else capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    )
    apply = symbols["apply"]
    dispatch = None
    for insn in cs.disasm(_read(binary, base, apply, 64), apply):
        if insn.mnemonic == "br" or (insn.mnemonic == "jmp" and not insn.op_str.startswith("0x")):
            dispatch = insn.address
            break
    assert dispatch is not None, f"no indirect jump in apply of {b.target.id}"
    string = None
    for s in binary.sections:
        found = bytes(s.content).find(b"LS_COLORS\0")
        if found >= 0:
            string = base + int(s.virtual_address) + found
            break
    assert string is not None
    slots = {op: symbols["table"] + 8 * i for i, op in enumerate(OPS)}
    return Truth(symbols, slots, dispatch, string)


def base_name(name: str | None) -> str:
    """A symbol's C name: version suffixes, PE import prefixes and Mach-O underscores removed."""
    if not name:
        return ""
    name = name.split("@")[0]
    for prefix in ("__imp_", "_imp__", "__imp__"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name[1:] if name.startswith("_") and not name.startswith("__") else name


def params(facet: str, provider_ids: tuple[str, ...], target_ids: tuple[str, ...]) -> list[Any]:
    """``(provider, target)`` cases, a provider's pending facet marked as a strict xfail."""
    out = []
    for pid in provider_ids:
        pending = EXPECTED[pid].pending
        for tid in target_ids:
            due = facet in pending or f"{facet}@{tid}" in pending
            marks = [pytest.mark.xfail(strict=True, reason=NATIVE_PENDING)] if due else []
            out.append(pytest.param(pid, tid, marks=marks, id=f"{pid}-{tid}"))
    return out


class Sessions:
    """One open session per (provider, binary), opened on first use and closed at the end of the module."""

    def __init__(self, registry: Registry, annotations: Path) -> None:
        self.registry = registry
        self.annotations = annotations  # a private store: the tests' user names never reach the real one
        self._open: dict[tuple[str, str], Session] = {}

    def get(self, provider_id: str, path: Path) -> Session:
        key = (provider_id, str(path))
        if key in self._open:
            return self._open[key]
        provider = self.registry.providers.get(provider_id)
        if provider is None:
            pytest.skip(f"provider {provider_id} is not registered (its plugin is not installed)")
        availability = provider.availability()
        if availability.status != "available":
            pytest.skip(f"provider {provider_id} is not available: {availability.reason}")
        session = Session(self.registry, annotations=AnnotationStore(str(self.annotations)))
        try:
            result_of(session, "open_binary", {"path": str(path), "provider_id": provider_id})
        except ReaError as exc:
            session.close()
            if exc.code == "unsupported_target":
                pytest.skip(f"{provider_id} does not read {path.name}: {exc.message}")
            raise
        self._open[key] = session
        return session

    def close(self) -> None:
        for session in self._open.values():
            session.close()
        self._open.clear()


def sessions_fixture(registry: Registry, annotations: Path) -> Iterator[Sessions]:
    s = Sessions(registry, annotations)
    try:
        yield s
    finally:
        s.close()


def require_pip_sdist(
    requirement: str,
    filename: str,
    sha256: str,
    *,
    cache: Path = CACHE,
    needed: str = "the conformance inputs",
) -> Path:
    """A pinned sdist from ``cache`` or PyPI (through pip), checked against its SHA-256; a skip (under CI a failure
    saying ``needed`` must be available) when it cannot be had."""
    cached = cache / filename
    if cached.exists() and hashlib.sha256(cached.read_bytes()).hexdigest() == sha256:
        return cached
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rea-conformance-dl-") as tmp:
        # Only the package itself must come as source: ":all:" would also build its build dependencies
        # (setuptools, Cython) from source to prepare its metadata, minutes with an empty pip cache.
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-binary",
            requirement.split("==")[0],
            "--no-deps",
            "--disable-pip-version-check",
            "--dest",
            tmp,
            requirement,
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as exc:
            missing(f"could not download the {requirement} sdist with pip: {exc}", needed)
        got = Path(tmp) / filename
        if proc.returncode != 0 or not got.exists():
            tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1][:300]
            missing(f"could not download the {requirement} sdist from PyPI with pip ({tail})", needed)
        digest = hashlib.sha256(got.read_bytes()).hexdigest()
        assert digest == sha256, f"{filename} from PyPI has SHA-256 {digest}, expected {sha256}"
        staged = cache / f"{filename}.partial-{os.getpid()}"
        shutil.copyfile(got, staged)
        os.replace(staged, cached)
    return cached


def extract(sdist: Path, members: str, into: Path) -> None:
    with tarfile.open(sdist) as tar:
        chosen = [m for m in tar.getmembers() if Path(m.name).match(members)]
        tar.extractall(into, members=chosen, filter="data")
