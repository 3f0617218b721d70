"""query_corpus and compare_corpora: paged answers from the index, each row naming paths, SHA-256 and Evidence."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import ToolCall
from rea.plugin import arg_bool
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import evidence as ev_mod
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.corpus.index import MITIGATIONS
from rea_plugins.corpus.index import Index
from rea_plugins.corpus.index import check_pattern
from rea_plugins.corpus.model import BinaryChange
from rea_plugins.corpus.model import BinaryRef
from rea_plugins.corpus.model import ChangeKind
from rea_plugins.corpus.model import CorpusComparison
from rea_plugins.corpus.model import Match
from rea_plugins.corpus.model import ProcedureChange
from rea_plugins.corpus.model import QueryPage
from rea_plugins.corpus.triage import PROVIDER
from rea_plugins.corpus.triage import profile

QUERIES = ("imports", "strings", "lacks_mitigation", "procedure_hash", "shared_procedures", "libraries", "binaries",
           "failed")  # fmt: skip
MAX_LIMIT = 1000
MAX_WHERE = 50
MAX_PROCEDURE_CHANGES = 200


def _value(args: Arguments, query: str) -> str:
    value = args.get("value")
    if not isinstance(value, str) or not value:
        raise invalid_request(f"query {query} needs a value", [issue("value", "missing_argument", "required here")])
    return value


def _window(args: Arguments) -> tuple[int, int]:
    return arg_int(args, "offset", 0), min(arg_int(args, "limit", 50), MAX_LIMIT)


def _corpus_filter(corpus: str | None, alias: str = "b") -> tuple[str, list[Any]]:
    if corpus is None:
        return "", []
    return f" AND {alias}.sha256 IN (SELECT sha256 FROM paths WHERE corpus=?)", [corpus]


def _refs(index: Index, shas: list[str], corpus: str | None) -> dict[str, BinaryRef]:
    paths = index.paths_of(shas, corpus)
    out: dict[str, BinaryRef] = {}
    for start in range(0, len(shas), 500):
        chunk = shas[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for sha, ev_id, fmt, arch in index.db.execute(
            f"SELECT sha256, evidence_id, format, architecture FROM binaries WHERE sha256 IN ({marks})", chunk
        ):
            out[sha] = BinaryRef(sha256=sha, paths=paths.get(sha, []), evidence_id=ev_id, format=fmt, architecture=arch)
    return out


def _binaries_page(
    index: Index, where: str, params: list[Any], detail: str | None, corpus: str | None, offset: int, limit: int
) -> tuple[int, list[Match]]:
    """Binaries matching ``where`` (over ``binaries b`` and an optional detail table ``d``), with what matched."""
    cf, cp = _corpus_filter(corpus)
    base = f"FROM binaries b {'JOIN ' + detail + ' d ON d.sha256 = b.sha256' if detail else ''} WHERE {where}{cf}"
    total = index.db.execute(f"SELECT COUNT(DISTINCT b.sha256) {base}", params + cp).fetchone()[0]
    if detail:
        col = {"imports": "d.name", "strings": "d.value", "needed": "d.library"}[detail]
        # Joined with the unit separator: names and strings may hold commas.
        grouped = f"group_concat({col}, char(31))"
        sql = f"SELECT b.sha256, {grouped} {base} GROUP BY b.sha256 ORDER BY b.sha256 LIMIT ? OFFSET ?"
    else:
        sql = f"SELECT b.sha256, NULL {base} ORDER BY b.sha256 LIMIT ? OFFSET ?"
    rows = index.db.execute(sql, [*params, *cp, limit, offset]).fetchall()
    refs = _refs(index, [r[0] for r in rows], corpus)
    matches = [
        Match(binary=refs[sha], matched=sorted(set(str(hit).split("\x1f")))[:20] if hit else []) for sha, hit in rows
    ]
    return total, matches


def run_query(index: Index, args: Arguments) -> QueryPage:
    query = arg_str(args, "query", "")  # required by the schema
    corpus = arg_str(args, "corpus")
    offset, limit = _window(args)
    if query == "imports":
        value = _value(args, query)
        if arg_bool(args, "regex"):
            check_pattern(value, "value")
            total, rows = _binaries_page(index, "re2_search(?, d.name)", [value], "imports", corpus, offset, limit)
        else:
            total, rows = _binaries_page(index, "d.name = ?", [value], "imports", corpus, offset, limit)
    elif query == "strings":
        value = _value(args, query)
        check_pattern(value, "value")
        total, rows = _binaries_page(index, "re2_search(?, d.value)", [value], "strings", corpus, offset, limit)
    elif query == "lacks_mitigation":
        value = _value(args, query)
        if value not in MITIGATIONS:
            raise invalid_request(
                f"mitigation must be one of {', '.join(MITIGATIONS)}",
                [issue("value", "invalid_value", "unknown mitigation", allowed=list(MITIGATIONS))],
            )
        cond = "b.relro IN ('none', 0)" if value == "relro" else f"b.{value} = 0"
        total, rows = _binaries_page(index, f"b.status = 'done' AND {cond}", [], None, corpus, offset, limit)
    elif query == "binaries":
        total, rows = _binaries_page(index, "1", [], None, corpus, offset, limit)
    elif query == "failed":
        total, rows = _binaries_page(index, "b.status = 'failed'", [], None, corpus, offset, limit)
        reasons = dict(
            index.db.execute("SELECT sha256, error_code || ': ' || error_message FROM binaries WHERE status='failed'")
        )
        rows = [msgspec.structs.replace(m, matched=[reasons.get(m.binary.sha256, "")]) for m in rows if m.binary]
    elif query == "procedure_hash":
        value = _value(args, query)
        total, rows = _shared(index, "WHERE p.hash = ?", [value], corpus, offset, limit, minimum=1)
    elif query == "shared_procedures":
        total, rows = _shared(index, "", [], corpus, offset, limit, minimum=arg_int(args, "min_binaries", 2))
    elif query == "libraries":
        total, rows = _libraries(index, corpus, offset, limit)
    else:
        raise invalid_request(
            f"unknown query {query!r}", [issue("query", "invalid_value", "unknown query", allowed=list(QUERIES))]
        )
    nxt = offset + len(rows) if offset + len(rows) < total else None
    return QueryPage(query=query, corpus=corpus, total=total, offset=offset, limit=limit, next_offset=nxt, rows=rows)


def _shared(
    index: Index, where: str, params: list[Any], corpus: str | None, offset: int, limit: int, *, minimum: int
) -> tuple[int, list[Match]]:
    """Procedure hashes found in at least ``minimum`` binaries, most widespread first, with where each is."""
    cf, cp = _corpus_filter(corpus, "p")
    if not where:
        where = "WHERE 1"
    grouped = (
        f"SELECT p.hash, COUNT(DISTINCT p.sha256) AS n, MAX(p.instructions) AS size FROM procedures p {where}{cf} "
        "GROUP BY p.hash HAVING n >= ?"
    )
    total = index.db.execute(f"SELECT COUNT(*) FROM ({grouped})", [*params, *cp, minimum]).fetchone()[0]
    hashes = index.db.execute(
        f"{grouped} ORDER BY n DESC, size DESC, p.hash LIMIT ? OFFSET ?", [*params, *cp, minimum, limit, offset]
    ).fetchall()
    rows: list[Match] = []
    for h, n, _size in hashes:
        sites = index.db.execute(
            f"SELECT p.sha256, group_concat(p.name || '@' || p.address) FROM procedures p WHERE p.hash = ?{cf} "
            "GROUP BY p.sha256 ORDER BY p.sha256 LIMIT ?",
            [h, *cp, MAX_WHERE],
        ).fetchall()
        refs = _refs(index, [s for s, _ in sites], corpus)
        rows.append(
            Match(
                hash=h,
                dependents=n,
                where=[refs[s] for s, _ in sites],
                matched=[f"{s[:12]}: {names}" for s, names in sites][:MAX_WHERE],
            )
        )
    return total, rows


def _libraries(index: Index, corpus: str | None, offset: int, limit: int) -> tuple[int, list[Match]]:
    cf, cp = _corpus_filter(corpus, "n")
    grouped = f"SELECT n.library, COUNT(DISTINCT n.sha256) AS c FROM needed n WHERE 1{cf} GROUP BY n.library"
    total = index.db.execute(f"SELECT COUNT(*) FROM ({grouped})", cp).fetchone()[0]
    rows = index.db.execute(f"{grouped} ORDER BY c DESC, n.library LIMIT ? OFFSET ?", [*cp, limit, offset]).fetchall()
    out: list[Match] = []
    for lib, count in rows:
        # The library's own binary, when the corpus holds one of that name.
        own = index.db.execute(
            "SELECT DISTINCT sha256 FROM paths WHERE (path = ? OR path LIKE ?)"
            + (" AND corpus = ?" if corpus else "")
            + " LIMIT 5",
            [lib, "%/" + lib, *([corpus] if corpus else [])],
        ).fetchall()
        refs = _refs(index, [r[0] for r in own], corpus)
        out.append(Match(library=lib, dependents=count, where=list(refs.values())))
    return total, out


# -- compare_corpora ------------------------------------------------------------------------------------------


def _corpus_paths(index: Index, corpus: str) -> dict[str, str]:
    rows = index.db.execute("SELECT path, sha256 FROM paths WHERE corpus = ?", (corpus,)).fetchall()
    if not rows:
        raise invalid_request(
            f"the index holds no corpus {corpus!r}",
            [issue("left/right", "invalid_value", "unknown corpus", known=index.corpora())],
        )
    return dict(rows)


def _procedures(index: Index, sha: str) -> list[tuple[str, str]]:
    return [(n, h) for n, h in index.db.execute("SELECT name, hash FROM procedures WHERE sha256 = ?", (sha,))]


def procedure_changes(left: list[tuple[str, str]], right: list[tuple[str, str]]) -> list[ProcedureChange]:
    """Procedures whose code differs: a hash on both sides is unchanged (moved or renamed); the rest pair by name."""
    common = {h for _, h in left} & {h for _, h in right}
    lrest = {n: h for n, h in left if h not in common}
    rrest = {n: h for n, h in right if h not in common}
    out = []
    for name in sorted(set(lrest) | set(rrest)):
        lh, rh = lrest.get(name), rrest.get(name)
        change: ChangeKind = "changed" if lh and rh else ("removed" if lh else "added")
        out.append(ProcedureChange(name=name, change=change, left_hash=lh, right_hash=rh))
    return out


def compare(index: Index, args: Arguments) -> CorpusComparison:
    left_name, right_name = arg_str(args, "left", ""), arg_str(args, "right", "")  # both required by the schema
    left, right = _corpus_paths(index, left_name), _corpus_paths(index, right_name)
    offset, limit = _window(args)
    rows: list[tuple[str, str, str | None, str | None]] = []
    for path in sorted(set(left) | set(right)):
        ls, rs = left.get(path), right.get(path)
        if ls == rs:
            continue
        rows.append((path, "changed" if ls and rs else ("removed" if ls else "added"), ls, rs))
    counts = {k: sum(1 for r in rows if r[1] == k) for k in ("added", "removed", "changed")}
    counts["unchanged"] = len(set(left) & set(right)) - counts["changed"]
    page = rows[offset : offset + limit]
    left_refs = _refs(index, [s for _, _, s, _ in page if s], left_name)
    right_refs = _refs(index, [s for _, _, _, s in page if s], right_name)
    changes = []
    for path, kind, ls, rs in page:
        procs: list[ProcedureChange] = []
        if kind == "changed" and ls and rs:
            procs = procedure_changes(_procedures(index, ls), _procedures(index, rs))
        changes.append(
            BinaryChange(
                path=path,
                change=kind,  # type: ignore[arg-type]
                left=left_refs.get(ls) if ls else None,
                right=right_refs.get(rs) if rs else None,
                procedures=procs[:MAX_PROCEDURE_CHANGES],
                procedures_total=len(procs),
            )
        )
    nxt = offset + len(page) if offset + len(page) < len(rows) else None
    return CorpusComparison(
        left=left_name,
        right=right_name,
        counts=counts,
        total=len(rows),
        offset=offset,
        limit=limit,
        next_offset=nxt,
        changes=changes,
    )


def _evidence(operation: str, args: Arguments, result: msgspec.Struct, index: Index) -> Evidence:
    links = sorted({r.evidence_id for r in _all_refs(result) if r.evidence_id is not None})
    return ev_mod.build(
        operation=operation,
        provider=PROVIDER,
        subject=None,
        analysis_profile=profile(),
        parameters=dict(sorted(args.items())),
        normalized_result=msgspec.to_builtins(result),
        confidence="derived",
        limitations=[f"Answered from the corpus index {index.path}; each row's evidence_id names its record."],
        evidence_links=links,
    )


def _all_refs(result: msgspec.Struct) -> list[BinaryRef]:
    out: list[BinaryRef] = []
    if isinstance(result, QueryPage):
        for m in result.rows:
            out.extend([m.binary] if m.binary else [])
            out.extend(m.where)
    elif isinstance(result, CorpusComparison):
        for c in result.changes:
            out.extend(r for r in (c.left, c.right) if r is not None)
    return out


def _answered(call: ToolCall, operation: str, answer: Callable[[Index, Arguments], msgspec.Struct]) -> Evidence:
    """The Evidence of ``answer`` over the index the call names, which is closed whatever happens."""
    index = Index(arg_str(call.args, "index", ""))  # required by the schema
    try:
        return _evidence(operation, call.args, answer(index, call.args), index)
    finally:
        index.close()


def handle_query(call: ToolCall) -> Evidence:
    return _answered(call, "query_corpus", run_query)


def handle_compare(call: ToolCall) -> Evidence:
    return _answered(call, "compare_corpora", compare)
