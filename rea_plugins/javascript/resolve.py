"""Specifier resolution the way Node and bundlers look files up, restricted to the analysed input."""

from __future__ import annotations

import posixpath
from collections.abc import Callable

import msgspec

NODE_BUILTINS = frozenset(
    {
        "assert",
        "async_hooks",
        "buffer",
        "child_process",
        "cluster",
        "console",
        "constants",
        "crypto",
        "dgram",
        "diagnostics_channel",
        "dns",
        "domain",
        "events",
        "fs",
        "http",
        "http2",
        "https",
        "inspector",
        "module",
        "net",
        "os",
        "path",
        "perf_hooks",
        "process",
        "punycode",
        "querystring",
        "readline",
        "repl",
        "stream",
        "string_decoder",
        "sys",
        "timers",
        "tls",
        "trace_events",
        "tty",
        "url",
        "util",
        "v8",
        "vm",
        "wasi",
        "worker_threads",
        "zlib",
    }
)
ELECTRON = "electron"
_EXTENSIONS = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts")


class PackageJson(msgspec.Struct, kw_only=True):
    name: str | None = None
    main: str | None = None
    module: str | None = None
    # A command name -> script map, or one script named after the package.
    bin: str | dict[str, str] | None = None
    dependencies: dict[str, str] | None = None
    devDependencies: dict[str, str] | None = None


def read_package_json(data: bytes) -> PackageJson | None:
    try:
        value = msgspec.json.decode(data, type=PackageJson)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return value


def is_builtin(specifier: str) -> bool:
    if specifier.startswith("node:"):
        return True
    head = specifier.split("/", 1)[0]
    return head in NODE_BUILTINS or head == ELECTRON


def package_name(specifier: str) -> str:
    parts = specifier.split("/")
    return "/".join(parts[:2]) if specifier.startswith("@") and len(parts) > 1 else parts[0]


class Resolver:
    """Resolves against the set of module paths present in the input."""

    def __init__(self, modules: set[str], packages: dict[str, PackageJson]) -> None:
        self.modules = modules
        self.packages = packages

    def file(self, candidate: str) -> str | None:
        """A module path for ``candidate`` as Node would try it: exact, with extensions, or as a folder."""
        candidate = posixpath.normpath(candidate)
        if candidate.startswith("../") or candidate == "..":
            return None
        candidate = "" if candidate == "." else candidate
        if candidate in self.modules:
            return candidate
        for ext in _EXTENSIONS:
            if candidate + ext in self.modules:
                return candidate + ext
        # TypeScript sources import their compiled names: "./x.js" means "./x.ts".
        stem, ext = posixpath.splitext(candidate)
        if ext in (".js", ".mjs", ".cjs", ".jsx"):
            for alt in (".ts", ".tsx", ".mts", ".cts"):
                if stem + alt in self.modules:
                    return stem + alt
        return self.folder(candidate)

    def folder(self, directory: str) -> str | None:
        pkg = self.packages.get(posixpath.join(directory, "package.json") if directory else "package.json")
        if pkg is not None:
            for field in (pkg.main, pkg.module):
                if field:
                    target = posixpath.normpath(posixpath.join(directory, field))
                    if target != directory:
                        found = self.file(target)
                        if found is not None:
                            return found
        for ext in _EXTENSIONS:
            index = posixpath.join(directory, "index" + ext) if directory else "index" + ext
            if index in self.modules:
                return index
        return None

    def specifier(self, importer_dir: str, specifier: str) -> tuple[str, str | None]:
        """(target kind, resolved module path) for one import specifier."""
        if specifier.startswith(("./", "../")) or specifier in (".", ".."):
            found = self.file(posixpath.join(importer_dir, specifier))
            return ("module", found) if found is not None else ("unresolved", None)
        if specifier.startswith("/"):
            return "unresolved", None
        if is_builtin(specifier):
            return "builtin", None
        found = self._node_modules(importer_dir, specifier)
        return ("module", found) if found is not None else ("package", None)

    def _node_modules(self, importer_dir: str, specifier: str) -> str | None:
        directory = importer_dir
        while True:
            base = (
                posixpath.join(directory, "node_modules", specifier)
                if directory
                else posixpath.join("node_modules", specifier)
            )
            found = self.file(base)
            if found is not None:
                return found
            if not directory:
                return None
            directory = posixpath.dirname(directory)


def resolve_hint(container_dir: str, base: str, value: str, exists: Callable[[str], bool]) -> str:
    """The logical path an Electron path hint names (``dirname``: next to the file; ``app``: app root)."""
    value = value.removeprefix("file://")
    joined = posixpath.normpath(posixpath.join(container_dir, value) if base == "dirname" else value.lstrip("/"))
    if base == "app" and not exists(joined) and container_dir:
        # Relative paths resolve against the working directory, usually the app root; try the file's folder too.
        alt = posixpath.normpath(posixpath.join(container_dir, value))
        if exists(alt):
            return alt
    return joined
