"""get_objc_classes, get_objc_protocols, inspect_native_dispatch_metadata: the kernel's ObjC reader, per slice."""

from __future__ import annotations

from collections.abc import Callable

from rea.plugin import Evidence
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import arg_str
from rea.plugin import objc
from rea_plugins.apple import common
from rea_plugins.apple.model import ClassList
from rea_plugins.apple.model import ClassSummary
from rea_plugins.apple.model import DispatchMetadata
from rea_plugins.apple.model import ProtocolList


def _slice(call: ToolCall) -> tuple[Target, common.MachOFile, int]:
    """The slice the call names (``architecture``), else the first one: the metadata is read per slice."""
    target, f = common.load_macho(call)
    return target, f, f.pick(arg_str(call.args, "architecture"))[0]


def _metadata(call: ToolCall, f: common.MachOFile, index: int) -> objc.Metadata:
    call.ctx.progress("reading Objective-C metadata", done=0, total=1)
    meta = objc.read(f.binaries[index], check=call.ctx.check)
    call.ctx.progress("reading Objective-C metadata", done=1, total=1)
    return meta


def _limitations(f: common.MachOFile, index: int, meta: objc.Metadata) -> list[str]:
    out = []
    if len(f.binaries) > 1:
        out.append(f"universal binary: read slice {index} ({f.cpu(index)}); pass architecture for another")
    if meta.problems:
        out.append(f"{len(meta.problems)} structures did not decode and were skipped: {meta.problems[0]}")
    return out


def _read(call: ToolCall) -> tuple[Target, common.MachOFile, int, objc.Metadata, Callable[[str], bool]]:
    """The slice a call names, its Objective-C metadata, and the call's name filter."""
    target, f, index = _slice(call)
    return target, f, index, _metadata(call, f, index), common.name_filter(call.args)


@common.guarded
def get_objc_classes(call: ToolCall) -> Evidence:
    target, f, index, meta, keep = _read(call)
    rows = [
        ClassSummary(
            name=c.name,
            superclass=c.superclass,
            methods=len(c.methods),
            ivars=len(c.ivars),
            properties=len(c.properties),
            protocols=c.protocols,
        )
        for c in sorted(meta.classes, key=lambda c: c.name)
        if keep(c.name)
    ]
    chosen, info = common.page(rows, call.args, "", 100)
    return common.evidence(
        call, target, ClassList(cpu_type=f.cpu(index), classes=chosen, page=info), _limitations(f, index, meta)
    )


@common.guarded
def get_objc_protocols(call: ToolCall) -> Evidence:
    target, f, index, meta, keep = _read(call)
    rows = sorted((p for p in meta.protocols if keep(p.name)), key=lambda p: p.name)
    chosen, info = common.page(rows, call.args, "", 100)
    return common.evidence(
        call, target, ProtocolList(cpu_type=f.cpu(index), protocols=chosen, page=info), _limitations(f, index, meta)
    )


@common.guarded
def inspect_native_dispatch_metadata(call: ToolCall) -> Evidence:
    target, f, index, meta, keep = _read(call)
    classes = sorted((c for c in meta.classes if keep(c.name)), key=lambda c: c.name)
    chosen, info = common.page(classes, call.args, "", 10)
    selrefs, sel_info = common.page(sorted(set(meta.selector_references)), call.args, "selectors", 200)
    # Categories and protocols of the classes on this page (the whole image's counts stand beside them).
    names = {c.name for c in chosen}
    adopted = {p for c in chosen for p in c.protocols}
    report = DispatchMetadata(
        cpu_type=f.cpu(index),
        classes=chosen,
        classes_page=info,
        categories=[c for c in meta.categories if c.class_name in names][:100],
        protocols=[p for p in meta.protocols if p.name in adopted][:100],
        selector_references=selrefs,
        selector_references_page=sel_info,
        counts={
            "classes": len(meta.classes),
            "categories": len(meta.categories),
            "protocols": len(meta.protocols),
            "methods": sum(len(c.methods) for c in meta.classes) + sum(len(c.methods) for c in meta.categories),
        },
        problems=meta.problems[:20],
    )
    return common.evidence(call, target, report, _limitations(f, index, meta))
