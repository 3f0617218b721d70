"""A small Electron-style application in two versions, bundled with esbuild at test time.

The expected facts the tests check are written next to the sources here (``V1_FACTS`` and the version
differences), never read back from the tool under test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / ".fixtures" / "npm"
# @electron/asar 4 needs Node 22; 3.x runs on the Node 20 CI has and writes the same integrity header.
NPM_PACKAGES = ("esbuild@0.28", "@electron/asar@3")

PACKAGE_JSON = (
    '{"name": "rea-fixture-app", "version": "1.0.0", "main": "dist/main.js", '
    '"devDependencies": {"electron": "^30.0.0"}}\n'
)

MAIN_V1 = """\
import { app, BrowserWindow, ipcMain } from 'electron';
import path from 'path';
import { search } from './search.js';
const util = require('./util.cjs');

export function createWindow() {
  const win = new BrowserWindow({
    width: 800,
    webPreferences: { preload: path.join(__dirname, 'preload.js') },
  });
  win.loadFile(path.join(__dirname, 'index.html'));
  return win;
}

ipcMain.handle('search', (_event, query) => search(util.normalize(query)));

app.whenReady().then(async () => {
  createWindow();
  const lazy = await import('./lazy.js');
  lazy.lazyFeature();
});
"""

MAIN_V2 = """\
import { app, BrowserWindow, ipcMain } from 'electron';
import path from 'path';
import { search } from './search.js';
import { remember } from './history.js';

export function createWindow() {
  const win = new BrowserWindow({
    width: 800,
    webPreferences: { preload: path.join(__dirname, 'preload.js') },
  });
  win.loadFile(path.join(__dirname, 'index.html'));
  return win;
}

ipcMain.handle('search', (_event, query) => {
  remember(query);
  return search(query, 10);
});

app.whenReady().then(async () => {
  createWindow();
  const lazy = await import('./features/lazy.js');
  lazy.lazyFeature();
});
"""

SEARCH_V1 = """\
const INDEX = ['alpha', 'beta', 'gamma'];

export function search(query) {
  const hits = INDEX.filter((item) => item.includes(query));
  return { query, hits };
}

export const SEARCH_VERSION = 'search-v1';
"""

SEARCH_V2 = """\
const INDEX = ['alpha', 'beta', 'gamma'];

export function search(query, limit) {
  const hits = INDEX.filter((item) => item.includes(query)).slice(0, limit);
  return { query, hits, total: hits.length };
}

export const SEARCH_VERSION = 'search-v2';
"""

UTIL_CJS = """\
function normalize(text) {
  return String(text).trim().toLowerCase();
}
module.exports = { normalize };
"""

HISTORY = """\
const past = [];
export function remember(query) {
  past.push(query);
  return past.length;
}
"""

LAZY = """\
export function lazyFeature() {
  return 'LAZY_FEATURE_TEXT';
}
"""

PRELOAD = """\
const { contextBridge, ipcRenderer } = require('electron');
contextBridge.exposeInMainWorld('api', {
  search: (query) => ipcRenderer.invoke('search', query),
});
"""

RENDERER = """\
import { formatHits } from './format.js';
const box = document.getElementById('query');
box.addEventListener('input', async () => {
  const result = await window.api.search(box.value);
  document.getElementById('out').textContent = formatHits(result);
});
"""

FORMAT = """\
export function formatHits(result) {
  return result.hits.join(', ');
}
"""

SHIM = "export const shim = 'shared-shim';\n"

INDEX_HTML = """\
<!doctype html>
<html><head><title>fixture</title></head>
<body><input id="query"><pre id="out"></pre><script src="./renderer.js"></script></body></html>
"""

BROKEN = "export function broken( {\n  return 1;\n}\n"
OK = "export function ok() {\n  return 'fine';\n}\n"

V1_SOURCES = {
    "src/main.js": MAIN_V1,
    "src/search.js": SEARCH_V1,
    "src/util.cjs": UTIL_CJS,
    "src/lazy.js": LAZY,
    "src/preload.js": PRELOAD,
    "src/renderer.js": RENDERER,
    "src/format.js": FORMAT,
    "src/shim.js": SHIM,
}
V2_SOURCES = {
    "src/main.js": MAIN_V2,
    "src/search.js": SEARCH_V2,
    "src/history.js": HISTORY,
    "src/features/lazy.js": LAZY,
    "src/preload.js": PRELOAD,
    "src/renderer.js": RENDERER,
    "src/format.js": FORMAT,
    "src/vendor/a/shim.js": SHIM,
    "src/vendor/b/shim.js": SHIM,
}

# Facts from the sources above, as the tests expect them.
V1_FACTS = {
    "main_imports": {
        ("import", "electron", "builtin"),
        ("import", "path", "builtin"),
        ("import", "./search.js", "module"),
        ("require", "./util.cjs", "module"),
        ("dynamic-import", "./lazy.js", "module"),
    },
    "search_exports": {"search", "SEARCH_VERSION"},
    "bundled_in_main": {"src/main.js", "src/search.js", "src/util.cjs", "src/lazy.js"},
    "bundled_in_renderer": {"src/renderer.js", "src/format.js"},
}


def esbuild_tool(name: str) -> Path:
    return ROOT / "node_modules" / ".bin" / name


def install_npm_tools() -> str | None:
    """Install esbuild and @electron/asar once into tests/.fixtures/npm; a reason string when impossible."""
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not installed (needed to install esbuild and @electron/asar for the fixtures)"
    if esbuild_tool("esbuild").exists() and esbuild_tool("asar").exists():
        return None
    ROOT.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(ROOT), *NPM_PACKAGES],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0 or not esbuild_tool("esbuild").exists():
        return f"npm install of {' '.join(NPM_PACKAGES)} failed: {proc.stderr[-400:]}"
    return None


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _esbuild(root: Path, entry: str, out: str, *flags: str) -> None:
    subprocess.run(
        [str(esbuild_tool("esbuild")), entry, "--bundle", f"--outfile={out}", "--log-level=error", *flags],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=120,
    )


def build_app(root: Path, sources: dict[str, str]) -> Path:
    """Write the sources and bundle them as an Electron app would ship: dist/ with maps and HTML."""
    _write(root, {"package.json": PACKAGE_JSON, **sources})
    main = "src/main.js"
    _esbuild(root, main, "dist/main.js", "--platform=node", "--format=cjs", "--external:electron", "--sourcemap")
    _esbuild(root, "src/preload.js", "dist/preload.js", "--platform=node", "--external:electron", "--sourcemap=inline")
    _esbuild(root, "src/renderer.js", "dist/renderer.js", "--platform=browser", "--format=iife", "--sourcemap")
    (root / "dist" / "index.html").write_text(INDEX_HTML)
    return root


def build_broken(root: Path) -> Path:
    _write(
        root, {"package.json": '{"name": "broken", "main": "src/ok.js"}\n', "src/ok.js": OK, "src/broken.js": BROKEN}
    )
    return root


def copy_tree_reversed(src: Path, dst: Path) -> Path:
    """Copy ``src`` creating entries in reverse name order, so directory order differs from the original."""
    for dirpath, dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in sorted(filenames, reverse=True):
            shutil.copyfile(Path(dirpath) / name, dst / rel / name)
        dirnames.sort(reverse=True)
    return dst


def pack_asar(src: Path, out: Path, unpack: str | None = None) -> Path:
    cmd = [str(esbuild_tool("asar")), "pack", str(src), str(out)]
    if unpack:
        cmd += ["--unpack", unpack]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return out
