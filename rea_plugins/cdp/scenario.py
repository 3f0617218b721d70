"""The browser scenario driver: start URL, declared actions, and what the page did at every step.

The browser is either launched and owned by rea (headless Chromium through ``rea.process``, its private
profile removed at the end) or an existing loopback endpoint's page (left where the scenario ended). Every
request the page makes outside the declared origins is failed by rea before it leaves the browser.
A browser that dies, a broken protocol or a cancellation ends the run with a typed error whose
``details.partial_observation`` holds the capture up to that point.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any
from typing import TypeVar

import msgspec

from rea.plugin import Arguments
from rea.plugin import Availability
from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import ReaError
from rea.plugin import ScenarioDriver
from rea.plugin import ScenarioDriverDescriptor
from rea.plugin import arg_int
from rea.plugin import arg_object
from rea.plugin import arg_objects
from rea.plugin import arg_str
from rea.plugin import origin_of
from rea_plugins.cdp import connection as cdp
from rea_plugins.cdp import scenario_request as sreq
from rea_plugins.cdp.actions import Page
from rea_plugins.cdp.actions import StepFailed
from rea_plugins.cdp.actions import run_action
from rea_plugins.cdp.browser import MEMORY_LIMIT
from rea_plugins.cdp.browser import OwnedBrowser
from rea_plugins.cdp.browser import find_chromium
from rea_plugins.cdp.model import Missing
from rea_plugins.cdp.model import NotRequested
from rea_plugins.cdp.model import PngCaptured
from rea_plugins.cdp.model import ScenarioBrowser
from rea_plugins.cdp.model import ScenarioCapture
from rea_plugins.cdp.model import ScenarioEvent
from rea_plugins.cdp.model import ScenarioEvents
from rea_plugins.cdp.model import ScenarioInfo
from rea_plugins.cdp.model import ScenarioStep
from rea_plugins.cdp.model import StepArtifacts
from rea_plugins.cdp.model import StorageCaptured
from rea_plugins.cdp.model import StorageSnapshot
from rea_plugins.cdp.model import StorageValue
from rea_plugins.cdp.model import TextArtifact
from rea_plugins.cdp.model import TextCaptured
from rea_plugins.cdp.model import UrlCaptured
from rea_plugins.cdp.model import completeness
from rea_plugins.cdp.model import to_json
from rea_plugins.cdp.passive import console_text
from rea_plugins.cdp.passive import grab_png
from rea_plugins.cdp.passive import png_artifact
from rea_plugins.cdp.targets import attach
from rea_plugins.cdp.targets import target_infos
from rea_plugins.cdp.urls import in_scope
from rea_plugins.cdp.urls import sanitize

VERSION = "0.1.0"
MAX_EVENT_TEXT = 4096
# Lineage snapshots are the kernel's process contract (OwnedProcess.observe), JSON rea's records do not restate.
LineageSink = Callable[[list[JSONObject]], None]
# Codes that end one step but leave the browser usable.
_STEP_CODES = ("execution_failure", "provider_timeout")


# DevTools command params (protocol JSON).
FETCH_ALL: JSONObject = {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}
AUTO_ATTACH: JSONObject = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True}
GUARDED_TARGETS = frozenset(
    {
        "worker",
        "shared_worker",
        "service_worker",
        "iframe",
        "page",
        "worklet",
        "shared_storage_worklet",
        "auction_worklet",
    }
)


# What an artifact reader captures (a step's artifact when it is wanted and readable).
_Captured = TypeVar("_Captured", UrlCaptured, TextCaptured, PngCaptured, StorageCaptured)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Recorder:
    """Events of the scenario's session (on the reader thread) and the origin guard for its requests."""

    def __init__(self, conn: cdp.Connection, req: sreq.ScenarioRequest, redact: sreq.Redactor) -> None:
        self.conn = conn
        self.req = req
        self.redact = redact
        self.kinds = set(req.capture["events"])
        self.session: str | None = None
        # Every session whose requests are guarded: the page's, and each target the browser created for it
        # (dedicated, shared and service workers, out-of-process frames), attached before it runs.
        self.guarded: set[str] = set()
        self.context: str | None = None  # the page's browser context: other contexts' targets are not ours
        self.target_id: str | None = None
        self.uncontained: list[str] = []
        self.crashed = False
        self.lock = threading.Lock()
        self.items: list[ScenarioEvent] = []
        self.sequence = 0
        self.dropped = 0
        self.step_index = 0
        self.lifecycle: set[tuple[str, str]] = set()
        replay = req.replay
        self.unmatched = arg_str(replay, "unmatched") if replay["mode"] == "exact" else None
        # Each route of the caller's request (its JSON), by the request it answers.
        self.routes = {
            (
                arg_str(r, "method", ""),
                sreq.normalized_url(sreq.build_url(arg_object(r, "request") or {}, req.secrets)),
            ): r
            for r in arg_objects(replay, "routes") or []
        }

    # A DevTools event's params: the browser's JSON, read key by key.
    def __call__(self, method: str, params: JSONObject, session: str | None) -> None:
        if method == "Target.attachedToTarget" and (session is None or session in self.guarded):
            self._attached(params, from_page=session is not None)
            return
        if session is None or session not in self.guarded:
            return
        if method == "Fetch.requestPaused":
            self._guard(params, session)
            return
        if method in ("Network.webSocketCreated", "Network.webTransportCreated"):
            self._socket(method, params)
        if session != self.session:
            return
        if method == "Inspector.targetCrashed":
            self.crashed = True
        elif method == "Page.lifecycleEvent":
            with self.lock:
                self.lifecycle.add((str(params.get("loaderId", "")), str(params.get("name", ""))))
        elif method == "Page.frameNavigated":
            frame = cdp.obj(params.get("frame"))
            with self.lock:
                self.lifecycle.add((str(frame.get("loaderId", "")), "commit"))
            self._frame("frame-navigated", str(frame.get("id", "")), frame.get("url"))
        elif method in ("Page.frameAttached", "Page.frameDetached"):
            self._frame(
                "frame-attached" if method.endswith("Attached") else "frame-detached",
                str(params.get("frameId", "")),
                None,
            )
        elif method == "Runtime.consoleAPICalled" and "console" in self.kinds:
            args = cdp.arr(params.get("args"))
            top = cdp.obj((cdp.arr(cdp.obj(params.get("stackTrace")).get("callFrames")) or [{}])[0])
            self._add(
                kind="console",
                level=str(params.get("type", "log")),
                text=self._text(console_text(args)),
                url=self._url(top["url"]) if top.get("url") else None,
            )
        elif method == "Runtime.exceptionThrown" and "page-errors" in self.kinds:
            details = cdp.obj(params.get("exceptionDetails"))
            exc = cdp.obj(details.get("exception"))
            self._add(
                kind="page-error",
                level="error",
                text=self._text(str(exc.get("description") or details.get("text", ""))),
            )
        elif method.startswith("Network.") and "network" in self.kinds:
            self._network(method, params)

    def _text(self, text: str) -> str:
        return self.redact(text)[:MAX_EVENT_TEXT]

    def _url(self, url: Any) -> Any:
        return sanitize(self.redact(str(url))) if isinstance(url, str) else None

    def _add(self, **fields: Any) -> None:
        with self.lock:
            if len(self.items) >= self.req.limits["max_events"]:
                self.dropped += 1
                return
            self.sequence += 1
            base = {
                "url": None,
                "level": None,
                "text": None,
                "method": None,
                "resource_type": None,
                "status": None,
                "failure": None,
                "frame_id": None,
            }
            self.items.append(ScenarioEvent(sequence=self.sequence, step_index=self.step_index, **{**base, **fields}))

    def _frame(self, kind: str, frame_id: str, url: Any) -> None:
        if "frames" in self.kinds:
            self._add(kind=kind, frame_id=frame_id, url=self._url(url))

    def _network(self, method: str, params: JSONObject) -> None:
        if method == "Network.requestWillBeSent":
            request = cdp.obj(params.get("request"))
            self._add(
                kind="request",
                url=self._url(request.get("url", "")),
                method=str(request.get("method", "")),
                resource_type=params.get("type"),
            )
        elif method == "Network.responseReceived":
            response = cdp.obj(params.get("response"))
            status = response.get("status")
            self._add(
                kind="response",
                url=self._url(response.get("url", "")),
                resource_type=params.get("type"),
                status=int(status) if isinstance(status, int | float) else None,
            )
        elif method == "Network.loadingFailed" and params.get("blockedReason") != "inspector":
            self._add(
                kind="request-failed",
                failure=str(params.get("errorText") or "failed"),
                resource_type=params.get("type"),
            )

    def _attached(self, params: JSONObject, from_page: bool) -> None:
        """A target the browser created (paused before it runs): guard its requests too, then let it run.

        Through the page's own session every child is the scenario's; through the browser's only its context's
        service and shared workers and the pages it opened are (a connected browser's other tabs are not)."""
        sid = str(params.get("sessionId", ""))
        info = cdp.obj(params.get("targetInfo"))
        kind = info.get("type")
        if from_page:
            ours = kind in GUARDED_TARGETS
        else:
            same_context = self.context is None or info.get("browserContextId") == self.context
            ours = same_context and (
                kind in ("service_worker", "shared_worker")
                or (kind == "page" and info.get("openerId") == self.target_id)
            )
        if sid and ours:
            self.guarded.add(sid)
            self.conn.send("Fetch.enable", FETCH_ALL, sid)
            self.conn.send("Network.enable", {}, sid)
            self.conn.send("Target.setAutoAttach", AUTO_ATTACH, sid)
        if sid:
            self.conn.send("Runtime.runIfWaitingForDebugger", {}, sid)

    def _socket(self, method: str, params: JSONObject) -> None:
        """A WebSocket or WebTransport outside the declared origins: refused by a launched browser's proxy rules;
        DevTools cannot hold it in a connected browser, so there it is reported."""
        url = str(params.get("url", ""))
        as_http = "http" + url[2:] if url.lower().startswith("ws") else url
        if in_scope(as_http, self.req.allowed):
            return
        kind = "WebSocket" if method == "Network.webSocketCreated" else "WebTransport"
        if self.req.mode == "launch":  # the launched browser's proxy rules refuse it
            self._add(
                kind="request-blocked",
                url=self._url(url),
                resource_type=kind,
                failure=f"a {kind} outside allowed_origins, refused by the launched browser's proxy rules",
            )
            return
        with self.lock:
            self.uncontained.append(url)
        self._add(
            kind="request-uncontained",
            url=self._url(url),
            resource_type=kind,
            failure=f"a {kind} outside allowed_origins (DevTools cannot block it in a connected browser)",
        )

    def _guard(self, params: JSONObject, session: str | None = None) -> None:
        """Every paused request is answered: replayed, continued within the declared origins, or failed."""
        session = session or self.session
        request = cdp.obj(params.get("request"))
        url, method = str(request.get("url", "")), str(request.get("method", ""))
        rid = params.get("requestId")
        scheme = url.split(":", 1)[0].lower()
        if scheme in ("data", "blob", "about"):
            self.conn.send("Fetch.continueRequest", {"requestId": rid}, session)
            return
        if self.unmatched is not None:
            route = self.routes.get((method, sreq.normalized_url(url)))
            if route is not None:
                self._replay(rid, route, session)
                self._add(
                    kind="request-replayed",
                    url=self._url(url),
                    method=method,
                    text=route["route_id"],
                    resource_type=params.get("resourceType"),
                    status=cdp.obj(route["response"])["status"],
                )
                return
            if self.unmatched == "abort":
                self._block(rid, url, method, params, "no request_replay route matches", session)
                return
        if in_scope(url, self.req.allowed):
            self.conn.send("Fetch.continueRequest", {"requestId": rid}, session)
        else:
            self._block(rid, url, method, params, "outside allowed_origins", session)

    def _block(self, rid: Any, url: str, method: str, params: JSONObject, why: str, session: str | None) -> None:
        self.conn.send("Fetch.failRequest", {"requestId": rid, "errorReason": "BlockedByClient"}, session)
        self._add(
            kind="request-blocked",
            url=self._url(url),
            method=method,
            resource_type=params.get("resourceType"),
            failure=why,
        )

    # A route, an action: parts of the caller's request as its input schema shapes them (see ScenarioRequest).
    def _replay(self, rid: Any, route: JSONObject, session: str | None) -> None:
        response = arg_object(route, "response") or {}
        secrets = self.req.secrets
        headers: list[JSONValue]
        if response["kind"] == "redirect":
            headers = [
                {"name": "location", "value": sreq.build_url(arg_object(response, "destination") or {}, secrets)}
            ]
            body = b""
        else:
            headers = [
                {"name": h["name"], "value": sreq.resolve_value(arg_object(h, "value") or {}, secrets)}
                for h in arg_objects(response, "headers") or []
            ]
            body = (
                sreq.resolve_value(arg_object(response, "body") or {}, secrets).encode() if "body" in response else b""
            )
        self.conn.send(
            "Fetch.fulfillRequest",
            {
                "requestId": rid,
                "responseCode": response["status"],
                "responseHeaders": headers,
                "body": base64.b64encode(body).decode("ascii"),
            },
            session,
        )

    def seen(self, loader: str, name: str) -> bool:
        with self.lock:
            return (loader, name) in self.lifecycle


class _Run:
    """One scenario from first command to cleanup; ``steps`` and events survive any failure."""

    def __init__(self, req: sreq.ScenarioRequest, ctx: CallContext) -> None:
        self.req = req
        self.ctx = ctx
        self.redact = sreq.Redactor(req.secrets)
        self.steps: list[ScenarioStep] = []
        self.limitations: list[str] = []
        self.missing: set[str] = set()
        self.truncated: set[str] = set()
        self.began = time.monotonic()
        self.page: Page | None = None
        self.recorder: _Recorder | None = None
        # The browser's /json/version (its JSON) and the sandbox's isolation record (the kernel's, as JSON).
        self.browser_info: JSONObject = {}
        self.isolation: JSONObject | None = None
        self.cleanup = "disconnected-external" if req.mode == "connect" else "terminated-owned-process"

    # -- the capture so far ----------------------------------------------------------------------

    def capture(self) -> ScenarioCapture:
        rec = self.recorder
        items = list(rec.items) if rec else []
        dropped = rec.dropped if rec else 0
        truncated = set(self.truncated) | ({"events"} if dropped else set())
        missing = set(self.missing)
        if len(self.steps) < len(self.req.actions) + 1 or any(s.status != "completed" for s in self.steps):
            missing.add("action")
        lims = list(self.limitations)
        if rec is not None and rec.uncontained:
            lims.append(
                f"{len(rec.uncontained)} WebSocket/WebTransport connections went outside allowed_origins "
                "(request-uncontained events): DevTools can block requests, not these connections."
            )
        product = str(self.browser_info.get("Browser", "unknown")) or "unknown"
        return ScenarioCapture(
            schema_version=1,
            browser=ScenarioBrowser(
                mode="connect" if self.req.mode == "connect" else "launch",
                process_ownership="external" if self.req.mode == "connect" else "provider-owned",
                cleanup=self.cleanup,  # type: ignore[arg-type]
                product=product.split("/", 1)[0],
                version=product.split("/", 1)[-1],
                isolation=self.isolation,
            ),
            scenario=ScenarioInfo(
                start_origin=self.req.start_origin,
                allowed_origins=self.req.allowed,
                action_count=len(self.req.actions),
                secret_references=self.req.secret_references,
            ),
            duration_ms=int((time.monotonic() - self.began) * 1000),
            steps=list(self.steps),
            events=ScenarioEvents(retained=len(items), dropped=dropped, items=items),
            completeness=completeness(missing, truncated),
            limitations=lims,
        )

    def partial(self, error: ReaError) -> ReaError:
        """``error`` carrying the capture so far, steps not reached marked skipped."""
        self._skip_rest()
        error.details["partial_observation"] = to_json(self.capture())
        return error

    # -- driving ---------------------------------------------------------------------------------

    def drive(self, conn: cdp.Connection, target_id: str) -> None:
        recorder = self.recorder = _Recorder(conn, self.req, self.redact)
        conn.subscribe(recorder)
        infos = cdp.arr(conn.call("Target.getTargets", ctx=self.ctx).get("targetInfos"))
        recorder.context = next(
            (
                str(i.get("browserContextId"))
                for i in map(cdp.obj, infos)
                if i.get("targetId") == target_id and i.get("browserContextId")
            ),
            None,
        )
        recorder.target_id = target_id
        session = recorder.session = attach(conn, target_id, self.ctx)
        recorder.guarded.add(session)
        page = self.page = Page(conn, session, self.ctx)
        page.call("Fetch.enable", FETCH_ALL)
        # Workers, service workers and out-of-process frames are targets of their own: each is attached,
        # paused until its requests are guarded (service and shared workers belong to the browser, not the page).
        page.call("Target.setAutoAttach", AUTO_ATTACH)
        conn.call("Target.setAutoAttach", AUTO_ATTACH, ctx=self.ctx)
        enabling: tuple[tuple[str, JSONObject], ...] = (
            ("Inspector.enable", {}),
            ("Page.enable", {}),
            ("Page.setLifecycleEventsEnabled", {"enabled": True}),
            ("Runtime.enable", {}),
            ("Network.enable", {}),
            ("DOM.enable", {}),
        )
        for method, params in enabling:
            page.call(method, params)
        self._environment(page)
        seeding = self._seed(page)
        self._step(
            0, sreq.START_STEP, "scenario_start", lambda deadline: self._navigate(self.req.start_url, "load", deadline)
        )
        if seeding is not None:
            page.call("Page.removeScriptToEvaluateOnNewDocument", {"identifier": seeding})
        for index, action in enumerate(self.req.actions, start=1):
            if self.req.timeout_ms is not None and (time.monotonic() - self.began) * 1000 > self.req.timeout_ms:
                self.limitations.append(
                    f"The scenario reached limits.timeout_ms ({self.req.timeout_ms} ms); later steps were not run."
                )
                break
            if self.steps[-1].status != "completed":
                break
            self._step(
                index,
                arg_str(action, "step_id", ""),
                arg_str(action, "action", ""),
                self._runner(page, action),
                arg_int(action, "timeout_ms"),
            )
        self._skip_rest()

    # An action of the caller's request as its input schema shapes it (see ScenarioRequest).
    def _runner(self, page: Page, action: JSONObject) -> Callable[[float], None]:
        return lambda deadline: run_action(page, action, self._value, self._goto, deadline)

    def _environment(self, page: Page) -> None:
        env = self.req.environment
        view = env.viewport
        calls: list[tuple[str, JSONObject]] = [
            (
                "Emulation.setDeviceMetricsOverride",
                {
                    "width": view.width,
                    "height": view.height,
                    "deviceScaleFactor": view.device_scale_factor,
                    "mobile": False,
                },
            ),
            ("Emulation.setLocaleOverride", {"locale": env.locale}),
            ("Emulation.setTimezoneOverride", {"timezoneId": env.timezone}),
            (
                "Emulation.setEmulatedMedia",
                {
                    "features": [
                        {"name": "prefers-color-scheme", "value": env.color_scheme},
                        {"name": "prefers-reduced-motion", "value": env.reduced_motion},
                    ]
                },
            ),
        ]
        for method, params in calls:
            try:
                page.call(method, params)
            except cdp.CommandFailed as exc:
                self.limitations.append(
                    f"{method} was refused ({exc.details['cdp_message']}); the page ran with the browser's own setting."
                )

    def _value(self, value: JSONObject) -> str:
        return sreq.resolve_value(value, self.req.secrets)

    def _seed(self, page: Page) -> str | None:
        """Cookies now; storage entries by a script that runs first in documents opened by the start step."""
        storage, secrets = self.req.storage, self.req.secrets
        for cookie in storage["cookies"]:
            reply = page.call(
                "Network.setCookie",
                {
                    "name": cookie["name"],
                    "value": self._value(arg_object(cookie, "value") or {}),
                    "url": sreq.build_url(arg_object(cookie, "destination") or {}, secrets),
                    "httpOnly": cookie["http_only"],
                    "secure": cookie["secure"],
                    "sameSite": cookie["same_site"],
                },
            )
            if reply.get("success") is False:
                raise StepFailed(f"the browser refused cookie {cookie['name']!r}")
        seeds: dict[str, dict[str, list[list[str]]]] = {}
        for area, key in (("local_storage", "local"), ("session_storage", "session")):
            for entry in storage[area]:
                slot = seeds.setdefault(arg_str(entry, "origin", ""), {"local": [], "session": []})
                slot[key].extend(
                    [arg_str(e, "name", ""), self._value(arg_object(e, "value") or {})]
                    for e in arg_objects(entry, "entries") or []
                )
        if not seeds:
            return None
        source = (
            "(() => { const seeds = " + json.dumps(seeds) + "; const s = seeds[location.origin]; if (!s) "
            "return; try { for (const [k, v] of s.local) localStorage.setItem(k, v); "
            "for (const [k, v] of s.session) sessionStorage.setItem(k, v); } catch (e) {} })();"
        )
        self.limitations.append("Storage seeds were written into documents created while the start URL opened.")
        return str(page.call("Page.addScriptToEvaluateOnNewDocument", {"source": source})["identifier"])

    # A goto action of the caller's request as its input schema shapes it (see ScenarioRequest).
    def _goto(self, action: JSONObject, deadline: float) -> None:
        destination = arg_object(action, "destination") or {}
        self._navigate(sreq.build_url(destination, self.req.secrets), arg_str(action, "wait_until", "load"), deadline)

    def _navigate(self, url: str, wait_until: str, deadline: float) -> None:
        assert self.page is not None and self.recorder is not None
        reply = self.page.call("Page.navigate", {"url": url})
        if reply.get("errorText"):
            raise StepFailed(f"navigation failed: {self.redact(str(reply['errorText']))}")
        loader = reply.get("loaderId")
        if not loader:
            return  # a same-document navigation has nothing further to wait for
        name = {"load": "load", "domcontentloaded": "DOMContentLoaded", "commit": "commit"}[wait_until]
        while not self.recorder.seen(str(loader), name):
            if time.monotonic() >= deadline:
                raise StepFailed(f"the page did not reach {wait_until} before the step's deadline")
            cdp.wait(self.ctx, 0.02, "navigation")

    def _step(
        self, index: int, step_id: str, action: str, body: Callable[[float], None], timeout_ms: int | None = None
    ) -> None:
        assert self.recorder is not None
        with self.recorder.lock:
            self.recorder.step_index = index
            first = self.recorder.sequence + 1
        self.ctx.progress(
            f"scenario: step {index}/{len(self.req.actions)} {action}", done=index, total=len(self.req.actions) + 1
        )
        started = time.monotonic()
        before = self._location()
        limit = timeout_ms or (
            self.req.limits["navigation_timeout_ms"]
            if action in ("goto", "scenario_start")
            else self.req.limits["step_timeout_ms"]
        )
        status, error, fatal = "completed", None, None
        try:
            body(started + limit / 1000)
        except ReaError as exc:
            if exc.code in _STEP_CODES:
                status, error = "failed", self.redact(exc.message)
            else:
                status = "cancelled" if exc.code == "cancelled" else "failed"
                error, fatal = self.redact(exc.message), exc
        if fatal is None and self.recorder.crashed:
            try:
                self._check_crash()
            except ReaError as crash:
                status, error, fatal = "failed", self.redact(crash.message), crash
        last = index == len(self.req.actions) or status != "completed"
        wanted = set(self.req.capture["after_each_step"]) | (set(self.req.capture["at_end"]) if last else set())
        artifacts = self._artifacts(wanted) if fatal is None else self._artifacts(set())
        after = self._location() if fatal is None else None
        with self.recorder.lock:
            end = self.recorder.sequence
        self.steps.append(
            ScenarioStep(
                step_index=index,
                step_id=step_id,
                action=action,
                status=status,  # type: ignore[arg-type]
                error=error,
                elapsed_ms=int((time.monotonic() - started) * 1000),
                before_url=before[0] if before else None,
                after_url=after[0] if after else None,
                event_sequence_start=first,
                event_sequence_end=end,
                artifacts=artifacts,
                completeness=completeness(set() if status == "completed" else {"action"}, set()),
            )
        )
        if fatal is not None:
            raise fatal

    def _check_crash(self) -> None:
        """A page whose renderer crashed ends the scenario: out of memory under rea's bound when rea launched it."""
        if self.recorder is None or not self.recorder.crashed:
            return
        if self.req.mode == "connect":
            raise ReaError(
                "provider_unavailable",
                "the page's renderer crashed",
                remediation="Reload the page in the connected browser and run the scenario again.",
                details={"reason": "renderer_crashed"},
            )
        bound = MEMORY_LIMIT.read()
        raise ReaError(
            "resource_constraint",
            f"the page's renderer crashed: its JavaScript heap is bounded to {bound} MiB",
            remediation=f"Raise {MEMORY_LIMIT.name} (now {bound} MiB) if the page legitimately needs more.",
            details={
                "resource": "memory",
                "reported_limits": {"javascript_heap_mb": bound},
                "setting": MEMORY_LIMIT.name,
            },
        )

    def _skip_rest(self) -> None:
        mark = 0
        if self.recorder is not None:
            with self.recorder.lock:
                mark = self.recorder.sequence
        for index in range(len(self.steps), len(self.req.actions) + 1):
            step_id, action = (
                (sreq.START_STEP, "scenario_start")
                if index == 0
                else (
                    arg_str(self.req.actions[index - 1], "step_id", ""),
                    arg_str(self.req.actions[index - 1], "action", ""),
                )
            )
            none = StepArtifacts(
                url=NotRequested(),
                title=NotRequested(),
                dom=NotRequested(),
                screenshot=NotRequested(),
                storage=NotRequested(),
            )
            self.steps.append(
                ScenarioStep(
                    step_index=index,
                    step_id=step_id,
                    action=action,
                    status="skipped",
                    error="not run: an earlier step did not complete",
                    elapsed_ms=0,
                    before_url=None,
                    after_url=None,
                    event_sequence_start=mark + 1,
                    event_sequence_end=mark,
                    artifacts=none,
                    completeness=completeness({"action"}, set()),
                )
            )

    # -- artifacts -------------------------------------------------------------------------------

    def _location(self) -> tuple[Any, str] | None:
        assert self.page is not None
        try:
            history = self.page.call("Page.getNavigationHistory")
            entry = history["entries"][history["currentIndex"]]
        except (cdp.CommandFailed, KeyError, IndexError, TypeError):
            return None
        return sanitize(self.redact(str(entry.get("url", "")))), self.redact(str(entry.get("title", "")))

    def _artifacts(self, wanted: set[str]) -> StepArtifacts:
        # Each kind's artifact record, captured in name order (keyword arguments are evaluated as written).
        return StepArtifacts(
            dom=self._artifact("dom", wanted, self._art_dom),
            screenshot=self._artifact("screenshot", wanted, self._art_screenshot),
            storage=self._artifact("storage", wanted, self._art_storage),
            title=self._artifact("title", wanted, self._art_title),
            url=self._artifact("url", wanted, self._art_url),
        )

    def _artifact(
        self, kind: str, wanted: set[str], read: Callable[[], _Captured | Missing]
    ) -> _Captured | NotRequested | Missing:
        """The artifact record of one kind: ``read``'s when the step wants it, else not requested."""
        if kind not in wanted:
            return NotRequested()
        try:
            return read()
        except (cdp.CommandFailed, StepFailed) as exc:
            self.missing.add(kind)
            return Missing(reason=self.redact(exc.message)[:1024])

    def _art_url(self) -> UrlCaptured | Missing:
        loc = self._location()
        return UrlCaptured(value=loc[0]) if loc else Missing(reason="no navigation entry")

    def _art_title(self) -> TextCaptured | Missing:
        loc = self._location()
        return TextCaptured(value=self._text(loc[1], 4096)) if loc else Missing(reason="no navigation entry")

    def _text(self, text: str, limit: int) -> TextArtifact:
        data = self.redact(text).encode()
        kept = data[:limit].decode("utf-8", "ignore")
        return TextArtifact(sha256=_sha(data), bytes=len(data), truncated=len(data) > limit, text=kept)

    def _art_dom(self) -> TextCaptured | Missing:
        assert self.page is not None
        root = self.page.call("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        html = str(self.page.call("DOM.getOuterHTML", {"nodeId": root}).get("outerHTML", ""))
        artifact = self._text(html, self.req.limits["max_dom_bytes"])
        if artifact.truncated:
            self.truncated.add("dom")
        return TextCaptured(value=artifact)

    def _art_screenshot(self) -> PngCaptured | Missing:
        assert self.page is not None
        try:
            data = grab_png(self.page.conn, self.page.session, self.req.limits["maximum_image_bytes"], self.ctx)
        except ReaError as exc:
            if exc.code != "resource_constraint":
                raise
            self.truncated.add("screenshot")
            return Missing(reason=exc.message)
        return PngCaptured(value=png_artifact(data))

    def _art_storage(self) -> StorageCaptured | Missing:
        assert self.page is not None
        loc = self._location()
        url = loc[0].url if loc else ""
        origin = origin_of(url)

        def value(name: str, raw: str) -> StorageValue:
            if self.redact.touches(raw):
                return StorageValue(name=self.redact(name), value_state="redacted-secret", value_sha256=None)
            return StorageValue(name=self.redact(name), value_state="hashed", value_sha256=_sha(raw.encode()))

        cookies = self.page.call("Network.getCookies", {"urls": [url]} if origin else {}).get("cookies", [])
        areas: dict[bool, list[StorageValue]] = {True: [], False: []}
        if origin:
            for local in (True, False):
                got = self.page.call(
                    "DOMStorage.getDOMStorageItems", {"storageId": {"securityOrigin": origin, "isLocalStorage": local}}
                )
                areas[local] = sorted((value(str(k), str(v)) for k, v in got.get("entries", [])), key=lambda s: s.name)
        return StorageCaptured(
            value=StorageSnapshot(
                origin=origin,
                cookies=sorted(
                    (value(str(c.get("name", "")), str(c.get("value", ""))) for c in cookies), key=lambda s: s.name
                ),
                local_storage=areas[True],
                session_storage=areas[False],
            )
        )


class BrowserScenarioDriver(ScenarioDriver):
    """Runs ``capture_browser_scenario`` requests on Chromium over CDP."""

    descriptor = ScenarioDriverDescriptor(
        id="cdp-browser",
        name="Chromium over the DevTools protocol",
        version=VERSION,
        surface="browser",
        description="Launches a headless Chromium it owns (loopback DevTools, private profile) or drives a page of "
        "a loopback CDP endpoint; declared actions, per-step DOM/URL/screenshot/storage, events.",
    )

    def availability(self) -> Availability:
        path, source = find_chromium()
        if path is None:
            return Availability.missing(
                "executable_missing",
                f"launch mode is unavailable: {source}",
                "Install Debian package chromium or set REA_CHROMIUM_PATH; connect mode "
                "needs only a loopback CDP endpoint.",
            )
        return Availability.ok(f"chromium at {path} ({source})")

    # The kernel's ScenarioDriver.run: the caller's request in, the capture and lineage out as JSON (its signature).
    def run(self, request: Arguments, ctx: CallContext) -> JSONObject:
        lineage: list[JSONObject] = []
        capture = self.capture(request, ctx, lineage.extend)
        return {"capture": to_json(capture), "process_lineage": lineage}

    def capture(self, request: Arguments, ctx: CallContext, on_lineage: LineageSink) -> ScenarioCapture:
        """Run the scenario; lineage of a browser rea launched goes to ``on_lineage`` whatever happens."""
        req = sreq.parse(request)
        run = _Run(req, ctx)
        browser: OwnedBrowser | None = None
        failure: ReaError | None = None
        try:
            if req.mode == "launch":
                view = req.environment.viewport
                browser = OwnedBrowser.launch(ctx, window=(view.width, view.height), allowed_origins=tuple(req.allowed))
                run.isolation = browser.record.isolation
                run.limitations.append(
                    f"rea launched {browser.record.executable} headless with a private profile "
                    f"(isolation: {browser.record.isolation.get('sandbox')})."
                )
            endpoint = browser.endpoint if browser is not None else req.cdp_endpoint
            assert endpoint is not None
            run.browser_info = cdp.browser_version(endpoint, ctx)
            with cdp.opened(endpoint, ctx, run.browser_info) as conn:
                target_id = self._target(conn, req, browser is not None, ctx)
                try:
                    run.drive(conn, target_id)
                finally:
                    if run.page is not None and conn.closed is None:
                        # A connected browser's new targets are no longer held for this scenario.
                        conn.send("Target.setAutoAttach", {**AUTO_ATTACH, "autoAttach": False})
                        for session in sorted(run.recorder.guarded if run.recorder else {run.page.session}):
                            conn.send("Target.detachFromTarget", {"sessionId": session})
                if browser is not None:
                    browser.snapshot()
        except ReaError as exc:
            failure = run.partial(exc)
        finally:
            remaining: tuple[str, ...] = ()
            if browser is not None:
                outcome = browser.close()
                on_lineage(browser.lineage())
                remaining = outcome.remaining
                if remaining:
                    run.cleanup = "incomplete"
                    base = failure or ReaError(
                        "execution_failure", "the scenario ran, but its browser could not be fully cleaned up"
                    )
                    failure = run.partial(base).with_cleanup_incomplete(list(remaining), outcome.reason)
        cleanup = {"cleanup": "incomplete" if remaining else "complete", "resources": sorted(remaining)}
        if failure is not None:
            failure.details.update({"partial_observation": to_json(run.capture()), **cleanup})
            ctx.finish(f"browser scenario: failed ({failure.code}), cleanup {cleanup['cleanup']}")
            raise failure
        capture = run.capture()
        done = sum(1 for s in capture.steps if s.status == "completed")
        ctx.finish(
            f"browser scenario: {done}/{len(capture.steps)} steps completed, {capture.events.retained} "
            f"events, cleanup {cleanup['cleanup']}"
        )
        return capture

    @staticmethod
    def _target(conn: cdp.Connection, req: sreq.ScenarioRequest, owned: bool, ctx: CallContext) -> str:
        if owned:
            reply = conn.call("Target.createTarget", {"url": "about:blank"}, ctx=ctx)
            return str(reply["targetId"])
        assert req.target_id is not None
        match = next((t for t in target_infos(conn, ctx) if t.get("targetId") == req.target_id), None)
        if match is None or match.get("type") != "page":
            raise ReaError(
                "target_unavailable",
                f"no page target {req.target_id!r} on {req.cdp_endpoint}",
                remediation="Call list_browser_targets and pass a page target_id.",
                details={"reason": "not_found" if match is None else "not_a_page", "target_id": req.target_id},
            )
        return req.target_id


def decode_capture(value: Any) -> ScenarioCapture:
    return msgspec.convert(value, ScenarioCapture)
