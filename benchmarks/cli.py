"""CLI calls at a terminal: first and second call on the same bytes, the analysis cache, and output sizes.

Each target gets a fresh cache (REA_CACHE_DIR in a temporary directory). The first call starts from an
empty cache; the second asks the same question again, and a third asks another question of the same
binary: with a provider that keeps its whole-program analysis in the cache (docs/cache.md), both answer
from it. Goals for the second call: under 100 ms for /bin/ls, under 1 s for libcrypto.so.3.

    python benchmarks/cli.py [TARGET ...]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

TARGETS = ("/bin/ls", "/usr/lib/x86_64-linux-gnu/libcrypto.so.3")
GOALS_MS = {"/bin/ls": 100, "/usr/lib/x86_64-linux-gnu/libcrypto.so.3": 1000}
REPEATS = 3


def rea(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "rea", *args], capture_output=True, text=True, env=env, timeout=1800)
    elapsed = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"rea {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def wire(text: str) -> int:
    """Bytes of a JSON document without indentation."""
    return len(json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False).encode())


def main(targets: list[str]) -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    floor = statistics.median(rea(["providers", "list", "--json"], base)[0] for _ in range(REPEATS))
    print(f"floor: rea providers list --json (interpreter + registry)   {floor:8.0f} ms")
    for target in targets:
        if not os.path.exists(target):
            print(f"{target}: not on this machine, skipped")
            continue
        with tempfile.TemporaryDirectory(prefix="rea-bench-cache-") as cache:
            env = {**base, "REA_CACHE_DIR": cache}
            query = ["list-procedures", target, "--limit", "5", "--json"]
            first, _ = rea(query, env)
            second = statistics.median(rea(query, env)[0] for _ in range(REPEATS))
            other = statistics.median(
                rea(["find-xrefs-to-name", target, "getenv", "--json"], env)[0] for _ in range(REPEATS)
            )
            info = json.loads(rea(["cache", "info", "--json"], env)[1])
            goal = GOALS_MS.get(target)
            print(f"{target}:")
            print(f"  first call  (empty cache)         {first:8.0f} ms")
            print(f"  second call (same question)       {second:8.0f} ms" + (f"  (goal < {goal} ms)" if goal else ""))
            print(f"  another question, same bytes      {other:8.0f} ms")
            kinds = ", ".join(f"{k['kind']} {k['entries']} ({k['bytes']} B)" for k in info["kinds"]) or "none"
            print(f"  cache after both: {info['entries']} entries, {info['bytes']} bytes: {kinds}")
            if target == "/bin/ls":
                for presentation in ("complete", "compact"):
                    penv = {**env, "REA_RESULT_PRESENTATION": presentation}
                    dossier = rea(["analyze-function", target, "main", "--json"], penv)[1]
                    small = rea(["procedure-info", target, "main", "--json"], penv)[1]
                    print(
                        f"  {presentation:8} result (compact JSON, as MCP sends it): analyze-function main "
                        f"{wire(dossier):7d} B, procedure-info main {wire(small):5d} B"
                    )
                record = json.loads(dossier)
                complete_id = record["normalized_result"].get("complete_evidence_id")
                if complete_id:
                    summary = rea(
                        [
                            "inspect-analysis-view",
                            json.dumps({"source": {"kind": "retained-evidence", "evidence_id": complete_id}}),
                            "--json",
                        ],
                        env,
                    )[1]
                    sections = json.loads(summary)["normalized_result"]["summary"]["sections"]
                    print(
                        "  the complete dossier (one reference away): "
                        + ", ".join(f"{s['name']} {s['count']}" for s in sections if s["count"])
                    )
                    whole = rea(
                        [
                            "analyze-function",
                            target,
                            "main",
                            "--limit",
                            "1000",
                            "--max-instructions",
                            "20000",
                            "--json",
                        ],
                        env,
                    )[1]
                    print(f"  the complete dossier itself: {wire(whole)} B")


if __name__ == "__main__":
    main(sys.argv[1:] or list(TARGETS))
