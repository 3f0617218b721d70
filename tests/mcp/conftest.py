"""The transport a contract test runs over: each such test runs over stdio and over streamable HTTP."""

from __future__ import annotations

import pytest

from tests.mcp.harness import Transport


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> Transport:
    """``rea serve`` over stdio (the default), and ``rea serve --http`` on 127.0.0.1 with a token."""
    value: Transport = request.param
    return value
