"""The schema-projection plugin kind: how a tool's canonical input schema is advertised to clients."""

from __future__ import annotations

import abc

import msgspec

from rea.records import JSONObject


class ProjectionDescriptor(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    description: str


class Projection(abc.ABC):
    """Turns a canonical input schema into the advertised one; validation stays canonical."""

    descriptor: ProjectionDescriptor

    @abc.abstractmethod
    def project(self, tool_name: str, schema: JSONObject) -> JSONObject:
        """Return the advertised input schema for ``tool_name`` (both JSON Schema documents, not rea records)."""
