"""Session lifecycle tools: open_binary, close_binary, enable_toolsets (binary_session is the discovery plugin's)."""

from __future__ import annotations

import os
import re

import msgspec

from rea.plugin import TOOLSET_ALIASES
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import arg_bool
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import not_advertised

# Input-schema fragments are JSON Schema documents (JSONObject: JSON Schema's vocabulary, not rea records).
PROVIDER_CHOICE_SCHEMA: JSONObject = {
    "type": "string",
    "description": "A provider id from binary_session's candidates, or 'auto'.",
    "pattern": "^(auto|[a-z][a-z0-9-]{0,63})$",
    "examples": ["auto", "native"],
}


class OpenedLibrary(Record):
    name: str
    path: str
    rule: str | None
    target_id: str | None
    # The alias it was opened under; none when it was open already.
    alias: str | None = None


class MissingLibrary(Record):
    name: str
    searched: list[str]


class SkippedLibrary(Record):
    name: str
    path: str
    reason: str


class Dependencies(Record):
    opened: list[OpenedLibrary]
    not_found: list[MissingLibrary]
    skipped: list[SkippedLibrary]


class RunRef(Record):
    run_id: str | None


class Opened(Record):
    """open_binary's answer. The target, the binding and the previous target's cleanup are the kernel's records,
    carried as the JSON it gives them."""

    target_id: str | None
    alias: str | None = None
    target: JSONObject
    analysis_provider_binding: JSONObject
    analysis_run: RunRef
    retained_evidence_count: int
    # Present when this open replaced a target: closing it is part of the transition.
    previous_target_cleanup: JSONObject | None = None
    dependencies: Dependencies | None = None


class Closed(Record):
    closed: bool
    # The target closed, when the call named one.
    target_id: str | None = None
    cleared_evidence_count: int
    cleanup: str


class Toolsets(Record):
    enabled: list[str]
    added: list[str]
    available: list[str]
    next: str | None = None


def _answer(record: Record) -> JSONObject:
    """A session tool's answer as the kernel takes an answer without Evidence: a JSON object."""
    out: JSONObject = msgspec.to_builtins(record)
    return out


def _open_binary(call: ToolCall) -> JSONObject:
    from rea.plugin import binding_report
    from rea.plugin import of_session

    session = call.session
    alias = arg_str(call.args, "alias")
    session.open(arg_str(call.args, "path", ""), arg_str(call.args, "provider_id"), call.ctx, alias)  # path: required
    target = session.require_target()
    assert session.binding is not None
    dependencies = _open_dependencies(call) if arg_bool(call.args, "with_dependencies") else None
    # The binding names the provenance id its lean records carry (rea.presentation); the lean presentation gives
    # the profile by digest and leaves the selection sentence to binary_session.
    binding = binding_report(session.subject_for(target), session.binding, of_session(session))
    return _answer(
        Opened(
            target_id=session.target_id,
            alias=alias or None,
            target=target.record(),
            analysis_provider_binding=msgspec.to_builtins(binding),
            analysis_run=RunRef(run_id=session.run_id),
            retained_evidence_count=len(session.ledger),
            previous_target_cleanup=session.previous_cleanup or None,
            dependencies=dependencies,
        )
    )


_ALIAS_CHARS = re.compile(r"[^A-Za-z0-9_.-]")


def _dependency_alias(name: str, taken: set[str]) -> str:
    """An alias for a library from its file name (libstdc++.so.6 -> libstdc__.so.6), unique in the session."""
    base = _ALIAS_CHARS.sub("_", os.path.basename(name))[:60] or "library"
    base = base if base[0].isalpha() or base[0] == "_" else "_" + base
    alias, n = base, 1
    while alias in taken:
        n += 1
        alias = f"{base[:58]}-{n}"
    return alias


def _open_dependencies(call: ToolCall) -> Dependencies:
    """Open the active target's needed libraries beside it, from where its loader would load them; the program
    stays the active target. Each library is reported opened, not found (with the folders searched) or skipped."""
    from rea.plugin import resolve_dependencies

    session = call.session
    program = session.require_target()
    program_id = session.target_id
    assert program_id is not None
    if not session.supports("binary_layout"):
        raise ReaError(
            "capability_unavailable",
            "the provider bound to this target does not report the libraries it needs",
            remediation="Open the binary on native (provider_id native) to open its dependencies.",
            details={"operation": "binary_layout"},
        )
    linkage = session.execute("binary_layout", {}, call.ctx).normalized.get("linkage") or {}
    found = resolve_dependencies(program.resolved_path, program.format, linkage)
    opened: list[OpenedLibrary] = []
    not_found: list[MissingLibrary] = []
    skipped: list[SkippedLibrary] = []
    from rea.plugin import MAX_OPEN_TARGETS

    limit = int(MAX_OPEN_TARGETS.read())
    try:
        for lib in found:
            call.ctx.check("opening dependencies")
            if lib.path is None:
                not_found.append(MissingLibrary(name=lib.name, searched=list(lib.searched)))
                continue
            already = next(
                (t for t in session.open_targets() if t.target is not None and t.target.resolved_path == lib.path), None
            )
            if already is not None:
                opened.append(OpenedLibrary(name=lib.name, path=lib.path, rule=lib.rule, target_id=already.target_id))
                continue
            if len(session.open_targets()) >= limit:
                skipped.append(SkippedLibrary(name=lib.name, path=lib.path, reason=f"{MAX_OPEN_TARGETS.name}={limit}"))
                continue
            alias = _dependency_alias(lib.name, {t.alias for t in session.open_targets() if t.alias})
            call.ctx.progress(f"opening {lib.name}")
            try:
                session.open(lib.path, None, call.ctx, alias)
            except ReaError as exc:
                skipped.append(SkippedLibrary(name=lib.name, path=lib.path, reason=exc.code))
                continue
            opened.append(
                OpenedLibrary(name=lib.name, path=lib.path, rule=lib.rule, target_id=session.target_id, alias=alias)
            )
    finally:
        session.activate(program_id)
    return Dependencies(opened=opened, not_found=not_found, skipped=skipped)


def _close_binary(call: ToolCall) -> JSONObject:
    session = call.session
    chosen = arg_str(call.args, "target")
    if chosen is not None:
        closed = session.find(chosen).target_id
        remaining = session.close(target=chosen)
        if not remaining:
            return _answer(Closed(closed=True, target_id=closed, cleared_evidence_count=0, cleanup="complete"))
    else:
        had_target = session.target is not None
        cleared = len(session.ledger)
        remaining = session.close()
    if remaining:
        raise ReaError(
            "cleanup_incomplete",
            "close_binary could not release every owned resource",
            remediation="Release the listed owned resources; rea never removes what it does not own.",
            details={"cleanup": "incomplete", "resources": sorted(remaining)},
        )
    return _answer(Closed(closed=had_target, cleared_evidence_count=cleared, cleanup="complete"))


def _enable_toolsets(call: ToolCall) -> JSONObject:
    session = call.session
    available = list(session.registry.toolsets())
    wanted = [TOOLSET_ALIASES.get(t, t) for t in arg_strs(call.args, "toolsets") or []]  # required by the schema
    unknown = [t for t in wanted if t not in available]
    if unknown:
        raise invalid_request(
            f"no toolset is named {unknown[0]!r}",
            [issue("toolsets", "invalid_value", "toolsets: " + ", ".join(available))],
        )
    # Outside a server (the CLI) every tool is callable: there is no list to extend.
    settings = session.connection.settings
    if settings is None:
        return _answer(Toolsets(enabled=available, added=[], available=available))
    # The connection's list, extended in place: the server lists what it holds.
    enabled = settings.toolsets.enabled
    refused = [t for t in wanted if t not in enabled and not settings.toolsets.on_demand]
    if refused:
        raise not_advertised(refused[0], enabled, path="toolsets")
    added = [t for t in wanted if t not in enabled]
    enabled.extend(added)
    return _answer(
        Toolsets(
            enabled=[t for t in available if t in enabled],
            added=added,
            available=available,
            # The server sends notifications/tools/list_changed; a client that ignores it sees them on its next list.
            next="tools/list now includes their tools" if added else None,
        )
    )


ENABLE_TOOLSETS = ToolDef(
    name="enable_toolsets",
    family="session",
    description=(
        "Add toolsets to this connection's tools/list: managed (.NET), android, javascript, browser, dynamic "
        "(programs run or observed), navigation (the cursor), investigation and corpus are listed on demand. "
        "A client that ignores list changes reaches them through search_tools and call_tool_by_name instead."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "toolsets": {
                "type": "array",
                "items": {"type": "string", "pattern": "^[a-z][a-z0-9_-]{0,63}$"},
                "minItems": 1,
                "maxItems": 32,
                "description": "Toolset names, as binary_session.settings.toolsets.available lists them.",
            }
        },
        "required": ["toolsets"],
        "additionalProperties": False,
    },
    output_schema={"type": "object"},
    effects=ToolEffects(records_evidence=False, mutates_session=True, idempotent=True),
    examples=({"toolsets": ["managed"]},),
    handler=_enable_toolsets,
)


ALIAS_SCHEMA: JSONObject = {
    "type": "string",
    "pattern": "^[A-Za-z_][A-Za-z0-9_.-]{0,63}$",
    "description": "Open beside the other targets under this name (without one, the active target is replaced).",
}


OPEN_BINARY = ToolDef(
    name="open_binary",
    # Opening binds the provider, whose whole-program analysis (angr's CFG, Ghidra's import) can take minutes.
    task_support="optional",
    family="session",
    description=(
        "Open a local binary (ELF, PE, Mach-O), bind an analysis provider and make it the active target. "
        "provider_id is a concrete id or 'auto' (default: REA_ANALYSIS_PROVIDER, then auto), with alias the "
        "binary opens beside the others and every target-bound tool then takes target (a target_id or alias), "
        "and retained Evidence is kept while a new analysis_run.run_id is allocated before the provider starts."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "Path of the target file.",
                "examples": ["/bin/ls"],
            },
            "provider_id": PROVIDER_CHOICE_SCHEMA,
            "alias": ALIAS_SCHEMA,
            "with_dependencies": {
                "type": "boolean",
                "description": "Also open the libraries it needs, from where its loader would load them (reported).",
                "examples": [True],
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    output_schema={"type": "object"},
    effects=ToolEffects(records_evidence=False, mutates_session=True, idempotent=False),
    examples=({"path": "/bin/ls"}, {"path": "/bin/ls", "provider_id": "auto"}),
    cli_subject="path",
    handler=_open_binary,
)

CLOSE_BINARY = ToolDef(
    name="close_binary",
    family="session",
    description=(
        "Close every target: drains owned work, closes the providers, clears retained Evidence (export a "
        "bundle first if the records are still needed). With target, close only that one and keep the records."
    ),
    input_schema={
        "type": "object",
        "properties": {"target": {"type": "string", "minLength": 1, "description": "A target_id or alias."}},
        "additionalProperties": False,
    },
    output_schema={"type": "object"},
    effects=ToolEffects(records_evidence=False, mutates_session=True, may_discard_data=True, idempotent=False),
    examples=({},),
    handler=_close_binary,
)


# The order the plugin registers them in.
TOOLS = (OPEN_BINARY, CLOSE_BINARY, ENABLE_TOOLSETS)
