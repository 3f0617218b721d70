"""The result of inspect_go_binary, defined once: its output schema is generated from these Structs."""

from __future__ import annotations

from rea.plugin import GoModule
from rea.plugin import GoSetting
from rea.plugin import PageOf
from rea.plugin import Record

SCHEMA_VERSION = 1


class DepPage(PageOf[GoModule]):
    """A page of the build list's dependencies (the main module is ``build.main``)."""


class BuildInfo(Record):
    """What ``go version -m`` prints: toolchain, main package path, main module, dependencies, build settings."""

    go_version: str
    path: str = ""
    main: GoModule | None = None
    deps: DepPage
    settings: list[GoSetting] = []


class Function(Record):
    """One function of the table: name, ``[start, end)`` as hex addresses, size in bytes."""

    name: str
    start: str
    end: str
    size: int


class FunctionPage(PageOf[Function]):
    """A page of the functions, in address order, narrowed by ``pattern``; ``total`` counts the matches."""


class FunctionTable(Record):
    """The ``pclntab``: its layout (the Go release that introduced it), word size, instruction quantum, text
    start and file offset, and its functions."""

    layout: str
    pointer_size: int
    quantum: int
    text_start: str
    file_offset: int
    function_count: int
    packages: int
    functions: FunctionPage


class GoBinary(Record):
    """A Go binary's own tables: the build information and the function table (either may be absent)."""

    schema_version: int = SCHEMA_VERSION
    format: str
    architecture: str | None = None
    build: BuildInfo | None = None
    function_table: FunctionTable | None = None
    notes: list[str] = []
