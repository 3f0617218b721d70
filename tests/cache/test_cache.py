"""The analysis cache: hits, misses, validation on load, concurrent writers, the LRU bound, a provider using it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import msgspec
import pytest

from rea import hookimpl
from rea import registry as registry_mod
from rea.cache import AnalysisCache
from rea.cache import CacheKey
from rea.cache import default_cache
from rea.cache import profile_digest
from rea.config import load_settings
from rea.context import CallContext
from rea.errors import ReaError
from rea.providers import AnalysisClient
from rea.providers import AnalysisProvider
from rea.providers import Availability
from rea.providers import OperationResult
from rea.providers import ProviderDescriptor
from rea.session import Session
from rea.target import Target
from rea.target import identify

ROOT = Path(__file__).resolve().parents[2]


class WordIndex(msgspec.Struct, frozen=True, kw_only=True):
    """A stand-in whole-program index: every distinct 4-byte word of the file, sorted."""

    words: list[int]
    size: int


def key(n: int = 0, kind: str = "test-index/1") -> CacheKey:
    return CacheKey(
        kind=kind, target_sha256=f"{n:064x}", provider_id="test", provider_version="1", profile_digest="0" * 64
    )


def value(n: int, count: int = 200) -> WordIndex:
    return WordIndex(words=list(range(n, n + count)), size=count)


# -- the store ---------------------------------------------------------------------------------------


def test_hit_returns_what_was_stored_and_a_miss_is_none(tmp_path: Path) -> None:
    cache = AnalysisCache(str(tmp_path), 1 << 20)
    assert cache.load(key(1), WordIndex) is None
    assert cache.store(key(1), value(1))
    assert cache.load(key(1), WordIndex) == value(1)
    assert cache.load(key(2), WordIndex) is None
    # Every dependency is part of the key: another kind, provider version or profile is another entry.
    for other in (
        key(1, kind="test-index/2"),
        msgspec.structs.replace(key(1), provider_version="2"),
        msgspec.structs.replace(key(1), profile_digest="1" * 64),
    ):
        assert cache.load(other, WordIndex) is None
    info = cache.info()
    assert (info.entries, info.kinds[0].kind, info.unreadable) == (1, "test-index/1", 0)


def test_off_stores_nothing(tmp_path: Path) -> None:
    cache = AnalysisCache(str(tmp_path), 0)
    assert not cache.store(key(1), value(1))
    assert cache.load(key(1), WordIndex) is None
    assert not (tmp_path / "entries").exists()


def test_a_value_of_another_type_layout_is_a_miss(tmp_path: Path) -> None:
    class Older(msgspec.Struct, frozen=True, kw_only=True):
        words: list[int]

    cache = AnalysisCache(str(tmp_path), 1 << 20)
    cache.store(key(1), Older(words=[1, 2]))
    assert cache.load(key(1), WordIndex) is None
    assert not os.path.exists(cache.path(key(1)))


@pytest.mark.parametrize("damage", ["flip_payload", "truncate", "garbage", "empty", "header_version"])
def test_a_corrupt_entry_is_ignored_and_removed(tmp_path: Path, damage: str) -> None:
    cache = AnalysisCache(str(tmp_path), 1 << 20)
    cache.store(key(1), value(1))
    path = Path(cache.path(key(1)))
    data = bytearray(path.read_bytes())
    if damage == "flip_payload":
        data[-5] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "garbage":
        data = bytearray(os.urandom(len(data)))
    elif damage == "empty":
        data = bytearray()
    else:
        data = data.replace(b"\xaeformat_version\x02", b"\xaeformat_version\x03")
    path.write_bytes(bytes(data))
    assert cache.load(key(1), WordIndex) is None
    assert not path.exists()
    # The next store heals it.
    assert cache.store(key(1), value(1)) and cache.load(key(1), WordIndex) == value(1)


def test_a_foreign_entry_under_another_name_is_never_trusted(tmp_path: Path) -> None:
    cache = AnalysisCache(str(tmp_path), 1 << 20)
    cache.store(key(1), value(1))
    # A whole, valid entry written for key 1, placed where key 2 lives.
    Path(cache.path(key(2))).write_bytes(Path(cache.path(key(1))).read_bytes())
    assert cache.load(key(2), WordIndex) is None
    assert not os.path.exists(cache.path(key(2)))
    assert cache.load(key(1), WordIndex) == value(1)


def test_eviction_keeps_the_bound_and_drops_the_least_recently_used(tmp_path: Path) -> None:
    probe = AnalysisCache(str(tmp_path / "probe"), 1 << 20)
    probe.store(key(0), value(0))
    entry = os.path.getsize(probe.path(key(0)))
    bound = entry * 5 + entry // 2  # room for five entries
    cache = AnalysisCache(str(tmp_path / "c"), bound)
    for n in range(1, 6):
        assert cache.store(key(n), value(n))
        os.utime(cache.path(key(n)), (n, n))  # distinct, ordered use times
    assert cache.load(key(1), WordIndex) == value(1)  # a hit: key 1 is now the most recently used
    assert cache.store(key(6), value(6))
    info = cache.info()
    assert info.bytes <= bound
    assert cache.load(key(1), WordIndex) == value(1) and cache.load(key(6), WordIndex) == value(6)
    assert cache.load(key(2), WordIndex) is None  # the least recently used went first
    for n in range(7, 30):
        assert cache.store(key(n), value(n))
        assert cache.info().bytes <= bound
    # A value that can never fit is not kept, and evicts nothing.
    before = cache.info().entries
    assert not cache.store(key(99), value(0, count=10 * bound))
    assert cache.info().entries == before


WRITER = textwrap.dedent("""
    import sys
    import msgspec
    from rea.cache import AnalysisCache, CacheKey

    class WordIndex(msgspec.Struct, frozen=True, kw_only=True):
        words: list[int]
        size: int

    cache = AnalysisCache(sys.argv[1], 1 << 30)
    key = CacheKey(kind="test-index/1", target_sha256="ab" * 32, provider_id="test", provider_version="1",
                   profile_digest="0" * 64)
    seen = 0
    for i in range(int(sys.argv[2])):
        assert cache.store(key, WordIndex(words=list(range(50_000)), size=50_000))
        got = cache.load(key, WordIndex)
        # A reader sees a whole entry or none, never a part of one.
        assert got is None or got.size == 50_000 and len(got.words) == 50_000
        seen += got is not None
    print(seen)
""")


def test_two_processes_writing_the_same_entry_at_once(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), "25"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert int(out) == 25  # each of its own reads found the entry whole
    cache = AnalysisCache(str(tmp_path), 1 << 30)
    got = cache.load(
        CacheKey(
            kind="test-index/1",
            target_sha256="ab" * 32,
            provider_id="test",
            provider_version="1",
            profile_digest="0" * 64,
        ),
        WordIndex,
    )
    assert got is not None and got.size == 50_000
    assert [n for n in os.listdir(tmp_path / "entries") if not n.endswith(".entry")] == []


def test_clear_empties_it(tmp_path: Path) -> None:
    cache = AnalysisCache(str(tmp_path), 1 << 20)
    for n in range(3):
        cache.store(key(n), value(n))
    outcome = cache.clear()
    assert outcome.removed_entries == 3 and outcome.removed_bytes > 0
    assert cache.info().entries == 0 and cache.load(key(0), WordIndex) is None


# -- settings --------------------------------------------------------------------------------------


def test_settings_name_the_directory_and_bound(tmp_path: Path) -> None:
    settings = load_settings({"HOME": "/home/u"})
    assert settings.cache_dir == "/home/u/.cache/rea" and settings.cache_max_bytes == 1 << 30
    assert load_settings({"HOME": "/h", "XDG_CACHE_HOME": "/xdg"}).cache_dir == "/xdg/rea"
    assert load_settings({"HOME": "/h", "XDG_CACHE_HOME": "rel"}).cache_dir == "/h/.cache/rea"
    explicit = load_settings({"REA_CACHE_DIR": str(tmp_path), "REA_CACHE_MAX_BYTES": "0"})
    assert (explicit.cache_dir, explicit.cache_max_bytes) == (str(tmp_path), 0)
    cache = default_cache({"REA_CACHE_DIR": str(tmp_path), "REA_CACHE_MAX_BYTES": "2097152"})
    assert (cache.directory, cache.max_bytes) == (str(tmp_path), 2097152)


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("REA_CACHE_DIR", "relative/dir"),
        ("REA_CACHE_DIR", ""),
        ("REA_CACHE_MAX_BYTES", "5"),
        ("REA_CACHE_MAX_BYTES", "-1"),
        ("REA_CACHE_MAX_BYTES", "1e9"),
        ("REA_CACHE_MAX_BYTES", "01048576"),
    ],
)
def test_invalid_settings_are_configuration_invalid(name: str, raw: str) -> None:
    with pytest.raises(ReaError) as info:
        load_settings({name: raw})
    assert info.value.code == "configuration_invalid" and name in info.value.message


# -- a provider using the API -----------------------------------------------------------------------


class CachingClient(AnalysisClient):
    def __init__(self, index: WordIndex) -> None:
        self.index = index

    def execute(self, operation: str, params: dict[str, Any], ctx: CallContext) -> OperationResult:
        return OperationResult(normalized={"distinct_words": len(self.index.words), "size": self.index.size})


class CachingProvider(AnalysisProvider):
    """Computes a whole-file index at open, through the kernel cache (the way a real provider wires it)."""

    descriptor = ProviderDescriptor(
        id="cached",
        name="Cached",
        version="1.0",
        kind="static",
        formats=("file", "elf"),
        architectures=(),
        operations=("word_index",),
        auto_priority=0,
    )

    def __init__(self, cache: AnalysisCache) -> None:
        self.cache = cache
        self.computed = 0

    def availability(self) -> Availability:
        return Availability.ok()

    def analysis_profile(self, target: Target) -> dict[str, Any]:
        return {"word_bytes": 4}

    def open(self, target: Target, run_id: str, ctx: CallContext) -> AnalysisClient:
        key = CacheKey.for_target(target, self.descriptor, profile_digest(self, target), "word-index/1")
        index = self.cache.load(key, WordIndex)
        if index is None:
            self.computed += 1
            data = Path(target.resolved_path).read_bytes()
            words = sorted({int.from_bytes(data[i : i + 4], "little") for i in range(0, len(data) - 3, 4)})
            index = WordIndex(words=words, size=len(data))
            self.cache.store(key, index)
        return CachingClient(index)


class _Plugin:
    def __init__(self, provider: CachingProvider) -> None:
        self.provider = provider

    @hookimpl
    def rea_register_analysis_providers(self, register: Any) -> None:
        register(self.provider)


def test_a_provider_reuses_its_analysis_across_sessions_and_recomputes_for_changed_bytes(tmp_path: Path) -> None:
    provider = CachingProvider(AnalysisCache(str(tmp_path / "cache"), 1 << 20))
    registry = registry_mod.load(entry_points=False, extra=[("cached", _Plugin(provider))])
    target = tmp_path / "target.bin"
    target.write_bytes(bytes(range(256)) * 16)

    def answer() -> Any:
        session = Session(registry)
        try:
            session.open(str(target), "cached", CallContext())
            return session.execute("word_index", {}, CallContext()).normalized
        finally:
            session.close()

    first = answer()
    assert provider.computed == 1
    assert answer() == first and provider.computed == 1  # a new session, the same bytes: a hit
    target.write_bytes(bytes(range(256)) * 16 + b"more")  # the same path, other bytes: a miss
    assert answer()["size"] == first["size"] + 4 and provider.computed == 2
    key = CacheKey.for_target(
        identify(str(target)), provider.descriptor, profile_digest(provider, identify(str(target))), "word-index/1"
    )
    assert provider.cache.load(key, WordIndex) is not None


def test_doctor_reports_the_cache_without_creating_it(tmp_path: Path) -> None:
    from rea.doctor import doctor_report
    from rea.doctor import format_doctor
    from rea.registry import default_registry

    registry = default_registry()
    where = tmp_path / "cache"
    absent = doctor_report(registry, home=str(tmp_path), environ={"REA_CACHE_DIR": str(where)})
    check = next(c for c in absent["checks"] if c["id"] == "analysis-cache")
    assert check["status"] == "pass" and "created on the first analysis" in check["summary"]
    assert absent["host"]["cache_dir"] == str(where) and not where.exists()
    AnalysisCache(str(where), 1 << 30).store(key(1), value(1))
    report = doctor_report(registry, home=str(tmp_path), environ={"REA_CACHE_DIR": str(where)})
    assert report["cache"]["entries"] == 1 and report["cache"]["bytes"] > 0 and report["cache"]["enabled"]
    assert f"{where} (1 entries" in format_doctor(report)
    bad = doctor_report(registry, home=str(tmp_path), environ={"REA_CACHE_MAX_BYTES": "12"})
    assert bad["cache"] is None and bad["host"]["cache_dir"] is None
    assert "settings" in bad["failures"]
    assert next(c for c in bad["checks"] if c["id"] == "analysis-cache")["status"] == "warn"
