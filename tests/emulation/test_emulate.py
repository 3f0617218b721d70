"""emulate_procedure and emulate_range under Unicorn on routines compiled in the session, per architecture."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rea.errors import ReaError
from rea.process import procfs
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of

ARCHES = ["x86_64", "arm64", "x86", "arm"]


def _open(session: Session, routines: dict[str, Path], arch: str) -> None:
    if arch not in routines:
        pytest.skip(f"no {arch} toolchain here (clang and ld.lld build the ARM fixture)")
    result_of(session, "open_binary", {"path": str(routines[arch])})


def _run(session: Session, **args: Any) -> dict[str, Any]:
    result: dict[str, Any] = result_of(session, "emulate_procedure", args)
    return result


@pytest.mark.parametrize("arch", ARCHES)
def test_arithmetic_returns_its_value(rea_session: Session, routines: dict[str, Path], arch: str) -> None:
    _open(rea_session, routines, arch)
    out = _run(rea_session, procedure="arith", arguments=[3, 4, 5])
    assert out["stop"]["reason"] == "returned"
    assert out["return_value"]["int32"] == (3 * 4 + 5) ^ 0x55
    assert out["architecture"] == arch and out["calls"] == [] and out["memory_written"]["total_bytes"] == 0
    negative = _run(rea_session, procedure="arith", arguments=[-7, 3, 0])
    assert negative["return_value"]["int32"] == (-21) ^ 0x55


@pytest.mark.parametrize("arch", ARCHES)
def test_string_decryption_over_the_encrypted_table(rea_session: Session, routines: dict[str, Path], arch: str) -> None:
    _open(rea_session, routines, arch)
    out = _run(rea_session, procedure="decrypt_table")
    assert out["stop"]["reason"] == "returned"
    # The returned pointer is the global plain[], shown at its static address with the text it holds.
    pointed = out["return_value"]["points_to"]
    assert pointed["text"] == "hello world" and pointed["region"] == ".bss"
    # plain[] and counter (counter++) are the writes outside the stack: 11 bytes of text and one of the counter
    # (runs closer than 8 bytes are shown as one).
    written = out["memory_written"]
    assert all(r["region"] == ".bss" for r in written["runs"])
    assert b"hello world".hex() in "".join(r["hex"] for r in written["runs"])
    assert 12 <= written["total_bytes"] <= 12 + 8 and not written["truncated"]
    # The routine itself over bytes the caller gives: the output buffer holds the plain text after the run.
    direct = _run(rea_session, procedure="decrypt", arguments=[{"size": 16}, {"hex": "2b262f2f2c"}, 5, 0x43])
    assert direct["buffers"][0]["text"] == "hello" and direct["buffers"][0]["hex"].startswith("68656c6c6f00")


@pytest.mark.parametrize("arch", ARCHES)
def test_strlen_memcpy_and_malloc_are_modelled(rea_session: Session, routines: dict[str, Path], arch: str) -> None:
    _open(rea_session, routines, arch)
    out = _run(rea_session, procedure="copy_len", arguments=[{"size": 32}, {"text": "hello"}])
    assert out["stop"]["reason"] == "returned" and out["return_value"]["int32"] == 5
    dst, src = out["buffers"]
    assert dst["text"] == "hello" and src["text"] == "hello"
    calls = out["calls"]
    assert [c["name"] for c in calls] == ["strlen", "memcpy"]
    assert calls[0]["arguments"] == [src["address"]] and calls[0]["return_value"] == "0x5"
    assert calls[1]["arguments"] == [dst["address"], src["address"], "0x6"]
    assert out["calls_total"] == 2
    upper = _run(rea_session, procedure="dup_upper", arguments=[{"text": "hello"}])
    assert upper["return_value"]["points_to"] == {
        "address": upper["return_value"]["hex"],
        "region": "heap",
        "text": "HELLO",
    }
    assert upper["heap"] == {"allocations": 1, "live": 1, "live_bytes": 6, "failed": 0}
    assert any(r["region"] == "heap" and r["text"] == "HELLO" for r in upper["memory_written"]["runs"])


@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
def test_an_unmodelled_import_stops_with_its_name_or_returns_the_value_set(
    rea_session: Session, routines: dict[str, Path], arch: str
) -> None:
    _open(rea_session, routines, arch)
    out = _run(rea_session, procedure="say", arguments=[{"text": "hi"}])
    stop = out["stop"]
    assert stop["reason"] == "unmodelled_import" and stop["import_name"] == "puts"
    assert "import_returns" in stop["detail"] and "return_value" not in out
    stubbed = _run(rea_session, procedure="say", arguments=[{"text": "hi"}], import_returns={"puts": 41})
    assert stubbed["return_value"]["int32"] == 42
    assert stubbed["calls"][0]["stubbed"] == "import_returns"


@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
def test_an_infinite_loop_stops_at_the_bounds(rea_session: Session, routines: dict[str, Path], arch: str) -> None:
    _open(rea_session, routines, arch)
    out = _run(rea_session, procedure="spin", arguments=[1], max_instructions=200_000)
    assert out["stop"]["reason"] == "instruction_limit" and "return_value" not in out
    assert out["stop"]["procedure"].startswith("spin+")
    timed = _run(rea_session, procedure="spin", arguments=[1], max_instructions=500_000_000, timeout_ms=300)
    assert timed["stop"]["reason"] == "time_limit"
    assert 250 <= timed["elapsed_ms"] < 5000


def test_a_range_runs_from_the_registers_given(rea_session: Session, routines: dict[str, Path]) -> None:
    _open(rea_session, routines, "x86_64")
    listing = result_of(rea_session, "read_function_instructions", {"procedure": "arith"})["instructions"]
    ret = next(i["address"] for i in listing if i["text"].startswith("ret"))
    out = result_of(
        rea_session,
        "emulate_range",
        {"start": listing[0]["address"], "end": ret, "registers": {"rdi": 3, "rsi": 4, "rdx": 5}},
    )
    assert out["stop"]["reason"] == "reached_end" and out["stop"]["pc"] == ret
    assert int(out["registers"]["rax"], 16) & 0xFFFFFFFF == (3 * 4 + 5) ^ 0x55
    with pytest.raises(ReaError) as info:
        call_tool(rea_session, "emulate_range", {"start": listing[0]["address"], "end": ret, "registers": {"zz9": 1}})
    assert info.value.code == "invalid_request"


def test_a_pie_with_libc_imports_and_a_null_pointer(rea_session: Session, pie_program: Path) -> None:
    result_of(rea_session, "open_binary", {"path": str(pie_program)})
    out = _run(rea_session, procedure="copy_len", arguments=[{"size": 8}, {"text": "abc"}])
    assert out["return_value"]["int32"] == 3 and [c["name"] for c in out["calls"]] == ["strlen", "memcpy"]
    # Loaded away from page 0, so a null pointer faults as in a process.
    null = _run(rea_session, procedure="copy_len", arguments=[{"size": 8}, 0])
    assert null["stop"]["reason"] == "import_fault" and null["stop"]["procedure"] == "strlen"
    faulted = _run(rea_session, procedure="decrypt", arguments=[0, 0, 4, 1])
    assert faulted["stop"]["reason"] == "memory_fault" and faulted["stop"]["fault_address"] == "0x0"
    assert faulted["stop"]["procedure"].startswith("decrypt")


def test_the_worker_is_kept_between_calls_and_ends_with_the_session(
    rea_registry: Registry, routines: dict[str, Path]
) -> None:
    session = Session(rea_registry)
    result_of(session, "open_binary", {"path": str(routines["x86_64"])})
    _run(session, procedure="arith", arguments=[1, 2, 3])
    channel = session.state["emulation.workers"].channel
    pid = channel.pid
    assert pid is not None
    _run(session, procedure="arith", arguments=[4, 5, 6])
    assert channel.pid == pid
    session.close()
    gone = procfs.read(pid)
    assert channel.pid is None and (gone is None or gone.state == "Z")


def test_a_notebook_name_and_a_stripped_address(rea_session: Session, routines: dict[str, Path]) -> None:
    _open(rea_session, routines, "x86_64")
    address = result_of(rea_session, "procedure_address", {"procedure": "arith"})["address"]
    result_of(rea_session, "set_address_name", {"address": address, "name": "mix_three"})
    by_name = _run(rea_session, procedure="mix_three", arguments=[2, 3, 4])
    by_address = _run(rea_session, procedure=address, arguments=[2, 3, 4])
    assert by_name["procedure"] == "mix_three" and by_name["start"] == address
    assert by_name["return_value"] == by_address["return_value"] and by_name["return_value"]["int32"] == 10 ^ 0x55
    # Big values go as hex text; a negative one is its two's complement in the register.
    wide = _run(rea_session, procedure="arith", arguments=["0x100000002", 3, "-0x1"])
    assert wide["return_value"]["int32"] == (2 * 3 - 1) ^ 0x55


def test_main_with_an_argument_vector(rea_session: Session, pie_program: Path) -> None:
    result_of(rea_session, "open_binary", {"path": str(pie_program)})
    out = _run(
        rea_session, procedure="main", arguments=[3, {"pointers": [{"text": "prog"}, {"text": "a"}, {"text": "b"}]}]
    )
    assert out["stop"]["reason"] == "returned" and out["return_value"]["int32"] == (3 * 2 + 3) ^ 0x55
    labels = [b["label"] for b in out["buffers"]]
    assert labels == ["argument 1[0]", "argument 1[1]", "argument 1[2]", "argument 1"]
    table = bytes.fromhex(out["buffers"][3]["hex"])
    assert int.from_bytes(table[:8], "little") == int(out["buffers"][0]["address"], 16)
    assert table[24:32] == b"\0" * 8
