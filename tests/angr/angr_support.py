"""Helpers for the angr provider tests: the C program, expected-fact readers and opening it on angr."""

from __future__ import annotations

import subprocess
from pathlib import Path

from rea.session import Session
from tests.engine_lifecycle import open_with

# Expected facts below come from this source: function names, call edges and string literals.
PROGRAM_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *GREETING = "rea-angr greeting";
/* Forty a's and a bang: a near-miss for nested-quantifier regular expressions. */
static const char *LONG_RUN = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!";

__attribute__((noinline)) int add_numbers(int a, int b) { return a + b; }
__attribute__((noinline)) int mul_numbers(int a, int b) { return a * b; }

typedef int (*binop)(int, int);
binop table[2] = { add_numbers, mul_numbers };

/* An indirect call through a function-pointer table. */
__attribute__((noinline)) int apply_op(int which, int a, int b) { return table[which & 1](a, b); }

int call_count;

__attribute__((noinline)) void say_hello(const char *who) {
    call_count += 1; /* a store to a global: a write reference */
    printf("hello, %s\n", who);
    puts(GREETING);
}

/* A switch dense enough for a jump table. */
__attribute__((noinline)) int classify(int x) {
    switch (x) {
    case 0: return 11; case 1: return 22; case 2: return 33;
    case 3: return 44; case 4: return 55; case 5: return 66;
    default: return -1;
    }
}

int main(int argc, char **argv) {
    say_hello(argc > 1 ? argv[1] : "world");
    int r = apply_op(argc, 3, 4) + classify(argc);
    if (strlen(argv[0]) > 1000) abort();
    printf("result %d\n", r);
    if (argc > 5) puts(LONG_RUN);
    return 0;
}
"""

SOURCE_FUNCTIONS = ("add_numbers", "mul_numbers", "apply_op", "say_hello", "classify", "main")
LONG_RUN = "a" * 40 + "!"
SOURCE_STRINGS = ("rea-angr greeting", "hello, %s\n", "world", "result %d\n", LONG_RUN)


def nm_addresses(path: Path) -> dict[str, int]:
    """Defined symbol addresses as binutils reports them (link-time addresses)."""
    out = subprocess.run(["nm", "--defined-only", str(path)], check=True, capture_output=True, text=True).stdout
    table = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            table[parts[2]] = int(parts[0], 16)
    return table


def open_angr(session: Session, path: Path) -> None:
    open_with(session, path, "angr")
