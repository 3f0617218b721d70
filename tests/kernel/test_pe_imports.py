"""rea.operations.pe_imports on a real PE (cmark-gfm built with MinGW) and on mutants of it: never an exception."""

from __future__ import annotations

import random

from rea.operations.pe_imports import pe_imports
from tests.realcode import builds


def test_the_import_directory_of_a_real_pe() -> None:
    data = builds.cmark_gfm("x86_64-pe").binary.read_bytes()
    dlls, imports = pe_imports(data)
    assert dlls == ["KERNEL32.dll", "msvcrt.dll"]
    by_name = {i.name: i for i in imports}
    assert by_name["fopen"].library == "msvcrt.dll" and by_name["GetLastError"].library == "KERNEL32.dll"
    assert len({i.slot for i in imports}) == len(imports)


def test_mutants_read_as_something_or_nothing_never_an_error() -> None:
    data = builds.cmark_gfm("x86_64-pe").binary.read_bytes()
    rng = random.Random(24)
    for n in range(400):
        # Headers, or anywhere (the import directory, its names and thunks), and every fifth one cut short.
        mutant = bytearray(data if n % 5 else data[: rng.randrange(len(data))])
        span = 4096 if n % 2 else len(mutant)
        for _ in range(rng.randrange(1, 32)):
            mutant[rng.randrange(min(span, len(mutant)))] = rng.randrange(256)
        dlls, imports = pe_imports(bytes(mutant))
        assert len(dlls) <= 4096 and all(isinstance(i.name, str) for i in imports)
    assert pe_imports(b"") == ([], []) and pe_imports(b"MZ" + b"\xff" * 62) == ([], [])
