"""Server settings read once at startup from the environment, validated strictly."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Literal

import msgspec

from rea.errors import configuration_invalid

DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024
ENVELOPE_RESERVE_BYTES = 1024
MAX_SAFE_INTEGER = 2**53 - 1
COMPACT_INPUT_SCHEMA_BUDGET_BYTES = 13 * 1024

SchemaProfile = Literal["full", "compact"]


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    input_schema_profile: str = "full"

    @property
    def response_budget(self) -> int:
        """Bytes available to one result, after the JSON-RPC envelope reserve."""
        return self.max_response_bytes - ENVELOPE_RESERVE_BYTES


def _max_response_bytes(env: Mapping[str, str]) -> int:
    raw = env.get("REA_MCP_MAX_RESPONSE_BYTES")
    if raw is None:
        return DEFAULT_MAX_RESPONSE_BYTES
    constraint = f"a decimal integer from {DEFAULT_MAX_RESPONSE_BYTES} to {MAX_SAFE_INTEGER}"
    if not re.fullmatch(r"[1-9][0-9]*", raw):
        raise configuration_invalid("REA_MCP_MAX_RESPONSE_BYTES", constraint, raw)
    value = int(raw)
    if not DEFAULT_MAX_RESPONSE_BYTES <= value <= MAX_SAFE_INTEGER:
        raise configuration_invalid("REA_MCP_MAX_RESPONSE_BYTES", constraint, raw)
    return value


def load_settings(env: Mapping[str, str] | None = None, projections: tuple[str, ...] = ("full", "compact")) -> Settings:
    """Validate every setting; the first invalid one raises ``configuration_invalid``."""
    env = os.environ if env is None else env
    profile = env.get("REA_MCP_INPUT_SCHEMA_PROFILE", "full")
    if profile not in projections:
        raise configuration_invalid("REA_MCP_INPUT_SCHEMA_PROFILE", "one of " + ", ".join(sorted(projections)),
                                    profile)
    return Settings(max_response_bytes=_max_response_bytes(env), input_schema_profile=profile)
