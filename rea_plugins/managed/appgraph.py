"""project_managed_application_graph: a .NET application folder's assemblies, native libraries and resources."""

from __future__ import annotations

import hashlib
import os
import stat
from typing import Literal
from typing import NamedTuple

from rea.plugin import Evidence
from rea.plugin import OperationResult
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import canonical_digest
from rea.plugin import identify
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import open_regular
from rea.plugin import render
from rea_plugins.managed import common
from rea_plugins.managed import reader
from rea_plugins.managed.artifact import resources
from rea_plugins.managed.model import GRAPH_OPERATION
from rea_plugins.managed.model import SCHEMA_VERSION
from rea_plugins.managed.model import EdgeKind
from rea_plugins.managed.model import GraphEdge
from rea_plugins.managed.model import GraphNode
from rea_plugins.managed.model import GraphResult
from rea_plugins.managed.reader import Image
from rea_plugins.managed.verify import library_stem

_NATIVE_SUFFIXES = (".so", ".dll", ".dylib")
_MANAGED_SUFFIXES = (".dll", ".exe")


class _File:
    def __init__(self, rel: str, data: bytes) -> None:
        self.rel = rel
        self.data = data
        self.sha256 = hashlib.sha256(data).hexdigest()


class _LinkKind(NamedTuple):
    """How a name an assembly uses is linked: the resolved node's id prefix, the unresolved node's, its kind, and
    the edge's kind."""

    prefix: str
    unresolved_prefix: str
    unresolved_kind: Literal["unresolved-assembly", "unresolved-native"]
    edge: EdgeKind


_REFERENCES = _LinkKind("asm", "unresolved", "unresolved-assembly", "references")
_P_INVOKES = _LinkKind("native", "unresolved-native", "unresolved-native", "p-invokes")


def _link(
    graph: tuple[dict[str, GraphNode], set[tuple[str, str, EdgeKind]]],
    source: str,
    name: str,
    found: str | None,
    how: _LinkKind,
) -> None:
    """An edge from ``source`` to what ``name`` resolved to, or to an unresolved node standing for it."""
    nodes, edges = graph
    target_id = f"{how.prefix}:{found}" if found else f"{how.unresolved_prefix}:{name}"
    if found is None:
        nodes.setdefault(
            target_id,
            GraphNode(node_id=target_id, kind=how.unresolved_kind, path=None, name=name, sha256=None, size=None),
        )
    edges.add((source, target_id, how.edge))


def _walk(root: str, max_files: int, max_bytes: int, call: ToolCall) -> tuple[list[_File], list[str], bool]:
    """Candidate files (sorted relative paths), the unreadable ones, and whether max_files cut the walk."""
    found: list[_File] = []
    unreadable: list[str] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        call.ctx.check(GRAPH_OPERATION)
        dirnames.sort()
        for name in sorted(filenames):
            rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            low = name.lower()
            if not (low.endswith(_MANAGED_SUFFIXES + _NATIVE_SUFFIXES) or ".so." in low):
                continue
            seen += 1
            if seen > max_files:
                return found, unreadable, True
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
                if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
                    unreadable.append(rel)
                    continue
                with os.fdopen(open_regular(full, follow=False), "rb") as fh:
                    found.append(_File(rel, fh.read(max_bytes + 1)))
            except (OSError, ReaError):
                unreadable.append(rel)
    return found, unreadable, False


class _Assembly:
    """What the graph needs of one assembly, read at once so a damaged file is set aside whole."""

    def __init__(self, image: Image) -> None:
        self.name = image.assembly_name()
        self.entry = bool(int(image.net.struct.EntryPointTokenOrRva))
        self.references = [image.text(r, "Name", "AssemblyRef") for r in image.rows("AssemblyRef")]
        self.modules = [image.text(r, "Name", "ModuleRef") for r in image.rows("ModuleRef")]
        self.resources = [r for r in resources(image) if r.location == "embedded"]


def _managed(file: _File, limits: dict[str, int]) -> _Assembly | ReaError | None:
    """The assembly in ``file``; None for a native PE; the typed error of a damaged assembly."""
    if not file.rel.lower().endswith(_MANAGED_SUFFIXES) or file.data[:2] != b"MZ":
        return None
    try:
        return _Assembly(reader.parse(file.data, limits))
    except ReaError as exc:
        return None if exc.details.get("reason") in ("not_managed", "not_pe") else exc
    except Exception:  # a damaged row met while summarizing: the same outcome as a damaged header
        return reader.malformed("metadata", "a structure does not decode")


def _main(assemblies: dict[str, _Assembly], wanted: str | None) -> str:
    if wanted:
        rel = wanted.replace(os.sep, "/").removeprefix("./")
        if rel not in assemblies:
            raise invalid_request(
                f"main_assembly {wanted} is not a .NET assembly of the folder",
                [
                    issue(
                        "main_assembly",
                        "invalid_value",
                        "not a managed assembly in the folder",
                        candidates=sorted(assemblies)[:50],
                    )
                ],
            )
        return rel
    exes = sorted(rel for rel, asm in assemblies.items() if asm.entry and rel.lower().endswith(".exe"))
    if len(exes) != 1:
        raise invalid_request(
            "name the main assembly: the folder has "
            + ("no .exe with an entry point" if not exes else f"{len(exes)} executables"),
            [issue("main_assembly", "missing_argument", "main_assembly is required here", candidates=exes[:50])],
        )
    return exes[0]


def build(root: str, call: ToolCall) -> GraphResult:
    limits = reader.bounds(call.args)
    max_files = min(arg_int(call.args, "max_files", 2000), 100_000)
    files, unreadable, cut = _walk(root, max_files, limits["max_file_bytes"], call)
    assemblies: dict[str, _Assembly] = {}
    natives: dict[str, _File] = {}
    by_rel = {f.rel: f for f in files}
    for f in files:
        call.ctx.check(GRAPH_OPERATION)
        found = _managed(f, limits)
        if isinstance(found, _Assembly):
            assemblies[f.rel] = found
        elif isinstance(found, ReaError):
            unreadable.append(f.rel)
        elif f.rel.lower().endswith(_NATIVE_SUFFIXES) or ".so." in f.rel.lower():
            natives[f.rel] = f
    main = _main(assemblies, arg_str(call.args, "main_assembly"))
    nodes: dict[str, GraphNode] = {}
    edges: set[tuple[str, str, EdgeKind]] = set()
    graph = (nodes, edges)
    by_name = {asm.name.lower(): rel for rel, asm in assemblies.items()}
    by_stem = {library_stem(rel): rel for rel in sorted(natives, reverse=True)}
    for rel, f in natives.items():
        nodes[f"native:{rel}"] = GraphNode(
            node_id=f"native:{rel}",
            kind="native-library",
            path=rel,
            name=rel.rsplit("/", 1)[-1],
            sha256=f.sha256,
            size=len(f.data),
        )
    for rel, asm in sorted(assemblies.items()):
        f = by_rel[rel]
        node = f"asm:{rel}"
        nodes[node] = GraphNode(
            node_id=node, kind="assembly", path=rel, name=asm.name, sha256=f.sha256, size=len(f.data), main=rel == main
        )

        for name in asm.references:
            _link(graph, node, name, by_name.get(name.lower()), _REFERENCES)
        for name in asm.modules:
            _link(graph, node, name, by_stem.get(library_stem(name)), _P_INVOKES)
        for res in asm.resources:
            res_id = f"res:{rel}!{res.name}"
            nodes[res_id] = GraphNode(
                node_id=res_id, kind="resource", path=None, name=res.name, sha256=res.sha256, size=res.size
            )
            edges.add((node, res_id, "embeds"))
    ordered_nodes = [nodes[k] for k in sorted(nodes)]
    ordered_edges = [GraphEdge(source=s, target=t, kind=k) for s, t, k in sorted(edges)]
    # The graph's digest commits to every node's content digest and every edge, not to the walk order.
    graph_sha256 = canonical_digest({"nodes": ordered_nodes, "edges": ordered_edges})
    return GraphResult(
        schema_version=SCHEMA_VERSION,
        root_sha256="",
        graph_sha256=graph_sha256,
        main=f"asm:{main}",
        nodes=ordered_nodes,
        edges=ordered_edges,
        coverage="partial" if cut or unreadable else "complete",
        unreadable=unreadable,
    )


def _drawing(result: GraphResult) -> render.Graph:
    """The main assembly first, then the rest in the result's order; edges labelled by kind."""
    ordered = sorted(result.nodes, key=lambda n: n.node_id != result.main)
    nodes = [
        render.Node(
            id=n.node_id,
            label=n.name if n.kind in ("assembly", "native-library") else f"{n.name} ({n.kind})",
            emphasis=n.node_id == result.main,
        )
        for n in ordered
    ]
    edges = [render.Edge(source=e.source, target=e.target, label=e.kind) for e in result.edges]
    return render.Graph(nodes=nodes, edges=edges, title="managed application", direction="TB")


@common.guarded
def handle(call: ToolCall) -> Evidence:
    target = identify(arg_str(call.args, "application_path", ""), call.ctx, allow_directory=True)  # required
    if not target.is_directory:
        raise invalid_request(
            "application_path must be a folder", [issue("application_path", "invalid_value", "not a directory")]
        )
    result = build(target.resolved_path, call)
    import msgspec

    result = msgspec.structs.replace(result, root_sha256=target.sha256)
    fmt = render.requested(call.args)
    if fmt is not None:
        result = msgspec.structs.replace(result, picture=render.picture(_drawing(result), fmt))
    limitations = (
        []
        if result.coverage == "complete"
        else [
            "Coverage is partial: max_files cut the walk or some files were unreadable or larger than max_file_bytes."
        ]
    )
    call.ctx.finish(f"{len(result.nodes)} nodes")
    params = {k: v for k, v in sorted(call.args.items()) if k != "application_path"}
    return call.session.evidence(
        GRAPH_OPERATION,
        params,
        OperationResult(normalized=msgspec.to_builtins(result), limitations=[common.STATIC, *limitations]),
        bound=False,
        target=target,
        provider=common.PROVIDER,
        analysis_profile=common.profile(),
    )
