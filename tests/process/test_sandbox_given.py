"""A sandboxed program sees nothing of the host it was not given (issue 42 item 2), with the real bubblewrap.

The sandbox binds only what the program needs (its file, the system's library and runtime trees, a subset of /etc,
a fresh home and tmp, its working directory): a root-owned 0600 file elsewhere, the analysis cache's key and a
browser profile kept outside /root and /tmp, and /etc/shadow are simply not there.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rea.cache_key import load_secret
from rea.process import OwnedProcess
from rea.process import ProcessSpec
from rea.process import SandboxPolicy
from rea.process import procfs
from rea.process import sandbox
from rea.session import Session
from rea.testing import result_of
from tests import toolchains
from tests.waiting import wait_for

# Says, for each argument, whether that file is readable (the same probe as test_scenario_isolation's "peek").
PEEK = r"""
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        int fd = open(argv[i], O_RDONLY);
        printf("%s %s\n", fd >= 0 ? "readable" : "denied", argv[i]);
        if (fd >= 0) close(fd);
    }
    printf("uid %d\n", (int)getuid());
    return 0;
}
"""


@pytest.fixture
def bwrap() -> str:
    path = toolchains.require("bwrap")
    failure = sandbox.bwrap_failure()
    if failure is not None:
        toolchains.unavailable(failure)
    return path


@pytest.fixture(scope="module")
def peek(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return toolchains.compile_programs({"peek": PEEK}, tmp_path_factory.mktemp("given-programs"))["peek"]


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside /root and /tmp (under /srv where the test may write there, else /var/tmp)."""
    base = "/srv" if os.access("/srv", os.W_OK) else "/var/tmp"
    path = Path(tempfile.mkdtemp(prefix="given-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def root_secret() -> Iterator[Path]:
    """A 0600 file of the server's user under /var/tmp (root-owned when the suite runs as root)."""
    fd, name = tempfile.mkstemp(prefix="given-secret-", dir="/var/tmp")
    os.write(fd, secrets.token_hex(8).encode())
    os.close(fd)
    os.chmod(name, 0o600)
    try:
        yield Path(name)
    finally:
        os.unlink(name)


def _capture(session: Session, executable: str, arguments: list[str], work: Path) -> dict[str, Any]:
    capture = result_of(
        session,
        "capture_process_scenario",
        {"executable": executable, "arguments": arguments, "working_directory": str(work)},
    )
    assert capture["isolation"]["sandbox"] == "bubblewrap", capture["isolation"]
    assert capture["lifecycle"]["exit"]["exit_code"] == 0, capture["output"]
    return capture


def test_secrets_outside_root_and_tmp_are_not_there(
    rea_session: Session,
    bwrap: str,
    peek: Path,
    outside: Path,
    root_secret: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The hardest case: the cache, the temporary directory (and so every owned process's private directory, a
    # browser's profile among them) all lie under the working directory the scenario gives the program.
    cache = outside / "cache"
    monkeypatch.setenv("REA_CACHE_DIR", str(cache))
    key = Path(load_secret(str(cache)).path)
    assert key.is_file()
    temp = outside / "tmp"
    profile = temp / "rea-cdp-browser-given" / "Default"
    profile.mkdir(parents=True)
    (profile / "Cookies").write_text("session=secret")
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    (outside / "input").write_text("mine")
    probes = [str(root_secret), str(key), str(profile / "Cookies"), "/etc/shadow", str(outside / "input")]
    capture = _capture(rea_session, str(peek), probes, outside)
    lines = capture["output"]["stdout"]["text"].splitlines()
    for path in probes[:4]:
        assert f"denied {path}" in lines, lines
    assert f"readable {outside / 'input'}" in lines, lines
    # The private home lies under the masked temporary directory, and was still given (fresh, writable).
    given = {b["path"]: b["access"] for b in capture["isolation"]["binds"]}
    assert given[capture["lifecycle"]["private_directory"]] == "read-write"
    assert given[str(cache)] == "hidden" and given[str(temp)] == "hidden"


def test_a_dynamically_linked_program_runs_and_sees_only_what_it_was_given(
    rea_session: Session, bwrap: str, outside: Path
) -> None:
    script = 'ls -a /; echo "--etc"; ls -a /etc; echo "--who"; id -un'
    capture = _capture(rea_session, "/bin/sh", ["-c", script], outside)
    text = capture["output"]["stdout"]["text"]
    top, rest = text.split("--etc\n")
    etc, who = rest.split("--who\n")
    system = {".", "..", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "dev", "proc", "tmp", "var"}
    # The working directory's top folder (/srv or /var) is there, for the path to it; nothing else of the host.
    assert set(top.split()) <= system | {outside.parts[1]}, top
    assert "root" not in top.split() and "home" not in top.split()
    assert "ld.so.cache" in etc.split() and not {"shadow", "gshadow", "ssh", "sudoers"} & set(etc.split()), etc
    if sandbox._user_namespace():
        assert who.strip() == "nobody"
    given = {b["path"]: b["access"] for b in capture["isolation"]["binds"]}
    assert given["/usr"] == "read-only" and given[str(outside)] == "read-write"
    assert given["/tmp"] == "empty" and "/" not in given and "/etc/shadow" not in given


@pytest.mark.parametrize("folder", [False, True], ids=["file", "folder"])
def test_the_program_gets_its_folder_only_when_the_scenario_says_so(
    rea_session: Session, bwrap: str, peek: Path, outside: Path, tmp_path: Path, folder: bool
) -> None:
    home = tmp_path / "tool"
    home.mkdir()
    program = home / "peek"
    shutil.copy2(peek, program)
    (home / "data").write_text("beside")
    capture = result_of(
        rea_session,
        "capture_process_scenario",
        {
            "executable": str(program),
            "arguments": [str(home / "data")],
            "working_directory": str(outside),
            "program_folder": folder,
        },
    )
    assert capture["lifecycle"]["exit"]["exit_code"] == 0, capture["output"]
    said = "readable" if folder else "denied"
    assert f"{said} {home / 'data'}" in capture["output"]["stdout"]["text"].splitlines()
    given = {b["path"]: b["access"] for b in capture["isolation"]["binds"]}
    assert given[str(home if folder else program)] == "read-only"


def test_a_working_directory_that_is_the_temporary_directory_shows_none_of_reas_folders(
    rea_session: Session, bwrap: str, peek: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tool's own example runs in /tmp: the program gets that folder, without the private directories (browser
    # profiles) and staging files rea keeps there.
    monkeypatch.setenv("TMPDIR", str(outside))
    monkeypatch.setattr(tempfile, "tempdir", str(outside))
    profile = outside / "rea-cdp-browser-other" / "Default"
    profile.mkdir(parents=True)
    (profile / "Cookies").write_text("session=secret")
    (outside / ".rea-export-staging.json.tmp").write_text("{}")
    (outside / "shared").write_text("anyone's")
    probes = [str(profile / "Cookies"), str(outside / ".rea-export-staging.json.tmp"), str(outside / "shared")]
    capture = _capture(rea_session, str(peek), probes, outside)
    lines = capture["output"]["stdout"]["text"].splitlines()
    assert f"denied {probes[0]}" in lines and f"denied {probes[1]}" in lines, lines
    assert f"readable {probes[2]}" in lines, lines
    # Hidden one by one, said once per pattern (a busy /tmp holds many).
    hidden = [b["path"] for b in capture["isolation"]["binds"] if b["access"] == "hidden"]
    assert sorted(hidden) == [f"{outside}/.rea-*", f"{outside}/rea-*"], hidden


def test_under_a_root_server_the_program_is_not_root_on_the_host(bwrap: str, tmp_path: Path) -> None:
    # bubblewrap alone maps the sandbox's uid 65534 to its caller's, root: the program then passed owner checks on
    # root's files. Staged idmapped binds let bubblewrap start as 65534, so the program is 65534 on the host too.
    if os.getuid() != 0:
        pytest.skip("the server is not root: the program runs as the server's own unprivileged uid")
    why = sandbox._idmap_failure([str(tmp_path)])
    if why is not None:
        pytest.skip(f"no unprivileged sandbox on this host: {why}")
    proc = OwnedProcess.start(
        ProcessSpec(
            argv=("sleep", "30"), resource="given", owner="test", sandbox=SandboxPolicy(writable_roots=(str(tmp_path),))
        )
    )
    try:
        assert proc.isolation.policy is not None and "on the host" in (proc.isolation.policy.user or "")
        sleeper = wait_for(lambda: _in_session(proc.pid, "sleep"), "the sandboxed sleep")
        status = Path(f"/proc/{sleeper}/status").read_text().splitlines()
        uids = next(line for line in status if line.startswith("Uid:"))
        assert uids.split()[1:] == [str(sandbox.SANDBOX_UID)] * 4
    finally:
        proc.terminate(1.0)


def _in_session(sid: int, comm: str) -> int | None:
    for info in procfs.scan().values():
        if info.sid == sid:
            with contextlib.suppress(OSError):
                if Path(f"/proc/{info.pid}/comm").read_text().strip() == comm:
                    return info.pid
    return None
