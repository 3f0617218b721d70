"""The kernel's C type library: parsing with located errors, layouts checked against real compilers,
the store (concurrent writers, revisions) and Evidence bundles."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import msgspec
import pytest

from rea import bundle
from rea import typelib
from rea.annotations import AnnotationStore
from rea.annotations import TypeEntry
from rea.errors import ReaError
from tests import toolchains
from tests.notebook.test_annotation_store import _record
from tests.notebook.test_annotation_store import raced

SHA = "ab" * 32

# Structs, unions, enums, typedefs, arrays with constant lengths, nested and anonymous members, bit-fields,
# function pointers, stdint names and a flexible array member: what inspect_type must lay out as compilers do.
LIBRARY = """
typedef struct opts { int verbose; int level; const char *extensions; struct opts *next; long count; } opts_t;
enum color { RED, GREEN = 5, BLUE };
struct mixed { char c; short s; long long ll; char c2; double d; char tail; };
struct bits { char a; unsigned x : 3; unsigned y : 30; short z; unsigned char w : 4; };
union u { double d; char c[3]; int i; };
typedef int (*cb_t)(void *ctx, int n);
struct arr { enum color c; uint64_t v[BLUE]; char name[2 * 8]; struct bits b[2]; cb_t cb; };
struct nested { struct inner { char a; int b; } in; union { short s; long l; } any; size_t n; };
struct packet { uint16_t len; uint8_t flags; long double ld; char data[]; };
typedef struct { uint8_t a; uint32_t b; } anon_t;
"""
CHECKED = (
    "struct opts",
    "opts_t",
    "struct mixed",
    "struct bits",
    "union u",
    "struct arr",
    "struct nested",
    "struct inner",
    "struct packet",
    "anon_t",
    "enum color",
    "cb_t",
)
# (compiler tool, extra flags, ABI): each compiler's static assertions are the truth for that data model.
COMPILERS = (
    ("gcc", (), "lp64"),
    ("gcc", ("-m32",), "ilp32-i386"),
    ("aarch64-linux-gnu-gcc", (), "lp64-aarch64"),
    ("x86_64-w64-mingw32-gcc", (), "llp64"),
    ("clang", ("--target=armv7-linux-gnueabihf",), "ilp32-arm"),
    ("clang", ("--target=i686-w64-windows-gnu",), "ilp32-win32"),
    ("clang", ("--target=arm64-apple-macos11",), "lp64-apple-arm64"),
)


def _library() -> dict[str, TypeEntry]:
    return typelib.declare(LIBRARY, {})


def _assertions(abi: str) -> str:
    """C11 static assertions of every size, alignment and member offset rea computes for ``abi``."""
    layout = typelib.Layout(_library(), typelib.ABIS[abi])
    # The compiler's own stdint types (its predefined macros): no libc headers, so -m32 needs no multilib libc.
    stdint = "".join(
        f"typedef __{m}_TYPE__ {n};\n"
        for n, m in (("uint8_t", "UINT8"), ("uint16_t", "UINT16"), ("uint32_t", "UINT32"), ("uint64_t", "UINT64"))
    )
    lines = ["#include <stddef.h>", stdint, LIBRARY]
    for name in CHECKED:
        found = layout.of_name(name)
        assert found.size is not None and found.alignment is not None
        lines.append(f'_Static_assert(sizeof({name}) == {found.size}, "sizeof {name}");')
        lines.append(f'_Static_assert(_Alignof({name}) == {found.alignment}, "_Alignof {name}");')
        for f in found.fields:
            if f.name and f.bit_size is None:
                lines.append(f'_Static_assert(offsetof({name}, {f.name}) == {f.offset}, "offsetof {name}.{f.name}");')
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("tool", "flags", "abi"), COMPILERS, ids=[c[2] for c in COMPILERS])
def test_layouts_match_the_compiler(tool: str, flags: tuple[str, ...], abi: str, tmp_path: Path) -> None:
    path = toolchains.find(tool)
    if path is None:
        toolchains.require(tool)  # skips (or fails under CI) naming the packages
        return
    src = tmp_path / "layout.c"
    src.write_text(_assertions(abi))
    proc = subprocess.run(
        [path, *flags, "-std=c11", "-fsyntax-only", str(src)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr


def test_known_layouts() -> None:
    lp64 = typelib.Layout(_library(), typelib.ABIS["lp64"])
    opts = lp64.of_name("opts_t")
    assert (opts.kind, opts.size, opts.alignment, opts.target) == ("typedef", 32, 8, "struct opts")
    assert [(f.name, f.offset, f.size) for f in opts.fields] == [
        ("verbose", 0, 4),
        ("level", 4, 4),
        ("extensions", 8, 8),
        ("next", 16, 8),
        ("count", 24, 8),
    ]
    ilp32 = typelib.Layout(_library(), typelib.ABIS["ilp32-i386"]).of_name("struct opts")
    assert [f.offset for f in ilp32.fields] == [0, 4, 8, 12, 16] and ilp32.size == 20
    color = lp64.of_name("enum color")
    assert [(e.name, e.value) for e in color.enumerators] == [("RED", 0), ("GREEN", 5), ("BLUE", 6)]
    assert lp64.of_name("cb_t").size == 8 and lp64.of_name("struct opts [4]").size == 128


def test_declaration_errors_carry_line_and_column() -> None:
    for source, line, column, words in (
        ("struct x {\n  int y\n};", 3, 1, "syntax error"),
        ("struct a { int b; };\nstruct x {\n  int a;\n  foo_t b;\n};", 4, 3, "unknown type name 'foo_t'"),
        ("/* a comment */ int f(int);", 1, 21, "declares a function"),
        ("struct a { int b; };\n  #define N 4", 2, 3, "preprocessor"),
    ):
        with pytest.raises(ReaError) as info:
            typelib.declare(source, {})
        err = info.value
        assert err.code == "invalid_request", err
        assert (err.details["line"], err.details["column"]) == (line, column), (source, err.details)
        assert words in err.message and err.details["issues"][0]["line"] == line
    with pytest.raises(ReaError) as info:
        typelib.prototype("int f(struct opts *o", _library())
    assert info.value.code == "invalid_request" and info.value.details["line"] == 1


def test_prototypes_and_type_names_parse_against_the_library() -> None:
    lib = _library()
    proto = typelib.prototype("int apply_opts(opts_t *opts, ...);", lib)
    assert proto.text == "int apply_opts(opts_t *opts, ...)" and proto.variadic
    assert [(p.name, p.type) for p in proto.parameters] == [("opts", "opts_t *")]
    assert typelib.type_name("struct opts[4]", lib) == "struct opts [4]"
    assert typelib.Layout(lib, typelib.ABIS["lp64"]).of_name("struct unknown").incomplete  # no size to give
    with pytest.raises(ReaError):
        typelib.type_name("unknown_t", lib)
    # Redeclaring replaces; a typedef cycle is refused.
    lib.update(typelib.declare("typedef int A; typedef A B;", lib))
    with pytest.raises(ReaError) as info:
        typelib.declare("typedef B A;", lib)
    assert "depend on itself" in info.value.message


_WRITER = textwrap.dedent("""
    import os, sys, time
    from rea.annotations import AnnotationStore
    from rea import typelib
    root, sha, tag, count, go = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    store = AnnotationStore(root)
    while not os.path.exists(go):
        time.sleep(0.001)
    for i in range(count):
        def change(addresses, types):
            types.update(typelib.declare(f"struct {tag}_{i} {{ int v; }};", types))
        store.update_all(sha, change)
""")


def test_two_processes_declaring_types_at_once_lose_none(tmp_path: Path) -> None:
    count = 25
    nb = raced(_WRITER, tmp_path, count, timeout=300)
    assert set(nb.types) == {f"struct {t}_{i}" for t in ("a", "b") for i in range(count)}


def test_types_travel_in_bundles_and_change_the_revision(tmp_path: Path) -> None:
    store = AnnotationStore(str(tmp_path / "one"))
    store.set_fields(SHA, {"0x10": {"name": "apply_opts"}})
    named = store.load(SHA).revision
    nb = store.update_all(SHA, lambda _a, types: types.update(_library()))
    assert nb.revision not in (None, named)
    data = b"".join(bundle.canonical_chunks([_record(SHA)], notebooks=[nb]))
    loaded = bundle.parse_bundle(data)
    assert loaded.annotations[0].types == nb.types and loaded.annotations[0].revision == nb.revision
    other = AnnotationStore(str(tmp_path / "two"))
    report = other.merge(loaded.annotations[0])
    assert report["added_types"] == len(nb.types) and other.load(SHA).types == nb.types
    # An edited declaration no longer matches the revision it travels with.
    doc = json.loads(data)
    doc["annotations"][0]["types"]["struct opts"]["c"] = "struct opts { int edited; };"
    with pytest.raises(ReaError) as info:
        bundle.parse_bundle(msgspec.json.encode(doc))
    assert info.value.details["reason"] == "annotation_revision_mismatch"
    # A target with types only (no addresses) still travels.
    only = AnnotationStore(str(tmp_path / "three")).update_all(SHA, lambda _a, types: types.update(_library()))
    again = bundle.parse_bundle(b"".join(bundle.canonical_chunks([_record(SHA)], notebooks=[only])))
    assert again.annotations[0].types == only.types and not again.annotations[0].addresses


TYPED = """
enum mode { OFF, ON = 3 };
struct rec { char name[8]; short delta; unsigned flag : 1; int level : 5; unsigned rest : 10; enum mode m;
             double ratio; struct { unsigned char r, g; } px[2]; long long big; };
"""


def test_typed_views_read_what_the_compiler_wrote(tmp_path: Path) -> None:
    """The bytes of an initialized struct, written by a compiled program, read back member by member."""
    gcc = toolchains.require("gcc")
    src = tmp_path / "dump.c"
    src.write_text(
        "#include <stdio.h>\n"
        + TYPED
        + 'int main(void) { struct rec r = {"opts", -2, 1, -7, 513, ON, 0.5, {{1, 2}, {3, 4}}, -5000000000LL};\n'
        "  fwrite(&r, sizeof r, 1, stdout); return 0; }\n"
    )
    subprocess.run([gcc, "-o", str(tmp_path / "dump"), str(src)], check=True, capture_output=True, timeout=120)
    data = subprocess.run([str(tmp_path / "dump")], check=True, capture_output=True, timeout=60).stdout
    layout = typelib.Layout(typelib.declare(TYPED, {}), typelib.ABIS["lp64"])
    assert layout.of_name("struct rec").size == len(data)
    rows, truncated = typelib.typed_view(layout, "struct rec", data, 0x4040)
    values = {r.name: r.value for r in rows}
    assert not truncated
    assert values == {
        "name": "opts",
        "delta": -2,
        "flag": 1,
        "level": -7,
        "rest": 513,
        "m": "ON",
        "ratio": 0.5,
        "px[0].r": 1,
        "px[0].g": 2,
        "px[1].r": 3,
        "px[1].g": 4,
        "big": -5000000000,
    }
