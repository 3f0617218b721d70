"""Host tools the tests run, the Debian packages that provide them, and one rule for when one is missing.

A missing or unusable tool skips the tests that need it, with the package to install. On a Debian CI
machine (``CI=true`` and apt present) it fails instead: there, ``scripts/system-deps`` must have
installed it, and a skip would hide a broken install step.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES_FILE = ROOT / "scripts" / "system-packages.txt"


class Tool(NamedTuple):
    commands: tuple[str, ...]  # candidate executable names; the first found wins
    packages: tuple[str, ...]  # Debian packages that make it work, recommended ones included
    probe: str = ""  # "link": a compiler must build an executable, not only start; "static": a static one


TOOLS: dict[str, Tool] = {
    "gcc": Tool(("gcc",), ("gcc", "libc6-dev"), "link"),
    "nm": Tool(("nm",), ("binutils",)),
    "objdump": Tool(("objdump",), ("binutils",)),
    "readelf": Tool(("readelf",), ("binutils",)),
    "strip": Tool(("strip",), ("binutils",)),
    "tar": Tool(("tar",), ("tar",)),
    "diff": Tool(("diff",), ("diffutils",)),
    "aarch64-linux-gnu-gcc": Tool(
        ("aarch64-linux-gnu-gcc",),
        ("gcc-aarch64-linux-gnu", "binutils-aarch64-linux-gnu", "libc6-dev-arm64-cross"),
        "link",
    ),
    # mingw-w64-x86-64-dev: MinGW-w64's CRT, which the compiler links and the library signatures are built from.
    "x86_64-w64-mingw32-gcc": Tool(
        ("x86_64-w64-mingw32-gcc",), ("gcc-mingw-w64-x86-64", "mingw-w64-x86-64-dev"), "link"
    ),
    # A static glibc program (gcc -static): glibc's libc.a, which the library signatures are built from too.
    "gcc-static": Tool(("gcc",), ("gcc", "libc6-dev"), "static"),
    "clang": Tool(("clang-14", "clang"), ("clang",)),
    "ld64.lld": Tool(("ld64.lld-14", "ld64.lld"), ("lld",)),
    "ld.lld": Tool(("ld.lld-14", "ld.lld"), ("lld",)),
    "llvm-lipo": Tool(("llvm-lipo-14", "llvm-lipo"), ("llvm",)),
    "llvm-strip": Tool(("llvm-strip-14", "llvm-strip"), ("llvm",)),
    # The apple tests' Authenticode fixture: a PE signed with a certificate made in the session.
    "osslsigncode": Tool(("osslsigncode",), ("osslsigncode",)),
    "node": Tool(("node",), ("nodejs",)),
    "npm": Tool(("npm",), ("npm",)),
    "bwrap": Tool(("bwrap",), ("bubblewrap",)),
    "chromium": Tool(("chromium", "chromium-browser"), ("chromium",)),
    "yara": Tool(("yara",), ("yara",)),
    "mcs": Tool(("mcs",), ("mono-mcs",)),
    "aarch64-linux-gnu-objdump": Tool(("aarch64-linux-gnu-objdump",), ("binutils-aarch64-linux-gnu",)),
    # Debug sessions on AArch64 programs: LLDB drives qemu-user's gdb stub.
    "qemu-aarch64": Tool(("qemu-aarch64",), ("qemu-user",)),
    "apktool": Tool(("apktool",), ("apktool",)),
    "apksigner": Tool(("apksigner",), ("apksigner",)),
    "keytool": Tool(("keytool",), ("default-jre-headless",)),
    # The firmware fixture's file system image (mke2fs -d), and the extractors unblob runs on it.
    "mke2fs": Tool(("mke2fs",), ("e2fsprogs",)),
    "debugfs": Tool(("debugfs",), ("e2fsprogs",)),
    "7z": Tool(("7z",), ("p7zip-full",)),
    # inspect_go_binary's fixtures: Debian's Go toolchain builds ELF, PE and Mach-O programs offline.
    "go": Tool(("go",), ("golang",)),
    # inspect_recorded_crash's fixture core when the kernel's core pattern is not a file the test can read.
    "gdb": Tool(("gdb",), ("gdb",)),
    # inspect_wasm_artifact's fixture: clang's wasm32 target linked by lld's wasm-ld.
    "wasm-ld": Tool(("wasm-ld-14", "wasm-ld"), ("lld",)),
    # Graph pictures as SVG (`rea ... --render out.svg`) and the DOT text's check.
    "dot": Tool(("dot",), ("graphviz",)),
}


def strict() -> bool:
    """True on a Debian CI machine, where every listed package must have been installed."""
    return os.environ.get("CI") == "true" and shutil.which("apt-get") is not None


def unavailable(reason: str) -> NoReturn:
    """Skip with ``reason``, or fail with it where a skip would hide a broken install step."""
    if strict():
        pytest.fail(f"{reason} (CI=true on a Debian machine: scripts/system-deps must provide it)", pytrace=False)
    pytest.skip(reason)


def find(name: str) -> str | None:
    """The path of tool ``name``, or None; no probe."""
    for command in TOOLS[name].commands:
        found = shutil.which(command)
        if found:
            return found
    return None


@functools.cache
def _probe_failure(name: str, path: str) -> str | None:
    """Why the compiler at ``path`` cannot link a trivial program (None when it can)."""
    with tempfile.TemporaryDirectory(prefix="rea-probe-") as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text("int main(void) { return 0; }\n")
        static = ["-static"] if TOOLS[name].probe == "static" else []
        proc = subprocess.run(
            [path, *static, "-o", str(Path(tmp) / "probe"), str(src)], capture_output=True, text=True, timeout=120
        )
    if proc.returncode == 0:
        return None
    return proc.stderr.strip().splitlines()[-1][:300] if proc.stderr.strip() else f"exit {proc.returncode}"


def require(name: str) -> str:
    """The path of a working tool ``name``; otherwise skip (or fail under CI) naming its packages."""
    tool = TOOLS[name]
    install = f"install Debian package(s) {', '.join(tool.packages)} (bash scripts/system-deps)"
    path = find(name)
    if path is None:
        unavailable(f"{name} is not installed: {install}")
    if tool.probe in ("link", "static"):
        failure = _probe_failure(name, path)
        if failure is not None:
            unavailable(f"{name} cannot link a program ({failure}): {install}")
    return path


def require_all(names: tuple[str, ...] | list[str]) -> dict[str, str]:
    return {name: require(name) for name in names}


def listed_packages() -> set[str]:
    """The package names scripts/system-deps installs."""
    out = set()
    for line in PACKAGES_FILE.read_text().splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            out.add(name)
    return out


def compile_c(source: str, out: Path, name: str, *flags: str, compiler: str = "gcc") -> Path:
    """``source`` written to ``out / name.c`` and built with ``compiler`` and ``flags`` into ``out / name``."""
    cc = require(compiler)
    (out / f"{name}.c").write_text(source)
    subprocess.run(
        [cc, *flags, "-o", str(out / name), str(out / f"{name}.c")], check=True, capture_output=True, timeout=120
    )
    return out / name


def compile_programs(sources: dict[str, str], out: Path) -> dict[str, Path]:
    """Each C source built with gcc -O0 into ``out`` (name -> executable): small programs tests drive."""
    return {name: compile_c(source, out, name, "-O0") for name, source in sources.items()}
