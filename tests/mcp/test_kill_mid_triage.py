"""``rea serve`` killed with SIGKILL in the middle of a corpus triage leaves nothing behind (issue 42 item 6).

Before: the local pool's worker processes finished the binary in hand (their engine workers with them) after the
server was gone, and the triage's staging folder beside the index (archive members, 812 MB in the report) stayed
for good. Now every descendant dies with its parent (parent-death signal: the owned processes through the launch
shim, the pool's workers in their initializer), and the next start removes the staging folder, noted and marked as
the killed server's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from rea.process import leftovers
from rea.process import procfs
from tests import toolchains
from tests.corpus.corpussupport import variants
from tests.mcp.test_server_shutdown import RawServer
from tests.mcp.test_server_shutdown import _alive
from tests.mcp.test_server_shutdown import _cmdline
from tests.waiting import wait_for

# 150,000 small functions, assembled in about a second: native takes seconds over each copy, so a pool worker is
# still busy with its binary well after the server is killed (which is what used to outlive it).
BIG = r"""
        .text
        .macro FN
        .globl f\@
        .type f\@, @function
f\@:
        push %rbp
        mov %rsp, %rbp
        mov %edi, %eax
        xor %ecx, %ecx
1:      add %ecx, %eax
        imul $7, %eax, %eax
        inc %ecx
        cmp %edi, %ecx
        jl 1b
        pop %rbp
        ret
        .size f\@, .-f\@
        .endm
        .rept 150000
        FN
        .endr
        .globl main
        .type main, @function
main:
        xor %eax, %eax
        ret
        .section .note.GNU-stack,"",@progbits
"""
# A pool worker busy with its binary used to outlive the server by the rest of it (seconds here); with the
# parent-death signal the kernel ends it as the server ends. Well below one binary's analysis, so the test tells
# the two apart, and far above what the kernel takes to deliver the signal.
GONE_WITHIN_S = 2.0


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gcc = toolchains.require("gcc")
    if os.uname().machine != "x86_64":
        pytest.skip("the generated binary is x86-64 assembly")
    out = tmp_path_factory.mktemp("big")
    (out / "big.s").write_text(BIG)
    subprocess.run([gcc, "-o", str(out / "big"), str(out / "big.s")], check=True, capture_output=True, timeout=300)
    return out / "big"


def test_kill_9_mid_triage_leaves_no_process_and_the_next_start_removes_the_staging(big: Path, tmp_path: Path) -> None:
    corpus = variants(big, tmp_path / "corpus", 6)
    with zipfile.ZipFile(corpus / "bundle.zip", "w") as zf:  # staged under the staging folder when walked
        zf.write(big, "inner/big")
    index = tmp_path / "index" / "corpus.db"
    index.parent.mkdir()
    server = RawServer(tmp_path)
    seen: dict[tuple[int, int], procfs.ProcInfo] = {}
    try:
        server.call("triage_corpus", {"paths": [str(corpus)], "index": str(index), "workers": 2})

        def both_workers_analysing() -> bool:
            tree = server.tree()
            seen.update({(i.pid, i.start): i for i in tree})
            return sum("rea_plugins.native" in _cmdline(i.pid) for i in tree) >= 2

        wait_for(both_workers_analysing, "both pool workers analysing a binary", timeout_s=180)
        staging = [p for p in index.parent.iterdir() if p.name.startswith(".rea-corpus-")]
        assert len(staging) == 1 and any(staging[0].iterdir())
        server.proc.kill()
        server.proc.wait()
        survivors = list(seen.values())
        wait_for(
            lambda: not _alive(survivors),
            "every descendant of the killed server gone",
            timeout_s=GONE_WITHIN_S,
        )
    finally:
        server.close()
    assert staging[0].exists()  # the killed server could not remove it
    second = RawServer(tmp_path)
    try:
        assert not staging[0].exists(), "the killed server's staging folder is still there"
        assert not [n for n in os.listdir(tmp_path / "tmp") if n.startswith(leftovers.NOTE_PREFIX)]
    finally:
        second.close()
    shutil.rmtree(tmp_path / "corpus")
