"""Register calls over part of a program's procedures, resolved by the parse worker while the server resolves the
rest (the second core): the worker opens the same bytes with the server's index, so each site resolves as the
server would resolve it."""

from __future__ import annotations

import msgspec

from rea_plugins.native.limits import Limits

MIN_SHARED_OWNERS = 64  # fewer procedures with register sites are resolved alone: the round trip costs more
# The worker's part of the procedures when the server asks for them and resolves the rest meanwhile.
REGISTERS_SHARE = 0.5
# Its part when they are sent as the index is done, before anything asks: all of them. The worker has the time the
# agent spends reading the overview and the procedure list; a call graph asked for later finds them resolved, and
# the server spends none of its own time (the one core its answers are built on) on them.
AHEAD_SHARE = 1.0


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
