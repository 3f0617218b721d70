"""Memory limits as rea meets them: a worker's address-space cap, the limit rea itself was started under, and
what a refused allocation looks like once an engine (or rea's own process) has turned it into an error.

Standard library only: the session imports it, so a call that never starts a worker pays nothing for it.
"""

from __future__ import annotations

import re
import resource

from rea.errors import ReaError

# What a failed allocation looks like once an engine has turned it into its own exception or message: Python,
# C++, glibc, Rust's allocation-error handler, the dynamic loader mapping a library, a thread's stack that cannot
# be reserved, and a C extension that returned NULL without setting MemoryError ("error return without exception
# set", seen importing angr at the edge of a 256 MiB cap).
OUT_OF_MEMORY = re.compile(
    r"MemoryError|std::bad_alloc|Cannot allocate memory|\[Errno 12\]|[Oo]ut of memory|failed to allocate|"
    r"allocation failed|memory allocation of \d+ bytes failed|failed to map segment|can't start new thread|"
    r"error return without exception set"
)
# A refused request is at most this large (a library's or an arena's mapping): a peak this close to the cap means
# the cap refused one.
NEAR_CAP_BYTES = 64 << 20


def effective_address_space(requested: int) -> int:
    """The address-space cap (bytes; 0: none) a process started with ``requested`` runs under: the lower of it and
    the hard limit rea itself was started under (``ulimit -v``, a corpus worker's memory_limit), which no process it
    starts exceeds."""
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if hard == resource.RLIM_INFINITY:
        return requested
    return min(requested, hard) if requested else hard


def server_memory_exhausted(phase: str) -> ReaError:
    """rea's own process (not an engine's worker) ran out of memory during ``phase``: ``resource_constraint`` naming
    the address-space limit it was started under, if any."""
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    limit_mb = 0 if hard == resource.RLIM_INFINITY else hard >> 20
    bound = f"its {limit_mb} MiB address-space limit" if limit_mb else "memory"
    return ReaError(
        "resource_constraint",
        f"rea ran out of {bound} during {phase}",
        remediation="Raise the limit rea runs under (ulimit -v, or a corpus triage's memory_limit), or analyse a "
        "smaller input.",
        details={
            "resource": "memory",
            "phase": phase,
            **({"reported_limits": {"address_space_mb": limit_mb}} if limit_mb else {}),
        },
    )


def capped() -> bool:
    """Whether this process runs under an address-space cap (a worker: the kernel's launcher sets RLIMIT_AS)."""
    return resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY


def near_cap() -> bool:
    """Whether this process's address space has come within ``NEAR_CAP_BYTES`` of its cap: a failure then is an
    allocation the cap refused, whatever the engine made of it (z3 reports a library it could not map as "not
    found")."""
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return False
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmPeak:"):
                    return int(line.split()[1]) * 1024 > limit - NEAR_CAP_BYTES
    except (OSError, ValueError, IndexError):
        pass
    return False


def refused_allocation(exc: BaseException) -> bool:
    """Whether ``exc`` is a failed allocation: a MemoryError, or, under an address-space cap, an exception that reads
    as one (or raised with the cap nearly reached)."""
    return isinstance(exc, MemoryError) or (capped() and (says_out_of_memory(exc) or near_cap()))


def says_out_of_memory(exc: BaseException) -> bool:
    """Whether the exception, or one it was raised from or during, reads as a failed allocation."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError) or OUT_OF_MEMORY.search(f"{type(current).__name__}: {current}"[:2000]):
            return True
        current = current.__cause__ or current.__context__
    return False
