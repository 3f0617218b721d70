"""The hand-written readers issue 46 names, against the maintained library that could replace each: time and
agreement on real inputs of this machine, so each stays or goes on figures.

- PE imports (rea.operations.pe_imports) against LIEF's parsed import table, and PE base relocations
  (rea.operations.relocations.pe_base_relocations over the .reloc bytes) against LIEF's relocations, on the
  MinGW runtime DLLs Debian ships (gcc-mingw-w64-x86-64; --pe adds files);
- the process table (rea.process.procfs.scan) against psutil's process_iter with the same fields;
- the argument quick check (rea.catalog.fastcheck) against jsonschema-rs (when installed: it is not a dependency),
  over every tool's advertised examples: a first call's cost (import, a validator built) and a warm call's.

Prints per item: files, the rea reader's and the library's median milliseconds, and whether they agree. On this
machine (2 busy cores): PE imports of 16 DLLs (79.7 MB) 12 ms against LIEF's 501 ms (import parsing only), base
relocations 13 ms against 528 ms, the process table 2.2 ms against psutil's 36 ms, all agreeing; the argument
check 17.6 ms for 256 examples against jsonschema-rs's 0.13 ms warm (104 ms to build the validators once).
"""

from __future__ import annotations

import argparse
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import lief
import psutil  # type: ignore[import-untyped]
from timing import median_ms

from rea.operations.pe_imports import pe_imports
from rea.operations.relocations import pe_base_relocations
from rea.process import procfs


def _only(imports: bool = False, reloc: bool = False) -> lief.PE.ParserConfig:
    """LIEF parsing only what is compared (the fair comparison: it reads everything by default)."""
    config = lief.PE.ParserConfig()
    for name in ("parse_exceptions", "parse_exports", "parse_rsrc", "parse_signature", "parse_arm64x_binary"):
        setattr(config, name, False)
    config.parse_imports, config.parse_reloc = imports, reloc
    return config


def lief_imports(data: bytes) -> set[tuple[str, str]]:
    binary = lief.PE.parse(data, _only(imports=True))
    assert binary is not None
    return {
        (str(lib.name), str(entry.name) if not entry.is_ordinal else f"#{entry.ordinal}")
        for lib in binary.imports
        for entry in lib.entries
    }


def rea_imports(data: bytes) -> set[tuple[str, str]]:
    return {(i.library, i.name) for i in pe_imports(data)[1]}


def reloc_bytes(data: bytes) -> tuple[bytes, int]:
    binary = lief.PE.parse(data, _only())
    assert binary is not None
    directory = binary.data_directory(lief.PE.DataDirectory.TYPES.BASE_RELOCATION_TABLE)
    assert directory is not None
    offset = binary.rva_to_offset(directory.rva)
    return data[offset : offset + directory.size], directory.size


def lief_relocations(data: bytes) -> set[int]:
    binary = lief.PE.parse(data, _only(reloc=True))
    assert binary is not None
    return {
        r.virtual_address + e.position
        for r in binary.relocations
        for e in r.entries
        if e.type != lief.PE.RelocationEntry.BASE_TYPES.ABS
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pe", nargs="*", default=[], help="more PE files")
    ns = parser.parse_args()
    files = sorted(glob.glob("/usr/lib/gcc/x86_64-w64-mingw32/*/*.dll")) + ns.pe
    if not files:
        print("no PE files: install gcc-mingw-w64-x86-64 or pass --pe")
        return
    blobs = [open(f, "rb").read() for f in files]  # noqa: SIM115 - read once, whole
    total = sum(len(b) for b in blobs)
    agree = all(rea_imports(b) == lief_imports(b) for b in blobs)
    ours = median_ms(lambda: [pe_imports(b) for b in blobs])
    theirs = median_ms(lambda: [lief_imports(b) for b in blobs])
    print(
        f"PE imports, {len(blobs)} DLLs ({total / 1e6:.1f} MB): rea {ours:.1f} ms, LIEF {theirs:.1f} ms; agree: {agree}"
    )
    tables = [reloc_bytes(b)[0] for b in blobs]
    agree = all(
        {rva for rva, _ in pe_base_relocations(t)} == lief_relocations(b) for t, b in zip(tables, blobs, strict=True)
    )
    ours = median_ms(lambda: [list(pe_base_relocations(t)) for t in tables])
    theirs = median_ms(lambda: [lief_relocations(b) for b in blobs])
    print(
        f"PE base relocations, same DLLs: rea {ours:.1f} ms (table bytes given), LIEF {theirs:.1f} ms; agree: {agree}"
    )
    fields = ["pid", "ppid"]
    table = procfs.scan()
    via_psutil = {p.info["pid"]: p.info["ppid"] for p in psutil.process_iter(fields)}
    common = set(table) & set(via_psutil)
    agree = all(table[p].ppid == via_psutil[p] for p in common)
    ours = median_ms(procfs.scan)
    theirs = median_ms(lambda: {p.info["pid"]: p.info for p in psutil.process_iter([*fields, "create_time"])})
    print(
        f"process table, {len(table)} processes: rea procfs {ours:.1f} ms, psutil {theirs:.1f} ms; ppid agree: {agree}"
    )
    schemas()


def schemas() -> None:
    import subprocess

    from rea.catalog import fastcheck
    from rea.registry import default_registry

    registry = default_registry()
    cases = [(t.input_schema, dict(e)) for t in registry.tools.values() for e in t.examples]
    valid = sum(1 for schema, args in cases if fastcheck.check(schema, args) == fastcheck.VALID)
    ours = median_ms(lambda: [fastcheck.check(schema, args) for schema, args in cases])
    print(f"argument check, {len(cases)} tool examples: rea fastcheck {ours:.2f} ms (decides {valid} VALID)", end="")
    try:
        import jsonschema_rs
    except ImportError:
        print("; jsonschema-rs not installed")
        return
    validators = [jsonschema_rs.validator_for(schema) for schema, _ in cases]
    theirs = median_ms(lambda: [v.is_valid(args) for v, (_, args) in zip(validators, cases, strict=True)])
    build = median_ms(lambda: [jsonschema_rs.validator_for(schema) for schema, _ in cases])
    print(f"; jsonschema-rs {theirs:.2f} ms warm, {build:.1f} ms to build the validators")
    # A terminal command's first call: a fresh interpreter importing the checker and checking one call.
    code = {
        "fastcheck": "from rea.catalog import fastcheck; fastcheck.check({'type': 'object'}, {})",
        "jsonschema-rs": "import jsonschema_rs; jsonschema_rs.validator_for({'type': 'object'}).is_valid({})",
    }
    for name, line in code.items():
        argv = [sys.executable, "-c", line]
        ms = median_ms(lambda argv=argv: subprocess.run(argv, check=True), 3)  # type: ignore[misc]
        print(f"  a fresh interpreter with {name}: {ms:.0f} ms")


if __name__ == "__main__":
    main()
