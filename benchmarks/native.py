"""The native provider next to radare2 and angr, in one run, on four real binaries.

Targets: /bin/ls; brotli's command-line tool built here from its PyPI sdist (gcc -O2, stripped); the
system's libcrypto.so.3; the largest ELF library on the machine. For each: ``objdump -d`` as the floor,
then each engine in a fresh process (so peak RSS is its own): native open + binary_overview (and again
on a warm server, where the index comes from the content-digest cache), radare2 5.7 ``aaa`` through
r2pipe over the r2libr wheel, angr (the rea provider) open + binary_overview. Prints seconds, ratios to
native, peak RSS, and how many of radare2's (and angr's) function starts native lists.

Run: ``python benchmarks/native.py``. Options: ``--r2-timeout``/``--angr-timeout`` bound each step
(a timed-out peer is reported as a lower bound on the ratio); ``--skip-large`` runs only native on the
largest library; ``--only NAME`` picks targets by label substring.

``--ladder`` (issue 27) prints, per target (/bin/ls, python3.11, libcrypto.so.3, libLLVM, chromium), the whole
program side by side: ``objdump -d``'s wall time; native open + binary_overview + every procedure (list_procedures)
+ every call edge (program_call_graph, which holds every procedure's callees) in a fresh process with a fresh
analysis cache; radare2 ``aaa`` where it is feasible (below ``--r2-max-mb``); the native/objdump ratio; the
procedure count, and the count ``objdump`` output gives (direct call targets + function symbols + unwind
entries + code pointers in relocations) with the difference and how many of those native lists; peak RSS
against the file size, and the server's peak above its own base (after imports and the worker's start). Bytecode of
rea, its plugins and site-packages is compiled first (``compileall``), so no timed phase compiles a lazily imported
module, as none does for an installed user. Run the large targets one at a time (``--only``) on a shared machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rea-benchmarks"
BROTLI = "1.2.1"


def largest_elf_library() -> str | None:
    best: tuple[int, str] | None = None
    for root in ("/usr/lib", "/usr/lib64", "/usr/local/lib", "/opt", "/root", "/home"):
        for dirpath, _dirs, files in os.walk(root):
            for name in files:
                if ".so" not in name:
                    continue
                path = os.path.join(dirpath, name)
                try:
                    if os.path.islink(path) or not os.path.isfile(path):
                        continue
                    size = os.path.getsize(path)
                    with open(path, "rb") as fh:
                        if fh.read(4) != b"\x7fELF":
                            continue
                except OSError:
                    continue
                if best is None or size > best[0]:
                    best = (size, path)
    return best[1] if best else None


def libcrypto() -> str | None:
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu"):
        path = os.path.join(d, "libcrypto.so.3")
        if os.path.isfile(path):
            return os.path.realpath(path)
    return None


def brotli_binary() -> str | None:
    """brotli's CLI from the PyPI sdist: a real C code base, built with gcc -O2 and stripped (cached)."""
    out = CACHE / f"brotli-{BROTLI}-O2-stripped"
    if out.exists():
        return str(out)
    if shutil.which("gcc") is None:
        print("(gcc missing: no brotli build)", file=sys.stderr)
        return None
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rea-brotli-") as tmp:
        got = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-binary",
                ":all:",
                "--no-deps",
                f"brotli=={BROTLI}",
                "-d",
                tmp,
            ],
            capture_output=True,
            text=True,
        )
        archives = list(Path(tmp).glob("*.tar.gz"))
        if got.returncode != 0 or not archives:
            print(f"(pip download brotli=={BROTLI} failed: {got.stderr.strip()[-200:]})", file=sys.stderr)
            return None
        subprocess.run(["tar", "xzf", str(archives[0]), "-C", tmp], check=True)
        src = next(Path(tmp).glob("[Bb]rotli-*")) / "c"
        sources = sorted(str(p) for sub in ("common", "dec", "enc") for p in (src / sub).glob("*.c"))
        built = Path(tmp) / "brotli"
        subprocess.run(
            [
                "gcc",
                "-O2",
                "-s",
                f"-I{src / 'include'}",
                *sources,
                str(src / "tools" / "brotli.c"),
                "-lm",
                "-o",
                str(built),
            ],
            check=True,
            capture_output=True,
        )
        shutil.copyfile(built, out.with_suffix(".partial"))
        os.chmod(out.with_suffix(".partial"), 0o755)
        os.replace(out.with_suffix(".partial"), out)
    return str(out)


def objdump_seconds(path: str) -> float | None:
    if shutil.which("objdump") is None:
        return None
    start = time.perf_counter()
    subprocess.run(["objdump", "-d", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


# Each engine runs in a fresh child so peak RSS belongs to one engine and one binary.
REA_CHILD = r"""
import json, resource, statistics, sys, time
from rea.registry import load
from rea.session import Session
from rea.testing import result_of
path, provider = sys.argv[1], sys.argv[2]
out = {}
session = Session(load())
t = time.perf_counter()
result_of(session, "open_binary", {"path": path, "provider_id": provider})
out["open_s"] = time.perf_counter() - t
overview = result_of(session, "binary_overview", {})
out["open_overview_s"] = time.perf_counter() - t
session.close()
session = Session(session.registry)
t = time.perf_counter()
result_of(session, "open_binary", {"path": path, "provider_id": provider})
result_of(session, "binary_overview", {})
out["reopen_overview_s"] = time.perf_counter() - t
procs, offset = [], 0
while offset is not None:
    page = result_of(session, "list_procedures", {"offset": offset, "limit": 1000})
    procs.extend(page["procedures"])
    offset = page["next_offset"]
out["functions"] = len(procs)
local = [p for p in procs if p["kind"] == "local"]
sample = [p["address"] for p in local[:: max(1, len(local) // 50)]][:50]
times = []
for a in sample:
    t = time.perf_counter()
    result_of(session, "procedure_info", {"procedure": a})
    times.append(time.perf_counter() - t)
out["info_p50_ms"] = statistics.median(times) * 1000 if times else None
if provider == "native" and local:
    from rea.errors import ReaError
    t = time.perf_counter()
    try:
        result_of(session, "xrefs", {"address": local[len(local) // 2]["address"]})
        out["first_xrefs_s"] = time.perf_counter() - t
    except ReaError as exc:  # a whole-program index beyond the safety limits is refused, not partial
        out["first_xrefs_error"] = f"{exc.code} after {time.perf_counter() - t:.1f} s"
registry = session.registry
session.close()
for p in registry.providers.values():  # reap provider-owned workers so RUSAGE_CHILDREN covers them
    stop = getattr(getattr(p, "_worker", None), "stop", None)
    if callable(stop):
        stop()
out["peak_rss_mb"] = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                         resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
out["addresses"] = sorted(int(p["address"], 16) for p in procs)
print(json.dumps(out))
"""

R2_CHILD = r"""
import json, resource, sys, time
import r2pipe
path = sys.argv[1]
t = time.perf_counter()
r2 = r2pipe.open("ccall://" + path)
r2.cmd("e scr.color=0")
opened = time.perf_counter() - t
t = time.perf_counter()
r2.cmd("aaa")
out = {"open_s": opened, "aaa_s": time.perf_counter() - t}
out["open_overview_s"] = out["open_s"] + out["aaa_s"]
funcs = json.loads(r2.cmd("aflj") or "[]")
out["functions"] = len(funcs)
out["addresses"] = sorted(f["offset"] for f in funcs)
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def r2_env() -> dict[str, str] | None:
    """The environment r2pipe's ccall:// needs: r2libr's libraries on LD_LIBRARY_PATH."""
    spec = importlib.util.find_spec("libr")
    if spec is None or not spec.submodule_search_locations or importlib.util.find_spec("r2pipe") is None:
        return None
    libdir = os.path.join(next(iter(spec.submodule_search_locations)), "libr")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = libdir + (os.pathsep + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def run_child(
    code: str, argv: list[str], timeout: float, env: dict[str, str] | None = None, memory_gb: float = 0
) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; its last stdout line is the JSON result (or the error).

    ``memory_gb`` caps the child's address space (its own children inherit the cap), so a peer engine
    on a huge library fails alone instead of exhausting a shared machine.
    """
    started = time.perf_counter()

    def cap() -> None:
        if memory_gb:
            limit = int(memory_gb * (1 << 30))
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    proc = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=cap,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"error": f"timed out after {timeout:.0f} s", "elapsed_s": time.perf_counter() - started}
    if proc.returncode != 0 or not out.strip():
        lines = [ln for ln in err.strip().splitlines() if ln.strip()] or ["failed"]
        return {"error": lines[-1][:200], "elapsed_s": time.perf_counter() - started}
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def angr_env(timeout: float) -> dict[str, str]:
    budget = str(int(timeout * 1000))  # angr's own deadlines get the benchmark's budget, so it can finish
    return {
        **os.environ,
        "REA_ANGR_LOAD_TIMEOUT_MS": budget,
        "REA_ANGR_CFG_TIMEOUT_MS": budget,
        "REA_ANGR_QUERY_TIMEOUT_MS": budget,
    }


def fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}{unit}" if value < 100 else f"{value:.0f}{unit}"
    return f"{value}{unit}"


def agreement(native: set[int], other: set[int]) -> str:
    if not other:
        return "-"
    return f"{100 * len(native & other) / len(other):.2f}% ({len(native & other)}/{len(other)})"


# The whole program in one fresh process: open, overview, every procedure, every call edge.
LADDER_CHILD = r"""
import json, os, resource, sys, time
t0 = time.perf_counter()
from rea.context import CallContext
from rea.registry import load
from rea.session import Session
from rea.testing import result_of
path = sys.argv[1]
out = {}
session = Session(load())
# What rea serve does before its first call: answer tools/list (every tool's spec, so its plugin's tools are
# registered). Counted with the imports, not in the whole program.
session.registry.tool_specs()
out["import_s"] = time.perf_counter() - t0
# The parse worker starts first and loads LIEF (most of a small target's open), shown by parsing /bin/true: rea
# serve starts it once the first tools/list is answered, so "served" below is the server's path, the total a cold
# process's.
w = time.perf_counter()
native = session.registry.providers["native"]
from rea.target import identify
native._parse(identify("/bin/true", CallContext()), CallContext())  # the worker started, LIEF loaded
out["worker_s"] = time.perf_counter() - w
out["base_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the interpreter and rea loaded
t = time.perf_counter()
result_of(session, "open_binary", {"path": path, "provider_id": "native"})
out["open_s"] = time.perf_counter() - t
result_of(session, "binary_overview", {})
out["overview_s"] = time.perf_counter() - t - out["open_s"]
mark = time.perf_counter()
procs, offset = [], 0
while offset is not None:
    page = result_of(session, "list_procedures", {"offset": offset, "limit": 1000})
    procs.extend(int(p["address"], 16) for p in page["procedures"])
    offset = page["next_offset"]
out["procedures_s"] = time.perf_counter() - mark
mark = time.perf_counter()
edges, offset, ctx = 0, 0, CallContext()
while offset is not None:
    graph = session.execute("program_call_graph", {"offset": offset, "limit": 5000}, ctx).normalized
    edges += len(graph["edges"])
    offset = graph["next_offset"]
out["graph_s"] = time.perf_counter() - mark
out["whole_s"] = time.perf_counter() - t
out["functions"] = len(procs)
out["edges"] = edges
registry = session.registry
session.close()
for p in registry.providers.values():  # reap the parse worker so RUSAGE_CHILDREN covers it
    stop = getattr(getattr(p, "_worker", None), "close", None)
    if callable(stop):
        stop()
out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["worker_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
with open(sys.argv[2], "w") as fh:
    json.dump(sorted(procs), fh)
print(json.dumps(out))
"""


def libllvm() -> str | None:
    """The newest libLLVM shared library on the machine (a real file, not a link)."""
    found = sorted(
        (p for p in Path("/usr/lib/x86_64-linux-gnu").glob("libLLVM*.so*") if p.is_file() and not p.is_symlink()),
        key=lambda p: [int(n) if n.isdigit() else 0 for n in p.name.replace("-", ".").split(".")],
    )
    return str(found[-1]) if found else None


def objdump_starts(path: str) -> dict[str, set[int]]:
    """Procedure starts ``objdump``'s output gives: direct call targets (``objdump -d``), function symbols
    (``-t``, ``-T``, and the ``<name>:`` labels of ``-d``), unwind entries (``--dwarf=frames``), and code pointers
    in relocations (``-R``: RELATIVE addends and absolute relocations that land in code)."""
    import re

    code: list[tuple[int, int]] = []
    pending: tuple[int, int] | None = None  # a section's range, until its flags line says whether it is code
    for line in subprocess.run(["objdump", "-h", path], capture_output=True, text=True).stdout.splitlines():
        cols = line.split()
        if len(cols) >= 7 and cols[0].isdigit():
            pending = (int(cols[3], 16), int(cols[3], 16) + int(cols[2], 16))
        elif pending is not None:
            if "CODE" in line:
                code.append(pending)
            pending = None

    def in_code(a: int) -> bool:
        return any(lo <= a < hi for lo, hi in code)

    out: dict[str, set[int]] = {"calls": set(), "symbols": set(), "unwind": set(), "pointers": set()}
    call = re.compile(rb"\tcall[q]? +([0-9a-f]+) <")
    label = re.compile(rb"^([0-9a-f]+) <[^>]+>:$", re.M)
    dump = subprocess.Popen(["objdump", "-d", "--no-show-raw-insn", path], stdout=subprocess.PIPE)
    assert dump.stdout is not None
    rest = b""
    while chunk := dump.stdout.read(64 << 20):
        chunk = rest + chunk
        cut = chunk.rfind(b"\n") + 1
        chunk, rest = chunk[:cut], chunk[cut:]
        out["calls"].update(int(m, 16) for m in call.findall(chunk))
        out["symbols"].update(int(m, 16) for m in label.findall(chunk))
    dump.wait()
    symbol = re.compile(r"^([0-9a-f]+) (.{7}) (\S+)\t")
    for flag in ("-t", "-T"):
        for line in subprocess.run(["objdump", flag, path], capture_output=True, text=True).stdout.splitlines():
            m = symbol.match(line)
            if m and "F" in m.group(2):
                out["symbols"].add(int(m.group(1), 16))
    frames = subprocess.run(["objdump", "--dwarf=frames", path], capture_output=True, text=True).stdout
    out["unwind"].update(int(m, 16) for m in re.findall(r"pc=([0-9a-f]+)\.\.", frames))
    reloc = re.compile(r"^[0-9a-f]+ (R_\w+)\s+(\S+)")
    for line in subprocess.run(["objdump", "-R", path], capture_output=True, text=True).stdout.splitlines():
        m = reloc.match(line)
        if m and m.group(1).endswith(("RELATIVE", "_64", "_32")) and m.group(2).startswith("*ABS*+0x"):
            out["pointers"].add(int(m.group(2)[6:], 16))
    return {k: {a for a in v if in_code(a)} for k, v in out.items()}


def precompile() -> None:
    """Write the bytecode of rea, its plugins and the environment's packages once (an installed user has it), so a
    child never compiles a lazily imported module inside a timed phase, even with PYTHONDONTWRITEBYTECODE set."""
    import sysconfig

    folders = [str(ROOT / "rea"), str(ROOT / "rea_plugins"), sysconfig.get_paths()["purelib"]]
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", *folders],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    )


def ladder(args: argparse.Namespace) -> int:
    """The whole-program ladder of issue 27 (see the module's docstring)."""
    precompile()
    env_r2 = r2_env()
    python = "/usr/bin/python3.11"  # the interpreter's own binary (a pyenv shim on PATH is a script)
    chromium = "/usr/lib/chromium/chromium"
    llvm = libllvm()
    candidates = [
        ("/bin/ls", "/bin/ls"),
        ("python3.11", os.path.realpath(python) if os.path.isfile(python) else None),
        ("libcrypto.so.3", libcrypto()),
        (os.path.basename(llvm) if llvm else "libLLVM", llvm),
        ("chromium", chromium if os.path.isfile(chromium) else None),
    ]
    head = (
        f"{'target':<18} {'MB':>6} {'objdump':>8} {'native':>8} {'(wall)':>8} {'÷objdump':>8} {'served':>8} "
        f"{'÷objdump':>8} {'r2 aaa':>9} "
        f"{'r2÷native':>9} {'procs':>7} {'edges':>8} {'objdump-derived':>16} {'diff':>7} {'listed':>7} "
        f"{'RSS MB':>7} {'÷file':>6} {'>base':>6} {'÷file':>6}"
    )
    print(head)
    print("-" * len(head))
    for label, path in candidates:
        if args.only and not any(o in label for o in args.only):
            continue
        if path is None:
            print(f"{label:<18} absent on this machine")
            continue
        size = os.path.getsize(path)
        floor = objdump_seconds(path)
        with tempfile.TemporaryDirectory(prefix="rea-ladder-") as tmp:
            env = {**os.environ, "REA_CACHE_DIR": os.path.join(tmp, "cache")}
            listing = os.path.join(tmp, "procedures.json")
            started = time.perf_counter()
            nat = run_child(LADDER_CHILD, [path, listing], args.native_timeout, env)
            wall = time.perf_counter() - started
            listed = set(json.loads(Path(listing).read_text())) if "error" not in nat else set()
        r2: dict[str, Any] = {}
        if env_r2 and size <= args.r2_max_mb * 1e6:
            r2 = run_child(R2_CHILD, [path], args.r2_timeout, env_r2, args.peer_memory_gb)
        expected = objdump_starts(path) if args.expected else None
        served = nat.get("whole_s")
        whole = served + nat.get("worker_s", 0.0) if served is not None else None
        r2_s = r2.get("open_overview_s")
        r2_text = fmt(r2_s, " s") if r2_s else ("error" if r2 else "skipped")
        if "error" in r2:
            r2_text = f">{r2['elapsed_s']:.0f} s" if "timed out" in r2["error"] else "error"
        union = set().union(*expected.values()) if expected else set()
        rss = max(nat.get("rss_mb", 0.0), nat.get("worker_rss_mb", 0.0))
        above = max(0.0, nat.get("rss_mb", 0.0) - nat.get("base_rss_mb", 0.0))  # the server's growth over its base
        mib = size / (1 << 20)
        shown = f"{label:<18} {size / 1e6:>6.1f} {fmt(floor, ' s'):>8} "
        if "error" in nat:
            print(f"{shown}error: {nat['error']}")
            continue
        count = nat["functions"]
        ratio = f"{whole / floor:.2f}x" if floor and whole else "-"
        served_ratio = f"{served / floor:.2f}x" if floor and served else "-"
        r2_ratio = f"{r2_s / whole:.1f}x" if r2_s and whole else "-"
        derived = str(len(union)) if union else "-"
        diff = f"{100 * (count - len(union)) / len(union):+.1f}%" if union else "-"
        recall = f"{100 * len(listed & union) / len(union):.1f}%" if union else "-"
        print(
            f"{shown}{fmt(whole, ' s'):>8} {fmt(wall, ' s'):>8} {ratio:>8} {fmt(served, ' s'):>8} {served_ratio:>8} "
            f"{r2_text:>9} {r2_ratio:>9} {count:>7} "
            f"{nat['edges']:>8} {derived:>16} {diff:>7} {recall:>7} "
            f"{rss:>7.0f} {rss / mib:>6.2f} {above:>6.0f} {above / mib:>6.2f}"
        )
        phases = (
            f"imports {nat['import_s']:.2f} s, parse worker start {nat['worker_s']:.2f} s, open {nat['open_s']:.2f} s, "
            f"overview {nat['overview_s']:.2f} s, "
            f"procedures {nat['procedures_s']:.2f} s, call graph {nat['graph_s']:.2f} s; RSS server "
            f"{nat['rss_mb']:.0f} MB, parse worker {nat['worker_rss_mb']:.0f} MB"
        )
        if expected:
            parts = ", ".join(f"{k} {len(v)}" for k, v in expected.items())
            phases += f"; objdump-derived: {parts}"
        print(f"{'':<18} {phases}")
        sys.stdout.flush()
    print(
        "native: parse worker start + open + binary_overview + list_procedures (all pages) + program_call_graph (all "
        "pages), in one fresh process with a fresh analysis cache, after its imports and the tools/list every server "
        "answers before its first call; served: the same without the "
        "worker's start and LIEF load (rea serve does both after the first tools/list); (wall): the child process, "
        "start to exit. "
        "objdump-derived: distinct starts from direct calls, function symbols, unwind entries and code pointers in "
        "relocations; diff: native's count against it; listed: how many of those native lists. RSS: the larger of "
        "the server process and its parse worker; ÷file: against the file size in MiB; >base: the server's peak above "
        "its own after imports and the worker's start (the interpreter and rea, ~70 MB, dominate small files). "
        "Bytecode is written first (compileall of rea, plugins and site-packages), as an installed user has it."
    )
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M:%S')})")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--r2-timeout", type=float, default=600.0)
    ap.add_argument("--angr-timeout", type=float, default=600.0)
    ap.add_argument("--skip-large", action="store_true", help="only native on the largest library")
    ap.add_argument("--peer-memory-gb", type=float, default=8.0, help="address-space cap of radare2 and angr runs")
    ap.add_argument("--only", action="append", default=[], help="targets whose label contains this")
    ap.add_argument("--ladder", action="store_true", help="the whole-program ladder against objdump (issue 27)")
    ap.add_argument("--r2-max-mb", type=float, default=20.0, help="--ladder: radare2 aaa only below this size")
    ap.add_argument("--native-timeout", type=float, default=3600.0)
    ap.add_argument(
        "--no-expected", dest="expected", action="store_false", help="--ladder: skip the objdump-derived count"
    )
    args = ap.parse_args()
    if args.ladder:
        return ladder(args)
    from rea.registry import load

    have_angr = "angr" in load().providers
    env_r2 = r2_env()
    candidates = [
        ("/bin/ls", "/bin/ls"),
        (f"brotli {BROTLI} (gcc -O2, stripped)", brotli_binary()),
        ("libcrypto.so.3", libcrypto()),
    ]
    large = largest_elf_library()
    if large:
        candidates.append((f"largest .so: {os.path.basename(large)}", large))
    targets = [
        (label, path) for label, path in candidates if path and (not args.only or any(o in label for o in args.only))
    ]
    engines = ["native"] + (["radare2"] if env_r2 else []) + (["angr"] if have_angr else [])
    print(
        f"engines: {', '.join(engines)}"
        + ("" if env_r2 else " (radare2: pip install 'rea-reverse[bench]' for r2pipe + r2libr)")
    )
    head = (
        f"{'binary':<34} {'MB':>6} {'engine':<8} {'open':>7} {'open+analysis':>13} {'warm':>7} {'functions':>9} "
        f"{'peak RSS':>9} {'vs native':>10}  native lists"
    )
    print(head)
    print("-" * len(head))
    for label, path in targets:
        size_mb = os.path.getsize(path) / 1e6
        floor = objdump_seconds(path)
        is_large = label.startswith("largest")
        results: dict[str, dict[str, Any]] = {"native": run_child(REA_CHILD, [path, "native"], 1800)}
        if env_r2 and not (args.skip_large and is_large):
            results["radare2"] = run_child(R2_CHILD, [path], args.r2_timeout, env_r2, args.peer_memory_gb)
        if have_angr and not (args.skip_large and is_large):
            results["angr"] = run_child(
                REA_CHILD, [path, "angr"], args.angr_timeout, angr_env(args.angr_timeout), args.peer_memory_gb
            )
        nat = results["native"]
        nat_s = nat.get("open_overview_s")
        nat_addrs = set(nat.get("addresses", []))
        for name, r in results.items():
            shown = f"{label:<34} {size_mb:>6.1f} " if name == "native" else f"{'':<34} {'':>6} "
            if "error" in r:
                bound = f">= {r['elapsed_s'] / nat_s:.1f}x" if nat_s and name != "native" else ""
                print(f"{shown}{name:<8} {'error: ' + r['error']:<50} {bound}")
                continue
            ratio = "1.0x" if name == "native" else (f"{r['open_overview_s'] / nat_s:.1f}x" if nat_s else "-")
            agree = "" if name == "native" else agreement(nat_addrs, set(r.get("addresses", [])))
            print(
                f"{shown}{name:<8} {fmt(r.get('open_s'), ' s'):>7} {fmt(r['open_overview_s'], ' s'):>13} "
                f"{fmt(r.get('reopen_overview_s'), ' s'):>7} "
                f"{r['functions']:>9} {fmt(r['peak_rss_mb'], ' MB'):>9} {ratio:>10}  {agree}"
            )
        extras = []
        if floor is not None and nat_s:
            extras.append(f"objdump -d {floor:.2f} s (native = {nat_s / floor:.1f}x objdump)")
        if nat.get("info_p50_ms") is not None:
            extras.append(f"procedure_info p50 {nat['info_p50_ms']:.1f} ms")
        if nat.get("first_xrefs_s") is not None:
            extras.append(f"first xrefs (data references) {nat['first_xrefs_s']:.2f} s")
        if nat.get("first_xrefs_error"):
            extras.append(f"first xrefs: {nat['first_xrefs_error']}")
        if extras:
            print(f"{'':<34} {'':>6} {'':<8} " + "; ".join(extras))
    print(
        "open: open_binary (native: parse worker start with LIEF import, and the parse) or r2pipe open. "
        "open+analysis: open + binary_overview in a fresh process, or radare2 open + aaa. warm: open + "
        "binary_overview again on the same server (native reuses its index by content digest)."
    )
    print(
        f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; benchmark peak RSS "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; {time.strftime('%Y-%m-%d %H:%M:%S')})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
