"""recover_javascript_sources: an esbuild bundle built in the session, split back into its modules by Wakaru (npm
@wakaru/cli, installed once into tests/.fixtures/npm-wakaru) running sandboxed, each module matched to its source
through the byte ranges it came from."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import appfixtures
import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests import toolchains

ROOT = Path(__file__).resolve().parents[1] / ".fixtures" / "npm-wakaru"
WAKARU = ROOT / "node_modules" / "@wakaru" / "cli-linux-x64" / "wakaru"
PACKAGE = "@wakaru/cli@1.12.0"
SOURCES = {
    "src/main.cjs": 'const { helper } = require("./helper.cjs");\n'
    'const { fmt } = require("./fmt.cjs");\n'
    "console.log(fmt(helper(2)));\n",
    "src/helper.cjs": "exports.helper = function (x) { return x * 21; };\n",
    "src/fmt.cjs": 'exports.fmt = function (v) { return "value=" + v; };\n',
}

# A line of each source the bundle keeps as it is: the module whose ranges hold it is that source's.
MARKERS = {
    "src/main.cjs": b"console.log(fmt(helper(2)))",
    "src/helper.cjs": b"return x * 21",
    "src/fmt.cjs": b'return "value=" + v',
}


@pytest.fixture(scope="session")
def wakaru(npm_tools: None) -> Path:
    if not WAKARU.exists():
        ROOT.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(ROOT), PACKAGE],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0 or not WAKARU.exists():
            toolchains.unavailable(f"npm install of {PACKAGE} failed: {proc.stderr[-400:]}")
    return WAKARU


@pytest.fixture(scope="session")
def bundles(npm_tools: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recover")
    for rel, text in SOURCES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for name, flags in (("plain.js", ()), ("minified.js", ("--minify",))):
        subprocess.run(
            [
                str(appfixtures.esbuild_tool("esbuild")),
                "src/main.cjs",
                "--bundle",
                "--format=iife",
                f"--outfile=dist/{name}",
                "--log-level=error",
                *flags,
            ],
            cwd=root,
            check=True,
            capture_output=True,
            timeout=120,
        )
    return root / "dist"


def test_an_esbuild_bundle_is_split_into_its_modules(
    rea_session: Session, wakaru: Path, bundles: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REA_WAKARU_PATH", str(wakaru))
    bundle = bundles / "plain.js"
    data = bundle.read_bytes()
    out = result_of(rea_session, "recover_javascript_sources", {"input_path": str(bundle)})
    directory = Path(out["output_directory"])
    try:
        assert out["format"] == "esbuild" and out["unbundler"]["version"] == "1.12.0"
        assert out["input_sha256"] == hashlib.sha256(data).hexdigest()
        modules = {m["path"]: m for m in out["modules"]}
        assert set(SOURCES) <= set(modules)
        for rel, source in SOURCES.items():
            module = modules[rel]
            written = (directory / rel).read_bytes()
            assert module["sha256"] == hashlib.sha256(written).hexdigest() and module["bytes"] == len(written)
            # Matched to its source: the bundle's bytes at the module's ranges hold the source's code.
            spans = b"".join(data[start:end] for start, end in module["ranges"])
            assert MARKERS[rel] in spans and MARKERS[rel] in source.encode(), rel
            assert all(MARKERS[other] not in spans for other in SOURCES if other != rel), rel
        assert out["isolation"]["sandbox"] in ("bubblewrap", "none")
    finally:
        shutil.rmtree(directory.parent, ignore_errors=True)


def test_a_minified_bundle_keeps_its_module_boundaries(
    rea_session: Session, wakaru: Path, bundles: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REA_WAKARU_PATH", str(wakaru))
    bundle = bundles / "minified.js"
    data = bundle.read_bytes()
    out = result_of(rea_session, "recover_javascript_sources", {"input_path": str(bundle), "limit": 2})
    try:
        assert out["format"] == "esbuild" and out["total"] == 4 and out["next_offset"] == 2
        rest = result_of(rea_session, "recover_javascript_sources", {"input_path": str(bundle), "offset": 2})
        shutil.rmtree(Path(rest["output_directory"]).parent, ignore_errors=True)
        spans = [data[s:e] for m in out["modules"] + rest["modules"] for s, e in m["ranges"]]
        # Each source's code lies in one module's range (helper's *21, fmt's "value=").
        assert sum(b"*21" in span for span in spans) == 1 and sum(b'"value="' in span for span in spans) == 1
    finally:
        shutil.rmtree(Path(out["output_directory"]).parent, ignore_errors=True)


def test_without_the_unbundler_the_call_says_how_to_install_it(
    rea_session: Session, bundles: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("REA_WAKARU_PATH", str(tmp_path / "missing" / "wakaru"))
    with pytest.raises(ReaError) as err:
        call_tool(rea_session, "recover_javascript_sources", {"input_path": str(bundles / "plain.js")})
    assert err.value.code == "provider_unavailable" and "npm install @wakaru/cli" in (err.value.remediation or "")
