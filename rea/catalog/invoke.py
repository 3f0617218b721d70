"""Run a tool: canonical validation, availability, the handler, and Evidence recording."""

from __future__ import annotations

import itertools
from typing import Any

import msgspec

from rea.arguments import Arguments
from rea.catalog.schemas import describe_groups
from rea.catalog.schemas import flatten_root_union
from rea.catalog.schemas import root_groups
from rea.catalog.tool import NEGOTIATED_FEATURES
from rea.catalog.tool import ToolCall
from rea.catalog.tool import ToolDef
from rea.context import CallContext
from rea.errors import IssueReason
from rea.errors import ReaError
from rea.evidence import Evidence
from rea.records import JSONObject
from rea.records import JSONValue
from rea.selection import alternatives_remediation
from rea.session import Session

_VALIDATORS: dict[int, Any] = {}

_REASONS: dict[str, IssueReason] = {
    "additionalProperties": "unknown_argument",
    "unevaluatedProperties": "unknown_argument",
    "required": "missing_argument",
    "dependentRequired": "missing_argument",
    "type": "invalid_type",
    "minimum": "out_of_range",
    "maximum": "out_of_range",
    "exclusiveMinimum": "out_of_range",
    "exclusiveMaximum": "out_of_range",
    "minLength": "out_of_range",
    "maxLength": "out_of_range",
    "minItems": "out_of_range",
    "maxItems": "out_of_range",
    "pattern": "invalid_format",
    "format": "invalid_format",
}


def validator_for(schema: JSONObject) -> Any:
    """A cached canonical (draft 2020-12) validator; jsonschema is imported on first use."""
    import jsonschema

    key = id(schema)
    v = _VALIDATORS.get(key)
    if v is None:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        v = cls(schema, format_checker=cls.FORMAT_CHECKER)
        _VALIDATORS[key] = v
    return v


def _path(err: Any) -> str:
    parts = [str(p) for p in err.absolute_path]
    if err.validator in ("additionalProperties", "unevaluatedProperties") and isinstance(err.instance, dict):
        allowed = set((err.schema or {}).get("properties", {}))
        extra = sorted(k for k in err.instance if k not in allowed)
        if extra:
            parts.append(extra[0])
    if err.validator == "required":
        missing = str(err.message).split("'")
        if len(missing) > 1:
            parts.append(missing[1])
    return "/".join(parts) or "(root)"


def validation_issues(schema: JSONObject, args: JSONValue) -> list[dict[str, str]]:
    """Every way ``args`` breaks the canonical schema, as ``details.issues`` entries.

    Arguments the quick check (``rea.catalog.fastcheck``) proves valid have none, and jsonschema is not imported
    for them; every other answer, and every issue, is jsonschema's."""
    from rea.catalog import fastcheck

    if fastcheck.check(schema, args) == fastcheck.VALID:
        return []
    import jsonschema

    def best(err: Any) -> Any:
        # A failed union: report the branch that got furthest.
        return (jsonschema.exceptions.best_match(err.context) or err) if err.context else err

    errors = sorted(
        validator_for(schema).iter_errors(args), key=lambda e: (list(map(str, e.absolute_path)), str(e.message))
    )
    # Entries of details.issues (rea.errors.issue): path, reason and message, all strings.
    return [
        {
            "path": _path(found),
            "reason": _REASONS.get(str(found.validator), "invalid_value"),
            "message": found.message if len(found.message) <= 300 else found.message[:297] + "...",
        }
        for found in map(best, itertools.islice(errors, 20))
    ]


def resolve_paths(tool: ToolDef, args: Arguments) -> Arguments:
    from rea.paths import path_fields
    from rea.paths import resolve_arguments

    fields = path_fields(flatten_root_union(tool.input_schema), tool.path_arguments)
    return resolve_arguments(args, fields) if fields else args


def validate_args(tool: ToolDef, args: JSONValue) -> Arguments:
    if not isinstance(args, dict):
        raise ReaError(
            "invalid_request",
            f"{tool.name} arguments must be a JSON object",
            details={"issues": [{"path": "(root)", "reason": "invalid_type", "message": "expected object"}]},
        )
    issues = validation_issues(tool.input_schema, args)
    if not issues:
        return args
    groups = root_groups(tool.input_schema)
    # A failed root union (a whole group missing): say which argument groups the tool accepts, not one branch's
    # complaint.
    if groups and any(
        i["path"] == "(root)" or (i["reason"] == "missing_argument" and "/" not in str(i["path"])) for i in issues
    ):
        raise ReaError(
            "invalid_request",
            f"invalid arguments for {tool.name}: the arguments match none of the accepted input groups "
            f"(exactly one): {describe_groups(tool.input_schema)}",
            details={
                "issues": issues,
                "tool": tool.name,
                "accepted_groups": [{"title": t, "required": r} for t, r in groups],
            },
        )
    raise ReaError(
        "invalid_request",
        f"invalid arguments for {tool.name}: {issues[0]['message']}",
        details={"issues": issues, "tool": tool.name},
    )


class ToolResult(msgspec.Struct, kw_only=True):
    """A successful result: Evidence (also recorded) or a plain structured object."""

    evidence: Evidence | None = None
    # A session tool's plain object (Handler).
    structured: JSONObject | None = None


def check_available(tool: ToolDef, session: Session) -> None:
    if session.connection.client_features is not None:
        negotiated = set(session.connection.client_features)
        lacking = [f for f in tool.client_features_required if f in NEGOTIATED_FEATURES and f not in negotiated]
        if lacking:
            raise ReaError(
                "capability_unavailable",
                f"{tool.name} needs the client feature {', '.join(lacking)}, which this client did not negotiate",
                remediation=f"Use a client that supports {', '.join(lacking)}.",
                details={"tool": tool.name, "reason": "client_capability_missing", "missing": lacking},
            )
    if tool.requires_target and session.target is None:
        raise ReaError(
            "target_unavailable",
            f"{tool.name} needs an open target",
            remediation="Call open_binary with a path first.",
            details={"reason": "target_required", "tool": tool.name},
        )
    missing = [op for op in tool.requires_operations if not session.supports(op)]
    if missing and session.provider is not None:
        bound = session.provider.descriptor.id
        remediation, alternatives = alternatives_remediation(
            session.registry, tool.requires_operations, session.target, exclude=bound
        )
        raise ReaError(
            "capability_unavailable",
            f"{tool.name} needs {', '.join(missing)}, which provider {bound} does not offer",
            remediation=remediation,
            details={"tool": tool.name, "missing_operations": missing, **alternatives},
        )


def chosen_target(tool: ToolDef, args: JSONValue) -> tuple[JSONValue, str | None]:
    """``args`` without ``target``, and the target it names, for a tool bound to a target (others keep it)."""
    if not tool.requires_target or not isinstance(args, dict) or "target" not in args:
        return args, None
    rest = {k: v for k, v in args.items() if k != "target"}
    ref = args["target"]
    if not isinstance(ref, str) or not ref:
        raise ReaError(
            "invalid_request",
            f"invalid arguments for {tool.name}: target must be a target_id or alias",
            details={
                "issues": [{"path": "target", "reason": "invalid_type", "message": "expected a non-empty string"}]
            },
        )
    return rest, ref


def invoke(session: Session, tool: ToolDef, args: JSONValue, ctx: CallContext) -> ToolResult:
    """Validate, check availability, run the handler (on the target the call names) and record its Evidence."""
    args, target = chosen_target(tool, args)
    valid = resolve_paths(tool, validate_args(tool, args))
    with session.using(target):
        return _run(session, tool, valid, ctx)


def _run(session: Session, tool: ToolDef, valid: Arguments, ctx: CallContext) -> ToolResult:
    check_available(tool, session)
    ctx.check(tool.name)
    call = ToolCall(tool, valid, session, ctx)
    try:
        out = tool.handler(call)
    except ReaError:
        raise
    except RecursionError:
        raise ReaError(
            "resource_constraint",
            f"{tool.name}: input nesting is too deep",
            details={"resource": "memory", "tool": tool.name},
        ) from None
    except MemoryError:
        raise ReaError(
            "resource_constraint", f"{tool.name}: out of memory", details={"resource": "memory", "tool": tool.name}
        ) from None
    except Exception as exc:
        # The message never names a Python exception class: an internal error is stated plainly.
        raise ReaError(
            "execution_failure",
            f"{tool.name} failed (an internal error)",
            remediation="Retry the call; report it if it persists.",
            details={"tool": tool.name},
        ) from exc
    # Cancelled work never records Evidence, even when the handler finished; its side effects are undone.
    if isinstance(out, Evidence):
        evidence = out
        if not ctx.signal.commit(lambda: session.ledger.record(evidence)):
            _abandon(call)
            ctx.check(tool.name)
        return ToolResult(evidence=out)
    if ctx.cancelled:
        _abandon(call)
        ctx.check(tool.name)
    return ToolResult(structured=out)


def _abandon(call: ToolCall) -> None:
    for callback in call.abandon_callbacks:
        try:
            callback()
        except Exception:  # one failing undo must not stop the others
            pass
