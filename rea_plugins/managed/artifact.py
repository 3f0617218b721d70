"""inspect_managed_artifact: identity, runtime, CLI flags, tables, references, resources, custom attributes."""

from __future__ import annotations

import hashlib
from typing import Any
from typing import Literal

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import ToolCall
from rea_plugins.managed import common
from rea_plugins.managed import reader
from rea_plugins.managed import signatures
from rea_plugins.managed import sites
from rea_plugins.managed.model import ARTIFACT_OPERATION
from rea_plugins.managed.model import SCHEMA_VERSION
from rea_plugins.managed.model import ArtifactResult
from rea_plugins.managed.model import Attribute
from rea_plugins.managed.model import CliFlags
from rea_plugins.managed.model import Identity
from rea_plugins.managed.model import Reference
from rea_plugins.managed.model import Resource
from rea_plugins.managed.model import Runtime
from rea_plugins.managed.reader import Image

_ASSEMBLY_FLAGS = (
    (0x1, "public-key"),
    (0x100, "retargetable"),
    (0x4000, "disable-jit-optimizer"),
    (0x8000, "enable-jit-tracking"),
)
TARGET_FRAMEWORK = "System.Runtime.Versioning.TargetFrameworkAttribute"


def _version(row: Any) -> str:
    return ".".join(
        str(int(getattr(row, f) or 0)) for f in ("MajorVersion", "MinorVersion", "BuildNumber", "RevisionNumber")
    )


def _key_bytes(image: Image, row: Any, table: str, attr: str) -> bytes:
    return image.blob(row, attr, table) or b""


def identity(image: Image) -> Identity | None:
    rows = image.rows("Assembly")
    if not rows:
        return None
    row = rows[0]
    flags = int(row.struct.Flags)
    return Identity(
        name=image.text(row, "Name", "Assembly"),
        version=_version(row),
        culture=image.text(row, "Culture", "Assembly") or "neutral",
        public_key_token=reader.public_key_token(_key_bytes(image, row, "Assembly", "PublicKey")),
        flags=[word for bit, word in _ASSEMBLY_FLAGS if flags & bit],
    )


def references(image: Image) -> list[Reference]:
    out = [
        Reference(
            kind="assembly",
            name=image.text(r, "Name", "AssemblyRef"),
            version=_version(r),
            culture=image.text(r, "Culture", "AssemblyRef") or "neutral",
            public_key_token=reader.public_key_token(_key_bytes(image, r, "AssemblyRef", "PublicKey")),
        )
        for r in image.rows("AssemblyRef")
    ]
    out.extend(Reference(kind="module", name=image.text(r, "Name", "ModuleRef")) for r in image.rows("ModuleRef"))
    return out


def resources(image: Image) -> list[Resource]:
    embedded: dict[str, bytes] = {}
    for res in image.net.resources or []:
        data = res.data if isinstance(res.data, bytes) else None
        name = res.name.value if hasattr(res.name, "value") else str(res.name)
        if data is not None:
            embedded[str(name)] = data
    out = []
    for row in image.rows("ManifestResource"):
        name = image.text(row, "Name", "ManifestResource")
        visibility: Literal["public", "private"] = "public" if int(row.struct.Flags) & 7 == 1 else "private"
        data = embedded.get(name)
        linked = reader._rid(row.Implementation) != 0
        out.append(
            Resource(
                name=name,
                visibility=visibility,
                location="linked" if linked else "embedded",
                size=len(data) if data is not None else None,
                sha256=hashlib.sha256(data).hexdigest() if data is not None else None,
            )
        )
    return out


def _parent(image: Image, index: Any) -> str:
    table, rid = reader._table_name(index), reader._rid(index)
    if table == "Assembly":
        return "assembly"
    if table == "Module":
        return "module"
    if table in ("TypeDef", "TypeRef", "TypeSpec"):
        return image.index_type(index) or "?"
    if table == "MethodDef":
        return image.method_key(rid)
    if table == "Field":
        return image.field_key(rid)
    return f"{table or '?'} {rid}"


def attributes(image: Image) -> list[Attribute]:
    out = []
    for row in image.rows("CustomAttribute"):
        ctor = row.Type
        table, rid = reader._table_name(ctor), reader._rid(ctor)
        if table == "MemberRef":
            key = image.member_ref(rid)[0]
            mr = image.row("MemberRef", rid)
            sig = image.blob(mr, "Signature", "MemberRef") if mr is not None else None
        else:
            key = image.method_key(rid)
            md = image.row("MethodDef", rid)
            sig = image.blob(md, "Signature", "MethodDef") if md is not None else None
        type_name = key.split("::", 1)[0]
        value = image.blob(row, "Value", "CustomAttribute")
        params = signatures.param_codes(sig, image.coded_type) if sig is not None else None
        decoded = (
            signatures.attribute_value(value, params, image.limits["max_heap_item_bytes"], image.enum_info)
            if value is not None and params is not None
            else None
        )
        out.append(
            Attribute(
                parent=_parent(image, row.Parent),
                type=type_name,
                arguments=list(decoded[0]) if decoded else None,
                named=dict(decoded[1]) if decoded else None,
            )
        )
    return out


def cli_flags(image: Image) -> CliFlags:
    flags = int(image.net.struct.Flags)
    return CliFlags(
        il_only=bool(flags & 0x1),
        requires_32bit=bool(flags & 0x2),
        prefers_32bit=bool(flags & 0x20000),
        strong_name_signed=bool(flags & 0x8),
        native_entry_point=bool(flags & 0x10),
    )


def entry_point(image: Image) -> str | None:
    token = int(image.net.struct.EntryPointTokenOrRva)
    if not token or int(image.net.struct.Flags) & 0x10:
        return None
    return image.token_name(token)


def build(image: Image, args: Arguments) -> ArtifactResult:
    attrs = attributes(image)
    framework = next(
        (
            a.arguments[0]
            for a in attrs
            if a.type == TARGET_FRAMEWORK and a.arguments and isinstance(a.arguments[0], str)
        ),
        None,
    )
    mods = image.rows("Module")
    struct = image.net.struct
    version = image.net.metadata.struct.Version
    meta_version = version.rstrip(b"\x00").decode("ascii", "replace") if isinstance(version, bytes) else str(version)
    mvid = getattr(mods[0], "Mvid", None) if mods else None
    return ArtifactResult(
        schema_version=SCHEMA_VERSION,
        identity=identity(image),
        module=image.text(mods[0], "Name", "Module") if mods else "",
        mvid=str(mvid) if mvid is not None else None,
        runtime=Runtime(
            metadata_version=meta_version,
            cli_header_version=f"{struct.MajorRuntimeVersion}.{struct.MinorRuntimeVersion}",
            target_framework=framework,
        ),
        cli_flags=cli_flags(image),
        entry_point=entry_point(image),
        tables={t.name: int(t.num_rows) for t in image.md.tables_list if t.num_rows},
        references=common.paged(references(image), args, "reference", 100),
        resources=common.paged(resources(image), args, "resource", 100),
        attributes=common.paged(attrs, args, "attribute", 100),
    )


@common.guarded
def handle(call: ToolCall) -> Evidence:
    with sites.opened(call) as (target, image, _):
        result = build(image, call.args)
    call.ctx.finish(f"read {result.module}")
    return common.static_evidence(call, ARTIFACT_OPERATION, target, result)
