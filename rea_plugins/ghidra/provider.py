"""The ``ghidra`` analysis provider: descriptor, availability, analysis profile and lazy client creation."""

from __future__ import annotations

from rea.plugin import OPERATIONS
from rea.plugin import AnalysisClient
from rea.plugin import AnalysisProvider
from rea.plugin import Availability
from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import ProviderDescriptor
from rea.plugin import ReaError
from rea.plugin import Target
from rea_plugins.ghidra import install
from rea_plugins.ghidra.settings import fake_worker_path
from rea_plugins.ghidra.settings import limits_from_env

FAKE_VERSION = "test-fake"


class GhidraProvider(AnalysisProvider):
    """Ghidra (pyghidra, headless) in a worker process rea owns; started on the first query."""

    def __init__(self) -> None:
        fake = _fake()
        version = FAKE_VERSION if fake else install.ghidra_version() or "not-configured"
        self.descriptor = ProviderDescriptor(
            id="ghidra",
            name="Ghidra",
            version=version,
            kind="deep",
            formats=("elf", "pe", "mach-o"),
            architectures=("x86", "x86_64", "arm", "arm64"),
            operations=OPERATIONS,
            # Below native (10) and angr (5): a minutes-long cold start is never chosen implicitly.
            auto_priority=3,
            description="Ghidra (headless, through pyghidra): default auto-analysis and the decompiler in an "
            "owned worker process; starts on the first query.",
        )

    def availability(self) -> Availability:
        if _fake():
            return Availability.ok("TEST ONLY: REA_GHIDRA_TEST_WORKER stands in for Ghidra (a fake engine)")
        return install.discover()[1]

    # JSON, not a Struct: the kernel hashes the profile into every Evidence id as the parameters it holds.
    def analysis_profile(self, target: Target) -> JSONObject:
        installation, _ = (None, None) if _fake() else install.discover()
        return {
            "engine": "ghidra",
            "ghidra_version": self.descriptor.version,
            "pyghidra_version": installation.pyghidra_version if installation else None,
            "project": "private temporary project, never saved, deleted at close",
            "analysis": "Ghidra's default auto-analysis (all default analyzers)",
            "procedures": "Ghidra functions; an import at its thunk (stub), else at its slot",
            "names": "symbols of the binary (Ghidra's dynamic LAB_/DAT_ names excluded)",
            "strings": "defined strings after auto-analysis (DefinedStringIterator)",
            "decompiler": "DecompInterface, default options",
        }

    def open(self, target: Target, run_id: str, ctx: CallContext) -> AnalysisClient:
        from rea_plugins.ghidra.client import GhidraClient
        from rea_plugins.ghidra.client import worker_spec

        # Validated here too, so a bad value fails the open rather than a later query.
        limits = limits_from_env()
        fake = _fake()
        installation = None
        if fake is None:
            installation, why = install.discover()
            if installation is None:
                raise ReaError(
                    "provider_unavailable",
                    f"ghidra is unavailable: {why.reason}",
                    remediation=why.remediation or "Run `rea doctor`.",
                    details={"provider_id": "ghidra", "reason": why.code},
                )
        return GhidraClient(target, run_id, limits, worker_spec(installation, fake), installation)


def _fake() -> str | None:
    return fake_worker_path()
