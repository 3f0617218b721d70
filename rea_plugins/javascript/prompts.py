"""Workflow prompts of the JavaScript application family."""

from __future__ import annotations

from rea.plugin import PromptArgument
from rea.plugin import PromptDef

INVENTORY = PromptDef(
    name="inventory_electron_application",
    title="Inventory an Electron application",
    description="Map an Electron app: entry points, processes, IPC channels, modules and native add-ons.",
    arguments=(PromptArgument(name="path", description="The app's resources/app.asar or its unpacked directory."),),
    tools=("inspect_artifact", "analyze_javascript_application", "inspect_analysis_view"),
    template=(
        "Inventory the Electron application at {path} with rea.\n"
        "1. inspect_artifact on {path} for its files, integrity and nested archives.\n"
        "2. analyze_javascript_application on {path} with detail summary; read the retained record through "
        "inspect_analysis_view pages (modules, entry points) instead of the whole graph.\n"
        "3. List the main, preload and renderer entry points, the IPC channels between them, the bundled "
        "modules with their source maps, and any native add-ons, citing evidence_ids."
    ),
)

COMPARE = PromptDef(
    name="compare_application_versions",
    title="Compare two versions of an application",
    description="What changed between two builds of a JavaScript or Electron application.",
    arguments=(
        PromptArgument(name="left_path", description="The older build (directory or .asar)."),
        PromptArgument(name="right_path", description="The newer build (directory or .asar)."),
    ),
    tools=("analyze_javascript_application", "compare_application_versions"),
    template=(
        "Compare the application builds {left_path} (before) and {right_path} (after).\n"
        "1. analyze_javascript_application on each (detail summary keeps the responses small; keep the two "
        "evidence_ids).\n"
        "2. compare_application_versions with left and right as retained-evidence references to them.\n"
        "3. Summarize added, removed and changed modules, entry points and IPC channels, and any integrity "
        "contradictions, citing evidence_ids."
    ),
)


def prompts() -> list[PromptDef]:
    return [INVENTORY, COMPARE]
