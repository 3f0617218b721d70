"""The projections plugin: how input schemas are advertised, ``full`` and ``compact`` (defined in
``rea_plugins.projections.profiles``, imported when the hook runs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rea.plugin import hookimpl

if TYPE_CHECKING:
    from rea.plugin import Projection


@hookimpl
def rea_register_projections(register: Callable[[Projection], None]) -> None:
    from rea_plugins.projections.profiles import CompactProjection
    from rea_plugins.projections.profiles import FullProjection

    register(FullProjection())
    register(CompactProjection())
