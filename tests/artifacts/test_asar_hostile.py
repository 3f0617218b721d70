"""Malformed and hostile ASARs written directly from Python: every one is a typed error, never a crash."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import call_tool
from rea_plugins.asar.reader import AsarArchive


def _open_error(path: Path, **kw: Any) -> ReaError:
    with pytest.raises(ReaError) as err:
        AsarArchive.open(str(path), **kw)
    return err.value


def _tool_error(session: Session, path: Path, **args: Any) -> ReaError:
    with pytest.raises(ReaError) as err:
        call_tool(session, "inspect_artifact", {"path": str(path), **args})
    return err.value


def test_shorter_than_prefix_is_truncated(tmp_path: Path) -> None:
    p = tmp_path / "short.asar"
    p.write_bytes(struct.pack("<II", 4, 100))
    assert _open_error(p).code == "truncated"


def test_truncated_file_is_truncated(tmp_path: Path, kit: Any, rea_session: Session) -> None:
    full = kit.asar_bytes(*kit.build_asar({"a.js": b"x" * 1000, "b.js": b"y" * 1000}))
    p = tmp_path / "cut.asar"
    p.write_bytes(full[:-500])
    err = _open_error(p)
    assert err.code == "truncated" and err.details["logical_path"] == "b.js"
    assert _tool_error(rea_session, p).code == "truncated"
    p.write_bytes(full[:40])  # cut inside the header
    assert _open_error(p).code == "truncated"


def test_bad_size_pickle(tmp_path: Path, kit: Any) -> None:
    data = bytearray(kit.asar_bytes(*kit.build_asar({"a": b"a"})))
    data[0:4] = struct.pack("<I", 8)
    p = tmp_path / "bad.asar"
    p.write_bytes(bytes(data))
    err = _open_error(p)
    assert err.code == "artifact_operation_failed" and err.details["reason"] == "bad_size_pickle"


def test_inconsistent_header_sizes(tmp_path: Path, kit: Any) -> None:
    data = bytearray(kit.asar_bytes(*kit.build_asar({"a": b"a"})))
    data[12:16] = struct.pack("<I", 1 << 20)  # string longer than its pickle
    p = tmp_path / "bad.asar"
    p.write_bytes(bytes(data))
    assert _open_error(p).details["reason"] == "bad_header_size"


def test_huge_header_size_is_bounded(tmp_path: Path, kit: Any, rea_session: Session) -> None:
    p = tmp_path / "huge.asar"
    p.write_bytes(struct.pack("<IIII", 4, 0xFFFFFFF0, 0xFFFFFFEC, 10) + b"{}" * 8)
    err = _open_error(p)
    assert err.code == "resource_constraint" and err.details["resource"] == "asar_header_bytes"
    assert err.details["limit"] == 64 << 20
    # Within the limit but past the end of the file: truncated.
    p.write_bytes(struct.pack("<IIII", 4, 4096, 4092, 4000) + b"{" * 64)
    assert _open_error(p).code == "truncated"
    assert _tool_error(rea_session, p).code == "truncated"


def test_non_json_header(tmp_path: Path, kit: Any, rea_session: Session) -> None:
    p = tmp_path / "nonjson.asar"
    p.write_bytes(kit.asar_bytes(None, b"data", raw_json=b"{files: not json"))
    err = _open_error(p)
    assert err.code == "artifact_operation_failed" and err.details["reason"] == "not_json"
    assert _tool_error(rea_session, p).details["reason"] == "not_json"


@pytest.mark.parametrize("header", [[], {"nofiles": {}}, {"files": []}])
def test_header_without_root_files(tmp_path: Path, kit: Any, header: Any) -> None:
    p = tmp_path / "noroot.asar"
    p.write_bytes(kit.asar_bytes(header))
    assert _open_error(p).code == "artifact_operation_failed"


@pytest.mark.parametrize(
    "node,reason",
    [
        ({"size": -1, "offset": "0"}, "bad_size"),
        ({"size": "12", "offset": "0"}, "bad_size"),
        ({"size": 1, "offset": "-3"}, "bad_offset"),
        ({"size": 1}, "bad_offset"),
        (
            {"size": 1, "offset": "0", "integrity": {"algorithm": "MD5", "hash": "00", "blockSize": 1, "blocks": []}},
            "bad_integrity",
        ),
        (
            {
                "size": 1,
                "offset": "0",
                "integrity": {"algorithm": "SHA256", "hash": "0" * 64, "blockSize": 4, "blocks": ["0" * 64, "0" * 64]},
            },
            "bad_integrity",
        ),
        ({"size": 1, "offset": "0", "unpacked": "yes"}, "bad_node"),
        ("not an object", "bad_node"),
    ],
)
def test_malformed_nodes(tmp_path: Path, kit: Any, node: Any, reason: str) -> None:
    p = tmp_path / "node.asar"
    p.write_bytes(kit.asar_bytes({"files": {"f": node}}, b"z"))
    err = _open_error(p)
    assert err.code == "artifact_operation_failed" and err.details["reason"] == reason


def test_offset_past_the_end(tmp_path: Path, kit: Any, rea_session: Session) -> None:
    p = tmp_path / "offset.asar"
    p.write_bytes(kit.asar_bytes({"files": {"f": {"size": 10, "offset": "999999"}}}, b"0123456789"))
    err = _open_error(p)
    assert err.code == "truncated" and err.details["offset"] == 999999
    assert _tool_error(rea_session, p).code == "truncated"


def test_deeply_nested_header_is_an_error_not_a_crash(tmp_path: Path, kit: Any, rea_session: Session) -> None:
    depth = 20_000
    raw = ('{"files":{"d":' * depth + '{"files":{}}' + "}}" * depth).encode()
    p = tmp_path / "deep.asar"
    p.write_bytes(kit.asar_bytes(None, raw_json=raw))
    err = _tool_error(rea_session, p)
    assert err.code == "resource_constraint" and err.details["resource"] == "asar_header_depth"
    # A deep but decodable tree is walked without recursion.
    raw = ('{"files":{"d":' * 400 + '{"files":{"leaf.txt":{"size":0,"offset":"0"}}}' + "}}" * 400).encode()
    p.write_bytes(kit.asar_bytes(None, raw_json=raw))
    with AsarArchive.open(str(p)) as arc:
        assert arc.entries()[-1].path == "d/" * 400 + "leaf.txt"


def test_many_entries_is_bounded(tmp_path: Path, kit: Any, rea_session: Session) -> None:
    p = kit.write_asar(tmp_path / "many.asar", {f"f{i}.txt": b"" for i in range(50)}, with_integrity=False)
    err = _open_error(p, max_entries=10)
    assert err.code == "resource_constraint" and err.details == {"resource": "entries", "limit": 10}
    err = _tool_error(rea_session, p, max_entries=10)
    assert err.details["resource"] == "entries" and err.details["limit"] == 10


def test_traversal_names_and_escaping_links_are_flagged(tmp_path: Path, kit: Any) -> None:
    header = {
        "files": {
            "..": {"files": {"evil.txt": {"size": 1, "offset": "0"}}},
            "ok.txt": {"size": 1, "offset": "1"},
            "a\\b": {"size": 1, "offset": "2"},
            "out": {"link": "../../etc/passwd"},
            "in": {"link": "ok.txt"},
        }
    }
    p = tmp_path / "hostile.asar"
    p.write_bytes(kit.asar_bytes(header, b"xyz"))
    with AsarArchive.open(str(p)) as arc:
        problems = {e.path: e.problem for e in arc.entries()}
    assert problems["../evil.txt"] == "parent_traversal"
    assert problems[".."] == "parent_traversal"
    assert problems["a\\b"] == "backslash_in_name"
    assert problems["out"] == "link_escape"
    assert problems["in"] is None and problems["ok.txt"] is None


def test_duplicate_logical_path_is_malformed(tmp_path: Path, kit: Any) -> None:
    header = {"files": {"a/b": {"size": 1, "offset": "0"}, "a": {"files": {"b": {"size": 1, "offset": "0"}}}}}
    p = tmp_path / "dup.asar"
    p.write_bytes(kit.asar_bytes(header, b"x"))
    assert _open_error(p).details["reason"] == "duplicate_path"


def test_header_json_is_the_one_electron_reads(tmp_path: Path, kit: Any) -> None:
    # Sanity for the hand-written fixtures: same layout as @electron/asar's Pickle.
    header, data = kit.build_asar({"x/y.js": b"1;"})
    raw = kit.asar_bytes(header, data)
    size = struct.unpack_from("<I", raw, 4)[0]
    strlen = struct.unpack_from("<I", raw, 12)[0]
    assert json.loads(raw[16 : 16 + strlen]) == header
    assert raw[8 + size :] == b"1;"
