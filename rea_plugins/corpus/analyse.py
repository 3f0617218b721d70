"""The per-binary analysis a worker runs: one Session over the kernel's native operations, one Evidence record.

This module is what a Dask worker imports (``rea_plugins.corpus.analyse.analyse``): it takes a path and options
(plain data, never a shell string) and returns plain data, so it pickles across processes and machines.
"""

from __future__ import annotations

import functools
import os
import resource
import threading
from typing import Any

import msgspec

from rea.plugin import Arguments
from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import OperationResult
from rea.plugin import ReaError
from rea.plugin import die_with_parent
from rea.plugin import evidence as ev_mod
from rea.plugin import fingerprints
from rea.plugin import open_regular
from rea_plugins.corpus.model import BINARY_OPERATION
from rea_plugins.corpus.model import BinaryOutcome
from rea_plugins.corpus.model import BinaryRecord
from rea_plugins.corpus.model import ExportRow
from rea_plugins.corpus.model import ImportRow
from rea_plugins.corpus.model import Mitigations
from rea_plugins.corpus.model import ProcedureHash
from rea_plugins.corpus.model import YaraMatch

PAGE = 1000
_LOCK = threading.Lock()


class Options(msgspec.Struct, frozen=True, kw_only=True):
    """What shapes a record (part of each record's Evidence parameters)."""

    provider: str = "auto"
    max_strings: int = 2000
    max_procedures: int = 5000
    # The rules file's path (its name goes into the Evidence) and its text, read once by the triage through
    # rea.files: workers compile the text, so none opens a path that may have become a FIFO meanwhile.
    yara_rules: str | None = None
    yara_source: str | None = None


def set_memory_limit(limit_bytes: int | None) -> None:
    """A worker process's address-space bound (the local scheduler's --memory-limit)."""
    if limit_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))


def start_pool_worker(parent: int, limit_bytes: int | None) -> None:
    """A local pool's worker process starting: it dies with the server (a SIGKILLed server's workers would
    otherwise finish the item in hand, their engine workers with them), then takes its memory bound."""
    if not die_with_parent(parent):
        os._exit(3)
    set_memory_limit(limit_bytes)


# A provider's answers (list_strings, list_names, binary_layout) are its JSON, the native operations' contract: read
# with a type check at each key, where a value of another type reads as absent.
def _object(value: JSONValue) -> JSONObject:
    return value if isinstance(value, dict) else {}


def _objects(value: JSONValue) -> list[JSONObject]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _text(value: JSONValue) -> str | None:
    return value if isinstance(value, str) else None


def _all(
    session: Any, operation: str, key: str, ctx: CallContext, cap: int | None = None
) -> tuple[list[JSONObject], int, bool]:
    """Every row of a paged operation (at most ``cap``): rows, total, truncated."""
    rows: list[JSONObject] = []
    offset = 0
    while True:
        limit = PAGE if cap is None else max(1, min(PAGE, cap - len(rows)))
        page: JSONObject = session.execute(operation, {"offset": offset, "limit": limit}, ctx).normalized
        rows.extend(_objects(page[key]))
        total = page.get("total", len(rows))
        total = total if isinstance(total, int) else len(rows)
        nxt = page.get("next_offset")
        if nxt is None:
            return rows, total, False
        if cap is not None and len(rows) >= cap:
            return rows, total, True
        offset = int(str(nxt))


@functools.cache
def _yara_rules(source: str) -> Any:
    """The compiled rules of ``source`` (yara's untyped Rules), compiled once per process."""
    import yara

    with _LOCK:
        return yara.compile(source=source, includes=False)


def _yara_matches(rules: Any, path: str) -> Any:
    """Scan ``path`` through a descriptor from rea.files: yara opens a path itself, holding the GIL, so a file
    replaced by a FIFO after identification would block it (and the whole process); /proc/self/fd names the
    regular file already opened."""
    fd = open_regular(path, code="artifact_changed", what="target")
    try:
        return rules.match(filepath=f"/proc/self/fd/{fd}", timeout=60)
    finally:
        os.close(fd)


def _record(session: Any, path: str, options: Options, ctx: CallContext) -> BinaryRecord:
    target = session.require_target()
    doc = session.execute("list_documents", {}, ctx).normalized["documents"][0]
    layout: JSONObject = {}
    if session.supports("binary_layout"):
        layout = session.execute("binary_layout", {}, ctx).normalized
    strings, string_total, strings_cut = _all(session, "list_strings", "strings", ctx, cap=options.max_strings)

    def execute(operation: str, params: Arguments) -> Any:
        ctx.check("hashing procedures")
        return session.execute(operation, params, ctx).normalized

    prints, proc_total, procs_cut = fingerprints(execute, session.supports, cap=options.max_procedures)
    hashes = [
        # A nameless procedure (an engine may list one) is stored with an empty name: the record's name is a string.
        ProcedureHash(address=f.address, name=f.name or "", instructions=f.instructions, hash=f.hash)
        for f in prints
        if f.instructions
    ]
    linkage = _object(layout.get("linkage"))
    imports = [
        ImportRow(name=str(i["name"]), library=_text(i.get("library")), kind=_text(i.get("kind")))
        for i in _objects(layout.get("imports", []))
    ]
    exports = [ExportRow(name=str(e["name"]), address=_text(e.get("address"))) for e in _objects(layout.get("exports"))]
    if not layout and session.supports("list_names"):
        names, _, _ = _all(session, "list_names", "names", ctx)
        imports = [ImportRow(name=str(n["name"])) for n in names if n["kind"] == "import"]
        exports = [ExportRow(name=str(n["name"]), address=_text(n["address"])) for n in names if n["kind"] == "export"]
    yara_hits: list[YaraMatch] = []
    if options.yara_source is not None:
        for m in _yara_matches(_yara_rules(options.yara_source), target.resolved_path):
            yara_hits.append(YaraMatch(rule=m.rule, namespace=m.namespace, tags=list(m.tags)))
    mit = _object(layout.get("mitigations"))
    return BinaryRecord(
        sha256=target.sha256,
        size=target.size,
        format=doc.get("format", target.format),
        architecture=doc.get("architecture", target.architecture),
        bits=doc.get("bits"),
        entry=doc.get("entry"),
        interpreter=_text(linkage.get("interpreter")),
        needed=[n for n in needed if isinstance(n, str)] if isinstance(needed := linkage.get("needed"), list) else [],
        imports=imports,
        exports=exports,
        mitigations=msgspec.convert({k: v for k, v in mit.items() if k in Mitigations.__struct_fields__}, Mitigations),
        procedure_count=proc_total,
        string_count=string_total,
        strings=[str(s["value"]) for s in strings],
        strings_truncated=strings_cut,
        procedures=hashes,
        procedures_truncated=procs_cut,
        yara=yara_hits,
    )


def analyse(path: str, options: Options) -> BinaryOutcome:
    """Analyse one binary: done with its Evidence, or failed with the typed error's code and message.

    Never raises for a bad file: a typed error is the record. A MemoryError (the worker's memory bound) is one too.
    """
    from rea.plugin import Session
    from rea.plugin import default_registry

    session = Session(default_registry())
    ctx = CallContext()
    try:
        provider = None if options.provider == "auto" else options.provider
        session.open(path, provider, ctx)
        record = _record(session, path, options, ctx)
        params = {**msgspec.to_builtins(options), "operation_set": "corpus-triage"}
        params.pop("yara_rules", None)
        params.pop("yara_source", None)
        if options.yara_rules:
            params["yara_rules"] = os.path.basename(options.yara_rules)
        ev = session.evidence(BINARY_OPERATION, params, OperationResult(normalized=msgspec.to_builtins(record)))
        return BinaryOutcome(status="done", evidence=ev_mod.to_builtins(ev), pid=os.getpid())
    except ReaError as err:
        return BinaryOutcome(status="failed", code=err.code, message=err.message, pid=os.getpid())
    except MemoryError:
        return BinaryOutcome(
            status="failed",
            code="resource_constraint",
            message="the worker's memory limit was reached",
            pid=os.getpid(),
        )
    except Exception as exc:  # a provider bug: recorded for this file, the run goes on
        return BinaryOutcome(
            status="failed",
            code="execution_failure",
            message=f"analysis failed ({type(exc).__name__})",
            pid=os.getpid(),
        )
    finally:
        try:
            session.close()
        except Exception:
            pass
