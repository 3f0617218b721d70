"""A prompt, declared as data: a named workflow an MCP client offers its user ("triage this binary")."""

from __future__ import annotations

import string

import msgspec

from rea.errors import invalid_request
from rea.errors import issue


class PromptArgument(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str
    required: bool = True


class PromptDef(msgspec.Struct, frozen=True, kw_only=True):
    """``template`` names arguments as ``{name}``; ``tools`` are the tools the workflow calls."""

    name: str
    title: str
    description: str
    template: str
    arguments: tuple[PromptArgument, ...] = ()
    tools: tuple[str, ...] = ()

    def render(self, values: dict[str, str] | None) -> str:
        """The prompt text; ``invalid_request`` for a missing required or an unknown argument."""
        values = dict(values or {})
        known = {a.name for a in self.arguments}
        problems = [
            issue(name, "unknown_argument", f"{self.name} takes no argument {name!r}")
            for name in sorted(values)
            if name not in known
        ]
        problems += [
            issue(a.name, "missing_argument", f"{a.name} is required")
            for a in self.arguments
            if a.required and not values.get(a.name)
        ]
        if problems:
            raise invalid_request(f"invalid arguments for prompt {self.name}: {problems[0]['message']}", problems)
        fields = {a.name: values.get(a.name, "") for a in self.arguments}
        return string.Formatter().vformat(self.template, (), fields)
