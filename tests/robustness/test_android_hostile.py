"""Hostile APKs and DEX files through one ``rea serve``: every reply is a result or a canonical typed error.

Mutated from the APK the Android tests build from smali sources (fixed seed): binary-XML manifests flipped and
cut, DEX header fields set to hostile values, DEX bodies flipped and cut, an inflation bomb, duplicate entries.
"""

from __future__ import annotations

import io
import random
import struct
import warnings
import zipfile
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.android import androidfixtures
from tests.robustness import runner
from tests.robustness.server import Server

SEED = 29
DEADLINE_S = 60
TOOLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("inspect_android_package", {}),
    ("search_android_classes", {"pattern": "e", "scope": "strings"}),
    ("inspect_android_method", {"class_name": "com.example.rea.MainActivity", "method": "onCreate"}),
    (
        "trace_android_references",
        {
            "class_name": "com.example.rea.Greeter",
            "member": "greet",
            "descriptor": "(I)Ljava/lang/String;",
            "direction": "both",
            "max_depth": 3,
        },
    ),
    ("project_android_application_graph", {}),
)
# Header words of a DEX (offsets) that size or locate something.
DEX_FIELDS = tuple(range(0x20, 0x70, 4))
HOSTILE_WORDS = (0, 1, 0x70, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFF0)


def _zip(entries: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are written on purpose
        for name, data in entries:
            zf.writestr(name, data)
    return buf.getvalue()


def _checksummed(dex: bytes) -> bytes:
    """``dex`` with its Adler-32 recomputed, so the damage reaches the parser instead of the checksum test."""
    return dex[:8] + struct.pack("<I", zlib.adler32(dex[12:])) + dex[12:]


def _cases(apk: bytes) -> dict[str, bytes]:
    rng = random.Random(SEED)
    with zipfile.ZipFile(io.BytesIO(apk)) as zf:
        entries = [(i.filename, zf.read(i.filename)) for i in zf.infolist()]
    files = dict(entries)
    manifest, dex = files["AndroidManifest.xml"], files["classes.dex"]

    def with_entry(name: str, data: bytes) -> bytes:
        return _zip([(n, data if n == name else d) for n, d in entries])

    out: dict[str, bytes] = {}
    for i in range(20):
        buf = bytearray(manifest)
        for _ in range(rng.randrange(1, 12)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        out[f"manifest-flip-{i}.apk"] = with_entry("AndroidManifest.xml", bytes(buf))
    for i in range(6):
        out[f"manifest-cut-{i}.apk"] = with_entry("AndroidManifest.xml", manifest[: rng.randrange(len(manifest))])
    for at in DEX_FIELDS:
        value = rng.choice(HOSTILE_WORDS)
        out[f"dex-field-{at:#x}.dex"] = _checksummed(dex[:at] + struct.pack("<I", value) + dex[at + 4 :])
    for i in range(25):
        buf = bytearray(dex)
        for _ in range(rng.randrange(1, 16)):
            buf[rng.randrange(0x70, len(buf))] = rng.randrange(256)
        out[f"dex-flip-{i}.dex"] = _checksummed(bytes(buf))
        if i < 6:
            out[f"apk-dex-flip-{i}.apk"] = with_entry("classes.dex", _checksummed(bytes(buf)))
    out["dex-bad-checksum.dex"] = dex[:8] + b"\0\0\0\0" + dex[12:]
    for i in range(6):
        out[f"dex-cut-{i}.dex"] = dex[: rng.randrange(len(dex))]
    out["empty.dex"] = b""
    out["magic-only.dex"] = b"dex\n035\x00" + bytes(rng.randrange(256) for _ in range(200))
    out["duplicate-dex.apk"] = _zip([*entries, ("classes.dex", dex[:100])])
    out["duplicate-manifest.apk"] = _zip([*entries, ("AndroidManifest.xml", manifest)])
    out["no-manifest.apk"] = _zip([(n, d) for n, d in entries if n != "AndroidManifest.xml"])
    out["cut.apk"] = apk[: len(apk) // 2]
    # 300 MiB of zeros is a few hundred KiB deflated: the declared size alone exceeds the entry bound.
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, data in entries:
            if name != "resources.arsc":
                zf.writestr(name, data)
        with zf.open("resources.arsc", "w", force_zip64=True) as fh:
            chunk = bytes(1 << 20)
            for _ in range(300):
                fh.write(chunk)
    out["bomb.apk"] = bomb.getvalue()
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    build = tmp_path_factory.mktemp("android-build")
    apk = androidfixtures.build_apk(build)
    root = tmp_path_factory.mktemp("android-hostile")
    for name, data in _cases(apk.read_bytes()).items():
        (root / name).write_bytes(data)
    return root


def test_hostile_android_inputs_through_one_server(corpus: Path, tmp_path: Path) -> None:
    server = Server.under(tmp_path)
    outcomes: Counter[str] = Counter()
    problems: list[str] = []
    try:
        for path in sorted(corpus.iterdir()):
            # compare_android_packages reads two packages: the hostile one on each side of itself.
            calls = [(tool, {"path": str(path), **args}) for tool, args in TOOLS]
            calls.append(("compare_android_packages", {"left_path": str(path), "right_path": str(path)}))
            for tool, call_args in calls:
                outcome = runner.judge(server.call(tool, call_args, DEADLINE_S), f"{path.name} {tool}", problems)
                if outcome is not None:
                    outcomes[outcome] += 1
        # The plugin starts no process; anything here is the kernel's own (bounded like the main suite's).
        assert len(server.children()) <= runner.MAX_CHILDREN, server.children()
        runner.REPORT.append(
            f"android hostile: {sum(outcomes.values())} calls over "
            f"{len(list(corpus.iterdir()))} files: {dict(sorted(outcomes.items()))}; "
            f"peak RSS {server.peak_rss_kib() // 1024} MiB"
        )
    finally:
        server.close()
    assert not problems, "\n".join(problems[:30])
    assert set(outcomes) <= {"ok", "unsupported_target", "resource_constraint", "invalid_request"}, outcomes
