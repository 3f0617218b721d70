"""Real code bases nobody here wrote, built from pinned PyPI sdists in the test session (and cached on disk).

- zstd 1.5.7 (the amalgamated ``zstd/zstd.c`` of the ``zstandard`` 0.25.0 sdist) behind ``zstdmini.c``, a small
  compress/decompress command: x86-64 ELF at -O2, so GCC emits ``.cold`` parts, tail calls and jump tables.
- cmark-gfm (``third_party/cmark`` of the ``cmarkgfm`` 2025.10.22 sdist), its own ``main.c``: arm64 ELF, x86-64 PE
  (MinGW, imports from KERNEL32.dll and msvcrt.dll) and x86-64 ELF, all at -O2.

Each build keeps the unstripped binary (the truth: its symbol table) beside the stripped one rea analyses.
A build is cached under ``tests/.fixtures/realcode`` keyed by the sdist digest, the recipe and the compiler's
version, published with a rename so concurrent sessions never see half a build.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tests import toolchains
from tests.conformance.references_support import require_pip_sdist

HERE = Path(__file__).resolve().parent
CACHE = HERE.parents[0] / ".fixtures" / "realcode"

ZSTANDARD = (
    "zstandard==0.25.0",
    "zstandard-0.25.0.tar.gz",
    "7713e1179d162cf5c7906da876ec2ccb9c3a9dcbdffef0cc7f70c3667a205f0b",
)
CMARKGFM = (
    "cmarkgfm==2025.10.22",
    "cmarkgfm-2025.10.22.tar.gz",
    "5bec61007b65b919488442c838c58a6c8bf4741f5103c593b2ef180d39818eda",
)

CmarkKind = Literal["arm64-elf", "x86_64-pe", "x86_64-elf"]


@dataclass(frozen=True)
class Build:
    """One real program: the stripped binary to analyse, its unstripped twin (truth) and its source tree."""

    name: str
    binary: Path
    unstripped: Path
    source: Path

    def symbols(self) -> dict[str, tuple[int, int]]:
        """Function symbols of the unstripped build: name -> (address, size); size 0 where the format has none."""
        nm = toolchains.require("nm")
        out = subprocess.run(
            [nm, "--defined-only", "-S", str(self.unstripped)], check=True, capture_output=True, text=True
        ).stdout
        found: dict[str, tuple[int, int]] = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[2] in "tT":
                found.setdefault(parts[3], (int(parts[0], 16), int(parts[1], 16)))
            elif len(parts) == 3 and parts[1] in "tT":
                found.setdefault(parts[2], (int(parts[0], 16), 0))
        return found

    def disassembly(self, start: int, size: int, *options: str) -> str:
        """objdump's disassembly of the unstripped build from ``start`` for ``size`` bytes (the truth for code)."""
        objdump = toolchains.require("objdump")
        return subprocess.run(
            [
                objdump,
                "-d",
                *options,
                f"--start-address={start:#x}",
                f"--stop-address={start + size:#x}",
                str(self.unstripped),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    def pe_imports(self) -> dict[str, set[str]]:
        """DLL -> imported names of a PE build, as objdump reads its import directory (the truth for imports)."""
        objdump = toolchains.require("objdump")
        out = subprocess.run([objdump, "-p", str(self.binary)], check=True, capture_output=True, text=True).stdout
        found: dict[str, set[str]] = {}
        dll = None
        for line in out.splitlines():
            if "DLL Name:" in line:
                dll = line.split("DLL Name:")[1].strip()
                found[dll] = set()
            elif dll is not None and re.match(r"^\s+[0-9a-f]+\s+\d+\s+\S+$", line):
                found[dll].add(line.split()[2])
            elif not line.strip() and dll is not None and found[dll]:
                dll = None
        return found


def _compiler_version(compiler: str) -> str:
    return subprocess.run([compiler, "--version"], check=True, capture_output=True, text=True).stdout.splitlines()[0]


class _Recipe:
    """Extract the sdist's ``members``; compile ``sources`` into ``<dir>/<name>`` and its unstripped twin."""

    def __init__(
        self,
        name: str,
        sdist: Path,
        members: str,
        root: str,
        compiler: str,
        strip: str,
        flags: list[str],
        sources: list[str],
        extra: tuple[tuple[str, Path], ...] = (),
        edits: tuple[tuple[str, str, str], ...] = (),
    ) -> None:
        self.name, self.sdist, self.members, self.root = name, sdist, members, root
        self.compiler, self.strip, self.flags, self.sources, self.extra = compiler, strip, flags, sources, extra
        # (file, old text, new text) replacements made in the extracted tree before it is compiled.
        self.edits = edits

    def __call__(self, where: Path) -> None:
        with tarfile.open(self.sdist) as tar:
            chosen = [m for m in tar.getmembers() if m.name.startswith(self.members)]
            tar.extractall(where / "tree", members=chosen, filter="data")
        os.rename(where / "tree" / self.root, where / "src")
        for target, origin in self.extra:
            shutil.copyfile(origin, where / "src" / target)
        for file, old, new in self.edits:
            text = (where / "src" / file).read_text()
            assert old in text, f"{file}: the edit's anchor is gone"
            (where / "src" / file).write_text(text.replace(old, new, 1))
        src = where / "src"
        files = sorted(str(p) for pattern in self.sources for p in src.glob(pattern))
        unstripped = where / f"{self.name}.unstripped"
        flags = [f.replace("{src}", str(src)) for f in self.flags]
        proc = subprocess.run([self.compiler, *flags, "-o", str(unstripped), *files], capture_output=True, text=True)
        assert proc.returncode == 0, f"building {self.name} failed: {proc.stderr[-2000:]}"
        subprocess.run([self.strip, "-o", str(where / self.name), str(unstripped)], check=True, capture_output=True)


def _cached(name: str, sdist: Path, recipe: list[str], compiler: str, build: _Recipe) -> Build:
    key = hashlib.sha256(
        "\0".join([hashlib.sha256(sdist.read_bytes()).hexdigest(), *recipe, _compiler_version(compiler)]).encode()
    ).hexdigest()[:16]
    home = CACHE / f"{name}-{key}"
    if not (home / "done").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=CACHE))
        try:
            build(staging)
            (staging / "done").write_text(" ".join(recipe) + "\n")
            try:
                os.rename(staging, home)
            except OSError:  # another session published the same build first
                if not (home / "done").exists():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return Build(name, home / name, home / f"{name}.unstripped", home / "src")


def zstd() -> Build:
    """zstd 1.5.7's library behind ``zstdmini`` (x86-64 ELF, gcc -O2, PIE), stripped, and its unstripped twin."""
    gcc, strip = toolchains.require("gcc"), toolchains.require("strip")
    sdist = require_pip_sdist(*ZSTANDARD)
    flags = ["-O2", "-I{src}"]
    recipe = _Recipe(
        "zstdmini",
        sdist,
        "zstandard-0.25.0/zstd/",
        "zstandard-0.25.0/zstd",
        gcc,
        strip,
        flags,
        ["zstdmini.c", "zstd.c"],
        (("zstdmini.c", HERE / "zstdmini.c"),),
    )
    return _cached("zstdmini", sdist, ["zstdmini", *flags, (HERE / "zstdmini.c").read_text()], gcc, recipe)


_CMARK_TOOLS: dict[str, tuple[str, str, str]] = {
    # kind: (compiler, strip, generated headers)
    "arm64-elf": ("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-strip", "unix"),
    "x86_64-pe": ("x86_64-w64-mingw32-gcc", "x86_64-w64-mingw32-strip", "windows"),
    "x86_64-elf": ("gcc", "strip", "unix"),
}


def cmark_gfm(kind: CmarkKind) -> Build:
    """cmark-gfm's command (its ``main.c``) with the GFM extensions, built -O2 for ``kind`` (no .exe suffix)."""
    compiler_name, strip_name, generated = _CMARK_TOOLS[kind]
    compiler = toolchains.require(compiler_name)
    strip = shutil.which(strip_name) or toolchains.require("strip")
    sdist = require_pip_sdist(*CMARKGFM)
    flags = [
        "-O2",
        "-DCMARK_GFM_STATIC_DEFINE",
        "-DCMARK_GFM_EXTENSIONS_STATIC_DEFINE",
        "-I{src}/third_party/cmark/src",
        "-I{src}/third_party/cmark/extensions",
        f"-I{{src}}/generated/{generated}",
    ]
    name = f"cmark-gfm-{kind}"
    recipe = _Recipe(
        name,
        sdist,
        "cmarkgfm-2025.10.22/",
        "cmarkgfm-2025.10.22",
        compiler,
        strip,
        flags,
        ["third_party/cmark/src/*.c", "third_party/cmark/extensions/*.c"],
    )
    return _cached(name, sdist, flags, compiler, recipe)


# Two versions of cmark-gfm's command for binary diffing: the release, and the release with these edits (the
# truth a diff is checked against). -fno-inline keeps each source function one procedure, so an edit changes
# exactly the function it is in.
CMARK_DIFF_EDITS: tuple[tuple[str, str, str], ...] = (
    (
        "third_party/cmark/src/buffer.c",
        "  if (pos < 0)\n    pos = 0;\n\n  const unsigned char *p =\n      (unsigned char *)memchr(",
        "  if (pos < 0)\n    pos = 0;\n  if (c == 0)\n    return -1;\n\n  const unsigned char *p =\n"
        "      (unsigned char *)memchr(",
    ),
    (
        "third_party/cmark/src/cmark_ctype.c",
        "int cmark_ispunct(char c) { return cmark_ctype_class[(uint8_t)c] == 2; }",
        "int cmark_ispunct(char c) { return cmark_ctype_class[(uint8_t)c] == 2 || (c > 0 && c == '~'); }",
    ),
    (
        "third_party/cmark/src/buffer.c",
        "bufsize_t cmark_strbuf_strrchr(",
        "int cmark_strbuf_is_blank(const cmark_strbuf *buf) {\n  for (bufsize_t i = 0; i < buf->size; i++)\n"
        "    if (!cmark_isspace(buf->ptr[i]))\n      return 0;\n  return 1;\n}\n\nbufsize_t cmark_strbuf_strrchr(",
    ),
)
CMARK_DIFF_TRUTH = {"changed": {"cmark_strbuf_strchr", "cmark_ispunct"}, "added": {"cmark_strbuf_is_blank"}}


def cmark_gfm_versions() -> tuple[Build, Build]:
    """cmark-gfm's command (x86-64 ELF, gcc -O2 -fno-inline) as released and with ``CMARK_DIFF_EDITS``."""
    gcc = toolchains.require("gcc")
    strip = toolchains.require("strip")
    sdist = require_pip_sdist(*CMARKGFM)
    flags = [
        "-O2",
        "-fno-inline",
        "-DCMARK_GFM_STATIC_DEFINE",
        "-DCMARK_GFM_EXTENSIONS_STATIC_DEFINE",
        "-I{src}/third_party/cmark/src",
        "-I{src}/third_party/cmark/extensions",
        "-I{src}/generated/unix",
    ]
    sources = ["third_party/cmark/src/*.c", "third_party/cmark/extensions/*.c"]
    out = []
    for version, edits in (("v1", ()), ("v2", CMARK_DIFF_EDITS)):
        name = f"cmark-gfm-{version}"
        recipe = _Recipe(
            name, sdist, "cmarkgfm-2025.10.22/", "cmarkgfm-2025.10.22", gcc, strip, flags, sources, edits=edits
        )
        out.append(_cached(name, sdist, [*flags, repr(edits)], gcc, recipe))
    return out[0], out[1]
