"""procedure_fingerprints: every procedure's content hash in one pass over its decoded instructions.

The same hash ``rea.fingerprint`` computes from ``read_function_instructions`` rows (their ``mnemonic`` and raw
``operands``), without building the symbolized rows: what corpus triage and binary comparison need, cheaply.
"""

from __future__ import annotations

from typing import Any

from rea.plugin import Arguments
from rea.plugin import CallContext
from rea.plugin import hash_instructions
from rea.plugin import hexa
from rea.plugin import next_offset
from rea.plugin import whole_program_paging
from rea_plugins.native.rows import FingerprintRow
from rea_plugins.native.rows import Fingerprints


def answer(ops: Any, params: Arguments, ctx: CallContext) -> Fingerprints:
    """One page of ``ProcedureFingerprints`` (procedures in address order)."""
    offset, limit = whole_program_paging(params)
    program = ops.p
    procs = program.procedures(ctx)
    window = procs[offset : offset + limit]
    cap = program.limits.max_function_instructions
    rows = []
    for i, p in enumerate(window):
        if i % 256 == 0:
            ctx.check("fingerprinting procedures")
        code = b""
        if not (p.kind == "import" and program.code_region_at(p.address) is None):
            code = program.image.code(p.address, program.end_of(p))
        count, digest = hash_instructions(
            (mnemonic, op_str) for _, _, mnemonic, op_str in program.md.disasm_lite(code, p.address, cap)
        )
        rows.append(FingerprintRow(address=hexa(p.address), name=p.name, kind=p.kind, instructions=count, hash=digest))
    return Fingerprints(
        offset=offset,
        limit=limit,
        total=len(procs),
        next_offset=next_offset(offset, len(window), len(procs)),
        fingerprints=rows,
    )
