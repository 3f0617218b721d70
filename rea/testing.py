"""Test helpers for rea and its plugins (a pytest11 plugin): registries, sessions, tool calls."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import msgspec
import pluggy
import pytest

from rea import registry as registry_mod
from rea.arguments import Arguments
from rea.catalog.invoke import ToolResult
from rea.catalog.invoke import invoke
from rea.context import CallContext
from rea.errors import ReaError
from rea.registry import Registry
from rea.session import Session


def call_tool(session: Session, name: str, args: Arguments | None = None, ctx: CallContext | None = None) -> ToolResult:
    """Invoke a registered tool by name, as the MCP server and CLI do."""
    tool = session.registry.tools.get(name)
    if tool is None:
        raise ReaError("invalid_request", f"unknown tool {name}")
    out = invoke(session, tool, args or {}, ctx or CallContext())
    if tool.result_type is not None and out.evidence is not None:
        # Every call a test makes checks the result against the shape (one of the shapes) the tool advertises.
        types = tool.result_type if isinstance(tool.result_type, tuple) else (tool.result_type,)
        problems = []
        # A Struct result is checked as the JSON it encodes to, like one a client decodes.
        result = msgspec.to_builtins(out.evidence.normalized_result)
        for kind in types:
            try:
                msgspec.convert(result, type=kind, strict=True)
                break
            except msgspec.ValidationError as exc:
                problems.append(f"not its {kind.__name__}: {exc}")
        else:
            raise AssertionError(f"{name} returned a result that is " + "; ".join(problems))
    return out


def result_of(session: Session, name: str, args: Arguments | None = None) -> Any:
    """The normalized result (Evidence tools) or structured object (session tools) of a call."""
    out = call_tool(session, name, args)
    return msgspec.to_builtins(out.evidence.normalized_result) if out.evidence is not None else out.structured


@contextlib.contextmanager
def registered(pm: pluggy.PluginManager, plugin: object, name: str) -> Iterator[object]:
    """Register ``plugin`` for the duration of the block; always unregisters."""
    pm.register(plugin, name=name)
    try:
        yield plugin
    finally:
        pm.unregister(name=name)


@pytest.fixture
def rea_pm() -> pluggy.PluginManager:
    """A fresh plugin manager with rea's hook specs and no plugins."""
    return registry_mod.make_plugin_manager()


@pytest.fixture(scope="session")
def rea_registry() -> Registry:
    """The registry of every installed plugin (loaded once per test session)."""
    return registry_mod.load()


@contextlib.contextmanager
def closing_session(registry: Registry) -> Iterator[Session]:
    """A session over ``registry``, closed when the block ends (before any check a later fixture makes)."""
    session = Session(registry)
    try:
        yield session
    finally:
        session.close()


@pytest.fixture
def rea_session(rea_registry: Registry) -> Iterator[Session]:
    """A fresh session over the installed plugins, closed afterwards."""
    with closing_session(rea_registry) as session:
        yield session
