"""``rea serve --http``'s settings, checked before anything is bound, and what ``rea doctor`` says of them."""

from __future__ import annotations

import pytest

from rea.errors import ReaError
from rea.mcp.http import accepted_hosts
from rea.mcp.http import describe
from rea.mcp.http import http_config
from rea.mcp.http import parse_bind

LIMIT = 21 << 20


def test_bind_forms() -> None:
    assert parse_bind("8765") == ("127.0.0.1", 8765)
    assert parse_bind("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_bind("[::1]:9000") == ("::1", 9000)
    with pytest.raises(ValueError):
        parse_bind("localhost:http")


@pytest.mark.parametrize(
    ("bind", "env", "kwargs", "setting"),
    [
        ("0.0.0.0:8765", {}, {"no_auth": True}, "--no-auth"),
        ("192.0.2.7:8765", {}, {"no_auth": True}, "--no-auth"),
        ("0.0.0.0:8765", {}, {}, "REA_HTTP_ALLOWED_HOSTS"),
        ("127.0.0.1:8765", {"REA_MCP_TOKEN": "short"}, {}, "REA_MCP_TOKEN"),
        ("127.0.0.1:8765", {"REA_HTTP_ALLOWED_ORIGINS": "ide.example"}, {}, "REA_HTTP_ALLOWED_ORIGINS"),
        ("127.0.0.1:8765", {"REA_HTTP_MAX_CONCURRENT_REQUESTS": "0"}, {}, "REA_HTTP_MAX_CONCURRENT_REQUESTS"),
        ("127.0.0.1:x", {}, {}, "--http"),
    ],
)
def test_unsafe_or_invalid_settings_refuse_to_start(
    bind: str, env: dict[str, str], kwargs: dict[str, bool], setting: str
) -> None:
    with pytest.raises(ReaError) as raised:
        http_config(bind, env, max_request_bytes=LIMIT, **kwargs)
    assert raised.value.code == "configuration_invalid"
    assert setting in raised.value.message or raised.value.details.get("setting") == setting


def test_accepted_hosts_name_the_bound_address_and_the_allow_list() -> None:
    config = http_config("127.0.0.1:8765", {"REA_HTTP_ALLOWED_HOSTS": "rea.example.org"}, max_request_bytes=LIMIT)
    hosts = accepted_hosts(config, 8765)
    assert {"127.0.0.1:8765", "localhost:8765", "[::1]:8765", "rea.example.org", "rea.example.org:8765"} <= hosts
    assert "127.0.0.1:8766" not in hosts and "attacker.example:8765" not in hosts
    wildcard = http_config("0.0.0.0:8765", {}, max_request_bytes=LIMIT, allow_hosts=("box:443",))
    assert accepted_hosts(wildcard, 8765) == {"box:443"}


def test_doctor_says_what_the_http_server_would_enforce() -> None:
    valid, summary, fix = describe({"REA_HTTP_ALLOWED_ORIGINS": "https://ide.example", "REA_HTTP_CORS": "1"}, LIMIT)
    assert valid and fix is None
    assert "generated at start" in summary and "https://ide.example" in summary and "CORS on" in summary
    assert f"{LIMIT} request bytes" in summary and "reverse proxy" in summary
    valid, summary, fix = describe({"REA_MCP_TOKEN": "x"}, LIMIT)
    assert not valid and "REA_MCP_TOKEN" in summary and fix is not None
