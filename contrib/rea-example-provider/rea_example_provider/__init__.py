"""An example third-party rea plugin: a static provider for the line-oriented TOYBIN1 format."""

from __future__ import annotations

from importlib import metadata
from typing import Any

from rea import hookimpl
from rea.context import CallContext
from rea.errors import ReaError
from rea.providers import (
    AnalysisClient,
    AnalysisProvider,
    Availability,
    OperationResult,
    ProviderDescriptor,
    TargetSupport,
)
from rea.target import Target

MAGIC = b"TOYBIN1\n"
MAX_SIZE = 1 << 20  # toy files are tiny; anything larger is refused rather than read whole
OPERATIONS = ("list_documents", "list_procedures", "list_strings")

try:
    VERSION = metadata.version("rea-example-provider")
except metadata.PackageNotFoundError:  # imported from a source tree
    VERSION = "0.0.0+source"


def _bad(target: Target, line_no: int, why: str) -> ReaError:
    return ReaError("unsupported_target", f"{target.path}: line {line_no}: {why}",
                    remediation="Fix the TOYBIN1 file (see the plugin's README) or open another target.",
                    details={"path": target.path, "line": line_no, "format": "toy"})


def parse(target: Target) -> tuple[int | None, list[dict[str, Any]], list[dict[str, Any]]]:
    """Read ``target`` into (entry, procedures, strings), each list sorted by address then name."""
    if target.size > MAX_SIZE:
        raise ReaError("resource_constraint", f"{target.path} is larger than {MAX_SIZE} bytes",
                       details={"resource": "file-size", "limit": MAX_SIZE})
    with open(target.resolved_path, "rb") as fh:
        data = fh.read(MAX_SIZE + 1)
    if not data.startswith(MAGIC):
        raise _bad(target, 1, "missing TOYBIN1 magic")
    entry: int | None = None
    procs: list[tuple[tuple[int, str], dict[str, Any]]] = []
    strings: list[tuple[tuple[int, str], dict[str, Any]]] = []
    for line_no, raw in enumerate(data[len(MAGIC):].split(b"\n"), start=2):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise _bad(target, line_no, "not UTF-8") from None
        word, _, rest = line.partition(" ")
        try:
            if not word or word.startswith("#"):
                continue
            if word == "entry":
                entry = int(rest, 0)
            elif word == "proc":
                name, addr, size = rest.split()
                start, length = int(addr, 0), int(size, 0)
                procs.append(((start, name), {"address": hex(start), "name": name, "size": length,
                                              "kind": "local", "end": hex(start + length)}))
            elif word == "str":
                addr, _, value = rest.partition(" ")
                start, encoding = int(addr, 0), "ascii" if value.isascii() else "utf-8"
                strings.append(((start, value), {
                    "address": hex(start), "value": value, "encoding": encoding,
                    "byte_length": len(value.encode("utf-8")), "truncated": False, "section": None}))
            else:
                raise _bad(target, line_no, f"unknown record {word!r} (expected entry, proc or str)")
        except ValueError:
            raise _bad(target, line_no, f"malformed {word} record: {line!r}") from None
    return entry, [p for _, p in sorted(procs)], [s for _, s in sorted(strings)]


def _page(key: str, items: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    offset, limit = int(params.get("offset", 0)), int(params.get("limit", 100))
    if offset < 0 or not 1 <= limit <= 1000:
        bad = {"path": "offset" if offset < 0 else "limit", "reason": "out_of_range",
               "message": "out of range"}
        raise ReaError("invalid_request", "offset must be >= 0 and limit between 1 and 1000",
                       details={"issues": [bad]})
    window = items[offset:offset + limit]
    following = offset + len(window)
    return {key: window, "offset": offset, "limit": limit, "total": len(items),
            "next_offset": following if following < len(items) else None}


class ToyClient(AnalysisClient):
    """A parsed TOYBIN1 file; parsing happens once, at open, because the format is tiny."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.entry, self.procedures, self.strings = parse(target)

    def execute(self, operation: str, params: dict[str, Any], ctx: CallContext) -> OperationResult:
        ctx.check(operation)
        if operation == "list_documents":
            entry = None if self.entry is None else hex(self.entry)
            doc = {"name": self.target.name, "format": "toy", "architecture": None,
                   "sha256": self.target.sha256, "entry": entry, "bits": None, "endianness": None}
            return OperationResult(normalized={"documents": [doc]})
        if operation == "list_procedures":
            return OperationResult(normalized=_page("procedures", self.procedures, params))
        if operation == "list_strings":
            return OperationResult(normalized=_page("strings", self.strings, params))
        raise ReaError("capability_unavailable", f"toy does not offer {operation}",
                       details={"operation": operation, "provider_id": "toy"})


class ToyProvider(AnalysisProvider):
    """Claims files that start with the TOYBIN1 magic; needs nothing from the host."""

    descriptor = ProviderDescriptor(
        id="toy", name="Toy format (example plugin)", version=VERSION, kind="static", formats=("file",),
        architectures=(), operations=OPERATIONS, auto_priority=1,
        description="Example third-party provider: procedures and strings of TOYBIN1 files.")

    def availability(self) -> Availability:
        return Availability.ok("pure Python; no engine needed")

    def target_support(self, target: Target) -> TargetSupport:
        # The kernel sniffs unknown magic as "file", so the format check must read the head itself.
        if target.is_directory:
            return TargetSupport(status="unsupported", code="target_kind_unsupported",
                                 reason="toy reads files, not directories")
        try:
            with open(target.resolved_path, "rb") as fh:
                head = fh.read(len(MAGIC))
        except OSError as exc:
            return TargetSupport(status="unsupported", code="target_format_unsupported", reason=str(exc))
        if head != MAGIC:
            return TargetSupport(status="unsupported", code="target_format_unsupported",
                                 reason="toy reads files starting with TOYBIN1")
        return TargetSupport(status="supported", reason="TOYBIN1 magic found")

    def open(self, target: Target, run_id: str, ctx: CallContext) -> AnalysisClient:
        return ToyClient(target)


@hookimpl
def rea_register_analysis_providers(register: Any) -> None:
    register(ToyProvider())
