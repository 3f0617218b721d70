"""A browser scenario request, checked beyond its JSON Schema: origins, step ids and secret references.

Secret values come from a private file (``secrets[].file``) or rea's environment (``environment_variable``),
never from the request; ``Redactor`` replaces every one of them (raw and URL-encoded) in whatever the capture
keeps.
"""

from __future__ import annotations

import os
import urllib.parse
from typing import Any

from rea.plugin import JSONObject, ReaError, Record, invalid_request, issue, open_regular
from rea_plugins.cdp.urls import allowed_origins, origin_of, parse_endpoint, parse_origin

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
DEFAULT_ENVIRONMENT = {
    "viewport": {"width": 1280, "height": 720, "device_scale_factor": 1},
    "locale": "en-US",
    "timezone": "UTC",
    "color_scheme": "light",
    "reduced_motion": "reduce",
}


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


class ScenarioRequest(Record, frozen=True, kw_only=True):
    """The checked request, as the scenario reads it (never encoded: it holds the secrets' values).

    ``actions``, ``storage``, ``replay`` and ``environment`` are parts of the caller's request as its input schema
    shapes them (dict[str, Any]): the scenario reads them key by key where the schema guarantees each key and type.
    """

    mode: str
    cdp_endpoint: str | None
    target_id: str | None
    start_url: str
    start_origin: str
    allowed: list[str]
    actions: list[dict[str, Any]]
    secrets: dict[str, str]
    secret_references: list[str]
    capture: dict[str, list[str]]
    storage: dict[str, list[dict[str, Any]]]
    replay: dict[str, Any]
    limits: dict[str, int]
    environment: dict[str, Any]
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


def build_url(dest: dict[str, Any], secrets: dict[str, str], keep_secret_marks: bool = False) -> str:
    """The URL with its declared query entries appended (secret ones resolved, or kept as marks)."""
    url = str(dest["url"])
    query = [
        (
            str(q["name"]),
            f"${{secret:{q['value'].get('secret_id')}}}"
            if keep_secret_marks and q["value"].get("source") == "secret"
            else resolve_value(q["value"], secrets),
        )
        for q in dest.get("query", [])
    ]
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


def _url_problem(dest: JSONObject, path: str, allowed: list[str]) -> JSONObject | None:
    """The issue with a destination of the caller's request (its JSON), or None."""
    url = str(dest.get("url", ""))
    try:
        parts = urllib.parse.urlsplit(url)
        userinfo = parts.username is not None or parts.password is not None
    except ValueError:
        return issue(f"{path}/url", "invalid_format", "not a valid URL")
    origin = origin_of(url)
    if origin is None or userinfo:
        return issue(f"{path}/url", "invalid_value", "browser URLs must be http(s) and carry no credentials")
    if allowed and origin not in allowed:
        return issue(f"{path}/url", "invalid_value", f"URL origin {origin} is not declared in allowed_origins")
    return None


# Headers the browser derives from the replayed body or status itself.
FORBIDDEN_REPLAY_HEADERS = frozenset({"content-length", "location", "transfer-encoding"})


def _storage_problems(storage: dict[str, list[dict[str, Any]]], scope: list[str]) -> list[JSONObject]:
    problems: list[JSONObject] = []
    for i, cookie in enumerate(storage["cookies"]):
        if (p := _url_problem(cookie["destination"], f"storage/cookies/{i}/destination", scope)) is not None:
            problems.append(p)
    for area in ("local_storage", "session_storage"):
        for i, entry in enumerate(storage[area]):
            origin = parse_origin(entry["origin"])
            if origin is None or origin not in scope:
                problems.append(
                    issue(
                        f"storage/{area}/{i}/origin",
                        "invalid_value",
                        f"storage origin {entry['origin']} is not an origin in allowed_origins",
                    )
                )
            elif origin != entry["origin"]:
                entry["origin"] = origin
    return problems


def _replay_problems(replay: dict[str, Any], scope: list[str]) -> list[JSONObject]:
    if replay["mode"] == "disabled":
        return []
    problems = []
    ids: set[str] = set()
    matchers: set[tuple[str, str]] = set()
    for i, route in enumerate(replay["routes"]):
        path = f"request_replay/routes/{i}"
        key = (route["method"], build_url(route["request"], {}, keep_secret_marks=True))
        if route["route_id"] in ids or key in matchers:
            problems.append(issue(path, "invalid_value", "route ids and (method, request) pairs must be unique"))
        ids.add(route["route_id"])
        matchers.add(key)
        if (p := _url_problem(route["request"], f"{path}/request", scope)) is not None:
            problems.append(p)
        response = route["response"]
        if response["kind"] == "redirect":
            if (p := _url_problem(response["destination"], f"{path}/response/destination", scope)) is not None:
                problems.append(p)
            continue
        names = [h["name"].lower() for h in response.get("headers", [])]
        if len(set(names)) != len(names):
            problems.append(issue(f"{path}/response/headers", "invalid_value", "header names must be unique"))
        for j, name in enumerate(names):
            if name in FORBIDDEN_REPLAY_HEADERS:
                problems.append(
                    issue(
                        f"{path}/response/headers/{j}/name",
                        "invalid_value",
                        f"{name} is derived by the browser and cannot be replayed",
                    )
                )
    return problems


def parse(args: dict[str, Any], env: dict[str, str] | None = None) -> ScenarioRequest:
    """Check what the schema cannot say; any problem is one ``invalid_request`` listing them all."""
    env = dict(os.environ) if env is None else env
    # The kernel's issue entries (rea.plugin.issue): the JSON of an invalid_request's details.
    problems: list[JSONObject] = []
    browser = args.get("browser") or {"mode": "launch"}
    endpoint = None
    if browser["mode"] == "connect":
        try:
            endpoint = parse_endpoint(browser["cdp_endpoint"], "browser/cdp_endpoint")
        except Exception as exc:  # a ReaError with its own issue list
            problems.extend(getattr(exc, "details", {}).get("issues", []))
    declared = allowed_origins(args.get("allowed_origins"))
    start = args["start_url"]
    start_origin = origin_of(str(start.get("url", ""))) or ""
    scope = declared or ([start_origin] if start_origin else [])
    if (p := _url_problem(start, "start_url", scope)) is not None:
        problems.append(p)
    seen: set[str] = {START_STEP}
    for i, action in enumerate(args["actions"]):
        if action["step_id"] in seen:
            problems.append(
                issue(
                    f"actions/{i}/step_id",
                    "invalid_value",
                    f"step_id {action['step_id']!r} is used twice (or is the reserved {START_STEP})",
                )
            )
        seen.add(action["step_id"])
        if (
            action["action"] == "goto"
            and (p := _url_problem(action["destination"], f"actions/{i}/destination", scope)) is not None
        ):
            problems.append(p)
    secrets: dict[str, str] = {}
    variables: set[str] = set()
    for i, secret in enumerate(args.get("secrets", [])):
        sid, var = secret["secret_id"], secret.get("environment_variable") or secret.get("file", "")
        if sid in secrets or var in variables:
            problems.append(
                issue(f"secrets/{i}", "invalid_value", "secret ids, environment variables and files must be unique")
            )
            continue
        variables.add(var)
        if "file" in secret:
            value, why = read_secret_file(secret["file"])
            if value is None:
                problems.append(issue(f"secrets/{i}/file", "invalid_value", why))
                continue
        else:
            value = env.get(var)
            if not value:
                problems.append(
                    issue(
                        f"secrets/{i}/environment_variable",
                        "invalid_value",
                        f"{var} is not set (or empty) in rea's environment",
                    )
                )
                continue
        secrets[sid] = value
    storage = {"cookies": [], "local_storage": [], "session_storage": [], **(args.get("storage") or {})}
    replay = args.get("request_replay") or {"mode": "disabled"}
    problems.extend(_storage_problems(storage, scope))
    problems.extend(_replay_problems(replay, scope))
    declared_ids = {s["secret_id"] for s in args.get("secrets", [])}
    references = _references(
        {"start_url": start, "actions": args["actions"], "storage": storage, "request_replay": replay}
    )
    for path, sid in references:
        if sid not in declared_ids:
            problems.append(issue(path, "invalid_value", f"secret {sid!r} is not declared in secrets"))
    if problems:
        raise invalid_request(f"invalid browser scenario: {problems[0]['message']}", problems)
    capture = {**DEFAULT_CAPTURE, **(args.get("capture") or {})}
    environment = {**DEFAULT_ENVIRONMENT, **(args.get("environment") or {})}
    environment["viewport"] = {
        **DEFAULT_ENVIRONMENT["viewport"],  # type: ignore[dict-item]
        **((args.get("environment") or {}).get("viewport") or {}),
    }
    limits = {**DEFAULT_LIMITS, **{k: v for k, v in (args.get("limits") or {}).items() if k != "timeout_ms"}}
    return ScenarioRequest(
        mode=browser["mode"],
        cdp_endpoint=endpoint,
        target_id=browser.get("target_id"),
        start_url=build_url(start, secrets),
        start_origin=start_origin,
        allowed=scope,
        actions=list(args["actions"]),
        secrets=secrets,
        secret_references=sorted({sid for _, sid in references}),
        capture={k: list(v) for k, v in capture.items()},
        storage=storage,
        replay=replay,
        limits=limits,
        environment=environment,
        timeout_ms=(args.get("limits") or {}).get("timeout_ms"),
    )
