"""The ``lldb`` dynamic provider: descriptor, availability and the client that observes native calls."""

from __future__ import annotations

import importlib.util

from rea.plugin import AnalysisClient
from rea.plugin import AnalysisProvider
from rea.plugin import Availability
from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import ProviderDescriptor
from rea.plugin import Target
from rea.plugin import TargetSupport
from rea.plugin import distribution_version
from rea_plugins.lldb.abi import ABIS
from rea_plugins.lldb.abi import host_mismatch
from rea_plugins.lldb.locate import debugserver_path

DISTRIBUTION = "lldb-for-pwndbg"
REMEDIATION_INSTALL = (
    "pip install 'rea-reverse[lldb]' (the lldb-for-pwndbg wheel: LLDB's Python bindings and lldb-server)"
)
OPERATIONS = ("observe_native_calls",)


def lldb_version() -> str:
    return distribution_version(DISTRIBUTION) or "not-installed"


class LldbProvider(AnalysisProvider):
    """LLDB (Python bindings + lldb-server) in a worker process rea owns; the debuggee is its descendant."""

    def __init__(self) -> None:
        self.descriptor = ProviderDescriptor(
            id="lldb",
            name="LLDB",
            version=lldb_version(),
            kind="dynamic",
            formats=("elf", "mach-o"),
            architectures=tuple(sorted(ABIS)),
            operations=OPERATIONS,
            # Never chosen by auto: it runs the target.
            auto_priority=0,
            description="Native call observation: runs the program under LLDB in an owned worker process and "
            "records entries of the requested functions (arguments by ABI, return values, backtraces).",
        )

    def availability(self) -> Availability:
        if importlib.util.find_spec("lldb") is None:
            return Availability.missing(
                "runtime_missing", "LLDB's Python bindings are not installed", REMEDIATION_INSTALL
            )
        if debugserver_path() is None:
            return Availability.missing(
                "executable_missing",
                "lldb-server was not found (set LLDB_DEBUGSERVER_PATH or install the lldb-for-pwndbg wheel)",
                REMEDIATION_INSTALL,
            )
        return Availability.ok("LLDB is installed; the worker starts when an observation starts")

    def target_support(self, target: Target) -> TargetSupport:
        support = super().target_support(target)
        if support.status != "supported":
            return support
        reason = host_mismatch(target.format, target.architecture)
        if reason is not None:
            return TargetSupport(status="unsupported", code="unsupported_host", reason=reason)
        return support

    # The profile is JSON the kernel hashes into every Evidence id (the AnalysisProvider contract), not a record.
    def analysis_profile(self, target: Target) -> JSONObject:
        return {
            "engine": "lldb",
            "engine_version": self.descriptor.version,
            "launch": "lldb-server (gdb-remote)",
            "breakpoints": "function entry (prologue not skipped)",
        }

    def open(self, target: Target, run_id: str, ctx: CallContext) -> AnalysisClient:
        from rea_plugins.lldb.client import LldbClient

        return LldbClient(target, run_id)
