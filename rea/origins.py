"""The origin of a URL (``scheme://host[:port]``): what the browser and JavaScript runtime tools scope the pages,
requests and scripts they read by."""

from __future__ import annotations

import urllib.parse

_DEFAULT_PORTS = {"http": 80, "https": 443}


def _host(parts: urllib.parse.SplitResult) -> str | None:
    try:
        host = parts.hostname
    except ValueError:
        return None
    if not host:
        return None
    return f"[{host}]" if ":" in host else host


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL (default ports omitted), None for anything else."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = _host(parts)
    if scheme not in _DEFAULT_PORTS or host is None:
        return None
    suffix = "" if port is None or port == _DEFAULT_PORTS[scheme] else f":{port}"
    return f"{scheme}://{host}{suffix}"
