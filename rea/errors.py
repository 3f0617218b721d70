"""The one canonical error type and its closed set of codes and categories."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Final
from typing import Literal

import msgspec

from rea.fsnames import shown
from rea.records import JSONObject
from rea.records import JSONValue

Category = Literal[
    "invalid_input",
    "unsupported_provider",
    "unsupported_target",
    "integrity_mismatch",
    "truncated",
    "cancelled",
    "timeout",
    "resource_constraint",
    "unavailable",
    "execution_failure",
]

# code -> (category, retryable). Closed set: an unknown code is a programming error.
CODES: Final[dict[str, tuple[Category, bool]]] = {
    "invalid_request": ("invalid_input", True),
    "access_denied": ("unavailable", False),
    "artifact_changed": ("unavailable", True),
    "unreadable_output": ("execution_failure", False),
    "capability_unavailable": ("unsupported_provider", False),
    "unsupported_target": ("unsupported_target", False),
    "provider_unavailable": ("unavailable", True),
    "provider_timeout": ("timeout", True),
    "resource_constraint": ("resource_constraint", False),
    "cancelled": ("cancelled", True),
    "artifact_integrity_mismatch": ("integrity_mismatch", False),
    "artifact_operation_failed": ("execution_failure", False),
    "evidence_integrity_mismatch": ("integrity_mismatch", False),
    "truncated": ("truncated", False),
    "process_capture_failed": ("execution_failure", False),
    "cleanup_incomplete": ("execution_failure", False),
    "revision_conflict": ("invalid_input", True),
    "configuration_invalid": ("invalid_input", False),
    "target_unavailable": ("unavailable", False),
    "execution_failure": ("execution_failure", False),
}

IssueReason = Literal[
    "unknown_argument", "missing_argument", "invalid_type", "out_of_range", "invalid_value", "invalid_format"
]


class Remediation(msgspec.Struct, frozen=True, kw_only=True):
    action: str


class ErrorProjection(msgspec.Struct, frozen=True, kw_only=True):
    """What callers see of an error, at MCP and at the CLI alike."""

    code: str
    category: Category
    message: str
    retryable: bool
    remediation: Remediation
    # Facts about this failure, by code: open JSON (a path, a limit, a list of issues), not one shape.
    details: dict[str, JSONValue]


class ReaError(Exception):
    """Every failure rea reports: a code from the closed set, a message, a remediation, details."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        remediation: str = "",
        details: Mapping[str, JSONValue] | None = None,
        cleanup_remaining: list[str] | None = None,
    ) -> None:
        if code not in CODES:
            raise ValueError(f"unknown error code {code!r}")
        # A message or detail naming a file whose name is not UTF-8 is still sent: its bytes are shown escaped.
        message = shown(message)
        super().__init__(message)
        self.code = code
        self.message = message
        self.remediation = remediation or _DEFAULT_REMEDIATION.get(code, "Read details and retry.")
        self.details: dict[str, JSONValue] = {
            k: shown(v) if isinstance(v, str) else v for k, v in (details or {}).items()
        }
        self.cleanup_remaining = cleanup_remaining

    @property
    def category(self) -> Category:
        return CODES[self.code][0]

    @property
    def retryable(self) -> bool:
        return CODES[self.code][1]

    def with_cleanup_incomplete(self, resources: list[str], reason: str) -> ReaError:
        """Owned resources left behind turn any error into ``cleanup_incomplete``."""
        err = ReaError(
            "cleanup_incomplete",
            f"{self.message} (owned resources remain: {', '.join(resources)})",
            remediation="Release the listed owned resources before retrying; rea never removes what it does not own.",
            details={
                "cleanup": "incomplete",
                "resources": sorted(resources),
                "cleanup_reason": reason,
                "execution_failure": self.projection_dict(),
            },
        )
        return err

    def projection(self) -> ErrorProjection:
        return ErrorProjection(
            code=self.code,
            category=self.category,
            message=self.message,
            retryable=self.retryable,
            remediation=Remediation(action=self.remediation),
            details=self.details,
        )

    def projection_dict(self) -> JSONObject:
        result: JSONObject = msgspec.to_builtins(self.projection())
        return result

    def __repr__(self) -> str:
        return f"ReaError({self.code!r}, {self.message!r})"


_DEFAULT_REMEDIATION: Final[dict[str, str]] = {
    "invalid_request": "Correct the arguments listed in details.issues and call again.",
    "access_denied": "Grant read permission on the target or choose a readable file.",
    "capability_unavailable": (
        "Call binary_session and pick a tool whose availability is true, or bind a provider that has it."
    ),
    "unsupported_target": "Choose a target in one of the formats the operation supports.",
    "provider_unavailable": "Run `rea doctor` and install or configure the provider it names.",
    "provider_timeout": "Retry with a smaller request or a longer deadline.",
    "resource_constraint": "Narrow the request (page, filters) or export the retained Evidence.",
    "cancelled": "Call again when the work is still wanted.",
    "truncated": "Request a smaller page or raise the named limit.",
    "target_unavailable": "Open a target with open_binary first, or check the path.",
    "configuration_invalid": "Correct the settings listed in details.settings and restart.",
    "evidence_integrity_mismatch": "Regenerate the Evidence with its producer; edited records are never accepted.",
}


def invalid_request(message: str, issues: Sequence[Mapping[str, JSONValue]]) -> ReaError:
    """An ``invalid_request`` error with ``details.issues``."""
    return ReaError("invalid_request", message, details={"issues": issues})


def issue(path: str, reason: IssueReason, message: str, **extra: JSONValue) -> dict[str, JSONValue]:
    """One entry of ``details.issues``."""
    out: dict[str, JSONValue] = {"path": path, "reason": reason, "message": message}
    out.update(extra)
    return out


def configuration_invalid(setting: str, constraint: str, value: str | None = None) -> ReaError:
    """A setting (usually an environment variable) failed validation."""
    shown = "" if value is None else f" (got {value!r})"
    return ReaError(
        "configuration_invalid",
        f"{setting} must be {constraint}{shown}",
        remediation=f"Set {setting} to {constraint}, or unset it, and restart.",
        details={"settings": [{"setting": setting, "constraint": constraint}]},
    )


def cancelled(phase: str = "") -> ReaError:
    """The caller cancelled; distinct from a timeout."""
    suffix = f" during {phase}" if phase else ""
    return ReaError("cancelled", f"cancelled{suffix}", details={"phase": phase} if phase else {})
