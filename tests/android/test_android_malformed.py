"""Hostile APKs and DEX files: malformed binary XML, bad DEX offsets and sizes, bombs, duplicates: typed errors."""

from __future__ import annotations

import random
import re
import struct
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea_plugins.android import loader

TOOLS_ON = (
    {"tool": "inspect_android_package"},
    {"tool": "search_android_classes", "pattern": "a", "scope": "strings"},
    {"tool": "inspect_android_class", "class_name": "com.example.rea.Greeter"},
    {"tool": "inspect_android_method", "class_name": "com.example.rea.MainActivity", "method": "onCreate"},
    {"tool": "trace_android_references", "string": "ReaFixture"},
    {"tool": "project_android_application_graph"},
)
# What an error message must never show: an exception's name or text, a traceback.
LEAK = re.compile(r"Traceback|Error\b|Exception|\[Errno|struct\.|object has no attribute|index out of range")


def _rewrite(apk: Path, out: Path, replace: dict[str, bytes], extra: tuple[tuple[str, bytes], ...] = ()) -> Path:
    with zipfile.ZipFile(apk) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, replace.get(info.filename, src.read(info.filename)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zipfile warns on the duplicate names these tests write on purpose
            for name, data in extra:
                dst.writestr(name, data)
    return out


def _typed(session: Session, path: Path, args: dict[str, Any]) -> ReaError | None:
    """Run one tool; None when it succeeded, else its ReaError (which must be clean)."""
    call = {k: v for k, v in args.items() if k != "tool"}
    try:
        call_tool(session, args["tool"], {"path": str(path), **call})
    except ReaError as err:
        assert err.code in ("unsupported_target", "resource_constraint", "invalid_request"), (err.code, err.message)
        assert not LEAK.search(err.message) and err.remediation, err.message
        return err
    return None


def _refused(session: Session, path: Path, code: str = "unsupported_target") -> ReaError:
    err = _typed(session, path, {"tool": "inspect_android_package"})
    assert err is not None and err.code == code, path.name
    return err


def test_malformed_binary_xml_manifests(rea_session: Session, apk: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(apk) as zf:
        manifest = zf.read("AndroidManifest.xml")
    cases = {
        "garbage": bytes(random.Random(1).randrange(256) for _ in range(600)),
        "cut": manifest[: len(manifest) // 2],
        "header-only": manifest[:8],
        "empty": b"",
        "text-xml": b"<?xml version='1.0'?><manifest package='x'/>",
    }
    for name, data in cases.items():
        bad = _rewrite(apk, tmp_path / f"{name}.apk", {"AndroidManifest.xml": data})
        err = _refused(rea_session, bad)
        assert "AndroidManifest.xml" in err.message, (name, err.message)


def _checksummed(dex: bytes) -> bytes:
    return dex[:8] + struct.pack("<I", zlib.adler32(dex[12:])) + dex[12:]


def _dex_with(dex: bytes, offset: int, value: int) -> bytes:
    return _checksummed(dex[:offset] + struct.pack("<I", value) + dex[offset + 4 :])


def test_dex_with_bad_offsets_and_huge_sizes(rea_session: Session, dex: Path, tmp_path: Path) -> None:
    raw = dex.read_bytes()
    cases = {
        "file-size": (0x20, 0xFFFFFFFF),
        "string-ids-size": (0x38, 0x7FFFFFFF),
        "string-ids-off": (0x3C, 0xFFFFFF00),
        "method-ids-off": (0x5C, len(raw) - 4),
        "class-defs-size": (0x60, 0x10000000),
        "map-off": (0x34, len(raw) + 100),
        "data-size": (0x68, 0xFFFFFFF0),
    }
    for name, (offset, value) in cases.items():
        bad = tmp_path / f"{name}.dex"
        bad.write_bytes(_dex_with(raw, offset, value))
        err = _refused(rea_session, bad)
        assert "classes.dex" in err.message or name in err.message or bad.name in err.message, err.message
    unsummed = tmp_path / "unsummed.dex"
    unsummed.write_bytes(raw[:8] + b"\0\0\0\0" + raw[12:])
    assert "checksum" in _refused(rea_session, unsummed).message
    short = tmp_path / "short.dex"
    short.write_bytes(raw[:0x40])
    _refused(rea_session, short)


def test_string_data_past_the_end_is_refused_not_looped(rea_session: Session, dex: Path, tmp_path: Path) -> None:
    """A map item declaring more strings than the bytes hold: androguard's string reader would loop forever."""
    raw = dex.read_bytes()
    (map_off,) = struct.unpack_from("<I", raw, 0x34)
    (count,) = struct.unpack_from("<I", raw, map_off)
    items = [struct.unpack_from("<HHII", raw, map_off + 4 + 12 * i) for i in range(count)]
    (at,) = [i for i, item in enumerate(items) if item[0] == 0x2002]
    bad = tmp_path / "strings-past-end.dex"
    bad.write_bytes(_dex_with(raw, map_off + 4 + 12 * at + 4, 0x7FFFFFFF))
    assert "string data runs past its end" in _refused(rea_session, bad).message


def test_dex_interior_mutations_are_answered_or_typed(rea_session: Session, dex: Path, tmp_path: Path) -> None:
    """Byte flips past the header: every tool either answers or fails typed, without leaking exception text."""
    raw = dex.read_bytes()
    rng = random.Random(29)
    outcomes = {"ok": 0, "typed": 0}
    for i in range(12):
        data = bytearray(raw)
        for _ in range(8):
            data[rng.randrange(0x70, len(data))] = rng.randrange(256)
        path = tmp_path / f"flip{i}.dex"
        path.write_bytes(_checksummed(bytes(data)))
        for args in TOOLS_ON:
            outcomes["typed" if _typed(rea_session, path, args) else "ok"] += 1
    assert sum(outcomes.values()) == 12 * len(TOOLS_ON)


def test_inflation_bombs_are_bounded(
    rea_session: Session, apk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loader, "MAX_ENTRY_BYTES", 1 << 20)
    loader.clear_cache()
    declared = _rewrite(apk, tmp_path / "declared.apk", {"resources.arsc": bytes(4 << 20)})
    err = _refused(rea_session, declared, "resource_constraint")
    assert err.details["entry"] == "resources.arsc"
    # The same bomb declaring a tiny size: inflation itself stops at the bound.
    data = bytearray(declared.read_bytes())
    with zipfile.ZipFile(declared) as zf:
        info = zf.getinfo("resources.arsc")
    central = next(
        m.start()
        for m in re.finditer(b"PK\x01\x02", data)
        if data[m.start() + 46 : m.start() + 46 + len(b"resources.arsc")] == b"resources.arsc"
    )
    for at in (info.header_offset + 22, central + 24):
        data[at : at + 4] = struct.pack("<I", 100)
    lying = tmp_path / "lying.apk"
    lying.write_bytes(bytes(data))
    lied = _typed(rea_session, lying, {"tool": "inspect_android_package"})
    assert lied is not None
    assert lied.code == "resource_constraint", lied.message


def test_duplicate_and_missing_entries(rea_session: Session, apk: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(apk) as zf:
        dex = zf.read("classes.dex")
    dup = _rewrite(apk, tmp_path / "dup.apk", {}, (("classes.dex", dex[:200]),))
    err = _refused(rea_session, dup)
    assert err.details["duplicates"] == ["classes.dex"]
    dup_manifest = _rewrite(apk, tmp_path / "dup-manifest.apk", {}, (("AndroidManifest.xml", b"\0" * 64),))
    assert _refused(rea_session, dup_manifest).details["duplicates"] == ["AndroidManifest.xml"]
    no_manifest = tmp_path / "plain.zip"
    with zipfile.ZipFile(no_manifest, "w") as zf:
        zf.writestr("classes.dex", dex)
    assert "AndroidManifest.xml" in _refused(rea_session, no_manifest).message
    cut = tmp_path / "cut.apk"
    cut.write_bytes(apk.read_bytes()[: apk.stat().st_size // 2])
    _refused(rea_session, cut)
