"""The ``native`` analysis provider: LIEF (in a worker process) for containers, capstone for code."""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING
from typing import Any
from typing import overload

import msgspec

from rea.plugin import AnalysisClient
from rea.plugin import AnalysisProvider
from rea.plugin import Arguments
from rea.plugin import Availability
from rea.plugin import CallContext
from rea.plugin import CloseOutcome
from rea.plugin import Feature
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import ProcessSpec
from rea.plugin import ProviderDescriptor
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import WorkerChannel
from rea.plugin import __version__
from rea.plugin import memory_limit_setting
from rea.plugin import python_worker_spec
from rea.plugin import read_error
from rea.plugin import verify_unchanged
from rea_plugins.native.declared import DECOMPILE_OPERATIONS
from rea_plugins.native.declared import OPERATIONS
from rea_plugins.native.declared import dist_version

if TYPE_CHECKING:
    from rea_plugins.native.assist import Pending
    from rea_plugins.native.assist import SweepJob
    from rea_plugins.native.assist import SweptFacts
    from rea_plugins.native.decompile import Decompilation
    from rea_plugins.native.decompile import Pool
    from rea_plugins.native.registers import RegisterRows
    from rea_plugins.native.registers import RegistersJob
    from rea_plugins.native.strings import StringColumns
    from rea_plugins.native.strings import StringsJob

MAX_FILE_BYTES = 2 << 30
RESOURCE = "native-parse-worker"
# The parse worker's address-space bound: a LIEF allocation storm on a huge or hostile input fails there.
MEMORY_LIMIT = memory_limit_setting("REA_NATIVE_MEMORY_LIMIT_MB", "native parse")
PARSE_TIMEOUT_S = 60.0
PARSE_BYTES_PER_S = 20 << 20

DESCRIPTOR = ProviderDescriptor(
    id="native",
    name="Native (LIEF + capstone)",
    version=__version__,
    kind="static",
    formats=("elf", "pe", "mach-o", "mach-o-universal"),
    architectures=("x86", "x86_64", "arm", "arm64"),
    operations=OPERATIONS,
    auto_priority=10,
    description="Embedded static analysis: containers by LIEF, code by capstone; no external engine.",
)


def _warm() -> None:
    """Import the program, its operations and capstone (the first open and index import them otherwise)."""
    with contextlib.suppress(Exception):  # an import that fails is reported by the open that needs it
        import rea_plugins.native.operations  # noqa: F401 - imported for its side effect: loaded
        from rea_plugins.native.sweep import x86_ids

        x86_ids()


class NativeClient(AnalysisClient):
    """One open target: the parsed model plus a lazily built Program."""

    def __init__(
        self, target: Target, program: Any, worker: WorkerChannel | None = None, pool: Pool | None = None
    ) -> None:
        from rea_plugins.native.operations import Operations

        self.target = target
        self.program = program
        self.ops = Operations(program, target)
        self._lock = threading.RLock()
        self._worker = worker
        # The parse worker is the provider's: this client reports what happened to it from its open on.
        self._lineage_from = len(worker.lineage()) - 1 if worker is not None and worker.pid else 0
        self._pool = pool
        self._decompiler: Decompilation | None = None
        self._pool_from = len(pool.lineage()) if pool is not None else 0

    def decompiler(self) -> Decompilation:
        """This target's decompilation (``rea_plugins.native.decompile.Decompilation``), made on first use."""
        from rea_plugins.native.decompile import Decompilation
        from rea_plugins.native.decompile import Pool

        with self._lock:
            if self._decompiler is None:
                self._decompiler = Decompilation(self.program, self.target, self._pool or Pool(), self._lock)
            return self._decompiler

    def execute(self, operation: str, params: Arguments, ctx: CallContext) -> OperationResult:
        from rea_plugins.native.operations import dispatch

        if operation in DECOMPILE_OPERATIONS:
            from rea_plugins.native.pseudo import HANDLERS

            # Not under the lock for its whole length: the decompile waits on a worker (the handlers take the lock
            # for what they read of the Program).
            try:
                return HANDLERS[operation](self, params, ctx)
            except (ValueError, IndexError, KeyError, OverflowError):
                raise ReaError(
                    "unsupported_target",
                    f"malformed binary: native {operation} met a value no valid {self.target.format} binary holds",
                    remediation="Check the target (it may be truncated or corrupted), or try another provider.",
                    details={"operation": operation, "format": self.target.format},
                ) from None
        with self._lock:  # the Program's caches are not thread-safe
            try:
                self.program.check_unchanged()
                return dispatch(self.ops, operation, params, ctx)
            except (ReaError, MemoryError, RecursionError):
                raise
            except OSError as exc:
                raise read_error(self.target.path, exc) from None
            except (ValueError, IndexError, KeyError, OverflowError):
                # Every structure these come from is read off the file: a value no valid binary holds.
                raise ReaError(
                    "unsupported_target",
                    f"malformed binary: native {operation} met a value no valid "
                    f"{self.target.format} binary holds where it reads it",
                    remediation="Check the target (it may be truncated or corrupted), or try another provider.",
                    details={"operation": operation, "format": self.target.format},
                ) from None

    def close(self) -> CloseOutcome:
        self.program.close()
        return CloseOutcome()

    def lineage(self) -> list[JSONObject]:
        out = [] if self._worker is None else self._worker.lineage()[self._lineage_from :]
        if self._pool is not None and self._decompiler is not None:
            out = out + self._pool.lineage()[self._pool_from :]
        return [o for o in out if o.get("event") != "closed"]


def _library_signatures() -> Feature:
    """Whether the static libraries that library signatures are built from are installed (globs only: no build)."""
    from rea_plugins.native.libsigs import ESSENTIAL
    from rea_plugins.native.libsigs import locate

    found: list[str] = []
    missing: list[str] = []
    for fmt, essential in ESSENTIAL.items():
        libs, gone = locate(fmt, "x86_64")
        found += [f"{fmt}: {lib.label}" for lib, _ in libs]
        missing += [m.package for m in gone if m.label == essential]
    if missing:
        return Feature(
            name="library-signatures",
            status="unavailable",
            reason="runtime libraries missing: " + ", ".join(sorted(set(missing))),
            remediation="apt-get install " + " ".join(sorted(set(missing))),
        )
    return Feature(name="library-signatures", status="available", reason="; ".join(found))


def _signature_profile() -> list[str]:
    """The static libraries library names come from (format, label, SHA-256 prefix) and the patterns' format: another
    glibc names other functions, so its results are other Evidence. The same for every target (a profile reads none
    of its fields); each file is hashed once per process."""
    from rea_plugins.native.libsigs import KIND
    from rea_plugins.native.libsigs import LIBRARIES
    from rea_plugins.native.libsigs import library_sha256
    from rea_plugins.native.libsigs import locate

    out = [KIND]
    for fmt, arch in LIBRARIES:
        libraries, _ = locate(fmt, arch)
        out += [f"{fmt}:{lib.label}@{library_sha256(path)[:16]}" for lib, path in libraries]
    return out


class NativeProvider(AnalysisProvider):
    """Always available: its engines are rea's own dependencies."""

    descriptor = DESCRIPTOR

    def __init__(self) -> None:
        self._worker: WorkerChannel | None = None
        self._lock = threading.Lock()
        self._warmed = threading.Event()
        self._pool: Pool | None = None
        self._profile: tuple[Target, JSONObject] | None = None  # the last target's profile (analysis_profile)

    def availability(self) -> Availability:
        from rea_plugins.native.decompile import engine
        from rea_plugins.native.decompile import unavailable

        e = engine()
        if e.available:
            feature = Feature(name="decompiler", status="available", reason=f"flatline {e.flatline}")
        else:
            err = unavailable()
            feature = Feature(name="decompiler", status="unavailable", reason=e.reason, remediation=err.remediation)
        return Availability.ok("embedded LIEF and capstone", features=(feature, _library_signatures()))

    def pool(self) -> Pool:
        """The decompile workers, shared by this provider's clients (started on the first decompile)."""
        from rea_plugins.native.decompile import Pool

        with self._lock:
            if self._pool is None:
                self._pool = Pool()
            return self._pool

    def limits(self) -> Any:
        from rea_plugins.native.limits import Limits  # not the Program's module: a warm open need not import it

        return Limits()

    # JSON, not a Struct: the kernel hashes the profile into every Evidence id as the parameters it holds.
    def analysis_profile(self, target: Target) -> JSONObject:
        # An open reads the profile twice for one identified target (the session's binding, then the store's cache
        # keys): the second read is the first's, not another glob and stat of every static library.
        last = self._profile
        if last is not None and last[0] is target:
            return last[1]
        profile = self._analysis_profile()
        self._profile = (target, profile)
        return profile

    def _analysis_profile(self) -> JSONObject:
        from rea_plugins.native.declared import host_arch
        from rea_plugins.native.decompile import engine

        limits = self.limits()
        return {
            "engine": "lief+capstone",
            "lief": dist_version("lief"),
            "capstone": dist_version("capstone"),
            "procedure_sources": [
                "symbols",
                "entry",
                "entry-heuristic-main",
                "exception-tables",
                "import-stubs",
                "call-targets",
                "code-pointers",
                "tail-call-targets",
                "branch-targets",
            ],
            "split_parts": "by symbol name (foo.cold) and by structure",
            "call_target_discovery": "at every size",
            "max_procedures": limits.max_procedures,
            "max_program_instructions": limits.max_program_instructions,
            "max_function_instructions": limits.max_function_instructions,
            "index_deadline_s": limits.index_deadline_s,
            "index_seconds_per_mib": limits.index_seconds_per_mib,
            "strings": {
                "encodings": ["ascii", "utf-8", "utf-16le"],
                "min_chars": limits.min_string_chars,
                "max_chars": limits.max_string_chars,
                "max_strings": limits.max_strings,
            },
            "universal_slice_preference": host_arch() or "first",
            "jump_tables": "x86 and AArch64 gcc/clang patterns",
            "library_signatures": _signature_profile(),
            "decompiler": {"engine": "flatline", "flatline": e.flatline, "ghidra_sleigh": e.ghidra_sleigh}
            if (e := engine()).available
            else None,
        }

    def worker(self) -> WorkerChannel:
        """The provider's parse worker, shared by its clients; started on the first open that parses."""
        with self._lock:
            if self._worker is None:
                from rea_plugins.native.worker import MAX_FRAME_BYTES

                def spec() -> ProcessSpec:
                    # Read at each start, so a restarted worker runs under the bound configured now.
                    return python_worker_spec(
                        "rea_plugins.native.worker",
                        resource=RESOURCE,
                        owner=DESCRIPTOR.id,
                        address_space_bytes=MEMORY_LIMIT.read() << 20,
                        memory_setting=MEMORY_LIMIT.name,
                    )

                self._worker = WorkerChannel(spec, label=DESCRIPTOR.id, max_frame_bytes=MAX_FRAME_BYTES, stateful=False)
            return self._worker

    def _started(self) -> WorkerChannel:
        """The worker, started; the first time, this server then loads what the first open and index read while
        the worker loads LIEF in its own process (that wait is idle here; the start itself is not shared)."""
        worker = self.worker()
        worker.ensure_started()
        if not self._warmed.is_set():
            self._warmed.set()
            threading.Thread(target=_warm, name="rea-native-warm", daemon=True).start()
        return worker

    def prestart(self) -> None:
        """Spawn the parse worker, which loads LIEF in its own process (about a quarter second of CPU): as the server
        starts, so the first open finds it loaded. The spawn is all this costs the server."""
        with contextlib.suppress(ReaError, OSError):  # the first open that needs the worker reports the failure
            self.worker().ensure_started()

    def prewarm(self) -> None:
        """Start the parse worker in the background (it imports LIEF as it starts) and hash the static libraries the
        analysis profile names, and return at once, so the first open waits for neither."""
        threading.Thread(target=self._start_worker, name="rea-native-prewarm", daemon=True).start()

    def _start_worker(self) -> None:
        with contextlib.suppress(ReaError, OSError):  # the first open that needs the worker reports the failure
            self._started()
        # Every open's analysis profile names the static libraries' digests: hashed here (hashlib leaves the GIL
        # while the worker loads LIEF), once per server, not in the first open's time.
        with contextlib.suppress(Exception):  # the open that needs them hashes again and reports what fails
            _signature_profile()

    def _parse(self, target: Target, ctx: CallContext) -> Any:
        from rea_plugins.native.declared import host_arch
        from rea_plugins.native.model import Model
        from rea_plugins.native.model import WorkerRequest

        timeout = PARSE_TIMEOUT_S + target.size / PARSE_BYTES_PER_S
        from rea_plugins.native.assist import ASSIST_BYTES
        from rea_plugins.native.assist import MAX_FILE_BYTES

        # Only a target the worker will be sent work for has it load capstone (several MB it never needs otherwise).
        warm = ASSIST_BYTES <= target.size <= MAX_FILE_BYTES
        request = msgspec.to_builtins(WorkerRequest(path=target.resolved_path, prefer_arch=host_arch(), warm=warm))
        reply = self._started().request("parse", request, ctx, deadline_s=timeout, phase="parsing the binary")
        try:
            return reply.result(Model)
        except msgspec.ValidationError:
            raise ReaError(
                "unsupported_target", "malformed binary: the parse produced invalid fields", details={"phase": "parse"}
            ) from None

    @overload
    def _assist(self, job: SweepJob, after: Pending[Any] | None = None) -> Pending[SweptFacts] | None: ...
    @overload
    def _assist(self, job: StringsJob, after: Pending[Any] | None = None) -> Pending[StringColumns] | None: ...
    @overload
    def _assist(self, job: RegistersJob, after: Pending[Any] | None = None) -> Pending[RegisterRows] | None: ...
    def _assist(
        self, job: SweepJob | StringsJob | RegistersJob, after: Pending[Any] | None = None
    ) -> Pending[Any] | None:
        """``job`` sent to the parse worker from a thread of its own once ``after`` is answered, when the worker
        runs (none is started)."""
        from rea_plugins.native.assist import Pending
        from rea_plugins.native.assist import SweepJob
        from rea_plugins.native.assist import SweptFacts
        from rea_plugins.native.registers import RegisterRows
        from rea_plugins.native.strings import StringColumns
        from rea_plugins.native.strings import StringsJob

        worker = self._worker
        if worker is None or worker.pid is None:
            return None
        op, reply_type = (
            ("sweep", SweptFacts)
            if isinstance(job, SweepJob)
            else ("strings", StringColumns)
            if isinstance(job, StringsJob)
            else ("registers", RegisterRows)
        )

        def send(job: SweepJob | StringsJob | RegistersJob) -> Any:
            params = msgspec.to_builtins(job, builtin_types=(bytes,))  # the index and model travel as msgpack
            reply = worker.request(op, params, CallContext(), deadline_s=PARSE_TIMEOUT_S, phase=f"{op} for the server")
            return reply.result(reply_type)

        return Pending(send, job, after)

    def open(self, target: Target, run_id: str, ctx: CallContext | None = None) -> AnalysisClient:
        from rea_plugins.native.program import Program
        from rea_plugins.native.store import Store

        if target.is_directory or target.format not in DESCRIPTOR.formats:
            raise ReaError(
                "unsupported_target",
                f"native reads ELF, PE and Mach-O, not {target.format}",
                details={"format": target.format},
            )
        if target.size > MAX_FILE_BYTES:
            raise ReaError(
                "resource_constraint",
                f"{target.size} bytes exceed the native provider's limit of {MAX_FILE_BYTES}",
                details={"resource": "file_size", "limit": MAX_FILE_BYTES},
            )
        store = Store.for_target(self, target)
        # The same bytes parsed before (this process or an earlier one): no worker, no LIEF.
        model = store.model()
        parsed = model is None
        if model is None:
            model = self._parse(target, ctx or CallContext())
        try:
            program = Program(model, target.resolved_path, self.limits(), store, self._assist)
        except OSError as exc:
            raise read_error(target.path, exc) from None
        except ValueError:
            raise ReaError(
                "unsupported_target",
                f"malformed binary: native cannot lay out this {target.format} binary's segments and sections",
                details={"format": target.format},
            ) from None
        try:
            # The bytes the Program read (and keeps: read whole or a private copy) are the ones that were hashed.
            verify_unchanged(target, program._file.fileno(), ctx)
        except BaseException:
            program.close()
            raise
        if parsed:
            store.keep_model(model)
        return NativeClient(target, program, self._worker if parsed else None, self.pool())
