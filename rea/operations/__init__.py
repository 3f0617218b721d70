"""The native operations (docs/native-operations.md) answered from engine-neutral records.

A provider whose engine can describe a program as records (``records``: documents, segments, procedures,
instructions, references, strings, names) gets every operation's normalized shape, page and selector
from ``answers`` instead of writing them again. The Ghidra and Hopper plugins use it.
"""

# The inventory and function operations every native provider answers (docs/native-operations.md's table, before
# pseudo code and the engine-specific ones); providers declare these plus their own.
CORE_OPERATIONS: tuple[str, ...] = (
    "list_documents",
    "list_segments",
    "list_procedures",
    "search_procedures",
    "list_strings",
    "search_strings",
    "list_names",
    "address_name",
    "procedure_address",
    "resolve_containing_procedure",
    "procedure_info",
    "procedure_blocks",
    "procedure_assembly",
    "read_function_instructions",
    "procedure_callers",
    "procedure_callees",
    "procedure_references",
    "xrefs",
)

# What the engine-neutral answers (``rea.operations.answers``) serve: the core operations, pseudo code and the
# whole-program call graph. Here, so a provider can declare them without importing the answers.
ANSWER_OPERATIONS: tuple[str, ...] = (*CORE_OPERATIONS, "procedure_pseudo_code", "program_call_graph")
