"""compare_provider_results and provider-aware compare_functions: two engines, one target, the binding kept."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from rea import hookimpl
from rea import registry as registry_mod
from rea.context import CallContext
from rea.errors import ReaError
from rea.providers import AnalysisClient
from rea.providers import AnalysisProvider
from rea.providers import Availability
from rea.providers import CloseOutcome
from rea.providers import OperationResult
from rea.providers import ProviderDescriptor as Descriptor
from rea.registry import Registry
from rea.session import Session
from rea.target import Target
from rea.testing import call_tool
from rea.testing import result_of
from rea_plugins.native.provider import NativeProvider
from rea_plugins.radare2.options import library_dir
from tests.fixtures.native.native_fixtures import native_fixtures
from tests.mcp.harness import connect

__all__ = ["native_fixtures"]

OPERATIONS = ("list_procedures", "procedure_address", "procedure_info", "procedure_callees", "procedure_callers")


class DoubterClient(AnalysisClient):
    """The native provider's answers with three planted disagreements: greet missing, dispatch one byte longer,
    and main's call to greet forgotten."""

    def __init__(self, inner: AnalysisClient) -> None:
        self.inner = inner
        self.closed = False

    def execute(self, operation: str, params: dict[str, Any], ctx: CallContext) -> OperationResult:
        out = self.inner.execute(operation, params, ctx)
        body = dict(out.normalized)
        if operation == "list_procedures":
            body["procedures"] = [p for p in body["procedures"] if p["name"] != "greet"]
            body["total"] -= 1
        elif operation == "procedure_info" and body["name"] == "dispatch":
            body["size"] += 1
        elif operation == "procedure_callees" and body["procedure"]["name"] == "main":
            body["callees"] = [c for c in body["callees"] if c["name"] != "greet"]
        return OperationResult(normalized=body)

    def close(self) -> CloseOutcome:
        self.closed = True
        self.inner.close()
        return CloseOutcome()

    def lineage(self) -> list[dict[str, Any]]:
        return [{"provider_id": "doubter", "resource": "doubter-session", "event": "closed", "status": "verified"}]


class Doubter(AnalysisProvider):
    descriptor = Descriptor(
        id="doubter",
        name="Doubter",
        version="1",
        kind="static",
        formats=("elf",),
        architectures=("x86_64",),
        operations=OPERATIONS,
        auto_priority=-7,
    )

    def __init__(self) -> None:
        self.clients: list[DoubterClient] = []

    def availability(self) -> Availability:
        return Availability.ok()

    def open(self, target: Target, run_id: str, ctx: CallContext) -> AnalysisClient:
        client = DoubterClient(NativeProvider().open(target, run_id, ctx))
        self.clients.append(client)
        return client


class DoubterPlugin:
    def __init__(self) -> None:
        self.provider = Doubter()

    @hookimpl
    def rea_register_analysis_providers(self, register: Any) -> None:
        register(self.provider)


@pytest.fixture(scope="module")
def doubter() -> DoubterPlugin:
    return DoubterPlugin()


@pytest.fixture(scope="module")
def registry(doubter: DoubterPlugin) -> Registry:
    return registry_mod.load(extra=[("doubter", doubter)])


@pytest.fixture
def native_session(registry: Registry, native_fixtures: Any) -> Iterator[Session]:
    session = Session(registry)
    call_tool(session, "open_binary", {"path": native_fixtures.get("elf-x64").path, "provider_id": "native"})
    try:
        yield session
    finally:
        assert session.close() == []


def _facet(body: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in body["facets"] if f["facet"] == name)


def _address(session: Session, name: str) -> str:
    return str(result_of(session, "procedure_address", {"procedure": name})["address"])


def test_whole_program_reports_exactly_the_planted_disagreements(
    native_session: Session, doubter: DoubterPlugin
) -> None:
    client_before = native_session._client
    out = call_tool(native_session, "compare_provider_results", {"provider_ids": ["native", "doubter"]}).evidence
    assert out is not None
    body = out.normalized_result
    greet, main = (_address(native_session, n) for n in ("greet", "main"))
    assert body["status"] == "disagree" and body["scope"] == "program"
    assert [(p["id"], p["source"]) for p in body["providers"]] == [("native", "bound"), ("doubter", "peer")]
    starts = _facet(body, "starts")
    assert starts["only"] == {"native": [greet], "doubter": []}
    assert starts["both"] + 1 == body["counts"]["native"]["code"]
    sizes = _facet(body, "sizes")
    assert sizes["status"] == "agree"  # list_procedures sizes were left alone; procedure_info was not asked
    callees = _facet(body, "callees")
    assert [(i["address"], i["only"]) for i in callees["items"]] == [(main, {"native": [greet], "doubter": []})]
    assert callees["edges"]["only"] == {"native": 1, "doubter": 0}
    assert _facet(body, "imports")["status"] == "agree"
    # The binding and its client are untouched; the peer was closed and its lineage kept in the run.
    assert native_session.binding is not None and native_session.binding.provider.id == "native"
    assert native_session._client is client_before
    assert doubter.provider.clients and all(c.closed for c in doubter.provider.clients)
    assert any(o.get("provider_id") == "doubter" for o in native_session.lineage)
    assert out.provider.id == "rea-binary" and out.subject is not None
    assert set(out.parameters["analysis_profiles"]) == {"native", "doubter"}


def test_one_procedure_facet_by_facet(native_session: Session) -> None:
    body = result_of(
        native_session, "compare_provider_results", {"provider_ids": ["doubter", "native"], "procedure": "dispatch"}
    )
    assert body["scope"] == "procedure" and body["status"] == "disagree"
    assert [(p["id"], p["source"]) for p in body["providers"]] == [("doubter", "peer"), ("native", "bound")]
    size = _facet(body, "size")
    assert size["status"] == "disagree" and size["values"]["doubter"] == size["values"]["native"] + 1
    for name in ("start", "end", "kind", "callees", "callers"):
        assert _facet(body, name)["status"] == "agree", name
    main = result_of(
        native_session, "compare_provider_results", {"provider_ids": ["native", "doubter"], "procedure": "main"}
    )
    callees = _facet(main, "callees")
    greet = _address(native_session, "greet")
    assert callees["only"] == {"native": [greet], "doubter": []} and callees["names"] == {greet: "greet"}


def test_pseudo_code_is_set_side_by_side(native_session: Session) -> None:
    """Issue 41: native's C beside angr's for one procedure; a provider without pseudo code says so by its code."""
    from rea_plugins.native.decompile import engine

    if not engine().available:
        pytest.skip(f"native's decompiler cannot run here: {engine().reason}")
    args = {"provider_ids": ["native", "angr"], "procedure": "main", "pseudo_code": True, "max_lines": 5}
    body = result_of(native_session, "compare_provider_results", args)
    native, angr = body["pseudo_code"]["native"], body["pseudo_code"]["angr"]
    assert "main(" in native["text"] and native["decompiler"].startswith("ghidra (flatline)"), native
    assert angr["text"] and angr["decompiler"] == "angr", angr
    for side in (native, angr):
        assert len(side["text"].splitlines()) <= 5 < side["total_lines"], side
    doubted = result_of(native_session, "compare_provider_results", {**args, "provider_ids": ["native", "doubter"]})
    assert doubted["pseudo_code"]["doubter"] == {"error": "capability_unavailable"}
    plain = result_of(native_session, "compare_provider_results", {**args, "pseudo_code": False})
    assert "pseudo_code" not in plain or plain["pseudo_code"] is None


def test_bad_provider_choices_are_typed_errors(native_session: Session) -> None:
    for ids, code in ((["native", "native"], "invalid_request"), (["native", "nosuch"], "invalid_request")):
        with pytest.raises(ReaError) as info:
            call_tool(native_session, "compare_provider_results", {"provider_ids": ids})
        assert info.value.code == code, ids
    with pytest.raises(ReaError) as info:
        call_tool(native_session, "compare_provider_results", {"provider_ids": ["native"]})
    assert info.value.code == "invalid_request"
    assert native_session.binding is not None and native_session.binding.provider.id == "native"


def _require_radare2() -> None:
    if library_dir() is None:
        pytest.skip("radare2 is not installed (pip install 'rea-reverse[radare2]')")


def test_compare_functions_across_providers(registry: Registry, native_fixtures: Any) -> None:
    _require_radare2()
    path = native_fixtures.get("elf-x64").path
    session = Session(registry)
    try:
        dossiers = []
        for provider in ("native", "radare2"):
            call_tool(session, "open_binary", {"path": path, "provider_id": provider})
            ev = call_tool(session, "analyze_function", {"procedure": "main"}).evidence
            assert ev is not None and ev.provider.id == provider
            dossiers.append(ev)
        body = result_of(
            session,
            "compare_functions",
            {
                "left": {"kind": "retained-evidence", "evidence_id": dossiers[0].evidence_id},
                "right": {"kind": "retained-evidence", "evidence_id": dossiers[1].evidence_id},
            },
        )
        assert body["comparison"] == "providers"
        assert (body["left"]["provider"], body["right"]["provider"]) == ("native", "radare2")
        facets = {f["facet"]: f for f in body["facets"]}
        assert "pseudocode_digest" not in facets
        for name in ("address", "end", "kind", "callee_targets", "callers", "size"):
            assert facets[name]["status"] == "unchanged", (name, facets[name])
    finally:
        assert session.close() == []


def test_at_the_mcp_boundary_radare2_answers_beside_the_bound_native(native_fixtures: Any) -> None:
    _require_radare2()
    path = native_fixtures.get("elf-x64").path

    async def main() -> None:
        async with connect() as client:
            opened = await client.call_tool("open_binary", {"path": path, "provider_id": "native"})
            assert opened.is_error is False, opened.content
            res = await client.call_tool(
                "compare_provider_results", {"provider_ids": ["native", "radare2"], "procedure": "main"}
            )
            assert res.is_error is False, res.content
            body = res.structured_content["normalized_result"]
            assert body["status"] == "agree", body
            assert {f["facet"] for f in body["facets"]} >= {"start", "size", "callees", "callers"}
            assert body["peer_sessions"][1] == {
                "provider_id": "radare2",
                "source": "peer",
                "cleanup": "complete",
                "resources": [],
            }
            session = (await client.call_tool("binary_session", {})).structured_content
            binding = session["analysis_provider_binding"]
            assert binding["provider"]["id"] == "native" and binding["selection_source"] == "request"
            snapshots = session["analysis_run"]["process_lineage"]["snapshots"]
            peer = [s for s in snapshots if s.get("resource") == "radare2-worker"]
            assert {s["event"] for s in peer} >= {"started", "closed"}
            assert all(s["status"] == "verified" for s in peer)
            closed = await client.call_tool("close_binary", {})
            assert closed.structured_content["cleanup"] == "complete"

    anyio.run(main)
