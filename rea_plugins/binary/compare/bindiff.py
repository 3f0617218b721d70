"""compare_binaries: two open versions of a binary, procedure by procedure (issue 25 item 5, issue 48 item 1).

Procedures pair in stages: by name where both builds name them (engine names like ``sub_401000`` name nothing),
then by the content hash of their normalized instructions (``rea.fingerprint``: addresses and constants masked,
unique on both sides), then by their call-graph neighbourhood (an unpaired procedure whose callers and callees
pair with those of one unpaired procedure on the other side, and only that one, and whose code is alike), then
identical code in address order, and last by similarity: candidates from a MinHash LSH index of instruction
n-grams (``compare.similarity``), paired when mutually best and at least ``min_similarity`` alike. Two
procedures the builds name differently never pair, nor a named one with an unnamed one where the unnamed side
would have kept the name (both stripped: the name is an export). A pair is ``unchanged`` when its instructions
and its constants agree, else ``changed`` in its instructions or in its constants only; the rest is ``added`` or
``removed``, with the score of the nearest leftover that did not pair.
"""

from __future__ import annotations

import difflib
import re
from array import array
from collections import Counter
from typing import Any
from typing import Literal
from typing import TypeVar

import msgspec

from rea.plugin import Arguments
from rea.plugin import CallContext
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import PageOf
from rea.plugin import ProcedureRef
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import arg_float
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import normalize_instruction
from rea.plugin import page_of
from rea.plugin import procedure_hash
from rea.plugin import render
from rea_plugins.binary.compare import similarity
from rea_plugins.binary.core.operands import numbers
from rea_plugins.binary.core.schema import IDENTITY
from rea_plugins.binary.core.schema import LIMIT
from rea_plugins.binary.core.schema import OFFSET
from rea_plugins.binary.core.schema import binary_tool
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.core.shapes import BinaryComparison
from rea_plugins.binary.core.shapes import BinarySide
from rea_plugins.binary.core.shapes import DiffCounts
from rea_plugins.binary.core.shapes import DiffRow
from rea_plugins.binary.core.shapes import paging_of

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
# A neighbourhood pair's code must be at least this alike too: the graph says where, the code says whether (a
# new static function called where a removed one was is not that function).
MIN_NEIGHBOURHOOD_SIMILARITY = 0.4
# The last step measures each leftover against its LSH candidates: at most this many sequence comparisons in all,
# at most this many candidates each, and a pair at least this similar.
MAX_SIMILARITY_PAIRS = 40_000
MAX_CANDIDATES = 8
MIN_SIMILARITY = 0.6
# The LSH index finds candidates whose n-gram sets are about this alike or more: the sequence similarity of a
# pair that passes MIN_SIMILARITY has a lower n-gram Jaccard (one changed instruction breaks three 3-grams).
LSH_THRESHOLD = 0.3
_GENERIC = re.compile(r"^(sub_|fcn\.|FUN_|func_|loc_|entry|_?start$|0x)[0-9A-Fa-f]*", re.I)
_CACHE = "binary.diff_sides"
Status = Literal["unchanged", "changed", "added", "removed"]
How = Literal["name", "hash", "neighbourhood", "similarity"]
# Each leftover's nearest candidate, left ones then right ones: address -> (similarity, address on the other side).
Nearest = tuple[dict[str, tuple[float, str]], dict[str, tuple[float, str]]]


class _Proc(msgspec.Struct):
    address: str
    name: str | None
    hash: str
    # The normalized instructions' hashes (8 bytes each, not a string each: libLLVM's 12 million instructions
    # held as strings were most of the 3 GB); difflib compares them as it compared the lines.
    lines: array[int]
    callees: set[str]
    # The hash of the constants the instructions hold, in order (what ``hash`` masks, addresses left out).
    consts: int = 0
    # The names of the callees the build names (imports through their stubs included): a call that now goes
    # elsewhere is a change the masked instructions do not show.
    callee_names: frozenset[str] = frozenset()
    callers: set[str] = msgspec.field(default_factory=set)
    # The MinHash sketch of the instruction n-grams, made on first use (most pairs never need one).
    sketch: Any = None
    sketched: bool = False

    def sketch_values(self) -> Any:
        if not self.sketched:
            self.sketch, self.sketched = similarity.sketch(self.lines), True
        return self.sketch


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
    target_id = call.session.find(ref, path).target_id
    sha, side = read_side(call, target_id, f"compare_binaries: reading the {path} side", bounds)
    return target_id, sha, side


def read_side(call: ToolCall, target_id: str, phase: str, bounds: tuple[int, int]) -> tuple[str, _Side]:
    """(sha256, the side read) of the open target ``target_id``, read once per binding and bounds (cached)."""
    session = call.session
    with session.using(target_id):
        target, binding = session.require_target(), session.binding
        assert binding is not None
        key = (target.sha256, binding.analysis_profile.digest, bounds)
        cache: dict[Any, _Side] = session.state.setdefault(_CACHE, {})
        if key not in cache:
            cache[key] = _read(call, phase, *bounds)
        return target.sha256, cache[key]


def _image(call: ToolCall) -> list[tuple[int, int]]:
    """The mapped address ranges: a number inside one (past the first page) is an address, not a constant."""
    segments = call.session.execute("list_segments", {}, call.ctx).normalized["segments"]
    return [(int(s["start"], 16), int(s["end"], 16)) for s in segments if s.get("kind", "segment") == "segment"]


def constants_hash(rows: list[JSONObject], image: list[tuple[int, int]]) -> int:
    """The hash of a procedure's constants in order (``rows``: the provider's instruction rows): immediates and
    displacements that are not addresses (a branch target, a pc-relative or symbolized operand, a number inside the
    mapped image)."""
    found: list[int] = []
    for row in rows:
        symbols = row.get("symbols") or []
        marked = (
            {at for s in symbols if isinstance(s, dict) and isinstance(at := s.get("operand"), int)}
            if isinstance(symbols, list)
            else set()
        )
        text = str(row.get("text") or f"{row.get('mnemonic', '')} {row.get('operands') or ''}")
        for value, _form in numbers(text, marked):
            if value >= 0x1000 and any(lo <= value < hi for lo, hi in image):
                continue
            found.append(value)
    return hash(tuple(found))


def _read(call: ToolCall, phase: str, max_procedures: int, max_instructions: int) -> _Side:
    session, ctx = call.session, call.ctx
    procs: list[JSONObject] = []  # the provider's procedure rows
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
    image = _image(call) if session.supports("list_segments") else []
    out: dict[str, _Proc] = {}
    read = 0
    for i, p in enumerate(procs):
        ctx.check(phase)
        if read >= max_instructions:
            bound = "max_instructions"
            break
        if i % 25 == 0:
            ctx.progress(f"{phase}: {i} of {len(procs)} procedures read", done=i, total=len(procs))
        rows: list[JSONObject] = []  # the provider's instruction rows
        at: int | None = 0
        while at is not None:
            page = session.execute(
                "read_function_instructions", {"procedure": p["address"], "offset": at, "limit": PAGE}, ctx
            ).normalized
            rows += page["instructions"]
            at = page["next_offset"]
        read += len(rows)
        callees = session.execute("procedure_callees", {"procedure": p["address"]}, ctx).normalized["callees"]
        address, name = str(p["address"]), p.get("name")
        out[address] = _Proc(
            address=address,
            name=name if isinstance(name, str) else None,
            hash=procedure_hash(rows),
            lines=array("q", (hash(normalize_instruction(r)) for r in rows[:MAX_COMPARED])),
            callees={c["address"] for c in callees if c.get("address") and c.get("kind") in ("direct", "tail")},
            consts=constants_hash(rows, image),
            callee_names=frozenset(
                n for c in callees if c.get("kind") in ("direct", "tail") and (n := _named(c.get("name")))
            ),
        )
    for proc in out.values():
        for callee in proc.callees:
            if callee in out:
                out[callee].callers.add(proc.address)
    return _Side(procs=out, total=total, instructions=read, bound=bound)


class _Rules:
    """Which two procedures may pair at all, after the name stage: a name the builds gave is the procedure's."""

    def __init__(self, left: dict[str, _Proc], right: dict[str, _Proc]) -> None:
        self.names = (
            {_named(p.name) for p in left.values()} - {None},
            {_named(p.name) for p in right.values()} - {None},
        )
        # A side that names fewer than half its procedures is stripped: the names it keeps are its exports, which
        # the other build would name too if it had that function.
        self.bare = tuple(len(n) * 2 < max(1, len(s)) for n, s in zip(self.names, (left, right), strict=True))

    def allowed(self, x: _Proc, y: _Proc) -> bool:
        nx, ny = _named(x.name), _named(y.name)
        if nx and ny:
            return nx == ny
        if nx:
            # Left named, right not: only where the right build lost static names the left one kept.
            return self.bare[1] and not self.bare[0] and nx not in self.names[1]
        if ny:
            return self.bare[0] and not self.bare[1] and ny not in self.names[0]
        return True


class _Pairing:
    """One comparison's pairing as it goes: both sides, the pairs made so far (left address -> right address and how
    it paired) and the right procedures they took, and the rules a pair must meet."""

    def __init__(self, left: dict[str, _Proc], right: dict[str, _Proc], ctx: CallContext) -> None:
        self.left, self.right, self.ctx = left, right, ctx
        self.pairs: dict[str, tuple[str, How]] = {}
        self.taken: set[str] = set()
        self.rules = _Rules(left, right)

    def match(self, a: str, b: str, how: How) -> None:
        self.pairs[a] = (b, how)
        self.taken.add(b)


def _pair(
    left: dict[str, _Proc], right: dict[str, _Proc], ctx: CallContext, minimum: float = MIN_SIMILARITY
) -> tuple[dict[str, tuple[str, How]], Nearest]:
    """left address -> (right address, how it paired); and each leftover's nearest leftover of the other side."""
    pairing = _Pairing(left, right, ctx)
    pairs, taken, rules = pairing.pairs, pairing.taken, pairing.rules

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
            if k in rights and (how == "name" or rules.allowed(left[a], right[rights[k]])):
                pairing.match(a, rights[k], how)
    # Same-named copies (static functions of one name in several files) pair when name and hash agree: in
    # address order where several are alike, which cannot be told apart and are unchanged either way.
    _in_order(pairing, lambda p: (p.name, p.hash) if _named(p.name) else None, "name")
    for n in range(NEIGHBOURHOOD_ROUNDS):
        ctx.progress(
            f"compare_binaries: pairing by neighbourhood, round {n + 1} of {NEIGHBOURHOOD_ROUNDS}",
            done=n,
            total=NEIGHBOURHOOD_ROUNDS,
        )
        found = _neighbourhood(pairing)
        if not found:
            break
        for a, b in found.items():
            pairing.match(a, b, "neighbourhood")
    # Then identical code in equal numbers on both sides (setters, stubs): in address order, which builds keep.
    _in_order(pairing, lambda p: p.hash, "hash")
    # Last, the leftovers' most similar candidates: paired when mutually best and similar enough.
    chosen, nearest = _most_similar(pairing, minimum)
    for a, b in chosen.items():
        pairing.match(a, b, "similarity")
    return pairs, nearest


def _ratio(x: _Proc, y: _Proc) -> float:
    return round(difflib.SequenceMatcher(None, x.lines, y.lines, autojunk=False).ratio(), 4)


def _most_similar(state: _Pairing, minimum: float) -> tuple[dict[str, str], Nearest]:
    """Mutually best pairs at least ``minimum`` alike, and each leftover's nearest candidate on either side (address
    -> (score, address on the other side)): candidates from a MinHash LSH index of the right leftovers, scored by
    sequence similarity."""
    left, right, pairs, taken, rules, ctx = state.left, state.right, state.pairs, state.taken, state.rules, state.ctx
    lefts = [a for a in left if a not in pairs]
    rights = [b for b in right if b not in taken]
    if not lefts or not rights:
        return {}, ({}, {})
    ctx.progress("compare_binaries: pairing by similarity, indexing the leftovers")
    index = similarity.Index(LSH_THRESHOLD)
    for i, b in enumerate(rights):
        if i % 256 == 0:
            ctx.check("compare_binaries: pairing by similarity")
        values = right[b].sketch_values()
        if values is not None:
            index.add(b, values)
    best_of: dict[str, tuple[float, str]] = {}
    best_for: dict[str, tuple[float, str]] = {}
    budget = MAX_SIMILARITY_PAIRS
    for i, a in enumerate(lefts):
        if i % 64 == 0:
            ctx.progress(
                f"compare_binaries: pairing by similarity, {i} of {len(lefts)} leftovers", done=i, total=len(lefts)
            )
        x = left[a]
        values = x.sketch_values()
        if values is None:
            continue
        for estimate, b in index.query(values)[:MAX_CANDIDATES]:
            # Each sequence comparison may take milliseconds (up to MAX_COMPARED instructions a side).
            ctx.check("compare_binaries: pairing by similarity")
            y = right[b]
            if not rules.allowed(x, y):
                continue
            # Past the budget the MinHash estimate stands in for the sequence similarity.
            score = _ratio(x, y) if budget > 0 else estimate
            budget -= 1
            if score > best_of.get(a, (-1.0, ""))[0]:
                best_of[a] = (score, b)
            if score > best_for.get(b, (-1.0, ""))[0]:
                best_for[b] = (score, a)
    chosen = {a: b for a, (score, b) in best_of.items() if score >= minimum and best_for.get(b, (0.0, ""))[1] == a}
    return chosen, (best_of, best_for)


def _in_order(state: _Pairing, key: Any, how: How) -> None:
    """Pair the unpaired procedures of each equal key, in address order, where both sides have as many."""
    left, right, pairs, taken, rules = state.left, state.right, state.pairs, state.taken, state.rules
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
            matched = list(zip(*order, strict=True))
            if all(rules.allowed(left[a], right[b]) for a, b in matched):
                for a, b in matched:
                    state.match(a, b, how)


def _neighbourhood(state: _Pairing) -> dict[str, str]:
    """Unpaired procedures whose paired callers and callees point at one unpaired procedure, mutually best, whose
    code is alike."""
    left, right, pairs, taken, rules, ctx = state.left, state.right, state.pairs, state.taken, state.rules, state.ctx
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
            if not rules.allowed(p, right[c]):
                continue
            theirs = {("callee", x) for x in right[c].callees} | {("caller", x) for x in right[c].callers}
            score[c] = len(near & theirs) / len(near | theirs)
        chosen = best(score)
        if chosen is not None and (
            p.hash == right[chosen].hash or _ratio(p, right[chosen]) >= MIN_NEIGHBOURHOOD_SIMILARITY
        ):
            choices[a] = chosen
    # Mutual: one left procedure per right one.
    claimed = Counter(choices.values())
    return {a: b for a, b in choices.items() if claimed[b] == 1}


def _names(side: dict[str, _Proc]) -> set[str]:
    """Every name a side gives: its procedures' and its callees' (imports included)."""
    out = {n for p in side.values() if (n := _named(p.name))}
    for p in side.values():
        out |= p.callee_names
    return out


def _calls_moved(
    x: _Proc,
    y: _Proc,
    left: dict[str, _Proc],
    right: dict[str, _Proc],
    pairs: dict[str, tuple[str, How]],
    known: tuple[set[str], set[str]],
) -> bool:
    """Whether a pair's calls reach other procedures: a callee that did not pair with the other's, or another
    named callee (the call's target is masked in the instructions' hash). A name only one build can give (a
    static function's, where the other is stripped) tells nothing."""
    if x.callee_names & known[1] != y.callee_names & known[0]:
        return True
    mine = {pairs[c][0] if c in pairs else f"unpaired {c}" for c in x.callees if c in left}
    return mine != {c for c in y.callees if c in right}


def _similarity(a: _Proc, b: _Proc) -> float:
    if a.hash == b.hash:
        return 1.0
    return _ratio(a, b)


def compare(
    left: dict[str, _Proc],
    right: dict[str, _Proc],
    ctx: CallContext | None = None,
    minimum: float = MIN_SIMILARITY,
) -> tuple[list[DiffRow], DiffCounts]:
    ctx = ctx or CallContext()
    pairs, nearest = _pair(left, right, ctx, minimum)
    rows: list[DiffRow] = []
    by: Counter[str] = Counter()
    constants_only = 0
    known = (_names(left), _names(right))
    for i, (a, (b, how)) in enumerate(pairs.items()):
        # A changed pair's similarity is a sequence match of up to MAX_COMPARED instructions a side: tens of
        # thousands of them were the part of a large diff that no cancellation reached.
        ctx.check("compare_binaries: measuring similarity")
        if i % 256 == 0:
            ctx.progress(f"compare_binaries: measuring similarity, {i} of {len(pairs)} pairs", done=i, total=len(pairs))
        x, y = left[a], right[b]
        by[how] += 1
        status: Status = "unchanged"
        change: Literal["instructions", "constants"] | None = None
        if x.hash != y.hash or _calls_moved(x, y, left, right, pairs, known):
            status, change = "changed", "instructions"
        elif x.consts != y.consts:
            status, change = "changed", "constants"
            constants_only += 1
        rows.append(
            DiffRow(
                status=status,
                left=ProcedureRef(address=a, name=x.name),
                right=ProcedureRef(address=b, name=y.name),
                matched_by=how,
                change=change,
                similarity=_similarity(x, y),
            )
        )
    paired_right = {b for b, _ in pairs.values()}

    def alone(status: Status, address: str, p: _Proc, other: dict[str, _Proc]) -> DiffRow:
        ref = ProcedureRef(address=address, name=p.name)
        close = nearest[0 if status == "removed" else 1].get(address)
        near = None if close is None else ProcedureRef(address=close[1], name=other[close[1]].name)
        score = None if close is None else round(close[0], 4)
        if status == "removed":
            return DiffRow(status=status, left=ref, similarity=score, nearest=near)
        return DiffRow(status=status, right=ref, similarity=score, nearest=near)

    rows += [alone("removed", a, p, right) for a, p in left.items() if a not in pairs]
    rows += [alone("added", b, p, left) for b, p in right.items() if b not in paired_right]
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
        constants_only=constants_only,
    )


def _addr(row: DiffRow) -> int:
    ref = row.left or row.right
    return int(ref.address, 16) if ref is not None else 0


def _drawing(result: BinaryComparison) -> render.Graph:
    """This page's rows as a picture: each pair an edge from its left procedure to its right one, labelled with its
    change and similarity; an added or removed procedure alone, marked + or -."""

    def label(ref: ProcedureRef) -> str:
        return ref.name or ref.address

    nodes: list[render.Node] = []
    edges: list[render.Edge] = []
    for row in result.items:
        left = f"L{row.left.address}" if row.left is not None else None
        right = f"R{row.right.address}" if row.right is not None else None
        if row.left is not None and left is not None:
            nodes.append(render.Node(id=left, label=("- " if right is None else "") + label(row.left)))
        if row.right is not None and right is not None:
            nodes.append(
                render.Node(id=right, label=("+ " if left is None else "") + label(row.right), emphasis=left is None)
            )
        if left is not None and right is not None:
            text = row.status if row.change is None else f"{row.status}: {row.change}"
            if row.similarity is not None and row.status == "changed":
                text += f" {row.similarity:.2f}"
            edges.append(render.Edge(source=left, target=right, label=text))
    return render.Graph(nodes=nodes, edges=edges, title="compare_binaries")


T = TypeVar("T")


def bounds_of(args: Arguments) -> tuple[int, int]:
    """The reading bounds a call asks for (``read_bounds``): max_procedures and max_instructions per side."""
    return (
        arg_int(args, "max_procedures", DEFAULT_MAX_PROCEDURES),
        arg_int(args, "max_instructions", DEFAULT_MAX_INSTRUCTIONS),
    )


def page_asked(args: Arguments, rows: list[T], default_limit: int) -> PageOf[T]:
    """The page of ``rows`` a call's offset and limit ask for."""
    return page_of(rows, arg_int(args, "offset", 0), arg_int(args, "limit", default_limit))


def _described(target_id: str, sha256: str, side: _Side) -> BinarySide:
    """One side as the answer describes it: its target, how many procedures it has and how many were read."""
    return BinarySide(
        target_id=target_id,
        sha256=sha256,
        procedures=side.total,
        compared=len(side.procs),
        instructions=side.instructions,
    )


def _compare_binaries(call: ToolCall) -> Evidence:
    args = call.args
    bounds = bounds_of(args)
    left_ref, right_ref = arg_str(args, "left", ""), arg_str(args, "right", "")
    if call.session.find(left_ref, "left").target_id == call.session.find(right_ref, "right").target_id:
        raise invalid_request(
            "left and right name the same target", [issue("right", "invalid_value", "another target")]
        )
    left_id, left_sha, lside = _side(call, left_ref, "left", bounds)
    right_id, right_sha, rside = _side(call, right_ref, "right", bounds)
    left, right = lside.procs, rside.procs
    call.ctx.progress("compare_binaries: pairing procedures")
    minimum = arg_float(args, "min_similarity", MIN_SIMILARITY)
    rows, counts = compare(left, right, call.ctx, minimum)
    status = arg_strs(args, "status")
    wanted = set(["changed", "added", "removed"] if status is None else status)
    page = page_asked(args, [r for r in rows if r.status in wanted], 100)
    bound = lside.bound or rside.bound
    result = BinaryComparison(
        left=_described(left_id, left_sha, lside),
        right=_described(right_id, right_sha, rside),
        counts=counts,
        items=page.items,
        **paging_of(page),
        complete=bound is None,
        bound=bound,
        min_similarity=minimum,
    )
    fmt = render.requested(args)
    if fmt is not None:
        result = msgspec.structs.replace(result, picture=render.picture(_drawing(result), fmt))
    limitations = [
        "Pairs come from names, then unique instruction hashes, then call-graph neighbourhoods, then similarity "
        f"(at least {minimum}); a procedure rewritten beyond all four shows as removed and added, with the score of "
        "its nearest leftover. A constants-only change is one in immediates or displacements; an address that moved "
        "is no change.",
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


def read_bounds(per: str) -> JSONObject:
    """The input-schema properties bounding what a comparison reads of each ``per`` (side, target)."""
    return {
        "max_procedures": prop(
            "integer",
            f"Procedures read per {per}, in address order (past it: partial).",
            [DEFAULT_MAX_PROCEDURES],
            minimum=1,
            maximum=MAX_PROCEDURES,
            default=DEFAULT_MAX_PROCEDURES,
        ),
        "max_instructions": prop(
            "integer",
            f"Instructions read per {per} (past it: partial).",
            [DEFAULT_MAX_INSTRUCTIONS],
            minimum=1,
            maximum=MAX_INSTRUCTIONS,
            default=DEFAULT_MAX_INSTRUCTIONS,
        ),
    }


def tools() -> list[ToolDef]:
    return [
        binary_tool(
            name="compare_binaries",
            requires_target=False,  # over two open targets (left, right)
            task_support="optional",
            description=(
                "Diff two open versions of a binary: procedures paired by name, instruction hash, call-graph "
                "neighbourhood, then similarity; changed (in instructions or constants only), added and removed "
                "ones with scores, paged."
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
                    **read_bounds("side"),
                    "min_similarity": prop(
                        "number",
                        "Least similarity that pairs two leftovers (0-1, default 0.6).",
                        [MIN_SIMILARITY],
                        minimum=0,
                        maximum=1,
                        default=MIN_SIMILARITY,
                    ),
                    "offset": OFFSET,
                    "limit": LIMIT,
                    "format": render.FORMAT_PROPERTY,
                },
                ("left", "right"),
            ),
            handler=_compare_binaries,
            result_type=BinaryComparison,
            requires_operations=("list_procedures", "read_function_instructions", "procedure_callees"),
            examples=({"left": "v1", "right": "v2"}, {"left": "t1", "right": "t2", "status": ["changed"]}),
        ),
    ]
