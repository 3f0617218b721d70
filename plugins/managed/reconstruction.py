"""import_managed_reconstruction: a caller's decompiler output, recorded and linked to static members Evidence."""

from __future__ import annotations

import hashlib

import msgspec
from rea_plugins.managed import common
from rea_plugins.managed.model import (
    MEMBERS_OPERATION,
    RECONSTRUCTION_OPERATION,
    SCHEMA_VERSION,
    Decompiler,
    Link,
    MembersResult,
    ReconstructedMethod,
    ReconstructionResult,
)

from rea.catalog.tool import ToolCall
from rea.evidence import Evidence


def handle(call: ToolCall) -> Evidence:
    members_ev, members = common.load(call, "static_members_evidence_id", MEMBERS_OPERATION, MembersResult)
    by_token = {m.token: m for m in members.methods.items}
    methods = []
    for item in call.args["methods"]:
        link: Link
        token = item["method_token"].lower()
        known = by_token.get(token)
        claimed = item.get("il_sha256")
        if known is None:
            link = "unknown-method"
        elif claimed is not None and claimed != known.il_sha256:
            link = "il-mismatch"
        else:
            link = "matched"
        text = item["csharp"]
        methods.append(
            ReconstructedMethod(
                token=token,
                key=known.key if known else None,
                il_sha256=known.il_sha256 if known else claimed,
                link=link,
                csharp_sha256=hashlib.sha256(text.encode()).hexdigest(),
                csharp=text,
            )
        )
    decompiler = Decompiler(name=call.args["decompiler"]["name"], version=call.args["decompiler"]["version"])
    result = ReconstructionResult(
        schema_version=SCHEMA_VERSION,
        decompiler=decompiler,
        members_evidence_id=members_ev.evidence_id,
        methods=methods,
        notes=list(call.args.get("notes") or []),
    )
    limitations = [
        "Decompiler output supplied by the caller: a historical reference, not a reading of the "
        "shipped IL; rea ran no decompiler."
    ]
    if any(m.link != "matched" for m in methods):
        limitations.append("Some methods do not link to the members Evidence (unknown token or IL hash mismatch).")
    params = {
        "static_members_evidence_id": members_ev.evidence_id,
        "decompiler": msgspec.to_builtins(decompiler),
        "methods": [{"method_token": m.token, "csharp_sha256": m.csharp_sha256} for m in methods],
    }
    return common.derived(
        RECONSTRUCTION_OPERATION, params, result, [members_ev], limitations, authority="historical-reference"
    )
