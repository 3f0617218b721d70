"""Where a program's loader finds its libraries (rea.dependencies), on files built now.

ld.so's order (RPATH unless RUNPATH, RUNPATH, ld.so.conf, the default folders), ``$ORIGIN``, and a library of
another machine skipped as ld.so skips it; ld.so.conf ``include`` loops end; PE looks in the program's folder.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from rea.dependencies import ld_so_conf_dirs
from rea.dependencies import resolve
from tests import toolchains


def _lib(cc: str, path: Path) -> None:
    src = path.with_suffix(".c")
    src.write_text("int dep_value(void) { return 7; }\n")
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(path), str(src)], check=True)


def test_the_loader_order_and_machine_are_followed(tmp_path: Path) -> None:
    gcc = toolchains.require("gcc")
    arm = toolchains.require("aarch64-linux-gnu-gcc")
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    (tmp_path / "conf").mkdir()
    # The first RUNPATH folder holds an AArch64 build of the library: ld.so skips it for an x86-64 program.
    _lib(arm, tmp_path / "first" / "libdep.so")
    _lib(gcc, tmp_path / "second" / "libdep.so")
    (tmp_path / "main.c").write_text("int dep_value(void);\nint main(void) { return dep_value(); }\n")
    program = tmp_path / "program"
    subprocess.run(
        [gcc, "-o", str(program), str(tmp_path / "main.c"), "-L", str(tmp_path / "second"), "-ldep"], check=True
    )
    conf = tmp_path / "conf" / "ld.so.conf"
    conf.write_text(f"include {tmp_path}/conf/*.conf\n# a comment\n{tmp_path}/nowhere\n")
    (tmp_path / "conf" / "loop.conf").write_text(f"include {conf}\n")
    linkage = {"needed": ["libdep.so", "libmissing.so.1"], "runpath": ["$ORIGIN/first:$ORIGIN/second"], "rpath": []}
    found = {f.name: f for f in resolve(str(program), "elf", linkage, str(conf))}
    assert found["libdep.so"].path == str((tmp_path / "second" / "libdep.so").resolve())
    assert found["libdep.so"].rule == "runpath"
    missing = found["libmissing.so.1"]
    assert (
        missing.path is None and f"{tmp_path}/first" in missing.searched and f"{tmp_path}/nowhere" in missing.searched
    )
    # RPATH is ignored when RUNPATH is present, and read when it is not.
    only_rpath = resolve(str(program), "elf", {"needed": ["libdep.so"], "rpath": [f"{tmp_path}/second"]}, str(conf))
    assert only_rpath[0].rule == "rpath"
    assert ld_so_conf_dirs(str(conf)) == [f"{tmp_path}/nowhere"]


def test_a_dll_is_found_beside_the_program_caselessly(tmp_path: Path) -> None:
    (tmp_path / "prog.exe").write_bytes(b"MZ")
    (tmp_path / "Helper.DLL").write_bytes(b"MZ")
    found = resolve(str(tmp_path / "prog.exe"), "pe", {"needed": ["helper.dll", "KERNEL32.dll"]})
    assert found[0].path == str(tmp_path / "Helper.DLL") and found[0].rule == "program folder"
    assert found[1].path is None and found[1].searched == (str(tmp_path),)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400))
def test_any_conf_file_reads_without_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        conf = Path(folder) / "ld.so.conf"
        conf.write_bytes(data)
        dirs = ld_so_conf_dirs(str(conf))
        assert all(d.startswith("/") for d in dirs)
