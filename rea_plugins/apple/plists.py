"""inspect_plist and inspect_keyed_archive: property lists (plistlib) and NSKeyedArchiver graphs (bpylist2)."""

from __future__ import annotations

import base64
import datetime
import os
import plistlib
from collections import deque
from typing import Any

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import identify
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import read_regular
from rea_plugins.apple import common
from rea_plugins.apple.model import ArchivedObject
from rea_plugins.apple.model import KeyedArchive
from rea_plugins.apple.model import PlistReport

MAX_PLIST_BYTES = 64 << 20


def not_plist(path: str, why: str) -> ReaError:
    return ReaError(
        "unsupported_target",
        f"{path} is not a property list: {why}",
        remediation="Pass an XML or binary property list (or a bundle folder, whose Info.plist is read).",
        details={"path": path, "reason": "format"},
    )


def bundle_of(path: str) -> str | None:
    """The .app/.framework/.appex folder that holds ``path`` (itself when it is one)."""
    here = os.path.abspath(path)
    while here and here != os.path.dirname(here):
        if os.path.splitext(here)[1] in (".app", ".framework", ".appex", ".bundle", ".xpc", ".plugin"):
            return here
        here = os.path.dirname(here)
    return None


def info_plist(bundle: str) -> str | None:
    for where in ("Info.plist", "Contents/Info.plist", "Resources/Info.plist"):
        candidate = os.path.join(bundle, where)
        if os.path.isfile(candidate):
            return candidate
    return None


def plist_target(call: ToolCall) -> Target:
    """The plist ``path`` names, ``relative_path`` inside the bundle ``path`` (or the open target) is in, or that
    bundle's Info.plist."""
    path = arg_str(call.args, "path")
    relative = arg_str(call.args, "relative_path")
    base = path or call.session.require_target().resolved_path
    if relative is not None:
        root = os.path.realpath(base if os.path.isdir(base) else bundle_of(base) or os.path.dirname(base))
        return identify(_inside_bundle(root, relative), call.ctx)
    if os.path.isdir(base) or (not path and not base.endswith(".plist")):
        bundle = base if os.path.isdir(base) else bundle_of(base)
        found = info_plist(bundle) if bundle else None
        if found is None:
            raise invalid_request(
                f"no Info.plist for {base}",
                [issue("path", "invalid_value", "not inside an .app/.framework bundle with an Info.plist")],
            )
        return identify(found, call.ctx)
    return identify(base, call.ctx)


def _inside_bundle(root: str, relative: str) -> str:
    """The file ``relative_path`` names inside ``root``. The kernel resolves every ``*_path`` argument against the
    server's working directory before a handler runs, so the caller's relative text is what it is relative to that
    directory; an absolute path is taken when it lies inside the bundle."""
    candidates = [relative] if os.path.isabs(relative) else []
    rel = os.path.relpath(relative, os.getcwd()) if os.path.isabs(relative) else relative
    candidates.append(os.path.join(root, rel))
    for candidate in candidates:
        real = os.path.realpath(candidate)
        if os.path.commonpath([real, root]) == root and real != root:
            return real
    raise invalid_request(
        "relative_path must name a file inside the bundle",
        [issue("relative_path", "invalid_value", "outside the bundle", bundle=root)],
    )


def load_plist(target: Target) -> tuple[Any, str]:
    data = read_regular(target.resolved_path, MAX_PLIST_BYTES, code="unsupported_target", what="property list")
    fmt = "binary" if data.startswith(b"bplist00") else "xml"
    try:
        return plistlib.loads(data), fmt
    except (plistlib.InvalidFileException, ValueError, TypeError, KeyError, IndexError, OverflowError) as exc:
        raise not_plist(target.path, type(exc).__name__.replace("InvalidFileException", "not a plist")) from None
    except RecursionError:
        raise not_plist(target.path, "it nests deeper than can be read") from None


class Normalizer:
    """Plist values as JSON, bounded: depth, items per container, string and data sizes; cuts noted by path."""

    def __init__(self, max_depth: int, max_items: int, max_string: int) -> None:
        self.max_depth, self.max_items, self.max_string = max_depth, max_items, max_string
        self.truncated: list[str] = []
        self.nodes = 0

    def _cut(self, where: str) -> None:
        if len(self.truncated) < 100:
            self.truncated.append(where)

    def __call__(self, value: Any, where: str = "$", depth: int = 0) -> Any:
        self.nodes += 1
        if isinstance(value, dict):
            if depth >= self.max_depth:
                self._cut(where)
                return {"$truncated": "dict", "count": len(value)}
            items = list(value.items())
            if len(items) > self.max_items:
                self._cut(where)
            return {str(k): self(v, f"{where}.{k}", depth + 1) for k, v in items[: self.max_items]}
        if isinstance(value, list | tuple):
            if depth >= self.max_depth:
                self._cut(where)
                return [{"$truncated": "array", "count": len(value)}]
            if len(value) > self.max_items:
                self._cut(where)
            return [self(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value[: self.max_items])]
        if isinstance(value, bool | float) or value is None:
            return value
        if isinstance(value, int):
            # JSON's exact integers; larger ones (UInt64 fields) as text.
            return value if -(1 << 53) < value < (1 << 53) else str(value)
        if isinstance(value, str):
            if len(value) > self.max_string:
                self._cut(where)
                return value[: self.max_string]
            return value
        if isinstance(value, bytes | bytearray):
            if len(value) > self.max_string:
                self._cut(where)
            return {"$data": base64.b64encode(bytes(value[: self.max_string])).decode(), "size": len(value)}
        if isinstance(value, datetime.datetime):
            return {"$date": value.isoformat()}
        if isinstance(value, plistlib.UID):
            return {"$ref": int(value.data)}
        return str(value)


def _normalizer(args: Arguments) -> Normalizer:
    return Normalizer(arg_int(args, "max_depth", 8), arg_int(args, "max_items", 200), arg_int(args, "max_string", 1024))


@common.guarded
def inspect_plist(call: ToolCall) -> Evidence:
    target = plist_target(call)
    value, fmt = load_plist(target)
    norm = _normalizer(call.args)
    out = norm(value)
    report = PlistReport(source=target.name, format=fmt, value=out, truncated=norm.truncated, total_nodes=norm.nodes)  # type: ignore[arg-type]
    return common.evidence(call, target, report)


# -- NSKeyedArchiver --------------------------------------------------------------------------------


def recursive(uid: int, path: list[int]) -> ReaError:
    return ReaError(
        "unsupported_target",
        f"the keyed archive is recursive: object {uid} contains itself",
        remediation="Read the archive's objects one level at a time with a smaller max_depth, or inspect_plist it.",
        details={"reason": "recursive_archive", "uid": uid, "cycle": path[-20:]},
    )


def _refs(value: Any) -> list[int]:
    """The UIDs an object's fields point to (directly or in arrays/dicts)."""
    out: list[int] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, plistlib.UID):
            out.append(int(v.data))
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return out


@common.guarded
def inspect_keyed_archive(call: ToolCall) -> Evidence:
    from bpylist2 import archiver

    target = common.given_target(call)
    data = read_regular(target.resolved_path, MAX_PLIST_BYTES, code="unsupported_target", what="keyed archive")
    un = archiver.Unarchive(data)
    try:
        un.unpack_archive_header()
    except archiver.ArchiverError as exc:
        raise ReaError(
            "unsupported_target",
            f"{target.path} is not an NSKeyedArchiver archive bpylist2 reads ({type(exc).__name__})",
            remediation="Use inspect_plist for other property lists.",
            details={"reason": "format", "path": target.path},
        ) from None
    except (plistlib.InvalidFileException, ValueError, TypeError, KeyError, IndexError, AttributeError):
        raise not_plist(target.path, "it does not decode") from None
    objects: list[Any] = un.objects
    header = plistlib.loads(data)
    top = header.get("$top", {})
    max_depth = arg_int(call.args, "max_depth", 16)
    norm = _normalizer(call.args)

    def class_names(raw: common.PlistDict) -> tuple[str | None, list[str]]:
        cls = raw.get("$class")
        if not isinstance(cls, plistlib.UID) or not 0 <= cls.data < len(objects):
            return None, []
        meta = objects[cls.data]
        if not isinstance(meta, dict):
            return None, []
        chain = [str(c) for c in meta.get("$classes", []) if isinstance(c, str)]
        name = meta.get("$classname")
        return (name if isinstance(name, str) else None), chain

    # A depth-first check from every top object: an object reachable from itself is a recursive archive.
    state: dict[int, int] = {}  # 1 on the path, 2 done
    for root in _refs(top):
        stack: list[tuple[int, list[int]]] = [(root, [])]
        path_now: list[int] = []
        while stack:
            uid, kids = stack[-1]
            if uid not in state:
                if not 0 <= uid < len(objects):
                    raise ReaError(
                        "unsupported_target",
                        f"the keyed archive refers to object {uid} of {len(objects)}",
                        remediation="The archive is damaged; inspect_plist shows its raw objects.",
                        details={"reason": "malformed", "uid": uid},
                    )
                state[uid] = 1
                path_now.append(uid)
                raw = objects[uid]
                refs = [
                    r
                    for r in _refs(raw)
                    if r != 0 and not (isinstance(raw, dict) and raw.get("$class") == plistlib.UID(r))
                ]
                stack[-1] = (uid, refs)
                kids = refs
            if kids:
                nxt = kids.pop()
                if state.get(nxt) == 1:
                    raise recursive(nxt, [*path_now, nxt])
                if nxt not in state:
                    stack.append((nxt, []))
                continue
            state[uid] = 2
            path_now.pop()
            stack.pop()
            call.ctx.check()

    # Breadth first from the top, as far as max_depth.
    seen: dict[int, int] = {}
    queue: deque[tuple[int, int]] = deque((r, 0) for r in _refs(top))
    order: list[int] = []
    deepest = False
    while queue:
        uid, depth = queue.popleft()
        if uid in seen or uid == 0:
            continue
        if depth > max_depth:
            deepest = True
            continue
        seen[uid] = depth
        order.append(uid)
        raw = objects[uid]
        if isinstance(raw, dict):
            queue.extend((r, depth + 1) for r in _refs({k: v for k, v in raw.items() if k != "$class"}))
    rows: list[ArchivedObject] = []
    classes: dict[str, int] = {}
    for uid in order:
        raw = objects[uid]
        if isinstance(raw, dict):
            name, chain = class_names(raw)
            if name:
                classes[name] = classes.get(name, 0) + 1
            fields = {str(k): norm(v, f"$objects[{uid}].{k}") for k, v in raw.items() if k != "$class"}
            rows.append(ArchivedObject(uid=uid, class_name=name, classes=chain, fields=fields))
        else:
            rows.append(ArchivedObject(uid=uid, class_name=None, fields={"value": norm(raw, f"$objects[{uid}]")}))
    chosen, info = common.page(rows, call.args, "", 100)
    decoded = None
    try:
        decoded = norm(_plain(un.decode_object(un.top_uid)), "$decoded")
    except (archiver.ArchiverError, KeyError, TypeError, ValueError, AttributeError, IndexError):
        decoded = None  # classes bpylist2 has no mapping for: the object graph above stands
    report = KeyedArchive(
        source=target.name,
        archiver=str(header.get("$archiver")),
        version=header.get("$version") if isinstance(header.get("$version"), int) else None,
        top={str(k): norm(v, f"$top.{k}") for k, v in top.items()},
        objects=chosen,
        objects_page=info,
        classes=classes,
        decoded=decoded,
        max_depth_reached=deepest,
    )
    return common.evidence(call, target, report)


def _plain(value: Any) -> Any:
    """bpylist2's decoded values as plist-like data (sets as sorted lists, archived objects as their fields)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_plain(v) for v in value), key=repr)
    if hasattr(value, "__dataclass_fields__"):
        return {"$class": type(value).__name__, **{k: _plain(getattr(value, k)) for k in value.__dataclass_fields__}}
    return value
