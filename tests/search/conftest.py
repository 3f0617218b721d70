"""Programs compiled for x86-64 ELF, arm64 ELF and PE in the test session, and the providers that read them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests import toolchains

# fixture id: (compiler, objdump, file suffix)
TARGETS = {
    "elf-x64": ("gcc", "objdump", ""),
    "elf-arm64": ("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-objdump", ""),
    "pe-x64": ("x86_64-w64-mingw32-gcc", "objdump", ".exe"),
}
# Every target on native and radare2; angr (the slowest) on one.
CASES = [("native", t) for t in TARGETS] + [("radare2", t) for t in TARGETS] + [("angr", "elf-x64")]


class Builds:
    """One C source compiled for each target on first use, once per test session."""

    def __init__(self, root: Path, source: str, flags: tuple[str, ...] = ("-O2",)) -> None:
        self.root = root
        self.flags = flags
        self.built: dict[str, Path] = {}
        (root / "source.c").write_text(source)

    def get(self, target: str) -> Path:
        if target not in self.built:
            compiler, _, suffix = TARGETS[target]
            out = self.root / f"build-{target}{suffix}"
            subprocess.run(
                [toolchains.require(compiler), *self.flags, "-o", str(out), str(self.root / "source.c")],
                check=True,
                capture_output=True,
            )
            self.built[target] = out
        return self.built[target]
