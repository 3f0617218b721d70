"""trace_android_references: static references to an application or framework member, or to matching strings.

A framework API (``android.*``, ``java.*``, ``androidx.*`` when not packaged) is an external class to androguard:
its methods have no code but their callers are cross-referenced, so "who calls
``LocationManager.requestLocationUpdates``" is answered from the same xrefs as an application method.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import Literal

from rea.plugin import Arguments
from rea.plugin import CallContext
from rea.plugin import arg_bool
from rea.plugin import arg_choice
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import search as rea_search
from rea_plugins.android import loader
from rea_plugins.android.code import FIELD_OPS
from rea_plugins.android.code import scan
from rea_plugins.android.common import check_offset
from rea_plugins.android.common import descriptor_of
from rea_plugins.android.common import field_id
from rea_plugins.android.common import find_class
from rea_plugins.android.common import java_name
from rea_plugins.android.common import method_id
from rea_plugins.android.model import SCHEMA_VERSION
from rea_plugins.android.model import Reference
from rea_plugins.android.model import ReferenceTrace
from rea_plugins.android.model import page

DIRECTIONS: tuple[Literal["incoming", "outgoing", "both"], ...] = ("incoming", "outgoing", "both")
# References collected before paging; a trace that reaches more is marked truncated.
MAX_REFERENCES = 20_000


def _mx_id(mx: Any) -> str:
    return method_id(mx.class_name, mx.name, mx.descriptor)


class _Trace:
    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.refs: list[Reference] = []
        self.seen: set[tuple[str, str, str, int | None]] = set()
        self.truncated = False

    def add(
        self, kind: str, source: str, target: str, depth: int, offset: int | None = None, external: bool = False
    ) -> bool:
        key = (kind, source, target, offset)
        if key in self.seen:
            return False
        if len(self.refs) >= MAX_REFERENCES:
            self.truncated = True
            return False
        self.seen.add(key)
        self.refs.append(
            Reference(
                kind=kind,  # type: ignore[arg-type]
                source=source,
                target=target,
                depth=depth,
                offset=offset,
                external=external,
            )
        )
        return True

    def callers(self, mx: Any, depth: int) -> None:
        """Incoming calls of ``mx`` from ``depth`` up to max_depth, breadth first."""
        self._calls(mx, depth, outgoing=False)

    def callees(self, mx: Any, depth: int) -> None:
        """Outgoing calls of ``mx`` likewise; an external callee (no code here) is not walked into."""
        self._calls(mx, depth, outgoing=True)

    def _calls(self, mx: Any, depth: int, outgoing: bool) -> None:
        frontier = [mx]
        while frontier and depth <= self.max_depth:
            nxt = []
            for cur in frontier:
                xrefs = cur.get_xref_to() if outgoing else cur.get_xref_from()
                for _ca, other, off in sorted(xrefs, key=lambda x: (_mx_id(x[1]), x[2])):
                    external = outgoing and bool(other.is_external())
                    source, target = (cur, other) if outgoing else (other, cur)
                    if self.add("call", _mx_id(source), _mx_id(target), depth, off, external) and not external:
                        nxt.append(other)
            frontier, depth = nxt, depth + 1


def _string_matcher(args: Arguments) -> Callable[[str], bool]:
    """exact (the default), substring or RE2 regex; case folding for the last two unless case_sensitive."""
    wanted = arg_str(args, "string", "")
    how = arg_str(args, "string_match", "exact")
    sensitive = arg_bool(args, "case_sensitive")
    if how == "exact":
        return lambda s: s == wanted
    if not wanted:
        raise invalid_request(
            "string must not be empty for a substring or regex match",
            [issue("string", "invalid_value", "an empty pattern matches every string")],
        )
    if how == "regex":
        return rea_search.compile_regex(wanted, sensitive, path="string")
    if sensitive:
        return lambda s: wanted in s
    folded = wanted.casefold()
    return lambda s: folded in s.casefold()


def _strings(loaded: loader.Loaded, t: _Trace, args: Arguments, direction: str) -> tuple[str, int]:
    match = _string_matcher(args)
    matched = 0
    with loader.guarded("the DEX code"):
        hits = []
        for value, sa in loaded.analysis.get_strings_analysis().items():
            text = value if isinstance(value, str) else str(value)
            if match(text):
                hits.append((text, sa))
        for text, sa in sorted(hits, key=lambda h: h[0]):
            users = sorted(sa.get_xref_from(), key=lambda x: _mx_id(x[1]))
            if not users:
                continue  # a string in the pool that no method loads (a name, a descriptor)
            matched += 1
            if direction not in ("incoming", "both"):
                continue
            for _ca, mx in users:
                if t.add("load-string", _mx_id(mx), text, 1):
                    t.callers(mx, 2)
    return arg_str(args, "string", ""), matched


def _resolve(loaded: loader.Loaded, name: str) -> tuple[str, Any, bool]:
    """(descriptor, class analysis or None, external) of ``name``: a class of the application or one it references.

    androguard gives a framework class an analysis when the application calls its methods; a class the application
    only reads fields of (android.os.Build$VERSION) has none, but its descriptor is in a DEX's string pool.
    """
    wanted = descriptor_of(name)
    if "." not in name and "/" not in name:
        # A simple name (LocationManager) that names one class, the application's or the framework's, is that class.
        tail = f"/{name.strip()};"
        named = [d for d in loaded.analysis.classes if d.endswith(tail) or d == wanted]
        if len(named) == 1:
            wanted = named[0]
    ca = loaded.analysis.get_class_analysis(wanted)
    if wanted not in loaded.classes():
        if ca is not None and ca.is_external():
            return wanted, ca, True
        if ca is None and any(wanted in dex.get_strings() for _n, dex in loaded.dexes):
            return wanted, None, True
    find_class(loaded, java_name(wanted))  # defined in the application, or the typed error with candidates
    return wanted, loaded.analysis.get_class_analysis(wanted), False


def _field_refs(loaded: loader.Loaded, t: _Trace, cls_desc: str, member: str) -> str | None:
    """Reads and writes of a framework field, found by scanning the application's field instructions."""
    subject = None
    for desc, (_dex, cls) in loaded.classes().items():
        for method in cls.get_methods():
            if method.get_code() is None:
                continue
            for off, ins in method.get_instructions_idx():
                op = ins.get_name()
                if not op.startswith(FIELD_OPS):
                    continue
                fcls, ftype, fname = ins.cm.get_field(ins.get_ref_kind())
                if fcls == cls_desc and fname == member:
                    subject = field_id(fcls, fname, ftype)
                    source = method_id(desc, method.get_name(), method.get_descriptor())
                    t.add("read" if op[1:4] == "get" else "write", source, subject, 1, off)
    return subject


def _member(loaded: loader.Loaded, t: _Trace, args: Arguments, direction: str) -> tuple[str, str, list[str], bool]:
    """(subject, subject kind, the overloads traced, whether the class is external) of class_name.member."""
    class_name, member = arg_str(args, "class_name"), arg_str(args, "member")
    if not class_name or not member:
        raise invalid_request(
            "give class_name and member (a method or field name), or string",
            [
                issue(
                    "class_name" if not class_name else "member",
                    "missing_argument",
                    "required unless string is given",
                )
            ],
        )
    cls_desc, ca, external = _resolve(loaded, class_name)
    descriptor = (arg_str(args, "descriptor") or "").replace(" ", "")
    if not external:
        fields = [
            fa
            for fa in ca.get_fields()
            if fa.name == member and (not descriptor or fa.get_field().get_descriptor() == descriptor)
        ]
        if fields and not descriptor.startswith("("):
            fa = fields[0]
            subject = field_id(cls_desc, member, fa.get_field().get_descriptor())
            if direction in ("incoming", "both"):
                for what, pairs in (("read", fa.get_xref_read()), ("write", fa.get_xref_write())):
                    for _ca, mx in sorted(pairs, key=lambda x: _mx_id(x[1])):
                        if t.add(what, _mx_id(mx), subject, 1):
                            t.callers(mx, 2)
            return subject, "field", [], False
    methods = sorted(
        (
            mx
            for mx in (ca.get_methods() if ca is not None else [])
            if mx.name == member and (not descriptor or mx.descriptor.replace(" ", "") == descriptor)
        ),
        key=_mx_id,
    )
    if not methods:
        if external and not descriptor.startswith("("):
            found = _field_refs(loaded, t, cls_desc, member)
            if found is not None:
                return found, "field", [], True
        names = sorted({mx.name for mx in ca.get_methods()}) if ca is not None else []
        where = "has no member the application references named" if external else "defines no method or field"
        raise invalid_request(
            f"{java_name(cls_desc)} {where} {member}{descriptor}",
            [
                issue(
                    "member",
                    "invalid_value",
                    "no such member" + (" referenced by the application" if external else ""),
                    candidates=names[:50],
                )
            ],
        )
    ids = [_mx_id(mx) for mx in methods]
    for mx in methods:
        if direction in ("incoming", "both"):
            t.callers(mx, 1)
        if direction in ("outgoing", "both") and not mx.is_external():
            t.callees(mx, 1)
            _, refs = scan(mx.get_method())
            subject = _mx_id(mx)
            for value in refs.strings:
                t.add("load-string", subject, value, 1)
            for fid in refs.reads:
                t.add("read", subject, fid, 1)
            for fid in refs.writes:
                t.add("write", subject, fid, 1)
    subject = ids[0] if len(ids) == 1 else f"{cls_desc}->{member}"
    return subject, "method", ids if len(ids) > 1 else [], external


def trace(loaded: loader.Loaded, args: Arguments, ctx: CallContext) -> ReferenceTrace:
    direction = arg_choice(args, "direction", DIRECTIONS, "incoming")
    max_depth = arg_int(args, "max_depth", 1)
    offset, limit = arg_int(args, "offset", 0), arg_int(args, "limit", 100)
    t = _Trace(max_depth)
    overloads: list[str] = []
    matched: int | None = None
    external = False
    if arg_str(args, "string") is not None:
        if arg_str(args, "class_name") or arg_str(args, "member"):
            raise invalid_request(
                "give either string or class_name with member, not both",
                [issue("string", "invalid_value", "string excludes class_name and member")],
            )
        subject, matched = _strings(loaded, t, args, direction)
        kind = "string"
    else:
        with loader.guarded("the DEX code"):
            subject, kind, overloads, external = _member(loaded, t, args, direction)
    ctx.check("tracing references")
    check_offset(offset, len(t.refs))
    return ReferenceTrace(
        schema_version=SCHEMA_VERSION,
        subject=subject,
        subject_kind=kind,  # type: ignore[arg-type]
        subject_external=external,
        overloads=overloads,
        strings_matched=matched,
        direction=direction,
        max_depth=max_depth,
        references=t.refs[offset : offset + limit],
        page=page(len(t.refs), offset, limit),
        truncated=t.truncated,
    )
