"""Server memory after oversized requests and for an over-budget result, through a raw stdio client.

Goals: after a burst of oversized and large requests (each refused), RSS returns within 2x of its start;
a result over the response budget is refused without building document-sized copies of it.
Run: python benchmarks/server_memory.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

CALL = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"binary_session","arguments":%s}}'


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def serve(**env: str) -> subprocess.Popen[bytes]:
    """``rea serve`` over stdio, without the caller's REA_ settings but with ``env``, past its initialize."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    environ.update(env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rea", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=environ,
    )
    assert proc.stdin is not None and proc.stdout is not None
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}).encode() + b"\n")
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    proc.stdin.flush()
    proc.stdout.readline()
    return proc


def main() -> None:
    requests()
    oversized_result()


def oversized_result() -> None:
    """A 100 MB result (the probe tool of tests/mcp) against the 10 MiB budget: peak RSS over the record."""
    proc = serve(REA_PLUGIN_MODULES="tests.mcp.probe_plugin", PYTHONPATH=ROOT)
    assert proc.stdin is not None and proc.stdout is not None
    time.sleep(0.3)
    start = rss_kib(proc.pid)
    size = 100_000_000
    t0 = time.perf_counter()
    proc.stdin.write(
        (CALL.replace("binary_session", "probe_payload") % (1, json.dumps({"size": size}))).encode() + b"\n"
    )
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline())
    seconds = time.perf_counter() - t0
    peak = rss_kib(proc.pid, "VmHWM")
    proc.stdin.close()
    proc.wait(30)
    text = reply["result"]["content"][0]["text"]
    code = json.loads(text)["error"]["code"] if reply["result"].get("isError") else "ok"
    print(
        f"over-budget result: {size / 1e6:.0f} MB record -> {code} in {seconds:.2f} s; peak RSS "
        f"{peak / 1024:.0f} MiB from {start / 1024:.0f} MiB = {(peak - start) * 1024 / size:.2f}x the record "
        "(the record itself, its hash encoding and the blob: refused before a response-sized copy)"
    )


def requests() -> None:
    proc = serve()
    assert proc.stdin is not None and proc.stdout is not None

    def roundtrip(line: bytes) -> dict[str, object]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()
        reply: dict[str, object] = json.loads(proc.stdout.readline())
        return reply

    roundtrip((CALL % (1, "{}")).encode())
    time.sleep(0.5)
    start = rss_kib(proc.pid)
    rows = []
    cases = [
        ("12 x 60 MB string argument (over the request limit)", 12, lambda: json.dumps({"x": "a" * (60 << 20)})),
        ("4 x 10 MB string argument (schema-refused)", 4, lambda: json.dumps({"x": "a" * (10 << 20)})),
        ("4 x 1M-element array argument (schema-refused)", 4, lambda: json.dumps({"x": list(range(1_000_000))})),
    ]
    rid = 10
    for label, count, make in cases:
        payload = make()
        t0 = time.perf_counter()
        codes = []
        for _ in range(count):
            rid += 1
            reply = roundtrip((CALL % (rid, payload)).encode())
            err = reply.get("error")
            if isinstance(err, dict):
                codes.append(f"jsonrpc {err['code']}")
            else:
                result = reply["result"]
                assert isinstance(result, dict)
                codes.append("tool error" if result.get("isError") else "ok")
        seconds = time.perf_counter() - t0
        time.sleep(0.3)
        rows.append((label, sorted(set(codes)), seconds, rss_kib(proc.pid)))
    peak = rss_kib(proc.pid, "VmHWM")
    end = rss_kib(proc.pid)
    proc.stdin.close()
    proc.wait(30)
    print(f"server RSS at start: {start / 1024:.0f} MiB")
    for label, codes, seconds, rss in rows:
        print(f"  {label:58} {', '.join(codes):24} {seconds:6.2f} s  RSS after {rss / 1024:6.0f} MiB")
    print(
        f"peak RSS: {peak / 1024:.0f} MiB; RSS at end: {end / 1024:.0f} MiB = {end / start:.2f}x the start "
        f"(goal: within 2x) -> {'met' if end <= 2 * start else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
