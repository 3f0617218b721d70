"""project_apple_application_graph: an .app, .framework or .ipa as an application graph: its bundles (the app,
frameworks, extensions, watch apps, XPC services), each executable's slices, signature and entitlements, the dylibs
each loads (to a bundle inside or the system), and its resources by kind.

A folder is read in place; an .ipa (a ZIP) through the kernel's unpacker (``rea.unpackers``), its entries streamed
with the unpacker's bounds: nothing is written to disk.
"""

from __future__ import annotations

import os
import plistlib
from collections.abc import Iterator

from rea.plugin import Evidence
from rea.plugin import ReaError
from rea.plugin import Record
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import identify
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import open_regular
from rea_plugins.apple import common
from rea_plugins.apple.macho import loaded_libraries
from rea_plugins.apple.macho import platform_of
from rea_plugins.apple.model import AppEdge
from rea_plugins.apple.model import AppGraph
from rea_plugins.apple.model import AppNode
from rea_plugins.apple.signature import slice_signature

MAX_FILES = 200_000
MAX_EXECUTABLE = 256 << 20
BUNDLE_KINDS = {
    ".app": "application",
    ".framework": "framework",
    ".appex": "extension",
    ".xpc": "xpc-service",
    ".bundle": "bundle",
}


class Source:
    """The files of an application, relative to its root bundle, and their bytes (bounded)."""

    def files(self) -> list[tuple[str, int]]:
        raise NotImplementedError

    def read(self, rel: str, limit: int) -> bytes | None:
        raise NotImplementedError

    def close(self) -> None:
        return None


class FolderSource(Source):
    def __init__(self, root: str) -> None:
        self.root = root

    def files(self) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for here, dirs, names in os.walk(self.root):
            dirs.sort()
            for name in sorted(names):
                path = os.path.join(here, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                out.append((os.path.relpath(path, self.root), os.path.getsize(path)))
                if len(out) > MAX_FILES:
                    raise ReaError(
                        "resource_constraint",
                        f"the bundle holds more than {MAX_FILES} files",
                        details={"resource": "files", "reported_limits": {"max_files": MAX_FILES}},
                    )
        return out

    def read(self, rel: str, limit: int) -> bytes | None:
        try:
            with os.fdopen(open_regular(os.path.join(self.root, rel)), "rb") as fh:
                data = fh.read(limit + 1)
        except (OSError, ReaError):
            return None
        return data if len(data) <= limit else None


class ArchiveSource(Source):
    """An .ipa: the entries under ``Payload/<name>.app/`` through the kernel's ZIP unpacker."""

    def __init__(self, call: ToolCall, target: Target) -> None:
        from rea.plugin import Limits
        from rea.plugin import select_unpacker

        unpacker = select_unpacker(call.session.registry, target)
        self.reader = unpacker.open(target, Limits(), call.ctx)
        self.call = call
        entries = [e for e in self.reader.entries() if e.kind == "file" and not e.problem]
        apps = sorted(
            {
                e.path.split("/")[1]
                for e in entries
                if e.path.startswith("Payload/") and e.path.count("/") >= 2 and e.path.split("/")[1].endswith(".app")
            }
        )
        if not apps:
            self.reader.close()
            raise invalid_request(
                f"{target.path} holds no Payload/<name>.app",
                [issue("path", "invalid_value", "not an .ipa: no Payload/*.app folder")],
            )
        self.prefix = f"Payload/{apps[0]}/"
        self.name = apps[0]
        self.entries = {
            e.path[len(self.prefix) :]: e for e in entries if e.path.startswith(self.prefix) and e.ordinal == 0
        }

    def files(self) -> list[tuple[str, int]]:
        return sorted((rel, e.size) for rel, e in self.entries.items())

    def read(self, rel: str, limit: int) -> bytes | None:
        entry = self.entries.get(rel)
        if entry is None or entry.size > limit:
            return None
        chunks: list[bytes] = []
        self.reader.stream(entry, chunks.append, policy="record-and-continue", ctx=self.call.ctx)
        data = b"".join(chunks)
        return data if len(data) <= limit else None

    def close(self) -> None:
        self.reader.close()


def _bundles(files: list[tuple[str, int]]) -> dict[str, str]:
    """Every bundle folder (relative; "" is the root) and its kind."""
    out = {"": "root"}
    for rel, _ in files:
        parts = rel.split("/")[:-1]
        for i in range(len(parts)):
            ext = os.path.splitext(parts[i])[1]
            if ext in BUNDLE_KINDS:
                out.setdefault("/".join(parts[: i + 1]), BUNDLE_KINDS[ext])
    return out


def _owner(rel: str, bundles: dict[str, str]) -> str:
    """The innermost bundle holding ``rel``."""
    parts = rel.split("/")
    for i in range(len(parts) - 1, 0, -1):
        candidate = "/".join(parts[:i])
        if candidate in bundles:
            return candidate
    return ""


def _plist(source: Source, bundle: str) -> common.PlistDict:
    for name in ("Info.plist", "Contents/Info.plist"):
        data = source.read(f"{bundle}/{name}" if bundle else name, 4 << 20)
        if data is None:
            continue
        try:
            value = plistlib.loads(data)
        except (plistlib.InvalidFileException, ValueError, TypeError, KeyError, IndexError, OverflowError):
            continue
        if isinstance(value, dict):
            return value
    return {}


def _text(value: common.PlistValue | None) -> str | None:
    return value if isinstance(value, str) and len(value) < 1024 else None


def _executable(source: Source, bundle: str, info: common.PlistDict, files: set[str]) -> str | None:
    name = _text(info.get("CFBundleExecutable")) or os.path.splitext(os.path.basename(bundle or "x"))[0]
    for candidate in (f"{bundle}/{name}", f"{bundle}/Contents/MacOS/{name}", name, f"Contents/MacOS/{name}"):
        candidate = candidate.lstrip("/")
        if candidate in files:
            return candidate
    return None


class _Executable(Record):
    """What an application graph node says of its executable (nothing when it cannot be read)."""

    architectures: list[str] = []
    platform: str | None = None
    signature: str | None = None
    team_id: str | None = None
    entitlements: list[str] = []
    encrypted: bool | None = None


def _describe(source: Source, rel: str) -> tuple[_Executable, list[str]]:
    """Facts of one executable: slices, platform, signature, entitlement keys, and the dylibs it loads."""
    data = source.read(rel, MAX_EXECUTABLE)
    if data is None or data[:4] not in (*common.THIN_MAGIC, *common.FAT_MAGIC):
        return _Executable(), []
    try:
        f = common.MachOFile(data)
        b = f.binaries[0]
        sig = slice_signature(f, 0)
        entitlements = sig.entitlements if isinstance(sig.entitlements, dict) else {}
        plat = platform_of(b)
        facts = _Executable(
            architectures=[f.cpu(i) for i in range(len(f.binaries))],
            platform=f"{plat.platform} {plat.min_os}" if plat else None,
            signature=sig.status,
            team_id=next((cd.team_id for cd in sig.code_directories if cd.team_id), None),
            entitlements=sorted(entitlements)[:100],
            encrypted=bool(b.has_encryption_info and int(b.encryption_info.crypt_id)),
        )
        return facts, [str(lib.name) for lib in loaded_libraries(b)]
    except ReaError:
        return _Executable(), []


def _iter_install_names(bundle: str, kind: str, exe: str | None) -> Iterator[str]:
    """The install names a bundle answers to (@rpath/X.framework/X and its path)."""
    if exe is None:
        return
    tail = exe[len(bundle) + 1 :] if bundle else exe
    name = os.path.basename(bundle) if bundle else ""
    if kind == "framework":
        yield f"@rpath/{name}/{tail}"
    yield f"@executable_path/{exe}"


@common.guarded
def project_apple_application_graph(call: ToolCall) -> Evidence:
    path = common.given_path(call)
    source: Source
    if os.path.isdir(path):
        root_name = os.path.basename(path.rstrip("/"))
        kind = "framework" if root_name.endswith(".framework") else "app"
        target = identify(path, call.ctx, allow_directory=True)
        source = FolderSource(os.path.realpath(path))
    else:
        target = identify(path, call.ctx)
        source = ArchiveSource(call, target)
        root_name, kind = source.name, "ipa"
    try:
        return _project(call, target, source, root_name, kind)
    finally:
        source.close()


def _project(call: ToolCall, target: Target, source: Source, root_name: str, kind: str) -> Evidence:
    files = source.files()
    names = {rel for rel, _ in files}
    bundles = _bundles(files)
    nodes: list[AppNode] = []
    edges: list[AppEdge] = []
    resources: dict[str, int] = {}
    install: dict[str, str] = {}
    loads: dict[str, list[str]] = {}
    executables: set[str] = set()
    identity: dict[str, str] = {}
    for n, (bundle, bkind) in enumerate(sorted(bundles.items())):
        call.ctx.check()
        call.ctx.progress("reading bundles", done=n, total=len(bundles))
        info = _plist(source, bundle)
        exe = _executable(source, bundle, info, names)
        bid = bundle or root_name
        facts, libs = _describe(source, exe) if exe else (_Executable(), [])
        if exe:
            executables.add(exe)
            loads[bid] = libs
            for name in _iter_install_names(bundle, bkind, exe):
                install[name] = bid
        nodes.append(
            AppNode(
                id=bid,
                kind=("framework" if kind == "framework" else "application") if bundle == "" else bkind,  # type: ignore[arg-type]
                path=bundle or ".",
                bundle_id=_text(info.get("CFBundleIdentifier")),
                version=_text(info.get("CFBundleShortVersionString")),
                executable=exe,
                architectures=facts.architectures,
                platform=facts.platform,
                signature=facts.signature,
                team_id=facts.team_id,
                entitlements=facts.entitlements,
                encrypted=facts.encrypted,
            )
        )
        if bundle:
            edges.append(AppEdge(source=_owner(bundle, bundles) or root_name, target=bid, kind="embeds"))
        else:
            for key in (
                "CFBundleIdentifier",
                "CFBundleShortVersionString",
                "CFBundleVersion",
                "MinimumOSVersion",
                "LSMinimumSystemVersion",
                "CFBundleExecutable",
            ):
                if text := _text(info.get(key)):
                    identity[key] = text
    # Loose dylibs (Frameworks/libswiftCore.dylib, ...) are nodes too.
    for rel, _ in files:
        if rel.endswith(".dylib") and rel not in executables:
            facts, libs = _describe(source, rel)
            owner = _owner(rel, bundles) or root_name
            nodes.append(
                AppNode(
                    id=rel,
                    kind="library",
                    path=rel,
                    architectures=facts.architectures,
                    signature=facts.signature,
                )
            )
            edges.append(AppEdge(source=owner, target=rel, kind="embeds"))
            loads[rel] = libs
            install[f"@rpath/{os.path.basename(rel)}"] = rel
    system: dict[str, int] = {}
    for node_id, libs in loads.items():
        for lib in libs:
            inside = install.get(lib) or next(
                (v for k, v in install.items() if k.endswith("/" + lib.split("/")[-1]) and lib.startswith("@")), None
            )
            if inside is not None and inside != node_id:
                edges.append(AppEdge(source=node_id, target=inside, kind="loads", detail=lib))
            elif inside is None:
                system[lib] = system.get(lib, 0) + 1
    for rel, _ in files:
        if rel in executables or rel.endswith(".dylib"):
            continue
        ext = os.path.splitext(rel)[1].lower() or os.path.basename(rel)
        if "/_CodeSignature/" in f"/{rel}":
            ext = "_CodeSignature"
        resources[ext] = resources.get(ext, 0) + 1
    top_resources = dict(sorted(resources.items(), key=lambda kv: (-kv[1], kv[0]))[:40])
    chosen_nodes, nodes_page = common.page(nodes, call.args, "nodes", 50)
    chosen_edges, edges_page = common.page(edges, call.args, "edges", 100)
    counts = {
        "files": len(files),
        "bundles": len(bundles),
        **{k: sum(1 for nd in nodes if nd.kind == k) for k in ("framework", "extension", "library", "xpc-service")},
        "system_libraries": len(system),
    }
    report = AppGraph(
        schema_version=1,
        input_kind=kind,  # type: ignore[arg-type]
        root=root_name,
        identity=identity,
        nodes=chosen_nodes,
        nodes_page=nodes_page,
        edges=chosen_edges,
        edges_page=edges_page,
        system_libraries=dict(sorted(system.items())[:100]),
        resources=top_resources,
        counts=counts,
    )
    return common.evidence(call, target, report, ["Each executable is described by its first slice."])
