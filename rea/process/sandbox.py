"""Isolation for code rea runs but did not write (scenario targets, debuggees, browsers): bubblewrap.

The policy: the whole filesystem read-only except the declared writable roots and the process's private
directory, a private /tmp, no network unless loopback is allowed, no new privileges, all capabilities
dropped, and the sandbox dies with the server. Every capture records which isolation applied.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from typing import Any

import msgspec

from rea.errors import ReaError

BWRAP_PACKAGE = "bubblewrap"


class SandboxPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """What a sandboxed process may touch."""

    writable_roots: tuple[str, ...] = ()
    # Paths visible read-only even where the sandbox hides the host's (its private /tmp): e.g. the program's folder.
    readable_roots: tuple[str, ...] = ()
    # Loopback needs the host's network namespace, so other addresses are not blocked either.
    allow_loopback: bool = False
    # False: a host without bubblewrap is a typed error. True: run unsandboxed and record why.
    accept_none: bool = False


class Isolation(msgspec.Struct, frozen=True, kw_only=True):
    """The isolation that applied to one process, as captures record it."""

    sandbox: str  # "bubblewrap" or "none"
    reason: str = ""
    policy: dict[str, Any] | None = None


@functools.cache
def bwrap_failure() -> str | None:
    """Why bubblewrap cannot run here (None when it can): missing, or refused by the host's namespaces."""
    path = shutil.which("bwrap")
    if path is None:
        return f"bwrap is not installed (Debian package {BWRAP_PACKAGE})"
    try:
        proc = subprocess.run([path, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--", "true"],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap did not run: {exc}"
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        return f"bwrap cannot create a sandbox on this host: {last[0][:200]}"
    return None


def wrap(argv: list[str], policy: SandboxPolicy, private_dir: str, cwd: str) -> tuple[list[str], Isolation]:
    """The command line that runs ``argv`` under ``policy``, and the isolation record to keep."""
    failure = bwrap_failure()
    if failure is not None:
        if not policy.accept_none:
            raise ReaError("provider_unavailable", f"a sandbox was required but {failure}",
                           remediation=f"Install {BWRAP_PACKAGE} (apt-get install {BWRAP_PACKAGE}), or accept "
                                       "running without a sandbox where the tool allows it.",
                           details={"reason": "sandbox_unavailable", "sandbox": "bubblewrap"})
        return argv, Isolation(sandbox="none", reason=failure)
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    # No --new-session: the owned process already has a session of its own (no terminal of the server's to
    # inject into), and keeping the program in it lets rea prove it owns the program and signal it.
    cmd = [bwrap, "--unshare-all", "--die-with-parent", "--cap-drop", "ALL"]
    if policy.allow_loopback:
        cmd.append("--share-net")
    cmd += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    readable = [os.path.realpath(r) for r in policy.readable_roots]
    for root in _hidden_runtime(argv[0]):
        cmd += ["--ro-bind", root, root]
    for root in readable:
        cmd += ["--ro-bind", root, root]
    roots = [os.path.realpath(r) for r in policy.writable_roots]
    for root in [os.path.realpath(private_dir), *roots]:
        cmd += ["--bind", root, root]
    cmd += ["--chdir", cwd, "--", *argv]
    record = {"filesystem": "read-only except writable_roots and the private directory; private /tmp",
              "writable_roots": roots,
              **({"readable_roots": readable} if readable else {}),
              "network": "host (loopback allowed; other addresses are not blocked)" if policy.allow_loopback
              else "none (own network namespace)",
              "privileges": "no new privileges, all capabilities dropped",
              "lifetime": "dies with the rea server"}
    return cmd, Isolation(sandbox="bubblewrap", policy=record)


def _hidden_runtime(program: str) -> list[str]:
    """Host paths under /tmp that the program or rea's own interpreter needs, which the private /tmp would hide."""
    # A checkout or virtualenv under /tmp (a fresh clone, a tox env there) is still the code rea runs.
    located = os.path.realpath(shutil.which(program) or program)
    candidates = [os.path.dirname(located), sys.prefix, sys.base_prefix, *sys.path]
    kept: list[str] = []
    for path in sorted({os.path.realpath(c) for c in candidates if c}):
        if (path == "/tmp" or not path.startswith("/tmp/") or not os.path.isdir(path)
                or any(path.startswith(k + "/") for k in kept)):
            continue
        kept.append(path)
    return kept
