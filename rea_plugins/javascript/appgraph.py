"""Application Evidence as workflow input: resolve, authenticate, decode, index, and derive results."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from collections.abc import Iterable
from typing import Any
from typing import TypeVar

import msgspec

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import evidence as ev_mod
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import render
from rea_plugins.javascript.application import PROVIDER
from rea_plugins.javascript.application import VIEW_OPERATION
from rea_plugins.javascript.model import OPERATION
from rea_plugins.javascript.model import SCHEMA_VERSION
from rea_plugins.javascript.model import Application
from rea_plugins.javascript.model import FunctionRecord
from rea_plugins.javascript.model import Module
from rea_plugins.javascript.results import ApplicationSummary


class Loaded:
    """One authenticated application record and its decoded graph."""

    def __init__(self, evidence: Evidence, app: Application) -> None:
        self.evidence = evidence
        self.app = app
        self.index = Index(app)


def load(call: ToolCall, key: str) -> Loaded:
    """Resolve ``call.args[key]`` (inline or retained) and check it is complete application Evidence."""
    ev = call.session.resolve_evidence(call.args[key], key)
    complete = _complete_id(ev)
    if complete is not None:
        # A summary stands for the complete graph it was made from (retained in the ledger when it was made).
        ev = call.session.resolve_evidence(ev_mod.retained_reference(complete), key)
    if ev.operation != OPERATION:
        hint = ""
        if ev.operation == VIEW_OPERATION and isinstance(ev.normalized_result, dict):
            parent = ev.normalized_result.get("parent_evidence_id")
            hint = (
                f' This is a summary view; pass {{"kind": "retained-evidence", "evidence_id": "{parent}"}}.'
                if parent
                else ""
            )
        raise invalid_request(
            f"{key} must be {OPERATION} Evidence, not {ev.operation}.{hint}",
            [issue(key, "invalid_value", f"expected operation {OPERATION}", operation=ev.operation)],
        )
    try:
        # The analysis's own record holds the Struct; an inline or decoded one holds its JSON form.
        app = msgspec.convert(ev.normalized_result, Application)
    except msgspec.ValidationError as exc:
        raise invalid_request(
            f"{key} is not a complete application graph: {exc}",
            [issue(key, "invalid_value", f"normalized_result does not decode: {exc}")],
        ) from None
    if app.schema_version != SCHEMA_VERSION:
        raise invalid_request(
            f"{key} has application graph schema {app.schema_version}; this rea reads {SCHEMA_VERSION}",
            [issue(key, "invalid_value", "unsupported schema_version", schema_version=app.schema_version)],
        )
    return Loaded(ev, app)


def _complete_id(ev: Evidence) -> str | None:
    """The complete graph's id when ``ev`` is an application summary."""
    if ev.operation != OPERATION:
        return None
    result = ev.normalized_result
    if isinstance(result, ApplicationSummary):
        return result.complete_evidence_id
    if isinstance(result, dict) and isinstance(result.get("complete_evidence_id"), str):
        return str(result["complete_evidence_id"])
    return None


def reference(loaded: Loaded) -> JSONObject:
    """The parameter form of an input: inline and retained inputs give the same derived Evidence."""
    return {**ev_mod.retained_reference(loaded.evidence.evidence_id)}


_Drawn = TypeVar("_Drawn", bound=msgspec.Struct)


def drawn(call: ToolCall, result: _Drawn, drawing: Callable[[_Drawn], render.Graph]) -> tuple[_Drawn, JSONObject]:
    """``result`` with the picture the call's ``format`` asks for (none by default), and the parameter that records
    the ask (empty when there is none)."""
    fmt = render.requested(call.args)
    if fmt is None:
        return result, {}
    return msgspec.structs.replace(result, picture=render.picture(drawing(result), fmt)), {"format": fmt}


def derive(
    operation: str, parameters: Arguments, normalized: Any, inputs: list[Loaded], limitations: Iterable[str] = ()
) -> Evidence:
    """Evidence derived from application inputs only, linked to them."""
    lims = list(limitations)
    partial = [x.evidence.evidence_id for x in inputs if x.app.coverage.status == "partial"]
    if partial:
        lims.append("An input application graph has partial coverage: " + ", ".join(partial) + ".")
    single = inputs[0].evidence if len(inputs) == 1 else None
    if len(inputs) > 1 and inputs[0].evidence.subject == inputs[-1].evidence.subject:
        single = inputs[0].evidence
    return ev_mod.build(
        operation=operation,
        provider=PROVIDER,
        subject=single.subject if single else None,
        analysis_profile=single.analysis_profile if single else None,
        parameters=parameters,
        normalized_result=normalized,
        confidence="derived",
        limitations=lims,
        evidence_links=[x.evidence.evidence_id for x in inputs],
    )


def normal_path(path: str) -> str:
    """A path for cross-evidence matching: normalized, without ``./``, ``../`` or leading ``/``."""
    norm = posixpath.normpath(path.split("?", 1)[0]) if path else ""
    while norm.startswith("../"):
        norm = norm[3:]
    norm = norm.lstrip("/")
    return "" if norm in (".", "..") else norm


def path_matches(a: str, b: str) -> bool:
    """Equal, or one ends with the other at a path-component boundary."""
    if not a or not b:
        return False
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def local_name(binding: str) -> tuple[str, str]:
    """(imported, local) of an import-name entry such as ``b as c`` or ``* as ns``."""
    if " as " in binding:
        imported, local = binding.split(" as ", 1)
        return imported, local
    return binding, binding


class Index:
    """Lookups over one application graph."""

    def __init__(self, app: Application) -> None:
        self.app = app
        self.modules: dict[str, Module] = {m.node_id: m for m in app.modules}
        self.by_path: dict[str, list[Module]] = {}
        self.functions: dict[str, tuple[Module, FunctionRecord]] = {}
        self.importers: dict[str, list[tuple[str, str, str]]] = {}
        # IPC channel -> modules serving it (ipcMain) and modules calling it (ipcRenderer).
        self.served: dict[str, set[str]] = {}
        self.called: dict[str, set[str]] = {}
        for m in app.modules:
            for record in m.ipc:
                if record.channel is None:
                    continue
                if record.api.startswith("ipcMain."):
                    self.served.setdefault(record.channel, set()).add(m.node_id)
                elif record.api.startswith("ipcRenderer."):
                    self.called.setdefault(record.channel, set()).add(m.node_id)
        for m in app.modules:
            self.by_path.setdefault(m.path, []).append(m)
            for fn in m.functions:
                self.functions[fn.node_id] = (m, fn)
            for edge in m.imports:
                if edge.resolved is not None:
                    self.importers.setdefault(edge.resolved, []).append((m.node_id, edge.kind, edge.specifier))

    def module(self, selector: str) -> list[Module]:
        """Modules named by node_id or path (exact), else by path suffix."""
        if selector in self.modules:
            return [self.modules[selector]]
        if selector in self.by_path:
            return list(self.by_path[selector])
        wanted = normal_path(selector)
        return [m for m in self.app.modules if path_matches(normal_path(m.path), wanted)]

    def neighbours(self, node_id: str, direction: str) -> list[tuple[str, str, str, str]]:
        """(from, to, kind, specifier) edges touching a module, containment included."""
        m = self.modules.get(node_id)
        out: list[tuple[str, str, str, str]] = []
        if m is None:
            return out
        if direction in ("both", "imports"):
            for edge in m.imports:
                if edge.resolved is not None and edge.resolved in self.modules:
                    out.append((node_id, edge.resolved, edge.kind, edge.specifier))
        if direction in ("both", "importers"):
            for src, kind, spec in self.importers.get(node_id, []):
                out.append((src, node_id, kind, spec))
        for record in m.ipc:
            channel = record.channel
            if channel is None:
                continue
            # A renderer-side call reaches the main-side handler of the same channel, like an import.
            if record.api.startswith("ipcRenderer.") and direction in ("both", "imports"):
                out.extend((node_id, server, "ipc", channel) for server in sorted(self.served.get(channel, ())))
            if record.api.startswith("ipcMain.") and direction in ("both", "importers"):
                out.extend((caller, node_id, "ipc", channel) for caller in sorted(self.called.get(channel, ())))
        if m.container is not None:
            out.append((m.container, node_id, "contains", m.path))
        for child in m.bundled_modules:
            out.append((node_id, child, "contains", self.modules[child].path if child in self.modules else child))
        return out

    def function_named(self, module: Module, name: str) -> FunctionRecord | None:
        """A module's function by name (``Class.name`` matches ``name`` too), top-level first."""
        hits = [f for f in module.functions if f.name == name or f.name.endswith("." + name)]
        if not hits:
            return None
        top = [
            f
            for f in hits
            if f.parent is not None
            and self.functions.get(f.parent, (None, None))[1] is not None
            and self.functions[f.parent][1].kind == "module-body"
        ]  # type: ignore[union-attr]
        return (top or hits)[0]


def not_found(path: str, message: str, candidates: list[str] | None = None) -> ReaError:
    if candidates:
        return invalid_request(message, [issue(path, "invalid_value", message, candidates=candidates[:50])])
    return invalid_request(message, [issue(path, "invalid_value", message)])
