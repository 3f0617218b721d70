"""What both LLDB workers do alike (``worker`` observing calls, ``debugger`` holding a debug session): open a
debugger, load the program, launch it with its environment and output files, say where it was loaded.

Imported inside the workers only; ``lldb`` is the module they imported (LLDB's Python bindings).
"""

from __future__ import annotations

import os
from typing import Any

from rea.plugin import ReaError


def open_debugger(lldb: Any) -> Any:
    """An asynchronous debugger whose breakpoints on a function stop at its first instruction (no prologue skip)."""
    debugger = lldb.SBDebugger.Create(False)
    debugger.SetAsync(True)
    lldb.SBDebugger.SetInternalVariable("target.skip-prologue", "false", debugger.GetInstanceName())
    return debugger


def debugger_version(lldb: Any) -> str:
    return str(lldb.SBDebugger.GetVersionString().splitlines()[0][:120])


def create_target(lldb: Any, debugger: Any, executable: str, platform: str | None = None) -> Any:
    """LLDB's target of ``executable`` (on ``platform``, None: the host's), or a typed error."""
    target = debugger.CreateTarget(executable, None, platform, True, lldb.SBError())
    if not target.IsValid():
        raise ReaError(
            "unsupported_target",
            "LLDB could not load the executable",
            remediation="Check that the path names a program for this host.",
            details={"reason": "target_not_loaded"},
        )
    return target


def launch_info(
    lldb: Any, arguments: list[str], working_directory: str, variables: dict[str, str], out_dir: str, stdin: str
) -> Any:
    """How to launch the program: its arguments, working directory and environment ``variables``, stdin from the
    file ``stdin``, stdout and stderr to files of ``out_dir``."""
    info = lldb.SBLaunchInfo(list(arguments))
    info.SetWorkingDirectory(working_directory)
    # The debuggee's HOME and TMPDIR default to the worker's private directory, like every owned process.
    environment = {k: os.environ[k] for k in ("HOME", "TMPDIR") if k in os.environ}
    environment.update(variables)
    info.SetEnvironmentEntries([f"{k}={v}" for k, v in environment.items()], False)
    info.AddOpenFileAction(0, stdin, True, False)
    info.AddOpenFileAction(1, os.path.join(out_dir, "stdout"), False, True)
    info.AddOpenFileAction(2, os.path.join(out_dir, "stderr"), False, True)
    return info


def launch(lldb: Any, target: Any, info: Any) -> Any:
    """The launched process, or a typed error with LLDB's message."""
    error = lldb.SBError()
    process = target.Launch(info, error)
    if not error.Success() or not process.IsValid():
        raise ReaError(
            "process_capture_failed",
            "LLDB could not launch the program",
            remediation="Check that the program runs on this host and that ptrace is permitted "
            "(container seccomp, kernel.yama.ptrace_scope).",
            details={"reason": "launch_failed", "debugger_message": (error.GetCString() or "")[:300]},
        )
    return process


def load_bias(lldb: Any, target: Any, module: Any) -> int | None:
    """Where ``module`` was loaded relative to its link-time addresses (ASLR), or None where it is not loaded."""
    header = module.GetObjectFileHeaderAddress()
    if not header.IsValid():
        return None
    loaded = header.GetLoadAddress(target)
    return None if loaded == lldb.LLDB_INVALID_ADDRESS else int(loaded - header.GetFileAddress())
