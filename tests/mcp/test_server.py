"""``rea serve`` with the SDK client: inventory, session, progress, cancellation, errors (the contract tests over
stdio and over streamable HTTP, by the ``transport`` fixture)."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from rea.registry import ON_DEMAND_TOOLSETS
from tests.mcp.harness import Recorder
from tests.mcp.harness import Transport
from tests.mcp.harness import connect
from tests.mcp.harness import server_env

PROBE = {"REA_PLUGIN_MODULES": "tests.mcp.probe_plugin"}


def error_of(result: Any) -> dict[str, Any]:
    assert result.is_error is True
    assert result.structured_content is None
    assert len(result.content) == 1 and result.content[0].type == "text"
    doc = json.loads(result.content[0].text)
    assert set(doc) == {"error"}
    err: dict[str, Any] = doc["error"]
    assert set(err) == {"code", "category", "message", "retryable", "remediation", "details"}
    assert set(err["remediation"]) == {"action"}
    return err


def test_inventory_is_complete_and_static(hello_elf: Path, transport: Transport) -> None:
    async def main() -> None:
        rec = Recorder()
        async with connect(rec, transport=transport) as client:
            before = await client.list_tools()
            names = [t.name for t in before.tools]
            assert {"binary_session", "open_binary", "close_binary"} <= set(names)
            assert names == sorted(names)
            avail: dict[str, Any] = {}
            offset: int | None = 0
            while offset is not None:
                page = await client.call_tool("binary_session", {"detail": "tools", "offset": offset})
                avail.update({t["name"]: t for t in page.structured_content["tool_availability"]})
                offset = page.structured_content["tool_page"]["next_offset"]
            # Every tool's availability, the on-demand toolsets' too; the list shows the default toolsets.
            assert set(names) < set(avail)
            assert not {n for n in names if avail[n].get("toolset") in ON_DEMAND_TOOLSETS}
            await client.call_tool("open_binary", {"path": str(hello_elf)})
            await client.call_tool("close_binary", {})
            after = await client.list_tools()
            assert [t.model_dump() for t in after.tools] == [t.model_dump() for t in before.tools]
            assert "notifications/tools/list_changed" not in rec.methods()
            for tool in before.tools:
                # Advertised with a content-bound $id, or (a result said to be an object and nothing more) not at all.
                assert tool.output_schema is None or tool.output_schema["$id"].startswith("urn:rea:schema:")
                assert tool.annotations is not None
            opaque = {t.name for t in before.tools if t.output_schema is None}
            assert opaque <= {"enable_toolsets", "call_tool_by_name", "close_binary", "open_binary"} | {
                n for n in opaque if avail[n].get("toolset") == "evidence"
            }, opaque

    anyio.run(main)


def test_binary_session_reports_identity_and_candidates() -> None:
    async def main() -> None:
        async with connect() as client:
            res = await client.call_tool("binary_session", {"expected_package_version": "0.0.0-nope"})
            doc = res.structured_content
            ident = doc["server_identity"]
            assert ident["package"]["name"] == "rea"
            assert ident["sdk"]["name"] == "mcp" and ident["sdk"]["version"]
            assert ident["protocol"]["version"]
            assert ident["alignment"]["state"] == "mcp_server_restart_required"
            assert doc["analysis_run"]["run_id"] is None and doc["target"] is None
            assert doc["analysis_run"]["process_lineage"] == {"state": "not_observed"}
            ids = [c["provider_id"] for c in doc["analysis_provider_candidates"]]
            assert ids == sorted(ids)
            assert all(c["target_support"]["status"] == "unknown" for c in doc["analysis_provider_candidates"])
            ok = await client.call_tool(
                "binary_session",
                {
                    "expected_package_version": ident["package"]["version"],
                    "expected_catalog_digest": ident["catalog_digest"],
                },
            )
            assert ok.structured_content["server_identity"]["alignment"]["state"] == "aligned"
            assert json.loads(ok.content[0].text) == ok.structured_content

    anyio.run(main)


def test_progress_is_ordered_rate_bounded_and_terminal(transport: Transport) -> None:
    async def main() -> None:
        async with connect(transport=transport, **PROBE) as client:
            seen: list[tuple[float, float | None, str | None, float]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                seen.append((progress, total, message, time.monotonic()))

            start = time.monotonic()
            with_token = await client.call_tool(
                "probe_wait", {"steps": 40, "step_ms": 10}, progress_callback=on_progress
            )
            duration = time.monotonic() - start
            await anyio.sleep(0.2)  # progress callbacks are delivered asynchronously
            assert not with_token.is_error
            assert len(seen) >= 3
            values = [s[0] for s in seen]
            assert values == sorted(values) and len(set(values)) == len(values)
            # The probe counts nothing: no totals, but the terminal update is complete (progress == total).
            assert all(s[1] is None for s in seen[:-1]) and seen[-1][1] == seen[-1][0]
            assert "started" in (seen[0][2] or "")
            assert "completed" in (seen[-1][2] or "")
            # At most one intermediate update per 100 ms (plus the first and the terminal one).
            assert len(seen) <= duration / 0.1 + 3
            # Exactly one terminal update, carrying the handler's own summary.
            terminal = [s for s in seen if "completed" in (s[2] or "") or "done" in (s[2] or "")]
            assert len(terminal) == 1 and terminal[0] is seen[-1] and "40 steps done" in (seen[-1][2] or "")
            # Intermediate updates are 100 ms apart by the server's own clock (its "elapsed N ms").
            elapsed = [int(re.search(r"elapsed (\d+) ms", s[2] or "").group(1)) for s in seen[:-1]]  # type: ignore[union-attr]
            assert all(b - a >= 100 for a, b in itertools.pairwise(elapsed)), elapsed
            without = await client.call_tool("probe_wait", {"steps": 40, "step_ms": 10})
            assert without.structured_content == with_token.structured_content

    anyio.run(main)


def test_cancellation_stops_work_and_records_nothing(transport: Transport) -> None:
    async def main() -> None:
        async with connect(transport=transport, **PROBE) as client:
            with anyio.move_on_after(0.5):
                await client.call_tool("probe_wait", {"steps": 150, "step_ms": 10})
                raise AssertionError("the call should have been cancelled")
            # The server keeps serving; the cancelled work never records Evidence.
            await anyio.sleep(1.5)
            res = await client.call_tool("binary_session", {})
            assert res.structured_content["retained_evidence_count"] == 0
            done = await client.call_tool("probe_wait", {"steps": 1, "step_ms": 1})
            assert not done.is_error
            res = await client.call_tool("binary_session", {})
            assert res.structured_content["retained_evidence_count"] == 1

    anyio.run(main)


def test_bad_calls_get_typed_errors_and_serving_continues(tmp_path: Path, transport: Transport) -> None:
    async def main() -> None:
        async with connect(transport=transport) as client:
            err = error_of(await client.call_tool("no_such_tool", {}))
            assert err["code"] == "invalid_request" and err["details"]["issues"][0]["path"] == "name"
            err = error_of(await client.call_tool("open_binary", {"path": 7}))
            assert err["details"]["issues"][0] == {
                "path": "path",
                "reason": "invalid_type",
                "message": "7 is not of type 'string'",
            }
            err = error_of(await client.call_tool("open_binary", {"path": "/x", "extra": 1}))
            assert err["details"]["issues"][0]["reason"] == "unknown_argument"
            assert err["details"]["issues"][0]["path"] == "extra"
            err = error_of(await client.call_tool("open_binary", {}))
            assert err["details"]["issues"][0]["reason"] == "missing_argument"
            err = error_of(await client.call_tool("open_binary", {"path": str(tmp_path / "missing")}))
            assert err["code"] == "target_unavailable" and err["category"] == "unavailable"
            err = error_of(await client.call_tool("open_binary", {"path": str(tmp_path)}))
            assert err["code"] == "unsupported_target"
            text = tmp_path / "notes.txt"
            text.write_text("just text, not a binary\n")
            err = error_of(await client.call_tool("open_binary", {"path": str(text)}))
            assert err["code"] in ("capability_unavailable", "unsupported_target")
            err = error_of(await client.call_tool("open_binary", {"path": "/bin/ls", "provider_id": "Auto"}))
            assert err["details"]["issues"][0]["path"] == "provider_id"
            ok = await client.call_tool("binary_session", {})
            assert not ok.is_error

    anyio.run(main)


def test_garbage_on_stdin_does_not_stop_the_server() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "rea.cli.main", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(),
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:

        def send(obj: Any) -> None:
            assert proc.stdin is not None
            proc.stdin.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
            proc.stdin.flush()

        send("this is not json {{{")
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            }
        )
        replies = []
        while True:
            line = proc.stdout.readline()
            assert line, "server exited"
            msg = json.loads(line)
            replies.append(msg)
            if msg.get("id") == 1:
                break
        assert "result" in replies[-1]
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send("\x00\x01 garbage again")
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        while True:
            msg = json.loads(proc.stdout.readline())
            if msg.get("id") == 2:
                break
        assert any(t["name"] == "binary_session" for t in msg["result"]["tools"])
    finally:
        proc.kill()
        proc.wait()


def test_invalid_settings_fail_at_startup() -> None:
    # Plugin settings fail at startup too, whether or not the engine is installed here.
    for name, value in (
        ("REA_MCP_MAX_RESPONSE_BYTES", "1024"),
        ("REA_MCP_MAX_RESPONSE_BYTES", "1e8"),
        ("REA_MCP_INPUT_SCHEMA_PROFILE", "FULL"),
        ("REA_GHIDRA_STARTUP_TIMEOUT_MS", "abc"),
        ("REA_HOPPER_STARTUP_TIMEOUT_MS", "abc"),
        ("REA_ANGR_CFG_TIMEOUT_MS", "0"),
        ("REA_MCP_TOOLSETS", "native,bogus"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "rea.cli.main", "serve"],
            input="",
            capture_output=True,
            text=True,
            env=server_env(**{name: value}),
            timeout=60,
        )
        assert proc.returncode == 1
        assert name in proc.stderr and "configuration_invalid" in proc.stderr
        assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("over", [False, True])
def test_response_budget_boundary(over: bool, transport: Transport) -> None:
    from rea import evidence
    from rea.budget import success_size
    from tests.mcp.probe_plugin import PROBE as PROBE_ID

    size = 5_300_000

    def encoded(n: int) -> bytes:
        ev = evidence.build(
            operation="probe_payload",
            provider=PROBE_ID,
            subject=None,
            analysis_profile=None,
            parameters={"size": n},
            normalized_result={"blob": "x" * n},
        )
        return evidence.encode(ev)

    required = success_size(encoded(size))
    limit = required + 1024 - (1 if over else 0)
    assert limit >= 10 * 1024 * 1024

    async def main() -> None:
        # The boundary of the complete record (the lean one is smaller by its envelope).
        async with connect(
            transport=transport, REA_MCP_MAX_RESPONSE_BYTES=str(limit), REA_RESULT_PRESENTATION="complete", **PROBE
        ) as client:
            res = await client.call_tool("probe_payload", {"size": size})
            if over:
                err = error_of(res)
                assert err["code"] == "resource_constraint" and err["details"]["resource"] == "transport"
                ref = err["details"]["reported_limits"]["evidence_reference"]
                assert ref["kind"] == "retained-evidence" and ref["evidence_id"].startswith("ev_")
                session = await client.call_tool("binary_session", {})
                assert session.structured_content["retained_evidence_count"] == 1
            else:
                assert not res.is_error
                assert res.structured_content["normalized_result"]["blob"] == "x" * size
                frame = len(res.model_dump_json(by_alias=True, exclude_none=True).encode())
                assert frame <= limit - 1024

    anyio.run(main)


def _server_rss_kib() -> int:
    """VmRSS of this test's ``rea serve`` child (the only one it runs at that moment)."""
    import os

    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read()
            with open(f"/proc/{entry}/status") as fh:
                status = fh.read()
        except OSError:
            continue
        if b"rea.cli.main\0serve" in cmd and f"PPid:\t{os.getpid()}\n" in status:
            return int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    raise AssertionError("no rea serve child found")


def test_a_refused_oversized_result_is_retained_on_disk_not_in_memory(tmp_path: Path) -> None:
    size = 160 << 20

    async def main() -> None:
        async with connect(**PROBE) as client:
            await client.call_tool("probe_wait", {"steps": 1, "step_ms": 0})
            baseline = _server_rss_kib()
            err = error_of(await client.call_tool("probe_payload", {"size": size}))
            assert err["code"] == "resource_constraint" and err["details"]["resource"] == "transport"
            ref = err["details"]["reported_limits"]["evidence_reference"]
            # Refused and retained, but no longer held in the server's memory (160 MiB of payload).
            assert _server_rss_kib() - baseline < 64 << 10
            page = await client.call_tool("inspect_analysis_view", {"source": ref})
            assert not page.is_error, page.content
            out = tmp_path / "bundle.json"
            exported = await client.call_tool("export_evidence_bundle", {"path": str(out)})
            assert not exported.is_error, exported.content
            assert out.stat().st_size > size

    anyio.run(main)


def test_server_uses_its_own_ledger_per_connection() -> None:
    async def main() -> None:
        async with connect(**PROBE) as a, connect(**PROBE) as b:
            await a.call_tool("probe_wait", {"steps": 1, "step_ms": 0})
            ra = await a.call_tool("binary_session", {})
            rb = await b.call_tool("binary_session", {})
            assert ra.structured_content["retained_evidence_count"] == 1
            assert rb.structured_content["retained_evidence_count"] == 0

    anyio.run(main)


def test_open_and_close_a_compiled_fixture(hello_elf: Path) -> None:
    async def main() -> None:
        async with connect(**PROBE) as client:
            await client.call_tool("probe_wait", {"steps": 1, "step_ms": 0})
            opened = await client.call_tool("open_binary", {"path": str(hello_elf), "provider_id": "native"})
            assert not opened.is_error, opened.content[0].text
            doc = opened.structured_content
            assert doc["target"]["format"] == "elf" and doc["analysis_provider_binding"]["provider"]["id"] == "native"
            assert doc["analysis_provider_binding"]["selection_source"] == "request"
            session = (await client.call_tool("binary_session", {})).structured_content
            assert session["analysis_run"]["run_id"] == doc["analysis_run"]["run_id"]
            assert session["retained_evidence_count"] == 1  # opening another target keeps the ledger
            selected = [c["provider_id"] for c in session["analysis_provider_candidates"] if c["selected"]]
            assert selected == ["native"]
            reopened = await client.call_tool("open_binary", {"path": str(hello_elf)})
            assert reopened.structured_content["analysis_run"]["run_id"] != doc["analysis_run"]["run_id"]
            closed = await client.call_tool("close_binary", {})
            assert closed.structured_content["cleanup"] == "complete"
            after = (await client.call_tool("binary_session", {})).structured_content
            assert after["target"] is None and after["retained_evidence_count"] == 0

    anyio.run(main)


def test_oversized_error_is_retained_and_delivered_bounded() -> None:
    async def main() -> None:
        async with connect(**PROBE) as client:
            res = await client.call_tool("probe_fail", {"code": "execution_failure", "detail_bytes": 11_000_000})
            err = error_of(res)
            assert err["code"] == "resource_constraint" and err["details"]["original_code"] == "execution_failure"
            assert len(res.content[0].text) < 10_000
            ref = err["details"]["reported_limits"]["evidence_reference"]
            session = (await client.call_tool("binary_session", {})).structured_content
            assert session["retained_evidence_count"] == 1 and ref["evidence_id"].startswith("ev_")

    anyio.run(main)


def test_the_python_client_refuses_a_result_unlike_its_advertised_shape() -> None:
    """A typed tool's output schema constrains normalized_result; the SDK client checks it (issue 26)."""

    async def main() -> None:
        async with connect(**PROBE) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            schema = listed["probe_mistyped"].output_schema or {}
            # Advertised shallow (issue 44): the result's properties by type, enough for the client to check.
            assert schema["properties"]["normalized_result"] == {
                "type": "object",
                "properties": {"count": {"type": "integer"}},
            }
            with pytest.raises(RuntimeError, match="Invalid structured content"):
                await client.call_tool("probe_mistyped", {})

    anyio.run(main)
