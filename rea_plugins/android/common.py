"""Provider identity, Evidence building and the name forms the Android tools share."""

from __future__ import annotations

import functools
from importlib import metadata
from typing import Any

import msgspec

from rea.plugin import AnalysisProfile
from rea.plugin import Evidence
from rea.plugin import OperationResult
from rea.plugin import ProviderIdentity
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import __version__ as rea_version
from rea.plugin import arg_str
from rea.plugin import evidence as ev_mod
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.android import loader

STATIC = "Static analysis only: no application code was executed."


@functools.cache
def androguard_version() -> str:
    try:
        return metadata.version("androguard")
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def provider() -> ProviderIdentity:
    return ProviderIdentity(
        id="android",
        name="rea Android analyzer (androguard)",
        version=f"{rea_version}+androguard-{androguard_version()}",
    )


def profile() -> AnalysisProfile:
    """The settings that shape results: the androguard version and the loader's bounds."""
    return ev_mod.make_profile(
        provider(),
        {
            "androguard": androguard_version(),
            "bounds": {
                "file": loader.MAX_FILE_BYTES,
                "entry": loader.MAX_ENTRY_BYTES,
                "entries": loader.MAX_ENTRIES,
                "dex_files": loader.MAX_DEX_FILES,
            },
        },
    )


def evidence(call: ToolCall, loaded: loader.Loaded, result: msgspec.Struct, limitations: list[str]) -> Evidence:
    """Evidence of ``result`` about the loaded application; parameters are the call's arguments but the path."""
    parameters = {k: v for k, v in call.args.items() if k != "path"}
    return call.session.evidence(
        call.tool.name,
        parameters,
        OperationResult(normalized=msgspec.to_builtins(result), limitations=[STATIC, *limitations]),
        bound=False,
        target=loaded.target,
        provider=provider(),
        analysis_profile=profile(),
    )


def load(call: ToolCall) -> loader.Loaded:
    return loader.load(arg_str(call.args, "path", ""), call.ctx)  # required by the schema


# -- names -----------------------------------------------------------------------------------------


def descriptor_of(name: str) -> str:
    """A class as a type descriptor: ``com.a.B``, ``com/a/B`` and ``Lcom/a/B;`` all give ``Lcom/a/B;``."""
    text = name.strip()
    if text.startswith("L") and text.endswith(";"):
        return text
    return "L" + text.replace(".", "/") + ";"


def java_name(descriptor: str) -> str:
    """``Lcom/a/B;`` as ``com.a.B``; arrays and primitives stay as they are."""
    if descriptor.startswith("L") and descriptor.endswith(";"):
        return descriptor[1:-1].replace("/", ".")
    return descriptor


def method_id(class_descriptor: str, name: str, descriptor: str) -> str:
    """The smali form ``Lpkg/C;->name(args)ret``; androguard spaces parameters apart, the form does not."""
    return f"{class_descriptor}->{name}{descriptor.replace(' ', '')}"


def field_id(class_descriptor: str, name: str, type_: str) -> str:
    return f"{class_descriptor}->{name}:{type_}"


def access(flags: str) -> list[str]:
    return [f for f in flags.split() if f]


def find_class(loaded: loader.Loaded, name: str, arg: str = "class_name") -> tuple[str, Any]:
    """(DEX name, ClassDefItem) of a class defined in the application; typed error with candidates otherwise."""
    classes = loaded.classes()
    wanted = descriptor_of(name)
    if wanted in classes:
        return classes[wanted]
    simple = wanted[1:-1].rsplit("/", 1)[-1].lower()
    near = sorted(java_name(d) for d in classes if simple and simple in d.lower())[:20]
    dx = loaded.analysis
    if dx is not None and len(near) < 20:
        # Framework classes the application references, e.g. LocationManager for android.location.LocationManager.
        near += sorted(
            java_name(ca.name) for ca in dx.get_external_classes() if simple and ca.name.lower().endswith(f"/{simple};")
        )[: 20 - len(near)]
    external = dx.get_class_analysis(wanted) if dx is not None else None
    where = (
        " (it is referenced but defined outside the application, e.g. by the Android framework)"
        if external is not None and external.is_external()
        else ""
    )
    raise invalid_request(
        f"class {java_name(wanted)} is not defined in this application{where}",
        [issue(arg, "invalid_value", "no such class", candidates=near)],
    )


def find_methods(cls: Any, name: str, descriptor: str | None) -> list[Any]:
    methods = [m for m in cls.get_methods() if m.get_name() == name]
    if descriptor:
        wanted = descriptor.replace(" ", "")
        methods = [m for m in methods if m.get_descriptor().replace(" ", "") == wanted]
    return methods


def one_method(cls: Any, name: str, descriptor: str | None) -> Any:
    """The one method ``name`` (of ``descriptor``) of ``cls``; an overloaded name without one is ambiguous."""
    found = find_methods(cls, name, descriptor)
    cname = cls.get_name()
    if len(found) == 1:
        return found[0]
    candidates = (
        sorted(method_id(cname, m.get_name(), m.get_descriptor()) for m in cls.get_methods() if m.get_name() == name)
        or sorted({m.get_name() for m in cls.get_methods()})[:50]
    )
    if not found:
        what = f"{name}{descriptor or ''}"
        raise invalid_request(
            f"{java_name(cname)} defines no method {what}",
            [
                issue(
                    "descriptor" if descriptor and candidates else "method",
                    "invalid_value",
                    "no such method",
                    candidates=candidates[:50],
                )
            ],
        )
    raise invalid_request(
        f"{java_name(cname)} defines {len(found)} methods named {name}; pass descriptor",
        [issue("descriptor", "missing_argument", "the method name is overloaded", candidates=candidates[:50])],
    )


def check_offset(offset: int, total: int, arg: str = "offset") -> None:
    if offset > total:
        raise invalid_request(
            f"{arg} {offset} is past the end ({total})", [issue(arg, "out_of_range", f"at most {total}", total=total)]
        )


def no_code(what: str) -> ReaError:
    return ReaError("unsupported_target", what, remediation="Pick a method with a body (not abstract or native).")
