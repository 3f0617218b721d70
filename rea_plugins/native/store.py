"""Where the native provider keeps what it computed for a target between sessions: the kernel's analysis cache.

Five kinds of entry, each keyed by the target's SHA-256, the provider's version and the analysis profile's
digest (docs/cache.md): the parsed container (``Model``: a reopen skips the parse worker), the whole-program
index of procedures, calls and jumps (``ProgramIndex``), the references to data (``RefTable``), the
whole-program call graph (``CallGraph``) and the block counts of the procedures asked about (``BlockCounts``),
the last three computed on the first query that needs them. Bump a kind's version when its meaning changes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from typing import TypeVar

import msgspec

from rea.plugin import AnalysisCache
from rea.plugin import AnalysisProvider
from rea.plugin import CacheKey
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import default_cache
from rea.plugin import profile_digest
from rea_plugins.native.graph import CallGraph
from rea_plugins.native.index import ProgramIndex
from rea_plugins.native.index import RefTable
from rea_plugins.native.model import Model

# /2: imports say whether they are data (no procedure for an imported variable). /3: a variable an executable
# copies from its library (R_*_COPY: stdout, stderr) is a data import at its copy, no longer a symbol of its own;
# the index and data tables built over the older model go with it. /4: the C runtime's variables (_fmode,
# _commode, __initenv, _acmdln) a PE imports are data imports. /5: a PE with a CLI header says so (linkage "clr"), and
# an IL-only one carries the note that its code is IL. /6: a static ELF's extents come from its .eh_frame FDEs (LIEF
# finds them only through PT_GNU_EH_FRAME, which a static executable lacks).
MODEL_KIND = "native-model/6"
# /5: call-target discovery at every size (no code-size threshold). /6: reference columns may be int32 (RefTable).
# /7: AArch64 jump tables (their cases are code the descent reaches). /8: a Go binary's functions named from pclntab.
INDEX_KIND = "native-program-index/8"
# /2: pointer slots (relocations, base relocations, init/fini arrays, fixed-image pointers) joined the table.
# /5: its columns may be int32 (RefTable).
DATA_KIND = "native-data-references/5"
# Built from the index: its key names the index's version too, so an index of another meaning never serves it.
# /2: caller and callee columns may be int32.
GRAPH_KIND = f"native-call-graph/2+{INDEX_KIND.rsplit('/', 1)[1]}"
# Basic-block and instruction counts of the procedures asked about (extents come from the index, as above).
BLOCKS_KIND = f"native-block-counts/1+{INDEX_KIND.rsplit('/', 1)[1]}"
T = TypeVar("T")


class BlockCounts(msgspec.Struct, frozen=True):
    """Procedure start -> (basic blocks, instructions), for the procedures whose facts were asked for."""

    counts: dict[int, tuple[int, int]]


class _Memo:
    """The last few values this process loaded or stored, so a reopen in the same server decodes nothing."""

    def __init__(self, max_entries: int = 8) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)


MEMO = _Memo()
# An index with more procedures than this is kept in the analysis cache only, not in the memo (``keep_index``).
MEMO_MAX_PROCEDURES = 100_000


class Store:
    """One target's entries; a cache that is off, unreadable or full only means nothing is kept."""

    def __init__(self, cache: AnalysisCache | None, keys: dict[str, CacheKey]) -> None:
        self.cache = cache
        self.keys = keys
        self.sha256 = next(iter(keys.values())).target_sha256 if keys else ""
        # Cleared when the bytes the program read are not the ones the keys name (the file changed meanwhile).
        self.verified = bool(keys)

    @classmethod
    def for_target(cls, provider: AnalysisProvider, target: Target) -> Store:
        try:
            cache: AnalysisCache | None = default_cache()
        except ReaError:  # invalid settings are reported by the front ends; here they only mean no cache
            cache = None
        digest = profile_digest(provider, target)
        keys = {
            kind: CacheKey.for_target(target, provider.descriptor, digest, kind)
            for kind in (MODEL_KIND, INDEX_KIND, DATA_KIND, GRAPH_KIND, BLOCKS_KIND)
        }
        return cls(cache, keys)

    def _load(self, kind: str, value_type: type[T], memo: Callable[[T], bool] | None = None) -> T | None:
        """The entry of ``kind``, from the memo or the analysis cache (memoized unless ``memo`` says no)."""
        if not self.verified:
            return None
        key = self.keys[kind]
        kept = MEMO.get(key.digest())
        if isinstance(kept, value_type):
            return kept
        value = self.cache.load(key, value_type) if self.cache is not None else None
        if value is not None and (memo is None or memo(value)):
            MEMO.put(key.digest(), value)
        return value

    def _store(self, kind: str, value: Any) -> None:
        if not self.verified:
            return
        key = self.keys[kind]
        MEMO.put(key.digest(), value)
        if self.cache is not None:
            self.cache.store(key, value)

    def model(self) -> Model | None:
        return self._load(MODEL_KIND, Model)

    def keep_model(self, model: Model) -> None:
        self._store(MODEL_KIND, model)

    def index(self) -> ProgramIndex | None:
        return self._load(INDEX_KIND, ProgramIndex, _memoized)

    def keep_index(self, index: ProgramIndex) -> None:
        if _memoized(index):
            self._store(INDEX_KIND, index)
        elif self.verified and self.cache is not None:
            # Not memoized: the program keeps its own procedures, and the memo's records would be a second copy of
            # each for the session (a chromium's 600 k: ~60 MB). A reopen in this server reads the analysis cache.
            self.cache.store(self.keys[INDEX_KIND], index)

    def data(self) -> RefTable | None:
        return self._load(DATA_KIND, RefTable)

    def keep_data(self, table: RefTable) -> None:
        self._store(DATA_KIND, table)

    def call_graph(self) -> CallGraph | None:
        return self._load(GRAPH_KIND, CallGraph)

    def keep_call_graph(self, graph: CallGraph) -> None:
        self._store(GRAPH_KIND, graph)

    def block_counts(self) -> BlockCounts | None:
        return self._load(BLOCKS_KIND, BlockCounts)

    def keep_block_counts(self, counts: BlockCounts) -> None:
        self._store(BLOCKS_KIND, counts)


def _memoized(index: ProgramIndex) -> bool:
    return len(index.procs) <= MEMO_MAX_PROCEDURES


def detached() -> Store:
    """A store that keeps nothing (a Program built outside a provider, as tests and benchmarks do)."""
    return Store(None, {})
