"""Composed workflows over provider operations: overview, dossier, call graph, feature tracing."""

from __future__ import annotations

from typing import Any

import msgspec

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import OperationResult
from rea.plugin import ProcedureRef
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import TargetView
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import arg_bool
from rea.plugin import arg_int
from rea.plugin import arg_object
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.binary.core import annotate
from rea_plugins.binary.core.schema import CASE
from rea_plugins.binary.core.schema import DOCUMENT
from rea_plugins.binary.core.schema import PROCEDURE
from rea_plugins.binary.core.schema import binary_tool
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import every_row
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import limitations_of
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.core.schema import run
from rea_plugins.binary.core.shapes import BatchDecompile
from rea_plugins.binary.core.shapes import BinaryOverview
from rea_plugins.binary.core.shapes import Dossier
from rea_plugins.binary.core.shapes import FeatureProcedure
from rea_plugins.binary.core.shapes import FeatureSite
from rea_plugins.binary.core.shapes import FeatureStep
from rea_plugins.binary.core.shapes import FeatureTrace
from rea_plugins.binary.core.shapes import NameXrefs
from rea_plugins.binary.core.shapes import NotebookRow
from rea_plugins.binary.core.shapes import ReferencedName
from rea_plugins.binary.core.shapes import UserName
from rea_plugins.binary.graph.arrays import pointer_array
from rea_plugins.binary.graph.thunks import is_thunk
from rea_plugins.binary.navigation import listing
from rea_plugins.binary.workflows.engine_facts import unavailable

PAGE = 1000
MAX_REFERENCED = 64


# -- binary_overview ---------------------------------------------------------------------------


class _Counts(Record):
    procedures: int
    strings: int
    segments: int
    sections: int
    # Where the provider lists names.
    names: int | None = None


class _Overview(Record):
    """binary_overview's answer as built (the result's ``BinaryOverview``): the provider's document, segment,
    procedure and string rows as it gave them (its JSON), and only what the provider says (imports and exports where
    it lists names, even none; ``names_sampled`` when they are a first page; ``views`` when there are any)."""

    document: JSONValue
    format: JSONValue
    architecture: JSONValue
    entry: JSONValue
    segments: JSONValue
    counts: _Counts
    procedures_sample: JSONValue
    notable_strings: JSONValue
    notable_imports: list[JSONValue] | None = None
    notable_exports: list[JSONValue] | None = None
    names_sampled: bool = False
    views: list[TargetView] | None = None


def _overview(call: ToolCall) -> Evidence:
    check_document(call)
    limit = arg_int(call.args, "limit", 20)
    detailed = arg_str(call.args, "detail", "concise") == "detailed"
    call.ctx.progress("overview: reading document and segments")
    docs = run(call, "list_documents", {})
    segs = run(call, "list_segments", {})
    call.ctx.progress("overview: counting procedures")
    procs = run(call, "list_procedures", {"offset": 0, "limit": limit})
    call.ctx.progress("overview: counting strings")
    strings = run(call, "list_strings", {"offset": 0, "limit": min(1000, max(limit * 5, 100))})
    results = [docs, segs, procs, strings]
    doc = docs.normalized["documents"][0]
    segments = segs.normalized["segments"]
    counts = _Counts(
        procedures=procs.normalized["total"],
        strings=strings.normalized["total"],
        segments=sum(1 for s in segments if s["kind"] == "segment"),
        sections=sum(1 for s in segments if s["kind"] == "section"),
    )
    imports = exports = None
    sampled = False
    if call.session.supports("list_names"):
        call.ctx.progress("overview: reading names")
        names = run(call, "list_names", {"offset": 0, "limit": PAGE})
        results.append(names)
        listed = names.normalized["names"]
        counts = msgspec.structs.replace(counts, names=names.normalized["total"])
        imports = [n["name"] for n in listed if n["kind"] == "import"][:limit]
        exports = [n["name"] for n in listed if n["kind"] == "export"][:limit]
        sampled = names.normalized["next_offset"] is not None
    target = call.session.target
    # What else the file is (a .NET assembly in this PE, ...) and the tools that read it.
    views = call.session.registry.target_views(target) if target is not None else []
    body = _Overview(
        document=doc,
        format=doc["format"],
        architecture=doc["architecture"],
        entry=doc["entry"],
        segments=segments if detailed else segments[:limit],
        counts=counts,
        procedures_sample=procs.normalized["procedures"],
        notable_strings=[s for s in strings.normalized["strings"] if len(s["value"]) >= 6][:limit],
        notable_imports=imports,
        notable_exports=exports,
        names_sampled=sampled,
        views=views or None,
    )
    call.ctx.finish("overview: done")
    # As builtins: the answer's readers index it as the object it encodes to.
    normalized = msgspec.to_builtins(body)
    return evidence(call, OperationResult(normalized=normalized, limitations=limitations_of(*results)))


# -- analyze_function --------------------------------------------------------------------------


class _Dossier(Record):
    """analyze_function's answer as built (the result's ``Dossier``): the provider's answers as it gave them (its
    JSON; a facet it cannot give is its ``unavailable`` object), in the order the answer has always said them.
    ``cfg_edges`` is said where the provider gives blocks, ``assembly`` with include_assembly; a paged answer adds
    where each part's page lies and the complete record's id."""

    procedure: JSONValue
    basic_blocks: JSONValue
    cfg_edges: JSONValue | None = None
    callers: JSONValue
    callees: JSONValue
    references: JSONValue
    referenced_strings: JSONValue
    referenced_names: list[ReferencedName]
    assembly: JSONObject | None = None
    pseudocode: JSONValue
    comments: list[NotebookRow]
    user_names: list[UserName]
    # Where each paged part lies (the kernel's row and text pages).
    pages: dict[str, JSONObject] | None = None
    complete_evidence_id: str | None = None


def dossier(
    call: ToolCall,
    procedure: str,
    *,
    include_assembly: bool = True,
    max_instructions: int = 2000,
    max_pseudocode_chars: int = 20000,
) -> tuple[_Dossier, list[str]]:
    """The analyze_function body for one procedure, and its limitations."""
    sel: JSONObject = {"procedure": procedure}
    info = run(call, "procedure_info", sel)
    results = [info]
    call.ctx.progress("analyze_function: blocks")
    cfg_edges = None
    if call.session.supports("procedure_blocks"):
        blocks = run(call, "procedure_blocks", sel)
        results.append(blocks)
        basic_blocks, cfg_edges = blocks.normalized["blocks"], blocks.normalized["edges"]
    else:
        basic_blocks = msgspec.to_builtins(unavailable(call, "procedure_blocks"))
    call.ctx.progress("analyze_function: callers and callees")
    callers = run(call, "procedure_callers", sel)
    callees = run(call, "procedure_callees", sel)
    results += [callers, callees]
    refs = every_row(call, "procedure_references", "references", {**sel, "direction": "outgoing"}, "references")
    strings: list[JSONValue] = []  # the provider's string rows
    names: dict[str, str] = {}
    targets = sorted({str(r["to"]) for r in refs if r["to"] is not None and r["kind"] in ("data", "read")})
    for addr in targets[:MAX_REFERENCED]:
        call.ctx.check("referenced strings")
        found = run(call, "list_strings", {"address": addr, "offset": 0, "limit": 10}).normalized["strings"]
        strings.extend(found)
    for r in refs:
        if r.get("to_name") and r["to"] is not None:
            names.setdefault(str(r["to"]), str(r["to_name"]))
    assembly: JSONObject | None = None
    if include_assembly:
        asm = run(call, "procedure_assembly", {**sel, "max_instructions": max_instructions})
        assembly = {**asm.normalized, "instructions": [*listing.lean_rows(asm.normalized["instructions"])]}
        results.append(asm)
    pseudocode: JSONValue
    if call.session.supports("procedure_pseudo_code"):
        call.ctx.progress("analyze_function: pseudocode")
        try:
            pc = run(call, "procedure_pseudo_code", sel).normalized
            text = pc.get("text", "")
            pseudocode = {
                **pc,
                "status": "ok",
                "text": text[:max_pseudocode_chars],
                "truncated": len(text) > max_pseudocode_chars,
            }
        except ReaError as exc:
            if exc.code in ("cancelled",):
                raise
            pseudocode = {"status": "error", "error": exc.projection_dict()}
    else:
        pseudocode = msgspec.to_builtins(unavailable(call, "procedure_pseudo_code"))
    provided = [
        info.normalized,
        basic_blocks,
        cfg_edges,
        callers.normalized["callers"],
        callees.normalized["callees"],
        refs,
        strings,
        assembly,
        pseudocode,
    ]
    body = _Dossier(
        procedure=info.normalized,
        basic_blocks=basic_blocks,
        cfg_edges=cfg_edges,
        callers=callers.normalized["callers"],
        callees=callees.normalized["callees"],
        references=refs,
        referenced_strings=strings,
        referenced_names=[ReferencedName(address=a, name=n) for a, n in sorted(names.items())],
        assembly=assembly,
        pseudocode=pseudocode,
        # The analyst's comments in the procedure, and which names in this dossier the analyst gave.
        comments=annotate.comments_in(annotate.notebook(call), info.normalized["address"], info.normalized.get("end")),
        user_names=annotate.user_names(provided),
    )
    return body, limitations_of(*results)


# The dossier's row collections, each paged by limit and collection_offset in the default answer.
COLLECTIONS = (
    "basic_blocks",
    "cfg_edges",
    "callers",
    "callees",
    "references",
    "referenced_strings",
    "referenced_names",
    "comments",
)
PAGE_ARGUMENTS = (
    "limit",
    "collection_offset",
    "max_instructions",
    "assembly_offset",
    "max_pseudocode_chars",
    "pseudocode_offset",
)
DOSSIER_LIMIT = 64
DOSSIER_INSTRUCTIONS = 128
DOSSIER_PSEUDOCODE_CHARS = 20000


def _page(call: ToolCall, body: _Dossier) -> _Dossier:
    """The requested page of every collection, the assembly and the pseudocode, with where each page lies."""
    from rea.plugin import row_page
    from rea.plugin import text_page

    args = call.args
    limit, offsets = arg_int(args, "limit", DOSSIER_LIMIT), arg_object(args, "collection_offset") or {}
    # The paged parts, by field (the kernel's pages are JSON objects).
    out: dict[str, JSONValue | list[ReferencedName] | list[NotebookRow]] = {}
    pages: dict[str, JSONObject] = {}
    for name in COLLECTIONS:
        rows = getattr(body, name)
        if isinstance(rows, list):
            first = arg_int(offsets, name, 0)
            if first > len(rows):
                raise invalid_request(
                    f"collection_offset.{name} is past the end ({len(rows)} rows)",
                    [issue(f"collection_offset/{name}", "out_of_range", f"at most {len(rows)}")],
                )
            page = row_page(rows, first, limit)
            out[name] = page.pop("items")
            pages[name] = page
    asm = body.assembly
    listed = asm.get("instructions") if asm is not None else None
    if asm is not None and isinstance(listed, list):
        start = arg_int(args, "assembly_offset", 0)
        if start > len(listed):
            raise invalid_request(
                f"assembly_offset is past the end ({len(listed)} instructions)",
                [issue("assembly_offset", "out_of_range", f"at most {len(listed)}")],
            )
        page = row_page(listed, start, arg_int(args, "max_instructions", DOSSIER_INSTRUCTIONS))
        out["assembly"] = {
            **asm,
            "instructions": page.pop("items"),
            "truncated": bool(asm.get("truncated")) or page["next_offset"] is not None,
        }
        pages["assembly"] = page
    pc = body.pseudocode
    if isinstance(pc, dict) and isinstance(pc.get("text"), str):
        start = arg_int(args, "pseudocode_offset", 0)
        try:
            page = text_page(str(pc["text"]), start, arg_int(args, "max_pseudocode_chars", DOSSIER_PSEUDOCODE_CHARS))
        except ReaError:
            raise invalid_request(
                "pseudocode_offset is past the end of the pseudocode",
                [issue("pseudocode_offset", "out_of_range", "past the end")],
            ) from None
        out["pseudocode"] = {**pc, "text": page.pop("text"), "truncated": page["next_offset"] is not None}
        pages["pseudocode"] = page
    return msgspec.structs.replace(body, **out, pages=pages)


def _analyze_function(call: ToolCall) -> Evidence:
    check_document(call)
    body, lims = dossier(
        call,
        arg_str(call.args, "procedure", ""),
        include_assembly=arg_bool(call.args, "include_assembly", True),
        max_instructions=20000,
        max_pseudocode_chars=1 << 62,
    )
    call.ctx.finish("analyze_function: done")
    # The complete dossier is the record; the answer is its requested page when it does not fit one.
    # As builtins: the answer's readers index it as the object it encodes to.
    complete = call.session.evidence(
        call.tool.name,
        {k: v for k, v in annotate.parameters(call).items() if k not in PAGE_ARGUMENTS},
        OperationResult(normalized=msgspec.to_builtins(body), limitations=lims),
    )
    paged = _page(call, body)
    if not any(p["offset"] or p["next_offset"] is not None for p in (paged.pages or {}).values()):
        return complete
    call.session.ledger.record(complete)
    paged = msgspec.structs.replace(paged, complete_evidence_id=complete.evidence_id)
    return evidence(
        call,
        OperationResult(normalized=msgspec.to_builtins(paged), limitations=lims),
        links=[complete.evidence_id],
    )


# -- batch_decompile ---------------------------------------------------------------------------


class _Decompiled(Record):
    """One batch_decompile item as built (the result's ``Decompiled`` or ``DecompileFailed``, its keys in the order
    the answer has always had them: a tagged Struct would say ``status`` first)."""

    procedure: str
    status: str
    # The provider's pseudo_code answer as it gave it (a Struct or its JSON).
    result: Any = None
    # The canonical error the call ended with (ReaError.projection_dict: the kernel's error document).
    error: JSONObject | None = None


def _batch_decompile(call: ToolCall) -> Evidence:
    selectors = arg_strs(call.args, "addresses") or []
    if call.session.supports(BATCH_OPERATION):
        items = _batch_at_once(call, selectors)
    else:
        items = []
        for i, sel in enumerate(selectors):
            call.ctx.check("batch_decompile")
            call.ctx.progress(f"batch_decompile: {i} of {len(selectors)} done", done=i, total=len(selectors))
            try:
                out = run(call, "procedure_pseudo_code", {"procedure": sel}).normalized
                items.append(_Decompiled(procedure=sel, status="ok", result=out))
            except ReaError as exc:
                if exc.code == "cancelled":
                    raise
                items.append(_Decompiled(procedure=sel, status="error", error=exc.projection_dict()))
    ok = sum(1 for x in items if x.status == "ok")
    # As builtins: the answer's readers index its items as the objects they encode to.
    rows = msgspec.to_builtins(items)
    return evidence(call, OperationResult(normalized={"items": rows, "ok": ok, "failed": len(items) - ok}))


# A provider whose decompiler runs several workers (native: two) takes the whole batch as one operation: the
# session runs one operation on a target at a time, so one call per procedure would keep one worker busy.
BATCH_OPERATION = "procedure_pseudo_code_batch"


def _batch_at_once(call: ToolCall, selectors: list[str]) -> list[_Decompiled]:
    """The batch as one provider operation, each item then named from the notebook as a single call's would be."""
    nb = annotate.notebook(call)
    chosen = [annotate.selector(nb, {"procedure": sel})["procedure"] for sel in selectors]
    params = annotate.for_engine(nb, "procedure_pseudo_code", {"procedures": chosen})
    answered = call.session.execute(BATCH_OPERATION, params, call.ctx).normalized["items"]
    items: list[_Decompiled] = []
    for sel, item in zip(selectors, answered, strict=True):
        if item["status"] == "ok":
            named = annotate.apply(call, "procedure_pseudo_code", OperationResult(normalized=item["result"]), nb)
            items.append(_Decompiled(procedure=sel, status="ok", result=named.normalized))
        else:
            items.append(_Decompiled(procedure=sel, status="error", error=item["error"]))
    return items


# -- find_xrefs_to_name ------------------------------------------------------------------------


# The name rows and reference rows below are the provider's (its answer's JSON), passed on with members added.


def _find_name(call: ToolCall, name: str) -> list[JSONObject]:
    names = every_row(call, "list_names", "names", {}, "find name")
    return [n for n in names if n["name"] == name and n["address"] is not None]


def _name_matches(call: ToolCall, name: str) -> list[JSONObject]:
    hits = _find_name(call, name)
    if not hits and call.session.supports("procedure_address"):
        try:
            p = run(call, "procedure_address", {"procedure": name}).normalized
            hits = [{"address": p["address"], "name": p["name"], "kind": "function", "external": False}]
        except ReaError as exc:
            if exc.code != "invalid_request":
                raise
    out: list[JSONObject] = []
    for h in hits:
        refs = _once(run(call, "xrefs", {"address": h["address"]}).normalized["references"])
        out.append({**h, "references": [*(_through_thunks(call, h, refs) if h.get("external") else refs)]})
    return out


def _find_xrefs_to_name(call: ToolCall) -> Evidence:
    name = arg_str(call.args, "name", "")
    session = call.session
    others = [t for t in session.open_targets() if t.target_id != session.target_id]
    if session.target_named() or not others:
        out = _name_matches(call, name)
    else:
        # Several targets open and none named: every one of them answers, each under its own annotations.
        out = [{**m, "target_id": session.target_id} for m in _name_matches(call, name)]
        for other in others:
            with session.using(other.target_id):
                if all(session.supports(op) for op in call.tool.requires_operations):
                    each = ToolCall(call.tool, call.args, session, call.ctx)
                    out += [{**m, "target_id": other.target_id} for m in _name_matches(each, name)]
    if not out:
        raise invalid_request(f"no name {name!r} in this binary", [issue("name", "invalid_value", "unknown name")])
    return evidence(call, OperationResult(normalized={"name": name, "matches": out}))


def _once(refs: list[JSONObject]) -> list[JSONObject]:
    """Each site once: an ``external`` reference repeats the jump or call an instruction makes at that site."""
    acting = {(r["from"], r["to"]) for r in refs if r["kind"] != "external"}
    return [r for r in refs if r["kind"] != "external" or (r["from"], r["to"]) not in acting]


def _through_thunks(call: ToolCall, hit: JSONObject, refs: list[JSONObject]) -> list[JSONObject]:
    """An import reached through its thunk: the thunk listed once as such, then the code that calls the thunk."""
    out: list[JSONObject] = []
    for r in refs:
        stub = r.get("from_procedure")
        if (
            not isinstance(stub, str)
            or stub == hit["address"]
            or r["kind"] not in ("jump", "external")
            or not is_thunk(call, stub)
        ):
            out.append(r)
            continue
        out.append({**r, "kind": "thunk"})
        callers = run(call, "xrefs", {"address": stub}).normalized["references"]
        out.extend({**c, "via_thunk": stub} for c in _once(callers) if c["kind"] in ("call", "jump"))
    return out


# -- trace_feature -----------------------------------------------------------------------------


class NamedFeatureProcedure(FeatureProcedure, omit_defaults=False):
    """A procedure of the trace as the answer lists it: ``name`` said even when null (the procedure's own name)."""


def _feature_user(users: dict[str, NamedFeatureProcedure], address: str) -> NamedFeatureProcedure:
    """The trace's entry for the procedure at ``address`` (made on first use)."""
    found = users.get(address)
    if found is None:
        found = users[address] = NamedFeatureProcedure(address=address, via=[])
    return found


def _trace_feature(call: ToolCall) -> Evidence:
    query = arg_str(call.args, "query", "")
    limit = arg_int(call.args, "limit", 20)
    max_depth = arg_int(call.args, "max_depth", 2)
    case = arg_bool(call.args, "case_sensitive")
    search: JSONObject = {"pattern": query, "mode": "literal", "case_sensitive": case, "offset": 0, "limit": limit}
    call.ctx.progress("trace_feature: searching strings")
    sres = run(call, "search_strings", search).normalized
    pres = run(call, "search_procedures", search).normalized
    users: dict[str, NamedFeatureProcedure] = {}
    strings = []
    for s in sres["strings"]:
        call.ctx.check("trace_feature")
        refs = run(call, "xrefs", {"address": s["address"]}).normalized["references"]
        procs = sorted({r["from_procedure"] for r in refs if r["from_procedure"]})
        referenced_from = [FeatureSite(source=r["from"], procedure=r["from_procedure"]) for r in refs]
        # A slot no code references may sit inside a pointer array that code indexes from its base.
        for r in refs:
            found = None if r["from_procedure"] else pointer_array(call, r["from"])
            if found is None:
                continue
            for site in found.indexed_by:
                referenced_from.append(
                    FeatureSite(
                        source=site.source,
                        procedure=site.procedure,
                        via="array-base",
                        slot=found.slot,
                        base=found.base,
                        index=found.index,
                    )
                )
                step = FeatureStep(string=s["address"], via="array-base", base=found.base, index=found.index)
                steps = _feature_user(users, site.procedure).via
                if step not in steps:
                    steps.append(step)
        strings.append({**s, "referenced_from": referenced_from})
        for p in procs:
            _feature_user(users, p).via.append(FeatureStep(string=s["address"]))
    for p in pres["procedures"]:
        _feature_user(users, p["address"]).via.append(FeatureStep(name=p["name"]))
    paths = []
    budget = max_operations = arg_int(call.args, "max_operations", 200)
    for addr in sorted(users)[:limit]:
        info = run(call, "procedure_address", {"procedure": addr}).normalized
        users[addr].name = info["name"]
        frontier = [[ProcedureRef(address=addr, name=info["name"])]]
        for _ in range(max_depth):
            nxt = []
            for path in frontier:
                if budget <= 0:
                    break
                budget -= 1
                callers = run(call, "procedure_callers", {"procedure": path[0].address}).normalized["callers"]
                for c in callers:
                    if all(c["address"] != n.address for n in path):
                        nxt.append([ProcedureRef(address=c["address"], name=c["name"]), *path])
            if not nxt:
                break
            frontier = nxt[:limit]
        paths.extend(frontier[:limit])
    body = {
        "query": query,
        "strings": strings,
        "procedures": [users[a] for a in sorted(users)][:limit],
        "call_paths": [p for p in paths if len(p) > 1][: limit * 4],
        "truncated": sres["next_offset"] is not None or pres["next_offset"] is not None or budget <= 0,
        "limits": {"limit": limit, "max_depth": max_depth, "max_operations": max_operations},
    }
    call.ctx.finish("trace_feature: done")
    return evidence(call, OperationResult(normalized=body, confidence="derived"))


OVERVIEW_OPS = ("list_documents", "list_segments", "list_procedures", "list_strings")
DOSSIER_OPS = (
    "procedure_info",
    "procedure_callers",
    "procedure_callees",
    "procedure_references",
    "procedure_assembly",
    "list_strings",
)


def tools() -> list[ToolDef]:
    return [
        binary_tool(
            name="binary_overview",
            result_type=BinaryOverview,
            description=(
                "First call after open: format, architecture, entry, segments, exact procedure and "
                "string counts, notable imports, exports and strings."
            ),
            input_schema=obj(
                {
                    "detail": prop(
                        "string", "concise (default) or detailed.", ["concise"], enum=["concise", "detailed"]
                    ),
                    "limit": prop("integer", "How many samples of each kind.", [20], minimum=1, maximum=200),
                    "document": DOCUMENT,
                }
            ),
            handler=_overview,
            requires_operations=OVERVIEW_OPS,
            examples=({}, {"detail": "detailed", "limit": 50}),
        ),
        binary_tool(
            name="analyze_function",
            result_type=Dossier,
            description=(
                "Function dossier: info, basic blocks and CFG, callers, callees, references, "
                "referenced strings and names, assembly, and pseudocode where the provider has it. "
                "A dossier larger than one page (limit rows per collection, max_instructions, "
                "max_pseudocode_chars) answers with that page: pages says where each part lies, and "
                "complete_evidence_id names the retained complete record (inspect_analysis_view)."
            ),
            input_schema=obj(
                {
                    "procedure": PROCEDURE,
                    "include_assembly": prop("boolean", "Include the assembly listing.", [True]),
                    "limit": prop(
                        "integer",
                        f"Rows of each collection (blocks, edges, callers, "
                        f"callees, references, strings, names, comments) in the answer "
                        f"(default {DOSSIER_LIMIT}).",
                        [64],
                        minimum=1,
                        maximum=1000,
                    ),
                    "collection_offset": {
                        "type": "object",
                        "description": "First row of each collection, by name.",
                        "properties": {
                            c: {"type": "integer", "minimum": 0, "description": f"First row of {c}."}
                            for c in COLLECTIONS
                        },
                        "additionalProperties": False,
                        "examples": [{"references": 64}],
                    },
                    "max_instructions": prop(
                        "integer",
                        f"Instructions of the assembly in the answer (default {DOSSIER_INSTRUCTIONS}).",
                        [128],
                        minimum=1,
                        maximum=20000,
                    ),
                    "assembly_offset": prop("integer", "First instruction of the assembly page.", [0], minimum=0),
                    "max_pseudocode_chars": prop(
                        "integer",
                        f"Pseudocode in the answer, in UTF-16 code units (default {DOSSIER_PSEUDOCODE_CHARS}).",
                        [20000],
                        minimum=1,
                        maximum=1_000_000,
                    ),
                    "pseudocode_offset": prop(
                        "integer", "First UTF-16 code unit of the pseudocode page.", [0], minimum=0
                    ),
                    "document": DOCUMENT,
                },
                ("procedure",),
            ),
            handler=_analyze_function,
            requires_operations=DOSSIER_OPS,
            cli_subject="procedure",
            examples=({"procedure": "main"}, {"procedure": "0x401136", "include_assembly": False}),
        ),
        binary_tool(
            name="batch_decompile",
            task_support="optional",
            result_type=BatchDecompile,
            description="Decompile up to 20 procedures; each item reports ok with pseudocode or its error.",
            input_schema=obj(
                {
                    "addresses": {
                        "type": "array",
                        "description": "Procedure names or addresses.",
                        "items": {"type": "string", "minLength": 1},
                        "minItems": 1,
                        "maxItems": 20,
                        "examples": [["main", "0x401136"]],
                    }
                },
                ("addresses",),
            ),
            handler=_batch_decompile,
            requires_operations=("procedure_pseudo_code",),
            examples=({"addresses": ["main"]}, {"addresses": ["main", "0x401136"]}),
        ),
        binary_tool(
            name="find_xrefs_to_name",
            result_type=NameXrefs,
            description="Exact name to its addresses and every reference to them (in every open target).",
            input_schema=obj(
                {"name": prop("string", "Exact symbol or import name.", ["puts"], minLength=1)}, ("name",)
            ),
            handler=_find_xrefs_to_name,
            requires_operations=("list_names", "xrefs"),
            cli_subject="name",
            examples=({"name": "puts"}, {"name": "main"}),
        ),
        binary_tool(
            name="trace_feature",
            result_type=FeatureTrace,
            description=("From a string or name to the procedures that use it and their caller paths (bounded)."),
            input_schema=obj(
                {
                    "query": prop(
                        "string", "Literal text of a string or a name.", ["usage"], minLength=1, maxLength=1024
                    ),
                    "case_sensitive": CASE,
                    "limit": prop("integer", "Matches to follow (1-100).", [20], minimum=1, maximum=100),
                    "max_depth": prop("integer", "Caller levels to walk (0-4).", [2], minimum=0, maximum=4),
                    "max_operations": prop(
                        "integer", "Budget of caller lookups (1-2000).", [200], minimum=1, maximum=2000
                    ),
                },
                ("query",),
            ),
            handler=_trace_feature,
            requires_operations=(
                "search_strings",
                "search_procedures",
                "xrefs",
                "procedure_callers",
                "procedure_address",
            ),
            cli_subject="query",
            examples=({"query": "usage"}, {"query": "main", "max_depth": 1}),
        ),
    ]


__all__ = ["dossier", "tools"]
