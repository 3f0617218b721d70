"""The record vocabulary: one Struct base, one way to page a list, and the type of JSON rea does not shape.

- ``Record``: the base of a result shape (msgspec Struct: frozen, keyword-only, defaults omitted from the wire).
  A shape that decoding holds to its fields derives with ``forbid_unknown_fields=True``, one whose defaults are
  part of its answer with ``omit_defaults=False``. A subclass inherits all three: ``class Slice(Record):`` is
  frozen and keyword-only (msgspec keeps ``kw_only`` per class, so ``Record``'s metaclass supplies it; its
  ``dataclass_transform`` tells the type checker). The native answers (``rea.operations.shapes``'
  ``Shape`` and ``Page``, whose four paging fields are ``Paged``'s) stay apart: they are not frozen, since a
  provider's result is added to in place, and a non-frozen class cannot derive from a frozen one.
- ``Paged``: the paging fields of a page whose list has its own name (``procedures``, ``rows``, ...: REA's result
  names are kept): ``offset``, ``limit``, ``total``, and ``next_offset``, null on the last page.
- ``PageOf[T]``: a page whose list is ``items`` (``methods: PageOf[MethodRecord]``). It is not called ``Page``
  because the plugin API's ``Page`` is the native answers' paged base (a ``Paged`` that is not frozen).
- ``ToolStep``: a tool call that continues from an answer (its name and arguments).
- ``JSONValue``: any JSON value: a browser's or an engine's JSON, a user's document. A field of this type says in
  a comment why it is not a Struct. ``JSONObject`` is such a JSON object (``dict[str, JSONValue]``), e.g. a JSON
  Schema fragment of a tool's input schema (JSON Schema's vocabulary, not a rea record). A ``JSONValue``'s
  containers are read-only (``Sequence``, ``Mapping``), so a ``list[str]`` or a ``dict[str, int]`` is one without
  a copy; a reader narrows with ``isinstance(value, dict)`` or ``list`` before it indexes or changes one.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any
from typing import Generic
from typing import TypeVar
from typing import dataclass_transform

import msgspec

T = TypeVar("T")

if TYPE_CHECKING:
    # Recursive for the type checker; msgspec cannot analyse a recursive alias (it recurses without end), so at
    # run time it is Any, which msgspec decodes as any JSON value and describes as the empty schema.
    JSONValue = str | int | float | bool | None | Sequence["JSONValue"] | Mapping[str, "JSONValue"]
else:
    JSONValue = Any

# A JSON object rea does not shape: a JSON Schema fragment, a foreign document's object.
JSONObject = dict[str, JSONValue]


class _RecordMeta(msgspec.StructMeta):
    """Makes every class derived from ``Record`` keyword-only unless it says otherwise: msgspec applies ``kw_only``
    to the fields a class itself declares, so without this each subclass would have to repeat it."""

    def __new__(
        mcls, name: str, bases: tuple[type, ...], namespace: dict[str, object], /, **config: Any
    ) -> _RecordMeta:
        config.setdefault("kw_only", True)
        return super().__new__(mcls, name, bases, namespace, **config)


@dataclass_transform(field_specifiers=(msgspec.field,), kw_only_default=True, frozen_default=True)
class Record(msgspec.Struct, metaclass=_RecordMeta, frozen=True, omit_defaults=True):
    """A result shape (or a part of one)."""


class Paged(Record):
    """The paging fields of a bounded list: ``total`` items exist, this page starts at ``offset`` and holds at most
    ``limit``; ``next_offset`` is where the next page starts, null on the last page."""

    offset: int
    limit: int
    total: int
    next_offset: int | None


class PageOf(Paged, Generic[T]):
    """One page of a list whose items are ``T``."""

    items: list[T]


class ToolStep(Record):
    """A tool call that continues from an answer (``next_steps``, a bounded listing's ``page_with``)."""

    tool: str
    # The named tool's arguments: JSON that tool's input schema shapes, not this record's.
    arguments: JSONObject


def next_offset(offset: int, shown: int, total: int) -> int | None:
    """Where the page after one of ``shown`` items from ``offset`` starts, or None when it was the last."""
    end = offset + shown
    return end if end < total else None


def shown_page(shown: Sequence[T], *, offset: int, limit: int, total: int) -> PageOf[T]:
    """The ``PageOf`` page of ``shown``, the items already chosen from ``offset`` (at most ``limit``) of ``total``."""
    return PageOf(
        offset=offset, limit=limit, total=total, next_offset=next_offset(offset, len(shown), total), items=list(shown)
    )


def page_of(items: Sequence[T], offset: int, limit: int) -> PageOf[T]:
    """The page of ``items`` (the whole list) that starts at ``offset`` and holds at most ``limit``."""
    offset, limit = max(offset, 0), max(limit, 0)
    shown = list(items[offset : offset + limit])
    return PageOf(
        offset=offset,
        limit=limit,
        total=len(items),
        next_offset=next_offset(offset, len(shown), len(items)),
        items=shown,
    )
