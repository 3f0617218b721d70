"""Corpus triage throughput: ELF files from this machine's /usr/bin and /usr/lib, through ``rea corpus triage``.

Prints files/s and MB/s for the local scheduler with 1 and 2 workers and for the synchronous one, a shell loop
of ``rea analyze`` and of ``objdump -d`` over (a sample of) the same files, the peak RSS of each worker process,
and the corpus machinery's overhead: the synchronous triage against the same per-binary analysis called
directly in one process (no Dask, no SQLite, no walk).

Run: ``python benchmarks/corpus.py [--files 500] [--loop-sample 40] [--max-bytes 1000000]``.
Goals (issue 31): >= 1.7x from 1 to 2 workers on 2 cores; >= 10x the ``rea analyze`` loop; overhead <= 20%.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

ROOTS = ("/usr/bin", "/usr/lib", "/usr/sbin", "/usr/libexec")


def elf_files(count: int, max_bytes: int) -> list[Path]:
    """Up to ``count`` distinct regular ELF files (by inode), smallest directories first, sorted by path."""
    seen: set[tuple[int, int]] = set()
    out: list[Path] = []
    for root in ROOTS:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                try:
                    st = os.stat(path, follow_symlinks=False)
                except OSError:
                    continue
                if not os.path.isfile(path) or os.path.islink(path) or not 4096 <= st.st_size <= max_bytes:
                    continue
                if (st.st_dev, st.st_ino) in seen:
                    continue
                try:
                    with open(path, "rb") as fh:
                        head = fh.read(20)
                except OSError:
                    continue
                # x86-64 and AArch64 ELF only: what the native provider reads.
                if head[:4] != b"\x7fELF" or int.from_bytes(head[18:20], "little") not in (62, 183):
                    continue
                seen.add((st.st_dev, st.st_ino))
                out.append(Path(path))
                if len(out) >= count:
                    return out
    return out


class RssSampler:
    """Peak RSS of each process below this one (the pool's workers and their parse workers), sampled."""

    def __init__(self) -> None:
        self.peak: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.1):
            for child in me.children(recursive=True):
                try:
                    rss = child.memory_info().rss
                except psutil.Error:
                    continue
                self.peak[child.pid] = max(self.peak.get(child.pid, 0), rss)


def _burn(_: int) -> float:
    start = time.perf_counter()
    x = 0
    for i in range(10_000_000):
        x += i
    return time.perf_counter() - start


def parallel_capacity() -> float:
    """How many CPU-bound processes this host runs at once right now (2.0 on two idle cores; less when shared)."""
    import multiprocessing

    one = _burn(0)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_burn, [0, 0])  # start-up outside the measurement
        start = time.perf_counter()
        pool.map(_burn, [0, 1])
        both = time.perf_counter() - start
    return 2 * one / both


def triage(
    corpus: Path, scheduler: str, workers: int, max_procedures: int
) -> tuple[float, dict[str, Any], dict[int, int]]:
    from rea.catalog.invoke import invoke
    from rea.context import CallContext
    from rea.registry import default_registry
    from rea.session import Session

    registry = default_registry()
    with tempfile.TemporaryDirectory() as tmp:
        session = Session(registry)
        args = {
            "paths": [str(corpus)],
            "index": os.path.join(tmp, "bench.db"),
            "scheduler": scheduler,
            "workers": workers,
            "max_procedures": max_procedures,
        }
        with RssSampler() as rss:
            start = time.perf_counter()
            result = invoke(session, registry.tools["triage_corpus"], args, CallContext())
            elapsed = time.perf_counter() - start
        session.close()
    assert result.evidence is not None
    normalized: dict[str, Any] = result.evidence.normalized_result
    return elapsed, normalized, rss.peak


def direct(files: list[Path], max_procedures: int) -> float:
    """The same per-binary analysis, called in this process one file after another: the work itself."""
    from rea_plugins.corpus.analyse import Options
    from rea_plugins.corpus.analyse import analyse

    options = Options(provider="native", max_procedures=max_procedures)
    start = time.perf_counter()
    for f in files:
        analyse(str(f), options)
    return time.perf_counter() - start


def loop(argv_of: Any, files: list[Path], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    for f in files:
        subprocess.run(argv_of(f), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
    return time.perf_counter() - start


def warm_cli_env(tmp: str, rea: str) -> dict[str, str]:
    """The environment of a user's ``rea analyze`` loop: the registry's kept manifest warm (one ``rea --version``
    first), the analysis cache on in a fresh folder (each file is new to it, so no analysis is reused)."""
    env = {k: v for k, v in os.environ.items() if k != "REA_CACHE_MAX_BYTES"}
    env["REA_CACHE_DIR"] = os.path.join(tmp, "loop-cache")
    subprocess.run([rea, "--version"], env=env, stdout=subprocess.DEVNULL, check=False)
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=500, help="ELF files in the corpus (default 500)")
    parser.add_argument("--max-bytes", type=int, default=1_000_000, help="largest file taken (default 1 MB)")
    parser.add_argument("--loop-sample", type=int, default=40, help="files the shell loops run over (default 40)")
    parser.add_argument(
        "--max-procedures", type=int, default=5000, help="procedures hashed per binary (default 5000; 0: none)"
    )
    ns = parser.parse_args()
    # Every run analyses: no analysis cache carries one run's work into the next (workers inherit this).
    os.environ["REA_CACHE_MAX_BYTES"] = "0"
    files = elf_files(ns.files, ns.max_bytes)
    if not files:
        print("no ELF files found under " + ", ".join(ROOTS), file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        for i, f in enumerate(files):
            shutil.copyfile(f, corpus / f"{i:04d}-{f.name}")
        mb = sum(f.stat().st_size for f in files) / 1e6
        print(
            f"corpus: {len(files)} ELF files, {mb:.1f} MB, {os.cpu_count()} cores, "
            f"procedures hashed per binary: {ns.max_procedures}"
        )
        print(f"host parallel capacity now: {parallel_capacity():.2f} of 2 processes (other load lowers it)")
        rates: dict[str, float] = {}
        times: dict[str, float] = {}
        for label, scheduler, workers in (
            ("local, 1 worker", "local", 1),
            ("local, 2 workers", "local", 2),
            ("synchronous", "synchronous", 1),
        ):
            elapsed, res, peak = triage(corpus, scheduler, workers, ns.max_procedures)
            counts = res["counts"]
            done = counts["analysed"] + counts["failed"]
            rates[label] = done / elapsed
            times[label] = elapsed
            worst = max(peak.values()) / 1e6 if peak else 0.0
            print(
                f"{label:18} {elapsed:7.1f} s  {done / elapsed:6.2f} files/s  {mb / elapsed:6.2f} MB/s  "
                f"failed {counts['failed']}  peak RSS per worker process {worst:.0f} MB "
                f"({len(peak)} processes)"
            )
        print(f"speed-up 1 -> 2 workers: {rates['local, 2 workers'] / rates['local, 1 worker']:.2f}x (goal >= 1.7x)")
        print(f"host parallel capacity after: {parallel_capacity():.2f} of 2 processes")
        sample = files[: ns.loop_sample]
        rea = shutil.which("rea", path=os.path.dirname(sys.executable)) or "rea"
        t_rea = loop(lambda f: [rea, "analyze", str(f), "--json"], sample, warm_cli_env(tmp, rea))
        rea_rate = len(sample) / t_rea
        print(f"rea analyze loop   {len(sample)} files in {t_rea:.1f} s  {rea_rate:6.2f} files/s")
        objdump = shutil.which("objdump")
        if objdump:
            t_obj = loop(lambda f: [objdump, "-d", str(f)], sample)
            print(f"objdump -d loop    {len(sample)} files in {t_obj:.1f} s  {len(sample) / t_obj:6.2f} files/s")
        print(f"local (2 workers) vs rea analyze loop: {rates['local, 2 workers'] / rea_rate:.1f}x (goal >= 10x)")
        t_direct = direct(files, ns.max_procedures)
        sync = times["synchronous"]
        print(
            f"direct analysis    {t_direct:7.1f} s; synchronous triage {sync:.1f} s: corpus machinery overhead "
            f"{(sync - t_direct) / t_direct * 100:.0f}% (goal <= 20%)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
