"""The Android plugin: APK, AAB and DEX inspection on androguard (manifest, signing, classes, methods, references)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import Target
    from rea.plugin import TargetView

TOOL_MODULES: tuple[str, ...] = ("rea_plugins.android.tools",)

# The tool modules (and androguard through them) are imported when the tools are built or a hook runs, never at
# plugin load.

_SUMMARY = {
    "android-package": "An Android package: manifest, components, signing, DEX classes and methods (decompiled), "
    "references, read statically.",
    "android-dex": "Dalvik bytecode: classes, methods (decompiled) and references, read statically.",
}


@hookimpl
def rea_target_views(target: Target, head: bytes) -> list[TargetView] | None:
    """An APK or AAB (a ZIP holding a manifest and classes.dex) or a bare DEX; decided from the file's names only."""
    kind = None
    if head.startswith(b"dex\n"):
        kind = "android-dex"
    elif head.startswith(b"PK\x03\x04") and not target.is_directory:
        import zipfile

        try:
            with zipfile.ZipFile(target.resolved_path) as archive:
                names = set(archive.namelist())
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, zipfile.LargeZipFile):
            return None
        dex = any(n.startswith(("classes", "base/dex/classes")) and n.endswith(".dex") for n in names)
        manifest = "AndroidManifest.xml" in names or "base/manifest/AndroidManifest.xml" in names
        kind = "android-package" if dex and manifest else None
    if kind is None:
        return None
    from rea.plugin import TargetView
    from rea_plugins.android.tools import TOOLS

    return [TargetView(kind=kind, summary=_SUMMARY[kind], tools=[t.name for t in TOOLS])]
