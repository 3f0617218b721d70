"""The native provider's safety limits: a module of their own, so the analysis profile (read at every open, warm
or cold) names them without importing the index, the sweep or the Program."""

from __future__ import annotations

import msgspec


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """Inventory safety limits; exceeding one fails with ``resource_constraint``."""

    max_procedures: int = 1_000_000
    # A memory bound, not a size threshold: the sweep keeps a few bytes per branch, about 60 B per thousand
    # instructions, so this many decoded instructions stay within a few GiB of compact columns.
    max_program_instructions: int = 500_000_000
    max_function_instructions: int = 200_000
    max_strings: int = 2_000_000
    max_string_chars: int = 1024
    min_string_chars: int = 4
    # The whole-program index's time bound: this much, plus ``index_seconds_per_mib`` for every MiB of code.
    index_deadline_s: float = 300.0
    index_seconds_per_mib: float = 4.0

    def deadline_s(self, code_bytes: int) -> float:
        """Seconds the whole-program index may take over ``code_bytes`` of code."""
        return self.index_deadline_s + self.index_seconds_per_mib * code_bytes / (1 << 20)
