"""Damaged Mach-O, universal headers, code signatures and archives are typed errors naming what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from rea.errors import ReaError
from rea.session import Session
from rea.testing import result_of
from tests.apple import applefixtures as fx
from tests.apple import hostile


@pytest.fixture(scope="module")
def damaged(built: fx.Built, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("apple-hostile")
    out = {}
    for name, (data, _) in hostile.cases(built).items():
        (root / name).write_bytes(data)
        out[name] = root / name
    return out


def _error(session: Session, tool: str, path: Path) -> ReaError:
    with pytest.raises(ReaError) as err:
        result_of(session, tool, {"path": str(path)})
    return err.value


def test_load_commands_past_the_end(rea_session: Session, damaged: dict[str, Path]) -> None:
    for name in ("sizeofcmds-0x7fffffff.macho", "cut-600.macho"):
        err = _error(rea_session, "inspect_macho", damaged[name])
        assert err.code == "unsupported_target" and "load commands" in err.message, (name, err.message)
        assert err.details["structure"] == "load_commands"


def test_overlapping_and_oversized_fat_slices(rea_session: Session, damaged: dict[str, Path]) -> None:
    err = _error(rea_session, "list_architectures", damaged["fat-overlap.macho"])
    assert err.code == "unsupported_target" and "overlap" in err.message and err.details["slices"] == [0, 1]
    err = _error(rea_session, "list_architectures", damaged["fat-slice-past-end.macho"])
    assert "past the end" in err.message
    assert _error(rea_session, "inspect_macho", damaged["fat-count.macho"]).code == "unsupported_target"


def test_bad_signature_blob_lengths(rea_session: Session, damaged: dict[str, Path]) -> None:
    for name in (
        "sig-superblob-length.macho",
        "sig-superblob-count.macho",
        "sig-index-offset.macho",
        "sig-cd-length.macho",
        "sig-cd-slots.macho",
    ):
        err = _error(rea_session, "inspect_signature", damaged[name])
        assert err.code == "unsupported_target" and err.details["reason"] == "malformed_signature", (name, err.message)
        assert "code signature is malformed" in err.message


def test_archives_and_plists(rea_session: Session, damaged: dict[str, Path]) -> None:
    err = _error(rea_session, "inspect_keyed_archive", damaged["recursive.plist"])
    assert err.details["reason"] == "recursive_archive" and err.details["uid"] == 1
    err = _error(rea_session, "inspect_keyed_archive", damaged["dangling.plist"])
    assert err.code == "unsupported_target" and err.details["uid"] == 999
    for name in ("cut.plist", "notaplist.plist"):
        assert _error(rea_session, "inspect_plist", damaged[name]).code == "unsupported_target"


def test_interface_documents(rea_session: Session, damaged: dict[str, Path]) -> None:
    for name in ("bomb.xib", "cut.xib", "nibarchive.nib", "other-root.storyboard"):
        err = _error(rea_session, "decode_interface_builder", damaged[name])
        assert err.code == "unsupported_target" and err.details["reason"] == "format", (name, err.message)
    assert "NIBArchive" in _error(rea_session, "decode_interface_builder", damaged["nibarchive.nib"]).message


def test_every_tool_answers_every_hostile_file_with_a_result_or_a_typed_error(
    rea_session: Session, damaged: dict[str, Path]
) -> None:
    tools = (
        "inspect_macho",
        "list_architectures",
        "inspect_signature",
        "get_objc_classes",
        "inspect_native_dispatch_metadata",
        "inspect_plist",
        "inspect_keyed_archive",
        "decode_interface_builder",
        "analyze_swift_types",
        "project_apple_application_graph",
    )
    seen: set[str] = set()
    for name, path in damaged.items():
        for tool in tools:
            try:
                result_of(rea_session, tool, {"path": str(path)})
                seen.add("ok")
            except ReaError as err:
                assert err.code in (
                    "unsupported_target",
                    "invalid_request",
                    "resource_constraint",
                    "artifact_operation_failed",
                ), (
                    name,
                    tool,
                    err.code,
                )
                assert "Error" not in err.message and "Traceback" not in err.message, (name, tool, err.message)
                seen.add(err.code)
    assert {"ok", "unsupported_target"} <= seen
