"""A test provider (loaded through REA_PLUGIN_MODULES) whose close is slow or leaves an owned resource.

REA_TEST_CLOSE_MARKERS=dir: close writes dir/closing, sleeps REA_TEST_CLOSE_SECONDS, then writes dir/closed.
REA_TEST_CLOSE_LEAVES=kind: close reports that owned resource kind as remaining.
A target whose name ends in ".fail" makes open fail, as an engine that rejects the file would.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from rea import hookimpl
from rea.context import CallContext
from rea.errors import ReaError
from rea.providers import AnalysisClient
from rea.providers import AnalysisProvider
from rea.providers import Availability
from rea.providers import CloseOutcome
from rea.providers import OperationResult
from rea.providers import ProviderDescriptor
from rea.target import Target


class _Client(AnalysisClient):
    def __init__(self, target: Target) -> None:
        self.target = target

    def execute(self, operation: str, params: dict[str, Any], ctx: CallContext) -> OperationResult:
        doc = {
            "name": self.target.name,
            "format": self.target.format,
            "architecture": self.target.architecture,
            "sha256": self.target.sha256,
            "entry": None,
            "bits": None,
            "endianness": None,
        }
        return OperationResult(normalized={"documents": [doc]})

    def close(self) -> CloseOutcome:
        markers = os.environ.get("REA_TEST_CLOSE_MARKERS")
        if markers:
            Path(markers, "closing").write_text("")
            time.sleep(float(os.environ.get("REA_TEST_CLOSE_SECONDS", "2")))
            Path(markers, "closed").write_text("")
        leaves = os.environ.get("REA_TEST_CLOSE_LEAVES")
        return CloseOutcome(remaining=(leaves,), reason="the probe says so") if leaves else CloseOutcome()


class _Provider(AnalysisProvider):
    descriptor = ProviderDescriptor(
        id="close-probe",
        name="Close probe",
        version="1",
        kind="static",
        formats=("elf",),
        architectures=(),
        operations=("list_documents",),
        auto_priority=0,
    )

    def availability(self) -> Availability:
        return Availability.ok()

    def open(self, target: Target, run_id: str, ctx: CallContext) -> AnalysisClient:
        if target.name.endswith(".fail"):
            raise ReaError("unsupported_target", "the probe engine rejects this file")
        return _Client(target)


class _Ghost(AnalysisProvider):
    """Offers everything, is never installed: remediation must not send callers to it."""

    descriptor = ProviderDescriptor(
        id="ghost-engine",
        name="Ghost",
        version="1",
        kind="deep",
        formats=("elf",),
        architectures=(),
        operations=("list_documents", "list_segments", "list_procedures", "list_strings"),
        auto_priority=0,
    )

    def availability(self) -> Availability:
        return Availability.missing("runtime_missing", "the ghost engine is not installed", "pip install ghost")

    def open(self, target: Target, run_id: str, ctx: CallContext) -> AnalysisClient:
        raise AssertionError("never opened")


@hookimpl
def rea_register_analysis_providers(register: Any) -> None:
    register(_Provider())
    register(_Ghost())
