"""Helpers shared by the contrib tests (a uniquely named module: test folders are not packages)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_SRC = ROOT / "contrib" / "rea-example-provider"
EXAMPLE_DIST = "rea-example-provider"
CLIENTS_DIR = ROOT / "contrib" / "clients"

# The toy program every example-provider test reads; expected facts in the tests come from this text.
TOY_SOURCE = """TOYBIN1
# a toy program
entry 0x1000
proc main 0x1000 0x20
proc helper 0x1040 16
proc init 0x800 8
str 0x2010 grüße
str 0x2000 hello toy
"""


def subprocess_env(*paths: Path | None) -> dict[str, str]:
    """The current environment with ``paths`` prepended to PYTHONPATH and rea's settings removed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    extra = [str(p) for p in paths if p is not None]
    if env.get("PYTHONPATH"):
        extra.append(env["PYTHONPATH"])
    if extra:
        env["PYTHONPATH"] = os.pathsep.join(extra)
    return env


def write_broken_plugin(root: Path) -> Path:
    """Lay out an installed-looking distribution whose ``rea`` plugin raises at import; returns ``root``."""
    pkg = root / "rea_broken_example"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('raise RuntimeError("rea_broken_example fails at import on purpose")\n')
    info = root / "rea_broken_example-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rea-broken-example\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[rea]\nbroken-example = rea_broken_example\n")
    return root
