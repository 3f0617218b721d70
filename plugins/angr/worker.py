"""The angr worker process: ``python -m rea_plugins.angr.worker`` answers framed requests on its stdio."""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from typing import Any

from rea_plugins.angr import protocol

from rea.errors import ReaError

# operation -> (holder, method): "analysis" is the loaded model, "code" its function-level view.
ROUTES: dict[str, tuple[str, str]] = {
    "list_documents": ("analysis", "documents"),
    "list_segments": ("analysis", "segments"),
    "list_procedures": ("analysis", "procedures"),
    "search_procedures": ("analysis", "search_procedures"),
    "list_strings": ("analysis", "list_strings"),
    "search_strings": ("analysis", "search_strings"),
    "list_names": ("analysis", "list_names"),
    "address_name": ("analysis", "address_name"),
    "procedure_address": ("analysis", "procedure_address"),
    "resolve_containing_procedure": ("analysis", "resolve_containing"),
    "procedure_info": ("code", "info"),
    "procedure_blocks": ("code", "blocks"),
    "procedure_assembly": ("code", "assembly"),
    "read_function_instructions": ("code", "read_instructions"),
    "procedure_callers": ("code", "callers"),
    "procedure_callees": ("code", "callees"),
    "procedure_references": ("code", "references"),
    "xrefs": ("code", "xrefs"),
    "procedure_pseudo_code": ("code", "pseudo_code"),
}

# Operations that answer from the loader alone; every other one needs the CFG.
LOADER_OPS = frozenset({"list_documents", "list_segments", "list_names", "address_name"})


class Worker:
    """Holds the one loaded target and its caches; answers one request at a time."""

    def __init__(self, out_fd: int) -> None:
        self.out_fd = out_fd
        self.analysis: Any = None
        self.code: Any = None
        self.current = 0

    def send(self, message: protocol.Message) -> None:
        protocol.write_all(self.out_fd, protocol.encode(message))

    def progress(self, text: str) -> None:
        self.send(protocol.Progress(id=self.current, message=text))

    def handle(self, req: protocol.Request) -> protocol.Message:
        self.current = req.id
        try:
            normalized, raw = self.dispatch(req.op, req.params)
        except ReaError as exc:
            return protocol.Failure(id=req.id, code=exc.code, message=exc.message,
                                    remediation=exc.remediation, details=exc.details)
        except (RecursionError, MemoryError) as exc:
            what = "stack" if isinstance(exc, RecursionError) else "memory"
            return protocol.Failure(id=req.id, code="resource_constraint",
                                    message=f"angr ran out of {what} in {req.op}",
                                    details={"resource": "memory", "operation": req.op})
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            return protocol.Failure(id=req.id, code="execution_failure",
                                    message=f"angr failed in {req.op}: {type(exc).__name__}: {exc}"[:2000],
                                    details={"operation": req.op, "engine_error": type(exc).__name__})
        return protocol.Reply(id=req.id, normalized=normalized, raw=raw)

    def dispatch(self, op: str, params: dict[str, Any]) -> tuple[Any, Any]:
        if op == "ping":
            return {"pid": os.getpid()}, None
        if op == "load":
            return self.load(params)
        if self.analysis is None:
            raise ReaError("execution_failure", "the angr worker has no loaded target",
                           details={"operation": op})
        if op == "cfg":
            started = time.monotonic()
            self.analysis.ensure_cfg(self.progress)
            seconds = round(time.monotonic() - started, 3)
            return {"functions": len(self.analysis.funcs), "seconds": seconds}, None
        route = ROUTES.get(op)
        if route is None:
            raise ReaError("capability_unavailable", f"the angr worker does not implement {op}",
                           details={"operation": op})
        if op not in LOADER_OPS:
            self.analysis.ensure_cfg(self.progress)
        result: tuple[Any, Any] = getattr(getattr(self, route[0]), route[1])(dict(params))
        return result

    def load(self, params: dict[str, Any]) -> tuple[Any, Any]:
        self.progress("importing angr")
        # Imported here, not at module level: only the worker ever imports angr.
        from rea_plugins.angr.code import Code
        from rea_plugins.angr.model import Analysis

        self.progress("loading the binary")
        self.analysis = Analysis(str(params["path"]), str(params.get("name", "")),
                                 str(params.get("sha256", "")))
        self.code = Code(self.analysis)
        return {"loaded": True, "pid": os.getpid()}, None


def _watch_parent(parent: int) -> None:
    """Exit when the server that started us is gone, even in the middle of a long analysis."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


def _cap_address_space(argv: list[str]) -> None:
    if "--address-space-mb" not in argv:
        return
    try:
        import resource

        limit = int(argv[argv.index("--address-space-mb") + 1]) << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, IndexError, OSError) as exc:
        print(f"angr worker: address-space cap not applied: {exc}", file=sys.stderr)


def main() -> int:
    _cap_address_space(sys.argv)
    # The protocol owns the original stdin/stdout; anything angr prints goes to stderr instead.
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    worker = Worker(out_fd)
    reader, pending = protocol.FrameReader(), []  # type: ignore[var-annotated]
    while True:
        try:
            message = protocol.read_message(in_fd, reader, pending)
        except protocol.ProtocolError as exc:
            print(f"angr worker: {exc}", file=sys.stderr)
            return 2
        if message is None:
            return 0
        if not isinstance(message, protocol.Request):
            continue
        worker.send(worker.handle(message))


if __name__ == "__main__":
    sys.exit(main())
