"""The analyst's annotations in the binary family's results, whichever provider produced them.

Engines never see annotations: every provider result passes through ``apply`` here, which gives
user names (``name_source: "user"``, the engine's name kept as ``original_name``), rewrites names in
assembly and pseudocode text, and attaches comments to instructions. A call reads one snapshot of
the target's annotations, and its Evidence parameters carry that snapshot's revision, so Evidence
that reflects annotations changes identity when they change.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable
from typing import Any

import msgspec

from rea.plugin import CORE_OPERATIONS
from rea.plugin import Arguments
from rea.plugin import JSONObject
from rea.plugin import Notebook
from rea.plugin import OperationResult
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import arg_int
from rea.plugin import search
from rea.plugin import typelib
from rea_plugins.binary.core import demangle
from rea_plugins.binary.core.shapes import NotebookRow
from rea_plugins.binary.core.shapes import NoteKind
from rea_plugins.binary.core.shapes import UserName

USER = "user"
REVISION_PARAMETER = "annotation_revision"
# The core operations whose results name nothing the analyst annotates: the document, its segments and strings.
_UNNAMED_OPERATIONS = frozenset({"list_documents", "list_segments", "list_strings", "search_strings"})
# Operations whose results carry procedure or symbol names (and so reflect user names): every other core operation,
# pseudo code and the engine-specific ones.
NAMED_OPERATIONS = (frozenset(CORE_OPERATIONS) - _UNNAMED_OPERATIONS) | {
    "procedure_pseudo_code",
    "inspect_native_instruction",
    "inspect_native_data_type",
    "resolve_native_call_targets",
}
_TEXT_OPERATIONS = frozenset(
    {"procedure_assembly", "read_function_instructions", "procedure_pseudo_code", "inspect_native_instruction"}
)
# Tools whose results never mention a name or an annotation: their Evidence identity ignores annotations.
ANNOTATION_FREE_TOOLS = _UNNAMED_OPERATIONS | {
    "read_bytes",
    "address_to_file_offset",
    "inspect_native_load_image",
    "current_document",
}
_ORIGINALS = "binary.original_names"
_MAX_TEXT_NAMES = 4096
MAX_SEARCHED = 200_000
# Engines get at most this much C (the type library and the prototypes) with a pseudo-code request.
_MAX_ENGINE_SOURCE = 1 << 20

_snapshots: weakref.WeakKeyDictionary[ToolCall, Notebook] = weakref.WeakKeyDictionary()
_snapshots_lock = threading.Lock()


def notebook(call: ToolCall) -> Notebook:
    """The open target's annotations as this call sees them (one snapshot per call)."""
    with _snapshots_lock:
        found = _snapshots.get(call)
    if found is None:
        target = call.session.require_target()
        found = call.session.annotations.load(target.sha256)
        with _snapshots_lock:
            _snapshots[call] = found
    return found


def refresh(call: ToolCall, nb: Notebook) -> None:
    """After this call wrote annotations, the rest of it sees what it wrote."""
    with _snapshots_lock:
        _snapshots[call] = nb


def parameters(call: ToolCall) -> Arguments:
    """The call's Evidence parameters: its arguments, plus the annotation revision its result reflects."""
    params = dict(call.args)
    if call.tool.name not in ANNOTATION_FREE_TOOLS and call.session.target is not None:
        revision = notebook(call).revision
        if revision is not None:
            params[REVISION_PARAMETER] = revision
    return params


def selector(nb: Notebook, params: Arguments) -> Arguments:
    """A procedure selector naming a user name selects that address (engines know only their names)."""
    chosen = params.get("procedure")
    if isinstance(chosen, str) and nb.addresses:
        address = nb.address_of(chosen)
        if address is not None:
            return {**params, "procedure": address}
    return params


def for_engine(nb: Notebook, operation: str, params: Arguments) -> Arguments:
    """A pseudo-code request with the library's C and the prototypes, for engines that apply them.

    Only when the target has types or prototypes: other requests (and other engines' caches) are unchanged.
    """
    if operation != "procedure_pseudo_code":
        return params
    prototypes = {a: n.prototype for a, n in nb.addresses.items() if n.prototype is not None}
    if not prototypes and not nb.types:
        return params
    declarations = [nb.types[n].c for n in typelib.ordered(nb.types)]
    if sum(len(c) for c in declarations) + sum(len(p) for p in prototypes.values()) > _MAX_ENGINE_SOURCE:
        return params
    # The library in dependency order, one declaration per item.
    return {**params, "types": {"declarations": list(declarations), "prototypes": dict(prototypes)}}


def apply(call: ToolCall, operation: str, result: OperationResult, nb: Notebook) -> OperationResult:
    """``result`` with the annotations of ``nb`` applied (a new value: engine caches stay untouched); mangled
    names are shown demangled first (``demangle``), so a user name keeps the demangled one as ``original_name``."""
    if operation not in NAMED_OPERATIONS:
        return result
    shown = demangle.apply(result.normalized)
    if not nb.addresses:
        return result if shown == result.normalized else _answered(result, shown)
    names = nb.names()
    normalized = _renamed(shown, names) if names else shown
    if operation in _TEXT_OPERATIONS:
        normalized = _texts(call, normalized, nb, names)
    if operation == "procedure_info" and isinstance(normalized, dict):
        normalized = _function(normalized, nb)
    return _answered(result, normalized)


def _answered(result: OperationResult, normalized: Any) -> OperationResult:
    """``result`` answering ``normalized`` instead, in a new value (its lists copied: engine caches stay untouched)."""
    return OperationResult(
        normalized=normalized,
        raw=result.raw,
        limitations=list(result.limitations),
        locations=list(result.locations),
        confidence=result.confidence,
    )


def search_procedures(
    call: ToolCall, params: Arguments, listing: Callable[[Arguments], OperationResult]
) -> OperationResult:
    """``search_procedures`` over the annotated listing: a procedure matches by its user or engine name."""
    matches = search.matcher(params)
    found: list[JSONObject] = []  # the provider's procedure rows, as its answer's JSON
    offset: int | None = 0
    seen = 0
    while offset is not None:
        call.ctx.check("search_procedures")
        page = listing({"offset": offset, "limit": 1000}).normalized
        seen += len(page["procedures"])
        if seen > MAX_SEARCHED:
            raise ReaError(
                "resource_constraint",
                f"more than {MAX_SEARCHED} procedures to search with user names",
                details={"resource": "procedures", "limit": MAX_SEARCHED},
            )
        found.extend(p for p in page["procedures"] if matches(p["name"] or "") or matches(p.get("original_name") or ""))
        offset = page["next_offset"]
    start, limit = arg_int(params, "offset", 0), arg_int(params, "limit", 100)
    end = start + limit
    return OperationResult(
        normalized={
            "procedures": found[start:end],
            "offset": start,
            "limit": limit,
            "total": len(found),
            "next_offset": end if end < len(found) else None,
        },
        limitations=["matched against user names and the engine's names"],
    )


def _renamed(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _renamed(v, names) for k, v in value.items()}
    address = out.get("address")
    if isinstance(address, str) and "name" in out and address in names:
        given = names[address]
        if out["name"] != given:
            out["original_name"] = out["name"]
            out["name"] = given
        out["name_source"] = USER
    to = out.get("to")
    if isinstance(to, str) and "to_name" in out and to in names:
        out["to_name"] = names[to]
    return out


def _function(info: JSONObject, nb: Notebook) -> JSONObject:
    """The analyst's signature, notes and comment on a procedure's entry (``info``: the provider's answer)."""
    note = nb.note(str(info.get("address")))
    out = dict(info)
    # A prototype (set_function_prototype) is the signature; a free-text signature note otherwise.
    signature = note.prototype if note.prototype is not None else note.signature
    if signature is not None:
        if out.get("signature") not in (None, signature):
            out["original_signature"] = out["signature"]
        out["signature"] = signature
        out["signature_source"] = USER
    if note.prototype is not None:
        try:
            out["prototype"] = msgspec.to_builtins(typelib.prototype(note.prototype, nb.types))
        except ReaError:  # a type it names was redeclared away: the text still shows as the signature
            pass
    for field in ("notes", "comment"):
        if getattr(note, field) is not None:
            out[field] = getattr(note, field)
    return out


def original_names(call: ToolCall, addresses: list[str]) -> dict[str, str]:
    """The bound provider's names for ``addresses`` (cached per target and provider)."""
    target = call.session.require_target()
    provider = call.session.provider.descriptor.id if call.session.provider else ""
    state = call.session.state.get(_ORIGINALS)
    if not isinstance(state, dict) or state.get("key") != (target.sha256, provider):
        state = {"key": (target.sha256, provider), "names": {}}
        call.session.state[_ORIGINALS] = state
    known: dict[str, str | None] = state["names"]
    if call.session.supports("address_name"):
        for address in addresses[:_MAX_TEXT_NAMES]:
            if address not in known:
                call.ctx.check("annotation names")
                known[address] = call.session.execute("address_name", {"address": address}, call.ctx).normalized.get(
                    "name"
                )
    return {a: n for a in addresses if (n := known.get(a))}


def _texts(call: ToolCall, normalized: Any, nb: Notebook, names: dict[str, str]) -> Any:
    if not isinstance(normalized, dict):
        return normalized
    rename = _rewriter(call, names)
    out = dict(normalized)
    if isinstance(out.get("text"), str) and rename is not None:
        out["text"] = rename(out["text"])
    instructions = out.get("instructions")
    if isinstance(instructions, list):
        out["instructions"] = [_instruction(i, nb, rename) for i in instructions]
    inner = out.get("instruction")
    if isinstance(inner, dict):
        out["instruction"] = _instruction(inner, nb, rename)
    return out


def _instruction(item: Any, nb: Notebook, rename: Callable[[str], str] | None) -> Any:
    if not isinstance(item, dict):
        return item
    out = dict(item)
    if rename is not None:
        for key in ("text", "operands", "symbolized"):
            if isinstance(out.get(key), str):
                out[key] = rename(out[key])
    if isinstance(out.get("symbolized"), str):
        # An operand's own symbol names the engine's name it replaces, even where address_name has none.
        for sym in out.get("symbols") or []:
            old = sym.get("original_name") if isinstance(sym, dict) and sym.get("name_source") == USER else None
            if isinstance(old, str) and old:
                new = str(sym["name"]).replace("\\", "\\\\")
                out["symbolized"] = re.sub(rf"(?<![\w$@.]){re.escape(old)}(?![\w$@])", new, out["symbolized"])
    address = out.get("address")
    if isinstance(address, str):
        note = nb.note(address)
        if note.comment is not None:
            out["comment"] = note.comment
        if note.inline_comment is not None:
            out["inline_comment"] = note.inline_comment
    return out


def _rewriter(call: ToolCall, names: dict[str, str]) -> Callable[[str], str] | None:
    """A function replacing engine names of renamed addresses by user names, whole identifiers only."""
    if not names:
        return None
    originals = original_names(call, sorted(names))
    mapping = {old: names[a] for a, old in originals.items() if old != names[a]}
    for address, given in names.items():
        # An address the engine has no name for reads as Ghidra's DAT_<address> in the Ghidra dialect's text
        # (native's decompiler, Ghidra): that token is this address, so the user's name replaces it.
        if address not in originals and address.startswith("0x"):
            mapping.setdefault(f"DAT_{int(address, 16):08x}", given)
    if not mapping:
        return None
    pattern = re.compile(
        r"(?<![\w$@.])(" + "|".join(re.escape(n) for n in sorted(mapping, key=len, reverse=True)) + r")(?![\w$@])"
    )

    def rename(text: str) -> str:
        return pattern.sub(lambda m: mapping[m.group(1)], text)

    return rename


def user_names(value: Any) -> list[UserName]:
    """Every user-given name a result mentions (in its provider answers, as builtins), once per address, by address."""
    found: dict[str, UserName] = {}
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if item.get("name_source") == USER and isinstance(item.get("address"), str):
                found.setdefault(
                    item["address"],
                    UserName(address=item["address"], name=item["name"], original_name=item.get("original_name")),
                )
            stack.extend(v for v in item.values() if isinstance(v, dict | list))
    return [found[a] for a in sorted(found, key=lambda a: int(a, 16) if a.startswith("0x") else -1)]


def comments_in(nb: Notebook, start: str, end: str | None) -> list[NotebookRow]:
    """Comment, inline-comment, bookmark and notes rows of the annotated addresses in [start, end)."""
    low = int(start, 16)
    high = int(end, 16) if end else low + 1
    rows = []
    kinds: tuple[NoteKind, ...] = ("comment", "inline_comment", "bookmark", "signature", "notes")
    for address, note in nb.addresses.items():
        if low <= int(address, 16) < high:
            for kind in kinds:
                value = getattr(note, kind)
                if value is not None:
                    rows.append(NotebookRow(address=address, kind=kind, text=value))
    return rows
