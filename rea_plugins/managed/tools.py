"""The managed (.NET) tool family, declared as ToolDef values (handlers import dnfile and dncil lazily)."""

from __future__ import annotations

from typing import Literal

from rea.plugin import Arguments
from rea.plugin import JSONObject
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import lazy_handler
from rea.plugin import retained_reference
from rea_plugins.managed import schemas
from rea_plugins.managed.model import ArtifactResult
from rea_plugins.managed.model import BoundariesResult
from rea_plugins.managed.model import CompareResult
from rea_plugins.managed.model import GraphResult
from rea_plugins.managed.model import MembersResult
from rea_plugins.managed.model import MethodView
from rea_plugins.managed.model import ReconstructionResult
from rea_plugins.managed.model import ReferencesResult
from rea_plugins.managed.model import StringsResult
from rea_plugins.managed.model import VerifyResult

STATIC_FAMILY = "managed"
WORKFLOW_FAMILY = "application"
EFFECTS = ToolEffects(records_evidence=True)
RETAINED = schemas.EXAMPLE_ID
OTHER = "ev_" + "1" * 64


def _tool(
    module: str,
    name: str,
    result_type: type,
    description: str,
    input_schema: JSONObject,
    *,
    # Arguments as a call sends them: JSON the input schema shapes.
    examples: tuple[Arguments, ...],
    workflow: bool = False,
    cli_subject: str = "path",
    task_support: Literal["forbidden", "optional", "required"] = "forbidden",
) -> ToolDef:
    """One managed tool; a workflow over Evidence (the application family) is listed in the managed toolset."""
    return ToolDef(
        name=name,
        family=WORKFLOW_FAMILY if workflow else STATIC_FAMILY,
        toolset=STATIC_FAMILY if workflow else "",
        description=description,
        input_schema=input_schema,
        result_type=result_type,
        handler=lazy_handler(f"rea_plugins.managed.{module}", "handle"),
        effects=EFFECTS,
        cli_subject=cli_subject,
        examples=examples,
        task_support=task_support,
    )


# Descriptions are one sentence on what the tool is for (hosts send them with every request): docs/managed.md
# says how each answers.
INSPECT_ARTIFACT = _tool(
    "artifact",
    "inspect_managed_artifact",
    ArtifactResult,
    "Identity, references, resources and attributes of a .NET assembly.",
    schemas.ARTIFACT,
    examples=({"path": "/opt/app/App.dll"}, {"path": "/opt/app/App.dll", "resource_limit": 10}),
)

INSPECT_MEMBERS = _tool(
    "members",
    "inspect_managed_members",
    MembersResult,
    "Types, fields, methods, IL hashes and call edges of a .NET assembly, each list paged and narrowed by "
    "name (pattern, substring or RE2) and namespace prefix.",
    schemas.MEMBERS,
    examples=(
        {"path": "/opt/app/App.dll"},
        {"path": "/opt/app/App.dll", "namespace": "App.Net", "pattern": "Login"},
        {"path": "/opt/app/App.dll", "pattern": "::(Get|Set)Token\\(", "mode": "regex", "type_limit": 0},
        {"path": "/opt/app/App.dll", "method_offset": 50, "instruction_anchor_limit": 16},
    ),
)

SEARCH_STRINGS = _tool(
    "strings",
    "search_managed_strings",
    StringsResult,
    "Find string literals (#US heap) of a .NET assembly by substring or RE2 pattern, each with the methods "
    "whose ldstr loads it; paged.",
    schemas.STRINGS,
    examples=(
        {"path": "/opt/app/App.dll", "pattern": "password"},
        {"path": "/opt/app/App.dll", "pattern": "^https?://", "mode": "regex"},
    ),
)

REFERENCES_TO = _tool(
    "references",
    "managed_references_to",
    ReferencesResult,
    "Which methods call, construct, read, write or name a member or type of a .NET assembly (from the IL); "
    "paged, with counts by kind.",
    schemas.REFERENCES,
    examples=(
        {"path": "/opt/app/App.dll", "name": "App.Net.Client::Login(string, string)"},
        {"path": "/opt/app/App.dll", "name": "App.Settings::Token", "kinds": ["write"]},
        {"path": "/opt/app/App.dll", "name": "System.Net.Http.HttpClient"},
        {"path": "/opt/app/App.dll", "name": "Crypt", "mode": "literal"},
    ),
)

INSPECT_METHOD = _tool(
    "method",
    "inspect_managed_method",
    MethodView,
    "One .NET method as readable IL: signature, locals, exception regions, each operand named (no C# "
    "decompiler runs here, and the result says so).",
    schemas.METHOD,
    examples=(
        {"path": "/opt/app/App.dll", "method": "App.Net.Client::Login(string, string)"},
        {"path": "/opt/app/App.dll", "method": "0x06000012"},
    ),
)

INSPECT_BOUNDARIES = _tool(
    "boundaries",
    "inspect_managed_native_boundaries",
    BoundariesResult,
    "P/Invoke and other native-code crossings of a .NET assembly.",
    schemas.BOUNDARIES,
    examples=({"path": "/opt/app/App.dll"},),
)

COMPARE_MEMBERS = _tool(
    "compare",
    "compare_managed_members",
    CompareResult,
    "What changed between two .NET builds: members added, removed and changed, matched by signature, with "
    "token-only renumbering set apart; paged.",
    schemas.COMPARE,
    task_support="optional",
    workflow=True,
    examples=(
        {"left_path": "/opt/app-1.0/App.dll", "right_path": "/opt/app-1.1/App.dll"},
        {"left_evidence_id": retained_reference(RETAINED), "right_evidence_id": retained_reference(OTHER)},
    ),
    cli_subject="",
)

VERIFY_BOUNDARIES = _tool(
    "verify",
    "verify_managed_native_boundaries",
    VerifyResult,
    "Check P/Invoke imports against native library Evidence.",
    schemas.VERIFY,
    workflow=True,
    examples=(
        {
            "managed_boundaries_evidence_id": retained_reference(RETAINED),
            "native_observation_evidence_ids": [retained_reference(OTHER)],
        },
    ),
    cli_subject="",
)

PROJECT_GRAPH = _tool(
    "appgraph",
    "project_managed_application_graph",
    GraphResult,
    "Assemblies and native libraries of a .NET app folder, as a graph.",
    schemas.GRAPH,
    workflow=True,
    cli_subject="application_path",
    examples=({"application_path": "/opt/app"}, {"application_path": "/opt/app", "main_assembly": "App.exe"}),
)

IMPORT_RECONSTRUCTION = _tool(
    "reconstruction",
    "import_managed_reconstruction",
    ReconstructionResult,
    "Record a decompiler's C# for .NET methods as Evidence.",
    schemas.RECONSTRUCTION,
    workflow=True,
    examples=(
        {
            "static_members_evidence_id": retained_reference(RETAINED),
            "decompiler": {"name": "ILSpy", "version": "9.0"},
            "methods": [{"method_token": "0x06000001", "csharp": "public int Add(int a, int b) => a + b;"}],
        },
    ),
    cli_subject="",
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


def tools() -> list[ToolDef]:
    """The family's tools, for the kernel (the plugin lists this module in ``TOOL_MODULES``)."""
    return list(TOOLS)
