"""What every managed handler shares: provider identity, paging, Evidence building and input Evidence."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import Any
from typing import TypeVar

import msgspec

from rea.plugin import AnalysisProfile
from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import PageOf
from rea.plugin import ProviderIdentity
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import __version__ as rea_version
from rea.plugin import arg_bool
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import evidence as ev_mod
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import search
from rea.plugin import shown_page
from rea.plugin import typed_failures
from rea_plugins.managed import reader
from rea_plugins.managed.model import Selection

T = TypeVar("T")
S = TypeVar("S", bound=msgspec.Struct)
PROVIDER = ProviderIdentity(id="managed", name="rea managed .NET reader (dnfile, dncil)", version=rea_version)
MAX_PAGE = 10_000
STATIC = "Static reading only: no managed code was loaded or executed."


def profile() -> AnalysisProfile:
    """The readers whose versions shape every result."""
    from importlib.metadata import version

    return ev_mod.make_profile(PROVIDER, {"dnfile": version("dnfile"), "dncil": version("dncil")})


def window(args: Arguments, name: str, default: int) -> tuple[int, int]:
    """(offset, limit) of a collection (``<name>_offset``/``<name>_limit``, or ``offset``/``limit`` for the name "");
    a limit is at most MAX_PAGE whatever the caller asks."""
    prefix = f"{name}_" if name else ""
    return arg_int(args, f"{prefix}offset", 0), min(arg_int(args, f"{prefix}limit", default), MAX_PAGE)


def paged(items: Sequence[T], args: Arguments, name: str = "", default: int = 1000) -> PageOf[T]:
    """The page of ``items`` that ``args`` asks for (see ``window``)."""
    offset, limit = window(args, name, default)
    return shown_page(items[offset : offset + limit], offset=offset, limit=limit, total=len(items))


def static_evidence(
    call: ToolCall, operation: str, target: Target, normalized: msgspec.Struct, limitations: list[str] | None = None
) -> Evidence:
    """Evidence of one assembly: its subject, the reader profile, and every argument as parameters."""
    params = {k: v for k, v in sorted(call.args.items()) if k != "path"}
    result = OperationResult(normalized=msgspec.to_builtins(normalized), limitations=[STATIC, *(limitations or [])])
    return call.session.evidence(
        operation, params, result, bound=False, target=target, provider=PROVIDER, analysis_profile=profile()
    )


def guarded(handler: Callable[[ToolCall], Evidence]) -> Callable[[ToolCall], Evidence]:
    """A damaged structure met while reading is a typed error naming the metadata, never a parser's text."""
    return typed_failures(
        handler,
        lambda _call, why: reader.malformed("metadata", why),
        deep="structures nest or repeat beyond what can be read",
        broken="a structure does not decode",
    )


def load(call: ToolCall, key: str, operation: str, shape: type[S]) -> tuple[Evidence, S]:
    """The Evidence ``call.args[key]`` gives (inline or retained), checked to be ``operation``'s and decoded."""
    ev = call.session.resolve_evidence(call.args[key], key)
    if ev.operation != operation:
        raise invalid_request(
            f"{key} must be {operation} Evidence, not {ev.operation}",
            [issue(key, "invalid_value", f"expected operation {operation}", operation=ev.operation)],
        )
    try:
        return ev, msgspec.convert(ev.normalized_result, shape)
    except msgspec.ValidationError:
        raise invalid_request(
            f"{key} is not a complete {operation} result of this rea",
            [issue(key, "invalid_value", "normalized_result does not decode")],
        ) from None


def derived(
    operation: str,
    parameters: JSONObject,
    normalized: msgspec.Struct,
    inputs: list[Evidence],
    limitations: list[str],
    authority: Any = "shipped-artifact",
) -> Evidence:
    """Evidence derived from other Evidence only, linked to it; a single input's subject carries over."""
    subjects = {msgspec.json.encode(e.subject) for e in inputs}
    single = inputs[0] if len(subjects) == 1 else None
    return ev_mod.build(
        operation=operation,
        provider=PROVIDER,
        subject=single.subject if single else None,
        analysis_profile=profile(),
        parameters=parameters,
        normalized_result=msgspec.to_builtins(normalized),
        confidence="derived",
        authority=authority,
        limitations=limitations,
        evidence_links=[e.evidence_id for e in inputs],
    )


def namespace_of(type_name: str) -> str:
    """The namespace of a type as rea names it (``Demo.Lib.Box<int>`` and ``Demo.Lib.Outer/Inner``: ``Demo.Lib``)."""
    outer = type_name.split("<", 1)[0].split("/", 1)[0]
    if outer.startswith("["):  # a module's global functions: [libnative.so]::f
        return ""
    return outer.rsplit(".", 1)[0] if "." in outer else ""


def owner_of(key: str) -> str:
    """The declaring type of a member key (``Type::Member(...)``), or the name itself for a type."""
    return key.split("::", 1)[0] if "::" in key else key


def selection(args: Arguments) -> Selection | None:
    """The name filter of a listing: ``pattern`` (with ``mode``, ``case_sensitive``) and ``namespace``."""
    pattern, namespace = arg_str(args, "pattern"), arg_str(args, "namespace")
    if pattern is None and namespace is None:
        return None
    return Selection(
        pattern=pattern,
        mode="regex" if arg_str(args, "mode") == "regex" else "literal",  # the schema's two modes
        case_sensitive=arg_bool(args, "case_sensitive"),
        namespace=namespace.strip(".") if namespace is not None else None,
    )


def selector(chosen: Selection | None) -> Callable[[str], bool]:
    """A predicate on member keys and type names: the pattern matches the whole name, the namespace is a prefix
    of the declaring type's namespace (``Demo`` takes ``Demo`` and ``Demo.Lib``)."""
    if chosen is None:
        return lambda _: True
    match = (
        search.matcher({"pattern": chosen.pattern, "mode": chosen.mode, "case_sensitive": chosen.case_sensitive})
        if chosen.pattern is not None
        else None
    )
    prefix = chosen.namespace

    def keep(name: str) -> bool:
        if prefix is not None:
            ns = namespace_of(owner_of(name))
            if ns != prefix and not ns.startswith(prefix + "."):
                return False
        return match is None or match(name)

    return keep
