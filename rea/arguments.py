"""A tool's arguments, read with their types.

The arguments of a call are the client's JSON object, checked against the tool's input schema before a handler
runs: a user's document, so they stay JSON (``Arguments``) rather than a Struct per tool. A handler reads each one
with the accessor of its type, which narrows the JSON value for the type checker and, should a value the schema
did not describe reach it (a provider called from another tool, a script), answers ``invalid_request`` naming the
argument instead of failing later with a Python error.

An absent argument and an explicit null read alike: as the default, or None where there is none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar
from typing import cast
from typing import overload

from rea.errors import ReaError
from rea.errors import invalid_request
from rea.errors import issue
from rea.records import JSONObject
from rea.records import JSONValue

C = TypeVar("C", bound=str)

# A call's arguments as the client sent them (see the module's docstring for why this is JSON, not a Struct).
Arguments = JSONObject


def _wrong(name: str, kind: str) -> ReaError:
    message = f"{name} must be {kind}"
    return invalid_request(message, [issue(name, "invalid_type", message)])


@overload
def arg_str(args: Mapping[str, object], name: str) -> str | None: ...
@overload
def arg_str(args: Mapping[str, object], name: str, default: str) -> str: ...
def arg_str(args: Mapping[str, object], name: str, default: str | None = None) -> str | None:
    """The string argument ``name``."""
    value = args.get(name)
    if value is None:
        return default
    if not isinstance(value, str):
        raise _wrong(name, "a string")
    return value


@overload
def arg_int(args: Mapping[str, object], name: str) -> int | None: ...
@overload
def arg_int(args: Mapping[str, object], name: str, default: int) -> int: ...
def arg_int(args: Mapping[str, object], name: str, default: int | None = None) -> int | None:
    """The integer argument ``name`` (a JSON boolean is not one)."""
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong(name, "an integer")
    return value


@overload
def arg_float(args: Mapping[str, object], name: str) -> float | None: ...
@overload
def arg_float(args: Mapping[str, object], name: str, default: float) -> float: ...
def arg_float(args: Mapping[str, object], name: str, default: float | None = None) -> float | None:
    """The number argument ``name``, as sent: an integer stays one, so an answer that echoes it is unchanged."""
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _wrong(name, "a number")
    return value


def arg_bool(args: Mapping[str, object], name: str, default: bool = False) -> bool:
    """The boolean argument ``name``."""
    value = args.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _wrong(name, "a boolean")
    return value


@overload
def arg_choice(args: Mapping[str, object], name: str, choices: tuple[C, ...]) -> C | None: ...
@overload
def arg_choice(args: Mapping[str, object], name: str, choices: tuple[C, ...], default: C) -> C: ...
def arg_choice(args: Mapping[str, object], name: str, choices: tuple[C, ...], default: C | None = None) -> C | None:
    """The string argument ``name``, one of ``choices`` (its schema's enum), as the Literal type they are."""
    value = arg_str(args, name)
    if value is None:
        return default
    for choice in choices:
        if value == choice:
            return choice
    message = f"{name} must be one of {', '.join(choices)}"
    raise invalid_request(message, [issue(name, "invalid_value", message)])


def arg_strs(args: Mapping[str, object], name: str) -> list[str] | None:
    """The argument ``name``, a list of strings."""
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _wrong(name, "a list of strings")
    return [str(v) for v in value]


def arg_ints(args: Mapping[str, object], name: str) -> list[int] | None:
    """The argument ``name``, a list of integers."""
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise _wrong(name, "a list of integers")
    return [int(v) for v in value]


def arg_object(args: Mapping[str, object], name: str) -> JSONObject | None:
    """The argument ``name``, a JSON object (a filter, a scenario, a document the tool reads)."""
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise _wrong(name, "an object")
    return _object(value)


def arg_objects(args: Mapping[str, object], name: str) -> list[JSONObject] | None:
    """The argument ``name``, a list of JSON objects."""
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise _wrong(name, "a list of objects")
    return [_object(v) for v in value]


def arg_list(args: Mapping[str, object], name: str) -> list[JSONValue] | None:
    """The argument ``name``, a list of any JSON values."""
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, list):
        raise _wrong(name, "a list")
    return _list(value)


def _object(value: dict[object, object]) -> JSONObject:
    return cast("JSONObject", value)  # decoded JSON (keys checked): every member is a JSON value


def _list(value: list[object]) -> list[JSONValue]:
    return cast("list[JSONValue]", value)  # decoded JSON: every member is a JSON value
