"""verify_managed_native_boundaries: each P/Invoke import checked against native Evidence of its library."""

from __future__ import annotations

import re

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import ToolCall
from rea.plugin import arg_list
from rea.plugin import arg_object
from rea.plugin import invalid_request
from rea.plugin import issue
from rea_plugins.managed import common
from rea_plugins.managed.model import BOUNDARIES_OPERATION
from rea_plugins.managed.model import SCHEMA_VERSION
from rea_plugins.managed.model import VERIFY_OPERATION
from rea_plugins.managed.model import BoundariesResult
from rea_plugins.managed.model import ImportVerdict
from rea_plugins.managed.model import NativeImport
from rea_plugins.managed.model import Status
from rea_plugins.managed.model import VerdictCounts
from rea_plugins.managed.model import VerifyResult

NATIVE_OPERATIONS = ("list_names", "observe_native_calls")
_SUFFIX = re.compile(r"(\.so(\.\d+)*|\.dll|\.dylib)$")


def library_stem(name: str) -> str:
    """How the runtime probes a DllImport name: ``native``, ``libnative.so`` and ``native.dll`` are one library."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
    base = _SUFFIX.sub("", base)
    return base[3:] if base.startswith("lib") and len(base) > 3 else base


class Native:
    """One native Evidence record as the facts it offers about libraries."""

    def __init__(self, ev: Evidence) -> None:
        self.ev = ev
        # Another provider's answer (list_names, observe_native_calls): its JSON, read defensively.
        result: JSONObject = ev.normalized_result if isinstance(ev.normalized_result, dict) else {}
        self.exports: set[str] | None = None
        self.complete = False
        self.library = library_stem(ev.subject.name) if ev.subject is not None else ""
        self.observed: set[tuple[str, str]] = set()
        if ev.operation == "list_names":
            names = result.get("names")
            self.exports = {
                str(n.get("name"))
                for n in (names if isinstance(names, list) else [])
                if isinstance(n, dict) and not n.get("external") and n.get("kind") in ("function", "export")
            }
            self.complete = not result.get("offset") and result.get("next_offset") is None
        else:
            events = result.get("events")
            for event in events if isinstance(events, list) else []:
                if isinstance(event, dict) and event.get("function"):
                    self.observed.add((library_stem(str(event.get("module") or "")), str(event["function"])))

    def verdict(self, item: NativeImport) -> tuple[Status, str] | None:
        stem = library_stem(item.module)
        if (stem, item.entry_point) in self.observed:
            return "resolved", f"a call to {item.entry_point} in {item.module} was observed"
        if self.exports is None or stem != self.library:
            return None
        if item.entry_point in self.exports:
            return "resolved", f"{self.ev.subject.name if self.ev.subject else stem} exports {item.entry_point}"
        if self.complete:
            return "missing", f"not among the {len(self.exports)} functions the library exports"
        return "unknown", "the list_names page is partial; list every name to decide"


def _verdict(item: NativeImport, natives: list[Native]) -> ImportVerdict:
    found: list[tuple[Status, str, str | None]] = []
    for native in natives:
        v = native.verdict(item)
        if v is not None:
            found.append((*v, native.ev.evidence_id))
    order = {"resolved": 0, "missing": 1, "unknown": 2}
    found.sort(key=lambda f: order[f[0]])
    status, reason, evidence_id = found[0] if found else ("unknown", f"no native Evidence covers {item.module}", None)
    return ImportVerdict(
        method=item.method,
        module=item.module,
        entry_point=item.entry_point,
        status=status,
        reason=reason,
        evidence_id=evidence_id,
    )


def handle(call: ToolCall) -> Evidence:
    boundaries_ev, boundaries = common.load(
        call, "managed_boundaries_evidence_id", BOUNDARIES_OPERATION, BoundariesResult
    )
    natives = []
    for i, value in enumerate(arg_list(call.args, "native_observation_evidence_ids") or []):
        path = f"native_observation_evidence_ids/{i}"
        ev = call.session.resolve_evidence(value, path)
        if ev.operation not in NATIVE_OPERATIONS:
            raise invalid_request(
                f"{path} must be list_names or observe_native_calls Evidence, not {ev.operation}",
                [issue(path, "invalid_value", "expected list_names or observe_native_calls", operation=ev.operation)],
            )
        natives.append(Native(ev))
    verdicts = [_verdict(item, natives) for item in boundaries.imports.items]
    statuses = [v.status for v in verdicts]
    counts = VerdictCounts(
        resolved=statuses.count("resolved"), missing=statuses.count("missing"), unknown=statuses.count("unknown")
    )
    limits = arg_object(call.args, "limits") or {}
    result = VerifyResult(schema_version=SCHEMA_VERSION, counts=counts, imports=common.paged(verdicts, limits))
    limitations = []
    if boundaries.imports.total > len(boundaries.imports.items):
        limitations.append("The boundaries record lists a page of its imports: only those are verified.")
    params: JSONObject = {
        "managed_boundaries_evidence_id": boundaries_ev.evidence_id,
        "native_observation_evidence_ids": [n.ev.evidence_id for n in natives],
        "limits": limits,
    }
    return common.derived(VERIFY_OPERATION, params, result, [boundaries_ev, *(n.ev for n in natives)], limitations)
