"""rea: reverse engineering for coding agents, over pluggable analysis engines."""

from typing import Any

import pluggy

hookimpl = pluggy.HookimplMarker("rea")

# The distribution's name on the package index (the import package and the command stay `rea`): the index's `rea`
# is an unrelated project. Metadata lookups of rea itself and every install remediation use this name.
DISTRIBUTION = "rea-reverse"


def __getattr__(name: str) -> Any:
    # The version is read from the installed metadata when first asked for: importing importlib.metadata costs
    # about 25 ms, which a worker process (which never reports the version) would otherwise pay at every start.
    if name != "__version__":
        raise AttributeError(f"module 'rea' has no attribute {name!r}")
    from importlib import metadata

    try:
        version = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # running from a source tree without installed metadata
        version = "0.0.0+source"
    globals()["__version__"] = version
    return version


__all__ = ["DISTRIBUTION", "__version__", "hookimpl"]
