"""rea's stdio transport through a raw client: every line is answered, oversized lines refused unparsed."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from rea.mcp.stdio import INVALID_REQUEST
from rea.mcp.stdio import PARSE_ERROR
from rea.mcp.stdio import LineReader
from rea.mcp.stdio import Refusal
from rea.mcp.stdio import classify
from rea.mcp.stdio import id_from_head
from tests.mcp.harness import connect
from tests.mcp.harness import server_env


class RawClient:
    """A line-level JSON-RPC client of ``rea serve``."""

    def __init__(self, **env: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rea.cli.main", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=server_env(**env),
        )
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
        )
        assert self.recv()["id"] == 0
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: Any) -> None:
        self.send_line(message if isinstance(message, bytes) else json.dumps(message).encode())

    def send_line(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def recv(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed the connection"
        doc: dict[str, Any] = json.loads(line)
        return doc

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(30)


@pytest.fixture
def raw() -> Iterator[RawClient]:
    client = RawClient()
    yield client
    if client.proc.poll() is None:
        client.proc.kill()
        client.proc.wait()


CALL = '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"binary_session","arguments":%s}}'
CASES: list[tuple[bytes, int, Any]] = [
    (b"not json at all", PARSE_ERROR, None),
    (b'{"jsonrpc":"2.0","id":3,"method":"tools/list"', PARSE_ERROR, 3),
    (b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}', INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":7,"method":5}', INVALID_REQUEST, 7),
    (b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":[1]}', INVALID_REQUEST, 8),
    (b'{"jsonrpc":"1.0","id":9,"method":"tools/list"}', INVALID_REQUEST, 9),
    (
        b'{"jsonrpc":"2.0","id":"s10","method":"tools/call","params":{"name":"binary_session\\ud800"}}',
        INVALID_REQUEST,
        "s10",
    ),
    ((CALL % (11, '{"x":"\\ud800"}')).encode(), INVALID_REQUEST, 11),
    ((CALL % (12, '{"a":' * 5000 + "1" + "}" * 5000)).encode(), INVALID_REQUEST, 12),
    (b'[{"jsonrpc":"2.0","id":13,"method":"tools/list"}]', INVALID_REQUEST, None),
    (b"42", INVALID_REQUEST, None),
    (b'\xff\xfe{"jsonrpc":"2.0"}', PARSE_ERROR, None),
]


def test_every_malformed_line_gets_an_answer_and_the_server_keeps_serving(raw: RawClient) -> None:
    for line, code, rid in CASES:
        raw.send_line(line)
        reply = raw.recv()
        assert reply["jsonrpc"] == "2.0" and "result" not in reply, line[:80]
        assert reply["error"]["code"] == code, (line[:80], reply)
        assert reply["id"] == rid, (line[:80], reply)
    # Valid JSON-RPC whose method or parameters the server rejects is answered by the SDK.
    raw.send({"jsonrpc": "2.0", "id": 20, "method": "no/such/method", "params": {}})
    assert raw.recv()["error"]["code"] == -32601
    raw.send({"jsonrpc": "2.0", "id": 21, "method": "tools/call", "params": {"name": 5}})
    assert raw.recv()["error"]["code"] == -32602
    # Nesting a few hundred deep is valid JSON-RPC: the tool answers with its canonical error.
    raw.send_line((CALL % (22, '{"a":' * 300 + "1" + "}" * 300)).encode())
    reply = raw.recv()
    assert reply["id"] == 22 and reply["result"]["isError"] is True
    raw.send(
        {"jsonrpc": "2.0", "id": 23, "method": "tools/call", "params": {"name": "binary_session", "arguments": {}}}
    )
    reply = raw.recv()
    assert reply["id"] == 23 and reply["result"]["isError"] is False
    assert raw.close() == 0


def test_a_line_over_the_request_limit_is_refused_from_its_head(raw: RawClient) -> None:
    # 40 MiB against the default limit of 21 MiB (twice the 10 MiB response budget, plus 1 MiB).
    blob = "x" * (40 << 20)
    raw.send_line((CALL % ('"big-1"', json.dumps({"expected_package_version": blob}))).encode())
    reply = raw.recv()
    assert reply["id"] == "big-1" and reply["error"]["code"] == INVALID_REQUEST
    assert reply["error"]["data"]["code"] == "resource_constraint"
    assert reply["error"]["data"]["reported_limits"]["max_request_bytes"] == 21 << 20
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert raw.recv()["id"] == 2
    assert raw.close() == 0


def test_a_huge_method_name_is_not_echoed_back(raw: RawClient) -> None:
    """A 1 MiB method name came back whole in the SDK's "Method not found" (issue 42 item 9)."""
    method = "m" * (1 << 20)
    raw.send({"jsonrpc": "2.0", "id": 7, "method": method})
    line = raw.proc.stdout.readline() if raw.proc.stdout is not None else b""
    assert len(line) < 1024
    reply = json.loads(line)
    assert reply["id"] == 7 and reply["error"]["code"] == -32601
    data = reply["error"]["data"]
    assert data["code"] == "invalid_request" and data["method_chars"] == len(method)
    assert data["method_prefix"] == method[:64] and data["remediation"]
    raw.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
    assert raw.recv() == {"jsonrpc": "2.0", "id": 8, "result": {}}


def test_a_request_before_initialize_gets_a_typed_error() -> None:
    """Before the session is initialized the SDK answered -32602 with empty data (issue 42 item 9)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rea.cli.main", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        lines = [
            CALL % (1, "{}"),
            '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
            '{"jsonrpc":"2.0","id":3,"method":"ping"}',
        ]
        proc.stdin.write("".join(line + "\n" for line in lines).encode())
        proc.stdin.flush()
        replies = [json.loads(proc.stdout.readline()) for _ in lines]
        for reply, method in zip(replies[:2], ("tools/call", "tools/list"), strict=True):
            error = reply["error"]
            assert error["code"] == INVALID_REQUEST and "not initialized" in error["message"]
            assert error["data"]["code"] == "invalid_request" and error["data"]["method"] == method
            assert "initialize" in error["data"]["remediation"]
        assert [r["id"] for r in replies] == [1, 2, 3] and replies[2]["result"] == {}
    finally:
        proc.stdin.close()
        proc.wait(30)


def test_classification_and_line_splitting_units() -> None:
    assert isinstance(classify(b'{"jsonrpc":"2.0","id":1,"method":"ping"}'), Refusal) is False
    assert id_from_head(b'{"jsonrpc":"2.0","id":"abc","method":"x","params":{"a":"' + b"y" * 10_000) == "abc"
    assert id_from_head(b'{"jsonrpc":"2.0","method":"x","id":77}') == 77
    reader = LineReader(limit=100)
    out = reader.feed(b'{"a":1}\n' + b'{"id":5,"x":"' + b"z" * 200)
    assert out == [b'{"a":1}']
    out = reader.feed(b'zzz"}\n{"b":2}\n')
    assert isinstance(out[0], Refusal) and out[0].id == 5 and out[1] == b'{"b":2}'


def test_prompts_are_listed_and_rendered_and_no_resources_are_advertised(hello_elf: Any) -> None:
    async def main() -> None:
        async with connect() as client:
            caps = client.get_server_capabilities() if hasattr(client, "get_server_capabilities") else None
            if caps is not None:
                assert caps.prompts is not None and caps.resources is None
            listed = await client.list_prompts()
            names = {p.name for p in listed.prompts}
            assert {"triage_binary", "investigate_feature", "inventory_electron_application"} <= names
            got = await client.get_prompt("investigate_feature", {"path": str(hello_elf), "feature": "usage"})
            text = got.messages[0].content.text  # type: ignore[union-attr]
            assert str(hello_elf) in text and "trace_feature" in text and '"usage"' in text
            with pytest.raises(Exception) as info:
                await client.get_prompt("investigate_feature", {"path": "/bin/ls"})
            assert "feature" in str(info.value)

    anyio.run(main)
