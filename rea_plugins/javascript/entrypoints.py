"""Entry points: package.json ``main``, Electron main, preload (webPreferences) and renderer (HTML scripts)."""

from __future__ import annotations

import html.parser
import posixpath
from collections.abc import Iterable

from rea_plugins.javascript.model import EntryPoint
from rea_plugins.javascript.model import file_node_id
from rea_plugins.javascript.patterns import PathHint
from rea_plugins.javascript.resolve import PackageJson
from rea_plugins.javascript.resolve import Resolver
from rea_plugins.javascript.resolve import resolve_hint

MAX_SCRIPTS = 256


class _Scripts(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script" and len(self.sources) < MAX_SCRIPTS:
            src = dict(attrs).get("src")
            if src:
                self.sources.append(src)


def html_scripts(data: bytes) -> list[str]:
    """``<script src>`` values of an HTML page, in document order."""
    parser = _Scripts()
    try:
        parser.feed(data.decode("utf-8", "replace"))
        parser.close()
    except (AssertionError, ValueError):  # html.parser raises these on some malformed markup
        pass
    return parser.sources


class HintSite:
    """Where a path hint was found: the declaring module and the folder its ``__dirname`` names."""

    def __init__(self, node_id: str, directory: str, hints: Iterable[PathHint], uses_electron: bool) -> None:
        self.node_id = node_id
        self.directory = directory
        self.hints = list(hints)
        self.uses_electron = uses_electron


def find(
    root_package: PackageJson | None,
    resolver: Resolver,
    sites: list[HintSite],
    html_files: dict[str, bytes],
    electron_main_modules: set[str],
) -> list[EntryPoint]:
    """Every entry point the static facts show, sorted by kind and path."""
    out: list[EntryPoint] = []

    def exists(path: str) -> bool:
        return path in resolver.modules or path in html_files

    if root_package is not None:
        declared = root_package.main or "index.js"
        main = resolver.file(declared)
        out.append(
            EntryPoint(
                kind="package-main",
                path=main or posixpath.normpath(declared),
                node_id=file_node_id(main) if main else None,
                declared_by="package.json",
                detail=f"main: {declared!r}" + ("" if root_package.main else " (default)"),
            )
        )
        deps = {**(root_package.dependencies or {}), **(root_package.devDependencies or {})}
        if main is not None and ("electron" in deps or main in electron_main_modules):
            out.append(
                EntryPoint(
                    kind="electron-main",
                    path=main,
                    node_id=file_node_id(main),
                    declared_by="package.json",
                    detail="main process script",
                )
            )
        commands = (
            root_package.bin
            if isinstance(root_package.bin, dict)
            else ({root_package.name or "": root_package.bin} if isinstance(root_package.bin, str) else {})
        )
        for command, script in sorted(commands.items()):
            if not isinstance(script, str) or not script:
                continue
            module = resolver.file(script)
            out.append(
                EntryPoint(
                    kind="package-bin",
                    path=module or posixpath.normpath(script),
                    node_id=file_node_id(module) if module else None,
                    declared_by="package.json",
                    detail=f"bin {command!r}: {script!r}",
                )
            )
    # loadFile/loadURL/preload are renderer entries only in Electron code: a library's options.loadFile is not.
    electron_app = bool(electron_main_modules) or (
        root_package is not None
        and "electron" in {**(root_package.dependencies or {}), **(root_package.devDependencies or {})}
    )
    renderer_pages: set[tuple[str, str]] = set()
    for site in sites:
        if not (site.uses_electron or electron_app):
            continue
        for hint in site.hints:
            if hint.base == "unknown":
                out.append(
                    EntryPoint(
                        kind="electron-preload" if hint.api == "preload" else "renderer-html",
                        path=hint.value,
                        node_id=None,
                        declared_by=site.node_id,
                        detail=f"{hint.api} with a dynamic expression at line {hint.line}",
                    )
                )
                continue
            if (
                hint.api == "loadURL"
                and hint.base == "app"
                and "://" in hint.value
                and not hint.value.startswith("file://")
            ):
                out.append(
                    EntryPoint(
                        kind="renderer-html",
                        path=hint.value,
                        node_id=None,
                        declared_by=site.node_id,
                        detail=f"loadURL of a remote page at line {hint.line} (not fetched)",
                    )
                )
                continue
            path = resolve_hint(site.directory, hint.base, hint.value, exists)
            if hint.api == "preload":
                module = resolver.file(path)
                out.append(
                    EntryPoint(
                        kind="electron-preload",
                        path=module or path,
                        node_id=file_node_id(module) if module else None,
                        declared_by=site.node_id,
                        detail=f"webPreferences.preload at line {hint.line}",
                    )
                )
            else:
                out.append(
                    EntryPoint(
                        kind="renderer-html",
                        path=path,
                        node_id=None,
                        declared_by=site.node_id,
                        detail=f"{hint.api} at line {hint.line}"
                        + ("" if path in html_files else " (page not in the input)"),
                    )
                )
                renderer_pages.add((path, site.node_id))
    for page, _ in sorted(renderer_pages):
        data = html_files.get(page)
        if data is None:
            continue
        for src in html_scripts(data):
            if "://" in src or src.startswith("//"):
                out.append(
                    EntryPoint(
                        kind="electron-renderer",
                        path=src,
                        node_id=None,
                        declared_by=page,
                        detail="remote script (not fetched)",
                    )
                )
                continue
            path = posixpath.normpath(posixpath.join(posixpath.dirname(page), src.split("?", 1)[0]))
            module = resolver.file(path)
            out.append(
                EntryPoint(
                    kind="electron-renderer",
                    path=module or path,
                    node_id=file_node_id(module) if module else None,
                    declared_by=page,
                    detail=f"<script src={src!r}>",
                )
            )
    unique = {(e.kind, e.path, e.declared_by, e.detail): e for e in out}
    return [unique[k] for k in sorted(unique)]
