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
from rea_plugins.binary.schema import check_document, evidence, params_of, run

from rea.catalog.tool import ToolCall
from rea.evidence import Evidence

_EXPORTS = "binary.cross_binary_exports"


def _layout(call: ToolCall, target_id: str) -> dict[str, Any] | None:
    """The binary_layout answer of an open target (cached per target and binding), or None without one."""
    session = call.session
    with session.using(target_id):
        binding, target = session.binding, session.target
        if target is None or binding is None or not session.supports("binary_layout"):
            return None
        key = (target.sha256, binding.analysis_profile.digest)
        cache: dict[Any, dict[str, Any]] = session.state.setdefault(_EXPORTS, {})
        if key not in cache:
            cache[key] = run(call, "binary_layout", {}).normalized
        return cache[key]


def _needs(needed: list[str], path: str) -> bool:
    name = os.path.basename(path)
    # A soname is the file's name or a prefix of it (libz.so.1 for libz.so.1.3.1); DLL names compare caselessly.
    return any(name == n or name.startswith(n + ".") or name.lower() == n.lower() for n in needed)


def follow_imports(call: ToolCall, callees: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``callees`` with ``exported_by`` on each import an open library exports (unchanged with one target)."""
    session = call.session
    here = session.target_id
    others = [t for t in session.open_targets() if t.target_id != here and t.target is not None]
    if not others or not any(c.get("kind") == "import" and c.get("name") for c in callees) or here is None:
        return callees
    own = _layout(call, here)
    needed = list((own or {}).get("linkage", {}).get("needed", []))
    exporters: list[tuple[Any, dict[str, str]]] = []
    for other in others:
        call.ctx.check("following imports")
        opened = other.target
        if opened is None or (needed and not _needs(needed, opened.resolved_path)):
            continue
        layout = _layout(call, other.target_id)
        if layout is not None:
            exports = {e["name"]: e["address"] for e in layout.get("exports", []) if e.get("address")}
            exporters.append((other, exports))
    out = []
    for callee in callees:
        name = str(callee.get("name") or "").split("@", 1)[0]
        found = None
        if callee.get("kind") == "import" and name:
            found = next(((t, ex[name]) for t, ex in exporters if name in ex), None)
        if found is None:
            out.append(callee)
            continue
        target, address = found
        edge = {"target_id": target.target_id, "address": address, "name": name}
        out.append({**callee, "exported_by": {**edge, **({"alias": target.alias} if target.alias else {})}})
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
