"""Fixtures for the emulation tests: one C file of small routines, compiled now for each architecture."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

from tests import toolchains

# Routines an emulator must run: arithmetic, a string decryption loop over an encrypted table, libc calls
# (strlen, memcpy, malloc), an import it does not model (puts), and a loop that never ends.
ROUTINES_C = r"""
typedef __SIZE_TYPE__ size_t;
size_t strlen(const char *);
void *memcpy(void *, const void *, size_t);
void *malloc(size_t);
int puts(const char *);

int arith(int a, int b, int c) { return (a * b + c) ^ 0x55; }

/* "hello world" xor 0x43 */
static const unsigned char table[] = {0x2b, 0x26, 0x2f, 0x2f, 0x2c, 0x63, 0x34, 0x2c, 0x31, 0x2f, 0x27};
char plain[32];
int counter;

void decrypt(char *out, const unsigned char *in, int n, unsigned char key) {
    for (int i = 0; i < n; i++) out[i] = in[i] ^ key;
    out[n] = 0;
}
const char *decrypt_table(void) { decrypt(plain, table, sizeof table, 0x43); counter++; return plain; }
size_t copy_len(char *dst, const char *src) { size_t n = strlen(src); memcpy(dst, src, n + 1); return n; }
char *dup_upper(const char *s) {
    size_t n = strlen(s);
    char *p = malloc(n + 1);
    for (size_t i = 0; i <= n; i++) p[i] = (s[i] >= 'a' && s[i] <= 'z') ? s[i] - 32 : s[i];
    return p;
}
int say(const char *s) { return puts(s) + 1; }
int spin(int x) { volatile int v = x; for (;;) v++; return v; }
"""

COMPILERS = {
    "x86_64": ("gcc", []),
    "arm64": ("aarch64-linux-gnu-gcc", []),
    "x86": ("gcc", ["-m32"]),
}


def require_unicorn() -> None:
    if importlib.util.find_spec("unicorn") is None:
        toolchains.unavailable("Unicorn is not installed: pip install 'rea-reverse[emulation]'")


@pytest.fixture(scope="session")
def routines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A shared object of the routines per architecture (no libc linked: the imports stay imports)."""
    require_unicorn()
    out = tmp_path_factory.mktemp("emulation")
    source = out / "routines.c"
    source.write_text(ROUTINES_C)
    built: dict[str, Path] = {}
    for arch, (tool, flags) in COMPILERS.items():
        compiler = toolchains.require(tool)
        target = out / f"routines-{arch}.so"
        subprocess.run(
            [compiler, *flags, "-O1", "-fno-inline", "-fPIC", "-shared", "-nostdlib", "-o", str(target), str(source)],
            check=True,
            capture_output=True,
            timeout=120,
        )
        built[arch] = target
    clang = toolchains.find("clang")
    if clang is not None and toolchains.find("ld.lld") is not None:
        target = out / "routines-arm.so"
        thumb = ["--target=armv7a-linux-gnueabihf", "-mthumb", "-fuse-ld=lld"]
        subprocess.run(
            [clang, *thumb, "-O1", "-fno-inline", "-fPIC", "-shared", "-nostdlib", "-o", str(target), str(source)],
            check=True,
            capture_output=True,
            timeout=120,
        )
        built["arm"] = target
    return built


@pytest.fixture(scope="session")
def pie_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The routines in a gcc PIE with main (libc linked: imports through the PLT)."""
    require_unicorn()
    source = ROUTINES_C + "int main(int argc, char **argv) { return arith(argc, 2, 3); }\n"
    out = tmp_path_factory.mktemp("emulation-pie")
    return toolchains.compile_c(source, out, "pie", "-O1", "-fno-inline", "-fpie", "-pie")
