"""compare_provider_results: the same questions put to two providers of the open target, and where they disagree.

The session's bound provider answers through the session; any other provider gets a client of its own for this
call only, opened on the same target through the public provider API and closed (its processes reaped and
recorded in the run's lineage) before the call returns. The binding never changes.
"""

from __future__ import annotations

from typing import Any
from typing import Literal

import msgspec

from rea.plugin import AnalysisClient
from rea.plugin import AnalysisProfile
from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import OperationResult
from rea.plugin import ProcedureRef
from rea.plugin import ProviderIdentity
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import arg_bool
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea.plugin import evidence as ev_mod
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import select
from rea_plugins.binary.core.schema import IDENTITY
from rea_plugins.binary.core.schema import PROCEDURE
from rea_plugins.binary.core.schema import binary_tool
from rea_plugins.binary.core.schema import obj
from rea_plugins.binary.core.schema import prop
from rea_plugins.binary.core.shapes import Agreement
from rea_plugins.binary.core.shapes import AgreementFacet
from rea_plugins.binary.core.shapes import CodeBeside
from rea_plugins.binary.core.shapes import ComparedProvider
from rea_plugins.binary.core.shapes import EdgeCounts
from rea_plugins.binary.core.shapes import PeerSession
from rea_plugins.binary.core.shapes import ProcedureCounts
from rea_plugins.binary.core.shapes import ProcedureDifference
from rea_plugins.binary.core.shapes import ProviderAgreement

PAGE = 1000
MAX_INVENTORY = 200_000
CODE_KINDS = ("local", "thunk")


class Engine:
    """One provider's answers on the open target: the bound client, or a client opened for this call."""

    def __init__(self, call: ToolCall, provider_id: str, path: str) -> None:
        session = call.session
        target = session.require_target()
        self.call = call
        self.id = provider_id
        self.client: AnalysisClient | None = None
        self.source: Literal["bound", "peer"]
        binding = session.binding
        if binding is not None and binding.provider.id == provider_id:
            self.source = "bound"
            self.identity, self.profile = binding.provider, binding.analysis_profile
            provider = session.provider
        else:
            self.source = "peer"
            try:
                select(session.registry, target, provider_id)
            except ReaError as exc:
                exc.details.setdefault("path", path)
                raise
            provider = session.registry.providers[provider_id]
            d = provider.descriptor
            self.identity = ProviderIdentity(id=d.id, name=d.name, version=d.version)
            self.profile = ev_mod.make_profile(self.identity, provider.analysis_profile(target))
        assert provider is not None
        self.operations = set(provider.descriptor.operations)
        if self.source == "peer":
            call.ctx.progress(f"compare_provider_results: opening {provider_id}")
            try:
                self.client = provider.open(target, session.run_id or "", call.ctx)
            except ReaError:
                raise
            except Exception as exc:
                raise ReaError(
                    "provider_unavailable",
                    f"provider {provider_id} failed to open the target (an internal error of the provider plugin)",
                    details={"provider_id": provider_id},
                ) from exc

    def supports(self, operation: str) -> bool:
        return operation in self.operations

    def run(self, operation: str, params: Arguments) -> OperationResult:
        ctx = self.call.ctx
        if self.client is None:
            return self.call.session.execute(operation, params, ctx)
        ctx.check(operation)
        try:
            result = self.client.execute(operation, params, ctx)
        except ReaError:
            raise
        except Exception as exc:
            raise ReaError(
                "execution_failure",
                f"provider {self.id} failed in {operation} (an internal error of the provider plugin)",
                details={"operation": operation, "provider_id": self.id},
            ) from exc
        ctx.check(operation)
        return result

    def pages(self, operation: str, key: str, params: Arguments) -> list[JSONObject]:
        """Every row of a paged operation (the provider's rows, as its answer's JSON)."""
        items: list[JSONObject] = []
        offset: int | None = 0
        while offset is not None:
            body = self.run(operation, {**params, "offset": offset, "limit": PAGE}).normalized
            items += body[key]
            if len(items) > MAX_INVENTORY:
                raise ReaError(
                    "resource_constraint",
                    f"{self.id} lists more than {MAX_INVENTORY} {key}",
                    details={"resource": key, "limit": MAX_INVENTORY, "provider_id": self.id},
                )
            offset = body["next_offset"]
        return items

    def close(self) -> PeerSession:
        """Close a peer client; its process lineage joins the run's."""
        if self.client is None:
            return PeerSession(provider_id=self.id, source=self.source)
        client, self.client = self.client, None
        remaining: tuple[str, ...] = ()
        try:
            remaining = client.close().remaining
            self.call.session.record_lineage(client.lineage())
        except Exception:
            remaining = ("provider-session",)
        return PeerSession(
            provider_id=self.id,
            source=self.source,
            cleanup="incomplete" if remaining else "complete",
            resources=sorted(remaining),
        )

    def describe(self) -> ComparedProvider:
        return ComparedProvider(
            id=self.id,
            name=self.identity.name,
            version=self.identity.version,
            source=self.source,
            analysis_profile_digest=self.profile.digest,
        )


def _callee_key(c: JSONObject) -> str:
    """A callee's identity across engines (``c``: a provider's callee row): its address, else its kind and name (an
    unresolved call site)."""
    if c.get("address"):
        return str(c["address"])
    return f"{c.get('kind') or 'indirect'}:{c.get('name') or '?'}"


def _set_facet(name: str, sets: dict[str, set[str]], limit: int) -> AgreementFacet:
    a, b = list(sets)
    only = {pid: sorted(sets[pid] - sets[other], key=_order) for pid, other in ((a, b), (b, a))}
    return AgreementFacet(
        facet=name,
        status="agree" if not only[a] and not only[b] else "disagree",
        both=len(sets[a] & sets[b]),
        only={pid: items[:limit] for pid, items in only.items()},
        only_count={pid: len(items) for pid, items in only.items()},
        truncated=any(len(items) > limit for items in only.values()),
    )


def _order(key: str) -> tuple[int, int, str]:
    return (0, int(key, 16), "") if key.startswith("0x") else (1, 0, key)


def _value_facet(name: str, values: dict[str, JSONValue]) -> AgreementFacet:
    known = [v for v in values.values() if v is not None]
    status: Agreement = (
        "unknown" if len(known) < len(values) else ("agree" if len(set(map(repr, known))) == 1 else "disagree")
    )
    return AgreementFacet(facet=name, status=status, values=values)


def _unknown(name: str, reason: str) -> AgreementFacet:
    return AgreementFacet(facet=name, status="unknown", reason=reason)


# The procedure_info facts compared one by one.
INFO_FACETS = ("size", "end", "kind", "basic_block_count", "instruction_count")


class _Facts(Record):
    """What one engine says about a procedure; a set is None where the engine does not offer its operation."""

    address: str
    name: str | None
    # procedure_info's INFO_FACETS values as the engine answered them (an engine's JSON; empty without it).
    info: dict[str, JSONValue] = {}
    callees: set[str] | None = None
    callee_names: dict[str, str | None] = {}
    callers: set[str] | None = None


def _procedure_facts(engine: Engine, selector: str) -> _Facts | None:
    """What one engine says about a procedure; None when it knows no procedure by that selector."""
    try:
        where = engine.run("procedure_address", {"procedure": selector}).normalized
    except ReaError as exc:
        if exc.code == "invalid_request":
            return None
        raise
    sel = {"procedure": where["address"]}
    info: dict[str, JSONValue] = {}
    callees: set[str] | None = None
    callee_names: dict[str, str | None] = {}
    callers: set[str] | None = None
    if engine.supports("procedure_info"):
        answered = engine.run("procedure_info", sel).normalized
        info = {key: answered.get(key) for key in INFO_FACETS}
    if engine.supports("procedure_callees"):
        listed = engine.run("procedure_callees", sel).normalized["callees"]
        callees = {_callee_key(c) for c in listed}
        callee_names = {_callee_key(c): c.get("name") for c in listed}
    if engine.supports("procedure_callers"):
        callers = {c["address"] for c in engine.run("procedure_callers", sel).normalized["callers"]}
    return _Facts(
        address=where["address"],
        name=where["name"],
        info=info,
        callees=callees,
        callee_names=callee_names,
        callers=callers,
    )


def _compare_procedure(engines: list[Engine], selector: str, limit: int) -> ProviderAgreement:
    facts = {}
    for e in engines:
        e.call.ctx.progress(f"compare_provider_results: {e.id} on {selector}")
        facts[e.id] = _procedure_facts(e, selector)
    ids = [e.id for e in engines]
    facets = [_value_facet("start", {pid: f.address if f else None for pid, f in facts.items()})]
    if any(f is None for f in facts.values()):
        missing = [pid for pid, f in facts.items() if f is None]
        facets[0].status = "disagree" if len(missing) < len(ids) else "unknown"
        facets[0].reason = f"no procedure {selector!r} in {', '.join(missing)}"
        present = {pid: f for pid, f in facts.items() if f}
        return _agreement(
            "procedure",
            facets,
            procedure=selector,
            procedures={
                pid: None if f is None else ProcedureRef(address=f.address, name=f.name) for pid, f in facts.items()
            },
            known_by=sorted(present),
        )
    both = {pid: f for pid, f in facts.items() if f is not None}
    for key in INFO_FACETS:
        facets.append(_value_facet(key, {pid: f.info.get(key) for pid, f in both.items()}))
    for key in ("callees", "callers"):
        sets = {pid: f.callees if key == "callees" else f.callers for pid, f in both.items()}
        known = {pid: s for pid, s in sets.items() if s is not None}
        if len(known) == len(sets):
            facet = _set_facet(key, known, limit)
            if key == "callees":
                names: dict[str, str] = {}
                for f in both.values():
                    names.update({k: v for k, v in f.callee_names.items() if v})
                only = facet.only or {}
                facet.names = {k: names[k] for pid in ids for k in only[pid] if k in names}
            facets.append(facet)
        else:
            facets.append(_unknown(key, f"a provider does not offer procedure_{key}"))
    return _agreement(
        "procedure",
        facets,
        procedure=selector,
        procedures={pid: ProcedureRef(address=f.address, name=f.name) for pid, f in both.items()},
    )


def _code_beside(
    engines: list[Engine], procedures: dict[str, ProcedureRef | None], max_lines: int
) -> dict[str, CodeBeside]:
    """Each provider's pseudo code of the procedure it resolved, its first ``max_lines`` lines (None: it knows no
    such procedure, or gives no pseudo code: the error says which)."""
    out: dict[str, CodeBeside] = {}
    for e in engines:
        ref = procedures.get(e.id)
        if ref is None:
            out[e.id] = CodeBeside(error="invalid_request")
            continue
        if not e.supports("procedure_pseudo_code"):
            out[e.id] = CodeBeside(error="capability_unavailable")
            continue
        e.call.ctx.progress(f"compare_provider_results: {e.id}'s pseudo code of {ref.name or ref.address}")
        try:
            code = e.run("procedure_pseudo_code", {"procedure": ref.address}).normalized
        except ReaError as exc:
            if exc.code == "cancelled":
                raise
            out[e.id] = CodeBeside(error=exc.code)
            continue
        lines = str(code.get("text", "")).splitlines()
        total = (code.get("lines") or {}).get("total", len(lines))
        out[e.id] = CodeBeside(
            text="\n".join(lines[:max_lines]), decompiler=code.get("decompiler"), total_lines=int(total)
        )
    return out


def _agreement(scope: Literal["procedure", "program"], facets: list[AgreementFacet], **more: Any) -> ProviderAgreement:
    """The answer before the providers are named (status and sessions are set once every client is closed)."""
    return ProviderAgreement(status="unknown", providers=[], scope=scope, facets=facets, **more)


def _list_facet(name: str, compared: int, differ: list[ProcedureDifference], limit: int) -> AgreementFacet:
    """A list facet: how many procedures were compared, and the first ``limit`` of those the providers differ on."""
    return AgreementFacet(
        facet=name,
        status="disagree" if differ else "agree",
        compared=compared,
        differ=len(differ),
        items=differ[:limit],
        truncated=len(differ) > limit,
    )


class _Listed(msgspec.Struct, frozen=True, kw_only=True):
    """A procedure as the program facets compare it (from a provider's list_procedures row)."""

    name: str | None
    kind: str | None
    size: int | None


def _listed(row: JSONObject) -> _Listed:
    name, kind, size = row.get("name"), row.get("kind"), row.get("size")
    return _Listed(
        name=name if isinstance(name, str) else None,
        kind=kind if isinstance(kind, str) else None,
        size=size if isinstance(size, int) else None,
    )


def _compare_program(engines: list[Engine], limit: int, max_procedures: int) -> ProviderAgreement:
    ctx = engines[0].call.ctx
    listed: dict[str, dict[str, _Listed]] = {}
    for e in engines:
        ctx.progress(f"compare_provider_results: listing {e.id}'s procedures")
        listed[e.id] = {str(p["address"]): _listed(p) for p in e.pages("list_procedures", "procedures", {})}
    ids = [e.id for e in engines]
    code = {pid: {a for a, p in procs.items() if p.kind in CODE_KINDS} for pid, procs in listed.items()}
    facets = [_set_facet("starts", code, limit)]
    imports = {
        pid: {p.name for p in procs.values() if p.kind == "import" and p.name is not None}
        for pid, procs in listed.items()
    }
    facets.append(_set_facet("imports", imports, limit))
    common = sorted(code[ids[0]] & code[ids[1]], key=lambda a: int(a, 16))
    sizes = [
        ProcedureDifference(address=a, name=listed[ids[0]][a].name, sizes={pid: listed[pid][a].size for pid in ids})
        for a in common
        if listed[ids[0]][a].size != listed[ids[1]][a].size
    ]
    facets.append(_list_facet("sizes", len(common), sizes, limit))
    if all(e.supports("procedure_callees") for e in engines):
        chosen = common[:max_procedures]
        differ: list[ProcedureDifference] = []
        edges: dict[str, set[tuple[str, str]]] = {pid: set() for pid in ids}
        for i, addr in enumerate(chosen):
            ctx.check("compare_provider_results")
            if i % 50 == 0:
                ctx.progress(
                    f"compare_provider_results: callees of {i} of {len(chosen)} procedures compared",
                    done=i,
                    total=len(chosen),
                )
            sets = {
                e.id: {_callee_key(c) for c in e.run("procedure_callees", {"procedure": addr}).normalized["callees"]}
                for e in engines
            }
            for pid in ids:
                edges[pid] |= {(addr, k) for k in sets[pid]}
            if sets[ids[0]] != sets[ids[1]]:
                only = {
                    pid: sorted(sets[pid] - sets[other], key=_order)
                    for pid, other in ((ids[0], ids[1]), (ids[1], ids[0]))
                }
                differ.append(ProcedureDifference(address=addr, name=listed[ids[0]][addr].name, only=only))
        counted = EdgeCounts(
            both=len(edges[ids[0]] & edges[ids[1]]),
            only={pid: len(edges[pid] - edges[other]) for pid, other in ((ids[0], ids[1]), (ids[1], ids[0]))},
        )
        facet = _list_facet("callees", len(chosen), differ, limit)
        facet.edges, facet.procedures_skipped = counted, len(common) - len(chosen)
        facets.append(facet)
    else:
        facets.append(_unknown("callees", "a provider does not offer procedure_callees"))
    counts = {pid: ProcedureCounts(procedures=len(listed[pid]), code=len(code[pid])) for pid in ids}
    return _agreement("program", facets, counts=counts)


def _provider_ids(call: ToolCall) -> list[str]:
    ids = arg_strs(call.args, "provider_ids") or []
    if len(set(ids)) != len(ids):
        raise invalid_request(
            "provider_ids must name two different providers",
            [issue("provider_ids", "invalid_value", "two different provider ids")],
        )
    return ids


def _compare_provider_results(call: ToolCall) -> Evidence:
    session = call.session
    target = session.require_target()
    ids = _provider_ids(call)
    limit = arg_int(call.args, "limit", 50)
    engines: list[Engine] = []
    closed: list[PeerSession] = []
    try:
        for i, pid in enumerate(ids):
            engines.append(Engine(call, pid, f"provider_ids[{i}]"))
        procedure = arg_str(call.args, "procedure")
        if procedure is not None:
            body = _compare_procedure(engines, procedure, limit)
            if arg_bool(call.args, "pseudo_code") and body.procedures:
                body.pseudo_code = _code_beside(engines, body.procedures, arg_int(call.args, "max_lines", 200))
        else:
            body = _compare_program(engines, limit, arg_int(call.args, "max_procedures", 500))
    finally:
        for e in engines:
            closed.append(e.close())
    statuses = {f.status for f in body.facets}
    body.status = "disagree" if "disagree" in statuses else ("unknown" if "unknown" in statuses else "agree")
    body.providers = [e.describe() for e in engines]
    body.peer_sessions = closed
    lims = [
        "Facets compare the providers' normalized answers; an address one provider lists and the other does "
        "not is a disagreement to inspect, not an error of either by itself."
    ]
    if body.scope == "program" and any(f.procedures_skipped for f in body.facets):
        lims.append("callees were compared for the first max_procedures common procedures only")
    profiles: dict[str, AnalysisProfile] = {e.id: e.profile for e in engines}
    parameters = {
        **{k: v for k, v in call.args.items()},
        "analysis_profiles": {pid: p.digest for pid, p in profiles.items()},
    }
    call.ctx.finish(f"compare_provider_results: {body.status}")
    return session.evidence(
        call.tool.name,
        parameters,
        OperationResult(normalized=msgspec.to_builtins(body), limitations=lims, confidence="derived"),
        target=target,
        provider=IDENTITY,
        analysis_profile=None,
        bound=False,
    )


PROVIDER_ID: JSONObject = {"type": "string", "pattern": "^[a-z][a-z0-9-]*$", "maxLength": 64}


def tools() -> list[ToolDef]:
    return [
        binary_tool(
            name="compare_provider_results",
            task_support="optional",
            description=(
                "Ask two providers the same questions about the open target and report where they disagree. "
                "Either one procedure (start, size, end, kind, blocks, instructions, callees, callers; each one's "
                "pseudo code side by side on request) or the "
                "whole program (procedure starts, imports, sizes, callees). The bound provider is never replaced: "
                "another provider runs for this call only."
            ),
            input_schema=obj(
                {
                    "provider_ids": {
                        "type": "array",
                        "items": PROVIDER_ID,
                        "minItems": 2,
                        "maxItems": 2,
                        "description": "The two providers to compare (the bound one may be either).",
                        "examples": [["native", "radare2"]],
                    },
                    "procedure": {
                        **PROCEDURE,
                        "description": "Compare one procedure (name or 0x address); omit to compare the whole program.",
                    },
                    "pseudo_code": prop(
                        "boolean",
                        "With procedure: also set each provider's pseudo code side by side (shown, not compared).",
                        [True],
                    ),
                    "max_lines": prop(
                        "integer",
                        "With pseudo_code: lines of each provider's text to include (1-5000); the total is given.",
                        [200],
                        minimum=1,
                        maximum=5000,
                    ),
                    "max_procedures": prop(
                        "integer",
                        "Whole program: common procedures whose callees are compared. In address order (1-5000).",
                        [500],
                        minimum=1,
                        maximum=5000,
                    ),
                    "limit": prop(
                        "integer",
                        "How many disagreeing items to list per facet (1-500); counts stay exact.",
                        [50],
                        minimum=1,
                        maximum=500,
                    ),
                },
                ("provider_ids",),
            ),
            result_type=ProviderAgreement,
            handler=_compare_provider_results,
            effects=ToolEffects(launches_process=True),
            cli_subject="procedure",
            examples=(
                {"provider_ids": ["native", "radare2"], "procedure": "main"},
                {"provider_ids": ["native", "angr"], "procedure": "main", "pseudo_code": True},
                {"provider_ids": ["native", "angr"], "max_procedures": 100},
            ),
        )
    ]
