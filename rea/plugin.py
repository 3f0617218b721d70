"""The plugin API: every name a plugin may import from rea, and nothing else.

A plugin (first-party under ``rea_plugins/``, or a third party's package registered in the ``rea`` entry-point group)
imports kernel names only from here::

    from rea.plugin import ReaError, ToolCall, ToolDef, hookimpl

Every other ``rea.*`` module is internal: it may change in any release. A test fails when a first-party plugin
imports one. ``EXPORTS`` gives each name's one-line meaning. Names load on
first use, so importing this module costs nothing beyond the names a plugin takes.

A plugin built for a later version of this API declares it as a module attribute, ``REQUIRES_API = 2``; the
registry reports such a plugin as broken, with that reason, where ``API_VERSION`` is older.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING
from typing import Any

from rea.hookspecs import PLUGIN_API_VERSION

API_VERSION = PLUGIN_API_VERSION
"""The version of this API: raised when a name is added (a plugin may then require it), and a name is only
removed or changed incompatibly at a major release of rea."""

# name: (module, attribute ("" for a module), one-line meaning).
EXPORTS: dict[str, tuple[str, str, str]] = {
    # Declaring a plugin: hooks, tools, settings, prompts and resources
    "__version__": (
        "rea",
        "__version__",
        "rea's version (the rea-reverse distribution's), part of every Evidence record's provider identity.",
    ),
    "bundle": (
        "rea.bundle",
        "",
        "Evidence bundles: ``manifest``, ``load_bundle``, ``Bundle`` and ``procedure_metadata``.",
    ),
    "evidence": (
        "rea.evidence",
        "",
        "Evidence construction: ``build``, ``make_profile``, ``retained_reference`` and ``to_builtins``.",
    ),
    "hookimpl": (
        "rea",
        "hookimpl",
        "The pluggy marker of a plugin's hook implementations (``@hookimpl def rea_register_tools(): ...``).",
    ),
    "search": ("rea.search", "", "Text search as rea runs it (RE2 and literal): ``matcher`` and the compiled forms."),
    "runtime_observations": (
        "rea.runtime_observations",
        "",
        "What a debugger saw at a procedure this session: ``record_hit``, ``with_runtime``, ``RuntimeObservation``.",
    ),
    "typelib": (
        "rea.typelib",
        "",
        "The type library: declarations, layouts, prototypes and ABIs (``declare``, ``Layout``, ``prototype``).",
    ),
    "invoke": (
        "rea.catalog.invoke",
        "invoke",
        "Validate, check availability, run the handler (on the target the call names) and record its Evidence.",
    ),
    "PromptArgument": (
        "rea.catalog.prompt",
        "PromptArgument",
        "One argument of a prompt (name, description, required).",
    ),
    "PromptDef": (
        "rea.catalog.prompt",
        "PromptDef",
        "``template`` names arguments as ``{name}``; ``tools`` are the tools the workflow calls.",
    ),
    "ResourceDef": (
        "rea.catalog.resource",
        "ResourceDef",
        "A resource at one fixed ``uri`` (listed by ``resources/list``).",
    ),
    "ResourceSpec": ("rea.catalog.resource", "ResourceSpec", "What every resource declares besides its address."),
    "ResourceTemplateDef": (
        "rea.catalog.resource",
        "ResourceTemplateDef",
        "Resources addressed by an RFC 6570 level-1 ``uri_template`` such as ``rea://unknown/{unknown_id}``.",
    ),
    "RETAINED_EXAMPLE": (
        "rea.catalog.schemas",
        "RETAINED_EXAMPLE",
        "An example retained-Evidence reference for input schemas.",
    ),
    "evidence_input": (
        "rea.catalog.schemas",
        "evidence_input",
        "An input that takes Evidence inline or by retained reference; use ``with_evidence_defs`` on the root.",
    ),
    "struct_output_schema": (
        "rea.catalog.schemas",
        "struct_output_schema",
        "Output schema for a tool that answers a plain object of type ``struct`` (the Struct is the one source).",
    ),
    "with_evidence_defs": (
        "rea.catalog.schemas",
        "with_evidence_defs",
        "``schema`` with the definitions its Evidence inputs refer to, in its own ``$defs``.",
    ),
    "ToolCall": (
        "rea.catalog.tool",
        "ToolCall",
        "One invocation: validated arguments, the session, and the call context.",
    ),
    "ToolDef": (
        "rea.catalog.tool",
        "ToolDef",
        "A tool, declared as data. MCP, CLI and the catalog document all read this one value.",
    ),
    "lazy_handler": (
        "rea.catalog.tool",
        "lazy_handler",
        "The handler ``module.function``, imported on the tool's first call (declaring tools loads no engine).",
    ),
    "ToolEffects": (
        "rea.catalog.tool",
        "ToolEffects",
        "What a tool may do; annotations are derived from these, never from its name.",
    ),
    "ToolMode": (
        "rea.catalog.tool",
        "ToolMode",
        "One way a tool can be called, reported separately in ``binary_session.tool_availability``.",
    ),
    "MAX_INT32": ("rea.config", "MAX_INT32", "The largest integer a setting or schema bound may take (2**31 - 1)."),
    "SettingSpec": (
        "rea.config",
        "SettingSpec",
        "A setting a plugin reads from the environment: its name, constraint and parser.",
    ),
    "default_memory_limit_mb": (
        "rea.config",
        "default_memory_limit_mb",
        "A worker's default address-space bound: three quarters of physical memory, at least 2 GiB.",
    ),
    "integer_setting": (
        "rea.config",
        "integer_setting",
        "A decimal integer setting: no sign, no leading zero, no spaces, exponent or fraction.",
    ),
    "memory_limit_setting": (
        "rea.config",
        "memory_limit_setting",
        "The ``REA_<ENGINE>_MEMORY_LIMIT_MB`` setting of one worker (256 MiB to 1 TiB).",
    ),
    # Errors
    "unknown_tool": (
        "rea.catalog.refusals",
        "unknown_tool",
        "The refusal of a call naming no tool, with where the caller finds the names.",
    ),
    "CODES": ("rea.errors", "CODES", "The closed set of canonical error codes, each with its one-line meaning."),
    "ReaError": (
        "rea.errors",
        "ReaError",
        "Every failure rea reports: a code from the closed set, a message, a remediation, details.",
    ),
    "cancelled": ("rea.errors", "cancelled", "The caller cancelled; distinct from a timeout."),
    "invalid_request": ("rea.errors", "invalid_request", "An ``invalid_request`` error with ``details.issues``."),
    "issue": ("rea.errors", "issue", "One entry of ``details.issues``."),
    "typed_failures": (
        "rea.decoding",
        "typed_failures",
        "A reader whose failures are typed: its ReaError as it is, any other exception ``error(argument, why)``.",
    ),
    # Evidence, canonical JSON and the analysis cache
    "AnalysisCache": (
        "rea.cache",
        "AnalysisCache",
        "Size-bounded, validated, concurrency-safe entries under ``directory`` (``max_bytes`` 0: off).",
    ),
    "CacheKey": ("rea.cache", "CacheKey", "What a cached value depends on; equal keys name the same entry."),
    "default_cache": (
        "rea.cache",
        "default_cache",
        "The cache the settings name (``REA_CACHE_DIR``, ``REA_CACHE_MAX_BYTES``); ``configuration_invalid`` if bad.",
    ),
    "profile_digest": (
        "rea.cache",
        "profile_digest",
        "The digest of ``provider``'s analysis profile for ``target``: the same one its Evidence carries.",
    ),
    "CanonicalError": (
        "rea.canonical",
        "CanonicalError",
        "A value that has no RFC 8785 form (non-finite or out-of-range numbers, non-JSON types).",
    ),
    "canonical_digest": (
        "rea.canonical",
        "canonical_digest",
        "Lowercase hex SHA-256 of the canonical JSON of ``value``.",
    ),
    "canonical_json": (
        "rea.canonical",
        "canonical_json",
        "The RFC 8785 canonical JSON bytes of ``value`` (msgspec Structs and builtins).",
    ),
    "AnalysisProfile": (
        "rea.evidence",
        "AnalysisProfile",
        "The provider settings that shaped a result; ``digest`` commits to the rest.",
    ),
    "Evidence": (
        "rea.evidence",
        "Evidence",
        "One complete Evidence record (6.2 shape). Every field is required when decoding.",
    ),
    "ProviderIdentity": (
        "rea.evidence",
        "ProviderIdentity",
        "Which provider (id, version, engine) made a result: part of every Evidence record.",
    ),
    "retained_reference": (
        "rea.evidence",
        "retained_reference",
        "A ``retained-evidence`` reference to a record the session's ledger keeps.",
    ),
    "build_view": (
        "rea.views",
        "build_view",
        "A view Evidence of ``parent``: linked to it, carrying the selection and its digest.",
    ),
    "row_page": ("rea.views", "row_page", "A page of rows of a retained record's view."),
    "text_page": (
        "rea.views",
        "text_page",
        "A page of ``text`` in UTF-16 code units whose bounds never fall inside a surrogate pair.",
    ),
    # Targets, files and the session
    "CallContext": (
        "rea.context",
        "CallContext",
        "What a handler or provider gets besides its arguments: cancellation and progress.",
    ),
    "open_regular": (
        "rea.files",
        "open_regular",
        "Open ``path`` without blocking, ``fstat`` it, and return a blocking fd only if it is a regular file.",
    ),
    "read_regular": (
        "rea.files",
        "read_regular",
        "The bytes of a regular file, opened through ``open_regular``; ``resource_constraint`` past ``max_bytes``.",
    ),
    "require_regular": (
        "rea.files",
        "require_regular",
        "Check through ``open_regular`` that a path is a regular file (or absent, with ``missing_ok``).",
    ),
    "shown": (
        "rea.fsnames",
        "shown",
        "``path`` as text any JSON, SQLite row or terminal can carry: bytes of a file name that are not UTF-8.",
    ),
    "Registry": (
        "rea.registry",
        "Registry",
        "Everything the loaded plugins registered, keyed by stable id, with the plugin that owns it.",
    ),
    "default_registry": (
        "rea.registry",
        "default_registry",
        "The process-wide registry of loaded plugins, loaded once.",
    ),
    "alternatives_remediation": (
        "rea.selection",
        "alternatives_remediation",
        "A remediation naming only providers usable here, plus how to install the ones that would be.",
    ),
    "select": ("rea.selection", "select", "Choose the provider for ``target``. Never falls back to another provider."),
    "Session": (
        "rea.session",
        "Session",
        "One per MCP connection or CLI invocation: open targets (one of them active), the ledger, the lineage.",
    ),
    "Target": ("rea.target", "Target", "A local file (or directory) the session has identified."),
    "TargetView": (
        "rea.target",
        "TargetView",
        "Another reading of a target than the one it was opened for, offered by a plugin (``rea_target_views``).",
    ),
    "identify": (
        "rea.target",
        "identify",
        "Hash and identify ``path``; typed errors for missing, unreadable or unsuitable paths.",
    ),
    "pinned_copy": (
        "rea.target",
        "pinned_copy",
        "A private copy of a target holding exactly the bytes whose SHA-256 the target carries.",
    ),
    "read_error": (
        "rea.target",
        "read_error",
        "The canonical error for a failed read: ``access_denied`` or ``target_unavailable``.",
    ),
    "read_pinned": (
        "rea.target",
        "read_pinned",
        "``length`` bytes at ``offset`` of the target, known to be the hashed bytes, else ``artifact_changed``.",
    ),
    "sniff_format": (
        "rea.target",
        "sniff_format",
        'Return (format, architecture) from a file\'s first bytes; ``("file", None)`` when unknown.',
    ),
    "verify_unchanged": (
        "rea.target",
        "verify_unchanged",
        "Raise ``artifact_changed`` unless the target's file still holds the bytes it was hashed from.",
    ),
    "confirm_hashed": (
        "rea.hashed",
        "confirm_hashed",
        "Bytes read from a target's file, else ``artifact_changed``: they are not the ones it was hashed from.",
    ),
    "read_hashed": (
        "rea.hashed",
        "read_hashed",
        "A target's whole file, bounded by ``read_regular`` and confirmed to be the bytes it was hashed from.",
    ),
    "read_identified": (
        "rea.hashed",
        "read_identified",
        "A target's whole file when its size was checked already, confirmed to be the bytes it was hashed from.",
    ),
    # Analysis providers and the shared native answers
    "fingerprints": (
        "rea.fingerprint",
        "fingerprints",
        "Every procedure's fingerprint row (``ProcedureFingerprint``), at most ``cap``: rows, total, truncated.",
    ),
    "hash_instructions": (
        "rea.fingerprint",
        "hash_instructions",
        "(count, hash) of normalized (mnemonic, operands) pairs.",
    ),
    "normalize_instruction": (
        "rea.fingerprint",
        "normalize_instruction",
        "One instruction row (``mnemonic``/``operands``, or ``text``) normalized by ``normalize_text``.",
    ),
    "procedure_hash": (
        "rea.fingerprint",
        "procedure_hash",
        "The content hash of one procedure's instruction rows (what ``read_function_instructions`` lists).",
    ),
    "ANSWER_OPERATIONS": (
        "rea.operations",
        "ANSWER_OPERATIONS",
        "What the engine-neutral answers serve (the core operations, pseudo code, the whole-program call graph).",
    ),
    "CORE_OPERATIONS": (
        "rea.operations",
        "CORE_OPERATIONS",
        "The contract's core operations every analysis provider answers.",
    ),
    "answers": (
        "rea.operations.answers",
        "",
        "Native answers over an engine's ``Source``: paging, addresses and the shared operation bodies.",
    ),
    "callgraph": (
        "rea.operations.callgraph",
        "",
        "Call-graph answers over an engine's edges: ``answer``, ``check``, ``edges_of``.",
    ),
    "unwind": (
        "rea.operations.unwind",
        "",
        "Unwind-table function extents (``.eh_frame`` FDEs, PE ``.pdata``): ``Extents``, ``items``.",
    ),
    "Answers": (
        "rea.operations.answers",
        "Answers",
        "Every native operation over one engine's ``Source``; details are cached per procedure.",
    ),
    "choice_setting": (
        "rea.config",
        "choice_setting",
        "A setting that is one of a few words (its constraint lists them), its default when unset.",
    ),
    "held": (
        "rea.process.held",
        "held",
        "What a worker holds once its client set it up, else ``execution_failure`` in every worker's words.",
    ),
    "engine_rows": (
        "rea.operations.engine_rows",
        "",
        "The inventory pages over an engine's rows kept by address: ``strings_page``, ``names_page``, ...",
    ),
    "AddressedString": (
        "rea.operations.engine_rows",
        "AddressedString",
        "A string row (``StringItem``) with its address as an integer, in the engine's own mapping.",
    ),
    "AddressedName": (
        "rea.operations.engine_rows",
        "AddressedName",
        "A name row (``NameItem``) with its address as an integer, in the engine's own mapping.",
    ),
    "InsnRow": (
        "rea.operations.engine_rows",
        "InsnRow",
        "An instruction row as an engine's listing sends it; ``symbolized`` and ``symbols`` once symbolized.",
    ),
    "RegionRow": (
        "rea.operations.engine_rows",
        "RegionRow",
        "A segment or section of binary_layout: a segment listing's row without its kind.",
    ),
    "ImportRow": (
        "rea.operations.engine_rows",
        "ImportRow",
        "An import of binary_layout: its name, library and slot (hex), where the file says.",
    ),
    "ExportRow": (
        "rea.operations.engine_rows",
        "ExportRow",
        "An export of binary_layout: its name and address (hex).",
    ),
    "DataFlow": (
        "rea.operations.engine_rows",
        "DataFlow",
        "procedure_data_flow's answer: where one call's argument comes from, as p-code steps and sources.",
    ),
    "FlowStep": (
        "rea.operations.engine_rows",
        "FlowStep",
        "One p-code op of procedure_data_flow's answer, ``depth`` ops from the argument.",
    ),
    "OPERATIONS": (
        "rea.operations.answers",
        "OPERATIONS",
        "The operations ``Answers`` implements over any engine's ``Source``.",
    ),
    "answer": (
        "rea.operations.answers",
        "answer",
        "Dispatch one operation; ``capability_unavailable`` for one this layer does not implement.",
    ),
    "Arguments": (
        "rea.arguments",
        "Arguments",
        "A call's arguments as the client sent them, checked against the input schema: JSON, read with ``arg_*``.",
    ),
    "arg_str": (
        "rea.arguments",
        "arg_str",
        "The string argument of a call (None, or the default, when absent or null).",
    ),
    "arg_int": (
        "rea.arguments",
        "arg_int",
        "The integer argument of a call (None, or the default, when absent or null).",
    ),
    "arg_float": (
        "rea.arguments",
        "arg_float",
        "The number argument of a call, as sent (None, or the default, when absent or null).",
    ),
    "arg_bool": ("rea.arguments", "arg_bool", "The boolean argument of a call (the default when absent or null)."),
    "arg_strs": ("rea.arguments", "arg_strs", "The list-of-strings argument of a call (None when absent)."),
    "arg_ints": ("rea.arguments", "arg_ints", "The list-of-integers argument of a call (None when absent)."),
    "arg_object": ("rea.arguments", "arg_object", "The JSON-object argument of a call (None when absent)."),
    "arg_objects": ("rea.arguments", "arg_objects", "The list-of-objects argument of a call (None when absent)."),
    "arg_list": ("rea.arguments", "arg_list", "The list argument of a call, any JSON values (None when absent)."),
    "ProcedureKind": (
        "rea.operations.shapes",
        "ProcedureKind",
        "What a native procedure is: ``local``, ``import``, ``thunk`` or ``external``.",
    ),
    "SegmentKind": (
        "rea.operations.shapes",
        "SegmentKind",
        "What a native segment row is: ``segment`` (loaded) or ``section``.",
    ),
    "StringEncoding": (
        "rea.operations.shapes",
        "StringEncoding",
        "The encodings of a native string row: ``ascii``, ``utf-8``, ``utf-16le``.",
    ),
    "NameKind": (
        "rea.operations.shapes",
        "NameKind",
        "What a native name labels: ``function``, ``data``, ``import``, ``export`` or ``label``.",
    ),
    "ReferenceKind": (
        "rea.operations.shapes",
        "ReferenceKind",
        "The kinds of a native reference: ``call``, ``jump``, ``data``, ``read``, ``write``, ``indirect``, ...",
    ),
    "Authority": (
        "rea.evidence",
        "Authority",
        "Who stands behind an Evidence record's facts (``shipped-artifact``, ...): its ``authority`` field.",
    ),
    "Confidence": (
        "rea.evidence",
        "Confidence",
        "How an Evidence record's facts were reached: ``observed``, ``derived`` or ``inferred``.",
    ),
    "arg_choice": (
        "rea.arguments",
        "arg_choice",
        "The string argument of a call that is one of its enum's choices, as their Literal type.",
    ),
    "IssueReason": (
        "rea.errors",
        "IssueReason",
        "Why one argument was refused: the ``reason`` of an entry of ``details.issues``.",
    ),
    "OpenTarget": (
        "rea.session",
        "OpenTarget",
        "One target a session holds open: its id, alias, Target, provider binding and run id.",
    ),
    "hexa": ("rea.operations.answers", "hexa", "An address as the contract's lowercase ``0x`` hex string."),
    "int_param": (
        "rea.operations.answers",
        "int_param",
        "An integer argument of an operation's parameters, checked against its bounds.",
    ),
    "looks_like_address": (
        "rea.operations.answers",
        "looks_like_address",
        "An integer, or a string that reads as a ``0x`` address rather than a name.",
    ),
    "no_code_here": (
        "rea.operations.answers",
        "no_code_here",
        "The refusal to decompile an import or external: its code is in another binary.",
    ),
    "page": (
        "rea.operations.answers",
        "page",
        "One page of ``items`` (already in stable order) as the contract's page object.",
    ),
    "page_fields": (
        "rea.operations.answers",
        "page_fields",
        "The paging fields of a page of ``shown`` items from ``offset``, of ``total``.",
    ),
    "paging": (
        "rea.operations.answers",
        "paging",
        "A request's ``offset`` and ``limit``, checked (validate before costly work, then page with ``page``).",
    ),
    "parse_address": (
        "rea.operations.answers",
        "parse_address",
        "A ``0x`` hex (or decimal) string, or a non-negative integer.",
    ),
    "whole_program_paging": (
        "rea.operations.answers",
        "whole_program_paging",
        "``paging`` for the whole-program answers (every call edge, every procedure's fingerprint): larger pages.",
    ),
    "split_operands": (
        "rea.operations.operands",
        "split_operands",
        "The operand texts of ``op_str`` (commas outside brackets), as many as capstone counts operands.",
    ),
    "symbolized_text": (
        "rea.operations.operands",
        "symbolized_text",
        "The instruction with targets named, pc-relative operands absolute, and data named in a comment.",
    ),
    "symbols_of": (
        "rea.operations.operands",
        "symbols_of",
        "The ``symbols`` of an instruction row: each operand that denotes an address, with its name and string.",
    ),
    "pe_imports": (
        "rea.operations.pe_imports",
        "pe_imports",
        "(DLLs in directory order, imports) of a PE image's bytes; ([], []) when it has none or is malformed.",
    ),
    "Block": (
        "rea.operations.records",
        "Block",
        "One basic block of a procedure (start, end, successors) as engines report it.",
    ),
    "CallSite": ("rea.operations.records", "CallSite", "One call instruction of a procedure and its resolved targets."),
    "Detail": (
        "rea.operations.records",
        "Detail",
        "One procedure's blocks, instructions, outgoing references and call sites.",
    ),
    "Document": (
        "rea.operations.records",
        "Document",
        "A text document a provider offers (a listing, a header) by id.",
    ),
    "Instruction": (
        "rea.operations.records",
        "Instruction",
        "One decoded instruction row (address, bytes, mnemonic, operands).",
    ),
    "Inventory": (
        "rea.operations.records",
        "Inventory",
        "What the whole-program queries read; built once when the engine is ready.",
    ),
    "Name": ("rea.operations.records", "Name", "A name an engine knows at an address, with its origin."),
    "Procedure": ("rea.operations.records", "Procedure", "A procedure an engine knows: entry, name, extent and flags."),
    "Reference": ("rea.operations.records", "Reference", "A cross-reference between two addresses with its kind."),
    "Segment": ("rea.operations.records", "Segment", "A mapped segment or section: name, range and permissions."),
    "Source": (
        "rea.operations.records",
        "Source",
        "What ``queries`` needs of an engine; each method may be answered lazily and cached by the engine.",
    ),
    "String": ("rea.operations.records", "String", "A string found in a binary: address, encoding and text."),
    "INIT_ARRAYS": (
        "rea.operations.relocations",
        "INIT_ARRAYS",
        "The section names of initializer pointer arrays (``.init_array`` and kin).",
    ),
    "METADATA_SECTIONS": (
        "rea.operations.relocations",
        "METADATA_SECTIONS",
        "Sections whose pointers are metadata, not code references.",
    ),
    "chained_rebase_target": (
        "rea.operations.relocations",
        "chained_rebase_target",
        "A Mach-O chained-fixup rebase's target (a vmaddr or an offset from the image base).",
    ),
    "elf_relocations": (
        "rea.operations.relocations",
        "elf_relocations",
        "``(slot, type, symbol index, addend)`` of each entry of a ``.rel``/``.rela`` section.",
    ),
    "pe_base_relocations": (
        "rea.operations.relocations",
        "pe_base_relocations",
        "``(rva, width)`` of each pointer a PE ``.reloc`` table rebases: blocks of a page RVA, a size, typed offsets.",
    ),
    "relr_slots": (
        "rea.operations.relocations",
        "relr_slots",
        "Slots a packed ``.relr.dyn`` table relocates in place: an address, then bitmaps of the words after it.",
    ),
    "words": (
        "rea.operations.relocations",
        "words",
        "The aligned ``word``-byte integers of ``data`` (a trailing partial word is ignored).",
    ),
    "AnalysisView": (
        "rea.operations.shapes",
        "AnalysisView",
        "A view of a retained record: which record, which view, and the selected part.",
    ),
    "Assembly": ("rea.operations.shapes", "Assembly", "A procedure's instructions as a normalized result."),
    "CalleeItem": ("rea.operations.shapes", "CalleeItem", "One callee row of a procedure's callees page."),
    "CallerItem": ("rea.operations.shapes", "CallerItem", "One caller row of a procedure's callers page."),
    "ContainingProcedure": ("rea.operations.shapes", "ContainingProcedure", "The procedure an address lies in."),
    "DataInspection": (
        "rea.operations.shapes",
        "DataInspection",
        "What lies at a data address: its type, value and references.",
    ),
    "DataType": (
        "rea.operations.shapes",
        "DataType",
        'The type of a datum (``status: "known"``): a string, pointer, array, function or undefined bytes.',
    ),
    "DocumentItem": ("rea.operations.shapes", "DocumentItem", "One document row of a provider's document listing."),
    "IndexingCode": (
        "rea.operations.shapes",
        "IndexingCode",
        "A code fragment an indexing step could not place, with the reason.",
    ),
    "InstructionInspection": (
        "rea.operations.shapes",
        "InstructionInspection",
        "One instruction with its operands, targets and references.",
    ),
    "Page": (
        "rea.operations.shapes",
        "Page",
        "The paging fields every paged result has: ``next_offset`` is null on the last page.",
    ),
    "PointerArray": (
        "rea.operations.shapes",
        "PointerArray",
        "The array a pointer slot lies in, found from the code that indexes it from its base.",
    ),
    "ProcedureInfo": (
        "rea.operations.shapes",
        "ProcedureInfo",
        "One procedure's facts: entry, extent, name, signature and counts.",
    ),
    "ProcedureItem": ("rea.operations.shapes", "ProcedureItem", "One procedure row of a procedure listing."),
    "ProcedureRef": ("rea.operations.shapes", "ProcedureRef", "A procedure named by its entry."),
    "ProgramCallGraph": (
        "rea.operations.shapes",
        "ProgramCallGraph",
        "Every call edge of the program, ordered by caller then callee, paged, with the names once.",
    ),
    "PseudoCode": (
        "rea.operations.shapes",
        "PseudoCode",
        "A procedure's decompiled text (paged by lines) and its decompiler.",
    ),
    "RESULT_TYPES": (
        "rea.operations.shapes",
        "RESULT_TYPES",
        "Each core operation's result Struct (operation name to type).",
    ),
    "NameItem": (
        "rea.operations.shapes",
        "NameItem",
        "One name of a native answer's ``list_names`` page (the tools add the annotation fields).",
    ),
    "SentReferenceItem": (
        "rea.operations.shapes",
        "SentReferenceItem",
        "A reference row with ``from_procedure`` and ``to_name`` always sent, null included.",
    ),
    "XrefItem": (
        "rea.operations.shapes",
        "XrefItem",
        "One reference to an address, as the ``xrefs`` operation answers it.",
    ),
    "ReferenceItem": (
        "rea.operations.shapes",
        "ReferenceItem",
        "One reference edge (``from`` is a Python keyword, so the field is ``source``).",
    ),
    "SegmentItem": ("rea.operations.shapes", "SegmentItem", "One segment row of a segment listing."),
    "Shape": (
        "rea.operations.shapes",
        "Shape",
        "The base of every normalized native result Struct (not frozen; a plugin's shape is a Record).",
    ),
    # The record vocabulary (rea.records): every plugin's result shapes and pages.
    "Record": (
        "rea.records",
        "Record",
        "The base of a result shape: a frozen, keyword-only Struct that omits defaults.",
    ),
    "Paged": (
        "rea.records",
        "Paged",
        "The paging fields of a list with its own name: offset, limit, total, next_offset.",
    ),
    "PageOf": (
        "rea.records",
        "PageOf",
        "A generic page of a list named ``items``: ``PageOf[T]`` with the paging fields.",
    ),
    "page_of": ("rea.records", "page_of", "The ``PageOf`` page of a whole list from an offset, at most a limit."),
    "next_offset": ("rea.records", "next_offset", "Where the next page starts after a page, or None on the last."),
    "shown_page": ("rea.records", "shown_page", "The ``PageOf`` page of the items already chosen from an offset."),
    "JSONValue": (
        "rea.records",
        "JSONValue",
        "Any JSON value rea does not shape (a browser's, an engine's, a user's).",
    ),
    "JSONObject": ("rea.records", "JSONObject", "A JSON object rea does not shape: ``dict[str, JSONValue]``."),
    "ToolStep": ("rea.records", "ToolStep", "A tool call that continues from an answer: a tool and its arguments."),
    "StringItem": ("rea.operations.shapes", "StringItem", "One string row of a string listing."),
    "Unavailable": (
        "rea.operations.shapes",
        "Unavailable",
        'A facet the bound provider cannot give (``status: "unavailable"``), and which providers can.',
    ),
    "decode": (
        "rea.operations.shapes",
        "decode",
        "A provider's answer to ``operation`` as its Struct; an answer of another shape is the provider's failure.",
    ),
    "Extents": (
        "rea.operations.unwind",
        "Extents",
        "Unwind ranges (function extents) sorted, with lookups by containment.",
    ),
    "AnalysisClient": (
        "rea.providers",
        "AnalysisClient",
        "A provider's live session on one target. Created by ``AnalysisProvider.open``.",
    ),
    "AnalysisProvider": ("rea.providers", "AnalysisProvider", "An analysis engine behind rea's one interface."),
    "Availability": (
        "rea.providers",
        "Availability",
        "Whether a provider can run here, with its reason, remediation and optional features.",
    ),
    "CloseOutcome": (
        "rea.providers",
        "CloseOutcome",
        "Owned resource kinds that could not be released (empty when cleanup is complete).",
    ),
    "Feature": (
        "rea.providers",
        "Feature",
        "An optional part of an available provider that can be missing on its own (native's decompiler).",
    ),
    "OperationResult": (
        "rea.providers",
        "OperationResult",
        "What a provider returns for one operation; the kernel wraps it into Evidence.",
    ),
    "ProviderDescriptor": (
        "rea.providers",
        "ProviderDescriptor",
        "What a provider declares about itself; nothing here starts an engine.",
    ),
    "TargetSupport": (
        "rea.providers",
        "TargetSupport",
        "Whether a provider reads a target; ``code`` and ``reason`` say why not.",
    ),
    # Unpackers and scenario drivers
    "ScenarioDriver": (
        "rea.scenarios",
        "ScenarioDriver",
        "Runs one bounded scenario and returns its observation; owns and cleans what it starts.",
    ),
    "ScenarioDriverDescriptor": (
        "rea.scenarios",
        "ScenarioDriverDescriptor",
        "What a scenario driver declares about itself (id, kinds, isolation).",
    ),
    "ArchiveEntry": (
        "rea.unpackers",
        "ArchiveEntry",
        "One entry as the archive declares it; nothing here has been read or verified.",
    ),
    "ArchiveReader": (
        "rea.unpackers",
        "ArchiveReader",
        "An open archive: a declared listing plus verified streaming of each regular file.",
    ),
    "DeclaredIntegrity": (
        "rea.unpackers",
        "DeclaredIntegrity",
        "A hash the archive declares for an entry's bytes (ASAR header integrity).",
    ),
    "EntryKind": ("rea.unpackers", "EntryKind", "The kinds of archive entry (file, directory, link, other)."),
    "EntryRead": (
        "rea.unpackers",
        "EntryRead",
        "The outcome of streaming one entry: observed hash, and how it relates to the declared one.",
    ),
    "HEAD_BYTES": ("rea.unpackers", "HEAD_BYTES", "How many leading bytes unpackers sniff a target by."),
    "IntegrityPolicy": (
        "rea.unpackers",
        "IntegrityPolicy",
        "What extraction does with an entry whose bytes contradict its declared hash.",
    ),
    "Limits": (
        "rea.unpackers",
        "Limits",
        "Bounds every reader honours; exceeding one is a ``resource_constraint`` naming it.",
    ),
    "NESTED_SEPARATOR": (
        "rea.unpackers",
        "NESTED_SEPARATOR",
        "The separator between an archive's path and a member's logical path.",
    ),
    "Sink": ("rea.unpackers", "Sink", "Where an archive reader streams an entry's bytes."),
    "Unpacker": (
        "rea.unpackers",
        "Unpacker",
        "Reads one archive format; chosen through the ``rea_select_unpacker`` hook.",
    ),
    "UnpackerDescriptor": (
        "rea.unpackers",
        "UnpackerDescriptor",
        "What an unpacker declares about itself (id, formats).",
    ),
    "is_missing": (
        "rea.unpackers",
        "is_missing",
        "ENOENT, or a path component that is not a directory (or is a symlink refused by O_NOFOLLOW).",
    ),
    "limit_exceeded": ("rea.unpackers", "limit_exceeded", "The ``resource_constraint`` error for one exceeded bound."),
    "link_escapes": (
        "rea.unpackers",
        "link_escapes",
        "Whether a link at ``link_path`` pointing at ``target`` resolves outside the archive root.",
    ),
    "open_beneath": (
        "rea.unpackers",
        "open_beneath",
        "Open ``parts`` relative to ``root_fd`` without following any symlink on the way.",
    ),
    "path_problem": (
        "rea.unpackers",
        "path_problem",
        "Why a logical path cannot be materialized beneath a directory, or None when it can.",
    ),
    "read_head": (
        "rea.unpackers",
        "read_head",
        "The first bytes of a file target (empty for a directory): what unpackers decide on.",
    ),
    "select_unpacker": (
        "rea.unpackers",
        "select_unpacker",
        "Ask the registered unpackers (``rea_select_unpacker``) which one reads ``target``.",
    ),
    # Owned processes, workers and the sandbox
    "Isolation": ("rea.process", "Isolation", "The isolation that applied to one process, as captures record it."),
    "OwnedProcess": (
        "rea.process",
        "OwnedProcess",
        "One process rea started and owns; see the module docstring for the rules.",
    ),
    "ProcessSpec": ("rea.process", "ProcessSpec", "How to start one owned process."),
    "SandboxPolicy": ("rea.process", "SandboxPolicy", "What a sandboxed process may touch."),
    "WorkerChannel": (
        "rea.process",
        "WorkerChannel",
        "A lazily started worker owned by one provider client (or one provider).",
    ),
    "WorkerClient": (
        "rea.process",
        "WorkerClient",
        "An analysis client whose engine runs in one owned worker: closing, lineage and requests.",
    ),
    "confine": (
        "rea.process.confine",
        "",
        "Confinement of owned processes in the session's process groups: ``members``, ``release``.",
    ),
    "frames": (
        "rea.process.frames",
        "",
        "The framed request/reply protocol between rea and its workers (``Request``, ``Reply``, ``Failure``).",
    ),
    "leftovers": (
        "rea.process.leftovers",
        "",
        "Staging folders a killed server leaves, marked so the next start removes them.",
    ),
    "procfs": (
        "rea.process.procfs",
        "",
        "Process facts from /proc (``ProcInfo``, ``read``, ``scan``, ``descendants``).",
    ),
    "python_worker_spec": (
        "rea.process",
        "python_worker_spec",
        "The spec of a Python worker ``python -m module`` (which calls ``rea.process.worker.serve``).",
    ),
    "status_details": (
        "rea.process",
        "status_details",
        "``exit_status`` (and ``signal`` when a signal ended it) for errors and lineage.",
    ),
    "OUT_OF_MEMORY": ("rea.process.memory", "OUT_OF_MEMORY", "The pattern of a worker's out-of-memory failure text."),
    "memory_exhausted": (
        "rea.process.channel",
        "memory_exhausted",
        "A worker that ran out of memory under its bound: ``resource_constraint`` naming the bound and its setting.",
    ),
    "die_with_parent": (
        "rea.process.launch",
        "die_with_parent",
        "Have the kernel SIGKILL this process when its parent ends (False where the host cannot).",
    ),
    "now_iso": ("rea.process.owned", "now_iso", "The current UTC time as an ISO 8601 string (lineage timestamps)."),
    "signal_if": (
        "rea.process.owned",
        "signal_if",
        "Signal exactly the process ``info`` names while ``proven`` holds for it (a pidfd: no pid-reuse race).",
    ),
    "reap_session_zombies": (
        "rea.process.sandbox",
        "reap_session_zombies",
        "Reap the server's exited children of one session (bubblewrap's orphaned pid 1).",
    ),
    "unsandboxed": (
        "rea.process.sandbox",
        "unsandboxed",
        "Without bubblewrap: the network and process bounds still apply where the host allows; else typed errors.",
    ),
    "Reporter": (
        "rea.process.worker",
        "Reporter",
        "Progress for the request being served; relayed into the caller's rate-bounded sink.",
    ),
    "Result": ("rea.process.worker", "Result", "What a route returns when it has more than a normalized result."),
    "Route": ("rea.process.worker", "Route", "A worker route: the function a worker runs for one request kind."),
    "operation_routes": (
        "rea.process.worker",
        "operation_routes",
        "A worker route per contract operation of a table (operation to holder and method).",
    ),
    "claim_protocol_pipes": (
        "rea.process.worker",
        "claim_protocol_pipes",
        "Take a worker's stdin/stdout for the frame protocol (prints go to stderr); exit when the server is gone.",
    ),
    "serve": (
        "rea.process.worker",
        "serve",
        "Answer framed requests on stdin/stdout until stdin closes; returns the exit status.",
    ),
    # Annotations, types, search and unknowns
    "LIMITS": ("rea.annotations", "LIMITS", "The annotation fields' length bounds (field name to maximum characters)."),
    "MAX_TYPE_DECLARATION": (
        "rea.annotations",
        "MAX_TYPE_DECLARATION",
        "The longest C declaration the type library accepts, in characters.",
    ),
    "Note": (
        "rea.annotations",
        "Note",
        "What the analyst recorded at one address; an unset field is None (absent on disk).",
    ),
    "Notebook": (
        "rea.annotations",
        "Notebook",
        "Every annotation of one target, with its revision (None when there is none).",
    ),
    "TypeEntry": (
        "rea.annotations",
        "TypeEntry",
        "One type of a target's library: its kind and its C declaration (normalized by rea.typelib).",
    ),
    "check_field": (
        "rea.annotations",
        "check_field",
        "The value to store (None clears the field: an empty string, except for bookmark labels).",
    ),
    "normalize_address": (
        "rea.annotations",
        "normalize_address",
        "A default-space address as canonical lowercase hex without leading zeros.",
    ),
    "compile_pattern": (
        "rea.search",
        "compile_pattern",
        "A compiled RE2 pattern (``search``, ``sub``, ...); ``invalid_request`` on ``path`` when RE2 refuses it.",
    ),
    "compile_regex": (
        "rea.search",
        "compile_regex",
        "An RE2 search predicate; ``invalid_request`` on ``path`` for what RE2 cannot or will not run.",
    ),
    "matcher": (
        "rea.search",
        "matcher",
        "The predicate of a search request: ``pattern``, ``mode`` (literal|regex), ``case_sensitive``.",
    ),
    "types_key": (
        "rea.typelib",
        "types_key",
        "A digest of the types a request carries to an engine (what cached pseudo code depends on).",
    ),
    "Histories": ("rea.unknowns", "Histories", "Every unknown's revision history, keyed by unknown id."),
    "UnknownsRegistry": (
        "rea.unknowns",
        "Registry",
        "Every unknown of one target: id to revision history (oldest first).",
    ),
    "Relationship": ("rea.unknowns", "Relationship", "A link between two unknowns (blocks, duplicates, refines)."),
    "RequiredEnvironment": (
        "rea.unknowns",
        "RequiredEnvironment",
        "What the answering Evidence's environment must be (a field left out is not required).",
    ),
    "Resolution": (
        "rea.unknowns",
        "Resolution",
        "How an unknown was closed: ``answered`` by Evidence, or ``withdrawn`` (no longer a question).",
    ),
    "SEVERITY_ORDER": ("rea.unknowns", "SEVERITY_ORDER", "Unknown severities from the most to the least severe."),
    "UNKNOWN_ID": ("rea.unknowns", "UNKNOWN_ID", "The pattern an unknown's id matches."),
    "UnknownRevision": ("rea.unknowns", "UnknownRevision", "One revision of one unknown; the last is its head."),
    "UnknownStore": (
        "rea.unknowns",
        "UnknownStore",
        "Per-target unknowns documents under ``root`` (the annotation store's directory).",
    ),
    "conflict": ("rea.unknowns", "conflict", "The ``conflict`` error for a stale unknown revision."),
    "new_id": ("rea.unknowns", "new_id", "A fresh unknown id."),
    "not_found": ("rea.unknowns", "not_found", "The error for an unknown id that does not exist."),
    "sealed": ("rea.unknowns", "sealed", "``rev`` with its digest computed."),
    # Added with the families of 2026-12 (Apple, specialist inspectors, runtime JavaScript, pictures)
    "devtools": (
        "rea.devtools",
        "",
        "The DevTools-protocol session (CDP and the V8 inspector) over one loopback WebSocket, and its rules.",
    ),
    "render": (
        "rea.render",
        "",
        "Graph pictures: one small graph shape drawn as Mermaid or Graphviz DOT text, bounded.",
    ),
    "sourcemap": (
        "rea.sourcemap",
        "",
        "Source-map mappings decoded by symbolic: generated to original locations and sources.",
    ),
    "golang": (
        "rea.operations.golang",
        "",
        "Go binaries' own tables: the build information and the pclntab function table.",
    ),
    "objc": (
        "rea.operations.objc",
        "",
        "Objective-C runtime metadata of a Mach-O image: classes, protocols, categories, selectors.",
    ),
    "ResultType": (
        "rea.catalog.tool",
        "ResultType",
        "A tool's result Struct, or a tuple of the Structs it may answer.",
    ),
    "DEFAULT_TIMEOUT_S": (
        "rea.devtools",
        "DEFAULT_TIMEOUT_S",
        "The default deadline of one DevTools request, in seconds.",
    ),
    "file_roots": (
        "rea.devtools",
        "file_roots",
        "The canonical directories a request confines file:// targets and scripts to.",
    ),
    "loopback_endpoint": (
        "rea.devtools",
        "loopback_endpoint",
        "The loopback endpoint a value names; anything else is refused.",
    ),
    "origin_of": (
        "rea.origins",
        "origin_of",
        "``scheme://host[:port]`` of an http(s) URL (default ports omitted), None for anything else.",
    ),
    "as_object": (
        "rea.evidence",
        "as_object",
        "A Struct in a result as the JSON object it encodes to, one level deep.",
    ),
    "GoModule": ("rea.operations.golang", "GoModule", "A module of a Go build list: path, version and go.sum hash."),
    "Category": (
        "rea.operations.objc",
        "Category",
        "An Objective-C category: the class it extends and its methods and protocols.",
    ),
    "implementation_names": (
        "rea.operations.objc",
        "implementation_names",
        "Each method implementation's address with its name, -[Class selector].",
    ),
    "Snapshot": (
        "rea.operations.records",
        "Snapshot",
        "A complete recorded model: the inventory, every detail, references and pseudo code.",
    ),
    "SnapshotSource": ("rea.operations.records", "SnapshotSource", "A Source over a recorded Snapshot."),
    "CALL_GRAPH_LEGEND": (
        "rea.operations.shapes",
        "CALL_GRAPH_LEGEND",
        "The row layout of a lean call-graph page, as its legend states it.",
    ),
    "PROCEDURE_KIND_CODES": (
        "rea.operations.shapes",
        "PROCEDURE_KIND_CODES",
        "The one-letter codes of procedure kinds in lean rows.",
    ),
    "ProcedureRows": (
        "rea.operations.shapes",
        "ProcedureRows",
        "A lean page of procedures: rows with a legend, parts mapped to their parents.",
    ),
    "fde_ranges": ("rea.operations.unwind", "fde_ranges", "(start, end) of every FDE of an .eh_frame section."),
    "FORMAT_PROPERTY": (
        "rea.render",
        "FORMAT_PROPERTY",
        "The format argument of a tool that draws: structured, mermaid or dot.",
    ),
    "Picture": ("rea.render", "Picture", "A graph drawn as text (Mermaid or DOT), with what the bound left out."),
    "MAX_MAP_BYTES": ("rea.sourcemap", "MAX_MAP_BYTES", "The largest source map decoded, in bytes."),
    # Added with the families of 2026-12 (Apple, specialist inspectors, runtime JavaScript, pictures)
    "CommandFailed": ("rea.devtools", "CommandFailed", "The DevTools peer answered a command with a protocol error."),
    "HTTP_TIMEOUT_S": (
        "rea.devtools",
        "HTTP_TIMEOUT_S",
        "The deadline of a DevTools HTTP request (/json/list), in seconds.",
    ),
    "MAX_HTTP_BYTES": ("rea.devtools", "MAX_HTTP_BYTES", "The largest DevTools HTTP answer read, in bytes."),
    "MAX_MESSAGE_BYTES": (
        "rea.devtools",
        "MAX_MESSAGE_BYTES",
        "The largest DevTools WebSocket message read, in bytes.",
    ),
    "POLL_S": ("rea.devtools", "POLL_S", "How often a DevTools wait checks for cancellation, in seconds."),
    "Subscriber": ("rea.devtools", "Subscriber", "A DevTools event callback: (method, params, session id)."),
    "arr": (
        "rea.devtools",
        "arr",
        "A protocol value when it is an array, else empty: a peer's omission is not a crash.",
    ),
    "obj": (
        "rea.devtools",
        "obj",
        "A protocol value when it is an object, else empty: a peer's omission is not a crash.",
    ),
    "wait": ("rea.devtools", "wait", "Sleep for a while, ending early (cancelled) when the caller cancels."),
    "GoSetting": (
        "rea.operations.golang",
        "GoSetting",
        "One Go build setting (-compiler=gc, CGO_ENABLED=1, vcs.revision=...).",
    ),
    "ObjCClass": (
        "rea.operations.objc",
        "ObjCClass",
        "An Objective-C class: superclass, methods with selectors and IMPs, ivars, properties.",
    ),
    "Protocol": (
        "rea.operations.objc",
        "Protocol",
        "An Objective-C protocol: its methods and the protocols it adopts.",
    ),
    "CalleeRow": ("rea.operations.shapes", "CalleeRow", "One lean call edge from its caller: [callee, kind, calls]."),
    "EDGE_KIND_CODES": (
        "rea.operations.shapes",
        "EDGE_KIND_CODES",
        "The one-letter codes of call-edge kinds in lean rows.",
    ),
    "PROCEDURE_LEGEND": (
        "rea.operations.shapes",
        "PROCEDURE_LEGEND",
        "The row layout of a lean procedure page, as its legend states it.",
    ),
    "ProcedureRow": ("rea.operations.shapes", "ProcedureRow", "One lean procedure row: [address, name, size, kind]."),
    "ProgramCallGraphRows": (
        "rea.operations.shapes",
        "ProgramCallGraphRows",
        "Every call edge of the program, lean: each caller of the page mapped to its rows.",
    ),
    "REFERENCES_LEGEND": (
        "rea.operations.shapes",
        "REFERENCES_LEGEND",
        "The row layout of a lean reference page, as its legend states it.",
    ),
    "REFERENCE_KIND_CODES": (
        "rea.operations.shapes",
        "REFERENCE_KIND_CODES",
        "The one-letter codes of reference kinds in lean rows.",
    ),
    "ReferenceRow": ("rea.operations.shapes", "ReferenceRow", "One lean reference row: [from, to, kind]."),
    "ReferenceRows": (
        "rea.operations.shapes",
        "ReferenceRows",
        "A lean page of one procedure's references, grouped by the procedure each is in.",
    ),
    "Edge": ("rea.render", "Edge", "One edge of a picture's graph: from, to and an optional label."),
    "Graph": ("rea.render", "Graph", "What a tool hands the renderer: nodes in order of importance, then edges."),
    "Node": ("rea.render", "Node", "One node of a picture's graph: a stable id, its label, and whether it is a root."),
    "attach": ("rea.render", "attach", "A result body with a picture field when the call asked for one."),
    "requested": (
        "rea.render",
        "requested",
        "The picture format a call asked for, or None for the structured default.",
    ),
    "Decoded": (
        "rea.sourcemap",
        "Decoded",
        "A source map's mappings, decoded: lookups from a generated position to the original.",
    ),
    "Token": ("rea.sourcemap", "Token", "A generated position's original: source, line, column and name."),
    "decode_data_url": (
        "rea.sourcemap",
        "decode_data_url",
        "The payload of a data: URL (base64 or percent-encoded); None when malformed.",
    ),
    # Added with the families of 2026-12 (Apple, specialist inspectors, runtime JavaScript, pictures)
    "Projection": (
        "rea.catalog.projection",
        "Projection",
        "An input-schema projection: how one profile advertises a tool's arguments.",
    ),
    # The tools of the session, discovery, evidence and projections plugins (formerly in rea.catalog)
    "first_sentence": (
        "rea.catalog.prose",
        "first_sentence",
        "A description's first sentence within ``limit`` characters: what a client is sent of it.",
    ),
    "ProjectionDescriptor": (
        "rea.catalog.projection",
        "ProjectionDescriptor",
        "A projection's id and what its profile advertises (a ``Projection``'s ``descriptor``).",
    ),
    "flatten_root_union": (
        "rea.catalog.schemas",
        "flatten_root_union",
        "A root ``oneOf``/``anyOf`` of object branches presented as one object (validation stays exact).",
    ),
    "json_type": (
        "rea.catalog.schemas",
        "json_type",
        "The JSON Schema type of a JSON value (a bool is boolean, not integer).",
    ),
    "object_output_schema": (
        "rea.catalog.schemas",
        "object_output_schema",
        "An output schema for a plain object with these ``properties`` and ``required`` fields.",
    ),
    "EVIDENCE_RECORD": (
        "rea.catalog.schemas",
        "EVIDENCE_RECORD",
        "The ``$defs`` name of a complete Evidence record in an input schema.",
    ),
    "LEAN_EVIDENCE_RECORD": (
        "rea.catalog.schemas",
        "LEAN_EVIDENCE_RECORD",
        "The ``$defs`` name of a lean Evidence record (as tools return it) in an input schema.",
    ),
    "COMPACT_INPUT_SCHEMA_BUDGET_BYTES": (
        "rea.config",
        "COMPACT_INPUT_SCHEMA_BUDGET_BYTES",
        "The most bytes the compact profile advertises of one tool's input schema.",
    ),
    "TOOLSET_ALIASES": ("rea.config", "TOOLSET_ALIASES", "Former toolset names, each with the toolset it now names."),
    "NEGOTIATED_FEATURES": (
        "rea.catalog.tool",
        "NEGOTIATED_FEATURES",
        "The client features a connection negotiates (roots, sampling, elicitation).",
    ),
    "ToolEntry": (
        "rea.catalog.manifest",
        "ToolEntry",
        "A tool as data without its handler: what ``Registry.tool_info`` gives before it is built.",
    ),
    "catalog_digest": (
        "rea.catalog.document",
        "catalog_digest",
        "The digest of every tool's contract (names, schemas, annotations, effects).",
    ),
    "tool_entry": (
        "rea.catalog.document",
        "tool_entry",
        "One tool's catalog entry: its canonical and advertised schemas, effects and requirements.",
    ),
    "SEARCH_TOOLS_DEF": (
        "rea.catalog.dispatch",
        "SEARCH_TOOLS_DEF",
        "The ``search_tools`` tool: finds tools of any toolset by words.",
    ),
    "CALL_TOOL_BY_NAME_DEF": (
        "rea.catalog.dispatch",
        "CALL_TOOL_BY_NAME_DEF",
        "The ``call_tool_by_name`` tool: validates and runs any tool, listed or not.",
    ),
    "not_advertised": (
        "rea.catalog.refusals",
        "not_advertised",
        "The error for a toolset (or a tool of it) the operator left out of this connection.",
    ),
    "COMPLETE": (
        "rea.presentation",
        "COMPLETE",
        "The name of the complete presentation (records whole, nothing elided).",
    ),
    "binding_report": (
        "rea.presentation",
        "binding_report",
        "A target's provider binding as reported under a presentation (``COMPLETE`` is whole).",
    ),
    "of_session": (
        "rea.presentation",
        "of_session",
        "The presentation a session's results are given in: its connection's, else the CLI's.",
    ),
    "PROVENANCE_URI": (
        "rea.presentation",
        "PROVENANCE_URI",
        "The URI template of a lean record's provenance resource.",
    ),
    "read_provenance": (
        "rea.presentation",
        "read_provenance",
        "The reader of ``PROVENANCE_URI``: the artifact, provider and profile a provenance id names.",
    ),
    "provider_candidates": (
        "rea.selection",
        "candidates",
        "Every provider as a selection candidate, sorted by id; creates no analysis client.",
    ),
    "distribution_version": (
        "rea.distributions",
        "distribution_version",
        "An installed distribution's version (None: not installed), kept between starts: for provider descriptors.",
    ),
    "resolve_dependencies": (
        "rea.dependencies",
        "resolve",
        "Each library a program needs, where its loader would find it (or the folders searched).",
    ),
    "MAX_OPEN_TARGETS": (
        "rea.session",
        "MAX_OPEN_TARGETS",
        "The setting ``REA_MAX_OPEN_TARGETS``: the most targets one session keeps open.",
    ),
    "LEDGER_MEMORY_MB": (
        "rea.ledger",
        "LEDGER_MEMORY_MB",
        "The setting ``REA_LEDGER_MEMORY_MB``: the Evidence a session's ledger keeps in memory.",
    ),
    "views": (
        "rea.views",
        "",
        "Analysis views of completed Evidence: ``build_view`` and the page bounds ``PAGE_MAX_LIMIT``.",
    ),
}

__all__ = [
    "ANSWER_OPERATIONS",
    "API_VERSION",
    "CALL_GRAPH_LEGEND",
    "CALL_TOOL_BY_NAME_DEF",
    "CODES",
    "COMPACT_INPUT_SCHEMA_BUDGET_BYTES",
    "COMPLETE",
    "CORE_OPERATIONS",
    "DEFAULT_TIMEOUT_S",
    "EDGE_KIND_CODES",
    "EVIDENCE_RECORD",
    "FORMAT_PROPERTY",
    "HEAD_BYTES",
    "HTTP_TIMEOUT_S",
    "INIT_ARRAYS",
    "LEAN_EVIDENCE_RECORD",
    "LEDGER_MEMORY_MB",
    "LIMITS",
    "MAX_HTTP_BYTES",
    "MAX_INT32",
    "MAX_MAP_BYTES",
    "MAX_MESSAGE_BYTES",
    "MAX_OPEN_TARGETS",
    "MAX_TYPE_DECLARATION",
    "METADATA_SECTIONS",
    "NEGOTIATED_FEATURES",
    "NESTED_SEPARATOR",
    "OPERATIONS",
    "OUT_OF_MEMORY",
    "POLL_S",
    "PROCEDURE_KIND_CODES",
    "PROCEDURE_LEGEND",
    "PROVENANCE_URI",
    "REFERENCES_LEGEND",
    "REFERENCE_KIND_CODES",
    "RESULT_TYPES",
    "RETAINED_EXAMPLE",
    "SEARCH_TOOLS_DEF",
    "SEVERITY_ORDER",
    "TOOLSET_ALIASES",
    "UNKNOWN_ID",
    "AddressedName",
    "AddressedString",
    "AnalysisCache",
    "AnalysisClient",
    "AnalysisProfile",
    "AnalysisProvider",
    "AnalysisView",
    "Answers",
    "ArchiveEntry",
    "ArchiveReader",
    "Arguments",
    "Assembly",
    "Authority",
    "Availability",
    "Block",
    "CacheKey",
    "CallContext",
    "CallSite",
    "CalleeItem",
    "CalleeRow",
    "CallerItem",
    "CanonicalError",
    "Category",
    "CloseOutcome",
    "CommandFailed",
    "Confidence",
    "ContainingProcedure",
    "DataFlow",
    "DataInspection",
    "DataType",
    "DeclaredIntegrity",
    "Decoded",
    "Detail",
    "Document",
    "DocumentItem",
    "Edge",
    "EntryKind",
    "EntryRead",
    "Evidence",
    "ExportRow",
    "Extents",
    "Feature",
    "FlowStep",
    "GoModule",
    "GoSetting",
    "Graph",
    "Histories",
    "ImportRow",
    "IndexingCode",
    "InsnRow",
    "Instruction",
    "InstructionInspection",
    "IntegrityPolicy",
    "Inventory",
    "Isolation",
    "IssueReason",
    "JSONObject",
    "JSONValue",
    "Limits",
    "Name",
    "NameItem",
    "NameKind",
    "Node",
    "Note",
    "Notebook",
    "ObjCClass",
    "OpenTarget",
    "OperationResult",
    "OwnedProcess",
    "Page",
    "PageOf",
    "Paged",
    "Picture",
    "PointerArray",
    "Procedure",
    "ProcedureInfo",
    "ProcedureItem",
    "ProcedureKind",
    "ProcedureRef",
    "ProcedureRow",
    "ProcedureRows",
    "ProcessSpec",
    "ProgramCallGraph",
    "ProgramCallGraphRows",
    "Projection",
    "ProjectionDescriptor",
    "PromptArgument",
    "PromptDef",
    "Protocol",
    "ProviderDescriptor",
    "ProviderIdentity",
    "PseudoCode",
    "ReaError",
    "Record",
    "Reference",
    "ReferenceItem",
    "ReferenceKind",
    "ReferenceRow",
    "ReferenceRows",
    "RegionRow",
    "Registry",
    "Relationship",
    "Reporter",
    "RequiredEnvironment",
    "Resolution",
    "ResourceDef",
    "ResourceSpec",
    "ResourceTemplateDef",
    "Result",
    "ResultType",
    "Route",
    "SandboxPolicy",
    "ScenarioDriver",
    "ScenarioDriverDescriptor",
    "Segment",
    "SegmentItem",
    "SegmentKind",
    "SentReferenceItem",
    "Session",
    "SettingSpec",
    "Shape",
    "Sink",
    "Snapshot",
    "SnapshotSource",
    "Source",
    "String",
    "StringEncoding",
    "StringItem",
    "Subscriber",
    "Target",
    "TargetSupport",
    "TargetView",
    "Token",
    "ToolCall",
    "ToolDef",
    "ToolEffects",
    "ToolEntry",
    "ToolMode",
    "ToolStep",
    "TypeEntry",
    "Unavailable",
    "UnknownRevision",
    "UnknownStore",
    "UnknownsRegistry",
    "Unpacker",
    "UnpackerDescriptor",
    "WorkerChannel",
    "WorkerClient",
    "XrefItem",
    "__version__",
    "alternatives_remediation",
    "answer",
    "answers",
    "arg_bool",
    "arg_choice",
    "arg_float",
    "arg_int",
    "arg_ints",
    "arg_list",
    "arg_object",
    "arg_objects",
    "arg_str",
    "arg_strs",
    "arr",
    "as_object",
    "attach",
    "binding_report",
    "build_view",
    "bundle",
    "callgraph",
    "cancelled",
    "canonical_digest",
    "canonical_json",
    "catalog_digest",
    "chained_rebase_target",
    "check_field",
    "choice_setting",
    "claim_protocol_pipes",
    "compile_pattern",
    "compile_regex",
    "confine",
    "confirm_hashed",
    "conflict",
    "decode",
    "decode_data_url",
    "default_cache",
    "default_memory_limit_mb",
    "default_registry",
    "devtools",
    "die_with_parent",
    "distribution_version",
    "elf_relocations",
    "engine_rows",
    "evidence",
    "evidence_input",
    "fde_ranges",
    "file_roots",
    "fingerprints",
    "first_sentence",
    "flatten_root_union",
    "frames",
    "golang",
    "hash_instructions",
    "held",
    "hexa",
    "hookimpl",
    "identify",
    "implementation_names",
    "int_param",
    "integer_setting",
    "invalid_request",
    "invoke",
    "is_missing",
    "issue",
    "json_type",
    "lazy_handler",
    "leftovers",
    "limit_exceeded",
    "link_escapes",
    "looks_like_address",
    "loopback_endpoint",
    "matcher",
    "memory_exhausted",
    "memory_limit_setting",
    "new_id",
    "next_offset",
    "no_code_here",
    "normalize_address",
    "normalize_instruction",
    "not_advertised",
    "not_found",
    "now_iso",
    "obj",
    "objc",
    "object_output_schema",
    "of_session",
    "open_beneath",
    "open_regular",
    "operation_routes",
    "origin_of",
    "page",
    "page_fields",
    "page_of",
    "paging",
    "parse_address",
    "path_problem",
    "pe_base_relocations",
    "pe_imports",
    "pinned_copy",
    "procedure_hash",
    "procfs",
    "profile_digest",
    "provider_candidates",
    "python_worker_spec",
    "read_error",
    "read_hashed",
    "read_head",
    "read_identified",
    "read_pinned",
    "read_provenance",
    "read_regular",
    "reap_session_zombies",
    "relr_slots",
    "render",
    "requested",
    "require_regular",
    "resolve_dependencies",
    "retained_reference",
    "row_page",
    "runtime_observations",
    "sealed",
    "search",
    "select",
    "select_unpacker",
    "serve",
    "shown",
    "shown_page",
    "signal_if",
    "sniff_format",
    "sourcemap",
    "split_operands",
    "status_details",
    "struct_output_schema",
    "symbolized_text",
    "symbols_of",
    "text_page",
    "tool_entry",
    "typed_failures",
    "typelib",
    "types_key",
    "unknown_tool",
    "unsandboxed",
    "unwind",
    "verify_unchanged",
    "views",
    "wait",
    "whole_program_paging",
    "with_evidence_defs",
    "words",
]

if TYPE_CHECKING:
    import rea.bundle as bundle
    import rea.devtools as devtools
    import rea.evidence as evidence
    import rea.operations.answers as answers
    import rea.operations.callgraph as callgraph
    import rea.operations.engine_rows as engine_rows
    import rea.operations.golang as golang
    import rea.operations.objc as objc
    import rea.operations.unwind as unwind
    import rea.process.confine as confine
    import rea.process.frames as frames
    import rea.process.leftovers as leftovers
    import rea.process.procfs as procfs
    import rea.render as render
    import rea.runtime_observations as runtime_observations
    import rea.search as search
    import rea.sourcemap as sourcemap
    import rea.typelib as typelib
    import rea.views as views
    from rea import __version__ as __version__
    from rea import hookimpl as hookimpl
    from rea.annotations import LIMITS as LIMITS
    from rea.annotations import MAX_TYPE_DECLARATION as MAX_TYPE_DECLARATION
    from rea.annotations import Note as Note
    from rea.annotations import Notebook as Notebook
    from rea.annotations import TypeEntry as TypeEntry
    from rea.annotations import check_field as check_field
    from rea.annotations import normalize_address as normalize_address
    from rea.arguments import Arguments as Arguments
    from rea.arguments import arg_bool as arg_bool
    from rea.arguments import arg_choice as arg_choice
    from rea.arguments import arg_float as arg_float
    from rea.arguments import arg_int as arg_int
    from rea.arguments import arg_ints as arg_ints
    from rea.arguments import arg_list as arg_list
    from rea.arguments import arg_object as arg_object
    from rea.arguments import arg_objects as arg_objects
    from rea.arguments import arg_str as arg_str
    from rea.arguments import arg_strs as arg_strs
    from rea.cache import AnalysisCache as AnalysisCache
    from rea.cache import CacheKey as CacheKey
    from rea.cache import default_cache as default_cache
    from rea.cache import profile_digest as profile_digest
    from rea.canonical import CanonicalError as CanonicalError
    from rea.canonical import canonical_digest as canonical_digest
    from rea.canonical import canonical_json as canonical_json
    from rea.catalog.dispatch import CALL_TOOL_BY_NAME_DEF as CALL_TOOL_BY_NAME_DEF
    from rea.catalog.dispatch import SEARCH_TOOLS_DEF as SEARCH_TOOLS_DEF
    from rea.catalog.document import catalog_digest as catalog_digest
    from rea.catalog.document import tool_entry as tool_entry
    from rea.catalog.invoke import invoke as invoke
    from rea.catalog.manifest import ToolEntry as ToolEntry
    from rea.catalog.projection import Projection as Projection
    from rea.catalog.projection import ProjectionDescriptor as ProjectionDescriptor
    from rea.catalog.prompt import PromptArgument as PromptArgument
    from rea.catalog.prompt import PromptDef as PromptDef
    from rea.catalog.prose import first_sentence as first_sentence
    from rea.catalog.refusals import not_advertised as not_advertised
    from rea.catalog.refusals import unknown_tool as unknown_tool
    from rea.catalog.resource import ResourceDef as ResourceDef
    from rea.catalog.resource import ResourceSpec as ResourceSpec
    from rea.catalog.resource import ResourceTemplateDef as ResourceTemplateDef
    from rea.catalog.schemas import EVIDENCE_RECORD as EVIDENCE_RECORD
    from rea.catalog.schemas import LEAN_EVIDENCE_RECORD as LEAN_EVIDENCE_RECORD
    from rea.catalog.schemas import RETAINED_EXAMPLE as RETAINED_EXAMPLE
    from rea.catalog.schemas import evidence_input as evidence_input
    from rea.catalog.schemas import flatten_root_union as flatten_root_union
    from rea.catalog.schemas import json_type as json_type
    from rea.catalog.schemas import object_output_schema as object_output_schema
    from rea.catalog.schemas import struct_output_schema as struct_output_schema
    from rea.catalog.schemas import with_evidence_defs as with_evidence_defs
    from rea.catalog.tool import NEGOTIATED_FEATURES as NEGOTIATED_FEATURES
    from rea.catalog.tool import ResultType as ResultType
    from rea.catalog.tool import ToolCall as ToolCall
    from rea.catalog.tool import ToolDef as ToolDef
    from rea.catalog.tool import ToolEffects as ToolEffects
    from rea.catalog.tool import ToolMode as ToolMode
    from rea.catalog.tool import lazy_handler as lazy_handler
    from rea.config import COMPACT_INPUT_SCHEMA_BUDGET_BYTES as COMPACT_INPUT_SCHEMA_BUDGET_BYTES
    from rea.config import MAX_INT32 as MAX_INT32
    from rea.config import TOOLSET_ALIASES as TOOLSET_ALIASES
    from rea.config import SettingSpec as SettingSpec
    from rea.config import choice_setting as choice_setting
    from rea.config import default_memory_limit_mb as default_memory_limit_mb
    from rea.config import integer_setting as integer_setting
    from rea.config import memory_limit_setting as memory_limit_setting
    from rea.context import CallContext as CallContext
    from rea.decoding import typed_failures as typed_failures
    from rea.dependencies import resolve as resolve_dependencies
    from rea.devtools import DEFAULT_TIMEOUT_S as DEFAULT_TIMEOUT_S
    from rea.devtools import HTTP_TIMEOUT_S as HTTP_TIMEOUT_S
    from rea.devtools import MAX_HTTP_BYTES as MAX_HTTP_BYTES
    from rea.devtools import MAX_MESSAGE_BYTES as MAX_MESSAGE_BYTES
    from rea.devtools import POLL_S as POLL_S
    from rea.devtools import CommandFailed as CommandFailed
    from rea.devtools import Subscriber as Subscriber
    from rea.devtools import arr as arr
    from rea.devtools import file_roots as file_roots
    from rea.devtools import loopback_endpoint as loopback_endpoint
    from rea.devtools import obj as obj
    from rea.devtools import wait as wait
    from rea.distributions import distribution_version as distribution_version
    from rea.errors import CODES as CODES
    from rea.errors import IssueReason as IssueReason
    from rea.errors import ReaError as ReaError
    from rea.errors import cancelled as cancelled
    from rea.errors import invalid_request as invalid_request
    from rea.errors import issue as issue
    from rea.evidence import AnalysisProfile as AnalysisProfile
    from rea.evidence import Authority as Authority
    from rea.evidence import Confidence as Confidence
    from rea.evidence import Evidence as Evidence
    from rea.evidence import ProviderIdentity as ProviderIdentity
    from rea.evidence import as_object as as_object
    from rea.evidence import retained_reference as retained_reference
    from rea.files import open_regular as open_regular
    from rea.files import read_regular as read_regular
    from rea.files import require_regular as require_regular
    from rea.fingerprint import fingerprints as fingerprints
    from rea.fingerprint import hash_instructions as hash_instructions
    from rea.fingerprint import normalize_instruction as normalize_instruction
    from rea.fingerprint import procedure_hash as procedure_hash
    from rea.fsnames import shown as shown
    from rea.hashed import confirm_hashed as confirm_hashed
    from rea.hashed import read_hashed as read_hashed
    from rea.hashed import read_identified as read_identified
    from rea.ledger import LEDGER_MEMORY_MB as LEDGER_MEMORY_MB
    from rea.operations import ANSWER_OPERATIONS as ANSWER_OPERATIONS
    from rea.operations import CORE_OPERATIONS as CORE_OPERATIONS
    from rea.operations.answers import OPERATIONS as OPERATIONS
    from rea.operations.answers import Answers as Answers
    from rea.operations.answers import answer as answer
    from rea.operations.answers import hexa as hexa
    from rea.operations.answers import int_param as int_param
    from rea.operations.answers import looks_like_address as looks_like_address
    from rea.operations.answers import no_code_here as no_code_here
    from rea.operations.answers import page as page
    from rea.operations.answers import page_fields as page_fields
    from rea.operations.answers import paging as paging
    from rea.operations.answers import parse_address as parse_address
    from rea.operations.answers import whole_program_paging as whole_program_paging
    from rea.operations.engine_rows import AddressedName as AddressedName
    from rea.operations.engine_rows import AddressedString as AddressedString
    from rea.operations.engine_rows import DataFlow as DataFlow
    from rea.operations.engine_rows import ExportRow as ExportRow
    from rea.operations.engine_rows import FlowStep as FlowStep
    from rea.operations.engine_rows import ImportRow as ImportRow
    from rea.operations.engine_rows import InsnRow as InsnRow
    from rea.operations.engine_rows import RegionRow as RegionRow
    from rea.operations.golang import GoModule as GoModule
    from rea.operations.golang import GoSetting as GoSetting
    from rea.operations.objc import Category as Category
    from rea.operations.objc import ObjCClass as ObjCClass
    from rea.operations.objc import Protocol as Protocol
    from rea.operations.objc import implementation_names as implementation_names
    from rea.operations.operands import split_operands as split_operands
    from rea.operations.operands import symbolized_text as symbolized_text
    from rea.operations.operands import symbols_of as symbols_of
    from rea.operations.pe_imports import pe_imports as pe_imports
    from rea.operations.records import Block as Block
    from rea.operations.records import CallSite as CallSite
    from rea.operations.records import Detail as Detail
    from rea.operations.records import Document as Document
    from rea.operations.records import Instruction as Instruction
    from rea.operations.records import Inventory as Inventory
    from rea.operations.records import Name as Name
    from rea.operations.records import Procedure as Procedure
    from rea.operations.records import Reference as Reference
    from rea.operations.records import Segment as Segment
    from rea.operations.records import Snapshot as Snapshot
    from rea.operations.records import SnapshotSource as SnapshotSource
    from rea.operations.records import Source as Source
    from rea.operations.records import String as String
    from rea.operations.relocations import INIT_ARRAYS as INIT_ARRAYS
    from rea.operations.relocations import METADATA_SECTIONS as METADATA_SECTIONS
    from rea.operations.relocations import chained_rebase_target as chained_rebase_target
    from rea.operations.relocations import elf_relocations as elf_relocations
    from rea.operations.relocations import pe_base_relocations as pe_base_relocations
    from rea.operations.relocations import relr_slots as relr_slots
    from rea.operations.relocations import words as words
    from rea.operations.shapes import CALL_GRAPH_LEGEND as CALL_GRAPH_LEGEND
    from rea.operations.shapes import EDGE_KIND_CODES as EDGE_KIND_CODES
    from rea.operations.shapes import PROCEDURE_KIND_CODES as PROCEDURE_KIND_CODES
    from rea.operations.shapes import PROCEDURE_LEGEND as PROCEDURE_LEGEND
    from rea.operations.shapes import REFERENCE_KIND_CODES as REFERENCE_KIND_CODES
    from rea.operations.shapes import REFERENCES_LEGEND as REFERENCES_LEGEND
    from rea.operations.shapes import RESULT_TYPES as RESULT_TYPES
    from rea.operations.shapes import AnalysisView as AnalysisView
    from rea.operations.shapes import Assembly as Assembly
    from rea.operations.shapes import CalleeItem as CalleeItem
    from rea.operations.shapes import CalleeRow as CalleeRow
    from rea.operations.shapes import CallerItem as CallerItem
    from rea.operations.shapes import ContainingProcedure as ContainingProcedure
    from rea.operations.shapes import DataInspection as DataInspection
    from rea.operations.shapes import DataType as DataType
    from rea.operations.shapes import DocumentItem as DocumentItem
    from rea.operations.shapes import IndexingCode as IndexingCode
    from rea.operations.shapes import InstructionInspection as InstructionInspection
    from rea.operations.shapes import NameItem as NameItem
    from rea.operations.shapes import NameKind as NameKind
    from rea.operations.shapes import Page as Page
    from rea.operations.shapes import PointerArray as PointerArray
    from rea.operations.shapes import ProcedureInfo as ProcedureInfo
    from rea.operations.shapes import ProcedureItem as ProcedureItem
    from rea.operations.shapes import ProcedureKind as ProcedureKind
    from rea.operations.shapes import ProcedureRef as ProcedureRef
    from rea.operations.shapes import ProcedureRow as ProcedureRow
    from rea.operations.shapes import ProcedureRows as ProcedureRows
    from rea.operations.shapes import ProgramCallGraph as ProgramCallGraph
    from rea.operations.shapes import ProgramCallGraphRows as ProgramCallGraphRows
    from rea.operations.shapes import PseudoCode as PseudoCode
    from rea.operations.shapes import ReferenceItem as ReferenceItem
    from rea.operations.shapes import ReferenceKind as ReferenceKind
    from rea.operations.shapes import ReferenceRow as ReferenceRow
    from rea.operations.shapes import ReferenceRows as ReferenceRows
    from rea.operations.shapes import SegmentItem as SegmentItem
    from rea.operations.shapes import SegmentKind as SegmentKind
    from rea.operations.shapes import SentReferenceItem as SentReferenceItem
    from rea.operations.shapes import Shape as Shape
    from rea.operations.shapes import StringEncoding as StringEncoding
    from rea.operations.shapes import StringItem as StringItem
    from rea.operations.shapes import Unavailable as Unavailable
    from rea.operations.shapes import XrefItem as XrefItem
    from rea.operations.shapes import decode as decode
    from rea.operations.unwind import Extents as Extents
    from rea.operations.unwind import fde_ranges as fde_ranges
    from rea.origins import origin_of as origin_of
    from rea.presentation import COMPLETE as COMPLETE
    from rea.presentation import PROVENANCE_URI as PROVENANCE_URI
    from rea.presentation import binding_report as binding_report
    from rea.presentation import of_session as of_session
    from rea.presentation import read_provenance as read_provenance
    from rea.process import Isolation as Isolation
    from rea.process import OwnedProcess as OwnedProcess
    from rea.process import ProcessSpec as ProcessSpec
    from rea.process import SandboxPolicy as SandboxPolicy
    from rea.process import WorkerChannel as WorkerChannel
    from rea.process import WorkerClient as WorkerClient
    from rea.process import python_worker_spec as python_worker_spec
    from rea.process import status_details as status_details
    from rea.process.channel import memory_exhausted as memory_exhausted
    from rea.process.held import held as held
    from rea.process.launch import die_with_parent as die_with_parent
    from rea.process.memory import OUT_OF_MEMORY as OUT_OF_MEMORY
    from rea.process.owned import now_iso as now_iso
    from rea.process.owned import signal_if as signal_if
    from rea.process.sandbox import reap_session_zombies as reap_session_zombies
    from rea.process.sandbox import unsandboxed as unsandboxed
    from rea.process.worker import Reporter as Reporter
    from rea.process.worker import Result as Result
    from rea.process.worker import Route as Route
    from rea.process.worker import claim_protocol_pipes as claim_protocol_pipes
    from rea.process.worker import operation_routes as operation_routes
    from rea.process.worker import serve as serve
    from rea.providers import AnalysisClient as AnalysisClient
    from rea.providers import AnalysisProvider as AnalysisProvider
    from rea.providers import Availability as Availability
    from rea.providers import CloseOutcome as CloseOutcome
    from rea.providers import Feature as Feature
    from rea.providers import OperationResult as OperationResult
    from rea.providers import ProviderDescriptor as ProviderDescriptor
    from rea.providers import TargetSupport as TargetSupport
    from rea.records import JSONObject as JSONObject
    from rea.records import JSONValue as JSONValue
    from rea.records import Paged as Paged
    from rea.records import PageOf as PageOf
    from rea.records import Record as Record
    from rea.records import ToolStep as ToolStep
    from rea.records import next_offset as next_offset
    from rea.records import page_of as page_of
    from rea.records import shown_page as shown_page
    from rea.registry import Registry as Registry
    from rea.registry import default_registry as default_registry
    from rea.render import FORMAT_PROPERTY as FORMAT_PROPERTY
    from rea.render import Edge as Edge
    from rea.render import Graph as Graph
    from rea.render import Node as Node
    from rea.render import Picture as Picture
    from rea.render import attach as attach
    from rea.render import requested as requested
    from rea.scenarios import ScenarioDriver as ScenarioDriver
    from rea.scenarios import ScenarioDriverDescriptor as ScenarioDriverDescriptor
    from rea.search import compile_pattern as compile_pattern
    from rea.search import compile_regex as compile_regex
    from rea.search import matcher as matcher
    from rea.selection import alternatives_remediation as alternatives_remediation
    from rea.selection import candidates as provider_candidates
    from rea.selection import select as select
    from rea.session import MAX_OPEN_TARGETS as MAX_OPEN_TARGETS
    from rea.session import OpenTarget as OpenTarget
    from rea.session import Session as Session
    from rea.sourcemap import MAX_MAP_BYTES as MAX_MAP_BYTES
    from rea.sourcemap import Decoded as Decoded
    from rea.sourcemap import Token as Token
    from rea.sourcemap import decode_data_url as decode_data_url
    from rea.target import Target as Target
    from rea.target import TargetView as TargetView
    from rea.target import identify as identify
    from rea.target import pinned_copy as pinned_copy
    from rea.target import read_error as read_error
    from rea.target import read_pinned as read_pinned
    from rea.target import sniff_format as sniff_format
    from rea.target import verify_unchanged as verify_unchanged
    from rea.typelib import types_key as types_key
    from rea.unknowns import SEVERITY_ORDER as SEVERITY_ORDER
    from rea.unknowns import UNKNOWN_ID as UNKNOWN_ID
    from rea.unknowns import Histories as Histories
    from rea.unknowns import Registry as UnknownsRegistry
    from rea.unknowns import Relationship as Relationship
    from rea.unknowns import RequiredEnvironment as RequiredEnvironment
    from rea.unknowns import Resolution as Resolution
    from rea.unknowns import UnknownRevision as UnknownRevision
    from rea.unknowns import UnknownStore as UnknownStore
    from rea.unknowns import conflict as conflict
    from rea.unknowns import new_id as new_id
    from rea.unknowns import not_found as not_found
    from rea.unknowns import sealed as sealed
    from rea.unpackers import HEAD_BYTES as HEAD_BYTES
    from rea.unpackers import NESTED_SEPARATOR as NESTED_SEPARATOR
    from rea.unpackers import ArchiveEntry as ArchiveEntry
    from rea.unpackers import ArchiveReader as ArchiveReader
    from rea.unpackers import DeclaredIntegrity as DeclaredIntegrity
    from rea.unpackers import EntryKind as EntryKind
    from rea.unpackers import EntryRead as EntryRead
    from rea.unpackers import IntegrityPolicy as IntegrityPolicy
    from rea.unpackers import Limits as Limits
    from rea.unpackers import Sink as Sink
    from rea.unpackers import Unpacker as Unpacker
    from rea.unpackers import UnpackerDescriptor as UnpackerDescriptor
    from rea.unpackers import is_missing as is_missing
    from rea.unpackers import limit_exceeded as limit_exceeded
    from rea.unpackers import link_escapes as link_escapes
    from rea.unpackers import open_beneath as open_beneath
    from rea.unpackers import path_problem as path_problem
    from rea.unpackers import read_head as read_head
    from rea.unpackers import select_unpacker as select_unpacker
    from rea.views import build_view as build_view
    from rea.views import row_page as row_page
    from rea.views import text_page as text_page


if not TYPE_CHECKING:
    # Hidden from the type checker: a module __getattr__ would let it accept any name, and a plugin importing one
    # this API does not export would pass mypy and fail at run time. It reads the imports above instead.

    def __getattr__(name: str) -> Any:
        # Lazy: a plugin that needs three names does not import the kernel's process or sandbox modules.
        try:
            module, attribute, _meaning = EXPORTS[name]
        except KeyError:
            raise AttributeError(f"module 'rea.plugin' has no attribute {name!r}") from None
        value = importlib.import_module(module)
        if attribute:
            value = getattr(value, attribute)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(__all__)
