"""A headless Chromium rea launches and owns (through ``rea.process``), and the settings that find it."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time

import msgspec

from rea.plugin import MAX_INT32
from rea.plugin import CallContext
from rea.plugin import CloseOutcome
from rea.plugin import JSONObject
from rea.plugin import OwnedProcess
from rea.plugin import ProcessSpec
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import SandboxPolicy
from rea.plugin import SettingSpec
from rea.plugin import cancelled
from rea.plugin import integer_setting
from rea.plugin import leftovers
from rea.plugin import open_regular
from rea.plugin import status_details
from rea_plugins.cdp.urls import DEFAULT_PORTS

RESOURCE = "chromium"
OWNER = "cdp-browser"
CANDIDATES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome", "chrome")
PORT_FILE = "DevToolsActivePort"


def _absolute_path(raw: str) -> str:
    if not raw or not os.path.isabs(raw) or "\0" in raw:
        raise ValueError(raw)
    return raw


CHROMIUM_PATH = SettingSpec(
    name="REA_CHROMIUM_PATH",
    constraint="an absolute path to a Chromium-family browser executable",
    parse=_absolute_path,
    description="The browser capture_browser_scenario launches (default: chromium, then chrome, on PATH).",
)
STARTUP_TIMEOUT = integer_setting(
    "REA_CHROMIUM_STARTUP_TIMEOUT_MS",
    1,
    MAX_INT32,
    30_000,
    "milliseconds",
    "How long a launched browser may take to open its DevTools endpoint.",
)
MEMORY_LIMIT = integer_setting(
    "REA_CHROMIUM_MEMORY_LIMIT_MB",
    64,
    1_048_576,
    2048,
    "MiB",
    "JavaScript heap bound of each page of a browser rea launches; a page that exceeds it crashes and the "
    "scenario is resource_constraint.",
)
SETTINGS = (CHROMIUM_PATH, STARTUP_TIMEOUT, MEMORY_LIMIT)

WEBRTC_POLICY = "disable_non_proxied_udp"
# The profile's preference, written before the browser starts (the flags above force it; the preference keeps a
# profile's own setting from saying otherwise).
PREFERENCES = msgspec.json.encode(
    {"webrtc": {"ip_handling_policy": WEBRTC_POLICY, "multiple_routes_enabled": False, "nonproxied_udp_enabled": False}}
).decode()
# The profile is made inside the private directory, which exists only once the process starts: a shell writes its
# Preferences there, then becomes the browser ($1: the profile, $2: the preferences, then the browser's argv).
WITH_PREFERENCES = (
    "/bin/sh",
    "-c",
    'mkdir -p "$1/Default" && printf %s "$2" > "$1/Default/Preferences" && shift 2 && exec "$@"',
    "rea-chromium",
    "{private}/profile",
    PREFERENCES,
)
# Headless, no sandbox of Chromium's own (rea may run as root; bubblewrap isolates it instead), no
# background traffic (it would only meet refused connections), and the experimental WebMCP API on.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-crash-reporter",
    "--disable-breakpad",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--password-store=basic",
    "--use-mock-keychain",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "--user-data-dir={private}/profile",
    # WebRTC's UDP (STUN, TURN, peer-to-peer) is outside the proxy that holds allowed_origins: none of it may
    # leave except through the proxy, which refuses it (issue 42). The preference says the same in the profile.
    f"--force-webrtc-ip-handling-policy={WEBRTC_POLICY}",
    f"--webrtc-ip-handling-policy={WEBRTC_POLICY}",
)


def find_chromium() -> tuple[str | None, str]:
    """The executable to launch and where it came from, or None and why not."""
    configured = CHROMIUM_PATH.read()
    if configured is not None:
        if os.path.isfile(configured) and os.access(configured, os.X_OK):
            return configured, "REA_CHROMIUM_PATH"
        return None, f"REA_CHROMIUM_PATH ({configured}) is not an executable file"
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found, "PATH"
    return None, "no chromium or chrome executable on PATH"


class LaunchRecord(Record):
    """How rea launched the browser."""

    executable: str
    source: str
    # The sandbox's isolation record (the kernel's, as JSON): carried into the capture as it is.
    isolation: JSONObject
    startup_ms: int


def start_on_loopback(
    argv: tuple[str, ...],
    resource: str,
    owner: str,
    *,
    readable: tuple[str, ...],
    writable: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> OwnedProcess:
    """Start a browser or an app that serves DevTools on loopback: an owned process holding the scenario's
    secrets, sandboxed with loopback only (unsandboxed, recorded, where the host has no bubblewrap)."""
    return OwnedProcess.start(
        ProcessSpec(
            argv=argv,
            resource=resource,
            owner=owner,
            stdin="null",
            stdout="null",
            env=env or {},
            holds_secrets=True,
            sandbox=SandboxPolicy(
                allow_loopback=True, accept_none=True, writable_roots=writable, readable_roots=readable
            ),
        )
    )


class OwnedBrowser:
    """A browser rea started: private profile, loopback endpoint, terminated and reaped at ``close``."""

    def __init__(self, proc: OwnedProcess, endpoint: str, record: LaunchRecord) -> None:
        self.proc = proc
        self.endpoint = endpoint
        self.record = record
        self.sockets: str | None = None  # the short TMPDIR made for a long private directory, removed at close
        self.closed_port: socket.socket | None = None  # the refusing "proxy" of a contained browser
        self._lineage = [proc.observe("started")]

    @classmethod
    def launch(
        cls,
        ctx: CallContext | None = None,
        *,
        window: tuple[int, int] = (1280, 720),
        start_url: str = "about:blank",
        features: tuple[str, ...] = ("WebMCP",),
        allowed_origins: tuple[str, ...] | None = None,
        readable: tuple[str, ...] = (),
    ) -> OwnedBrowser:
        """Start a browser; with ``allowed_origins`` its connections (WebSockets included) reach only those;
        ``readable`` folders are given to it read-only (an application's file:// pages)."""
        executable, source = find_chromium()
        if executable is None:
            raise ReaError(
                "provider_unavailable",
                f"cannot launch a browser: {source}",
                remediation="Install Debian package chromium, or set REA_CHROMIUM_PATH to a Chromium "
                "or Chrome executable.",
                details={"reason": "executable_missing", "resource": RESOURCE},
            )
        enabled = (f"--enable-features={','.join(features)}",) if features else ()
        heap = f"--js-flags=--max-old-space-size={MEMORY_LIMIT.read()}"
        closed, contain = _containment(allowed_origins)
        flags = (*FLAGS, *enabled, heap, *contain, f"--window-size={window[0]},{window[1]}", start_url)
        argv = (*WITH_PREFERENCES, executable, *flags)
        began = time.monotonic()
        sockets = _socket_dir()
        env = {"TMPDIR": sockets} if sockets else {}
        # Loopback only is what the browser needs; a host without bubblewrap runs it unsandboxed, recorded.
        try:
            # The sandbox gives the system's trees; a browser installed elsewhere (/opt) needs its folder.
            proc = start_on_loopback(
                argv,
                RESOURCE,
                OWNER,
                readable=(os.path.dirname(os.path.realpath(executable)), *readable),
                writable=(sockets,) if sockets else (),
                env=env,
            )
        except BaseException:
            _remove(sockets)
            _release(closed)
            raise
        try:
            port = _wait_for_port(proc, STARTUP_TIMEOUT.read() / 1000, ctx)
        except BaseException:
            proc.terminate(0.5)
            _remove(sockets)
            _release(closed)
            raise
        record = LaunchRecord(
            executable=executable,
            source=source,
            isolation=msgspec.to_builtins(proc.isolation),
            startup_ms=int((time.monotonic() - began) * 1000),
        )
        browser = cls(proc, f"http://127.0.0.1:{port}", record)
        browser.sockets = sockets
        browser.closed_port = closed
        return browser

    @property
    def alive(self) -> bool:
        return self.proc.running

    # Lineage snapshots are the kernel's process contract (OwnedProcess.observe), JSON rea's records do not restate.
    def lineage(self) -> list[JSONObject]:
        return list(self._lineage)

    def snapshot(self) -> JSONObject:
        snap = self.proc.observe("snapshot")
        self._lineage.append(snap)
        return snap

    def close(self, grace_s: float = 2.0) -> CloseOutcome:
        outcome = self.proc.terminate(grace_s)
        self._lineage.append(self.proc.observe("closed"))
        _remove(self.sockets)
        _release(self.closed_port)
        return outcome


def _containment(origins: tuple[str, ...] | None) -> tuple[socket.socket | None, tuple[str, ...]]:
    """Launch flags that send every connection outside ``origins`` to a proxy that refuses it.

    DevTools' Fetch domain holds requests but not WebSockets or WebTransport; the proxy rules hold all of them.
    The "proxy" is a loopback port bound and never listened on (connections to it are refused, and no other
    process can take it while it is held); the allowed origins bypass it, by scheme, host and port (WebSockets
    by their ws/wss form), and ``<-loopback>`` removes Chromium's implicit bypass of loopback hosts."""
    if origins is None:
        return None, ()
    hole = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    hole.bind(("127.0.0.1", 0))
    bypass = ["<-loopback>"]
    for origin in origins:
        scheme, rest = origin.split("://", 1)
        port = "" if ":" in rest.rsplit("]", 1)[-1] else f":{DEFAULT_PORTS[scheme]}"
        bypass += [f"{scheme}://{rest}{port}", f"{scheme.replace('http', 'ws', 1)}://{rest}{port}"]
    return hole, (f"--proxy-server=127.0.0.1:{hole.getsockname()[1]}", f"--proxy-bypass-list={';'.join(bypass)}")


def _release(hole: socket.socket | None) -> None:
    if hole is not None:
        hole.close()


# Chromium puts its singleton socket in $TMPDIR/.org.chromium.Chromium.XXXXXX/SingletonSocket; a Unix socket's
# path holds at most 107 bytes, so a long private directory (from a long TMPDIR) would stop it starting.
_SOCKET_SUFFIX = len("/tmp/.org.chromium.Chromium.XXXXXX/SingletonSocket")
_MAX_SOCKET_PATH = 107


def _socket_dir() -> str | None:
    """A short private directory for the browser's TMPDIR when its private directory's would be too long."""
    private = os.path.join(tempfile.gettempdir(), f"rea-{RESOURCE}-xxxxxxxx")
    if len(private) + _SOCKET_SUFFIX <= _MAX_SOCKET_PATH:
        return None
    folder = tempfile.mkdtemp(prefix="rea-s-", dir="/tmp")
    leftovers.mark(folder)  # found and removed by the next start if the server is killed
    return folder


def _remove(folder: str | None) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _last_words(tail: str) -> str:
    """The browser's reason for failing: its last error line (Chromium prefixes them ``[...:ERROR:...]``)."""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    errors = [line for line in lines if ":ERROR:" in line or ":FATAL:" in line] or lines
    return errors[-1][:400] if errors else ""


def _wait_for_port(proc: OwnedProcess, timeout_s: float, ctx: CallContext | None) -> int:
    """The port the browser chose, read from the DevTools port file it writes into its profile."""
    path = os.path.join(proc.private_dir, "profile", PORT_FILE)
    deadline = time.monotonic() + timeout_s
    while True:
        if ctx is not None and ctx.cancelled:
            raise cancelled("browser startup")
        try:
            # Through rea.files: the profile is the browser's to write, and a FIFO there is never waited on.
            with os.fdopen(open_regular(path, what="DevTools port file"), encoding="ascii") as fh:
                first = fh.readline(16).strip()
            if first.isdigit() and 0 < int(first) < 65536:
                return int(first)
        except (OSError, UnicodeDecodeError, ReaError):
            pass
        status = proc.exit_status()
        if status is not None:
            said = _last_words(proc.stderr_tail())
            raise ReaError(
                "provider_unavailable",
                "the browser exited before opening its DevTools endpoint" + (f": {said}" if said else ""),
                remediation="Read the browser's own message in details.browser_message; `rea doctor` "
                "checks that it starts headless on this host.",
                details={
                    "reason": "startup_failed",
                    "resource": RESOURCE,
                    "browser_message": said,
                    **status_details(status),
                },
            )
        if time.monotonic() >= deadline:
            raise ReaError(
                "provider_timeout",
                f"the browser did not open its DevTools endpoint within {timeout_s:g} s",
                remediation="Raise REA_CHROMIUM_STARTUP_TIMEOUT_MS on a slow host.",
                details={"reason": "startup_timeout", "resource": RESOURCE, "timeout_ms": int(timeout_s * 1000)},
            )
        time.sleep(0.02)
