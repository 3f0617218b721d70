"""URLs, origins and the loopback CDP endpoint rule shared by every browser tool."""

from __future__ import annotations

import urllib.parse

import msgspec

from rea.plugin import Arguments
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import loopback_endpoint
from rea.plugin import origin_of

ENDPOINT_PATTERN = r"^http://(127\.0\.0\.1|\[::1\]):[0-9]{1,5}/?$"
ORIGIN_PATTERN = r"^https?://[^/?#@\s*]+$"
DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_URL_CHARS = 4096


class SanitizedUrl(msgspec.Struct, frozen=True, kw_only=True):
    """A URL as captures record it: userinfo removed, origin and query parameter names split out."""

    url: str
    origin: str | None
    query_parameter_names: list[str]
    redacted: bool


def parse_origin(value: str) -> str | None:
    """The normalized origin ``value`` names exactly (no path, query, fragment, userinfo or wildcard)."""
    try:
        parts = urllib.parse.urlsplit(value)
    except ValueError:
        return None
    if parts.username is not None or parts.password is not None or "*" in value:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    return origin_of(value)


def allowed_origins(values: list[str] | None, path: str = "allowed_origins") -> list[str]:
    """Normalized, deduplicated, sorted origins; an inexact one is ``invalid_request``."""
    out: set[str] = set()
    problems = []
    for i, value in enumerate(values or []):
        origin = parse_origin(value)
        if origin is None:
            problems.append(
                issue(
                    f"{path}/{i}",
                    "invalid_value",
                    "expected one exact http(s) origin without a path, query or wildcard",
                )
            )
        else:
            out.add(origin)
    if problems:
        raise invalid_request("allowed_origins must list exact http(s) origins", problems)
    return sorted(out)


def parse_endpoint(value: str, path: str = "cdp_endpoint") -> str:
    """The loopback CDP endpoint ``http://127.0.0.1:PORT`` (or ``[::1]``); anything else is refused."""
    return loopback_endpoint(value, path, "CDP endpoint")


def page_scope(args: Arguments) -> tuple[str, list[str]]:
    """A browser tool call's CDP endpoint and the origins it allows, checked."""
    return parse_endpoint(arg_str(args, "cdp_endpoint", "")), allowed_origins(arg_strs(args, "allowed_origins"))


def sanitize(url: str) -> SanitizedUrl:
    """Userinfo removed; query values kept (they are the page's own data), names listed."""
    url = url[:MAX_URL_CHARS]
    try:
        parts = urllib.parse.urlsplit(url)
        has_userinfo = parts.username is not None or parts.password is not None
        names = [name for name, _ in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)]
    except ValueError:
        return SanitizedUrl(url=url, origin=None, query_parameter_names=[], redacted=False)
    if has_userinfo:
        netloc = parts.netloc.rsplit("@", 1)[1]
        url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return SanitizedUrl(url=url, origin=origin_of(url), query_parameter_names=names, redacted=has_userinfo)


def in_scope(url: str, origins: list[str]) -> bool:
    origin = origin_of(url)
    return origin is not None and origin in origins
