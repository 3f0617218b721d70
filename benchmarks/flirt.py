"""Library functions named by signature: how many of a statically linked runtime's functions the native provider
names in a stripped program, and how many of its signature names are right, measured against the unstripped
build's symbol table; with what building the signatures costs (time, size) at first use and what a warm open costs.

Two builds of one C program (tests/native/libsig_fixtures.py): ``gcc -static`` (glibc's libc.a, libm, libgcc) and
``x86_64-w64-mingw32-gcc`` (MinGW-w64's CRT and libgcc), each stripped (-s). The runtime's functions are the
unstripped build's function symbols that the program's own object does not define; recall counts those the
stripped build's procedures are named right (a signature, an import or the entry heuristic), precision the
signature names that equal one of the unstripped build's names at that address.

    python benchmarks/flirt.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# This script's own folder first on the path would make it the ``flirt`` that python-flirt's importers find.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "benchmarks"]
sys.path.insert(0, str(ROOT))

from tests import toolchains  # noqa: E402
from tests.native import libsig_fixtures as lf  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="rea-bench-flirt-") as tmp:
        os.environ["REA_CACHE_DIR"] = str(Path(tmp) / "cache")  # a cold cache: the signatures are built here
        from rea_plugins.native import libsigs

        builds = {
            "static glibc (gcc -static)": ("elf", lf.build(toolchains.require("gcc-static"), Path(tmp), "prog", True)),
            "MinGW-w64 PE": (
                "pe",
                lf.build(toolchains.require("x86_64-w64-mingw32-gcc"), Path(tmp), "prog", False),
            ),
        }
        for label, (fmt, built) in builds.items():
            # What a first open builds: the runtime's libraries (libstdc++ only for a binary with C++ type names).
            found, missing = libsigs.locate(fmt, "x86_64", built.stripped.read_bytes())
            print(f"== {label}: {built.stripped.name}")
            if missing:
                print("   libraries missing: " + ", ".join(f"{m.label} ({m.package})" for m in missing))
            started = time.monotonic()
            for lib, path in found:
                made, fresh = libsigs.signatures(lib.label, path)
                print(
                    f"   {lib.label:<12} {made.objects:>5} objects {len(made.origins):>6} signatures "
                    f"{len(made.pat) / 1024:>8.1f} KB pattern text  built in {made.seconds:.2f} s"
                    + ("" if fresh else " (cached)")
                )
            print(f"   signatures built (first use): {time.monotonic() - started:.2f} s")
            for phase in ("first open (compile + match)", "second open (warm)"):
                started = time.monotonic()
                procs, library, program = lf.analyse(built.stripped)
                elapsed = time.monotonic() - started
                program.close()
                print(f"   {phase}: {elapsed:.2f} s, {len(procs)} procedures")
            m = lf.measure(procs, library, built)
            print(
                f"   runtime functions {m.runtime}: recall {m.recall:.3f} ({m.named} named right); "
                f"signature names {m.by_signature}: precision {m.precision:.3f} ({m.right} right); "
                f"confidence {dict(sorted(m.confidence.items()))}"
            )
            print(
                "   precision by confidence: "
                + ", ".join(
                    f"{level} {m.right_by_confidence.get(level, 0) / count:.3f} ({count})"
                    for level, count in sorted(m.confidence.items())
                )
            )
            for address, given, truth in m.wrong[:10]:
                print(f"   wrong: {address} {given} (symbol table: {truth})")


if __name__ == "__main__":
    main()
