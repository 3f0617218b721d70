"""Test doubles for the selection policy: providers whose declared data the tests choose."""

from __future__ import annotations

import time
from typing import Any

from rea import hookimpl
from rea.context import CallContext
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
        self.closed = False

    def execute(self, operation: str, params: dict[str, Any], ctx: CallContext) -> OperationResult:
        if operation == "slow_scan":
            for _ in range(int(params.get("steps", 1000))):
                ctx.check("slow_scan")
                time.sleep(0.01)
        return OperationResult(normalized={"documents": [{"name": self.target.name, "sha256": self.target.sha256}]})

    def close(self) -> CloseOutcome:
        self.closed = True
        return CloseOutcome()


class DeclaredProvider(AnalysisProvider):
    """A provider defined only by its declarations (id, priority, formats, availability)."""

    def __init__(self, pid: str, priority: int, formats: tuple[str, ...] = ("elf",), available: bool = True) -> None:
        self.descriptor = ProviderDescriptor(
            id=pid,
            name=pid.title(),
            version="1.0",
            kind="static",
            formats=formats,
            architectures=("x86_64", "arm64", "x86", "arm"),
            operations=("list_documents", "slow_scan"),
            auto_priority=priority,
        )
        self._available = available

    def availability(self) -> Availability:
        if self._available:
            return Availability.ok()
        return Availability.missing(
            "executable_missing", f"{self.descriptor.id} engine not found", f"install {self.descriptor.id}"
        )

    def open(self, target: Target, run_id: str, ctx: CallContext) -> AnalysisClient:
        return _Client(target)


class ProviderPlugin:
    """A plugin object registering the given providers."""

    def __init__(self, *providers: AnalysisProvider) -> None:
        self.providers = providers

    @hookimpl
    def rea_register_analysis_providers(self, register: Any) -> None:
        for p in self.providers:
            register(p)
