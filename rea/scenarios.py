"""The scenario-driver plugin kind: drivers that run and observe browsers and processes."""

from __future__ import annotations

import abc
from typing import Literal

import msgspec

from rea.arguments import Arguments
from rea.context import CallContext
from rea.providers import Availability
from rea.records import JSONObject


class ScenarioDriverDescriptor(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str
    version: str
    surface: Literal["process", "browser", "electron"]
    description: str = ""


class ScenarioDriver(abc.ABC):
    """Runs one bounded scenario and returns its observation; owns and cleans what it starts."""

    descriptor: ScenarioDriverDescriptor

    @abc.abstractmethod
    def availability(self) -> Availability:
        """Host check: side-effect free."""

    @abc.abstractmethod
    def run(self, request: Arguments, ctx: CallContext) -> JSONObject:
        """Run the scenario described by ``request`` (the tool's arguments); the report is the driver's JSON."""
