"""Calls that leave the program: an import followed into the open library that exports it (issue 25 item 2).

With a program and the libraries it needs open in one session, ``procedure_callees`` names, for each import it
calls, the library target that exports that name and the export's address: a cross-binary edge. A library
answers only for a program that needs it (its file name or soname among the program's DT_NEEDED entries, or a
program without that table, such as a PE whose imports name their DLL), so nothing is guessed from a name alone.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import OperationResult
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea_plugins.binary.core.schema import PROCEDURE_INPUT
from rea_plugins.binary.core.schema import check_document
from rea_plugins.binary.core.schema import evidence
from rea_plugins.binary.core.schema import objects_in
from rea_plugins.binary.core.schema import operation_tool
from rea_plugins.binary.core.schema import params_of
from rea_plugins.binary.core.schema import run

_EXPORTS = "binary.cross_binary_exports"
MAX_IMPORTED_BY = 1000


class Neighbour(msgspec.Struct, kw_only=True):
    """A callee or caller of a walked procedure as the call walks read it (from the provider's row): ``kind`` is
    ``direct`` where the row says none, ``exported`` an import an open library exports (the walk goes on there)."""

    address: str | None
    name: str | None
    kind: str
    call_sites: list[str]
    exported: bool = False


def neighbour(row: JSONObject) -> Neighbour:
    """The walk's reading of a provider's callee or caller row (with ``exported_by`` from ``follow_imports``)."""
    address, name, kind, sites = row.get("address"), row.get("name"), row.get("kind", "direct"), row.get("call_sites")
    return Neighbour(
        address=address if isinstance(address, str) else None,
        name=name if isinstance(name, str) else None,
        kind=kind if isinstance(kind, str) else "direct",
        call_sites=[s for s in sites if isinstance(s, str)] if isinstance(sites, list) else [],
        exported="exported_by" in row,
    )


def needed_libraries(layout: JSONObject | None) -> list[str]:
    """The libraries a binary_layout answer says its target needs (DT_NEEDED, a PE's DLLs), none without one."""
    linkage = (layout or {}).get("linkage")
    needed = linkage.get("needed") if isinstance(linkage, dict) else None
    return [n for n in needed if isinstance(n, str)] if isinstance(needed, list) else []


def _exports(layout: JSONObject) -> dict[str, str]:
    """A binary_layout answer's exports with an address: name -> address."""
    return {
        name: address
        for e in objects_in(layout.get("exports"))
        if isinstance(name := e.get("name"), str) and isinstance(address := e.get("address"), str) and address
    }


def _layout(call: ToolCall, target_id: str) -> JSONObject | None:
    """The binary_layout answer of an open target (cached per target and binding), or None without one; the
    provider's answer as its JSON."""
    session = call.session
    with session.using(target_id):
        binding, target = session.binding, session.target
        if target is None or binding is None or not session.supports("binary_layout"):
            return None
        key = (target.sha256, binding.analysis_profile.digest)
        cache: dict[tuple[str, str], JSONObject] = session.state.setdefault(_EXPORTS, {})
        if key not in cache:
            cache[key] = run(call, "binary_layout", {}).normalized
        return cache[key]


def _needs(needed: list[str], path: str) -> bool:
    name = os.path.basename(path)
    # A soname is the file's name or a prefix of it (libz.so.1 for libz.so.1.3.1); DLL names compare caselessly;
    # a Mach-O install name (/usr/lib/libz.1.dylib, @rpath/libz.1.dylib) by its last component.
    wanted = [os.path.basename(n) for n in needed]
    return any(name == n or name.startswith(n + ".") or name.lower() == n.lower() for n in wanted)


def follow_imports(call: ToolCall, callees: list[JSONObject]) -> list[JSONObject]:
    """``callees`` (the provider's rows) with ``exported_by`` on each import an open library exports (unchanged with
    one target)."""
    session = call.session
    here = session.target_id
    others = [t for t in session.open_targets() if t.target_id != here and t.target is not None]
    if not others or not any(c.get("kind") == "import" and c.get("name") for c in callees) or here is None:
        return callees
    own = _layout(call, here)
    needed = needed_libraries(own)
    exporters: list[tuple[Any, dict[str, str]]] = []
    if own is not None and own.get("exports"):
        # A library calling its own export through its PLT binds to itself (nothing earlier in the search defines it).
        exporters.append((session.find(here), _exports(own)))
    for other in others:
        call.ctx.check("following imports")
        opened = other.target
        if opened is None or (needed and not _needs(needed, opened.resolved_path)):
            continue
        layout = _layout(call, other.target_id)
        if layout is not None:
            exporters.append((other, _exports(layout)))
    out: list[JSONObject] = []
    for callee in callees:
        name = str(callee.get("name") or "").split("@", 1)[0]
        found = None
        if callee.get("kind") == "import" and name:
            found = next(((t, ex[name]) for t, ex in exporters if name in ex), None)
        if found is None:
            out.append(callee)
            continue
        target, address = found
        edge: JSONObject = {"target_id": target.target_id, "address": address, "name": name}
        if target.alias:
            edge["alias"] = target.alias
        out.append({**callee, "exported_by": edge})
    return out


class Across:
    """One tool call's operations on any open target, each target under its own annotations (its own sub-call)."""

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.home: str = call.session.target_id or ""
        self._calls: dict[str, ToolCall] = {self.home: call}

    def call_for(self, target_id: str) -> ToolCall:
        if target_id not in self._calls:
            self._calls[target_id] = ToolCall(self.call.tool, self.call.args, self.call.session, self.call.ctx)
        return self._calls[target_id]

    def run(self, target_id: str, operation: str, params: Arguments) -> OperationResult:
        if target_id == self.home:
            return run(self.call, operation, params)
        with self.call.session.using(target_id):
            return run(self.call_for(target_id), operation, params)

    def callees(self, target_id: str, procedure: str) -> list[JSONObject]:
        """A procedure's callees in ``target_id``, imports followed into the open libraries exporting them."""
        items = list(self.run(target_id, "procedure_callees", {"procedure": procedure}).normalized["callees"])
        if target_id == self.home:
            return follow_imports(self.call, items)
        with self.call.session.using(target_id):
            return follow_imports(self.call_for(target_id), items)

    def importers(self, library_id: str, name: str) -> list[tuple[str, str]]:
        """The open targets that need ``library_id`` and import ``name``: (target_id, the import's address)."""
        session = self.call.session
        library = session.find(library_id)
        if library.target is None or "@" in name:
            return []
        out = []
        for other in session.open_targets():
            if other.target_id == library_id or other.target is None:
                continue
            layout = _layout(self.call, other.target_id)
            if layout is None:
                continue
            needed = needed_libraries(layout)
            if needed and not _needs(needed, library.target.resolved_path):
                continue
            if not any(str(i.get("name", "")).split("@", 1)[0] == name for i in objects_in(layout.get("imports"))):
                continue
            try:
                found = self.run(other.target_id, "procedure_address", {"procedure": name}).normalized
            except ReaError:
                continue
            out.append((other.target_id, str(found["address"])))
        return out


def xrefs_across(call: ToolCall, address: str) -> JSONObject:
    """For the xrefs tool with several targets open: ``exported_by`` when ``address`` is an import an open library
    exports, and ``imported_by``, the references in other open targets that reach this export through an import
    (members added to the provider's xrefs answer, so JSON like it)."""
    session = call.session
    here = session.target_id
    if here is None or len(session.open_targets()) < 2 or not session.supports("address_name"):
        return {}
    name = run(call, "address_name", {"address": address}).normalized.get("name")
    if not name:
        return {}
    out: JSONObject = {}
    stub: JSONObject = {"address": address, "name": name, "kind": "import", "call_sites": []}
    into = follow_imports(call, [stub])[0].get("exported_by")
    if isinstance(into, dict) and into and not (into["target_id"] == here and into["address"] == address):
        out["exported_by"] = into
    across = Across(call)
    rows: list[JSONValue] = []
    for program, import_at in across.importers(here, str(name).split("@", 1)[0]):
        refs = across.run(program, "xrefs", {"address": import_at}).normalized["references"]
        rows.extend({**r, "target_id": program} for r in refs)
    if rows:
        out["imported_by"] = rows[:MAX_IMPORTED_BY]
        if len(rows) > MAX_IMPORTED_BY:
            out["imported_by_truncated"] = True
    return out


def handle_callees(call: ToolCall) -> Evidence:
    """procedure_callees, with imports followed into the open libraries that export them."""
    check_document(call)
    result = run(call, "procedure_callees", params_of(call.args))
    followed = follow_imports(call, list(result.normalized.get("callees", [])))
    if followed is result.normalized.get("callees"):
        return evidence(call, result)
    note = "exported_by names the open library target that exports an import this program needs."
    normalized = {**result.normalized, "callees": followed}
    return evidence(
        call, msgspec.structs.replace(result, normalized=normalized, limitations=[*result.limitations, note])
    )


def tools() -> list[ToolDef]:
    return [
        operation_tool(
            "procedure_callees",
            description="Procedures this one calls (direct, import, indirect), with call sites.",
            input_schema=PROCEDURE_INPUT,
            handler=handle_callees,
            cli_subject="procedure",
            examples=({"procedure": "main"},),
        ),
    ]
