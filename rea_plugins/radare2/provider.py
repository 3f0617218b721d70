"""The ``radare2`` analysis provider: descriptor, availability, analysis profile and lazy client creation."""

from __future__ import annotations

from rea.plugin import AnalysisClient
from rea.plugin import AnalysisProvider
from rea.plugin import Availability
from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import ProviderDescriptor
from rea.plugin import ReaError
from rea.plugin import Target
from rea_plugins.radare2.options import REMEDIATION_INSTALL
from rea_plugins.radare2.options import Limits
from rea_plugins.radare2.options import dist_version
from rea_plugins.radare2.options import library_dir
from rea_plugins.radare2.options import limits_from_env
from rea_plugins.radare2.options import profile_parameters
from rea_plugins.radare2.worker import OPERATIONS as WORKER_OPERATIONS

OPERATIONS = tuple(sorted(WORKER_OPERATIONS))


class Radare2Provider(AnalysisProvider):
    """radare2 (the r2libr wheel's libraries) in a worker process rea owns."""

    def __init__(self, limits: Limits | None = None) -> None:
        self._limits = limits
        self.descriptor = ProviderDescriptor(
            id="radare2",
            name="radare2",
            version=dist_version("r2libr") or "not-installed",
            kind="deep",
            formats=("elf", "pe", "mach-o", "mach-o-universal"),
            architectures=("x86", "x86_64", "arm", "arm64"),
            operations=OPERATIONS,
            # Below native (10) and angr (5), distinct from every other provider's: auto stays on the embedded
            # default, and radare2 is chosen by id.
            auto_priority=4,
            description="radare2 analysis (aa/aaa) and pdc pseudo-C in an owned worker process.",
        )

    def availability(self) -> Availability:
        if library_dir() is None:
            return Availability.missing(
                "runtime_missing", "radare2's libraries (the r2libr package) are not installed", REMEDIATION_INSTALL
            )
        return Availability.ok("radare2's libraries are installed; the worker starts on the first query")

    def limits(self) -> Limits:
        """The limits a new client runs with; an invalid setting is ``configuration_invalid``."""
        return self._limits or limits_from_env()

    # JSON, not a Struct: the kernel hashes the profile into every Evidence id as the parameters it holds.
    def analysis_profile(self, target: Target) -> JSONObject:
        return profile_parameters(self.limits())

    def open(self, target: Target, run_id: str, ctx: CallContext) -> AnalysisClient:
        from rea_plugins.radare2.client import Radare2Client

        libdir = library_dir()
        if libdir is None:
            raise ReaError(
                "provider_unavailable",
                "radare2's libraries are not installed",
                remediation=REMEDIATION_INSTALL,
                details={"provider_id": "radare2"},
            )
        return Radare2Client(target, run_id, self.limits(), libdir)
