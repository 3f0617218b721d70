"""Several open targets in one session (issue 25 item 1), through the SDK client over stdio.

A program and its own shared library, built now: each opens under an alias on its own provider, every
target-bound tool runs on the target it names, closing one leaves the other usable, and the single-target
default (open without an alias replaces the active target) stays what it was.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests import toolchains
from tests.mcp.harness import connect
from tests.mcp.harness import error_of
from tests.mcp.harness import normalized
from tests.mcp.harness import structured

LIBRARY_C = r"""
int lib_scale(int x) { return x * 7 + 1; }
int lib_twice(int x) { return lib_scale(x) + lib_scale(x + 1); }
"""
PROGRAM_C = r"""
#include <stdio.h>
int lib_twice(int x);
int main(int argc, char **argv) { printf("%d\n", lib_twice(argc)); return 0; }
"""


@pytest.fixture(scope="module")
def program_and_library(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    gcc = toolchains.require("gcc")
    root = tmp_path_factory.mktemp("linked")
    (root / "lib.c").write_text(LIBRARY_C)
    (root / "main.c").write_text(PROGRAM_C)
    library = root / "libscale.so"
    program = root / "program"
    subprocess.run([gcc, "-O1", "-shared", "-fPIC", "-o", str(library), str(root / "lib.c")], check=True)
    subprocess.run(
        [gcc, "-O1", "-o", str(program), str(root / "main.c"), "-L", str(root), "-lscale", "-Wl,-rpath,$ORIGIN"],
        check=True,
    )
    return program, library


def test_two_targets_on_two_providers_each_answer_for_itself(program_and_library: tuple[Path, Path]) -> None:
    program, library = program_and_library

    async def main() -> None:
        async with connect() as client:
            prog = structured(await client.call_tool("open_binary", {"path": str(program), "alias": "prog"}))
            lib = structured(
                await client.call_tool("open_binary", {"path": str(library), "alias": "lib", "provider_id": "radare2"})
            )
            assert (prog["target_id"], lib["target_id"]) == ("t1", "t2")
            assert prog["analysis_run"]["run_id"] != lib["analysis_run"]["run_id"]

            # The library (opened last) is active; the program answers when named, by alias or id.
            active = structured(await client.call_tool("procedure_info", {"procedure": "lib_twice"}))
            # Each record names its own target's provenance (artifact, provider, profile: said by open_binary).
            assert active["provenance"] == lib["analysis_provider_binding"]["provenance"]
            named = structured(await client.call_tool("procedure_info", {"procedure": "main", "target": "prog"}))
            assert named["provenance"] == prog["analysis_provider_binding"]["provenance"]
            assert prog["analysis_provider_binding"]["provider"]["id"] == "native"
            assert lib["analysis_provider_binding"]["provider"]["id"] == "radare2"
            by_id = structured(await client.call_tool("procedure_info", {"procedure": "main", "target": "t1"}))
            assert by_id["evidence_id"] == named["evidence_id"]
            # In the program, lib_twice is the import the library answers for.
            stub = structured(await client.call_tool("procedure_info", {"procedure": "lib_twice", "target": "prog"}))
            assert stub["normalized_result"]["kind"] == "import"
            assert active["normalized_result"]["kind"] == "local"

            # The program's call to lib_twice leads into the library: a cross-binary edge to the export.
            callees = structured(await client.call_tool("procedure_callees", {"procedure": "main", "target": "prog"}))
            into = next(c for c in callees["normalized_result"]["callees"] if c["name"] == "lib_twice")
            assert into["kind"] == "import"
            assert into["exported_by"] == {
                "target_id": "t2",
                "alias": "lib",
                "name": "lib_twice",
                "address": active["normalized_result"]["address"],
            }
            # A name answers in every open target when the call names none, and in one when it does.
            everywhere = structured(await client.call_tool("find_xrefs_to_name", {"name": "lib_twice"}))
            where = {(m["target_id"], m["kind"] == "function") for m in everywhere["normalized_result"]["matches"]}
            assert {t for t, _ in where} == {"t1", "t2"}
            only = structured(await client.call_tool("find_xrefs_to_name", {"name": "lib_twice", "target": "lib"}))
            assert all("target_id" not in m for m in only["normalized_result"]["matches"])
            session = structured(await client.call_tool("binary_session", {}))
            assert session["active_target_id"] == "t2"
            listed = {t["alias"]: t for t in session["open_targets"]}
            assert listed["prog"]["provider_id"] == "native" and listed["lib"]["provider_id"] == "radare2"

            unknown = error_of(await client.call_tool("procedure_info", {"procedure": "main", "target": "nope"}))
            assert unknown["code"] == "invalid_request" and unknown["details"]["issues"][0]["path"] == "target"

            # Closing the library keeps the program (and the retained Evidence).
            closed = structured(await client.call_tool("close_binary", {"target": "lib"}))
            assert closed["target_id"] == "t2"
            after = structured(await client.call_tool("binary_session", {}))
            assert after["active_target_id"] == "t1" and after["retained_evidence_count"] >= 3
            still = structured(await client.call_tool("procedure_callees", {"procedure": "main"}))
            alone = next(c for c in still["normalized_result"]["callees"] if c.get("name") == "lib_twice")
            assert "exported_by" not in alone
            gone = error_of(await client.call_tool("procedure_info", {"procedure": "lib_twice", "target": "lib"}))
            assert gone["code"] == "invalid_request"

    anyio.run(main)


def test_open_without_an_alias_replaces_the_active_target(
    program_and_library: tuple[Path, Path], hello_elf: Path
) -> None:
    program, library = program_and_library

    async def main() -> None:
        async with connect() as client:
            structured(await client.call_tool("open_binary", {"path": str(program)}))
            structured(await client.call_tool("open_binary", {"path": str(library)}))
            session = structured(await client.call_tool("binary_session", {}))
            assert "open_targets" not in session and session["target"]["resolved_path"] == str(library)

    anyio.run(main)


def test_open_targets_are_bounded(program_and_library: tuple[Path, Path], hello_elf: Path) -> None:
    program, library = program_and_library

    async def main() -> None:
        async with connect(REA_MAX_OPEN_TARGETS="2") as client:
            structured(await client.call_tool("open_binary", {"path": str(program), "alias": "a"}))
            structured(await client.call_tool("open_binary", {"path": str(library), "alias": "b"}))
            third = error_of(await client.call_tool("open_binary", {"path": str(hello_elf), "alias": "c"}))
            assert third["code"] == "resource_constraint"
            assert third["details"]["setting"] == "REA_MAX_OPEN_TARGETS"
            # Reopening under an alias already open replaces that target: no bound is crossed.
            structured(await client.call_tool("open_binary", {"path": str(hello_elf), "alias": "b"}))
            bad = error_of(await client.call_tool("open_binary", {"path": str(hello_elf), "alias": "t7"}))
            assert bad["code"] == "invalid_request"

    anyio.run(main)


def test_calls_are_followed_across_the_binaries_opened_with_the_program(
    program_and_library: tuple[Path, Path],
) -> None:
    """open_binary with_dependencies opens what the loader would load; graphs and paths cross into it."""
    program, library = program_and_library

    async def main() -> None:
        async with connect() as client:
            opened = structured(
                await client.call_tool(
                    "open_binary", {"path": str(program), "alias": "prog", "with_dependencies": True}
                )
            )
            deps = {d["name"]: d for d in opened["dependencies"]["opened"]}
            # The library is found through the program's own search path ($ORIGIN), libc through ld.so.conf.
            assert deps["libscale.so"]["path"] == str(library.resolve())
            assert deps["libscale.so"]["rule"] in ("rpath", "runpath")
            assert deps["libc.so.6"]["rule"] in ("ld.so.conf", "default")
            assert opened["dependencies"]["not_found"] == []
            lib = deps["libscale.so"]["target_id"]
            session = structured(await client.call_tool("binary_session", {}))
            assert session["active_target_id"] == opened["target_id"]  # the program stays active
            assert {t["target_id"] for t in session["open_targets"]} >= {opened["target_id"], lib}

            # Forward from main: the import leads into the library, and on to the library's own callee.
            graph = normalized(await client.call_tool("get_call_graph", {"address": "main", "depth": 3}))
            in_lib = {n["name"]: n for n in graph["nodes"] if n.get("target_id") == lib}
            assert {"lib_twice", "lib_scale"} <= set(in_lib)
            into = next(e for e in graph["edges"] if e.get("to_target") == lib and "from_target" not in e)
            assert into["kind"] == "import" and into["to"] == in_lib["lib_twice"]["address"]
            assert any(
                e.get("from_target") == lib and e["to"] == in_lib["lib_scale"]["address"] for e in graph["edges"]
            )

            # Backward from the library's procedure: up to the program's main, through its import.
            back = structured(
                await client.call_tool(
                    "get_call_graph", {"address": "lib_scale", "direction": "backward", "depth": 3, "target": lib}
                )
            )["normalized_result"]
            mains = [n for n in back["nodes"] if n["name"] == "main"]
            assert [n.get("target_id") for n in mains] == [opened["target_id"]]

            # A path from main to a procedure only the library has.
            trace = structured(await client.call_tool("trace_call_path", {"start": "main", "goal": "lib_scale"}))
            body = trace["normalized_result"]
            assert body["reached"] is True and body["goal"]["target_id"] == lib
            path = body["paths"][0]
            assert [n["name"] for n in path["nodes"]] == ["main", "lib_twice", "lib_scale"]
            # -fPIC: the library calls its own export through its PLT too, an import bound to itself.
            assert [h["edge"] for h in path["hops"]] == ["import", "import"]

    anyio.run(main)


def test_xrefs_cross_between_an_import_and_its_export(program_and_library: tuple[Path, Path]) -> None:
    program, library = program_and_library

    async def main() -> None:
        async with connect() as client:
            prog = structured(await client.call_tool("open_binary", {"path": str(program), "alias": "prog"}))
            lib = structured(await client.call_tool("open_binary", {"path": str(library), "alias": "lib"}))
            export = normalized(await client.call_tool("procedure_address", {"procedure": "lib_twice"}))
            stub = structured(await client.call_tool("procedure_address", {"procedure": "lib_twice", "target": "prog"}))
            main_at = structured(await client.call_tool("procedure_address", {"procedure": "main", "target": "prog"}))
            # At the export: main's call in the program, through the program's import.
            into = normalized(await client.call_tool("xrefs", {"address": export["address"]}))
            assert {(r["target_id"], r["from_procedure"]) for r in into["imported_by"]} == {
                (prog["target_id"], main_at["normalized_result"]["address"])
            }
            # At the import: where it leads.
            out = structured(
                await client.call_tool("xrefs", {"address": stub["normalized_result"]["address"], "target": "prog"})
            )["normalized_result"]
            assert out["exported_by"]["target_id"] == lib["target_id"]
            assert out["exported_by"]["address"] == export["address"]

    anyio.run(main)


def _pe_pair(root: Path) -> Path:
    cc = toolchains.require("x86_64-w64-mingw32-gcc")
    (root / "lib.c").write_text(LIBRARY_C)
    (root / "main.c").write_text("int lib_twice(int x);\nint main(int argc, char **argv) { return lib_twice(argc); }\n")
    subprocess.run([cc, "-O1", "-shared", "-o", str(root / "libscale.dll"), str(root / "lib.c")], check=True)
    subprocess.run(
        [cc, "-O1", "-o", str(root / "program.exe"), str(root / "main.c"), "-L", str(root), "-lscale"], check=True
    )
    return root / "program.exe"


def _macho_pair(root: Path) -> Path:
    from tests.fixtures.native.native_fixtures import LIBSYSTEM_TBD

    clang, lld = toolchains.require("clang"), toolchains.require("ld64.lld")
    (root / "lib.c").write_text(LIBRARY_C)
    (root / "main.c").write_text("int lib_twice(int x);\nint main(int argc, char **argv) { return lib_twice(argc); }\n")
    (root / "libSystem.tbd").write_text(LIBSYSTEM_TBD)
    for name in ("lib", "main"):
        subprocess.run(
            [
                clang,
                "-target",
                "arm64-apple-macos11",
                "-O1",
                "-c",
                str(root / f"{name}.c"),
                "-o",
                str(root / f"{name}.o"),
            ],
            check=True,
        )
    link = [lld, "-arch", "arm64", "-platform_version", "macos", "11.0", "11.0"]
    tbd, dylib = str(root / "libSystem.tbd"), str(root / "libscale.dylib")
    install = ["-dylib", "-install_name", "@rpath/libscale.dylib"]
    subprocess.run([*link, *install, "-o", dylib, str(root / "lib.o"), tbd], check=True)
    program = ["-o", str(root / "program"), str(root / "main.o"), dylib, tbd, "-rpath", "@loader_path"]
    subprocess.run([*link, *program], check=True)
    return root / "program"


@pytest.mark.parametrize(
    ("build", "library", "rule", "main", "twice"),
    [
        (_pe_pair, "libscale.dll", "program folder", "main", "lib_twice"),
        (_macho_pair, "@rpath/libscale.dylib", "rpath", "_main", "_lib_twice"),
    ],
    ids=["pe", "mach-o"],
)
def test_a_dll_and_a_dylib_are_found_and_followed(
    tmp_path: Path, build: Any, library: str, rule: str, main: str, twice: str
) -> None:
    """PE: the DLL beside the program, matched by its import's DLL name; Mach-O: @rpath through LC_RPATH."""
    program = build(tmp_path)

    async def run() -> None:
        async with connect() as client:
            opened = structured(
                await client.call_tool(
                    "open_binary", {"path": str(program), "alias": "prog", "with_dependencies": True}
                )
            )
            deps = {d["name"]: d for d in opened["dependencies"]["opened"]}
            assert deps[library]["rule"] == rule
            lib = deps[library]["target_id"]
            callees = normalized(await client.call_tool("procedure_callees", {"procedure": main}))
            into = next(c for c in callees["callees"] if c["name"] == twice)
            assert into["exported_by"]["target_id"] == lib
            export = structured(await client.call_tool("procedure_address", {"procedure": twice, "target": lib}))
            assert into["exported_by"]["address"] == export["normalized_result"]["address"]

    anyio.run(run)
