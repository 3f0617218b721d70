"""rea: reverse engineering for coding agents, over pluggable analysis engines."""

from typing import TYPE_CHECKING
from typing import Any

from rea._version import __version__

if TYPE_CHECKING:
    import pluggy

    hookimpl: pluggy.HookimplMarker

# The distribution's name on the package index (the import package and the command stay `rea`): the index's `rea`
# is an unrelated project. Metadata lookups of rea itself and every install remediation use this name.
DISTRIBUTION = "rea-reverse"


def __getattr__(name: str) -> Any:
    # pluggy (and the importlib.metadata it brings, ~40 ms) is imported when a plugin first asks for the marker:
    # `rea --version` and the workers never do.
    if name != "hookimpl":
        raise AttributeError(f"module 'rea' has no attribute {name!r}")
    import pluggy

    marker = pluggy.HookimplMarker("rea")
    globals()["hookimpl"] = marker
    return marker


__all__ = ["DISTRIBUTION", "__version__", "hookimpl"]
