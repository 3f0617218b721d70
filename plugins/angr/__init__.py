"""The angr analysis provider: angr runs in a worker process rea owns (angr is never imported here)."""

from __future__ import annotations

from collections.abc import Callable

from rea import hookimpl
from rea.providers import AnalysisProvider


@hookimpl
def rea_register_analysis_providers(register: Callable[[AnalysisProvider], None]) -> None:
    from rea_plugins.angr.provider import AngrProvider

    register(AngrProvider())
