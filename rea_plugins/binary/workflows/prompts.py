"""Workflow prompts of the binary tool family."""

from __future__ import annotations

from rea.plugin import PromptArgument
from rea.plugin import PromptDef

PATH = PromptArgument(name="path", description="Path of the binary (ELF, PE or Mach-O) on the server's machine.")

TRIAGE = PromptDef(
    name="triage_binary",
    title="Triage a binary",
    description="First look at an unknown binary: format, entry, imports, strings, the interesting procedures.",
    arguments=(PATH,),
    tools=("open_binary", "binary_overview", "list_names", "search_strings", "analyze_function"),
    template=(
        "Triage the binary at {path} with rea.\n"
        "1. Call open_binary with path {path} (provider_id auto), then binary_overview.\n"
        "2. From list_names and list_strings, note the imported APIs and strings that reveal what it does "
        "(network, files, crypto, process creation, user-facing messages).\n"
        "3. Pick the three to five procedures that matter most (main or the entry's callee, the ones that "
        "reference those strings or APIs) and call analyze_function on each.\n"
        "4. Report what the program does, with each claim citing the evidence_id it rests on, and what "
        "remains unknown."
    ),
)

INVESTIGATE = PromptDef(
    name="investigate_feature",
    title="Investigate a feature from a string",
    description="Trace a user-visible string or name to the code that implements the feature.",
    arguments=(PATH, PromptArgument(name="feature", description="A string the feature shows or a name it uses.")),
    tools=("open_binary", "trace_feature", "analyze_function", "get_call_graph"),
    template=(
        'Find how the feature "{feature}" works in {path}.\n'
        '1. open_binary {path}, then trace_feature with query "{feature}": it finds matching strings and '
        "names, their references and the procedures that contain them.\n"
        "2. analyze_function on each procedure found; get_call_graph backward from them to see how the "
        "feature is reached, forward to see what it calls.\n"
        "3. Explain the feature's code path step by step, citing evidence_ids, and say where the evidence "
        "stops (indirect calls, missing symbols)."
    ),
)


def prompts() -> list[PromptDef]:
    return [TRIAGE, INVESTIGATE]
