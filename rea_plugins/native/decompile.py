"""Pseudo code for the ``native`` provider: Ghidra's decompiler (flatline) in owned decompile workers.

The server side: which SLEIGH language and compiler spec a binary gets, the load image the worker builds (native's
own segments, with the pointer slots native resolved written in: relocations applied), a pool of two decompile
workers (``batch_decompile`` keeps both busy), the per-function deadline and budget, and the cache of what the
engine produced. What the engine's text names by address is then named from native's view and the notebook
(``rewrite``). flatline needs Python >= 3.13; where it cannot be imported the pseudo-code operations are
``provider_unavailable`` naming this project's install command.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from collections.abc import Iterator
from typing import TYPE_CHECKING
from typing import Any

import msgspec

from rea.plugin import AnalysisCache
from rea.plugin import CacheKey
from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import ProcessSpec
from rea.plugin import ReaError
from rea.plugin import WorkerChannel
from rea.plugin import default_cache
from rea.plugin import integer_setting
from rea.plugin import memory_limit_setting
from rea.plugin import python_worker_spec
from rea_plugins.native.declared import dist_version
from rea_plugins.native.decompile_worker import INSTALL
from rea_plugins.native.decompile_worker import MAX_FRAME_BYTES
from rea_plugins.native.decompile_worker import Decompiled
from rea_plugins.native.decompile_worker import DecompileJob
from rea_plugins.native.decompile_worker import Flow
from rea_plugins.native.decompile_worker import FlowJob
from rea_plugins.native.decompile_worker import LoadJob
from rea_plugins.native.decompile_worker import Piece

if TYPE_CHECKING:
    from rea.plugin import Target
    from rea_plugins.native.model import Model
    from rea_plugins.native.program import Proc
    from rea_plugins.native.program import Program

RESOURCE = "native-decompile-worker"
DECOMPILE_MEMORY_LIMIT = memory_limit_setting("REA_NATIVE_DECOMPILER_MEMORY_LIMIT_MB", "native decompiler")
DECOMPILE_TIMEOUT = integer_setting(
    "REA_NATIVE_DECOMPILE_TIMEOUT_S",
    1,
    3600,
    30,
    "seconds",
    "Deadline of one function's decompilation by the native provider; past it the decompile worker is replaced "
    "and the call is provider_timeout naming the function.",
)
# The decompiler's own bound on one function (p-code operations it may generate), before the deadline.
MAX_INSTRUCTIONS = 200_000
WORKERS = 2
# The load of a large image is bounded by its own deadline (the worker reads the file once per image).
LOAD_TIMEOUT_S = 120.0
MAX_SLOTS = 2_000_000
MEMO_FUNCTIONS = 256
DECOMPILER_NAME = "ghidra (flatline)"
# The cached engine output's meaning: bump when Decompiled or the load image changes.
CACHE_KIND = "native-decompiled/1"


# -- availability --------------------------------------------------------------------------------------------


class Engine(msgspec.Struct, frozen=True, kw_only=True):
    """Whether the decompiler can run here, and its versions (the analysis profile and the doctor show it)."""

    available: bool
    reason: str = ""
    flatline: str | None = None
    ghidra_sleigh: str | None = None


@functools.cache
def engine() -> Engine:
    """flatline's state for this interpreter, found without importing it (the server never loads the engine: the
    decompile worker does, and reports an import that fails there as its own error)."""
    import importlib.util
    import sys

    if sys.version_info < (3, 13):
        return Engine(
            available=False,
            reason=f"the decompiler needs Python >= 3.13; this server runs {sys.version_info[0]}.{sys.version_info[1]}",
        )
    missing = [m for m in ("flatline", "ghidra_sleigh") if importlib.util.find_spec(m) is None]
    if missing:
        return Engine(available=False, reason=f"{' and '.join(missing)} not installed")
    return Engine(available=True, flatline=dist_version("flatline"), ghidra_sleigh=dist_version("ghidra-sleigh"))


def unavailable() -> ReaError:
    e = engine()
    return ReaError(
        "provider_unavailable",
        f"native's decompiler is not available: {e.reason}",
        remediation=INSTALL,
        details={"provider_id": "native", "component": "decompiler", "reason": e.reason},
    )


# -- language --------------------------------------------------------------------------------------------------

# (arch, format) -> (SLEIGH language, compiler spec); format "" is the default for the architecture. Only the
# architectures native opens (its descriptor); PE gets the Windows calling convention.
LANGUAGES: dict[tuple[str, str], tuple[str, str]] = {
    ("x86_64", ""): ("x86:LE:64:default", "gcc"),
    ("x86_64", "pe"): ("x86:LE:64:default", "windows"),
    ("x86", ""): ("x86:LE:32:default", "gcc"),
    ("x86", "pe"): ("x86:LE:32:default", "windows"),
    ("arm64", ""): ("AARCH64:LE:64:v8A", "default"),
    ("arm64", "pe"): ("AARCH64:LE:64:v8A", "windows"),
    ("arm64", "mach-o"): ("AARCH64:LE:64:AppleSilicon", "default"),
    ("arm", ""): ("ARM:LE:32:v8", "default"),
    ("arm", "pe"): ("ARM:LE:32:v8T", "windows"),
}


def language(model: Model, address: int) -> tuple[str, str, int]:
    """The language, the compiler spec and the entry address (a Thumb entry's low bit dropped) for one function."""
    fmt = "mach-o" if model.format.startswith("mach-o") else model.format
    found = LANGUAGES.get((model.arch, fmt)) or LANGUAGES.get((model.arch, ""))
    if found is None:
        raise ReaError(
            "capability_unavailable",
            f"native's decompiler has no language for {model.arch} {model.format}",
            remediation="Use another provider's pseudo code (provider angr or ghidra).",
            details={"architecture": model.arch, "format": model.format},
        )
    lang, compiler = found
    if model.arch == "arm" and address & 1:
        return "ARM:LE:32:v8T", compiler, address & ~1
    return lang, compiler, address


# -- workers ---------------------------------------------------------------------------------------------------


def _spec() -> ProcessSpec:
    # Read at each start, so a restarted worker runs under the bound configured now.
    return python_worker_spec(
        "rea_plugins.native.decompile_worker",
        resource=RESOURCE,
        owner="native",
        address_space_bytes=DECOMPILE_MEMORY_LIMIT.read() << 20,
        memory_setting=DECOMPILE_MEMORY_LIMIT.name,
    )


class _Slot:
    """One decompile worker and the image its current process holds (by the channel's generation)."""

    def __init__(self, n: int) -> None:
        self.channel = WorkerChannel(
            _spec, label=f"native decompiler {n}", max_frame_bytes=MAX_FRAME_BYTES, stateful=False
        )
        self.loaded: tuple[int, str] = (0, "")
        self.busy = threading.Lock()


class Pool:
    """The provider's decompile workers, shared by its clients; each started on first use."""

    def __init__(self, size: int = WORKERS) -> None:
        self.slots = [_Slot(n) for n in range(size)]
        self._free = threading.Condition()

    @property
    def size(self) -> int:
        return len(self.slots)

    def acquire(self, ctx: CallContext, prefer: int = 0) -> _Slot:
        """A free worker (``prefer``'s first), waiting for one while ``ctx`` is not cancelled."""
        order = self.slots[prefer:] + self.slots[:prefer]
        with self._free:
            while True:
                for s in order:
                    if s.busy.acquire(blocking=False):
                        return s
                ctx.check("waiting for a decompile worker")
                self._free.wait(0.05)

    def release(self, slot: _Slot) -> None:
        with self._free:
            slot.busy.release()
            self._free.notify_all()

    def lineage(self) -> list[JSONObject]:
        return [o for s in self.slots for o in s.channel.lineage()]


# -- one target ------------------------------------------------------------------------------------------------


class Decompilation:
    """One open target's decompilation: its load image, the engine output per function, and the pool."""

    def __init__(self, program: Program, target: Target, pool: Pool, lock: Any) -> None:
        self.program = program
        self.target = target
        self.pool = pool
        self.lock = lock  # the client's lock: Program's caches are not thread-safe
        self.sha256 = program.sha256()
        self._job: LoadJob | None = None
        self._memo_lock = threading.Lock()
        # The last functions' engine output (a page after page of one function, a rename re-rendered); the analysis
        # cache keeps every one, so a whole library's batch does not stay in the server.
        self._done: OrderedDict[int, Decompiled] = OrderedDict()
        self._cache: AnalysisCache | None
        try:
            self._cache = default_cache()
        except ReaError:
            self._cache = None

    # -- image -------------------------------------------------------------------------------------------------

    @property
    def image_key(self) -> str:
        """What names this target's load image in a worker (a universal binary's slice has its own)."""
        return f"{self.sha256}:{self.program.model.slice_arch or ''}"

    def load_job(self) -> LoadJob:
        if self._job is None:
            model = self.program.model
            regions = [r for r in model.segments if r.file_size > 0] or [r for r in model.sections if r.file_size > 0]
            pieces = [Piece(r.start, r.file_offset, min(r.file_size, r.size) or r.file_size) for r in regions]
            with self.lock:
                slots = self.program.an.slots()
                pairs = list(zip(slots.slots.tolist()[:MAX_SLOTS], slots.values.tolist()[:MAX_SLOTS], strict=True))
            self._job = LoadJob(
                key=self.image_key,
                path=self.program.path,
                pieces=pieces,
                pointer_size=self.program.pointer,
                big_endian=model.endianness == "big",
                slots=pairs,
            )
        return self._job

    def _ensure_loaded(self, slot: _Slot, ctx: CallContext) -> None:
        job = self.load_job()
        generation = slot.channel.ensure_started()
        if slot.loaded == (generation, job.key):
            return
        params = msgspec.to_builtins(job)
        slot.channel.request("load", params, ctx, deadline_s=LOAD_TIMEOUT_S, phase="loading the image to decompile")
        slot.loaded = (slot.channel.generation, job.key)

    # -- engine output -------------------------------------------------------------------------------------------

    def _key(self, address: int, lang: str, compiler: str) -> CacheKey:
        e = engine()
        return CacheKey(
            kind=f"{CACHE_KIND}+flatline-{e.flatline}+sleigh-{e.ghidra_sleigh}+{lang}+{compiler}+{address:x}",
            target_sha256=self.sha256,
            provider_id="native",
            provider_version=dist_version("rea-reverse") or "",
            profile_digest=self.program.model.slice_arch or "",
        )

    def decompiled(self, p: Proc, ctx: CallContext, prefer: int = 0) -> Decompiled:
        """The engine's output for ``p`` (memo, then the analysis cache, then a worker)."""
        if not engine().available:
            raise unavailable()
        with self._memo_lock:
            found = self._done.get(p.address)
            if found is not None:
                self._done.move_to_end(p.address)
        if found is not None:
            return found
        job = self._job_for(p)
        key = self._key(p.address, job.language, job.compiler)
        if self._cache is not None:
            kept = self._cache.load(key, Decompiled)
            if kept is not None:
                self._remember(p.address, kept)
                return kept
        out = self._run(job, p, ctx, prefer)
        self._remember(p.address, out)
        if self._cache is not None and out.text is not None:
            self._cache.store(key, out)
        return out

    def _remember(self, address: int, out: Decompiled) -> None:
        with self._memo_lock:  # the batch's threads add theirs at once
            self._done[address] = out
            while len(self._done) > MEMO_FUNCTIONS:
                self._done.popitem(last=False)

    def _run(self, job: DecompileJob, p: Proc, ctx: CallContext, prefer: int) -> Decompiled:
        result: Decompiled = self._request("decompile", job, Decompiled, p, ctx, prefer)
        return result

    def flow(self, p: Proc, site: int, argument: int, max_ops: int, ctx: CallContext) -> Flow:
        """A backward slice from argument ``argument`` of the call at ``site`` in ``p`` (never cached: rare)."""
        if not engine().available:
            raise unavailable()
        job = self._job_for(p)
        flow_job = FlowJob(job=job, site=site, argument=argument, max_ops=max_ops)
        result: Flow = self._request("data_flow", flow_job, Flow, p, ctx, 0)
        return result

    def _job_for(self, p: Proc) -> DecompileJob:
        lang, compiler, entry = language(self.program.model, p.address)
        with self.lock:
            end = self.program.end_of(p)
        return DecompileJob(
            key=self.image_key,
            address=entry,
            language=lang,
            compiler=compiler,
            size_hint=max(1, end - p.address) if end > p.address else None,
            max_instructions=MAX_INSTRUCTIONS,
        )

    def _request(self, op: str, job: msgspec.Struct, reply_type: Any, p: Proc, ctx: CallContext, prefer: int) -> Any:
        """``op`` on a free worker holding this target's image (loaded first where it does not): ``job`` is the
        request (sent as the JSON it encodes to)."""
        params = msgspec.to_builtins(job)
        timeout = float(DECOMPILE_TIMEOUT.read())
        slot = self.pool.acquire(ctx, prefer)
        try:
            for attempt in (0, 1):
                self._ensure_loaded(slot, ctx)
                try:
                    reply = slot.channel.request(
                        op,
                        params,
                        ctx,
                        deadline_s=timeout,
                        phase=f"decompiling {p.name} at {p.address:#x}",
                        timeout_remediation=f"Raise {DECOMPILE_TIMEOUT.name} (now {int(timeout)} s), or read this "
                        "function's assembly; the next call starts a fresh decompile worker.",
                    )
                    return reply.result(reply_type)
                except ReaError as exc:
                    if exc.code == "target_unavailable" and exc.details.get("reason") == "not_loaded" and not attempt:
                        slot.loaded = (0, "")
                        continue
                    raise _about(exc, p) from None
                except msgspec.ValidationError:
                    raise ReaError(
                        "execution_failure",
                        f"the decompile worker answered {p.name} in a shape rea does not know",
                        details={"procedure": hex(p.address), "reason": "worker_reply"},
                    ) from None
            raise ReaError(  # pragma: no cover - the loop returns or raises
                "execution_failure", "the decompile worker lost its image twice", details={"procedure": hex(p.address)}
            )
        finally:
            self.pool.release(slot)

    def many(self, procs: list[Proc], ctx: CallContext, on_done: Callable[[Proc, Decompiled | ReaError], None]) -> None:
        """Decompile ``procs`` on every worker of the pool at once; ``on_done`` hears each one's result (or its
        error) from the thread that finished it."""
        pending: Iterator[Proc] = iter(procs)
        take = threading.Lock()

        def run(n: int) -> None:
            while not ctx.cancelled:
                with take:
                    p = next(pending, None)
                if p is None:
                    return
                try:
                    result: Decompiled | ReaError = self.decompiled(p, ctx, prefer=n)
                except ReaError as exc:
                    if exc.code == "cancelled":
                        return
                    result = exc
                except (ValueError, IndexError, KeyError, OverflowError):
                    # What the Program reads off a malformed file (as NativeClient.execute reports it).
                    result = ReaError(
                        "unsupported_target",
                        f"malformed binary: native met a value no valid binary holds decompiling {p.name}",
                        details={"procedure": hex(p.address)},
                    )
                on_done(p, result)

        threads = [
            threading.Thread(target=run, args=(n,), name=f"rea-native-decompile-{n}", daemon=True)
            for n in range(self.pool.size)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ctx.check("decompiling")


def _about(exc: ReaError, p: Proc) -> ReaError:
    """A worker failure, its details naming the function it happened on (the phase names it in the message)."""
    details = {**exc.details, "procedure": hex(p.address), "name": p.name}
    return ReaError(exc.code, exc.message, remediation=exc.remediation, details=details)


def failure(out: Decompiled, p: Proc) -> ReaError:
    """The engine declined ``p``: ``execution_failure`` with the address and its reason."""
    reason = out.reason or out.error or "no output"
    return ReaError(
        "execution_failure",
        f"the decompiler could not decompile {p.name} at {p.address:#x}: {reason}",
        remediation="Read the function's assembly (procedure_assembly), or try another provider's pseudo code.",
        details={"procedure": hex(p.address), "name": p.name, "reason": reason, "engine_error": out.error or ""},
    )
