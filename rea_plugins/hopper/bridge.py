"""rea's bridge inside Hopper Disassembler: ``hopper --python bridge.py`` serves the document to rea.

Standalone (standard library only; it runs in Hopper's own Python). It reads its session file (the path is in
REA_HOPPER_SESSION; rea writes it 0600 in a 0700 directory) and deletes it, listens on the session's Unix
socket, waits for Hopper's background analysis to end, announces ``ready`` and then answers newline-delimited
JSON requests ``{"id", "token", "method", "params"}`` until ``shutdown``. Every request's token is checked in
constant time; answers carry the token too. Hopper's API is used only from this (Hopper's Python) thread:
calling it from another thread deadlocks Hopper.

Outside Hopper (tests), REA_HOPPER_TEST_FACADE names a Python file defining the same API classes
(``Document``, ``Segment``, ``Procedure``) that Hopper provides to scripts.
"""

from __future__ import annotations

import hmac
import json
import os
import socket
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any
from typing import NamedTuple

# The JSON the bridge reads and writes, typed as rea.plugin's JSONValue/JSONObject are: this script runs in Hopper's
# own Python with the standard library only, so it cannot import them (a recursive alias for the type checker).
# Only the type checker reads these: at run time they are plain names, whatever Python version Hopper ships.
if TYPE_CHECKING:
    JSONValue = str | int | float | bool | None | list["JSONValue"] | dict[str, "JSONValue"]
    JSONObject = dict[str, JSONValue]
else:
    JSONValue = object
    JSONObject = dict

PROTOCOL = 1
MAX_LINE = 10 * 1024 * 1024
PAGE = 5000
# Hopper's "no such address" value (BAD_ADDRESS is -1, some calls answer the unsigned form).
BAD = (-1, 0xFFFFFFFFFFFFFFFF)


class BridgeError(Exception):
    """A request that cannot be answered: sent back as a typed error, never as a traceback."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class HopperApi(NamedTuple):
    """The API classes Hopper provides to scripts (untyped: Hopper's own objects); ``info`` is absent in old
    versions."""

    Document: Any
    Segment: Any
    info: Any


class HopperApiFacade:
    """The part of Hopper's scripting API the bridge uses, over the API classes Hopper provides."""

    def __init__(self, api: HopperApi) -> None:
        self.Document = api.Document
        self.Segment = api.Segment
        self.info = api.info
        self.doc = self.Document.getCurrentDocument()

    def version(self) -> str:
        return str(self.info.getHopperVersion()) if self.info is not None else "unknown"

    def segments(self) -> list[Any]:
        return [s for s in self.doc.getSegmentsList() if s is not None]

    def segment_at(self, address: int) -> Any:
        return self.doc.getSegmentAtAddress(address)

    def wait_for_analysis(self) -> None:
        self.doc.waitForBackgroundProcessToEnd()

    def is_unicode(self, segment: Any, address: int) -> bool:
        return bool(segment.getTypeAtAddress(address) == self.Segment.TYPE_UNICODE)


class Bridge:
    """The request handlers: raw facts of the document; rea shapes them into its records."""

    def __init__(self, api: HopperApiFacade) -> None:
        self.api = api
        self.doc = api.doc

    # -- whole document --------------------------------------------------------------------

    def ping(self, params: JSONObject) -> JSONObject:
        return {"pid": os.getpid(), "hopper_version": self.api.version(), "protocol": PROTOCOL}

    def document(self, params: JSONObject) -> JSONObject:
        segments = []
        for seg in self.api.segments():
            sections = [
                {"name": s.getName(), "start": s.getStartingAddress(), "length": s.getLength(), "flags": s.getFlags()}
                for s in seg.getSectionsList()
                if s is not None
            ]
            segments.append(
                {
                    "name": seg.getName(),
                    "start": seg.getStartingAddress(),
                    "length": seg.getLength(),
                    "file_offset": seg.getFileOffset(),
                    "sections": sections,
                    "procedures": seg.getProcedureCount(),
                    "strings": seg.getStringCount(),
                }
            )
        return {
            "name": self.doc.getDocumentName(),
            "path": self.doc.getExecutableFilePath(),
            "entry": _address(self.doc.getEntryPoint()),
            "bits64": bool(self.doc.is64Bits()),
            "segments": segments,
        }

    def _segment(self, params: JSONObject) -> Any:
        index = _integer(params, "segment")
        segments = self.api.segments()
        if not 0 <= index < len(segments):
            raise BridgeError("invalid_request", f"no segment {index}")
        return segments[index]

    def procedures(self, params: JSONObject) -> list[JSONValue]:
        seg = self._segment(params)
        return [self._procedure_item(seg, i) for i in _window(params, seg.getProcedureCount())]

    @staticmethod
    def _procedure_item(seg: Any, index: int) -> JSONObject:
        proc = seg.getProcedureAtIndex(index)
        entry = proc.getEntryPoint()
        ends = [b.getEndingAddress() for b in proc.basicBlockIterator()]
        return {
            "address": entry,
            "name": seg.getNameAtAddress(entry),
            "end": max([entry + 1, *ends]),
            "section": _section_name(seg, entry),
            "signature": proc.signatureString(),
        }

    def names(self, params: JSONObject) -> list[JSONValue]:
        seg = self._segment(params)
        labels = list(seg.getLabelsList())
        addresses = list(seg.getNamedAddresses())
        count = min(len(labels), len(addresses))
        return [{"address": addresses[i], "name": labels[i]} for i in _window(params, count)]

    def strings(self, params: JSONObject) -> list[JSONValue]:
        seg = self._segment(params)
        return [self._string_item(seg, i) for i in _window(params, seg.getStringCount())]

    def _string_item(self, seg: Any, index: int) -> JSONObject:
        address = seg.getStringAddressAtIndex(index)
        return {
            "address": address,
            "value": seg.getStringAtIndex(index),
            "unicode": self.api.is_unicode(seg, address),
            "section": _section_name(seg, address),
        }

    # -- one procedure ---------------------------------------------------------------------

    def _procedure(self, params: JSONObject) -> tuple[Any, Any]:
        address = _integer(params, "address")
        seg = self.api.segment_at(address)
        proc = None if seg is None else seg.getProcedureAtAddress(address)
        if proc is None or proc.getEntryPoint() != address:
            raise BridgeError("invalid_request", f"no procedure starts at {hex(address)}")
        return seg, proc

    def procedure(self, params: JSONObject) -> JSONObject:
        seg, proc = self._procedure(params)
        blocks, instructions = [], []
        for block in proc.basicBlockIterator():
            start, end = block.getStartingAddress(), block.getEndingAddress()
            successors = [block.getSuccessorAddressAtIndex(i) for i in range(block.getSuccessorCount())]
            address = start
            while address < end:
                insn = seg.getInstructionAtAddress(address)
                if insn is None:
                    break
                length = max(1, int(insn.getInstructionLength()))
                raw = seg.readBytes(address, length)
                operands = [insn.getFormattedArgument(i) for i in range(insn.getArgumentCount())]
                refs = [_address(r) for r in seg.getReferencesFromAddress(address)]
                item = {
                    "address": address,
                    "bytes": raw.hex() if isinstance(raw, (bytes, bytearray)) else "",
                    "mnemonic": insn.getInstructionString(),
                    "operands": [str(o) for o in operands],
                    "conditional": bool(insn.isAConditionalJump()),
                    "unconditional": bool(insn.isAnInconditionalJump()),
                    "references": [r for r in refs if r is not None],
                }
                instructions.append(item)
                address += length
            blocks.append(
                {
                    "start": start,
                    "end": end,
                    "successors": successors,
                    "count": sum(1 for i in instructions if start <= i["address"] < end),
                }
            )
        callees = [
            {"type": c.type(), "from": c.fromAddress(), "to": _address(c.toAddress())} for c in proc.getAllCallees()
        ]
        return {"address": proc.getEntryPoint(), "blocks": blocks, "instructions": instructions, "callees": callees}

    def references_to(self, params: JSONObject) -> list[JSONValue]:
        address = _integer(params, "address")
        seg = self.api.segment_at(address)
        if seg is None:
            return []
        return [a for a in (_address(r) for r in seg.getReferencesOfAddress(address)) if a is not None]

    def decompile(self, params: JSONObject) -> JSONObject:
        _, proc = self._procedure(params)
        text = proc.decompile()
        return {"text": None if text is None else str(text)}

    def annotations(self, params: JSONObject) -> JSONObject:
        address = _integer(params, "address")
        seg = self.api.segment_at(address)
        if seg is None:
            return {"name": None, "comment": None, "inline_comment": None, "bookmark": None}
        bookmark = None
        if self.doc.hasBookmarkAtAddress(address):
            bookmark = {"name": self.doc.getBookmarkName(address)}
        return {
            "name": seg.getNameAtAddress(address),
            "comment": seg.getCommentAtAddress(address) or None,
            "inline_comment": seg.getInlineCommentAtAddress(address) or None,
            "bookmark": bookmark,
        }

    def shutdown(self, params: JSONObject) -> JSONObject:
        stopped = closed = False
        try:
            self.doc.requestBackgroundProcessStop()
            stopped = not self.doc.backgroundProcessActive()
        except Exception:
            traceback.print_exc()
        try:
            self.doc.closeDocument()
            closed = True
        except Exception:
            traceback.print_exc()
        return {"shutdown": True, "analysis_stopped": stopped, "document_closed": closed}

    def routes(self) -> dict[str, Callable[[JSONObject], JSONValue]]:
        return {
            "ping": self.ping,
            "document": self.document,
            "procedures": self.procedures,
            "names": self.names,
            "strings": self.strings,
            "procedure": self.procedure,
            "references_to": self.references_to,
            "decompile": self.decompile,
            "annotations": self.annotations,
            "shutdown": self.shutdown,
        }


def _integer(params: JSONObject, key: str) -> int:
    """An integer parameter of a request (0 when absent); rea sends integers, anything else is refused."""
    value = params.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BridgeError("invalid_request", f"{key} must be an integer")
    return value


def _window(params: JSONObject, count: int) -> range:
    """The indices of one page of ``count`` items, from the request's ``offset``."""
    start = _integer(params, "offset")
    return range(start, min(count, start + PAGE))


def _address(value: Any) -> int | None:
    return None if value is None or value in BAD else int(value)


def _section_name(seg: Any, address: int) -> str | None:
    section = seg.getSectionAtAddress(address)
    return None if section is None else str(section.getName())


class Server:
    """One authenticated client on the session's Unix socket; newline-delimited JSON both ways."""

    def __init__(self, session: JSONObject, bridge: Bridge) -> None:
        self.token = str(session["token"])
        self.run_id = str(session["run_id"])
        self.path = str(session["socket"])
        self.bridge = bridge
        self.conn: socket.socket | None = None

    def send(self, message: JSONObject) -> None:
        assert self.conn is not None
        self.conn.sendall(json.dumps({**message, "token": self.token}).encode() + b"\n")

    def authentic(self, message: Any) -> bool:
        token = message.get("token") if isinstance(message, dict) else None
        return isinstance(token, str) and hmac.compare_digest(token.encode(), self.token.encode())

    def serve(self, before_ready: Callable[[], None]) -> int:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path)
        os.chmod(self.path, 0o600)
        listener.listen(1)
        self.conn, _ = listener.accept()
        listener.close()
        self.send({"event": "progress", "message": "waiting for Hopper's background analysis"})
        before_ready()
        self.send({"event": "ready", "run_id": self.run_id, "protocol": PROTOCOL, **self.bridge.ping({})})
        routes = self.bridge.routes()
        buffer = b""
        while True:
            chunk = self.conn.recv(1 << 16)
            if not chunk:
                return 0
            buffer += chunk
            if len(buffer) > MAX_LINE and b"\n" not in buffer:
                return 2
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if self.handle(line, routes):
                    return 0

    def handle(self, line: bytes, routes: dict[str, Callable[[JSONObject], JSONValue]]) -> bool:
        """Answer one request line; True after a shutdown."""
        try:
            message = json.loads(line)
        except ValueError:
            self.send({"event": "diagnostic", "message": "discarded a malformed request line"})
            return False
        if not self.authentic(message):
            # Never answered: a peer without the token learns nothing, not even the request id.
            return False
        rid, method = message.get("id"), message.get("method")
        params = message.get("params") or {}
        route = routes.get(method) if isinstance(method, str) else None
        if route is None or not isinstance(params, dict):
            self.send(
                {
                    "id": rid,
                    "error": {"code": "capability_unavailable", "message": f"the bridge has no method {method!r}"},
                }
            )
            return False
        try:
            result = route(params)
        except BridgeError as exc:
            self.send({"id": rid, "error": {"code": exc.code, "message": exc.message}})
            return False
        except Exception:
            traceback.print_exc()
            self.send(
                {"id": rid, "error": {"code": "execution_failure", "message": f"Hopper's API failed in {method}"}}
            )
            return False
        self.send({"id": rid, "result": result})
        return bool(method == "shutdown")


def load_session() -> JSONObject:
    path = os.environ["REA_HOPPER_SESSION"]
    with open(path, encoding="utf-8") as fh:
        session: JSONObject = json.load(fh)
    os.unlink(path)  # the token lives only in this process from now on
    return session


def hopper_api() -> HopperApi:
    """Hopper's API classes: the script's globals inside Hopper, or the test facade outside it."""
    here = globals()
    if "Document" not in here or "Segment" not in here:
        facade = os.environ.get("REA_HOPPER_TEST_FACADE")
        if not facade:
            raise SystemExit("rea bridge: not running inside Hopper (no Document API) and no test facade")
        # The facade module's globals: a Python namespace (classes by name), as exec takes it.
        here = {"__file__": facade, "__name__": "hopper_test_facade"}
        with open(facade, encoding="utf-8") as fh:
            exec(compile(fh.read(), facade, "exec"), here)
    return HopperApi(here["Document"], here["Segment"], here.get("GlobalInformation"))


def main() -> int:
    session = load_session()
    api = HopperApiFacade(hopper_api())
    server = Server(session, Bridge(api))
    return server.serve(api.wait_for_analysis)


if __name__ == "__main__":
    sys.exit(main())
elif "Document" in globals():
    # Run by Hopper (--python): its API classes are this script's globals.
    main()
