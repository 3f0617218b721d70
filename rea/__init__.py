"""rea: reverse engineering for coding agents, over pluggable analysis engines."""

from importlib import metadata

import pluggy

hookimpl = pluggy.HookimplMarker("rea")

try:
    __version__ = metadata.version("rea")
except metadata.PackageNotFoundError:  # running from a source tree without installed metadata
    __version__ = "0.0.0+source"

__all__ = ["__version__", "hookimpl"]
