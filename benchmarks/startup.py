"""Start-up at the interpreter floor: what a terminal command and a server cost beyond ``python -c 'import rea'``.

Measured, interleaved over ROUNDS rounds (medians; the host is shared, so single runs are noise):

- the floor, ``python -c 'import rea'``;
- ``rea --version`` and ``rea providers list`` (goal: within 100 ms of the floor);
- ``rea procedure-info TARGET main`` on a small binary, first (empty analysis cache) and second call (served
  from the analysis cache; goal: within 100 ms of the floor);
- ``rea serve``: spawn -> initialize -> tools/list answered, against a minimal server on the same ``mcp`` SDK
  (the low-level ``Server`` with one tool over the SDK's stdio transport, started the same way; goal: at most
  1.15x its time).

By default the children run with bytecode cached (``PYTHONPYCACHEPREFIX`` in a directory of this run, after a
warm-up), as an installed package runs; ``--source`` compiles every module on every start instead
(``PYTHONDONTWRITEBYTECODE=1``, what a read-only source tree costs). ``--importtime`` prints the heaviest
packages of each command under ``python -X importtime``.

    python benchmarks/startup.py [--rounds N] [--target PATH] [--source] [--importtime]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

ROUNDS = 9
FLOOR_GOAL_MS = 100.0
SERVE_GOAL_RATIO = 1.15
HEAVY = ("angr", "lief", "capstone", "tree_sitter", "androguard", "dnfile", "dncil", "dask", "distributed", "yara")

MINIMAL_SERVER = """
import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server


async def list_tools(ctx, params):
    return types.ListToolsResult(
        tools=[
            types.Tool(
                name="echo",
                description="Echo the text back.",
                input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            )
        ]
    )


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text=str(params.arguments))])


async def main():
    server = Server("minimal", version="1", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


anyio.run(main)
"""


def rea_command() -> list[str]:
    """The ``rea`` console script beside this interpreter (what a user runs), else ``python -m rea``."""
    script = os.path.join(os.path.dirname(sys.executable), "rea")
    return [script] if os.access(script, os.X_OK) else [sys.executable, "-m", "rea"]


# CPU time (user + system) of each CLI child, by command: on a shared host the wall time also holds the wait for
# a core, the CPU time only what the command itself spent.
CPU: dict[str, list[float]] = {}


# CPU time of each server up to its tools/list answer, by the last word of its command line.
SERVE_CPU: dict[str, list[float]] = {}


def _process_cpu(pid: int) -> float:
    """User + system CPU time of a live process (and its reaped children), in ms, from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    ticks = sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
    return ticks * 1000 / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def wall(cmd: list[str], env: dict[str, str], label: str = "") -> float:
    start, cpu = time.perf_counter(), _children_cpu()
    proc = subprocess.run(cmd, capture_output=True, env=env, timeout=600, stdin=subprocess.DEVNULL)
    elapsed = (time.perf_counter() - start) * 1000
    if label:
        CPU.setdefault(label, []).append(_children_cpu() - cpu)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {(proc.stderr or proc.stdout).decode()[-2000:]}")
    return elapsed


def _line(proc: subprocess.Popen[bytes], want_id: int) -> dict[str, object]:
    assert proc.stdout is not None
    while True:
        raw = proc.stdout.readline()
        if not raw:
            raise SystemExit(f"server exited before answering request {want_id}")
        msg = json.loads(raw)
        if msg.get("id") == want_id:
            return dict(msg)


def serve_to_tools_list(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Milliseconds from spawn to the tools/list answer (initialize first, as every client does), and tool count."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None
    try:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "startup-bench", "version": "1"},
            },
        }
        proc.stdin.write(json.dumps(init).encode() + b"\n")
        proc.stdin.flush()
        _line(proc, 1)
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode() + b"\n")
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}).encode() + b"\n")
        proc.stdin.flush()
        answer = _line(proc, 2)
        elapsed = (time.perf_counter() - start) * 1000
        SERVE_CPU.setdefault(cmd[-1], []).append(_process_cpu(proc.pid))
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    result = answer.get("result")
    tools = result.get("tools", []) if isinstance(result, dict) else []
    return elapsed, len(tools)


def importtime(cmd: list[str], env: dict[str, str], top: int = 12) -> list[tuple[str, float]]:
    """Self import time by top-level package (rea and rea_plugins by subpackage), heaviest first, in ms; the
    median of three runs, after one that warms what the command keeps (the ``rea`` script runs under the same
    interpreter, so its sys.path, and the registry's kept entries, are those of the timed runs)."""
    base = cmd if cmd[0] == sys.executable else [sys.executable, *cmd]
    runs = [_importtime_once(base, env) for _ in range(4)][1:]
    names = {name for run in runs for name in run}
    totals = {name: statistics.median(run.get(name, 0.0) for run in runs) for name in names}
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])
    return [("(all imports)", statistics.median(sum(run.values()) for run in runs)), *ranked[:top]]


def _importtime_once(base: list[str], env: dict[str, str]) -> dict[str, float]:
    proc = subprocess.run(
        [base[0], "-X", "importtime", *base[1:]],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    totals: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m is None:
            continue
        parts = m[4].split(".")
        name = ".".join(parts[:2]) if parts[0] in ("rea", "rea_plugins") and len(parts) > 1 else parts[0]
        totals[name] = totals.get(name, 0.0) + int(m[1]) / 1000
    return totals


def heavy_after(code: str, env: dict[str, str]) -> list[str]:
    probe = f"import sys\n{code}\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    return [m for m in out.stdout.strip().split(",") if m]


VERSION_GOAL_MS = 80.0  # rea --version over python -c pass, CPU (issue 45)
SECOND_GOAL_MS = 100.0  # a warm second call over rea --version, CPU (issue 45)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--target", default="/bin/ls", help="a small native binary (default /bin/ls)")
    parser.add_argument("--source", action="store_true", help="no cached bytecode: compile every module every time")
    parser.add_argument("--importtime", action="store_true", help="print each command's heaviest imports")
    ns = parser.parse_args()

    work = tempfile.mkdtemp(prefix="rea-startup-")
    try:
        run(ns, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(ns: argparse.Namespace, work: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_") and k != "PYTHONPYCACHEPREFIX"}
    if ns.source:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.path.join(work, "pycache")
    # The registry's own cache lives in the analysis cache; a fixed one for the commands, fresh ones for first calls.
    env["REA_CACHE_DIR"] = os.path.join(work, "cache")
    rea = rea_command()
    server_script = os.path.join(work, "minimal_server.py")
    with open(server_script, "w") as fh:
        fh.write(MINIMAL_SERVER)
    target = ns.target

    first_calls = 0

    def first_call() -> float:
        nonlocal first_calls
        first_calls += 1
        fresh = {**env, "REA_CACHE_DIR": os.path.join(work, f"fresh-{first_calls}")}
        return wall([*rea, "procedure-info", target, "main", "--json"], fresh, "first")

    commands: dict[str, Callable[[], float]] = {
        "floor": lambda: wall([sys.executable, "-c", "import rea"], env, "floor"),
        "pass": lambda: wall([sys.executable, "-c", "pass"], env, "pass"),
        "version": lambda: wall([*rea, "--version"], env, "version"),
        "providers": lambda: wall([*rea, "providers", "list"], env, "providers"),
        "first": first_call,
        "second": lambda: wall([*rea, "procedure-info", target, "main", "--json"], env, "second"),
        "minimal": lambda: serve_to_tools_list([sys.executable, server_script], env)[0],
        "serve": lambda: serve_to_tools_list([*rea, "serve"], env)[0],
    }
    # Warm-up: bytecode written, the registry's cache and the target's analysis stored.
    for name, measure in commands.items():
        if name != "first":
            measure()
    tools = serve_to_tools_list([*rea, "serve"], env)[1]
    CPU.clear()
    SERVE_CPU.clear()
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(ns.rounds):
        for name, measure in commands.items():
            samples[name].append(measure())
    med = {name: statistics.median(values) for name, values in samples.items()}
    floor = med["floor"]

    def row(label: str, name: str, goal: str = "") -> None:
        values = samples[name]
        cpu = f"cpu {statistics.median(CPU[name]):6.1f}" if name in CPU else " " * 10
        print(
            f"{label:46} median {med[name]:7.1f} ms  (min {min(values):6.1f}, max {max(values):6.1f}; {cpu})"
            + (f"  {goal}" if goal else "")
        )

    def vs_floor(name: str) -> str:
        delta = med[name] - floor
        verdict = "met" if delta <= FLOOR_GOAL_MS else "MISSED"
        return f"+{delta:5.1f} ms over the floor (goal <= +{FLOOR_GOAL_MS:.0f}: {verdict})"

    mode = "source, no cached bytecode" if ns.source else "bytecode cached"
    print(f"rea start-up, {ns.rounds} interleaved rounds, medians ({mode}); python {sys.version.split()[0]}")
    row("python -c 'import rea' (the floor)", "floor")
    row("rea --version", "version", vs_floor("version"))
    row("rea providers list", "providers", vs_floor("providers"))
    row(f"rea procedure-info {target} main (first call)", "first", f"+{med['first'] - floor:5.1f} ms (empty cache)")
    row(f"rea procedure-info {target} main (second call)", "second", vs_floor("second"))
    row("minimal mcp server: spawn -> tools/list", "minimal")
    ratio = med["serve"] / med["minimal"]
    verdict = "met" if ratio <= SERVE_GOAL_RATIO else "MISSED"
    row(
        f"rea serve: spawn -> tools/list ({tools} tools)",
        "serve",
        f"{ratio:.2f}x the minimal server (goal <= {SERVE_GOAL_RATIO}x: {verdict})",
    )
    serve_cpu = {name: statistics.median(values) for name, values in SERVE_CPU.items()}
    if len(serve_cpu) == 2:
        rea_cpu, minimal_cpu = serve_cpu["serve"], serve_cpu[server_script]
        print(
            f"cpu time to the tools/list answer: rea serve {rea_cpu:.0f} ms, minimal {minimal_cpu:.0f} ms "
            f"({rea_cpu / minimal_cpu:.2f}x)"
        )
    loaded = heavy_after("import rea.registry as r\nr.default_registry()", env)
    print(f"engines imported by loading the registry:     {', '.join(loaded) or 'none'}")
    cpu_delta = {
        name: statistics.median(CPU[name]) - statistics.median(CPU["floor"]) for name in CPU if name != "floor"
    }
    print("cpu time over the floor's: " + ", ".join(f"{name} +{ms:.1f} ms" for name, ms in cpu_delta.items()))
    # Issue 45's goals, by CPU time (steadier than wall time): the interpreter's own start as the floor of
    # `rea --version`, and `rea --version` as the floor of a warm call.
    cpu = {name: statistics.median(values) for name, values in CPU.items()}
    version_over = cpu["version"] - cpu["pass"]
    second_over = cpu["second"] - cpu["version"]
    version_verdict = "met" if version_over <= VERSION_GOAL_MS else "MISSED"
    second_verdict = "met" if second_over <= SECOND_GOAL_MS else "MISSED"
    print(
        f"cpu medians: python -c pass {cpu['pass']:.1f} ms, rea --version {cpu['version']:.1f} ms "
        f"(+{version_over:.1f}; goal <= +{VERSION_GOAL_MS:.0f}: {version_verdict}), "
        f"warm second call {cpu['second']:.1f} ms (+{second_over:.1f} over rea --version; goal <= "
        f"+{SECOND_GOAL_MS:.0f}: {second_verdict})"
    )

    if ns.importtime:
        for label, cmd in (
            ("python -c 'import rea'", [sys.executable, "-c", "import rea"]),
            ("rea --version", [*rea, "--version"]),
            ("rea providers list", [*rea, "providers", "list"]),
            ("rea procedure-info (second call)", [*rea, "procedure-info", target, "main", "--json"]),
            ("rea serve (until stdin closes)", [*rea, "serve"]),
        ):
            print(f"\n-X importtime, {label}: self ms by package")
            for name, ms in importtime(cmd, env):
                print(f"  {ms:7.1f}  {name}")


if __name__ == "__main__":
    main()
