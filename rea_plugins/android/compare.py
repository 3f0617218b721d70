"""compare_android_packages: what changed between two versions of an application.

Classes and methods are matched by name and descriptor, never by DEX index, and a method counts as changed only when
its instructions differ with every string, type, field and method reference resolved to its name: a rebuilt DEX whose
pools were renumbered compares equal.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import TypeVar

from rea.plugin import Arguments
from rea.plugin import CallContext
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea_plugins.android import loader
from rea_plugins.android import package as pkg
from rea_plugins.android.common import check_offset
from rea_plugins.android.common import java_name
from rea_plugins.android.common import method_id
from rea_plugins.android.model import SCHEMA_VERSION
from rea_plugins.android.model import Change
from rea_plugins.android.model import ChangeCategory
from rea_plugins.android.model import ChangeCounts
from rea_plugins.android.model import Component
from rea_plugins.android.model import PackageComparison
from rea_plugins.android.model import page

T = TypeVar("T")
CATEGORIES = ("manifest", "permission", "component", "class", "method", "native-library", "signing")
MANIFEST_FIELDS = (
    "package",
    "version_code",
    "version_name",
    "min_sdk",
    "target_sdk",
    "max_sdk",
    "compile_sdk",
    "debuggable",
    "main_activity",
)


class Facts:
    """The comparable facts of one application."""

    def __init__(self, loaded: loader.Loaded, ctx: CallContext) -> None:
        self.loaded = loaded
        self.manifest: dict[str, str | None] = {}
        self.permissions: dict[str, str] = {}
        self.components: dict[str, Component] = {}
        self.certificates: dict[str, str] = {}
        self.schemes: str = ""
        self.libraries: dict[str, tuple[int, int]] = {}
        apk = loaded.apk
        if loaded.kind == "apk":
            with loader.guarded("AndroidManifest.xml (binary XML)", entry="AndroidManifest.xml"):
                facts = pkg.inspect(loaded, 0, 1 << 30)
                self.manifest.update(_attributes(apk))
            for field in MANIFEST_FIELDS:
                value = getattr(facts, field)
                self.manifest[field] = None if value is None else str(value).lower() if field == "debuggable" else value
            for name in facts.permissions:
                self.permissions[name] = "requested" + (
                    f", up to API {facts.permission_max_sdk[name]}" if name in facts.permission_max_sdk else ""
                )
            for perm in facts.declared_permissions:
                self.permissions[perm.name] = "declared, protection " + ("|".join(perm.protection) or "unstated")
            self.components = {c.name: c for c in facts.components}
            if facts.signing is not None:
                self.schemes = ", ".join(k for k, v in facts.signing.schemes.items() if v) or "unsigned"
                self.certificates = {c.sha256: c.subject for c in facts.signing.certificates}
        for lib in pkg.native_libraries(loaded):
            crc = 0
            if apk is not None:
                with loader.guarded(lib.path, entry=lib.path):
                    crc = apk.zip.get_central_directory_entry_dict(lib.path)["crc32_of_uncompressed_data"]
            self.libraries[lib.path] = (lib.bytes, crc)
        ctx.check("reading the application")

    def label(self) -> str:
        m = self.manifest
        if m.get("package"):
            return f"{m['package']}@{m.get('version_name') or '?'} ({m.get('version_code') or '?'})"
        return self.loaded.target.name


# Attributes the named manifest fields already compare.
NAMED_ATTRIBUTES = {
    "manifest:package",
    "manifest:versionCode",
    "manifest:versionName",
    "manifest:compileSdkVersion",
    "uses-sdk:minSdkVersion",
    "uses-sdk:targetSdkVersion",
    "uses-sdk:maxSdkVersion",
    "application:debuggable",
}


def _attributes(apk: Any) -> dict[str, str | None]:
    """Every attribute of <manifest>, <uses-sdk> and <application> as ``tag:name`` (application:allowBackup)."""
    root = apk.get_android_manifest_xml()
    out: dict[str, str | None] = {}
    if root is None:
        return out
    for tag, node in (
        ("manifest", root),
        ("uses-sdk", root.find("uses-sdk")),
        ("application", root.find("application")),
    ):
        for key, value in node.attrib.items() if node is not None else ():
            name = f"{tag}:{key.rsplit('}', 1)[-1]}"
            if name not in NAMED_ATTRIBUTES:
                out[name] = str(value)
    return out


def _method_digest(method: Any) -> str:
    """The method's instructions with every reference resolved to its name (pool indices play no part)."""
    if method.get_code() is None:
        return "no-code:" + str(method.get_access_flags_string())
    h = hashlib.sha256(method.get_access_flags_string().encode())
    for ins in method.get_instructions():
        h.update(f"{ins.get_name()} {ins.get_output()}\n".encode())
    return h.hexdigest()


def _listing(method: Any) -> list[str]:
    if method.get_code() is None:
        return []
    return [f"{ins.get_name()} {ins.get_output()}".strip() for ins in method.get_instructions()]


def _first_difference(before: Any, after: Any) -> str:
    """Where a changed method first differs, as instruction number and the two instructions."""
    a, b = _listing(before), _listing(after)
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"{len(a)} -> {len(b)} instructions; first difference at instruction {i}: {x} -> {y}"[:400]
    if len(a) != len(b):
        return f"{len(a)} -> {len(b)} instructions; the first {min(len(a), len(b))} are the same"
    return "access flags changed"


def _class_shape(cls: Any) -> str:
    fields = sorted(f"{f.get_access_flags_string()} {f.get_name()}:{f.get_descriptor()}" for f in cls.get_fields())
    return "|".join(
        [cls.get_access_flags_string(), str(cls.get_superclassname()), ",".join(sorted(cls.get_interfaces())), *fields]
    )


def _component_diff(a: Component, b: Component) -> str:
    """What differs between two declarations of a component, as ``field before -> after``."""

    def show(value: object) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)

    words = []
    for field in ("kind", "exported", "permission", "target_activity", "authorities"):
        x, y = getattr(a, field), getattr(b, field)
        if x != y:
            words.append(f"{field} {show(x)} -> {show(y)}")
    if a.intent_filters != b.intent_filters:
        words.append(f"intent filters {len(a.intent_filters)} -> {len(b.intent_filters)} (changed)")
    return "; ".join(words)


def _code(left: loader.Loaded, right: loader.Loaded, ctx: CallContext) -> list[Change]:
    out: list[Change] = []
    lc, rc = left.classes(), right.classes()
    for desc in sorted(set(lc) - set(rc)):
        out.append(Change(category="class", change="removed", name=java_name(desc)))
    for desc in sorted(set(rc) - set(lc)):
        count = len(rc[desc][1].get_methods())
        out.append(Change(category="class", change="added", name=java_name(desc), detail=f"{count} methods"))
    for i, desc in enumerate(sorted(set(lc) & set(rc))):
        if i % 200 == 0:
            ctx.check("comparing classes")
        a, b = lc[desc][1], rc[desc][1]
        am = {method_id(desc, m.get_name(), m.get_descriptor()): m for m in a.get_methods()}
        bm = {method_id(desc, m.get_name(), m.get_descriptor()): m for m in b.get_methods()}
        methods: list[Change] = [Change(category="method", change="removed", name=m) for m in sorted(set(am) - set(bm))]
        methods += [Change(category="method", change="added", name=m) for m in sorted(set(bm) - set(am))]
        for mid in sorted(set(am) & set(bm)):
            if _method_digest(am[mid]) != _method_digest(bm[mid]):
                methods.append(
                    Change(category="method", change="changed", name=mid, detail=_first_difference(am[mid], bm[mid]))
                )
        shape = _class_shape(a) != _class_shape(b)
        if methods or shape:
            tally = {k: sum(1 for m in methods if m.change == k) for k in ("added", "removed", "changed")}
            words = [f"{n} method(s) {k}" for k, n in tally.items() if n]
            if shape:
                words.insert(0, "declaration or fields changed")
            out.append(Change(category="class", change="changed", name=java_name(desc), detail="; ".join(words)))
        out += methods
    return out


def _keyed(
    category: ChangeCategory, left: Mapping[str, T], right: Mapping[str, T], show: Callable[[T], str] = str
) -> list[Change]:
    out = [
        Change(category=category, change="removed", name=k, before=show(left[k]))
        for k in sorted(set(left) - set(right))
    ]
    out += [
        Change(category=category, change="added", name=k, after=show(right[k])) for k in sorted(set(right) - set(left))
    ]
    return out


def compare(left: loader.Loaded, right: loader.Loaded, args: Arguments, ctx: CallContext) -> PackageComparison:
    lf, rf = Facts(left, ctx), Facts(right, ctx)
    changes: list[Change] = []
    for field in [*MANIFEST_FIELDS, *sorted((set(lf.manifest) | set(rf.manifest)) - set(MANIFEST_FIELDS))]:
        a, b = lf.manifest.get(field), rf.manifest.get(field)
        if a != b:
            changes.append(Change(category="manifest", change="changed", name=field, before=a, after=b))
    changes += _keyed("permission", lf.permissions, rf.permissions)
    for name in sorted(set(lf.permissions) & set(rf.permissions)):
        if lf.permissions[name] != rf.permissions[name]:
            changes.append(
                Change(
                    category="permission",
                    change="changed",
                    name=name,
                    before=lf.permissions[name],
                    after=rf.permissions[name],
                )
            )
    changes += _keyed("component", lf.components, rf.components, lambda c: c.kind)
    for name in sorted(set(lf.components) & set(rf.components)):
        diff = _component_diff(lf.components[name], rf.components[name])
        if diff:
            changes.append(Change(category="component", change="changed", name=name, detail=diff))
    with loader.guarded("the DEX code"):
        changes += _code(left, right, ctx)
    changes += _keyed("native-library", lf.libraries, rf.libraries, lambda v: f"{v[0]} bytes")
    for path in sorted(set(lf.libraries) & set(rf.libraries)):
        (sa, ca), (sb, cb) = lf.libraries[path], rf.libraries[path]
        if (sa, ca) != (sb, cb):
            changes.append(
                Change(
                    category="native-library",
                    change="changed",
                    name=path,
                    before=f"{sa} bytes, crc32 {ca:08x}",
                    after=f"{sb} bytes, crc32 {cb:08x}",
                )
            )
    changes += _keyed("signing", lf.certificates, rf.certificates)
    if lf.schemes != rf.schemes:
        changes.append(
            Change(category="signing", change="changed", name="schemes", before=lf.schemes, after=rf.schemes)
        )
    summary = {
        c: ChangeCounts(
            **{k: sum(1 for x in changes if x.category == c and x.change == k) for k in ("added", "removed", "changed")}
        )
        for c in CATEGORIES
    }
    if category := arg_str(args, "category"):
        changes = [c for c in changes if c.category == category]
    if change := arg_str(args, "change"):
        changes = [c for c in changes if c.change == change]
    offset, limit = arg_int(args, "offset", 0), arg_int(args, "limit", 100)
    check_offset(offset, len(changes))
    return PackageComparison(
        schema_version=SCHEMA_VERSION,
        left=lf.label(),
        right=rf.label(),
        summary={c: n for c, n in summary.items() if n != ChangeCounts()},
        changes=changes[offset : offset + limit],
        page=page(len(changes), offset, limit),
    )
