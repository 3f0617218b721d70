"""The native operations an engine provider with every contract operation declares (angr, radare2).

Written out here once rather than read from the kernel: a kernel that dropped one would otherwise pass.
"""

from __future__ import annotations

CONTRACT_OPERATIONS = {
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
    "program_call_graph",
    "procedure_references",
    "xrefs",
    "procedure_pseudo_code",
    "inspect_native_instruction",
    "inspect_native_data_type",
    "resolve_native_call_targets",
    "binary_layout",
}
