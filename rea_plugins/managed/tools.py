"""The managed (.NET) tool family, declared as ToolDef values (handlers import dnfile and dncil lazily)."""

from __future__ import annotations

from rea.plugin import Evidence, ToolCall, ToolDef, ToolEffects, retained_reference
from rea_plugins.managed import schemas
from rea_plugins.managed.model import (
    ArtifactResult,
    BoundariesResult,
    CompareResult,
    GraphResult,
    MembersResult,
    MethodView,
    ReconstructionResult,
    ReferencesResult,
    StringsResult,
    VerifyResult,
)

STATIC_FAMILY = "managed"
WORKFLOW_FAMILY = "application"
EFFECTS = ToolEffects(records_evidence=True)
RETAINED = schemas.EXAMPLE_ID
OTHER = "ev_" + "1" * 64


def _artifact(call: ToolCall) -> Evidence:
    from rea_plugins.managed import artifact

    return artifact.handle(call)


def _members(call: ToolCall) -> Evidence:
    from rea_plugins.managed import members

    return members.handle(call)


def _boundaries(call: ToolCall) -> Evidence:
    from rea_plugins.managed import boundaries

    return boundaries.handle(call)


def _compare(call: ToolCall) -> Evidence:
    from rea_plugins.managed import compare

    return compare.handle(call)


def _verify(call: ToolCall) -> Evidence:
    from rea_plugins.managed import verify

    return verify.handle(call)


def _graph(call: ToolCall) -> Evidence:
    from rea_plugins.managed import appgraph

    return appgraph.handle(call)


def _strings(call: ToolCall) -> Evidence:
    from rea_plugins.managed import strings

    return strings.handle(call)


def _references(call: ToolCall) -> Evidence:
    from rea_plugins.managed import references

    return references.handle(call)


def _method(call: ToolCall) -> Evidence:
    from rea_plugins.managed import method

    return method.handle(call)


def _reconstruction(call: ToolCall) -> Evidence:
    from rea_plugins.managed import reconstruction

    return reconstruction.handle(call)


# Descriptions are one sentence on what the tool is for (hosts send them with every request): docs/managed.md
# says how each answers.
INSPECT_ARTIFACT = ToolDef(
    name="inspect_managed_artifact",
    family=STATIC_FAMILY,
    description="Identity, references, resources and attributes of a .NET assembly.",
    input_schema=schemas.ARTIFACT,
    result_type=ArtifactResult,
    handler=_artifact,
    effects=EFFECTS,
    cli_subject="path",
    examples=({"path": "/opt/app/App.dll"}, {"path": "/opt/app/App.dll", "resource_limit": 10}),
)

INSPECT_MEMBERS = ToolDef(
    name="inspect_managed_members",
    family=STATIC_FAMILY,
    description=(
        "Types, fields, methods, IL hashes and call edges of a .NET assembly, each list paged and narrowed by "
        "name (pattern, substring or RE2) and namespace prefix."
    ),
    input_schema=schemas.MEMBERS,
    result_type=MembersResult,
    handler=_members,
    effects=EFFECTS,
    cli_subject="path",
    examples=(
        {"path": "/opt/app/App.dll"},
        {"path": "/opt/app/App.dll", "namespace": "App.Net", "pattern": "Login"},
        {"path": "/opt/app/App.dll", "pattern": "::(Get|Set)Token\\(", "mode": "regex", "type_limit": 0},
        {"path": "/opt/app/App.dll", "method_offset": 50, "instruction_anchor_limit": 16},
    ),
)

SEARCH_STRINGS = ToolDef(
    name="search_managed_strings",
    family=STATIC_FAMILY,
    description=(
        "Find string literals (#US heap) of a .NET assembly by substring or RE2 pattern, each with the methods "
        "whose ldstr loads it; paged."
    ),
    input_schema=schemas.STRINGS,
    result_type=StringsResult,
    handler=_strings,
    effects=EFFECTS,
    cli_subject="path",
    examples=(
        {"path": "/opt/app/App.dll", "pattern": "password"},
        {"path": "/opt/app/App.dll", "pattern": "^https?://", "mode": "regex"},
    ),
)

REFERENCES_TO = ToolDef(
    name="managed_references_to",
    family=STATIC_FAMILY,
    description=(
        "Which methods call, construct, read, write or name a member or type of a .NET assembly (from the IL); "
        "paged, with counts by kind."
    ),
    input_schema=schemas.REFERENCES,
    result_type=ReferencesResult,
    handler=_references,
    effects=EFFECTS,
    cli_subject="path",
    examples=(
        {"path": "/opt/app/App.dll", "name": "App.Net.Client::Login(string, string)"},
        {"path": "/opt/app/App.dll", "name": "App.Settings::Token", "kinds": ["write"]},
        {"path": "/opt/app/App.dll", "name": "System.Net.Http.HttpClient"},
        {"path": "/opt/app/App.dll", "name": "Crypt", "mode": "literal"},
    ),
)

INSPECT_METHOD = ToolDef(
    name="inspect_managed_method",
    family=STATIC_FAMILY,
    description=(
        "One .NET method as readable IL: signature, locals, exception regions, each operand named (no C# "
        "decompiler runs here, and the result says so)."
    ),
    input_schema=schemas.METHOD,
    result_type=MethodView,
    handler=_method,
    effects=EFFECTS,
    cli_subject="path",
    examples=(
        {"path": "/opt/app/App.dll", "method": "App.Net.Client::Login(string, string)"},
        {"path": "/opt/app/App.dll", "method": "0x06000012"},
    ),
)

INSPECT_BOUNDARIES = ToolDef(
    name="inspect_managed_native_boundaries",
    family=STATIC_FAMILY,
    description="P/Invoke and other native-code crossings of a .NET assembly.",
    input_schema=schemas.BOUNDARIES,
    result_type=BoundariesResult,
    handler=_boundaries,
    effects=EFFECTS,
    cli_subject="path",
    examples=({"path": "/opt/app/App.dll"},),
)

COMPARE_MEMBERS = ToolDef(
    name="compare_managed_members",
    task_support="optional",
    family=WORKFLOW_FAMILY,
    toolset=STATIC_FAMILY,
    description=(
        "What changed between two .NET builds: members added, removed and changed, matched by signature, with "
        "token-only renumbering set apart; paged."
    ),
    input_schema=schemas.COMPARE,
    result_type=CompareResult,
    handler=_compare,
    effects=EFFECTS,
    examples=(
        {"left_path": "/opt/app-1.0/App.dll", "right_path": "/opt/app-1.1/App.dll"},
        {"left_evidence_id": retained_reference(RETAINED), "right_evidence_id": retained_reference(OTHER)},
    ),
)

VERIFY_BOUNDARIES = ToolDef(
    name="verify_managed_native_boundaries",
    family=WORKFLOW_FAMILY,
    toolset=STATIC_FAMILY,
    description="Check P/Invoke imports against native library Evidence.",
    input_schema=schemas.VERIFY,
    result_type=VerifyResult,
    handler=_verify,
    effects=EFFECTS,
    examples=(
        {
            "managed_boundaries_evidence_id": retained_reference(RETAINED),
            "native_observation_evidence_ids": [retained_reference(OTHER)],
        },
    ),
)

PROJECT_GRAPH = ToolDef(
    name="project_managed_application_graph",
    family=WORKFLOW_FAMILY,
    toolset=STATIC_FAMILY,
    description="Assemblies and native libraries of a .NET app folder, as a graph.",
    input_schema=schemas.GRAPH,
    result_type=GraphResult,
    handler=_graph,
    effects=EFFECTS,
    cli_subject="application_path",
    examples=({"application_path": "/opt/app"}, {"application_path": "/opt/app", "main_assembly": "App.exe"}),
)

IMPORT_RECONSTRUCTION = ToolDef(
    name="import_managed_reconstruction",
    family=WORKFLOW_FAMILY,
    toolset=STATIC_FAMILY,
    description="Record a decompiler's C# for .NET methods as Evidence.",
    input_schema=schemas.RECONSTRUCTION,
    result_type=ReconstructionResult,
    handler=_reconstruction,
    effects=EFFECTS,
    examples=(
        {
            "static_members_evidence_id": retained_reference(RETAINED),
            "decompiler": {"name": "ILSpy", "version": "9.0"},
            "methods": [{"method_token": "0x06000001", "csharp": "public int Add(int a, int b) => a + b;"}],
        },
    ),
)

TOOLS = (
    INSPECT_ARTIFACT,
    INSPECT_MEMBERS,
    SEARCH_STRINGS,
    REFERENCES_TO,
    INSPECT_METHOD,
    INSPECT_BOUNDARIES,
    COMPARE_MEMBERS,
    VERIFY_BOUNDARIES,
    PROJECT_GRAPH,
    IMPORT_RECONSTRUCTION,
)
