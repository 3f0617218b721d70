"""Register calls over part of a program's procedures, resolved by the parse worker while the server resolves the
rest (the second core): the worker opens the same bytes with the server's index, so each site resolves as the
server would resolve it."""

from __future__ import annotations

import os
from typing import Any

import msgspec
from rea_plugins.native.assist import MAX_FILE_BYTES, changed
from rea_plugins.native.index import Limits, ProgramIndex
from rea_plugins.native.model import Model

MIN_SHARED_OWNERS = 64  # fewer procedures with register sites are resolved alone: the round trip costs more
REGISTERS_SHARE = 0.5  # the worker's part of the procedures (it starts while the server answers other calls)


class RegistersJob(msgspec.Struct, frozen=True, kw_only=True):
    """The register sites of ``owners`` (procedure starts, sorted; ``sites`` each one's) in the file at ``path``
    (SHA-256 ``sha256``), with the server's model and index (msgpack)."""

    path: str
    sha256: str
    model: bytes
    index: bytes
    limits: Limits
    owners: list[int]
    sites: list[list[int]]


class RegisterRows(msgspec.Struct, frozen=True, kw_only=True):
    """(procedure, site, target, kind code, provenance) of each register call resolved."""

    rows: list[tuple[int, int, int, int, str]]


def route(params: dict[str, Any], reporter: Any) -> msgspec.Raw:
    """The worker's ``registers`` route: the job over the file as it is now, refused when its bytes changed."""
    from rea_plugins.native.program import Program

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
