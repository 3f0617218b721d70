"""Hostile C declarations: declare_c_types' parser and layout answer with a typed error or a layout, never else.

Seeded mutations of real declarations (cut, spliced, bytes flipped, nesting and sizes pushed to extremes) and
free text, through ``rea.typelib.declare`` and then the layout of every type declared.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from rea.annotations import TypeEntry
from rea.errors import ReaError
from rea.typelib import Layout
from rea.typelib import abi_for
from rea.typelib import declare
from rea.typelib import prototype

SEEDS = (
    "struct opts { int verbose; int level; const char *extensions; struct opts *next; long count; };",
    "typedef union u { char c[3]; double d; unsigned bits : 5; } u_t;",
    "enum color { RED = 1, GREEN = RED << 4, BLUE = 0x7fffffff };",
    "typedef int (*callback)(void *ctx, const char *name, unsigned long n);",
    "struct big { char a[1 << 20]; struct { int x; } inner[4]; };",
    "typedef struct node node_t; struct node { node_t *left, *right; int key; };",
)
EXTREMES = (
    "struct s { char a[0x7fffffffffffffff]; };",
    "struct s { char a[-1]; };",
    "struct s { int x : 99; };",
    "enum e { A = 1 / 0 };",
    "typedef a b; typedef b a;",
    "struct s { struct s inner; };",
    "struct " + "{ " * 200 + "int x; " + "} y; " * 200 + "};",
    "typedef int t" + "[2]" * 64 + ";",
    "struct s0 { " + "struct { " * 60 + "int x; " + "} a; " * 60 + "};",
    "struct s { char a[1 << 100]; };",
    "struct s { char a[3 && 4]; };",
    "struct s { char a[1e5]; };",
    "enum e { A = 1 << 63 << 1, B = 7 / (3 - 3) };",
    "#pragma pack(1)\nstruct s { char c; int i; };",
    "struct s { int x; } /* unterminated",
    "\x00\xff struct",
)


# Words of Python exceptions' messages, which a caller must never read.
PYTHON_WORDS = re.compile(r"Error\b|Traceback|invalid literal|recursion depth|object|index out of range|NoneType")


def _typed(err: ReaError) -> None:
    assert err.code == "invalid_request", err.code
    assert not PYTHON_WORDS.search(err.message), err.message


def _exercise(source: str) -> None:
    try:
        types: dict[str, TypeEntry] = declare(source, {})
    except ReaError as err:
        _typed(err)
        return
    for abi in (abi_for("elf", "x86_64"), abi_for("elf", "x86"), abi_for("pe", "x86_64")):
        try:
            layout = Layout(types, abi)
        except ReaError as err:
            _typed(err)
            continue
        for name in types:
            try:
                layout.of_name(name)
            except ReaError as err:
                _typed(err)
    try:
        prototype(f"int f({next(iter(types), 'int')} *p, ...)", types)
    except ReaError as err:
        _typed(err)


def test_extreme_declarations_are_typed_errors_or_layouts() -> None:
    for source in (*SEEDS, *EXTREMES):
        _exercise(source)


@st.composite
def mutated(draw: Any) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(("cut", "splice", "flip", "repeat")))
        at = draw(st.integers(0, len(text)))
        if op == "cut":
            text = text[:at] + text[draw(st.integers(at, len(text))) :]
        elif op == "splice":
            text = (
                text[:at]
                + draw(st.sampled_from((*SEEDS, "{", "}", ";", "[", "]", "*", ":", "=", "0x", "(")))
                + text[at:]
            )
        elif op == "flip":
            text = text[:at] + draw(st.characters(blacklist_categories=("Cs",))) + text[at + 1 :]
        else:
            text = text[:at] * 2 + text[at:]
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_declarations_are_typed_errors_or_layouts(source: str) -> None:
    _exercise(source)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_a_typed_error_or_a_layout(source: str) -> None:
    _exercise(source)
