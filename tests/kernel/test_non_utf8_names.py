"""A binary whose file name is not UTF-8 opens and answers on every provider (issue 42 item 4).

POSIX names are bytes: the file is opened by the name the file system gave, and every answer shows the name with
those bytes escaped (``\\xff\\xfe.bin``), since JSON, and with it Evidence's canonical form, cannot carry them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import msgspec
import pytest

from rea import evidence as ev_mod
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from tests.radare2.conftest import require_radare2

SHOWN = "\\xff\\xfe.bin"


@pytest.mark.parametrize("provider", ["native", "radare2"])
def test_a_binary_named_in_bytes_that_are_not_utf8_opens_and_answers(
    rea_session: Session, hello_elf: Path, tmp_path: Path, provider: str
) -> None:
    if provider == "radare2":
        require_radare2()
    path = os.fsdecode(os.fsencode(tmp_path) + b"/\xff\xfe.bin")
    shutil.copyfile(hello_elf, path)
    opened = result_of(rea_session, "open_binary", {"path": path, "provider_id": provider})
    assert opened["target"]["path"].endswith("/" + SHOWN)
    out = call_tool(rea_session, "binary_overview", {})
    assert out.evidence is not None
    # The Evidence has its canonical form (its id is recomputed from it) and names the file escaped.
    record = ev_mod.validate(ev_mod.decode(msgspec.json.encode(ev_mod.to_builtins(out.evidence))))
    assert record.subject is not None and record.subject.name == SHOWN
    documents = result_of(rea_session, "list_documents", {})["documents"]
    assert [d["name"] for d in documents] == [SHOWN]
    assert result_of(rea_session, "read_bytes", {"address": documents[0]["entry"], "length": 4})["bytes_read"] == 4
