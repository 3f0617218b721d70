"""The ``hopper`` analysis provider: Hopper Disassembler (macOS) driven through rea's bridge script."""

from __future__ import annotations

import os
import sys

from rea.plugin import AnalysisClient
from rea.plugin import AnalysisProvider
from rea.plugin import Availability
from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import ProviderDescriptor
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import open_regular
from rea_plugins.hopper.settings import LAUNCHER
from rea_plugins.hopper.settings import OPERATIONS
from rea_plugins.hopper.settings import TEST_ANY_HOST
from rea_plugins.hopper.settings import limits_from_env

DEFAULT_LAUNCHER = "/Applications/Hopper Disassembler.app/Contents/MacOS/hopper"
REMEDIATION_INSTALL = (
    "Install Hopper Disassembler (https://www.hopperapp.com) or set HOPPER_LAUNCHER_PATH to its "
    "command-line launcher, then restart rea."
)


def launcher_path() -> str:
    value = LAUNCHER.read()
    return value if isinstance(value, str) else DEFAULT_LAUNCHER


def any_host() -> bool:
    """TEST ONLY: REA_HOPPER_TEST_ANY_HOST=1 lifts the macOS-only host check for a fake launcher."""
    return bool(TEST_ANY_HOST.read())


def hopper_version(launcher: str) -> str:
    """The app's version from its Info.plist (the launcher lives in <app>/Contents/MacOS); never raises."""
    import plistlib

    plist = os.path.join(os.path.dirname(os.path.dirname(launcher)), "Info.plist")
    try:
        # Through rea.files: availability never waits on a FIFO where the app's Info.plist should be.
        with os.fdopen(open_regular(plist, what="Info.plist"), "rb") as fh:
            return str(plistlib.load(fh).get("CFBundleShortVersionString", "unknown"))
    except (OSError, ValueError, plistlib.InvalidFileException, ReaError):
        return "not-installed"


class HopperProvider(AnalysisProvider):
    """Hopper Disassembler with rea's bridge script; launched on the first query, in a process rea owns."""

    def __init__(self) -> None:
        if any_host():
            version = "test-fake"
        elif sys.platform != "darwin":
            version = "unsupported-host"
        else:
            version = hopper_version(launcher_path())
        self.descriptor = ProviderDescriptor(
            id="hopper",
            name="Hopper Disassembler",
            version=version,
            kind="deep",
            formats=("mach-o", "elf", "pe"),
            architectures=("x86", "x86_64", "arm", "arm64"),
            operations=tuple(OPERATIONS),
            # Below native (10), angr (5) and ghidra (3): a GUI engine is only ever chosen by id.
            auto_priority=2,
            description="Hopper Disassembler (macOS) through rea's bridge script: procedures, references, "
            "pseudo code and annotations (names, comments, bookmarks).",
        )

    def availability(self) -> Availability:
        if sys.platform != "darwin" and not any_host():
            return Availability.missing(
                "unsupported_host",
                f"Hopper Disassembler's scripting bridge runs on macOS; this host is {sys.platform}",
                "Use the native, angr or ghidra provider on this host, or run rea on macOS with "
                "Hopper Disassembler installed.",
            )
        launcher = launcher_path()
        if not (os.path.isfile(launcher) and os.access(launcher, os.X_OK)):
            return Availability.missing(
                "executable_missing", f"Hopper's launcher is not at {launcher}", REMEDIATION_INSTALL
            )
        return Availability.ok("Hopper's launcher is present; Hopper starts on the first query")

    # JSON, not a Struct: the kernel hashes the profile into every Evidence id as the parameters it holds.
    def analysis_profile(self, target: Target) -> JSONObject:
        return {
            "engine": "hopper",
            "hopper_version": self.descriptor.version,
            "analysis": "Hopper's loader and background analysis (--analysis), document never saved",
            "bridge_protocol": 1,
            "procedures": "Hopper procedures; those in stub sections (__stubs, .plt) are imports",
        }

    def open(self, target: Target, run_id: str, ctx: CallContext) -> AnalysisClient:
        from rea_plugins.hopper.client import HopperClient

        limits = limits_from_env()
        availability = self.availability()
        if availability.status != "available":
            raise ReaError(
                "provider_unavailable",
                f"hopper is unavailable: {availability.reason}",
                remediation=availability.remediation or "Run `rea doctor`.",
                details={"provider_id": "hopper", "reason": availability.code},
            )
        return HopperClient(target, run_id, limits, launcher_path())
