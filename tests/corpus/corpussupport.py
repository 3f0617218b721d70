"""A corpus built in the test session: several architectures, a shared library, a ZIP, duplicates, a bad file."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import zipfile
from pathlib import Path
from typing import Any

from tests import toolchains

SHARED_HELPER = "int shared_helper(int x) { int r = 0; for (int i = 0; i < x; i++) r += i * 3; return r; }\n"

ALPHA = (
    "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
    + SHARED_HELPER
    + r"""
int main(int argc, char **argv) {
    char buf[64];
    const char *e = getenv("CORPUS_ALPHA");
    strcpy(buf, e ? e : "corpus-marker-alpha");
    printf("%s %d\n", buf, shared_helper(argc));
    return 0;
}
"""
)

BETA = (
    "#include <stdio.h>\n"
    + SHARED_HELPER
    + r"""
int main(int argc, char **argv) {
    puts("corpus-marker-beta");
    return shared_helper(argc);
}
"""
)

LIB = "int lib_answer(int x) { return x * 42 + 1; }\n"
USER = r"""
#include <stdio.h>
int lib_answer(int x);
int main(int argc, char **argv) { printf("corpus-marker-gamma %d\n", lib_answer(argc)); return 0; }
"""

ARM = r"""
#include <stdio.h>
int main(void) { puts("corpus-marker-arm"); return 0; }
"""

PE = r"""
#include <stdio.h>
int main(void) { puts("corpus-marker-pe"); return 0; }
"""


def _cc(compiler: str, out: Path, name: str, source: str, *flags: str) -> Path:
    src = out / f"{name}.c"
    src.write_text(source)
    subprocess.run([compiler, "-O0", "-o", str(out / name), str(src), *flags], check=True, capture_output=True,
                   timeout=120)  # fmt: skip
    return out / name


def build_corpus(root: Path) -> dict[str, Any]:
    """The corpus folder ``root/corpus`` and what each binary is."""
    gcc = toolchains.require("gcc")
    work = root / "build"
    work.mkdir()
    corpus = root / "corpus"
    (corpus / "bin").mkdir(parents=True)
    (corpus / "lib").mkdir()
    (corpus / "dup").mkdir()
    alpha = _cc(gcc, work, "alpha", ALPHA, "-fstack-protector-strong")
    beta = _cc(gcc, work, "beta", BETA, "-fno-stack-protector", "-no-pie", "-Wl,-z,norelro")
    lib = work / "libcorpus.so"
    (work / "lib.c").write_text(LIB)
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(lib), str(work / "lib.c")], check=True, timeout=120)
    gamma = _cc(gcc, work, "gamma", USER, f"-L{work}", "-lcorpus")
    built = {"alpha": alpha, "beta": beta, "libcorpus.so": lib, "gamma": gamma}
    arm_gcc = toolchains.find("aarch64-linux-gnu-gcc")
    if arm_gcc:
        built["arm"] = _cc(arm_gcc, work, "arm", ARM)
    mingw = toolchains.find("x86_64-w64-mingw32-gcc")
    if mingw:
        built["pe.exe"] = _cc(mingw, work, "pe.exe", PE)
    shutil.copy(alpha, corpus / "bin" / "alpha")
    shutil.copy(gamma, corpus / "bin" / "gamma")
    shutil.copy(lib, corpus / "lib" / "libcorpus.so")
    shutil.copy(alpha, corpus / "dup" / "alpha-copy")  # a duplicate by content
    if "pe.exe" in built:
        shutil.copy(built["pe.exe"], corpus / "bin" / "pe.exe")
    with zipfile.ZipFile(corpus / "bundle.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(beta, "inner/beta")
        if "arm" in built:
            zf.write(built["arm"], "inner/arm")
        zf.writestr("inner/readme.txt", "not a binary\n")
    # A nested archive: a ZIP inside a ZIP, holding the library again (a duplicate by content).
    inner = work / "inner.zip"
    with zipfile.ZipFile(inner, "w") as zf:
        zf.write(lib, "libcorpus.so")
    with zipfile.ZipFile(corpus / "outer.zip", "w") as zf:
        zf.write(inner, "nested/inner.zip")
    (corpus / "notes.txt").write_text("plain text, skipped\n")
    # A malformed ELF: the magic, then garbage where the header should be.
    (corpus / "bin" / "broken").write_bytes(b"\x7fELF\x02\x01\x01\x00" + b"garbage!" * 16)
    return {"root": corpus, "built": built, "work": work}


def nm_imports(path: Path) -> set[str]:
    """Undefined dynamic symbols, as nm sees them (versions stripped)."""
    nm = toolchains.require("nm")
    out = subprocess.run([nm, "-D", "--undefined-only", str(path)], capture_output=True, text=True, check=True)
    return {line.split()[-1].split("@")[0] for line in out.stdout.splitlines() if line.strip()}


def readelf_needed(path: Path) -> set[str]:
    readelf = toolchains.require("readelf")
    out = subprocess.run([readelf, "-d", str(path)], capture_output=True, text=True, check=True)
    return {line.split("[")[1].split("]")[0] for line in out.stdout.splitlines() if "(NEEDED)" in line}


def rows(index: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def variants(source: Path, out: Path, count: int) -> Path:
    """``count`` distinct binaries (the same program with a different trailing byte run each): a corpus to schedule."""
    out.mkdir(parents=True, exist_ok=True)
    data = source.read_bytes()
    for i in range(count):
        (out / f"v{i:03d}").write_bytes(data + os.urandom(8) + i.to_bytes(4, "little"))
    return out
