"""The robustness corpus: mutated native binaries and hostile archives, cached in tests/.fixtures by content.

The cache key covers the generator sources, the seed, the counts and the bytes of every base binary, so a
change to any of them builds a fresh corpus; an unchanged one is reused as is (and older corpora are
removed once stale). A corpus directory is complete once its manifest exists: it is written last, by rename.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import tempfile
import time
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from tests.fixtures.native.native_fixtures import FixtureSet
from tests.robustness import hostile
from tests.robustness import mutants

HERE = Path(__file__).resolve().parent
CACHE = HERE.parent / ".fixtures" / "robustness"
SEED = 20260317
# Base binaries (native_fixtures ids) and how many mutants of each: ELF x86-64 and arm64, PE, Mach-O.
BASES: dict[str, int] = {
    "elf-x64": 300,
    "elf-x64-so": 220,
    "elf-arm64": 300,
    "shapes-elf-arm64": 120,
    "pe-x64-exe": 260,
    "shapes-pe-x64": 200,
    "pe-x64-dll": 120,
    "macho-x64": 260,
    "macho-arm64": 200,
    "macho-fat": 120,
}
ARCHIVES = 520
STALE_AFTER_S = 3600


@dataclass(frozen=True)
class Case:
    """One input: its file, what it is, and the arguments its tool calls get."""

    id: str
    kind: str  # "binary" or "archive"
    path: str
    base: str
    description: str
    args: dict[str, Any] = field(default_factory=dict)


def _key(fixtures: dict[str, bytes]) -> str:
    h = hashlib.sha256()
    for module in (mutants, hostile):
        h.update(Path(str(module.__file__)).read_bytes())
    h.update(Path(__file__).read_bytes())
    h.update(json.dumps([SEED, BASES, ARCHIVES]).encode())
    for fid in sorted(fixtures):
        h.update(fid.encode() + hashlib.sha256(fixtures[fid]).digest())
    return h.hexdigest()[:20]


def load(fixture_set: FixtureSet) -> tuple[Path, list[Case]]:
    """The corpus directory and its cases (built on first use, then read from the cache)."""
    bases = {fid: Path(fixture_set.get(fid).path).read_bytes() for fid in BASES}
    key = _key(bases)
    root = CACHE / key
    manifest = root / "manifest.json"
    if not manifest.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=CACHE))
        cases = _build(staging, bases)
        (staging / "manifest.json").write_text(json.dumps([asdict(c) for c in cases]))
        try:
            os.rename(staging, root)
        except OSError:  # a concurrent session built it first
            shutil.rmtree(staging, ignore_errors=True)
        # Older corpora go, unless recent: a concurrent session on another revision may still be reading one.
        for old in CACHE.iterdir():
            if old.name != key and time.time() - old.stat().st_mtime > STALE_AFTER_S:
                shutil.rmtree(old, ignore_errors=True)
    cases = [Case(**c) for c in json.loads(manifest.read_text())]
    return root, [Case(**{**asdict(c), "path": str(root / c.path)}) for c in cases]


def _build(root: Path, bases: dict[str, bytes]) -> list[Case]:
    rng = random.Random(SEED)
    cases: list[Case] = []
    (root / "bin").mkdir()
    for fid, count in BASES.items():
        data = bases[fid]
        lay = mutants.layout(data)
        made = mutants.named_cases(fid, data)
        while len(made) < count:
            made.append(mutants.mutate(data, lay, rng))
        for i, (blob, what) in enumerate(made):
            rel = f"bin/{fid}-{i:04d}" + (".exe" if fid.startswith(("pe", "shapes-pe")) else "")
            (root / rel).write_bytes(blob)
            cases.append(Case(f"{fid}#{i}", "binary", rel, fid, what))
    (root / "arc").mkdir()
    for i, arc in enumerate(hostile.all_cases(SEED, ARCHIVES)):
        folder = root / "arc" / f"{i:04d}"  # each archive alone, so its companion is its own
        folder.mkdir()
        (folder / arc.name).write_bytes(arc.data)
        for rel, content in arc.companion.items():
            dest = folder / (arc.name + ".unpacked") / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            if content == hostile.FIFO:
                os.mkfifo(dest)
            elif isinstance(content, str):
                os.symlink(content, dest)
            else:
                dest.write_bytes(content)
        cases.append(
            Case(arc.name, "archive", f"arc/{i:04d}/{arc.name}", arc.name.split("-")[0], arc.description, arc.args)
        )
    return cases
