"""Hostile .NET assemblies: each damage is a typed error naming the structure, never a traceback or parser text.

The damaged files are a compiled assembly with bytes patched at offsets dnfile reports for the intact one.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dnfile
import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from tests import toolchains
from tests.managed import csfixtures as csharp

TOOLS = ("inspect_managed_artifact", "inspect_managed_members", "inspect_managed_native_boundaries")
PARSER_WORDS = ("Traceback", "dnFormatError", "PEFormatError", "IndexError", "KeyError", "struct.error", "0x%")


@pytest.fixture(scope="module")
def intact(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    mcs = toolchains.require("mcs")
    folder = tmp_path_factory.mktemp("managed-hostile")
    return csharp.compile_cs(mcs, folder, "Lib.dll", csharp.LIB_V1).read_bytes()


def _layout(data: bytes) -> tuple[Any, int]:
    pe: Any = dnfile.dnPE(data=data, clr_lazy_load=True)  # type: ignore[no-untyped-call]
    return pe, int(pe.get_offset_from_rva(pe.net.struct.MetaDataRva))


def _stream(pe: Any, name: bytes) -> Any:
    return next(s for s in pe.net.metadata.streams_list if s.struct.Name.rstrip(b"\x00") == name)


def _patch(data: bytes, offset: int, value: bytes) -> bytes:
    return data[:offset] + value + data[offset + len(value) :]


def truncated_metadata(data: bytes) -> bytes:
    _, meta = _layout(data)
    return data[: meta + 64]


def stream_header_past_end(data: bytes) -> bytes:
    pe, _ = _layout(data)
    at = data.index(b"#Strings\x00")
    return _patch(data, at - 8, struct.pack("<I", pe.net.struct.MetaDataSize - 16))


def stream_header_past_the_file(data: bytes) -> bytes:
    at = data.index(b"#Strings\x00")
    return _patch(data, at - 8, struct.pack("<I", 0x7FFFFFF0))


def string_index_out_of_range(data: bytes) -> bytes:
    pe, _ = _layout(data)
    table = pe.net.mdtables.TypeDef
    # TypeDef row 2: Flags (4 bytes), then the TypeName index (2 bytes in a small assembly).
    return _patch(data, table.file_offset + table.row_size + 4, b"\xff\xff")


def claims_2_24_rows(data: bytes) -> bytes:
    pe, meta = _layout(data)
    tables = meta + _stream(pe, b"#~").struct.Offset
    return _patch(data, tables + 24, struct.pack("<I", 1 << 24))  # the first present table: Module


def nesting_cycle(data: bytes) -> bytes:
    pe, _ = _layout(data)
    table = pe.net.mdtables.NestedClass
    nested = data[table.file_offset : table.file_offset + 2]
    return _patch(data, table.file_offset + 2, nested)  # the type encloses itself


def self_referential_typespec(data: bytes) -> bytes:
    pe, _ = _layout(data)
    for rid, row in enumerate(pe.net.mdtables.TypeSpec.rows, 1):
        sig = row.Signature.value
        if sig[:2] == b"\x15\x12":  # GENERICINST CLASS <coded type> ...: point the generic type at this TypeSpec
            at = data.index(bytes([len(sig)]) + sig) + 3
            return _patch(data, at, bytes([(rid << 2) | 2]))
    raise AssertionError("no generic instance TypeSpec")


def not_a_pe(data: bytes) -> bytes:
    return b"MZ" + b"\x00" * 200


Mutation = Callable[[bytes], bytes]
CASES: list[tuple[Mutation, str, str]] = [
    (truncated_metadata, "unsupported_target", "metadata root"),
    (stream_header_past_end, "unsupported_target", "#Strings stream header"),
    # dnfile cannot read a stream table pointing outside the file: the metadata root is what is named.
    (stream_header_past_the_file, "unsupported_target", "metadata root"),
    (string_index_out_of_range, "unsupported_target", "#Strings heap"),
    (claims_2_24_rows, "resource_constraint", "Module table"),
    (nesting_cycle, "unsupported_target", "NestedClass table"),
    (self_referential_typespec, "unsupported_target", "TypeSpec table"),
    (not_a_pe, "unsupported_target", "PE header"),
]


def _outcome(session: Session, tool: str, path: Path) -> ReaError | None:
    try:
        call_tool(
            session,
            tool,
            {"path": str(path), "method_limit": 10_000} if tool.endswith("members") else {"path": str(path)},
        )
    except ReaError as exc:
        return exc
    return None


@pytest.mark.parametrize(("mutate", "code", "structure"), CASES, ids=[c[0].__name__ for c in CASES])
def test_damage_is_a_typed_error_naming_the_structure(
    session: Session, intact: bytes, tmp_path: Path, mutate: Mutation, code: str, structure: str
) -> None:
    path = tmp_path / "Lib.dll"
    path.write_bytes(mutate(intact))
    members = _outcome(session, "inspect_managed_members", path)
    assert members is not None, "inspect_managed_members read a damaged assembly without error"
    assert members.code == code and members.details["structure"] == structure, members.projection_dict()
    for tool in TOOLS:
        err = _outcome(session, tool, path)
        if err is None:  # a tool that never reads the damaged structure may answer
            continue
        assert err.code in ("unsupported_target", "resource_constraint"), (tool, err.projection_dict())
        assert err.details.get("structure") and err.remediation
        assert not any(word in err.message for word in PARSER_WORDS), err.message


def test_bounds_are_resource_constraints(session: Session, intact: bytes, tmp_path: Path) -> None:
    path = tmp_path / "Lib.dll"
    path.write_bytes(intact)
    for bound, structure in (
        ("max_file_bytes", "file"),
        ("max_metadata_bytes", "metadata"),
        ("max_table_rows", "TypeRef table"),
    ):
        with pytest.raises(ReaError) as info:
            call_tool(session, "inspect_managed_artifact", {"path": str(path), bound: 2})
        assert info.value.code == "resource_constraint" and info.value.details["bound"] == bound
        assert info.value.details["structure"] == structure
