"""The parse worker: ``python -m rea_plugins.javascript.worker`` parses batches of scripts for a large analysis
(``parallel``). One route, ``extract``: scripts in, their ``ParsedFile`` records out as raw msgpack."""

from __future__ import annotations

import sys
import threading
from typing import Any

import msgspec

from rea.plugin import Reporter
from rea.plugin import serve
from rea_plugins.javascript.parallel import MAX_FRAME_BYTES
from rea_plugins.javascript.parallel import ScriptIn
from rea_plugins.javascript.parallel import ScriptOut


# ``params``: the kernel's worker Route type, msgpack the frame decoded (the scripts' bytes included, so not JSON),
# converted to Structs at once.
def extract(params: dict[str, Any], reporter: Reporter) -> msgspec.Raw:
    from rea_plugins.javascript import inputs
    from rea_plugins.javascript.model import Limits
    from rea_plugins.javascript.model import Skipped
    from rea_plugins.javascript.parsed import parse_file

    limits = msgspec.convert(params.get("limits"), Limits)
    scripts = msgspec.convert(params.get("scripts"), list[ScriptIn])
    scripts.reverse()
    out: list[ScriptOut] = []
    while scripts:
        one = scripts.pop()  # its bytes go once it is parsed
        f = inputs.InputFile(path=one.path, data=one.data, integrity=one.integrity, source=one.source, size=one.size)
        language = one.language
        del one
        data = inputs.fetch(f, limits)
        if isinstance(data, Skipped):
            out.append(ScriptOut(skipped=data, read=0, parsed=None))
        else:
            out.append(ScriptOut(skipped=None, read=len(data), parsed=parse_file(f.path, f.integrity, language, data)))
    return msgspec.Raw(msgspec.msgpack.encode(out))


def preload() -> None:
    """Load the grammars while the worker waits for its first batch."""
    from rea_plugins.javascript import syntax

    grammars: tuple[syntax.Language, ...] = ("javascript", "typescript", "tsx")
    for language in grammars:
        syntax.grammar(language)


ROUTES = {"extract": extract}

if __name__ == "__main__":
    threading.Thread(target=preload, name="rea-javascript-preload", daemon=True).start()
    sys.exit(serve(ROUTES, MAX_FRAME_BYTES))
