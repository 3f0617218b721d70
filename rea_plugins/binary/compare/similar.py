"""find_similar_functions: every procedure of the open targets ranked by MinHash similarity to one procedure.

Reading a side is compare_binaries' (one reading per target, binding and bounds, cached in the session); the
sketches are ``compare.similarity``'s.
"""

from __future__ import annotations

import msgspec

from rea.plugin import Evidence
from rea.plugin import OperationResult
from rea.plugin import ProcedureRef
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import arg_float
from rea.plugin import arg_strs
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.binary.compare.bindiff import bounds_of
from rea_plugins.binary.compare.bindiff import page_asked
from rea_plugins.binary.compare.bindiff import read_bounds
from rea_plugins.binary.compare.bindiff import read_side
from rea_plugins.binary.compare.similarity import DEFAULT_MIN_SIMILARITY
from rea_plugins.binary.compare.similarity import NUM_PERM
from rea_plugins.binary.compare.similarity import jaccard
from rea_plugins.binary.core.schema import LIMIT
from rea_plugins.binary.core.schema import OFFSET
from rea_plugins.binary.core.schema import PROCEDURE
from rea_plugins.binary.core.schema import binary_tool
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.core.schema import run
from rea_plugins.binary.core.shapes import SimilarFunction
from rea_plugins.binary.core.shapes import SimilarFunctions
from rea_plugins.binary.core.shapes import paging_of

# -- find_similar_functions ---------------------------------------------------------------------------------------


def _find_similar_functions(call: ToolCall) -> Evidence:
    args, session = call.args, call.session
    home = session.target_id
    assert home is not None
    found = run(call, "procedure_address", {"procedure": args["procedure"]}).normalized
    address = found["address"]
    bounds = bounds_of(args)
    refs = arg_strs(args, "targets") or [t.target_id for t in session.open_targets()]
    chosen = list(dict.fromkeys(session.find(r, "targets").target_id for r in refs))
    if home not in chosen:
        chosen.insert(0, home)
    sides = {tid: read_side(call, tid, f"find_similar_functions: reading {tid}", bounds) for tid in chosen}
    mine = sides[home][1].procs.get(address)
    if mine is None:
        raise invalid_request(
            f"procedure {address} was not read (not a local procedure with code, or past max_procedures)",
            [issue("procedure", "invalid_value", "a local procedure within max_procedures")],
        )
    query = mine.sketch_values()
    minimum = arg_float(args, "min_similarity", DEFAULT_MIN_SIMILARITY)
    ranked: list[SimilarFunction] = []
    compared = 0
    for tid, (_sha, side) in sides.items():
        for i, p in enumerate(side.procs.values()):
            if i % 512 == 0:
                call.ctx.check("find_similar_functions: ranking")
            if tid == home and p.address == address:
                continue
            compared += 1
            values = p.sketch_values()
            if query is None or values is None:
                continue
            identical = p.hash == mine.hash
            score = 1.0 if identical else jaccard(query, values)
            if score >= minimum:
                ranked.append(
                    SimilarFunction(
                        target_id=tid,
                        procedure=ProcedureRef(address=p.address, name=p.name),
                        similarity=round(score, 4),
                        identical=identical,
                    )
                )
    ranked.sort(key=lambda s: (-s.similarity, s.target_id != home, s.target_id, int(s.procedure.address, 16)))
    page = page_asked(args, ranked, 20)
    partial = [tid for tid, (_sha, side) in sides.items() if side.bound is not None]
    result = SimilarFunctions(
        query=ProcedureRef(address=address, name=mine.name),
        target_id=home,
        targets=len(sides),
        compared=compared,
        items=page.items,
        **paging_of(page),
        complete=not partial,
    )
    limitations = [
        "Similarity is the Jaccard similarity of instruction 1- to 3-grams (addresses and constants masked), "
        f"estimated from {NUM_PERM}-permutation MinHash sketches: about ±0.06; compare_functions says what differs."
    ]
    if partial:
        limitations.append(
            f"Partial: a bound stopped the reading of {', '.join(partial)}; raise max_procedures or max_instructions."
        )
    return session.evidence(
        call.tool.name,
        {**args, "target_ids": chosen},
        OperationResult(normalized=msgspec.to_builtins(result), limitations=limitations, confidence="derived"),
    )


def tools() -> list[ToolDef]:
    return [
        binary_tool(
            name="find_similar_functions",
            task_support="optional",
            description=(
                "Rank the procedures of every open target by their similarity to one procedure (MinHash over "
                "instruction n-grams), most similar first, with the score."
            ),
            input_schema=obj(
                {
                    "procedure": PROCEDURE,
                    "targets": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1},
                        "minItems": 1,
                        "uniqueItems": True,
                        "description": "Open targets to search, by target_id or alias (default: all).",
                        "examples": [["v1", "v2"]],
                    },
                    "min_similarity": prop(
                        "number",
                        "Least similarity listed (0-1, default 0.5).",
                        [DEFAULT_MIN_SIMILARITY],
                        minimum=0,
                        maximum=1,
                        default=DEFAULT_MIN_SIMILARITY,
                    ),
                    **read_bounds("target"),
                    "offset": OFFSET,
                    "limit": {**LIMIT, "default": 20, "examples": [20]},
                },
                ("procedure",),
            ),
            handler=_find_similar_functions,
            result_type=SimilarFunctions,
            requires_operations=("list_procedures", "read_function_instructions", "procedure_callees"),
            examples=({"procedure": "main"}, {"procedure": "0x401136", "min_similarity": 0.8}),
        )
    ]
