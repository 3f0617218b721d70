"""observe_native_calls on stripped real code (zstd 1.5.7 behind zstdmini): functions carry rea's names in the
file's address space (``sub_<start>``, never LLDB's ``___lldb_unnamed_symbol``), backtraces too, and the load
bias is stated once. Truth: the unstripped build's symbol table.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rea.session import Session
from rea.testing import result_of
from tests.lldb.conftest import require_lldb
from tests.realcode import builds


def test_stripped_functions_are_named_in_the_files_address_space(rea_session: Session, tmp_path: Path) -> None:
    require_lldb()
    build = builds.zstd()
    symbols = build.symbols()
    compress2, main = symbols["ZSTD_compress2"][0], symbols["main"][0]
    data = tmp_path / "input.txt"
    data.write_text("rea " * 4096)
    program = tmp_path / "zstdmini"
    shutil.copyfile(build.binary, program)
    program.chmod(0o755)
    result = result_of(
        rea_session,
        "observe_native_calls",
        {
            "executable": str(program),
            "arguments": ["c", "3", str(data)],
            "addresses": [hex(compress2)],
            "max_backtrace_frames": 4,
            "sandbox": "preferred",
        },
    )
    assert result["exit"]["exit_code"] == 0, result
    events = result["events"]
    assert len(events) == 1
    event = events[0]
    assert event["function"] == f"sub_{compress2:x}" and int(event["file_address"], 16) == compress2
    bias = int(result["load_bias"], 16)
    assert int(event["address"], 16) - bias == compress2
    names = [f["function"] for f in event["backtrace"]]
    assert names[0] == f"sub_{compress2:x}"
    # main calls ZSTD_compress2: the caller's frame is main's, named by main's start in the file.
    caller = event["backtrace"][1]
    assert caller["function"] == f"sub_{main:x}"
    assert main <= int(caller["file_address"], 16) < main + symbols["main"][1]
    assert not any("lldb_unnamed" in str(n) for n in names)
