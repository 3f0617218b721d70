"""Type-library tests: a small C program with a struct parameter and a struct global, built in the session."""

from __future__ import annotations

import pytest

from tests import toolchains

OPTS_C = r"""
#include <string.h>
struct opts { int verbose; int level; const char *extensions; struct opts *next; long count; };
__attribute__((noinline)) int apply_opts(struct opts *o) {
    int n = 0;
    if (o->verbose) n += o->level;
    if (o->extensions) n += (int)strlen(o->extensions);
    if (o->next) n += o->next->level;
    o->count += n;
    return n;
}
struct opts global_opts = {1, 2, "ab", 0, 7};
int main(int argc, char **argv) { (void)argv; global_opts.verbose = argc; return apply_opts(&global_opts); }
"""
OPTS_DECL = "struct opts { int verbose; int level; const char *extensions; struct opts *next; long count; };"


@pytest.fixture(scope="session")
def opts_program(tmp_path_factory: pytest.TempPathFactory) -> str:
    """opts.c built with gcc -O1 (x86-64 ELF, symbols kept)."""
    return str(toolchains.compile_c(OPTS_C, tmp_path_factory.mktemp("types"), "opts", "-O1"))
