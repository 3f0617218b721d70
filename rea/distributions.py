"""Installed distributions' versions, for provider descriptors, without importing importlib.metadata at each start.

A provider names its engine's version in its descriptor, which every process builds to choose a provider; asking
importlib.metadata costs an import of the email package and a walk of sys.path per name (~35 ms for four engines
at every CLI call). The versions found are kept in the analysis cache beside the registry's entry-point scan,
valid while no directory on sys.path changed (installing, upgrading or removing a distribution changes its
directory), and looked up again when one did.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING
from typing import Final

if TYPE_CHECKING:
    from rea.cache import CacheKey

VERSIONS_KIND: Final = "rea-distribution-versions/1"
_MISSING: Final = ""
_lock = threading.Lock()
_known: dict[str, str] | None = None


def _key() -> CacheKey:
    from rea.catalog.manifest import manifest_key

    return manifest_key([sys.path], VERSIONS_KIND)


def _kept() -> dict[str, str]:
    from rea.cache import default_cache
    from rea.catalog.manifest import decode_raw
    from rea.catalog.manifest import load_derived

    try:
        cache = default_cache()
        found = load_derived(cache, _key()) if cache.enabled else None
        return decode_raw(found.value, dict[str, str]) if found is not None else {}
    except Exception:  # no cache, or an unreadable entry: looked up again
        return {}


def _keep(known: dict[str, str]) -> None:
    from rea.cache import default_cache
    from rea.catalog.manifest import store_derived
    from rea.catalog.manifest import sys_path_sources

    try:
        cache = default_cache()
        if cache.enabled:
            store_derived(cache, _key(), known, [], sources=sys_path_sources())
    except Exception:  # not kept: looked up again next time
        pass


def distribution_version(name: str) -> str | None:
    """The installed version of distribution ``name`` (None: not installed)."""
    global _known
    with _lock:
        if _known is None:
            _known = _kept()
        found = _known.get(name)
        if found is None:
            from importlib import metadata

            try:
                found = metadata.version(name)
            except metadata.PackageNotFoundError:
                found = _MISSING
            _known[name] = found
            _keep(dict(_known))
        return found or None
