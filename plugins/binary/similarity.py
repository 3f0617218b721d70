"""Function similarity: MinHash sketches of instruction n-grams (``datasketch``), and find_similar_functions.

A procedure's sketch is the MinHash of the set of its normalized instructions' 1-, 2- and 3-grams (addresses and
constants masked, as ``rea.fingerprint`` normalizes them), so the Jaccard similarity of two procedures' n-gram
sets is estimated from two small arrays. compare_binaries draws its similarity candidates from a MinHash LSH
index of the leftovers; find_similar_functions ranks every procedure of the open targets by it.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING, Any

import msgspec
from rea_plugins.binary.schema import LIMIT, OFFSET, PROCEDURE, obj, prop, run
from rea_plugins.binary.shapes import SimilarFunction, SimilarFunctions

from rea.plugin import Evidence, OperationResult, ProcedureRef, ToolCall, ToolDef, invalid_request, issue

if TYPE_CHECKING:
    from datasketch import LeanMinHash as Sketch
else:
    Sketch = Any

# 64 permutations: a Jaccard estimate within about 0.06 (one standard error at 0.5), in 256 bytes a procedure.
NUM_PERM = 64
SEED = 1
DEFAULT_MIN_SIMILARITY = 0.5


def _low32(item: int) -> int:
    # The n-grams are already hashed to integers: MinHash needs them as 32-bit values, not rehashed as bytes.
    return item & 0xFFFFFFFF


def shingles(lines: array[int]) -> set[int]:
    """The 1-, 2- and 3-grams of a procedure's normalized-instruction hashes, each hashed to one integer."""
    out = set(lines)
    out.update(hash((lines[i], lines[i + 1])) for i in range(len(lines) - 1))
    out.update(hash((lines[i], lines[i + 1], lines[i + 2])) for i in range(len(lines) - 2))
    return out


def sketch(lines: array[int]) -> Sketch | None:
    """The MinHash of a procedure's n-grams (None when it has no instructions)."""
    from datasketch import LeanMinHash, MinHash

    if not lines:
        return None
    m = MinHash(num_perm=NUM_PERM, seed=SEED, hashfunc=_low32)
    m.update_batch(shingles(lines))
    # Lean: the hash values and the seed only (the permutations are the same for every sketch of a seed).
    return LeanMinHash(m)


def jaccard(a: Sketch, b: Sketch) -> float:
    """The estimated Jaccard similarity of two procedures' n-gram sets."""
    return float(a.jaccard(b))


class Index:
    """A MinHash LSH index of sketches: the keys whose similarity to a query likely passes ``threshold``."""

    def __init__(self, threshold: float) -> None:
        from datasketch import MinHashLSH

        self._lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
        self._sketches: dict[str, Sketch] = {}

    def add(self, key: str, values: Sketch) -> None:
        self._lsh.insert(key, values)
        self._sketches[key] = values

    def query(self, values: Sketch) -> list[tuple[float, str]]:
        """(estimated similarity, key) of the candidates, most similar first."""
        found = self._lsh.query(values)
        return sorted(((jaccard(values, self._sketches[k]), k) for k in found), key=lambda sk: (-sk[0], sk[1]))


# -- find_similar_functions ---------------------------------------------------------------------------------------


def _find_similar_functions(call: ToolCall) -> Evidence:
    # Reading a side is compare_binaries' (one reading per target, binding and bounds, cached in the session).
    from rea_plugins.binary.bindiff import DEFAULT_MAX_INSTRUCTIONS, DEFAULT_MAX_PROCEDURES, read_side

    args, session = call.args, call.session
    home = session.target_id
    assert home is not None
    found = run(call, "procedure_address", {"procedure": args["procedure"]}).normalized
    address = found["address"]
    bounds = (
        args.get("max_procedures", DEFAULT_MAX_PROCEDURES),
        args.get("max_instructions", DEFAULT_MAX_INSTRUCTIONS),
    )
    refs = args.get("targets") or [t.target_id for t in session.open_targets()]
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
    minimum = args.get("min_similarity", DEFAULT_MIN_SIMILARITY)
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
    offset, limit = args.get("offset", 0), args.get("limit", 20)
    end = min(len(ranked), offset + limit)
    partial = [tid for tid, (_sha, side) in sides.items() if side.bound is not None]
    result = SimilarFunctions(
        query=ProcedureRef(address=address, name=mine.name),
        target_id=home,
        targets=len(sides),
        compared=compared,
        items=ranked[offset:end],
        offset=offset,
        limit=limit,
        total=len(ranked),
        next_offset=end if end < len(ranked) else None,
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
    from rea_plugins.binary.bindiff import (
        DEFAULT_MAX_INSTRUCTIONS,
        DEFAULT_MAX_PROCEDURES,
        MAX_INSTRUCTIONS,
        MAX_PROCEDURES,
    )

    return [
        ToolDef(
            name="find_similar_functions",
            family="binary",
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
                    "max_procedures": prop(
                        "integer",
                        "Procedures read per target, in address order (past it: partial).",
                        [DEFAULT_MAX_PROCEDURES],
                        minimum=1,
                        maximum=MAX_PROCEDURES,
                        default=DEFAULT_MAX_PROCEDURES,
                    ),
                    "max_instructions": prop(
                        "integer",
                        "Instructions read per target (past it: partial).",
                        [DEFAULT_MAX_INSTRUCTIONS],
                        minimum=1,
                        maximum=MAX_INSTRUCTIONS,
                        default=DEFAULT_MAX_INSTRUCTIONS,
                    ),
                    "offset": OFFSET,
                    "limit": {**LIMIT, "default": 20, "examples": [20]},
                },
                ("procedure",),
            ),
            handler=_find_similar_functions,
            result_type=SimilarFunctions,
            requires_target=True,
            requires_operations=("list_procedures", "read_function_instructions", "procedure_callees"),
            examples=({"procedure": "main"}, {"procedure": "0x401136", "min_similarity": 0.8}),
        )
    ]
