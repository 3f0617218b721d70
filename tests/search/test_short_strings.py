"""Short strings an option parser compares against are strings, on every provider; ``min_length`` bounds the rest.

Truth: the file's bytes and its section headers (objdump -h), never rea.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests import toolchains
from tests.search.conftest import CASE_IDS
from tests.search.conftest import CASES
from tests.search.conftest import Builds
from tests.search.conftest import opened_case

# -fno-builtin keeps every strcmp a call with its literal (gcc otherwise inlines the short ones). On x86-64 ELF the
# linker merges "xml" into the tail of "--to-xml": code references a string that begins inside another.
OPTIONS_C = r"""
int strcmp(const char *a, const char *b);
int puts(const char *s);
__attribute__((used)) static const char unreferenced[] = "zz";
__attribute__((noinline)) int parse(int argc, char **argv) {
  int mode = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "man") == 0) mode |= 1;
    else if (strcmp(argv[i], "xml") == 0) mode |= 2;
    else if (strcmp(argv[i], "-t") == 0) mode |= 4;
    else if (strcmp(argv[i], "v") == 0) mode |= 8;
    else if (strcmp(argv[i], "--verbose-output") == 0) mode |= 16;
    else if (strcmp(argv[i], "--to-xml") == 0) mode |= 32;
  }
  return mode;
}
struct opt { const char *name; int id; };
static const struct opt table[] = {{"to", 1}, {"kq", 2}, {0, 0}};
__attribute__((noinline)) int lookup(const char *arg) {
  for (const struct opt *o = table; o->name; o++) if (strcmp(arg, o->name) == 0) return o->id;
  return 0;
}
int main(int argc, char **argv) { puts("REA_OPTIONS"); return parse(argc, argv) + lookup(argv[0]); }
"""
OPTIONS = ("man", "xml", "-t", "v")


@pytest.fixture(scope="session")
def option_builds(tmp_path_factory: pytest.TempPathFactory) -> Builds:
    return Builds(tmp_path_factory.mktemp("short-strings"), OPTIONS_C, ("-O2", "-fno-builtin"))


@pytest.fixture(params=CASES, ids=CASE_IDS)
def opened(
    request: pytest.FixtureRequest, rea_registry: Registry, option_builds: Builds
) -> Iterator[tuple[Session, Path]]:
    with opened_case(rea_registry, option_builds, request.param) as found:
        yield found


def string_addresses(path: Path, value: str) -> set[int]:
    """Virtual addresses of NUL-terminated ``value`` in the file's sections, from objdump -h and the bytes.

    The NUL-preceded copies; where there is none, the linker merged the literal into the tail of another string.
    """
    headers = subprocess.run(
        [toolchains.require("objdump"), "-h", str(path)], check=True, capture_output=True, text=True
    ).stdout
    sections = [
        (int(vma, 16), int(off, 16), int(size, 16))
        for size, vma, off in re.findall(
            r"^\s*\d+\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", headers, re.M
        )
    ]
    data = path.read_bytes()
    whole: set[int] = set()
    tails: set[int] = set()
    for m in re.finditer(re.escape(value.encode()) + b"\x00", data):
        for vma, off, size in sections:
            if off <= m.start() < off + size:
                (whole if data[m.start() - 1] == 0 else tails).add(vma + m.start() - off)
    return whole or tails


def listed(out: dict[str, Any]) -> dict[str, set[int]]:
    found: dict[str, set[int]] = {}
    for s in out["strings"]:
        found.setdefault(s["value"], set()).add(int(s["address"], 16))
    return found


def test_option_words_are_found_whatever_their_length(opened: tuple[Session, Path]) -> None:
    session, path = opened
    out = result_of(session, "search_strings", {"pattern": "^(man|xml|-t|v)$", "mode": "regex"})
    found = listed(out)
    for word in OPTIONS:
        truth = string_addresses(path, word)
        assert truth and truth <= found.get(word, set()), word
    assert all(s.get("referenced") for s in out["strings"])
    # A literal the linker merged into another string's tail is found where code references it.
    assert listed(result_of(session, "search_strings", {"pattern": "^xml$", "mode": "regex"}))[
        "xml"
    ] == string_addresses(path, "xml")
    # A 2-character run no instruction names is not listed at the default floor.
    assert "zz" not in listed(result_of(session, "search_strings", {"pattern": "zz"}))


def test_min_length_bounds_the_listing(opened: tuple[Session, Path]) -> None:
    session, path = opened
    long_only = result_of(session, "list_strings", {"min_length": 8, "limit": 1000})
    assert long_only["strings"] and all(len(s["value"]) >= 8 or s["truncated"] for s in long_only["strings"])
    assert "--verbose-output" in listed(long_only)
    # A referenced string shorter than min_length asks for is not listed; min_length 1 lists the 1-character one.
    five = listed(result_of(session, "search_strings", {"pattern": "xml", "min_length": 5}))
    assert "xml" not in five and "--to-xml" in five
    ones = listed(result_of(session, "search_strings", {"pattern": "^v$", "mode": "regex", "min_length": 1}))
    assert ones.get("v", set()) >= string_addresses(path, "v")
    low = result_of(session, "search_strings", {"pattern": "zz", "min_length": 2})
    assert listed(low).get("zz", set()) >= string_addresses(path, "zz")


def test_option_table_names_that_data_points_to_are_found(opened: tuple[Session, Path]) -> None:
    session, path = opened
    out = result_of(session, "search_strings", {"pattern": "^(to|kq)$", "mode": "regex"})
    found = listed(out)
    for word in ("to", "kq"):
        truth = string_addresses(path, word)
        assert truth and truth <= found.get(word, set()), word
    assert all(s.get("referenced") for s in out["strings"])


@pytest.mark.parametrize("bad", [0, 65, "4", "x"])
def test_a_bad_min_length_is_a_typed_error(opened: tuple[Session, Path], bad: Any) -> None:
    session, _ = opened
    with pytest.raises(ReaError) as err:
        call_tool(session, "list_strings", {"min_length": bad})
    assert err.value.code == "invalid_request" and err.value.details["issues"][0]["path"] == "min_length"
