"""The default install's cost: a fresh venv, ``pip install .`` from this checkout (no extras), its time and size.

pip's own cache is used as it is (a second run installs from cached wheels: the figure a developer or CI sees
again; ``--no-cache`` measures a first install, downloads included). Prints the seconds of venv creation and of
``pip install``, the venv's size in MB and its largest installed distributions, then a check that the command
runs (``rea --version``). ``--extras all`` measures an extra instead; ``--keep`` leaves the venv.

Measured on this machine (2 cores shared with eight engineers' tests, so slow), CPython 3.13, pip's cache warm:
venv 50 s, pip install 342 s (392 s); 595 MB, the largest scipy 107 MB (with numpy 64 MB, through datasketch),
symbolic 78 MB, sqlalchemy 28 MB (androguard's), ghidra_sleigh 25 MB, networkx 16 MB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def size_mb(path: Path) -> float:
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            full = os.path.join(folder, name)
            if not os.path.islink(full):
                total += os.path.getsize(full)
    return total / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter to build the venv with")
    parser.add_argument("--extras", default="", help="install .[EXTRAS] instead of the default")
    parser.add_argument("--no-cache", action="store_true", help="measure a first install (pip --no-cache-dir)")
    parser.add_argument("--keep", action="store_true", help="leave the venv (its path is printed)")
    parser.add_argument("--largest", type=int, default=8, help="list this many largest distributions")
    ns = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rea-install-"))
    venv = work / "venv"
    try:
        start = time.perf_counter()
        subprocess.run([ns.python, "-m", "venv", str(venv)], check=True)
        created = time.perf_counter() - start
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        if ns.no_cache:
            pip.append("--no-cache-dir")
        spec = f"{ROOT}[{ns.extras}]" if ns.extras else str(ROOT)
        start = time.perf_counter()
        subprocess.run([*pip, spec], check=True)
        installed = time.perf_counter() - start
        site = next((venv / "lib").glob("python3*/site-packages"))
        sizes: dict[str, float] = {}
        for entry in site.iterdir():
            if entry.name.endswith((".dist-info", "__pycache__")) or entry.name.startswith("_distutils"):
                continue
            key = entry.name.split(".")[0] if entry.is_file() else entry.name
            sizes[key] = sizes.get(key, 0.0) + (size_mb(entry) if entry.is_dir() else entry.stat().st_size / 1e6)
        version = subprocess.run(
            [str(venv / "bin" / "rea"), "--version"], capture_output=True, text=True, check=True
        ).stdout.splitlines()[0]
        print(f"install {spec} ({'no cache' if ns.no_cache else 'pip cache as it is'}) with {ns.python}")
        print(f"venv created in {created:.1f} s; pip install in {installed:.1f} s; total {created + installed:.1f} s")
        print(f"venv size: {size_mb(venv):.0f} MB (site-packages {size_mb(site):.0f} MB); {version}")
        for name, mb in sorted(sizes.items(), key=lambda kv: -kv[1])[: ns.largest]:
            print(f"  {name:28} {mb:7.1f} MB")
        if ns.keep:
            print(f"kept: {venv}")
    finally:
        if not ns.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
