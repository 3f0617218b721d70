"""An example third-party rea plugin: a static provider for the line-oriented TOYBIN1 format.

Its "engine" (``parse``) runs in a worker process the kernel owns (``rea.process``), as a real engine
should: a crash or a hang there costs one request, never the server.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata

from rea.plugin import AnalysisClient
from rea.plugin import AnalysisProvider
from rea.plugin import Arguments
from rea.plugin import Availability
from rea.plugin import CallContext
from rea.plugin import CloseOutcome
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import ProviderDescriptor
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import TargetSupport
from rea.plugin import WorkerChannel
from rea.plugin import hookimpl
from rea.plugin import page
from rea.plugin import python_worker_spec

MAGIC = b"TOYBIN1\n"
MAX_SIZE = 1 << 20  # toy files are tiny; anything larger is refused rather than read whole
OPERATIONS = ("list_documents", "list_procedures", "list_strings")

try:
    VERSION = metadata.version("rea-example-provider")
except metadata.PackageNotFoundError:  # imported from a source tree
    VERSION = "0.0.0+source"


def _bad(path: str, line_no: int, why: str) -> ReaError:
    return ReaError(
        "unsupported_target",
        f"{path}: line {line_no}: {why}",
        remediation="Fix the TOYBIN1 file (see the plugin's README) or open another target.",
        details={"path": path, "line": line_no, "format": "toy"},
    )


# A provider answers in the JSON the contract describes (``rea.plugin``'s ``ProcedureItem`` and ``StringItem``
# document these rows): the kernel's tools read and page it, and it crosses the worker's pipe as it is.
Parsed = tuple[int | None, list[JSONObject], list[JSONObject]]


def parse(path: str) -> Parsed:
    """Read the file at ``path`` into (entry, procedures, strings), each sorted by address then name."""
    with open(path, "rb") as fh:
        data = fh.read(MAX_SIZE + 1)
    if len(data) > MAX_SIZE:
        raise ReaError(
            "resource_constraint",
            f"{path} is larger than {MAX_SIZE} bytes",
            details={"resource": "file-size", "limit": MAX_SIZE},
        )
    if not data.startswith(MAGIC):
        raise _bad(path, 1, "missing TOYBIN1 magic")
    entry: int | None = None
    procs: list[tuple[tuple[int, str], JSONObject]] = []
    strings: list[tuple[tuple[int, str], JSONObject]] = []
    for line_no, raw in enumerate(data[len(MAGIC) :].split(b"\n"), start=2):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise _bad(path, line_no, "not UTF-8") from None
        word, _, rest = line.partition(" ")
        try:
            if not word or word.startswith("#"):
                continue
            if word == "entry":
                entry = int(rest, 0)
            elif word == "proc":
                name, addr, size = rest.split()
                start, length = int(addr, 0), int(size, 0)
                procs.append(
                    (
                        (start, name),
                        {
                            "address": hex(start),
                            "name": name,
                            "size": length,
                            "kind": "local",
                            "end": hex(start + length),
                        },
                    )
                )
            elif word == "str":
                addr, _, value = rest.partition(" ")
                start = int(addr, 0)
                strings.append(
                    (
                        (start, value),
                        {
                            "address": hex(start),
                            "value": value,
                            "encoding": "ascii" if value.isascii() else "utf-8",
                            "byte_length": len(value.encode("utf-8")),
                            "truncated": False,
                            "section": None,
                        },
                    )
                )
            else:
                raise _bad(path, line_no, f"unknown record {word!r} (expected entry, proc or str)")
        except ValueError:
            raise _bad(path, line_no, f"malformed {word} record: {line!r}") from None
    return entry, [p for _, p in sorted(procs)], [s for _, s in sorted(strings)]


class ToyClient(AnalysisClient):
    """A TOYBIN1 file, parsed at open by the worker (a malformed file fails the open)."""

    def __init__(self, target: Target, ctx: CallContext) -> None:
        self.target = target
        # The kernel starts the worker in its own session with a private HOME/TMPDIR, and owns its cleanup.
        spec = python_worker_spec("rea_example_provider.worker", resource="toy-worker", owner="toy")
        self.worker = WorkerChannel(spec, label="toy", stateful=False)
        try:
            reply = self.worker.request("parse", {"path": target.resolved_path}, ctx, deadline_s=30)
        except ReaError:
            self.worker.close()
            raise
        self.entry, self.procedures, self.strings = reply.result(Parsed)

    def execute(self, operation: str, params: Arguments, ctx: CallContext) -> OperationResult:
        ctx.check(operation)
        if operation == "list_documents":
            entry = None if self.entry is None else hex(self.entry)
            # The toy format has no architecture, width or byte order: the document says so with nulls.
            doc: JSONObject = {
                "name": self.target.name,
                "format": "toy",
                "architecture": None,
                "sha256": self.target.sha256,
                "entry": entry,
                "bits": None,
                "endianness": None,
            }
            return OperationResult(normalized={"documents": [doc]})
        if operation == "list_procedures":
            return OperationResult(normalized=page("procedures", self.procedures, params, lambda p: p))
        if operation == "list_strings":
            return OperationResult(normalized=page("strings", self.strings, params, lambda s: s))
        raise ReaError(
            "capability_unavailable",
            f"toy does not offer {operation}",
            details={"operation": operation, "provider_id": "toy"},
        )

    def close(self) -> CloseOutcome:
        return self.worker.close()  # stops the worker, removes its private directory, reports leftovers

    def lineage(self) -> list[JSONObject]:
        return self.worker.lineage()


class ToyProvider(AnalysisProvider):
    """Claims files that start with the TOYBIN1 magic; needs nothing from the host."""

    descriptor = ProviderDescriptor(
        id="toy",
        name="Toy format (example plugin)",
        version=VERSION,
        kind="static",
        formats=("file",),
        architectures=(),
        operations=OPERATIONS,
        auto_priority=1,
        description="Example third-party provider: procedures and strings of TOYBIN1 files.",
    )

    def availability(self) -> Availability:
        return Availability.ok("pure Python; no engine needed")

    def target_support(self, target: Target) -> TargetSupport:
        # The kernel sniffs unknown magic as "file", so the format check must read the head itself.
        if target.is_directory:
            return TargetSupport(
                status="unsupported", code="target_kind_unsupported", reason="toy reads files, not directories"
            )
        try:
            with open(target.resolved_path, "rb") as fh:
                head = fh.read(len(MAGIC))
        except OSError as exc:
            return TargetSupport(status="unsupported", code="target_format_unsupported", reason=str(exc))
        if head != MAGIC:
            return TargetSupport(
                status="unsupported", code="target_format_unsupported", reason="toy reads files starting with TOYBIN1"
            )
        return TargetSupport(status="supported", reason="TOYBIN1 magic found")

    def open(self, target: Target, run_id: str, ctx: CallContext) -> AnalysisClient:
        return ToyClient(target, ctx)


@hookimpl
def rea_register_analysis_providers(register: Callable[[AnalysisProvider], None]) -> None:
    register(ToyProvider())
