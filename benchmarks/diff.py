"""compare_binaries on two versions of a real library of this machine: recall and precision of changed-function
detection, and the time, beside ``objdump -d | diff`` as the floor.

The default pair is libpython 3.12.1 (pyenv's build) against 3.12.10 (the Google Cloud SDK's bundled build); any
two x86-64 ELF files can be given. Functions are judged where the two builds' symbol tables (``nm``, dynamic
symbols included) name them exactly once each. Truth comes from objdump, not from rea: a function changed when
its objdump listing differs once addresses are masked (branch and call targets, ``<symbol>`` names, rip-relative
displacements and objdump's ``#`` comments), constants kept. The floor, ``objdump -d | diff``, calls a function
changed when its listing differs in anything but the address column. rea calls a function changed when its pair is
``changed`` (in instructions or constants) or when it shows it as added or removed though both builds have it.

    python benchmarks/diff.py [--left A.so --right B.so] [--provider native]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rea.context import CallContext  # noqa: E402
from rea.registry import load  # noqa: E402
from rea.session import Session  # noqa: E402
from rea.testing import call_tool  # noqa: E402

PAIRS = (
    (
        "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0",
        "/usr/lib/google-cloud-sdk/platform/bundledpythonunix/lib/libpython3.12.so.1.0",
    ),
    ("/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1", "/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1"),
)
ALL = ["changed", "added", "removed", "unchanged"]
_HEADER = re.compile(r"^([0-9a-f]+) <(.+)>:$")
_LINE = re.compile(r"^\s+([0-9a-f]+):\s+(.*)$")
_BRANCH = re.compile(r"^(j\w+|call\w*|loop\w*|bnd jmp|notrack jmp)\s+[0-9a-f]+\b")
_SYMBOL = re.compile(r"<[^>]*>")
_RIP = re.compile(r"-?0x[0-9a-f]+\(%rip\)")


def symbols(path: str) -> tuple[dict[int, str], dict[int, int]]:
    """Address -> name of the functions the file's symbol tables name exactly once (static and dynamic), and
    address -> size (a stripped file's listing runs on past a function into the unnamed ones after it)."""
    found: dict[int, str] = {}
    sizes: dict[int, int] = {}
    for extra in ([], ["-D"]):
        cmd = ["nm", *extra, "-S", "--defined-only", path]
        for line in subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[2] in "tT":
                found.setdefault(int(parts[0], 16), parts[3].split("@")[0])
                sizes[int(parts[0], 16)] = int(parts[1], 16)
    counts = Counter(found.values())
    return {a: n for a, n in found.items() if counts[n] == 1}, sizes


def listings(path: str, names: dict[int, str], sizes: dict[int, int]) -> dict[str, list[str]]:
    """Name -> objdump's instruction texts of each named function within its symbol's size (without the address
    column)."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True, text=True, check=True)
    funcs: dict[str, list[str]] = {}
    current: list[str] | None = None
    end = 0
    for line in out.stdout.splitlines():
        head = _HEADER.match(line)
        if head:
            start = int(head.group(1), 16)
            name = names.get(start)
            current = funcs.setdefault(name, []) if name else None
            end = start + sizes.get(start, 1 << 62)
            continue
        body = _LINE.match(line)
        if body and current is not None and int(body.group(1), 16) < end:
            current.append(body.group(2).strip())
    return funcs


_PADDING = re.compile(r"^(nop\w*|xchg\s+%ax,%ax|int3|data16|cs nopw|lea\s+0x0\(%r\w+,%r\w+,1\),%r\w+)\b")


def masked(lines: list[str]) -> list[str]:
    """The truth's normalization: addresses masked, constants kept, the alignment padding after the last
    instruction left out (objdump lists it up to the next symbol)."""
    lines = list(lines)
    while lines and _PADDING.match(lines[-1]):
        lines.pop()
    out = []
    for text in lines:
        text = text.split("#", 1)[0].strip()
        text = _SYMBOL.sub("<>", text)
        text = _RIP.sub("ADDR(%rip)", text)
        m = _BRANCH.match(text)
        if m:
            text = m.group(1) + " ADDR" + text[m.end() :]
        out.append(re.sub(r"\s+", " ", text))
    return out


def score(flagged: set[str], truth: set[str]) -> tuple[float, float]:
    hit = len(flagged & truth)
    return (hit / len(flagged) if flagged else 1.0), (hit / len(truth) if truth else 1.0)


def floor_time(left: str, right: str) -> float:
    """The wall time of ``objdump -d`` on both files and ``diff`` of the two listings."""
    with tempfile.TemporaryDirectory(prefix="rea-diff-bench-") as tmp:
        started = time.perf_counter()
        for path, name in ((left, "a"), (right, "b")):
            with open(Path(tmp) / name, "w") as out:
                subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], stdout=out, check=True)
        subprocess.run(["diff", str(Path(tmp) / "a"), str(Path(tmp) / "b")], stdout=subprocess.DEVNULL, check=False)
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--left")
    parser.add_argument("--right")
    parser.add_argument("--provider", default="native")
    parser.add_argument("--max-procedures", type=int, default=100_000)
    parser.add_argument("--max-instructions", type=int, default=20_000_000)
    opts = parser.parse_args()
    if opts.left and opts.right:
        left, right = opts.left, opts.right
    else:
        pair = next(((a, b) for a, b in PAIRS if os.path.exists(a) and os.path.exists(b)), None)
        if pair is None:
            sys.exit("no two versions of a library found here: pass --left and --right")
        left, right = pair
    if not shutil.which("objdump") or not shutil.which("nm"):
        sys.exit("objdump and nm (binutils) are needed for the truth and the floor")
    print(f"left  {left}\nright {right}")
    (lnames, lsizes), (rnames, rsizes) = symbols(left), symbols(right)
    lfuncs, rfuncs = listings(left, lnames, lsizes), listings(right, rnames, rsizes)
    common = set(lfuncs) & set(rfuncs)
    truth = {n for n in common if masked(lfuncs[n]) != masked(rfuncs[n])}
    floor = {n for n in common if lfuncs[n] != rfuncs[n]}
    floor_s = floor_time(left, right)

    session, ctx = Session(load()), CallContext()
    started = time.perf_counter()
    session.open(left, opts.provider, ctx, alias="v1")
    session.open(right, opts.provider, ctx, alias="v2")
    opened = time.perf_counter()
    args = {
        "left": "v1",
        "right": "v2",
        "status": ALL,
        "limit": 1000,
        "max_procedures": opts.max_procedures,
        "max_instructions": opts.max_instructions,
    }
    rows = []
    offset: int | None = 0
    result = {}
    while offset is not None:
        out = call_tool(session, "compare_binaries", {**args, "offset": offset})
        assert out.evidence is not None
        result = out.evidence.normalized_result
        rows += result["items"]
        offset = result["next_offset"]
    done = time.perf_counter()
    session.close()

    flagged: set[str] = set()
    mispaired = 0
    seen: set[str] = set()
    for row in rows:
        a = lnames.get(int(row["left"]["address"], 16)) if row.get("left") else None
        b = rnames.get(int(row["right"]["address"], 16)) if row.get("right") else None
        seen.update(n for n in (a, b) if n)
        if row["status"] in ("changed", "unchanged") and a and b and a != b:
            mispaired += 1
            flagged.update((a, b))
        elif row["status"] in ("changed", "removed") and a:
            flagged.add(a)
        elif row["status"] == "added" and b:
            flagged.add(b)
    judged = common & seen
    rea_p, rea_r = score(flagged & judged, truth & judged)
    floor_p, floor_r = score(floor & judged, truth & judged)
    c = result["counts"]
    print(
        f"functions named once in both builds: {len(common)} (read by rea: {len(judged)}); changed by the truth: "
        f"{len(truth & judged)}"
    )
    print(
        f"rea {opts.provider}: precision {rea_p:.3f}, recall {rea_r:.3f}; open {opened - started:.1f} s, "
        f"diff {done - opened:.1f} s, total {done - started:.1f} s; complete {result['complete']}; "
        f"changed {c['changed']} (constants only {c['constants_only']}), added {c['added']}, removed {c['removed']}; "
        f"pairs by name {c['by_name']}, hash {c['by_hash']}, neighbourhood {c['by_neighbourhood']}, similarity "
        f"{c['by_similarity']}; pairs of two differently named functions: {mispaired}"
    )
    print(f"floor objdump -d | diff: precision {floor_p:.3f}, recall {floor_r:.3f}; {floor_s:.1f} s")
    print(f"  missed by rea (first 8): {sorted((truth & judged) - flagged)[:8]}")
    print(f"  flagged by rea, unchanged by the truth (first 8): {sorted((flagged & judged) - truth)[:8]}")
    print(f"time ratio rea / floor: {(done - started) / floor_s:.1f}")


if __name__ == "__main__":
    main()
