"""inspect_go_binary: the build information and function table of a Go binary (rea.operations.golang)."""

from __future__ import annotations

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import OperationResult
from rea.plugin import ProviderIdentity
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import __version__
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import evidence as ev_mod
from rea.plugin import golang
from rea.plugin import identify
from rea.plugin import next_offset
from rea.plugin import read_hashed
from rea_plugins.golang.model import BuildInfo
from rea_plugins.golang.model import DepPage
from rea_plugins.golang.model import Function
from rea_plugins.golang.model import FunctionPage
from rea_plugins.golang.model import FunctionTable
from rea_plugins.golang.model import GoBinary

PROVIDER = ProviderIdentity(id="golang", name="rea Go binary reader (pclntab, buildinfo)", version=__version__)
OPERATION = "inspect_go_binary"
MAX_FILE_BYTES = 1 << 30
FUNCTION_LIMIT = 50
DEP_LIMIT = 100
MAX_PAGE = 5000


def _window(args: Arguments, prefix: str, default: int) -> tuple[int, int]:
    return arg_int(args, f"{prefix}offset", 0), min(arg_int(args, f"{prefix}limit", default), MAX_PAGE)


def read_subject(call: ToolCall) -> tuple[Target, bytes]:
    """The file ``path`` names, or the open binary, read once and checked against its hash."""
    path = arg_str(call.args, "path")
    target = identify(path, call.ctx) if path else call.session.require_target()
    return target, read_hashed(
        target, MAX_FILE_BYTES, field="path", remediation="Retry once the file is stable, or reopen it."
    )


def sections(data: bytes, target: Target) -> list[golang.Section]:
    import lief

    lief.logging.disable()
    binary = lief.parse(data)
    if binary is None:
        raise ReaError(
            "unsupported_target",
            f"{target.name} is not an ELF, PE or Mach-O binary rea can read",
            remediation="Pass a Go program built for Linux, Windows or macOS.",
            details={"path": target.path, "format": target.format},
        )
    return golang.lief_sections(binary)


def _build(info: golang.GoBuildInfo, args: Arguments) -> BuildInfo:
    offset, limit = _window(args, "dep_", DEP_LIMIT)
    deps = info.deps[offset : offset + limit]
    return BuildInfo(
        go_version=info.go_version,
        path=info.path,
        main=info.main,
        deps=DepPage(
            total=len(info.deps),
            offset=offset,
            limit=limit,
            next_offset=next_offset(offset, len(deps), len(info.deps)),
            items=deps,
        ),
        settings=info.settings,
    )


def _package(name: str) -> str:
    slash = name.rfind("/") + 1
    return name[:slash] + name[slash:].split(".", 1)[0]


def _functions(table: golang.GoFunctionTable, args: Arguments) -> FunctionTable:
    pattern = arg_str(args, "pattern")
    matching = [f for f in table.functions if pattern is None or pattern in f.name]
    offset, limit = _window(args, "", FUNCTION_LIMIT)
    shown = matching[offset : offset + limit]
    # A function's package: its import path up to the first "." after the last "/" (example.com/greet.Hello).
    packages = {_package(f.name) for f in table.functions}
    return FunctionTable(
        layout=table.layout,
        pointer_size=table.pointer_size,
        quantum=table.quantum,
        text_start=hex(table.text_start),
        file_offset=table.offset,
        function_count=len(table.functions),
        packages=len(packages),
        functions=FunctionPage(
            total=len(matching),
            offset=offset,
            limit=limit,
            next_offset=next_offset(offset, len(shown), len(matching)),
            items=[Function(name=f.name, start=hex(f.start), end=hex(f.end), size=f.end - f.start) for f in shown],
        ),
    )


def inspect(data: bytes, target: Target, args: Arguments) -> GoBinary:
    found = sections(data, target)
    notes: list[str] = []
    build: BuildInfo | None = None
    table: FunctionTable | None = None
    try:
        info = golang.find_buildinfo(data, found)
        build = None if info is None else _build(info, args)
    except golang.GoFormatError as exc:
        notes.append(f"build information: {exc}")
    try:
        functions = golang.find_pclntab(data, found)
        table = None if functions is None else _functions(functions, args)
    except golang.GoFormatError as exc:
        notes.append(f"function table: {exc}")
    if build is None and table is None and not notes:
        raise ReaError(
            "unsupported_target",
            f"{target.name} has neither Go build information nor a Go function table",
            remediation="It is not a Go binary (or one older than Go 1.2); read it with the native tools.",
            details={"path": target.path, "format": target.format},
        )
    if build is None and not any(n.startswith("build") for n in notes):
        notes.append("No build information (.go.buildinfo): a Go release before 1.13, or the section was removed.")
    return GoBinary(
        format=target.format, architecture=target.architecture, build=build, function_table=table, notes=notes
    )


def handle(call: ToolCall) -> Evidence:
    target, data = read_subject(call)
    call.ctx.progress("inspect_go_binary: reading the Go tables", done=0, total=1)
    result = inspect(data, target, call.args)
    call.ctx.progress("inspect_go_binary: done", done=1, total=1)
    import lief

    profile = ev_mod.make_profile(PROVIDER, {"lief": str(getattr(lief, "__version__", ""))})
    params = {k: v for k, v in sorted(call.args.items()) if k != "path"}
    return call.session.evidence(
        OPERATION,
        params,
        OperationResult(normalized=result, limitations=["Static reading only: nothing was run."]),
        bound=False,
        target=target,
        provider=PROVIDER,
        analysis_profile=profile,
    )
