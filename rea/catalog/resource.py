"""An MCP resource, declared as data: a fixed URI (``ResourceDef``) or a URI template (``ResourceTemplateDef``).

A reader gets the connection's session and the template's variables (empty for a fixed URI) and returns the
resource's text; it raises ``ReaError`` for what it cannot read (an unknown id is ``invalid_request``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from rea.session import Session

Reader = Callable[["Session", dict[str, str]], str]

_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ResourceSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What every resource declares besides its address."""

    name: str
    title: str
    description: str
    reader: Reader
    mime_type: str = "application/json"

    @property
    def key(self) -> str:
        raise NotImplementedError

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables ``uri`` binds (empty for a fixed URI), or None when it is not this resource's."""
        raise NotImplementedError


class ResourceDef(ResourceSpec, frozen=True, kw_only=True):
    """A resource at one fixed ``uri`` (listed by ``resources/list``)."""

    uri: str

    @property
    def key(self) -> str:
        return self.uri

    def match(self, uri: str) -> dict[str, str] | None:
        return {} if uri == self.uri else None


class ResourceTemplateDef(ResourceSpec, frozen=True, kw_only=True):
    """Resources addressed by an RFC 6570 level-1 ``uri_template`` such as ``rea://unknown/{unknown_id}``
    (listed by ``resources/templates/list``); a variable matches one non-empty path segment."""

    uri_template: str

    @property
    def key(self) -> str:
        return self.uri_template

    def match(self, uri: str) -> dict[str, str] | None:
        parts = _VARIABLE.split(self.uri_template)
        pattern = "".join(f"(?P<{part}>[^/?#]+)" if i % 2 else re.escape(part) for i, part in enumerate(parts))
        found = re.fullmatch(pattern, uri)
        return None if found is None else found.groupdict()
