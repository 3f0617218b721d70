"""angr's load errors keep the engine's words, never a Python exception class name (issue 24, item 8)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rea.errors import ReaError

CLASS_NAME = re.compile(r"\b[A-Z]\w*(Error|Exception)\b")


def test_an_unloadable_elf_is_typed_without_a_class_name(tmp_path: Path) -> None:
    model = pytest.importorskip("rea_plugins.angr.model")
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(range(100)))
    with pytest.raises(ReaError) as info:
        model.Analysis(str(junk), "junk", "0" * 64)
    err = info.value
    assert err.code == "unsupported_target" and err.message.startswith("angr could not load junk: ")
    assert not CLASS_NAME.search(err.message), err.message
    words = err.details["engine_error"]
    assert words and words in err.message and not CLASS_NAME.search(words)
