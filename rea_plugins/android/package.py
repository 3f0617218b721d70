"""inspect_android_package: manifest, signing, DEX, native-library and resource facts of one application."""

from __future__ import annotations

import re
from typing import Any

import msgspec

from rea.plugin import Paged
from rea_plugins.android import loader
from rea_plugins.android.model import SCHEMA_VERSION
from rea_plugins.android.model import Certificate
from rea_plugins.android.model import Component
from rea_plugins.android.model import DeclaredPermission
from rea_plugins.android.model import DexFile
from rea_plugins.android.model import IntentFilter
from rea_plugins.android.model import NativeLibrary
from rea_plugins.android.model import Package
from rea_plugins.android.model import Resources
from rea_plugins.android.model import Signing
from rea_plugins.android.model import page

NS = "{http://schemas.android.com/apk/res/android}"
COMPONENT_TAGS = {
    "activity": "activity",
    "activity-alias": "activity-alias",
    "service": "service",
    "receiver": "receiver",
    "provider": "provider",
}
NATIVE_LIB = re.compile(r"^(?:[^/]+/)?lib/([^/]+)/([^/]+\.so)$")
MAIN_ACTION = "android.intent.action.MAIN"
LAUNCHER = "android.intent.category.LAUNCHER"
# Without android:exported, a provider is exported below API 17; other components when they have a filter.
PROVIDER_EXPORT_DEFAULT_BELOW = 17


def class_name(package: str | None, name: str) -> str:
    """A manifest component name as a fully qualified class name (``.Main`` and ``Main`` are relative)."""
    if package and name.startswith("."):
        return package + name
    if package and "." not in name:
        return f"{package}.{name}"
    return name


def _bool(value: str | None) -> bool | None:
    if value is None:
        return None
    return value.strip().lower() in ("true", "1", "0xffffffff", "-1")


def _filters(node: Any) -> list[IntentFilter]:
    out = []
    for filt in node.findall("intent-filter"):
        actions = sorted({a.get(NS + "name", "") for a in filt.findall("action")} - {""})
        categories = sorted({c.get(NS + "name", "") for c in filt.findall("category")} - {""})
        data = sorted(
            {
                ";".join(f"{k[len(NS) :]}={v}" for k, v in sorted(d.attrib.items()) if k.startswith(NS))
                for d in filt.findall("data")
            }
            - {""}
        )
        out.append(IntentFilter(actions=actions, categories=categories, data=data))
    return out


def components(apk: Any, target_sdk: int | None) -> list[Component]:
    """Every manifest component with its effective exported state and intent filters."""
    manifest = apk.get_android_manifest_xml()
    app = manifest.find("application") if manifest is not None else None
    if app is None:
        return []
    package = apk.get_package() or None
    out = []
    for node in app:
        kind = COMPONENT_TAGS.get(node.tag) if isinstance(node.tag, str) else None
        if kind is None:
            continue
        name = class_name(package, node.get(NS + "name", ""))
        filters = _filters(node)
        declared = _bool(node.get(NS + "exported"))
        if declared is not None:
            exported = declared
        elif kind == "provider":
            exported = target_sdk is not None and target_sdk < PROVIDER_EXPORT_DEFAULT_BELOW
        else:
            exported = bool(filters)
        main = kind in ("activity", "activity-alias") and any(
            MAIN_ACTION in f.actions and LAUNCHER in f.categories for f in filters
        )
        target = node.get(NS + "targetActivity")
        out.append(
            Component(
                kind=kind,  # type: ignore[arg-type]
                name=name,
                exported=exported,
                exported_declared=declared is not None,
                permission=node.get(NS + "permission"),
                main=main,
                intent_filters=filters,
                target_activity=class_name(package, target) if target else None,
                authorities=node.get(NS + "authorities"),
            )
        )
    return sorted(out, key=lambda c: (c.kind, c.name))


def _time(value: Any) -> str:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def signing(apk: Any) -> Signing:
    schemes = {
        "v1": bool(apk.is_signed_v1()),
        "v2": bool(apk.is_signed_v2()),
        "v3": bool(apk.is_signed_v3()),
        "v31": bool(apk.is_signed_v31()),
    }
    found: dict[str, tuple[list[str], Any]] = {}
    by_scheme = {
        "v1": apk.get_certificates_v1,
        "v2": apk.get_certificates_v2,
        "v3": apk.get_certificates_v3,
        "v31": apk.get_certificates_v31,
    }
    for scheme, getter in by_scheme.items():
        if not schemes[scheme]:
            continue
        with loader.guarded(f"the {scheme} signature", scheme=scheme):
            certs = getter()
        for cert in certs:
            if cert is None:
                continue
            found.setdefault(cert.sha256.hex(), ([], cert))[0].append(scheme)
    certificates = [
        Certificate(
            schemes=schemes_,
            subject=cert.subject.human_friendly,
            issuer=cert.issuer.human_friendly,
            serial=format(cert.serial_number, "x"),
            sha256=digest,
            not_before=_time(cert.not_valid_before),
            not_after=_time(cert.not_valid_after),
        )
        for digest, (schemes_, cert) in sorted(found.items())
    ]
    words = []
    if not any(schemes.values()):
        words.append("Unsigned: no v1, v2 or v3 signature; Android refuses to install it.")
    if schemes["v1"]:
        words.append(
            "v1 (JAR): "
            + (
                "the signer verifies against its .SF file; the per-entry digests of MANIFEST.MF were not checked."
                if any("v1" in s for s, _ in found.values())
                else "signature files are present but no signer verified against its .SF."
            )
        )
    for scheme in ("v2", "v3", "v31"):
        if schemes[scheme]:
            words.append(
                f"{scheme}: the APK Signing Block holds a {scheme} signer, parsed and its certificate read; "
                "its content digests and signature were not verified here (apksigner verify does)."
            )
    return Signing(schemes=schemes, certificates=certificates, verification=words)


def resources(apk: Any, loaded: loader.Loaded) -> Resources | None:
    files = sum(1 for n in loaded.entries if n.startswith("res/"))
    if "resources.arsc" not in loaded.entries:
        return Resources(packages=[], types={}, files=files) if files else None
    with loader.guarded("resources.arsc", entry="resources.arsc"):
        table = apk.get_android_resources()
        packages = sorted(table.get_packages_names()) if table is not None else []
        if packages:
            table._analyse()  # the per-type values are filled lazily, by the first typed lookup
        ids: dict[int, str] = {}
        for pkg in packages:
            for locale in table.values.get(pkg, {}).values():
                for kind, _name, rid in locale.get("public", []):
                    ids.setdefault(rid, kind)
    types: dict[str, int] = {}
    for kind in ids.values():
        types[kind] = types.get(kind, 0) + 1
    return Resources(packages=packages, types=dict(sorted(types.items())), files=files)


def dex_files(loaded: loader.Loaded) -> list[DexFile]:
    out = []
    for name, dex in loaded.dexes:
        with loader.guarded(name, dex=name):
            size, digest = loaded.dex_digests[name]
            out.append(
                DexFile(
                    name=name,
                    bytes=size,
                    sha256=digest,
                    classes=len(dex.get_classes()),
                    methods=len(dex.get_encoded_methods()),
                    fields=len(dex.get_encoded_fields()),
                    strings=len(dex.get_strings()),
                )
            )
    return out


def native_libraries(loaded: loader.Loaded) -> list[NativeLibrary]:
    out = []
    for name, size in loaded.entries.items():
        m = NATIVE_LIB.match(name)
        if m and (loaded.kind == "aab" or not name.startswith(("base/", "/"))) and name.count("/") <= 3:
            out.append(NativeLibrary(abi=m.group(1), path=name, bytes=size))
    return sorted(out, key=lambda n: (n.abi, n.path))


def _window(rows: list[Any], offset: int, limit: int) -> tuple[list[Any], Paged]:
    return rows[offset : offset + limit], page(len(rows), offset, limit)


def _text(value: Any) -> str | None:
    # androguard renders an absent attribute as the string 'None'.
    return None if value is None or str(value) in ("", "None") else str(value)


def _fact(value: Any) -> str | None:
    """A manifest fact as androguard answers it (an int, a string, None), as text; empty is absent."""
    return str(value) if value is not None and str(value) != "" else None


def _int(value: Any) -> int | None:
    text = str(value) if value is not None else ""
    return int(text) if text.isdigit() else None


def protection(level: str | None) -> list[str]:
    """A protectionLevel as words: its base (normal, dangerous, signature ...) then each flag, in androguard's names."""
    from androguard.core.apk import protection_flags_to_attributes as names  # type: ignore[import-untyped]

    if level is None:
        return []
    try:
        value = int(level, 0)
    except ValueError:
        return [level]  # already a word (an older aapt wrote the names)
    words = [names.get(f"0x{value & 0xF:08x}", f"base 0x{value & 0xF:x}")]
    bit = 0x10
    while bit <= value:
        if value & bit:
            words.append(names.get(f"0x{bit:08x}", f"flag 0x{bit:x}"))
        bit <<= 1
    return words


def debuggable(apk: Any) -> bool | None:
    manifest = apk.get_android_manifest_xml()
    app = manifest.find("application") if manifest is not None else None
    return _bool(app.get(NS + "debuggable")) if app is not None else None


def inspect(loaded: loader.Loaded, offset: int, limit: int) -> Package:
    """The package facts; components, permissions and native libraries are paged with offset/limit."""
    pages: dict[str, Paged] = {}
    libs, pages["native_libraries"] = _window(native_libraries(loaded), offset, limit)
    base = Package(
        schema_version=SCHEMA_VERSION,
        input_kind=loaded.kind,
        dex=dex_files(loaded),
        native_libraries=libs,
        entries=len(loaded.entries),
        pages=pages,
    )
    apk = loaded.apk
    if apk is None or loaded.kind != "apk":
        if loaded.kind == "aab":
            files = sum(1 for n in loaded.entries if "/res/" in n)
            return msgspec.structs.replace(base, resources=Resources(packages=[], types={}, files=files))
        return base
    with loader.guarded("AndroidManifest.xml (binary XML)", entry="AndroidManifest.xml"):
        target_sdk = apk.get_target_sdk_version()
        comps = components(apk, _int(target_sdk))
        main = apk.get_main_activity()
        declared = [
            DeclaredPermission(name=name, protection_level=level, protection=protection(level))
            for name, details in sorted(apk.get_declared_permissions_details().items())
            for level in [_text((details or {}).get("protectionLevel"))]
        ]
        max_sdk = {name: str(sdk) for name, sdk in apk.uses_permissions if name and sdk is not None}
        package = _fact(apk.get_package() or None)
        version_code, version_name = _fact(apk.get_androidversion_code()), _fact(apk.get_androidversion_name())
        min_sdk, max_sdk_version = _fact(apk.get_min_sdk_version()), _fact(apk.get_max_sdk_version())
        compile_sdk = _fact(apk.get_attribute_value("manifest", "compileSdkVersion"))
        permissions = sorted(set(apk.get_permissions()))
    comps_page, pages["components"] = _window(comps, offset, limit)
    perms_page, pages["permissions"] = _window(permissions, offset, limit)
    return msgspec.structs.replace(
        base,
        package=package,
        version_code=version_code,
        version_name=version_name,
        min_sdk=min_sdk,
        target_sdk=_fact(target_sdk),
        compile_sdk=compile_sdk,
        max_sdk=max_sdk_version,
        main_activity=main,
        debuggable=debuggable(apk),
        permissions=perms_page,
        permission_max_sdk=dict(sorted(max_sdk.items())),
        declared_permissions=declared,
        components=comps_page,
        signing=signing(apk),
        resources=resources(apk, loaded),
        pages=pages,  # with the components' and permissions' pages added
    )
