"""A small page bundle in two versions, minified differently by esbuild at test time (issue 47's JavaScript fixture).

Version 1 is minified for whitespace and syntax (names kept), version 2 wholly (names mangled); both carry a source map
with ``sourcesContent``, and version 2 is built once more without one. The sources have template literals, class-field
handlers, object-literal methods and ``module.exports.x`` assignments. The facts the tests check are written here, next
to the sources, never read back from the tool under test.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from appfixtures import esbuild_tool

APP_V1 = """\
import { formatGreeting } from './greet.js';
const api = require('./api.cjs');

export class Panel {
  count = 0;
  handleClick = (event) => {
    this.count += 1;
    return `clicked ${this.count} times on ${event.target}`;
  };
  onKeyDown = function (event) { return event.key === 'Enter'; };
  render(user) {
    return `<div class="panel">Welcome back, ${user.name}!</div>`;
  }
}

const handlers = {
  save(doc) { return api.store(doc, `save:${doc.id}`); },
  remove: (doc) => api.drop(doc.id),
};

export function start(root) {
  const panel = new Panel();
  root.addEventListener('click', panel.handleClick);
  root.addEventListener('keydown', panel.onKeyDown);
  handlers.save({ id: 1 });
  handlers.remove({ id: 2 });
  root.innerHTML = panel.render({ name: 'rea' });
  return formatGreeting('rea');
}
start(globalThis.document);
"""

ARCHIVE = "  archive(doc) { return api.store(doc, `archive:${doc.id}:${Date.now()}`); },\n"
# Version 2: a new handler (archive) and a changed welcome text; everything else as in version 1.
APP_V2 = (
    APP_V1.replace("Welcome back, ${user.name}!", "Good to see you, ${user.name}.")
    .replace("  remove: (doc) => api.drop(doc.id),\n", "  remove: (doc) => api.drop(doc.id),\n" + ARCHIVE)
    .replace("  handlers.remove({ id: 2 });\n", "  handlers.remove({ id: 2 });\n  handlers.archive({ id: 3 });\n")
)

GREET = """\
export function formatGreeting(name) {
  return `Hello, ${name}: your session expires in ${60} minutes`;
}
"""

API = """\
module.exports.store = function (doc, key) { return { doc, key, url: `https://api.example.test/v1/store/${key}` }; };
module.exports.drop = (id) => ({ dropped: id });
exports.version = () => 'api-v1';
"""

# Facts from the sources above.
FACTS = {
    "click_handler": ("Panel.handleClick", "src/app.js", 6),
    "clicked_line": 8,
    "greeting": ("formatGreeting", "src/greet.js", 1),
    "sources": {"src/app.js", "src/greet.js", "src/api.cjs"},
    "template": "Hello, ${…}: your session expires in 60 minutes",
    "added_in_v2": "handlers.archive",
}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def build_page(root: Path, app: str, *flags: str) -> Path:
    """Bundle the sources into ``root/page/app.js`` (what a page ships: the bundle and its map, no source tree)."""
    _write(root, {"src/app.js": app, "src/greet.js": GREET, "src/api.cjs": API})
    subprocess.run(
        [
            str(esbuild_tool("esbuild")),
            "src/app.js",
            "--bundle",
            "--format=iife",
            "--outfile=page/app.js",
            "--log-level=error",
            *flags,
        ],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return root / "page"


def build_v1(root: Path) -> Path:
    return build_page(root, APP_V1, "--minify-whitespace", "--minify-syntax", "--sourcemap")


def build_v2(root: Path) -> Path:
    return build_page(root, APP_V2, "--minify", "--sourcemap")


def build_v2_without_map(root: Path) -> Path:
    return build_page(root, APP_V2, "--minify")
