"""Fixtures of the scripting tests: small C programs compiled now, and the example scripts of docs/."""

from __future__ import annotations

from pathlib import Path

import pytest

from rea.process import sandbox
from tests import toolchains

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"

# A string used through a pointer in data, by a function with one caller: the five-call question's target.
STRINGS_C = r"""
#include <stdio.h>
#include <string.h>

static const char *BANNER = "rea-script-banner";

void show_banner(void) { puts(BANNER); }

int report(int n) { show_banner(); return n * 2; }

int main(int argc, char **argv) {
    printf("%d\n", report(argc));
    return (int)strlen(argv[0]) & 1;
}
"""

# Two functions each using a well-known constant (TEA's delta, CRC-32's reflected polynomial), one caller.
CRYPTO_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>

void tea_encrypt(uint32_t v[2], const uint32_t k[4]) {
    uint32_t v0 = v[0], v1 = v[1], sum = 0, delta = 0x9e3779b9;
    for (int i = 0; i < 32; i++) {
        sum += delta;
        v0 += ((v1 << 4) + k[0]) ^ (v1 + sum) ^ ((v1 >> 5) + k[1]);
        v1 += ((v0 << 4) + k[2]) ^ (v0 + sum) ^ ((v0 >> 5) + k[3]);
    }
    v[0] = v0;
    v[1] = v1;
}

uint32_t crc32_bytes(const unsigned char *p, size_t n) {
    uint32_t crc = 0xffffffffu;
    while (n--) {
        crc ^= *p++;
        for (int b = 0; b < 8; b++) crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
    }
    return CRC_FINAL;
}

int protect(const char *msg) {
    uint32_t v[2] = {1, 2};
    const uint32_t k[4] = {3, 4, 5, 6};
    tea_encrypt(v, k);
    return (int)(v[0] ^ crc32_bytes((const unsigned char *)msg, strlen(msg)));
}

EXTRA

int main(int argc, char **argv) {
    printf("%d\n", protect(argc > 1 ? argv[1] : "x"));
    return 0;
}
"""


@pytest.fixture(scope="session")
def script_programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """strings (the five-call question), crypto and crypto_v2 (one function changed, one added)."""
    sources = {
        "strings": STRINGS_C,
        "crypto": CRYPTO_C.replace("CRC_FINAL", "~crc").replace("EXTRA", ""),
        "crypto_v2": CRYPTO_C.replace("CRC_FINAL", "~crc ^ 0x5a5au").replace(
            "EXTRA", "int added_function(int x) { return x * 7 + 1; }"
        ),
    }
    return toolchains.compile_programs(sources, tmp_path_factory.mktemp("scripting"))


@pytest.fixture(scope="session")
def sandboxed() -> None:
    """Scripts run only under bubblewrap: skip (or fail under CI) where it cannot run."""
    toolchains.require("bwrap")
    failure = sandbox.bwrap_failure()
    if failure is not None:
        toolchains.unavailable(failure)


def example(name: str) -> str:
    return (EXAMPLES / name).read_text()
