"""reconcile_javascript_runtime: the scripts a runtime loaded joined to the modules of a static application graph.

The static graph is analyze_javascript_application's Evidence (given, or made by calling that tool through the
kernel's tool invocation: this plugin never imports another). A loaded script joins a static module by its bytes
(the SHA-256 of the source the runtime held against the module's), or through its source map: the runtime named a
map (``sourceMappingURL``) that the static graph read for the generated file at the script's path. The modules a
joined file's source map reaches (its bundled modules, its original sources) are loaded with it. What joins nothing
is loaded-but-unknown (with a same-path module whose bytes differ named); a file the runtime never loaded is
known-but-never-loaded.
"""

from __future__ import annotations

import os
import posixpath
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import ToolCall
from rea.plugin import arg_int
from rea.plugin import arg_object
from rea.plugin import arg_objects
from rea.plugin import as_object
from rea.plugin import invalid_request
from rea.plugin import invoke
from rea.plugin import issue
from rea.plugin import next_offset
from rea.plugin import retained_reference
from rea_plugins.runtime.inspector import file_path
from rea_plugins.runtime.model import LoadedKnown
from rea_plugins.runtime.model import LoadedUnknown
from rea_plugins.runtime.model import MatchKind
from rea_plugins.runtime.model import NeverLoaded
from rea_plugins.runtime.model import ReconcileCounts
from rea_plugins.runtime.model import ReconcilePage
from rea_plugins.runtime.model import RuntimeReconciliation
from rea_plugins.runtime.model import UnknownReason

STATIC_TOOL = "analyze_javascript_application"
OBSERVE_TOOL = "observe_javascript_runtime"
SCHEMA_VERSION = 1


@dataclass
class StaticModule:
    node_id: str
    path: str
    absolute: str
    kind: str
    sha256: str
    container: str | None
    in_dependency: bool
    bundled: list[str] = field(default_factory=list)
    mapped: list[str] = field(default_factory=list)


@dataclass
class StaticIndex:
    modules: dict[str, StaticModule] = field(default_factory=dict)
    by_hash: dict[str, list[str]] = field(default_factory=dict)
    by_path: dict[str, str] = field(default_factory=dict)
    # A map file's absolute path (or an inline map's generated file) -> the generated module it belongs to.
    by_map: dict[str, str] = field(default_factory=dict)


def _get(value: Any, key: str) -> Any:
    obj = as_object(value)
    return obj.get(key) if isinstance(obj, dict) else None


def _items(value: Any) -> Iterator[Any]:
    yield from value if isinstance(value, list) else ()


def _static_evidence(call: ToolCall, layer: JSONObject, index: int) -> Evidence:
    """The complete application graph a layer names: retained or inline Evidence, or a fresh analysis (``layer`` is
    the caller's static_layers entry, JSON its input schema shapes)."""
    where = f"static_layers/{index}"
    if "input_path" in layer:
        tool = call.session.registry.tools.get(STATIC_TOOL)
        if tool is None:
            raise ReaError(
                "capability_unavailable",
                f"{STATIC_TOOL} is not loaded, so {where} cannot be analyzed",
                remediation="Enable the javascript plugin, or pass the application graph's Evidence.",
                details={"tool": STATIC_TOOL},
            )
        args = {"input_path": layer["input_path"], "format": layer.get("format", "auto")}
        out = invoke(call.session, tool, args, call.ctx)
        if out.evidence is None:
            raise ReaError("execution_failure", f"{STATIC_TOOL} recorded no Evidence", details={"tool": STATIC_TOOL})
        ev = out.evidence
    else:
        ev = call.session.resolve_evidence(layer.get("evidence", layer), where)
    if ev.operation != STATIC_TOOL:
        raise invalid_request(
            f"{where} is {ev.operation} Evidence, not {STATIC_TOOL}",
            [issue(where, "invalid_value", f"expected {STATIC_TOOL} Evidence")],
        )
    complete = _get(ev.normalized_result, "complete_evidence_id")
    if isinstance(complete, str):
        ev = call.session.resolve_evidence(retained_reference(complete), where)
    return ev


def _index(ev: Evidence, into: StaticIndex) -> None:
    subject = ev.subject
    root = os.path.realpath(subject.local_path) if subject is not None else ""
    result = ev.normalized_result
    for module in _items(_get(result, "modules")):
        m = as_object(module)
        node_id, path = str(m.get("node_id")), str(m.get("path"))
        absolute = os.path.join(root, *path.split("/")) if root else path
        entry = StaticModule(
            node_id=node_id,
            path=path,
            absolute=absolute,
            kind=str(m.get("kind")),
            sha256=str(m.get("sha256")),
            container=m.get("container") if isinstance(m.get("container"), str) else None,
            in_dependency=m.get("in_dependency") is True,
            bundled=[str(b) for b in _items(m.get("bundled_modules"))],
        )
        into.modules[node_id] = entry
        if entry.container is None:
            # Bundled modules' digests are of their lines inside the bundle: only files are matched by bytes.
            into.by_hash.setdefault(entry.sha256, []).append(node_id)
            into.by_path[absolute] = node_id
    for smap in _items(_get(result, "source_maps")):
        s = as_object(smap)
        generated = s.get("generated")
        if not isinstance(generated, str) or generated not in into.modules:
            continue
        gen = into.modules[generated]
        for source in _items(s.get("sources")):
            src = as_object(source)
            for key in ("module", "file_module"):
                target = src.get(key)
                if isinstance(target, str) and target in into.modules and target not in gen.mapped:
                    gen.mapped.append(target)
        map_path = s.get("map_path")
        if s.get("location") == "inline":
            into.by_map[gen.absolute] = generated
        elif isinstance(map_path, str):
            into.by_map[os.path.join(root, *map_path.split("/")) if root else map_path] = generated


def _map_target(script_url: str, map_url: str) -> str | None:
    """The file a script's ``sourceMappingURL`` names (the script's own file for an inline ``data:`` map)."""
    script_path = file_path(script_url)
    if map_url.startswith("data:"):
        return script_path
    joined = urllib.parse.urljoin(script_url, map_url)
    path = file_path(joined)
    if path is None and script_path is not None and "://" not in map_url:
        path = posixpath.normpath(posixpath.join(posixpath.dirname(script_path), map_url))
    return path


def _observations(call: ToolCall) -> list[Evidence]:
    out = []
    for i, value in enumerate(arg_objects(call.args, "runtime_observations") or []):
        ev = call.session.resolve_evidence(value, f"runtime_observations/{i}")
        complete = _get(ev.normalized_result, "complete_evidence_id") if ev.operation == OBSERVE_TOOL else None
        if isinstance(complete, str):
            ev = call.session.resolve_evidence(retained_reference(complete), f"runtime_observations/{i}")
        if ev.operation != OBSERVE_TOOL:
            raise invalid_request(
                f"runtime_observations/{i} is {ev.operation} Evidence, not {OBSERVE_TOOL}",
                [issue(f"runtime_observations/{i}", "invalid_value", f"expected {OBSERVE_TOOL} Evidence")],
            )
        out.append(ev)
    return out


def reconcile(call: ToolCall) -> tuple[RuntimeReconciliation, list[str]]:
    limits = arg_object(call.args, "limits") or {}
    offset, limit = arg_int(limits, "offset", 0), arg_int(limits, "limit", 20)
    static = StaticIndex()
    static_ids = []
    layers = arg_objects(call.args, "static_layers") or []
    for i, layer in enumerate(layers):
        call.ctx.progress("reading the static application graphs", done=i, total=len(layers))
        ev = _static_evidence(call, layer, i)
        static_ids.append(ev.evidence_id)
        _index(ev, static)
        call.ctx.check("indexing the static graph")
    observations = _observations(call)
    known: list[LoadedKnown] = []
    unknown: list[LoadedUnknown] = []
    loaded: set[str] = set()
    scripts = 0
    for ev in observations:
        obs = ev.normalized_result
        kind = _get(obs, "runtime_kind")
        for script in _items(_get(obs, "scripts")):
            s = as_object(script)
            scripts += 1
            url, sid = str(s.get("url")), str(s.get("script_id"))
            digest = s.get("sha256") if isinstance(s.get("sha256"), str) else None
            path = file_path(url)
            same_path = static.by_path.get(path) if path is not None else None
            matched: tuple[str, MatchKind] | None = None
            candidates = static.by_hash.get(digest, []) if digest else []
            if candidates:
                matched = (same_path if same_path in candidates else candidates[0], "content-hash")
            elif isinstance(s.get("source_map_url"), str):
                target = _map_target(url, s["source_map_url"])
                generated = static.by_map.get(target) if target is not None else None
                if generated is not None and static.modules[generated].absolute == path:
                    matched = (generated, "source-map")
            if matched is None:
                reason: UnknownReason = (
                    "not-hashed" if digest is None else "content-differs" if same_path else "no-static-module"
                )
                unknown.append(
                    LoadedUnknown(
                        url=url,
                        script_id=sid,
                        runtime_kind=kind,
                        sha256=digest,
                        reason=reason,
                        same_path_module=same_path,
                    )
                )
                continue
            module = static.modules[matched[0]]
            reached = sorted({*module.bundled, *module.mapped})
            loaded.update((module.node_id, *reached))
            known.append(
                LoadedKnown(
                    url=url,
                    script_id=sid,
                    runtime_kind=kind,
                    module=module.node_id,
                    module_path=module.path,
                    matched_by=matched[1],
                    mapped_modules=reached,
                )
            )
    # Modules a bundle holds count as loaded with it; dependencies are listed too (a runtime may load them lazily).
    never = [
        NeverLoaded(module=m.node_id, module_path=m.path, kind=m.kind)
        for m in sorted(static.modules.values(), key=lambda m: m.node_id)
        if m.node_id not in loaded and not (m.container is not None and m.container in loaded)
    ]
    known.sort(key=lambda k: (k.module_path, k.url, k.script_id))
    unknown.sort(key=lambda u: (u.url, u.script_id))
    end = offset + limit
    longest = max(len(known), len(unknown), len(never))
    limitations = []
    if any(u.reason == "not-hashed" for u in unknown):
        limitations.append("Some loaded scripts were not hashed by the observation (raise its max_source_bytes).")
    if any(_get(ev.normalized_result, "scripts_truncated") for ev in observations):
        limitations.append("An observation listed only some of its scripts (limits.max_scripts): others are unseen.")
    result = RuntimeReconciliation(
        schema_version=SCHEMA_VERSION,
        runtime_evidence_ids=[ev.evidence_id for ev in observations],
        static_evidence_ids=static_ids,
        counts=ReconcileCounts(
            runtime_scripts=scripts,
            static_modules=len(static.modules),
            loaded_and_known=len(known),
            loaded_but_unknown=len(unknown),
            known_but_never_loaded=len(never),
        ),
        page=ReconcilePage(
            offset=offset, limit=limit, total=longest, next_offset=next_offset(offset, end - offset, longest)
        ),
        loaded_and_known=known[offset:end],
        loaded_but_unknown=unknown[offset:end],
        known_but_never_loaded=never[offset:end],
        limitations=limitations,
    )
    return result, [*[ev.evidence_id for ev in observations], *static_ids]
