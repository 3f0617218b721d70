"""A target's whole file for a parser that reads it in memory: bounded, and confirmed to be the bytes it was
hashed from, so no answer is ever given under a hash its bytes no longer have."""

from __future__ import annotations

import hashlib
import os

from rea.errors import ReaError
from rea.files import open_regular
from rea.files import read_regular
from rea.target import Target
from rea.target import read_error

RETRY = "Retry once the file is stable."


def confirm_hashed(target: Target, data: bytes, remediation: str = RETRY) -> bytes:
    """``data`` when it is the bytes ``target`` was hashed from, else ``artifact_changed`` (the file was written to
    between ``identify`` and the read); ``remediation`` says what the caller's user does about it."""
    if hashlib.sha256(data).hexdigest() != target.sha256:
        raise ReaError(
            "artifact_changed",
            f"{target.path} changed while it was read",
            remediation=remediation,
            details={"path": target.path},
        )
    return data


def read_hashed(
    target: Target,
    max_bytes: int,
    *,
    code: str = "unsupported_target",
    field: str | None = None,
    remediation: str = RETRY,
) -> bytes:
    """The whole file of ``target`` through ``read_regular`` (``code`` when it is no longer a regular file,
    ``resource_constraint`` past ``max_bytes``, ``read_error``'s code when the read fails), confirmed by
    ``confirm_hashed``."""
    try:
        data = read_regular(target.resolved_path, max_bytes, code=code, field=field)
    except OSError as exc:
        raise read_error(target.path, exc) from None
    return confirm_hashed(target, data, remediation)


def read_identified(
    target: Target, max_bytes: int, *, code: str = "unsupported_target", remediation: str = RETRY
) -> bytes:
    """The whole file of ``target``, for a caller that refused a target over ``max_bytes`` already (its
    ``target.size``): read through ``open_regular`` (``code`` when it is no longer a regular file) up to one byte past
    the bound, so a file that grew past it since fails ``confirm_hashed`` like any other change."""
    try:
        with os.fdopen(open_regular(target.resolved_path, code=code, what="target"), "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise read_error(target.path, exc) from None
    return confirm_hashed(target, data, remediation)
