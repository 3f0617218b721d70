"""What a worker serves only once its client has set it up (the target an engine worker loaded, the program a
debugging worker launched): a request that reaches it before then is refused in the same words by every worker."""

from __future__ import annotations

from typing import TypeVar

from rea.errors import ReaError

T = TypeVar("T")


def held(
    value: T | None, worker: str, what: str = "loaded target", step: str = "loads the target before any query"
) -> T:
    """``value``, what the ``worker`` holds; ``execution_failure`` while it holds none (its client ``step`` first)."""
    if value is None:
        raise ReaError(
            "execution_failure", f"the {worker} worker has no {what}", remediation=f"Retry: the client {step}."
        )
    return value
