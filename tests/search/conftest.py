"""Programs compiled for x86-64 ELF, arm64 ELF and PE in the test session, and the providers that read them."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from rea.registry import Registry
from rea.session import Session
from rea.testing import result_of
from tests import toolchains

# fixture id: (compiler, objdump, file suffix)
TARGETS = {
    "elf-x64": ("gcc", "objdump", ""),
    "elf-arm64": ("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-objdump", ""),
    "pe-x64": ("x86_64-w64-mingw32-gcc", "objdump", ".exe"),
}
# Every target on native and radare2; angr (the slowest) on one.
CASES = [("native", t) for t in TARGETS] + [("radare2", t) for t in TARGETS] + [("angr", "elf-x64")]
CASE_IDS = [f"{p}-{t}" for p, t in CASES]


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


@contextlib.contextmanager
def opened_case(registry: Registry, builds: Builds, case: tuple[str, str]) -> Iterator[tuple[Session, Path]]:
    """A session with ``builds``' program for the case's target open on the case's provider, and that program's path;
    the test skips (before compiling anything) where the provider is not available."""
    provider_id, target = case
    provider = registry.providers.get(provider_id)
    if provider is None or provider.availability().status != "available":
        pytest.skip(f"provider {provider_id} is not available here")
    path = builds.get(target)
    session = Session(registry)
    result_of(session, "open_binary", {"path": str(path), "provider_id": provider_id})
    try:
        yield session, path
    finally:
        session.close()
