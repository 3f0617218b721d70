"""The parse worker: LIEF runs in an owned process (``rea.process``), so hostile input cannot take the
server down. Routes: ``parse`` (a ``WorkerRequest`` in, the ``Model`` as raw msgpack out), and the second core's
``sweep``, ``strings`` and ``registers`` (``rea_plugins.native.assist``: a share of a file's whole-program work).
"""

from __future__ import annotations

import sys
import threading

import msgspec

from rea.plugin import JSONObject
from rea.plugin import ReaError
from rea.plugin import Reporter
from rea.plugin import serve
from rea_plugins.native.model import WorkerRequest

MAX_FRAME_BYTES = 1 << 30


# Each route's ``params`` is the worker protocol's request, JSON the route converts to its job Struct.
def parse(params: JSONObject, reporter: Reporter) -> msgspec.Raw:
    from rea_plugins.native.extract import ExtractError
    from rea_plugins.native.extract import extract

    req = msgspec.convert(params, WorkerRequest)
    reporter.progress("parsing the container with LIEF")
    try:
        model = extract(req)
    except ExtractError as exc:
        raise ReaError(exc.code, exc.message) from None
    except (MemoryError, RecursionError):
        raise
    except Exception:  # LIEF raises assorted types on malformed input; their text names no field
        raise ReaError("unsupported_target", "malformed binary: LIEF could not read its headers") from None
    if req.warm:  # the server's next requests sweep and resolve: their modules load while it reads the model
        _warm_once()
    try:
        return msgspec.Raw(msgspec.msgpack.encode(model))
    except (TypeError, ValueError, OverflowError):
        raise ReaError(
            "unsupported_target",
            "malformed binary: a parsed field has no faithful value (out-of-range integer or undecodable name)",
        ) from None


def preload() -> None:
    """Import LIEF while the worker waits for its first request (the parse route then finds it loaded)."""
    try:
        from rea_plugins.native.extract import load_lief

        load_lief()
    except Exception:  # a LIEF that cannot load is reported by the parse that needs it
        pass


_WARMED = threading.Event()


def _warm_once() -> None:
    """Load what the sweep, strings and registers routes read (capstone, the program) in a thread, once."""
    if not _WARMED.is_set():
        _WARMED.set()
        threading.Thread(target=_warm, name="rea-native-warm", daemon=True).start()


def _warm() -> None:
    try:
        import rea_plugins.native.registers  # noqa: F401 - imported for its side effect: loaded
        from rea_plugins.native.assist import route  # noqa: F401
        from rea_plugins.native.sweep import x86_ids

        x86_ids()
    except Exception:  # a module that cannot load is reported by the route that needs it
        pass


def sweep(params: JSONObject, reporter: Reporter) -> msgspec.Raw:
    """A code region's tail swept for the server (``assist``: the second core)."""
    from rea_plugins.native.assist import route

    return route(params, reporter)


def strings(params: JSONObject, reporter: Reporter) -> msgspec.Raw:
    """The string scan, for the server while it builds the index."""
    from rea_plugins.native.strings import strings_route

    return strings_route(params, reporter)


def registers(params: JSONObject, reporter: Reporter) -> msgspec.Raw:
    """Register calls of part of the procedures, for the server while it resolves the others: the job over the
    file as it is now, refused when its bytes changed."""
    import os

    from rea_plugins.native.assist import MAX_FILE_BYTES
    from rea_plugins.native.assist import changed
    from rea_plugins.native.index import ProgramIndex
    from rea_plugins.native.model import Model
    from rea_plugins.native.program import Program
    from rea_plugins.native.registers import RegisterRows
    from rea_plugins.native.registers import RegistersJob

    job = msgspec.convert(params, RegistersJob)
    if os.path.getsize(job.path) > MAX_FILE_BYTES:
        raise changed()
    program = Program(msgspec.msgpack.decode(job.model, type=Model), job.path, job.limits)
    try:
        if program.sha256() != job.sha256:
            raise changed()
        program.adopt(msgspec.msgpack.decode(job.index, type=ProgramIndex))
        rows = program.register_rows(job.owners, dict(zip(job.owners, job.sites, strict=True)), None)
        provenance = program.register_provenance
        out = RegisterRows(rows=[(o, s, t, k, provenance[(s, t)]) for o, s, t, k in rows])
    finally:
        program.close()
    return msgspec.Raw(msgspec.msgpack.encode(out))


ROUTES = {"parse": parse, "sweep": sweep, "strings": strings, "registers": registers}

if __name__ == "__main__":
    threading.Thread(target=preload, name="rea-native-preload", daemon=True).start()
    sys.exit(serve(ROUTES, MAX_FRAME_BYTES))
