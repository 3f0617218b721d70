"""import_managed_reconstruction: a caller's decompiler output, recorded and linked to static members Evidence."""

from __future__ import annotations

import hashlib
import re

import msgspec

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import ToolCall
from rea.plugin import arg_object
from rea.plugin import arg_objects
from rea.plugin import arg_str
from rea.plugin import arg_strs
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.managed import common
from rea_plugins.managed.model import MEMBERS_OPERATION
from rea_plugins.managed.model import RECONSTRUCTION_OPERATION
from rea_plugins.managed.model import SCHEMA_VERSION
from rea_plugins.managed.model import Decompiler
from rea_plugins.managed.model import Link
from rea_plugins.managed.model import MembersResult
from rea_plugins.managed.model import ReconstructedMethod
from rea_plugins.managed.model import ReconstructionResult

_TOKEN = re.compile(r"^0x06[0-9a-fA-F]{6}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
MAX_CSHARP_CHARS = 1 << 20
MAX_NAME_CHARS = 200


def _check(args: Arguments) -> None:
    """What the advertised schema leaves out to stay typed in a host's tools list: the values' forms and sizes."""
    problems = []
    decompiler = arg_object(args, "decompiler") or {}  # required by the schema, as are its name and version
    for key in ("name", "version"):
        value = arg_str(decompiler, key, "")
        if not 1 <= len(value) <= MAX_NAME_CHARS:
            problems.append(issue(f"decompiler.{key}", "out_of_range", f"1 to {MAX_NAME_CHARS} characters"))
    for i, item in enumerate(arg_objects(args, "methods") or []):
        unknown = sorted(set(item) - {"method_token", "il_sha256", "csharp"})
        missing = [key for key in ("method_token", "csharp") if key not in item]
        for key in unknown:
            problems.append(issue(f"methods[{i}].{key}", "unknown_argument", "takes method_token, il_sha256, csharp"))
        for key in missing:
            problems.append(issue(f"methods[{i}].{key}", "missing_argument", f"{key} is required"))
        if unknown or missing:
            continue
        if not _TOKEN.match(arg_str(item, "method_token", "")):
            problems.append(
                issue(f"methods[{i}].method_token", "invalid_format", "a MethodDef token: 0x06 + 6 hex digits")
            )
        claimed = arg_str(item, "il_sha256")
        if claimed is not None and not _SHA256.match(claimed):
            problems.append(issue(f"methods[{i}].il_sha256", "invalid_format", "64 lowercase hex digits"))
        if len(arg_str(item, "csharp", "")) > MAX_CSHARP_CHARS:
            problems.append(issue(f"methods[{i}].csharp", "out_of_range", f"at most {MAX_CSHARP_CHARS} characters"))
    if problems:
        raise invalid_request("; ".join(f"{p['path']}: {p['message']}" for p in problems[:5]), problems)


def handle(call: ToolCall) -> Evidence:
    _check(call.args)
    members_ev, members = common.load(call, "static_members_evidence_id", MEMBERS_OPERATION, MembersResult)
    by_token = {m.token: m for m in members.methods.items}
    methods = []
    for item in arg_objects(call.args, "methods") or []:  # each checked by _check
        link: Link
        token = arg_str(item, "method_token", "").lower()
        known = by_token.get(token)
        claimed = arg_str(item, "il_sha256")
        if known is None:
            link = "unknown-method"
        elif claimed is not None and claimed != known.il_sha256:
            link = "il-mismatch"
        else:
            link = "matched"
        text = arg_str(item, "csharp", "")
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
    given = arg_object(call.args, "decompiler") or {}
    decompiler = Decompiler(name=arg_str(given, "name", ""), version=arg_str(given, "version", ""))
    result = ReconstructionResult(
        schema_version=SCHEMA_VERSION,
        decompiler=decompiler,
        members_evidence_id=members_ev.evidence_id,
        methods=methods,
        notes=arg_strs(call.args, "notes") or [],
    )
    limitations = [
        "Decompiler output supplied by the caller: a historical reference, not a reading of the "
        "shipped IL; rea ran no decompiler."
    ]
    if any(m.link != "matched" for m in methods):
        limitations.append("Some methods do not link to the members Evidence (unknown token or IL hash mismatch).")
    params: JSONObject = {
        "static_members_evidence_id": members_ev.evidence_id,
        "decompiler": msgspec.to_builtins(decompiler),
        "methods": [{"method_token": m.token, "csharp_sha256": m.csharp_sha256} for m in methods],
    }
    return common.derived(
        RECONSTRUCTION_OPERATION, params, result, [members_ev], limitations, authority="historical-reference"
    )
