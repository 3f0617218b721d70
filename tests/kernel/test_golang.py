"""rea.operations.golang: Go's build information and function table, round-tripped and fuzzed.

Real binaries (built with Debian's Go) are read in tests/golang; here the layouts are built by the test from the
Go project's documented formats, so every field is known, and hostile bytes may only raise GoFormatError.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from rea.operations import golang
from rea.operations.golang import GoFormatError
from rea.operations.golang import Section

NAME = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=40)


def pclntab_118(functions: list[tuple[str, int]], text_start: int, end: int, magic: int = 0xFFFFFFF0) -> bytes:
    """A Go 1.18 function table: header, names, functab pairs and one _func record per function."""
    ptr = 8
    header_size = 8 + 8 * ptr
    names = b""
    name_offsets = []
    for name, _ in functions:
        name_offsets.append(len(names))
        names += name.encode() + b"\0"
    names_at = header_size
    functab_at = names_at + len(names)
    nfunc = len(functions)
    records_at = (2 * nfunc + 1) * 4  # relative to functab
    functab = b""
    records = b""
    for i, (_, start) in enumerate(functions):
        functab += struct.pack("<II", start - text_start, records_at + len(records))
        records += struct.pack("<Ii", start - text_start, name_offsets[i]) + b"\0" * 8
    functab += struct.pack("<I", end - text_start)
    header = struct.pack("<IBBBB", magic, 0, 0, 1, ptr)
    header += struct.pack("<8Q", nfunc, 0, text_start, names_at, 0, 0, 0, functab_at)
    return header + names + functab + records


def buildinfo(version: str, modinfo: str) -> bytes:
    def var(b: bytes) -> bytes:
        n, out = len(b), b""
        while True:
            byte = n & 0x7F
            n >>= 7
            out += bytes([byte | (0x80 if n else 0)])
            if not n:
                return out + b

    wrapped = b"0w\xaf\x0c\x92t\x08\x02A\xe1\xc1\x07\xe6\xd6\x18\xe6" + modinfo.encode()
    wrapped += b"\xf92C1\x86\x18 r\x00\x82B\x10A\x16\xd8\xf2"
    return golang.BUILDINFO_MAGIC + bytes([8, 2]) + b"\0" * 16 + var(version.encode()) + var(wrapped)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(NAME, st.integers(1, 4096)), min_size=1, max_size=30),
    st.integers(0x400000, 0x7FFFFFFF),
)
def test_pclntab_round_trip(named_sizes: list[tuple[str, int]], text_start: int) -> None:
    functions, at = [], text_start
    for name, size in named_sizes:
        functions.append((name, at))
        at += size
    table = golang.parse_pclntab(pclntab_118(functions, text_start, at))
    assert table.layout == "1.18" and table.text_start == text_start
    got = [(f.name, f.start, f.end) for f in table.functions]
    ends = [start for _, start in functions[1:]] + [at]
    assert got == [(name, start, end) for (name, start), end in zip(functions, ends, strict=True)]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600), st.integers(0, 599), st.binary(min_size=1, max_size=8))
def test_damaged_pclntab_is_a_typed_error(noise: bytes, at: int, patch: bytes) -> None:
    real = pclntab_118([("main.main", 0x401000), ("main.f", 0x401040)], 0x401000, 0x401080)
    for data in (noise, real[:at] + patch + real[at + len(patch) :], real[: at % len(real)]):
        try:
            table = golang.parse_pclntab(data)
        except GoFormatError:
            continue
        assert all(f.start <= f.end for f in table.functions)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_damaged_buildinfo_is_a_typed_error(tail: bytes) -> None:
    for data in (tail, golang.BUILDINFO_MAGIC + tail, golang.BUILDINFO_MAGIC + b"\x08\x00" + tail):
        try:
            golang.parse_buildinfo(data, lambda address, length: tail[:length] or None)
        except GoFormatError:
            pass
    golang.parse_modinfo(tail.decode("utf-8", "replace"), "go1.0")


def test_buildinfo_modules_replacements_and_settings() -> None:
    text = (
        "path\texample.com/app\nmod\texample.com/app\t(devel)\t\n"
        "dep\texample.com/greet\tv1.2.3\th1:abc=\ndep\texample.com/local\tv0.1.0\n=>\t../local\t(devel)\t\n"
        'build\t-compiler=gc\nbuild\t-ldflags="-s -w"\nbuild\tGOOS=linux\n'
    )
    info = golang.parse_buildinfo(buildinfo("go1.19.8", text))
    assert info.go_version == "go1.19.8" and info.path == "example.com/app"
    assert info.main is not None and info.main.version == "(devel)"
    assert [(d.path, d.version, d.sum) for d in info.deps] == [
        ("example.com/greet", "v1.2.3", "h1:abc="),
        ("example.com/local", "v0.1.0", ""),
    ]
    assert info.deps[1].replaced_by is not None and info.deps[1].replaced_by.path == "../local"
    assert [(s.key, s.value) for s in info.settings] == [("-compiler", "gc"), ("-ldflags", "-s -w"), ("GOOS", "linux")]


def test_found_by_section_or_by_magic() -> None:
    table = pclntab_118([("main.main", 0x401000)], 0x401000, 0x401010)
    info = buildinfo("go1.20", "path\tx\n")
    data = b"\0" * 64 + info + b"\0" * (64 - len(info) % 16) + table
    at = 64 + len(info) + (64 - len(info) % 16)
    by_name = [Section(".go.buildinfo", 0x500000, 64, len(info)), Section(".gopclntab", 0x600000, at, len(table))]
    anonymous = [Section(".rdata", 0x500000, 0, len(data))]
    for sections in (by_name, anonymous):
        found = golang.find_pclntab(data, sections)
        assert found is not None and [f.name for f in found.functions] == ["main.main"]
        bi = golang.find_buildinfo(data, sections)
        assert bi is not None and bi.path == "x"
    assert golang.find_pclntab(b"\0" * 100, [Section(".text", 0, 0, 100)]) is None


def test_function_bound() -> None:
    table = pclntab_118([("a", 0x1000), ("b", 0x1010)], 0x1000, 0x1020)
    with pytest.raises(GoFormatError, match="over the bound"):
        golang.parse_pclntab(table, max_functions=1)
