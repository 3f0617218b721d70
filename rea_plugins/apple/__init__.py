"""The Apple plugin: Mach-O slices and load commands, code signatures, plists, keyed archives, Objective-C metadata
and bundle dylib resolution, read from the bytes on any host (LIEF, plistlib, bpylist2, signify)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import Target
    from rea.plugin import TargetView

TOOL_MODULES: tuple[str, ...] = ("rea_plugins.apple.tools",)

# The tool modules (and LIEF, bpylist2, signify through them) are imported when the tools are built or a hook runs,
# never at plugin load.

_MACHO = (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf")


# What each view of a file is, and the tools that read it (tool names only: no tool module is imported here).
_VIEWS = {
    "apple-macho": (
        "An Apple Mach-O: slices, load commands, code signature, Objective-C and Swift metadata, bundle dylibs.",
        (
            "inspect_macho",
            "list_architectures",
            "inspect_signature",
            "get_objc_classes",
            "get_objc_protocols",
            "inspect_native_dispatch_metadata",
            "analyze_swift_types",
            "trace_dylib_resolution",
            "project_apple_application_graph",
        ),
    ),
    "apple-plist": (
        "A property list (XML or binary); an NSKeyedArchiver one is an object graph.",
        ("inspect_plist", "inspect_keyed_archive"),
    ),
    "apple-ipa": (
        "An iOS application archive (.ipa): its bundles, executables, signatures and entitlements.",
        ("project_apple_application_graph",),
    ),
}


def _kind(target: Target, head: bytes) -> str | None:
    if head[:4] in _MACHO:
        # A Java class file shares 0xcafebabe, followed by its version (a universal header lists a few slices).
        return None if head[:4] == b"\xca\xfe\xba\xbe" and int.from_bytes(head[4:8], "big") > 64 else "apple-macho"
    if head.startswith(b"bplist00") or (head.lstrip().startswith(b"<?xml") and b"<plist" in head[:512]):
        return "apple-plist"
    if head.startswith(b"PK\x03\x04") and target.path.lower().endswith(".ipa"):
        return "apple-ipa"
    return None


@hookimpl
def rea_target_views(target: Target, head: bytes) -> list[TargetView] | None:
    """A Mach-O (thin or universal), a property list, or an .ipa; decided from the first bytes and the name."""
    if target.is_directory:
        return None
    kind = _kind(target, head)
    if kind is None:
        return None
    from rea.plugin import TargetView

    summary, tools = _VIEWS[kind]
    return [TargetView(kind=kind, summary=summary, tools=list(tools))]
