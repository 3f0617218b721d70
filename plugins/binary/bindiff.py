"""compare_binaries: two open versions of a binary, procedure by procedure (issue 25 item 5).

Procedures pair by name where both builds name them (engine names like ``sub_401000`` name nothing), then by
the content hash of their normalized instructions (``rea.fingerprint``, unique on both sides), then by their
call-graph neighbourhood (an unpaired procedure whose callers and callees pair with those of one unpaired
procedure on the other side, and only that one), then identical code in address order, and last, among few
leftovers, by mutual best instruction similarity. A pair is ``unchanged`` when the hashes agree, else ``changed``
with the similarity of the normalized instruction sequences; the rest is ``added`` or ``removed``.
"""

from __future__ import annotations

import difflib
import re
from array import array
from collections import Counter
from typing import Any, Literal

import msgspec
from rea_plugins.binary.schema import LIMIT, OFFSET, obj, prop
from rea_plugins.binary.shapes import BinaryComparison, BinarySide, DiffCounts, DiffRow

from rea import __version__
from rea.catalog.tool import ToolCall, ToolDef
from rea.context import CallContext
from rea.errors import invalid_request, issue
from rea.evidence import Evidence, ProviderIdentity
from rea.fingerprint import normalize_instruction, procedure_hash
from rea.operations.shapes import ProcedureRef
from rea.providers import OperationResult

IDENTITY = ProviderIdentity(id="rea-binary", name="rea binary workflows", version=__version__)
PAGE = 1000
# Instructions of one procedure compared for similarity (a longer one is compared on its first ones).
MAX_COMPARED = 4000
# The work and memory bounds of one comparison, per side (issue 42 item 5: libLLVM 14 against 15, 95,000
# procedures each, ran past 600 s and 3 GB). Reading is most of the work (a few ms per procedure on native), and
# what a side holds grows with the instructions read; past either bound the answer is partial and says so.
DEFAULT_MAX_PROCEDURES = 10_000
MAX_PROCEDURES = 100_000
DEFAULT_MAX_INSTRUCTIONS = 2_000_000
MAX_INSTRUCTIONS = 20_000_000
NEIGHBOURHOOD_ROUNDS = 4
MIN_NEIGHBOURHOOD = 0.5
# The last step compares leftovers each with each: at most this many comparisons, at least this similar.
MAX_SIMILARITY_PAIRS = 40_000
MIN_SIMILARITY = 0.6
_GENERIC = re.compile(r"^(sub_|fcn\.|FUN_|func_|loc_|entry|_?start$|0x)[0-9A-Fa-f]*", re.I)
_CACHE = "binary.diff_sides"
Status = Literal["unchanged", "changed", "added", "removed"]
How = Literal["name", "hash", "neighbourhood", "similarity"]


class _Proc(msgspec.Struct):
    address: str
    name: str | None
    hash: str
    # The normalized instructions' hashes (8 bytes each, not a string each: libLLVM's 12 million instructions
    # held as strings were most of the 3 GB); difflib compares them as it compared the lines.
    lines: array[int]
    callees: set[str]
    callers: set[str] = msgspec.field(default_factory=set)


def _named(name: str | None) -> str | None:
    """A name the build gave the procedure (an engine's placeholder names nothing)."""
    return None if not name or _GENERIC.match(name) else name


class _Side(msgspec.Struct):
    """One side as read: its procedures by address, how many it has, and the bound that stopped the reading."""

    procs: dict[str, _Proc]
    total: int
    instructions: int
    bound: Literal["max_procedures", "max_instructions"] | None


def _side(call: ToolCall, ref: str, path: str, bounds: tuple[int, int]) -> tuple[str, str, _Side]:
    """(target_id, sha256, the side read) of one open target, read once per binding and bounds, and cached."""
    session = call.session
    opened = session.find(ref, path)
    with session.using(opened.target_id):
        target, binding = session.require_target(), session.binding
        assert binding is not None
        key = (target.sha256, binding.analysis_profile.digest, bounds)
        cache: dict[Any, _Side] = session.state.setdefault(_CACHE, {})
        if key not in cache:
            cache[key] = _read(call, path, *bounds)
        return opened.target_id, target.sha256, cache[key]


def _read(call: ToolCall, label: str, max_procedures: int, max_instructions: int) -> _Side:
    session, ctx = call.session, call.ctx
    procs: list[dict[str, Any]] = []
    total = 0
    offset: int | None = 0
    while offset is not None:
        page = session.execute("list_procedures", {"offset": offset, "limit": PAGE}, ctx).normalized
        local = [p for p in page["procedures"] if p["kind"] == "local"]
        total += len(local)
        # The listing is cheap (a row each); only the procedures within the bound are kept to be read.
        procs += local[: max(0, max_procedures - len(procs))]
        offset = page["next_offset"]
    bound: Literal["max_procedures", "max_instructions"] | None = "max_procedures" if total > len(procs) else None
    out: dict[str, _Proc] = {}
    read = 0
    phase = f"compare_binaries: reading the {label} side"
    for i, p in enumerate(procs):
        ctx.check(phase)
        if read >= max_instructions:
            bound = "max_instructions"
            break
        if i % 25 == 0:
            ctx.progress(f"{phase}: {i} of {len(procs)} procedures read", done=i, total=len(procs))
        rows: list[dict[str, Any]] = []
        at: int | None = 0
        while at is not None:
            page = session.execute(
                "read_function_instructions", {"procedure": p["address"], "offset": at, "limit": PAGE}, ctx
            ).normalized
            rows += page["instructions"]
            at = page["next_offset"]
        read += len(rows)
        callees = session.execute("procedure_callees", {"procedure": p["address"]}, ctx).normalized["callees"]
        out[p["address"]] = _Proc(
            address=p["address"],
            name=p.get("name"),
            hash=procedure_hash(rows),
            lines=array("q", (hash(normalize_instruction(r)) for r in rows[:MAX_COMPARED])),
            callees={c["address"] for c in callees if c.get("address") and c.get("kind") in ("direct", "tail")},
        )
    for proc in out.values():
        for callee in proc.callees:
            if callee in out:
                out[callee].callers.add(proc.address)
    return _Side(procs=out, total=total, instructions=read, bound=bound)


def _pair(left: dict[str, _Proc], right: dict[str, _Proc], ctx: CallContext) -> dict[str, tuple[str, How]]:
    """left address -> (right address, how it paired)."""
    pairs: dict[str, tuple[str, How]] = {}
    taken: set[str] = set()

    def unique(side: dict[str, _Proc], key: Any) -> dict[Any, str]:
        counts = Counter(key(p) for p in side.values())
        return {key(p): a for a, p in side.items() if key(p) is not None and counts[key(p)] == 1}

    keys: tuple[tuple[How, Any], ...] = (("name", lambda p: _named(p.name)), ("hash", lambda p: p.hash))
    for how, key in keys:
        ctx.progress(f"compare_binaries: pairing by {how}")
        ctx.check(f"compare_binaries: pairing by {how}")
        lefts = unique({a: p for a, p in left.items() if a not in pairs}, key)
        rights = unique({a: p for a, p in right.items() if a not in taken}, key)
        for k, a in lefts.items():
            if k in rights:
                pairs[a] = (rights[k], how)
                taken.add(rights[k])
    # Same-named copies (static functions of one name in several files) pair when name and hash agree: in
    # address order where several are alike, which cannot be told apart and are unchanged either way.
    _in_order(left, right, pairs, taken, lambda p: (p.name, p.hash) if _named(p.name) else None, "name")
    for n in range(NEIGHBOURHOOD_ROUNDS):
        ctx.progress(
            f"compare_binaries: pairing by neighbourhood, round {n + 1} of {NEIGHBOURHOOD_ROUNDS}",
            done=n,
            total=NEIGHBOURHOOD_ROUNDS,
        )
        found = _neighbourhood(left, right, pairs, taken, ctx)
        if not found:
            break
        for a, b in found.items():
            pairs[a] = (b, "neighbourhood")
            taken.add(b)
    # Then identical code in equal numbers on both sides (setters, stubs): in address order, which builds keep.
    _in_order(left, right, pairs, taken, lambda p: p.hash, "hash")
    # Last, few enough leftovers to compare each with each: the most similar, mutually and clearly.
    for a, b in _most_similar(left, right, pairs, taken, ctx).items():
        pairs[a] = (b, "similarity")
        taken.add(b)
    return pairs


def _most_similar(
    left: dict[str, _Proc],
    right: dict[str, _Proc],
    pairs: dict[str, tuple[str, How]],
    taken: set[str],
    ctx: CallContext,
) -> dict[str, str]:
    lefts = [a for a in left if a not in pairs]
    rights = [b for b in right if b not in taken]
    if not lefts or not rights or len(lefts) * len(rights) > MAX_SIMILARITY_PAIRS:
        return {}
    best_of: dict[str, tuple[float, str]] = {}
    best_for: dict[str, tuple[float, str]] = {}
    for i, a in enumerate(lefts):
        ctx.progress(
            f"compare_binaries: pairing by similarity, {i} of {len(lefts)} leftovers", done=i, total=len(lefts)
        )
        x = left[a]
        for b in rights:
            # Each comparison may take milliseconds (up to MAX_COMPARED instructions a side).
            ctx.check("compare_binaries: pairing by similarity")
            y = right[b]
            if not x.lines or not y.lines or not 0.5 <= len(x.lines) / len(y.lines) <= 2.0:
                continue
            ratio = difflib.SequenceMatcher(None, x.lines, y.lines, autojunk=False).ratio()
            if ratio >= best_of.get(a, (0.0, ""))[0]:
                best_of[a] = (ratio, b)
            if ratio >= best_for.get(b, (0.0, ""))[0]:
                best_for[b] = (ratio, a)
    return {a: b for a, (ratio, b) in best_of.items() if ratio >= MIN_SIMILARITY and best_for.get(b, (0.0, ""))[1] == a}


def _in_order(
    left: dict[str, _Proc],
    right: dict[str, _Proc],
    pairs: dict[str, tuple[str, How]],
    taken: set[str],
    key: Any,
    how: How,
) -> None:
    """Pair the unpaired procedures of each equal key, in address order, where both sides have as many."""
    groups: dict[Any, tuple[list[str], list[str]]] = {}
    for a, p in left.items():
        if a not in pairs and key(p) is not None:
            groups.setdefault(key(p), ([], []))[0].append(a)
    for b, p in right.items():
        if b not in taken and key(p) is not None and key(p) in groups:
            groups[key(p)][1].append(b)
    for lefts, rights in groups.values():
        if len(lefts) == len(rights):
            order = sorted(lefts, key=lambda x: int(x, 16)), sorted(rights, key=lambda x: int(x, 16))
            for a, b in zip(*order, strict=True):
                pairs[a] = (b, how)
                taken.add(b)


def _neighbourhood(
    left: dict[str, _Proc],
    right: dict[str, _Proc],
    pairs: dict[str, tuple[str, How]],
    taken: set[str],
    ctx: CallContext,
) -> dict[str, str]:
    """Unpaired procedures whose paired callers and callees point at one unpaired procedure, mutually best."""
    mapped = {a: b for a, (b, _) in pairs.items()}

    def best(score: dict[str, float]) -> str | None:
        ranked = sorted(score.items(), key=lambda kv: -kv[1])
        if not ranked or ranked[0][1] < MIN_NEIGHBOURHOOD or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
            return None
        return ranked[0][0]

    choices: dict[str, str] = {}
    for i, (a, p) in enumerate(left.items()):
        if i % 256 == 0:
            ctx.check("compare_binaries: pairing by neighbourhood")
        if a in pairs:
            continue
        near = {("callee", mapped[c]) for c in p.callees if c in mapped} | {
            ("caller", mapped[c]) for c in p.callers if c in mapped
        }
        if not near:
            continue
        candidates = {c for kind, b in near for c in (right[b].callers if kind == "callee" else right[b].callees)}
        # Only procedures this side read: a callee past a bound's cut (or never listed as local) has no facts here.
        candidates &= right.keys()
        score = {}
        for c in candidates - taken:
            theirs = {("callee", x) for x in right[c].callees} | {("caller", x) for x in right[c].callers}
            score[c] = len(near & theirs) / len(near | theirs)
        chosen = best(score)
        if chosen is not None:
            choices[a] = chosen
    # Mutual: one left procedure per right one.
    claimed = Counter(choices.values())
    return {a: b for a, b in choices.items() if claimed[b] == 1}


def _similarity(a: _Proc, b: _Proc) -> float:
    if a.hash == b.hash:
        return 1.0
    return round(difflib.SequenceMatcher(None, a.lines, b.lines, autojunk=False).ratio(), 4)


def compare(
    left: dict[str, _Proc], right: dict[str, _Proc], ctx: CallContext | None = None
) -> tuple[list[DiffRow], DiffCounts]:
    ctx = ctx or CallContext()
    pairs = _pair(left, right, ctx)
    rows: list[DiffRow] = []
    by: Counter[str] = Counter()
    for i, (a, (b, how)) in enumerate(pairs.items()):
        # A changed pair's similarity is a sequence match of up to MAX_COMPARED instructions a side: tens of
        # thousands of them were the part of a large diff that no cancellation reached.
        ctx.check("compare_binaries: measuring similarity")
        if i % 256 == 0:
            ctx.progress(f"compare_binaries: measuring similarity, {i} of {len(pairs)} pairs", done=i, total=len(pairs))
        x, y = left[a], right[b]
        by[how] += 1
        status: Status = "unchanged" if x.hash == y.hash else "changed"
        rows.append(
            DiffRow(
                status=status,
                left=ProcedureRef(address=a, name=x.name),
                right=ProcedureRef(address=b, name=y.name),
                matched_by=how,
                similarity=_similarity(x, y),
            )
        )
    paired_right = {b for b, _ in pairs.values()}
    rows += [
        DiffRow(status="removed", left=ProcedureRef(address=a, name=p.name)) for a, p in left.items() if a not in pairs
    ]
    rows += [
        DiffRow(status="added", right=ProcedureRef(address=a, name=p.name))
        for a, p in right.items()
        if a not in paired_right
    ]
    order = {"changed": 0, "added": 1, "removed": 2, "unchanged": 3}
    rows.sort(key=lambda r: (order[r.status], r.similarity if r.similarity is not None else 0.0, _addr(r)))
    counts = Counter(r.status for r in rows)
    return rows, DiffCounts(
        unchanged=counts["unchanged"],
        changed=counts["changed"],
        added=counts["added"],
        removed=counts["removed"],
        by_name=by["name"],
        by_hash=by["hash"],
        by_neighbourhood=by["neighbourhood"],
        by_similarity=by["similarity"],
    )


def _addr(row: DiffRow) -> int:
    ref = row.left or row.right
    return int(ref.address, 16) if ref is not None else 0


def _compare_binaries(call: ToolCall) -> Evidence:
    args = call.args
    bounds = (
        args.get("max_procedures", DEFAULT_MAX_PROCEDURES),
        args.get("max_instructions", DEFAULT_MAX_INSTRUCTIONS),
    )
    if call.session.find(args["left"], "left").target_id == call.session.find(args["right"], "right").target_id:
        raise invalid_request(
            "left and right name the same target", [issue("right", "invalid_value", "another target")]
        )
    left_id, left_sha, lside = _side(call, args["left"], "left", bounds)
    right_id, right_sha, rside = _side(call, args["right"], "right", bounds)
    left, right = lside.procs, rside.procs
    call.ctx.progress("compare_binaries: pairing procedures")
    rows, counts = compare(left, right, call.ctx)
    wanted = set(args.get("status", ["changed", "added", "removed"]))
    shown = [r for r in rows if r.status in wanted]
    offset, limit = args.get("offset", 0), args.get("limit", 100)
    end = min(len(shown), offset + limit)
    bound = lside.bound or rside.bound
    result = BinaryComparison(
        left=BinarySide(
            target_id=left_id,
            sha256=left_sha,
            procedures=lside.total,
            compared=len(left),
            instructions=lside.instructions,
        ),
        right=BinarySide(
            target_id=right_id,
            sha256=right_sha,
            procedures=rside.total,
            compared=len(right),
            instructions=rside.instructions,
        ),
        counts=counts,
        items=shown[offset:end],
        offset=offset,
        limit=limit,
        total=len(shown),
        next_offset=end if end < len(shown) else None,
        complete=bound is None,
        bound=bound,
    )
    limitations = [
        "Pairs come from names, then unique instruction hashes, then call-graph neighbourhoods; a "
        "procedure rewritten beyond all three shows as removed and added.",
    ]
    if bound is not None:
        limitations.append(
            f"Partial: {bound} stopped the reading after {len(left)} of {lside.total} procedures (left) and "
            f"{len(right)} of {rside.total} (right), in address order; a procedure near the cut may show as added "
            f"or removed. Raise max_procedures (up to {MAX_PROCEDURES}) or max_instructions (up to "
            f"{MAX_INSTRUCTIONS}) for more, at a few milliseconds and a few bytes per instruction each."
        )
        call.ctx.finish(f"partial: {bound} reached")
    params = {**args, "left_sha256": left_sha, "right_sha256": right_sha}
    with call.session.using(left_id):
        target = call.session.require_target()
    return call.session.evidence(
        call.tool.name,
        params,
        OperationResult(
            normalized=msgspec.to_builtins(result),
            limitations=limitations,
            confidence="derived",
        ),
        bound=False,
        target=target,
        provider=IDENTITY,
        analysis_profile=None,
    )


TARGET_REF = prop("string", "An open target's target_id or alias.", ["v1"])


def tools() -> list[ToolDef]:
    return [
        ToolDef(
            name="compare_binaries",
            family="binary",
            description=(
                "Diff two open versions of a binary: procedures paired by name, instruction hash, then call-graph "
                "neighbourhood; changed, added and removed ones with each pair's similarity, paged."
            ),
            input_schema=obj(
                {
                    "left": TARGET_REF,
                    "right": TARGET_REF,
                    "status": {
                        "type": "array",
                        "items": {"type": "string", "enum": ["changed", "added", "removed", "unchanged"]},
                        "minItems": 1,
                        "uniqueItems": True,
                        "description": "Rows to list (default: changed, added, removed; every row is counted).",
                        "examples": [["changed"]],
                    },
                    "max_procedures": prop(
                        "integer",
                        "Procedures read per side, in address order (past it: partial).",
                        [DEFAULT_MAX_PROCEDURES],
                        minimum=1,
                        maximum=MAX_PROCEDURES,
                        default=DEFAULT_MAX_PROCEDURES,
                    ),
                    "max_instructions": prop(
                        "integer",
                        "Instructions read per side (past it: partial).",
                        [DEFAULT_MAX_INSTRUCTIONS],
                        minimum=1,
                        maximum=MAX_INSTRUCTIONS,
                        default=DEFAULT_MAX_INSTRUCTIONS,
                    ),
                    "offset": OFFSET,
                    "limit": LIMIT,
                },
                ("left", "right"),
            ),
            handler=_compare_binaries,
            result_type=BinaryComparison,
            requires_operations=("list_procedures", "read_function_instructions", "procedure_callees"),
            examples=({"left": "v1", "right": "v2"}, {"left": "t1", "right": "t2", "status": ["changed"]}),
        )
    ]
