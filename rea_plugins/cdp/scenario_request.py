"""A browser scenario request, checked beyond its JSON Schema: origins, step ids and secret references.

Secret values come from a private file (``secrets[].file``) or rea's environment (``environment_variable``),
never from the request; ``Redactor`` replaces every one of them (raw and URL-encoded) in whatever the capture
keeps.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping
from typing import Any
from typing import Literal

import msgspec

from rea.plugin import Arguments
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import arg_int
from rea.plugin import arg_object
from rea.plugin import arg_objects
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import open_regular
from rea.plugin import origin_of
from rea_plugins.cdp.urls import allowed_origins
from rea_plugins.cdp.urls import parse_endpoint
from rea_plugins.cdp.urls import parse_origin

START_STEP = "scenario_start"
DEFAULT_CAPTURE = {
    "after_each_step": ["url", "dom"],
    "at_end": ["url", "title"],
    "events": ["console", "page-errors", "network"],
}
DEFAULT_LIMITS = {
    "max_events": 10_000,
    "max_dom_bytes": 1_048_576,
    "maximum_image_bytes": 5_242_880,
    "navigation_timeout_ms": 30_000,
    "step_timeout_ms": 30_000,
}
STORAGE_AREAS = ("cookies", "local_storage", "session_storage")
# A problem the checks find: an issue's path, reason and message (``issue`` makes it a details.issues entry).
Problem = tuple[str, Literal["invalid_format", "invalid_value"], str]


class Viewport(Record, omit_defaults=False):
    width: int = 1280
    height: int = 720
    # As the caller gave it: an integer stays one in what is sent to the browser.
    device_scale_factor: int | float = 1


class Environment(Record, omit_defaults=False):
    """The page's emulated environment: the request's ``environment``, each part it leaves out at its default."""

    viewport: Viewport = msgspec.field(default_factory=Viewport)
    locale: str = "en-US"
    timezone: str = "UTC"
    color_scheme: str = "light"
    reduced_motion: str = "reduce"


class Redactor:
    """Replaces each secret value (and its URL-encoded forms) with ``[secret:<id>]``."""

    def __init__(self, secrets: dict[str, str]) -> None:
        forms: dict[str, str] = {}
        for sid, value in secrets.items():
            for form in (value, urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)):
                forms.setdefault(form, f"[secret:{sid}]")
        self._forms = sorted(forms.items(), key=lambda kv: -len(kv[0]))

    def __call__(self, text: str) -> str:
        for form, mark in self._forms:
            if form in text:
                text = text.replace(form, mark)
        return text

    def touches(self, text: str) -> bool:
        return any(form in text for form, _ in self._forms)


class ScenarioRequest(Record):
    """The checked request, as the scenario reads it (never encoded: it holds the secrets' values).

    ``actions``, ``storage`` (its three areas) and ``replay`` are parts of the caller's request as its input schema
    shapes them (JSON): the scenario reads them key by key, with the typed accessors.
    """

    mode: str
    cdp_endpoint: str | None
    target_id: str | None
    start_url: str
    start_origin: str
    allowed: list[str]
    actions: list[JSONObject]
    secrets: dict[str, str]
    secret_references: list[str]
    capture: dict[str, list[str]]
    storage: dict[str, list[JSONObject]]
    replay: JSONObject
    limits: dict[str, int]
    environment: Environment
    timeout_ms: int | None


MAX_SECRET_BYTES = 64 * 1024


def read_secret_file(path: str) -> tuple[str | None, str]:
    """A secret's value from a private file: (value, "") or (None, why it cannot be used)."""
    if not os.path.isabs(path):
        return None, "the secret file must be an absolute path"
    try:
        fd = open_regular(path, code="invalid_request", what="secret file")
    except ReaError as exc:
        return None, exc.message
    except OSError as exc:
        return None, f"{path} cannot be read ({exc.strerror or 'unreadable'})"
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None, f"{path} must belong to this user and be readable by no one else (chmod 600)"
        data = os.read(fd, MAX_SECRET_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_SECRET_BYTES:
        return None, f"{path} is larger than {MAX_SECRET_BYTES} bytes"
    text = data.decode("utf-8", "replace")
    text = text[:-1] if text.endswith("\n") else text
    return (text, "") if text else (None, f"{path} is empty")


def resolve_value(value: JSONObject, secrets: dict[str, str]) -> str:
    """A value object of the caller's request (its JSON): a literal, or a declared secret's value."""
    return secrets[str(value["secret_id"])] if value.get("source") == "secret" else str(value.get("value", ""))


def build_url(dest: JSONObject, secrets: dict[str, str], keep_secret_marks: bool = False) -> str:
    """The URL of a destination of the caller's request (its JSON) with its declared query entries appended (secret
    ones resolved, or kept as marks)."""
    url = str(dest["url"])
    query = []
    for q in arg_objects(dest, "query") or []:
        value = arg_object(q, "value") or {}
        secret = keep_secret_marks and value.get("source") == "secret"
        query.append(
            (str(q["name"]), f"${{secret:{value.get('secret_id')}}}" if secret else resolve_value(value, secrets))
        )
    if not query:
        return url
    parts = urllib.parse.urlsplit(url)
    extra = urllib.parse.urlencode(query)
    joined = f"{parts.query}&{extra}" if parts.query else extra
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, joined, parts.fragment))


def normalized_url(url: str) -> str:
    """The form the browser reports a request URL in: lowercase scheme and host, "/" for an empty path."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return url
    return urllib.parse.urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", parts.query, ""))


def _references(node: Any) -> list[tuple[str, str]]:
    """(path, secret_id) of every secret value reference under ``node``."""
    out: list[tuple[str, str]] = []
    stack: list[tuple[str, Any]] = [("", node)]
    while stack:
        path, cur = stack.pop()
        if isinstance(cur, dict):
            if cur.get("source") == "secret" and isinstance(cur.get("secret_id"), str):
                out.append((path, cur["secret_id"]))
            stack.extend((f"{path}/{k}" if path else k, v) for k, v in cur.items())
        elif isinstance(cur, list):
            stack.extend((f"{path}/{i}", v) for i, v in enumerate(cur))
    return out


def _url_problem(dest: JSONObject, path: str, allowed: list[str]) -> Problem | None:
    """The problem with a destination of the caller's request (its JSON), or None."""
    url = str(dest.get("url", ""))
    try:
        parts = urllib.parse.urlsplit(url)
        userinfo = parts.username is not None or parts.password is not None
    except ValueError:
        return f"{path}/url", "invalid_format", "not a valid URL"
    origin = origin_of(url)
    if origin is None or userinfo:
        return f"{path}/url", "invalid_value", "browser URLs must be http(s) and carry no credentials"
    if allowed and origin not in allowed:
        return f"{path}/url", "invalid_value", f"URL origin {origin} is not declared in allowed_origins"
    return None


# Headers the browser derives from the replayed body or status itself.
FORBIDDEN_REPLAY_HEADERS = frozenset({"content-length", "location", "transfer-encoding"})


def _storage_problems(storage: dict[str, list[JSONObject]], scope: list[str]) -> list[Problem]:
    problems: list[Problem] = []
    for i, cookie in enumerate(storage["cookies"]):
        destination = arg_object(cookie, "destination") or {}
        if (p := _url_problem(destination, f"storage/cookies/{i}/destination", scope)) is not None:
            problems.append(p)
    for area in ("local_storage", "session_storage"):
        for i, entry in enumerate(storage[area]):
            origin = parse_origin(arg_str(entry, "origin", ""))
            if origin is None or origin not in scope:
                problems.append(
                    (
                        f"storage/{area}/{i}/origin",
                        "invalid_value",
                        f"storage origin {entry['origin']} is not an origin in allowed_origins",
                    )
                )
            elif origin != entry["origin"]:
                entry["origin"] = origin
    return problems


def _replay_problems(replay: JSONObject, scope: list[str]) -> list[Problem]:
    if replay["mode"] == "disabled":
        return []
    problems: list[Problem] = []
    ids: set[str] = set()
    matchers: set[tuple[str, str]] = set()
    for i, route in enumerate(arg_objects(replay, "routes") or []):
        path = f"request_replay/routes/{i}"
        request = arg_object(route, "request") or {}
        route_id = arg_str(route, "route_id", "")
        key = (arg_str(route, "method", ""), build_url(request, {}, keep_secret_marks=True))
        if route_id in ids or key in matchers:
            problems.append((path, "invalid_value", "route ids and (method, request) pairs must be unique"))
        ids.add(route_id)
        matchers.add(key)
        if (p := _url_problem(request, f"{path}/request", scope)) is not None:
            problems.append(p)
        response = arg_object(route, "response") or {}
        if response["kind"] == "redirect":
            destination = arg_object(response, "destination") or {}
            if (p := _url_problem(destination, f"{path}/response/destination", scope)) is not None:
                problems.append(p)
            continue
        names = [arg_str(h, "name", "").lower() for h in arg_objects(response, "headers") or []]
        if len(set(names)) != len(names):
            problems.append((f"{path}/response/headers", "invalid_value", "header names must be unique"))
        for j, name in enumerate(names):
            if name in FORBIDDEN_REPLAY_HEADERS:
                problems.append(
                    (
                        f"{path}/response/headers/{j}/name",
                        "invalid_value",
                        f"{name} is derived by the browser and cannot be replayed",
                    )
                )
    return problems


def parse(args: Arguments, env: dict[str, str] | None = None) -> ScenarioRequest:
    """Check what the schema cannot say; any problem is one ``invalid_request`` listing them all."""
    env = dict(os.environ) if env is None else env
    raised: ReaError | None = None  # the endpoint's, with its own issue entries
    found: list[Problem] = []
    browser = arg_object(args, "browser") or {"mode": "launch"}
    endpoint = None
    if browser["mode"] == "connect":
        try:
            endpoint = parse_endpoint(arg_str(browser, "cdp_endpoint", ""), "browser/cdp_endpoint")
        except ReaError as exc:
            raised = exc
    declared = allowed_origins(arg_strs(args, "allowed_origins"))
    start = arg_object(args, "start_url") or {}
    start_origin = origin_of(str(start.get("url", ""))) or ""
    scope = declared or ([start_origin] if start_origin else [])
    if (p := _url_problem(start, "start_url", scope)) is not None:
        found.append(p)
    seen: set[str] = {START_STEP}
    actions = arg_objects(args, "actions") or []
    for i, action in enumerate(actions):
        step_id = arg_str(action, "step_id", "")
        if step_id in seen:
            found.append(
                (
                    f"actions/{i}/step_id",
                    "invalid_value",
                    f"step_id {step_id!r} is used twice (or is the reserved {START_STEP})",
                )
            )
        seen.add(step_id)
        if (
            action["action"] == "goto"
            and (p := _url_problem(arg_object(action, "destination") or {}, f"actions/{i}/destination", scope))
            is not None
        ):
            found.append(p)
    secrets: dict[str, str] = {}
    variables: set[str] = set()
    declared_secrets = arg_objects(args, "secrets") or []
    for i, secret in enumerate(declared_secrets):
        sid, var = (
            arg_str(secret, "secret_id", ""),
            arg_str(secret, "environment_variable") or arg_str(secret, "file", ""),
        )
        if sid in secrets or var in variables:
            found.append(
                (f"secrets/{i}", "invalid_value", "secret ids, environment variables and files must be unique")
            )
            continue
        variables.add(var)
        if "file" in secret:
            value, why = read_secret_file(arg_str(secret, "file", ""))
            if value is None:
                found.append((f"secrets/{i}/file", "invalid_value", why))
                continue
        else:
            value = env.get(var)
            if not value:
                found.append(
                    (
                        f"secrets/{i}/environment_variable",
                        "invalid_value",
                        f"{var} is not set (or empty) in rea's environment",
                    )
                )
                continue
        secrets[sid] = value
    given_storage = arg_object(args, "storage") or {}
    storage = {area: arg_objects(given_storage, area) or [] for area in STORAGE_AREAS}
    replay = arg_object(args, "request_replay") or {"mode": "disabled"}
    found.extend(_storage_problems(storage, scope))
    found.extend(_replay_problems(replay, scope))
    declared_ids = {arg_str(s, "secret_id", "") for s in declared_secrets}
    references = _references({"start_url": start, "actions": actions, "storage": storage, "request_replay": replay})
    for path, sid in references:
        if sid not in declared_ids:
            found.append((path, "invalid_value", f"secret {sid!r} is not declared in secrets"))
    given = raised.details.get("issues") if raised is not None else None
    problems = [
        *(i for i in (given if isinstance(given, (list, tuple)) else ()) if isinstance(i, Mapping)),
        *(issue(*p) for p in found),
    ]
    if problems:
        raise invalid_request(f"invalid browser scenario: {problems[0]['message']}", problems)
    given_capture = arg_object(args, "capture") or {}
    capture = {k: list(v if (v := arg_strs(given_capture, k)) is not None else d) for k, d in DEFAULT_CAPTURE.items()}
    given_limits = arg_object(args, "limits") or {}
    limits = {k: arg_int(given_limits, k, d) for k, d in DEFAULT_LIMITS.items()}
    return ScenarioRequest(
        mode=arg_str(browser, "mode", "launch"),
        cdp_endpoint=endpoint,
        target_id=arg_str(browser, "target_id"),
        start_url=build_url(start, secrets),
        start_origin=start_origin,
        allowed=scope,
        actions=actions,
        secrets=secrets,
        secret_references=sorted({sid for _, sid in references}),
        capture=capture,
        storage=storage,
        replay=replay,
        limits=limits,
        environment=msgspec.convert(arg_object(args, "environment") or {}, Environment),
        timeout_ms=arg_int(given_limits, "timeout_ms"),
    )
