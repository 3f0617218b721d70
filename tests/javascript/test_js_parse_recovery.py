"""Code the grammar cannot parse loses no facts (issue 23 item 9): swagger-ui-dist's bundle, whose
String.raw`...\\uc1` (valid since ES2018) tree-sitter-javascript refuses, parses once such escapes are read as
text; what still does not parse keeps its strings from a scan of the raw text, with a diagnostic saying so."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from rea_plugins.javascript import facts
from tests.conformance.references_support import missing

CACHE = Path(__file__).resolve().parents[1] / ".fixtures" / "npm-packages"
SWAGGER = (
    "swagger-ui-dist@5.17.14",
    "swagger-ui-dist-5.17.14.tgz",
    "c57badf459aa6e65cc036b3862d0502a63f9a22546407ffcb0e64f85f816bb28",
)


def npm_package(spec: str, filename: str, sha256: str) -> Path:
    """The pinned package's tarball from the cache or the npm registry (``npm pack``), unpacked; its folder."""
    root = CACHE / filename.removesuffix(".tgz")
    if (root / "package" / "package.json").exists():
        return root / "package"
    npm = shutil.which("npm")
    if npm is None:
        missing("npm is not installed (needed to fetch the pinned npm package)")
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rea-npm-pack-") as tmp:
        proc = subprocess.run(
            [npm, "pack", spec, "--silent", "--pack-destination", tmp], capture_output=True, text=True, timeout=300
        )
        got = Path(tmp) / filename
        if proc.returncode != 0 or not got.exists():
            missing(f"could not fetch {spec} with npm pack ({proc.stderr.strip()[-300:]})")
        digest = hashlib.sha256(got.read_bytes()).hexdigest()
        assert digest == sha256, f"{filename} from npm has SHA-256 {digest}, expected {sha256}"
        staged = Path(tempfile.mkdtemp(prefix=".staged-", dir=CACHE))
        with tarfile.open(got) as tar:
            tar.extractall(staged, filter="data")
        try:
            os.rename(staged, root)
        except OSError:
            shutil.rmtree(staged, ignore_errors=True)
    return root / "package"


def test_the_swagger_ui_bundle_parses_and_keeps_its_labels() -> None:
    bundle = npm_package(*SWAGGER) / "swagger-ui-bundle.js"
    data = bundle.read_bytes()
    assert b"String.raw`" in data and b'"Try it out "' in data
    found = facts.extract(str(bundle), "javascript", data)
    # Only the note that refused escapes were read as text: no syntax error is left.
    assert [d.message for d in found.diagnostics if d.message.startswith("syntax error")] == []
    assert any("read as text" in d.message for d in found.diagnostics)
    # The label is a string of the bundle's main unit (whose listing keeps its first 200 of about 2,900).
    tree, repaired = facts._parse("javascript", data)
    walker = facts._Walker(str(bundle), data, None)
    walker.run(tree)
    assert repaired and not tree.root_node.has_error
    assert "Try it out " in walker.units[0].strings and found.strings[0].total == len(walker.units[0].strings)


def test_what_still_does_not_parse_keeps_its_strings() -> None:
    # An unterminated regex class swallows the rest of its line: the grammar sees no string literal there.
    source = b'const ok = "before";\nx = /[/; y = "Try it out ";\nconst later = "after";\n'
    found = facts.extract("broken.js", "javascript", source)
    values = {s.value: s.line for unit in found.strings for s in unit.items}
    assert values.get("Try it out ") == 2 and {"before", "after"} <= set(values)
    assert any("scan of its text" in d.message for d in found.diagnostics)
    assert any(d.message.startswith("syntax error") and d.line == 2 for d in found.diagnostics)
