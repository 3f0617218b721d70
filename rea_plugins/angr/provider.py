"""The ``angr`` analysis provider: descriptor, availability, analysis profile and lazy client creation."""

from __future__ import annotations

import importlib.util

from rea.plugin import AnalysisClient
from rea.plugin import AnalysisProvider
from rea.plugin import Availability
from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import ProviderDescriptor
from rea.plugin import Target
from rea.plugin import distribution_version
from rea_plugins.angr.options import REMEDIATION_INSTALL
from rea_plugins.angr.options import Timeouts
from rea_plugins.angr.options import profile_parameters
from rea_plugins.angr.options import timeouts_from_env
from rea_plugins.angr.worker import ROUTES

OPERATIONS = tuple(sorted(ROUTES))


def angr_version() -> str:
    """angr's installed version from package metadata (never by importing angr)."""
    return distribution_version("angr") or "not-installed"


class AngrProvider(AnalysisProvider):
    """angr (CFGFast + decompiler) in a worker process rea owns."""

    def __init__(self, timeouts: Timeouts | None = None) -> None:
        self._timeouts = timeouts
        self.descriptor = ProviderDescriptor(
            id="angr",
            name="angr",
            version=angr_version(),
            kind="deep",
            formats=("elf", "pe", "mach-o"),
            architectures=("x86", "x86_64", "arm", "arm64"),
            operations=OPERATIONS,
            # Below native (10): auto stays fast and deterministic; angr is chosen by id.
            auto_priority=5,
            description="angr binary analysis: CFG recovery and decompilation in an owned worker process.",
        )

    def availability(self) -> Availability:
        if importlib.util.find_spec("angr") is None:
            return Availability.missing("runtime_missing", "the angr package is not installed", REMEDIATION_INSTALL)
        return Availability.ok("angr is installed; the worker starts on the first query")

    # JSON, not a Struct: the kernel hashes the profile into every Evidence id as the parameters it holds.
    def analysis_profile(self, target: Target) -> JSONObject:
        return profile_parameters(self.descriptor.version)

    def open(self, target: Target, run_id: str, ctx: CallContext) -> AnalysisClient:
        from rea_plugins.angr.client import AngrClient

        # Validated here so a bad setting fails the open, not a later query.
        timeouts = timeouts_from_env(base=self._timeouts)
        return AngrClient(target, run_id, timeouts)
