"""managed_references_to: which methods call, construct, read, write or otherwise name a member or a type.

Read from the IL: every instruction whose operand token names the member (a MethodDef, a MemberRef, a generic
instance's MethodSpec) or, for a type, any member of the type or the type itself (``box``, ``castclass``,
``newarr``, ``ldtoken``...). Names compare as rea writes them, with generic arguments and arity dropped from the
declaring type (``Demo.Lib.Box<int>::With(!0)`` is a reference to ``Demo.Lib.Box`1::With(T)``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import ToolCall
from rea.plugin import arg_bool
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea.plugin import search
from rea.plugin import shown_page
from rea_plugins.managed import common
from rea_plugins.managed import sites
from rea_plugins.managed.model import REFERENCES_OPERATION
from rea_plugins.managed.model import SCHEMA_VERSION
from rea_plugins.managed.model import ReferenceKind
from rea_plugins.managed.model import ReferenceMode
from rea_plugins.managed.model import ReferenceSite
from rea_plugins.managed.model import ReferencesResult
from rea_plugins.managed.model import Selection
from rea_plugins.managed.reader import Image

DEFAULT_LIMIT = 50
MATCHED_LISTED = 20
_ARITY = re.compile(r"`\d+")
_SUFFIX = re.compile(r"(\[[,]*\]|\*|&)+$")


def normal_type(name: str) -> str:
    """A type name without generic arguments, arity, array or pointer marks: what a reference to it is by (a
    nested type written the reflection way, ``Outer+Inner``, reads as rea writes it, ``Outer/Inner``)."""
    name = name.removeprefix("ref ").strip().replace("+", "/")
    out, depth = [], 0
    for c in name:
        if c == "<":
            depth += 1
        elif c == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(c)
    return _SUFFIX.sub("", _ARITY.sub("", "".join(out)))


def _split(name: str) -> tuple[str, str | None, list[str] | None]:
    """(declaring type, member name or None for a type, parameter types or None when not given)."""
    if "::" not in name:
        return normal_type(name), None, None
    owner, rest = name.split("::", 1)
    params = None
    if rest.endswith(")") and "(" in rest:
        head, inner = rest.split("(", 1)
        inner = inner[:-1].strip()
        params = [p.strip() for p in _top_level(inner)] if inner else []
        rest = head
    return normal_type(owner), rest.split("<", 1)[0], params


def _top_level(text: str) -> list[str]:
    """Comma-separated parts outside angle brackets (``System.Func<T, U>, T`` is two)."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for c in text:
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return parts


def _same_type(site: str, query: str) -> bool:
    """``query`` names ``site``'s type in full, or its trailing part (``Calculator``, ``Lib.Calculator``)."""
    return site == query or site.endswith("." + query) or site.endswith("/" + query)


def _params_match(site: list[str] | None, query: list[str] | None) -> bool:
    if query is None:
        return True
    if site is None or len(site) != len(query):
        return False
    # A generic instance's member reference names its parameters by position (!0, !!0): any type fits there.
    return all(s == q or s.startswith("!") for s, q in zip(site, query, strict=True))


def name_matcher(query: str) -> Callable[[str], bool]:
    """Whether a site's target names the member or type ``query`` names (see the module's doc)."""
    q_owner, q_member, q_params = _split(query.strip())

    def match(target: str) -> bool:
        if target.startswith('"'):
            return False
        owner, member, params = _split(target)
        if q_member is None:
            return _same_type(owner, q_owner)
        return member == q_member and _same_type(owner, q_owner) and _params_match(params, q_params)

    return match


@common.guarded
def handle(call: ToolCall) -> Evidence:
    args = call.args
    query = arg_str(args, "name", "")  # required by the schema
    asked = arg_str(args, "mode")
    # The schema's three modes (name by default).
    mode: ReferenceMode = "literal" if asked == "literal" else "regex" if asked == "regex" else "name"
    if mode == "name":
        match = name_matcher(query)
    else:
        text_match = search.matcher(
            {"pattern": query, "mode": mode, "case_sensitive": arg_bool(args, "case_sensitive")}
        )

        def match(target: str) -> bool:
            return not target.startswith('"') and text_match(target)

    kinds = set(arg_strs(args, "kinds") or [])
    namespace = arg_str(args, "namespace")
    from_namespace = common.selector(Selection(namespace=namespace.strip(".")) if namespace else None)
    with sites.opened(call) as (target, image, entry):
        found = sites.sites(entry, call.ctx)
        result = _collect(image, found, query, mode, match, kinds, from_namespace, args)
    limitations = []
    if found.undecoded:
        limitations.append(f"{found.undecoded} method bodies did not decode: references from them are not listed.")
    if not result.matched.total:
        limitations.append(
            "Nothing in the IL names it: check the name with inspect_managed_members (pattern), "
            "or search with mode literal."
        )
    call.ctx.finish(f"{result.references.total} references from {result.methods} methods")
    return common.static_evidence(call, REFERENCES_OPERATION, target, result, limitations)


def _collect(
    image: Image,
    found: sites.Sites,
    query: str,
    mode: ReferenceMode,
    match: Callable[[str], bool],
    kinds: set[str],
    from_namespace: Callable[[str], bool],
    args: Arguments,
) -> ReferencesResult:
    wanted: dict[int, str] = {}
    verdict: dict[int, bool] = {}
    rows: list[tuple[str, int, str, ReferenceKind, str]] = []
    for i in range(len(found)):
        token = found.token[i]
        known = verdict.get(token)
        if known is None:
            table = token >> 24
            name = found.name(image, token) if table != 0x70 else ""
            known = verdict[token] = bool(name) and match(name)
            if known:
                wanted[token] = name
        if not known:
            continue
        kind = sites.kind_of(found.opcodes[found.opcode[i]])
        if kinds and kind not in kinds:
            continue
        caller = image.method_key(found.method[i])
        if not from_namespace(caller):
            continue
        rows.append((caller, found.offset[i], found.opcodes[found.opcode[i]], kind, wanted[token]))
    counts: dict[str, int] = {}
    for row in rows:
        counts[row[3]] = counts.get(row[3], 0) + 1
    offset, limit = common.window(args, "", DEFAULT_LIMIT)
    matched = sorted(set(wanted.values()))
    return ReferencesResult(
        schema_version=SCHEMA_VERSION,
        assembly=image.assembly_name(),
        query=query,
        mode=mode,
        matched=shown_page(matched[:MATCHED_LISTED], offset=0, limit=MATCHED_LISTED, total=len(matched)),
        counts=dict(sorted(counts.items())),
        methods=len({row[0] for row in rows}),
        scanned_methods=found.scanned,
        undecoded_methods=found.undecoded,
        references=shown_page(
            [
                ReferenceSite(method=m, offset=at, opcode=op, kind=k, target=t)
                for m, at, op, k, t in rows[offset : offset + limit]
            ],
            offset=offset,
            limit=limit,
            total=len(rows),
        ),
    )
