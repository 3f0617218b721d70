"""The one rule for file paths in tool arguments, applied by the kernel before any handler runs.

- ``~`` and ``~user`` are expanded;
- a relative path is resolved against the server's working directory (for the CLI: the caller's), and
  tools report the resolved path;
- a Windows-form path (``C:\\x``, ``\\\\server\\share``) is refused on a POSIX host, as is a NUL byte;
- a path that names a FIFO, a device or a socket is refused (``invalid_request``, ``reason: not_regular_file``)
  before the tool runs: reading one could block the call, or the whole server, forever.
"""

from __future__ import annotations

import os
import re
from typing import Any

from rea.arguments import Arguments
from rea.errors import invalid_request
from rea.errors import issue
from rea.files import refuse_special
from rea.records import JSONObject

_WINDOWS = re.compile(r"^(?:[A-Za-z]:[\\/]|[A-Za-z]:$|\\\\|//\?/|\\\?\\)")
MAX_PATH_CHARS = 4096


def resolve(value: Any, field: str) -> str:
    """The absolute form of path argument ``field``; ``invalid_request`` naming it when it cannot be one."""
    if not isinstance(value, str) or not value:
        raise invalid_request(f"{field} must be a non-empty path", [issue(field, "invalid_value", "empty path")])
    if "\x00" in value:
        raise invalid_request(
            f"{field} contains a NUL character, which no file name can hold",
            [issue(field, "invalid_value", "NUL character in path")],
        )
    if len(value) > MAX_PATH_CHARS:
        raise invalid_request(
            f"{field} is longer than {MAX_PATH_CHARS} characters",
            [issue(field, "out_of_range", f"at most {MAX_PATH_CHARS} characters")],
        )
    if os.name == "posix" and _WINDOWS.match(value):
        raise invalid_request(
            f"{field} {value!r} is a Windows path; this rea runs on a POSIX host",
            [issue(field, "invalid_format", "a POSIX path such as /home/me/app or ./app")],
        )
    return os.path.abspath(os.path.expanduser(value))


def path_fields(schema: JSONObject, declared: tuple[str, ...] = ()) -> list[str]:
    """Top-level string properties that are paths: ``path``, ``*_path`` and any the tool declares."""
    props = schema.get("properties")
    out = [
        name
        for name, sub in (props.items() if isinstance(props, dict) else ())
        if isinstance(sub, dict) and sub.get("type") == "string" and (name == "path" or name.endswith("_path"))
    ]
    return out + [name for name in declared if name not in out]


def resolve_arguments(args: Arguments, fields: list[str]) -> Arguments:
    """``args`` with every path field (and every string in a path-array field) resolved."""
    out = dict(args)
    for name in fields:
        if name not in out or out[name] is None:
            continue
        value = out[name]
        if isinstance(value, list):
            out[name] = [_checked(v, f"{name}/{i}") for i, v in enumerate(value)]
        else:
            out[name] = _checked(value, name)
    return out


def _checked(value: Any, field: str) -> str:
    path = resolve(value, field)
    refuse_special(path, field)
    return path
