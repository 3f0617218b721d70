"""ASAR inventory and extraction: rea (integrity verification on) next to `npx @electron/asar list/extract`.

Builds one ASAR of at least 20,000 files / 100 MB from real npm packages (installed into a scratch
directory, replicated until both floors are met), then prints median wall times over a few runs.
Goal: at least as fast as @electron/asar. Usage: python benchmarks/artifacts.py [--workdir DIR] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

PACKAGES = ("typescript", "date-fns", "rxjs", "lodash", "core-js", "moment", "@babel/core", "prettier")
MIN_FILES = 20_000
MIN_BYTES = 100 << 20


def run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=True, capture_output=True, text=True)


def tree_size(root: Path) -> tuple[int, int]:
    files = size = 0
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            p = os.path.join(dirpath, n)
            if not os.path.islink(p):
                files += 1
                size += os.path.getsize(p)
    return files, size


def build(work: Path) -> tuple[Path, Path]:
    """Install the npm packages and @electron/asar, replicate into an app tree, and pack it."""
    tools = work / "tools"
    if not (tools / "node_modules" / ".bin" / "asar").exists():
        run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(tools), "@electron/asar"])
    asar = tools / "node_modules" / ".bin" / "asar"
    pkgs = work / "pkgs"
    if not (pkgs / "node_modules").exists():
        run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(pkgs), *PACKAGES])
    archive = work / "app.asar"
    if archive.exists():
        return archive, asar
    app = work / "app"
    shutil.rmtree(app, ignore_errors=True)
    app.mkdir()
    (app / "package.json").write_text('{"name":"bench-app","main":"index.js"}\n')
    (app / "index.js").write_text("require('lodash');\n")
    one_files, one_bytes = tree_size(pkgs / "node_modules")
    copies = max(-(-MIN_FILES // max(one_files, 1)), -(-MIN_BYTES // max(one_bytes, 1)))
    for i in range(copies):
        shutil.copytree(pkgs / "node_modules", app / f"copy{i}" / "node_modules", symlinks=True)
    run([str(asar), "pack", str(app), str(archive)])
    return archive, asar


def timed(fn: Callable[[], object], runs: int) -> tuple[float, object]:
    times = []
    out: object = None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "rea-bench-artifacts"))
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if shutil.which("npm") is None:
        sys.exit("npm is required to build the benchmark archive")
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    archive, asar = build(work)

    from rea.registry import load
    from rea.session import Session
    from rea.testing import call_tool
    from rea_plugins.asar.reader import AsarArchive

    session = Session(load())
    with AsarArchive.open(str(archive)) as arc:
        files = [e for e in arc.entries() if e.kind == "file"]
    total = sum(e.size for e in files)
    print(
        f"archive: {archive}  {archive.stat().st_size / 1e6:.1f} MB, {len(files)} files, "
        f"{total / 1e6:.1f} MB of file data"
    )

    def ours_list() -> object:
        with AsarArchive.open(str(archive)) as arc:
            return len(arc.entries())

    def ours_inventory() -> object:
        session.ledger.clear()
        ev = call_tool(session, "inspect_artifact", {"path": str(archive)}).evidence
        assert ev is not None and ev.normalized_result["coverage"] == "complete"
        return ev.normalized_result["entry_count"]

    def ours_extract() -> object:
        ev = call_tool(session, "extract_artifact", {"path": str(archive)}).evidence
        assert ev is not None
        shutil.rmtree(ev.normalized_result["output_directory"])
        return ev.normalized_result["file_count"]

    def theirs_list() -> object:
        return run([str(asar), "list", str(archive)]).stdout.count("\n")

    def theirs_extract() -> object:
        dest = Path(tempfile.mkdtemp(prefix="asar-bench-"))
        try:
            run([str(asar), "extract", str(archive), str(dest / "out")])
        finally:
            shutil.rmtree(dest)
        return None

    # Each pair runs interleaved (theirs, ours, theirs, ...) so both see the same machine load.
    pairs = [
        (
            ("@electron/asar list (header only, no hashing)", theirs_list),
            ("rea AsarArchive.open + entries (header only)", ours_list),
        ),
        (
            ("@electron/asar list (header only, no hashing)", theirs_list),
            ("rea inspect_artifact (hash + verify every entry, Evidence)", ours_inventory),
        ),
        (
            ("@electron/asar extract (no integrity check)", theirs_extract),
            ("rea extract_artifact (integrity verified)", ours_extract),
        ),
    ]
    for (their_label, theirs), (our_label, ours) in pairs:
        t_times, o_times = [], []
        for _ in range(args.runs):
            t_times.append(timed(theirs, 1)[0])
            o_times.append(timed(ours, 1)[0])
        t_med, o_med = statistics.median(t_times), statistics.median(o_times)
        print(f"{their_label:62s} median {t_med * 1000:9.1f} ms")
        print(f"{our_label:62s} median {o_med * 1000:9.1f} ms  -> {o_med / t_med:.2f}x (goal <= 1.00)")


if __name__ == "__main__":
    main()
