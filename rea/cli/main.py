"""The ``rea`` command: providers, doctor, serve, catalog, analyze, and one command per tool."""

from __future__ import annotations

import atexit
import itertools
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any
from typing import NoReturn

from rea import __version__
from rea.cli.args import ArgumentParser
from rea.cli.output import emit_error
from rea.cli.output import emit_json
from rea.cli.output import render_text
from rea.collector import collector_on
from rea.collector import pause_at_start
from rea.errors import ReaError

if TYPE_CHECKING:
    from rea.catalog.manifest import ToolEntry
    from rea.catalog.tool import ToolDef
    from rea.context import CallContext
    from rea.registry import Registry
    from rea.session import Session


def _registry() -> Registry:
    from rea.registry import default_registry

    # Tools from the manifest in the analysis cache: a command imports only the plugin whose tool it runs.
    return default_registry(cached=True)


class SignalGuard:
    """SIGINT/SIGTERM cancel the call through the shared signal, from the work through provider cleanup.

    Repeated delivery (package runners forward a signal twice) only re-requests cancellation; the
    guard stays until the session is closed, so a signal never interrupts cleanup half-way.
    """

    def __init__(self, ctx: CallContext) -> None:
        self.ctx = ctx
        self.received: list[int] = []
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> SignalGuard:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *_exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handler(self, signum: int, _frame: Any) -> None:
        self.received.append(signum)
        self.ctx.signal.cancel()

    @staticmethod
    def run(work: Callable[[], Any]) -> Any:
        """Run ``work`` in a thread (so this one can take signals) and return its result or raise its error."""
        # What the thread left: its result, or the error it raised.
        value: list[Any] = []
        error: list[BaseException] = []

        def target() -> None:
            try:
                value.append(work())
            except BaseException as exc:
                error.append(exc)

        thread = threading.Thread(target=target, name="rea-cli-work", daemon=True)
        thread.start()
        while thread.is_alive():
            thread.join(0.1)
        if error:
            raise error[0]
        return value[0] if value else None


def _interrupted(signum: int, fmt: str) -> int:
    err = ReaError(
        "cancelled",
        f"cancelled by signal {signal.Signals(signum).name}",
        remediation="Run the command again when the result is still wanted.",
        details={"signal": signal.Signals(signum).name, "phase": "cli"},
    )
    emit_error(err, fmt)
    return 128 + signum


def _group_members(registry: Registry, name: str) -> list[ToolDef | ToolEntry]:
    """The tool specs of command group ``name`` (``rea corpus triage``: corpus), by name; empty: no such group."""
    specs = registry.tool_info()
    return sorted((t for t in specs.values() if t.cli_group and t.cli_group == name), key=lambda t: t.name)


def _group_help(name: str, members: list[ToolDef | ToolEntry]) -> str:
    lines = [f"usage: rea {name} COMMAND [args]", "", "commands:"]
    for t in members:
        lines.append(f"  {t.cli_command or t.cli_name:24} {t.description.split('. ')[0][:90]}")
    lines += ["", f"rea {name} COMMAND --help shows a command's arguments."]
    return "\n".join(lines)


def _grouped(registry: Registry, name: str, argv: list[str]) -> tuple[ToolDef, str, list[str]] | None:
    """``rea <group> <command> ...``: the tool, its prog name and the rest of argv (None: no such group)."""
    members = _group_members(registry, name)
    if not members:
        return None
    command = argv[0] if argv else ""
    tool = next((t for t in members if (t.cli_command or t.cli_name) == command), None)
    if tool is None:
        names = ", ".join(t.cli_command or t.cli_name for t in members)
        raise ReaError(
            "invalid_request",
            f"rea {name}: {'unknown command ' + repr(command) if command else 'a command is required'}",
            remediation=f"Use one of: {names} (rea {name} COMMAND --help).",
            details={"issues": [{"path": "command", "reason": "invalid_value", "message": f"one of: {names}"}]},
        )
    return registry.tools[tool.name], f"{name} {tool.cli_command or tool.cli_name}", argv[1:]


def _tool_command(
    name: str, argv: list[str], prog: str, prepare: Callable[[Session, CallContext], None] | None = None
) -> int:
    """Run one tool as a command; ``prepare`` runs first in the same session (``rea script`` opens its TARGET)."""
    from rea.cache import default_cache
    from rea.cli import tools as cli_tools
    from rea.context import CallContext
    from rea.context import CancelSignal
    from rea.session import Session

    registry = _registry()
    if argv[:1] in ([], ["-h"], ["--help"]):
        members = _group_members(registry, name)
        if members:
            print(_group_help(name, members))
            return 0 if argv else 2
    grouped = _grouped(registry, name, argv)
    tool: ToolDef | None
    if grouped is not None:
        tool, command_name, argv = grouped
    else:
        spec = next((t for t in registry.tool_info().values() if t.cli_name == name or t.name == name), None)
        tool = registry.tools[spec.name] if spec is not None else None
        command_name = tool.cli_name if tool is not None else name
    if tool is None:
        raise ReaError(
            "invalid_request",
            f"unknown command {name!r}",
            remediation="Run `rea --help` or `rea tools` for the commands.",
            details={"issues": [{"path": "command", "reason": "invalid_value", "message": f"no command {name!r}"}]},
        )
    parser = cli_tools.build_parser(tool, prog, command_name)
    ns = parser.parse_args(argv)
    from rea import logs
    from rea.cli.progress import TerminalProgress

    # A long tool run (an analysis) gets the cyclic collector back after its first second.
    collector_on(TOOL_COLLECTOR_AFTER_S)
    session = Session(registry)
    # Evidence outlives the invocation in the analysis cache, so a later command can name it by evidence_id.
    cache = default_cache()
    if cache.enabled:
        session.ledger.fallback = cache.load_evidence
    # The progress bar gets the same updates an MCP client's progress notifications carry.
    bar = TerminalProgress()
    ctx = CallContext(CancelSignal(), bar.sink if bar.enabled else None)
    result: Any = None
    failure: ReaError | None = None
    logs.LOGGER.info("%s: started", tool.name)
    with SignalGuard(ctx) as guard:
        try:
            with bar:
                if prepare is not None:
                    guard.run(lambda: prepare(session, ctx))
                result = guard.run(lambda: cli_tools.run_tool(session, tool, ns, ctx))
            guard.run(lambda: cache.store_evidence(list(session.ledger)))
            if getattr(ns, "render", None):
                cli_tools.render_picture(result, ns.render)
                print(f"rea: wrote {ns.render}", file=sys.stderr)
        except ReaError as err:
            failure = err
        finally:
            remaining = guard.run(session.close)
    if failure is not None:
        logs.LOGGER.info("%s: failed (%s) after %d ms: %s", tool.name, failure.code, ctx.elapsed_ms(), failure.message)
    else:
        logs.LOGGER.info("%s: completed in %d ms", tool.name, ctx.elapsed_ms())
    if guard.received:
        return _interrupted(guard.received[0], ns.format)
    if remaining:
        # Even a completed call reports what it could not release (owned resources never vanish silently).
        base = failure or ReaError("execution_failure", f"{tool.name} completed", details={"completed": True})
        if result is not None and result.evidence is not None:
            base.details["completed_evidence_id"] = result.evidence.evidence_id
        failure = base.with_cleanup_incomplete(remaining, "the session could not release every owned resource")
    if failure is not None:
        emit_error(failure, ns.format)
        return 1
    from rea.presentation import cli_presentation

    doc = cli_tools.result_document(result, cli_presentation())
    if ns.format == "json":
        emit_json(doc)
    elif getattr(ns, "render", None) and result.evidence is not None:
        # The picture is the answer asked for: its record is named, not printed (--json prints it whole).
        picture = cli_tools.picture_of(result)
        print(f"{tool.name}  {result.evidence.evidence_id}")
        print(
            f"picture: {picture.get('nodes')} of {picture.get('nodes_total')} nodes, {picture.get('edges')} of "
            f"{picture.get('edges_total')} edges" + (f" ({picture['cut']})" if picture.get("cut") else "")
        )
    else:
        print(render_text(doc))
    return 0


def _analyze(argv: list[str], prog: str) -> int:
    parser = ArgumentParser(
        prog=f"{prog} analyze",
        description=(
            "Open a target and print its overview (binary_overview); directories and .asar archives go to "
            "analyze_javascript_application unless --provider is given."
        ),
    )
    parser.add_argument("target", metavar="TARGET", help="a binary, a directory or an .asar archive")
    parser.add_argument("--provider", help="provider id or 'auto' (binaries only; default: REA_ANALYSIS_PROVIDER)")
    parser.add_argument(
        "--integrity-policy",
        choices=["fail", "record-and-continue"],
        help="for applications: what an integrity mismatch does (default: fail)",
    )
    parser.add_argument("--format", "--output-format", dest="format", choices=["json", "text"], default="text")
    parser.add_argument("--json", dest="format", action="store_const", const="json", help="same as --format json")
    ns = parser.parse_args(argv)
    registry = _registry()
    is_app = os.path.isdir(ns.target) or ns.target.endswith(".asar")
    output = ["--output-format", ns.format]
    if is_app and ns.provider is None and "analyze_javascript_application" in registry.tools:
        policy = ["--integrity-policy", ns.integrity_policy] if ns.integrity_policy else []
        return _tool_command("analyze-javascript-application", [ns.target, *policy, *output], prog)
    if ns.integrity_policy is not None:
        raise ReaError(
            "invalid_request",
            "--integrity-policy applies to directories and .asar applications",
            details={
                "issues": [
                    {"path": "--integrity-policy", "reason": "invalid_value", "message": "only for application targets"}
                ]
            },
        )
    if "binary_overview" not in registry.tools:
        raise ReaError(
            "capability_unavailable",
            "no plugin provides binary_overview",
            remediation="Reinstall rea; `rea providers list` shows what is loaded.",
        )
    args = [ns.target, *output] + (["--provider", ns.provider] if ns.provider is not None else [])
    return _tool_command("binary-overview", args, prog)


def _providers(argv: list[str], prog: str) -> int:
    parser = ArgumentParser(prog=f"{prog} providers", description="List plugins and providers.")
    parser.add_argument("action", nargs="?", default="list", choices=["list"])
    parser.add_argument("--json", action="store_true", help="stable machine-readable output")
    ns = parser.parse_args(argv)
    from rea.cli import providers

    return providers.run(_registry(), ns.json)


def _plugins(argv: list[str], prog: str) -> int:
    parser = ArgumentParser(prog=f"{prog} plugins", description="List loaded plugins and their hooks.")
    parser.add_argument("--hook", help="only plugins implementing this hook (e.g. rea_register_tools)")
    parser.add_argument("--json", action="store_true")
    ns = parser.parse_args(argv)
    from rea.cli import providers

    report = providers.providers_report(_registry())
    plugins = [p for p in report.plugins if ns.hook is None or ns.hook in p.hooks]
    if ns.json:
        emit_json({"plugins": plugins, "broken_plugins": report.broken_plugins})
        return 0
    from rea.cli.output import table

    print(
        table(
            [[p.name, p.version or "-", p.module, ", ".join(p.hooks)] for p in plugins],
            ["name", "version", "module", "hooks"],
        )
    )
    for b in report.broken_plugins:
        print(f"broken: {b.name} ({b.stage}): {b.error}")
    return 0


def _doctor(argv: list[str], prog: str) -> int:
    parser = ArgumentParser(prog=f"{prog} doctor", description="Check the host, providers and MCP clients.")
    parser.add_argument("--json", action="store_true")
    ns = parser.parse_args(argv)
    from rea import doctor

    report = doctor.doctor_report(_registry())
    if ns.json:
        emit_json(report)
    else:
        print(doctor.format_doctor(report))
    return int(doctor.exit_status(report))


def _cache(argv: list[str], prog: str) -> int:
    parser = ArgumentParser(
        prog=f"{prog} cache",
        description=("Show or empty the analysis cache (providers' whole-program analyses and the CLI's Evidence)."),
    )
    parser.add_argument("action", choices=["info", "clear"], help="info: where, how large, what kinds; clear: empty it")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    ns = parser.parse_args(argv)
    import msgspec

    from rea.cache import default_cache

    cache = default_cache()
    if ns.action == "clear":
        outcome = cache.clear()
        if ns.json:
            emit_json(msgspec.to_builtins(outcome))
        else:
            print(f"removed {outcome.removed_entries} entries ({outcome.removed_bytes} bytes) from {outcome.directory}")
        return 0
    info = cache.info()
    if ns.json:
        emit_json(msgspec.to_builtins(info))
        return 0
    from rea.cli.output import table

    state = "on" if info.enabled else "off (REA_CACHE_MAX_BYTES=0)"
    print(
        f"directory: {info.directory}\nstate: {state}\nsize: {info.bytes} of {info.max_bytes} bytes "
        f"in {info.entries} entries" + (f" ({info.unreadable} unreadable)" if info.unreadable else "")
    )
    if info.key_problem:
        print(f"authentication: no entry is read: {info.key_problem}")
    if info.kinds:
        print(table([[k.kind, str(k.entries), str(k.bytes)] for k in info.kinds], ["kind", "entries", "bytes"]))
    return 0


def _serve(argv: list[str], prog: str) -> int:
    parser = ArgumentParser(
        prog=f"{prog} serve", description="Run the MCP server over stdio, or over streamable HTTP with --http."
    )
    parser.add_argument(
        "--toolsets",
        help="toolsets to advertise: default (all but those a connection enables on demand), all, or a "
        "comma-separated list (default: REA_MCP_TOOLSETS); session is always advertised",
    )
    parser.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve MCP over streamable HTTP at http://HOST:PORT/mcp (host default 127.0.0.1), one session per "
        "client; a bearer token is required (REA_MCP_TOKEN, or one generated and printed once)",
    )
    parser.add_argument("--no-auth", action="store_true", help="with --http on a loopback address: no token")
    parser.add_argument(
        "--allow-host", action="append", default=[], metavar="NAME[:PORT]", help="another accepted Host header"
    )
    parser.add_argument(
        "--allow-origin", action="append", default=[], metavar="ORIGIN", help="an accepted Origin header"
    )
    parser.add_argument("--cors", action="store_true", default=None, help="answer CORS for the allowed origins")
    args = parser.parse_args(argv)
    if args.http is None and (args.no_auth or args.allow_host or args.allow_origin or args.cors):
        parser.error("--no-auth, --allow-host, --allow-origin and --cors go with --http")
    registry = _registry()
    from rea import warmup

    # Before the SDK's imports: a provider's worker loads its engine on another core while this process starts.
    warmup.prestart(registry)
    env = dict(os.environ) if args.toolsets is None else {**os.environ, "REA_MCP_TOOLSETS": args.toolsets}
    settings = registry.server_settings(env)
    import anyio

    if args.http is not None:
        from rea.mcp.http import http_config
        from rea.mcp.http import serve_http
        from rea.mcp.server import max_request_bytes

        config = http_config(
            args.http,
            env,
            max_request_bytes=max_request_bytes(settings),
            no_auth=args.no_auth,
            allow_hosts=tuple(args.allow_host),
            allow_origins=tuple(args.allow_origin),
            cors=args.cors,
        )
        anyio.run(serve_http, registry, settings, config)
        _end_process(0)

    from rea.mcp.server import serve_stdio

    anyio.run(serve_stdio, registry, settings)
    # Stdin closed or a signal came, and the session is closed (within its bound). A call abandoned on a
    # blocked read may still hold a thread, so exit without joining threads, after the exit handlers (which
    # terminate any owned process a stuck close left).
    _end_process(0)


def _catalog(argv: list[str], prog: str) -> int:
    parser = ArgumentParser(prog=f"{prog} catalog", description="Write the machine-readable tool catalog.")
    parser.add_argument("--output", help="file to write (default: stdout)")
    ns = parser.parse_args(argv)
    from rea.catalog.document import build_catalog

    doc = build_catalog(_registry())
    if ns.output:
        import msgspec

        os.makedirs(os.path.dirname(os.path.abspath(ns.output)), exist_ok=True)
        tmp = ns.output + ".tmp"
        with open(tmp, "wb") as fh:
            fh.write(msgspec.json.format(msgspec.json.encode(doc), indent=2) + b"\n")
        os.replace(tmp, ns.output)
        print(f"wrote {ns.output} ({doc['tool_count']} tools, {doc['catalog_digest']})", file=sys.stderr)
    else:
        emit_json(doc)
    return 0


def _tools(argv: list[str], prog: str) -> int:
    ArgumentParser(prog=f"{prog} tools", description="List every tool command with its first sentence.").parse_args(
        argv
    )
    registry = _registry()
    for t in sorted(registry.tool_info().values(), key=lambda t: t.name):
        name = f"{t.cli_group} {t.cli_command or t.cli_name}" if t.cli_group else t.cli_name
        print(f"{name:40} {t.description.split('. ')[0][:100]}")
    return 0


def _script(argv: list[str], prog: str) -> int:
    from rea.cli import script

    return script.run(argv, prog, _tool_command)


def checkout_commit(root: str) -> str | None:
    """The commit a git checkout at ``root`` has out (12 hex digits), or None outside a checkout.

    Read from ``.git/HEAD`` and the ref it names (loose, then packed-refs): two small reads, no ``git`` process,
    so ``rea --version`` stays fast. A worktree's ``.git`` file points at its git directory, whose ``commondir``
    holds the refs. An installed wheel has no ``.git`` beside the package, so it reports its version alone."""
    dot_git = os.path.join(root, ".git")
    try:
        if os.path.isfile(dot_git):
            with open(dot_git, encoding="utf-8") as fh:
                pointer = fh.read(4096).strip()
            if not pointer.startswith("gitdir:"):
                return None
            dot_git = os.path.join(root, pointer.removeprefix("gitdir:").strip())
        with open(os.path.join(dot_git, "HEAD"), encoding="utf-8") as fh:
            head = fh.read(4096).strip()
        if not head.startswith("ref:"):
            return head[:12] if _is_sha(head) else None
        ref = head.removeprefix("ref:").strip()
        common = dot_git
        if os.path.isfile(os.path.join(dot_git, "commondir")):
            with open(os.path.join(dot_git, "commondir"), encoding="utf-8") as fh:
                common = os.path.join(dot_git, fh.read(4096).strip())
        for base in dict.fromkeys((dot_git, common)):
            try:
                with open(os.path.join(base, ref), encoding="utf-8") as fh:
                    sha = fh.read(4096).strip()
                return sha[:12] if _is_sha(sha) else None
            except FileNotFoundError:
                continue
        with open(os.path.join(common, "packed-refs"), encoding="utf-8") as fh:
            for line in fh:
                sha, _, name = line.strip().partition(" ")
                if name == ref and _is_sha(sha):
                    return sha[:12]
    except (OSError, UnicodeDecodeError):
        return None
    return None


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def _completion(argv: list[str], prog: str) -> int:
    from rea.cli import completion

    return completion.run(argv, prog, _builtin_handlers())


def _setup(argv: list[str], prog: str) -> int:
    from rea.cli import setup

    return setup.run(argv, prog)


def _version() -> str:
    # From a checkout (an editable install) the version alone does not say which code runs: the commit does.
    # This file is rea/cli/main.py: the checkout's root is three levels up.
    commit = checkout_commit(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    lines = [f"rea {__version__}" + (f" (git {commit})" if commit else "")]
    try:
        from rea.registry import installed_plugins

        # From the entry points alone: printing the version imports no plugin (`rea plugins` loads them).
        lines.append("installed plugins:")
        for name, module, distribution, version in sorted(installed_plugins()):
            lines.append(f"  {name}-{version or '?'} ({distribution or '-'}: {module})")
    except Exception as exc:  # the version must print even when the metadata cannot be read
        lines.append(f"plugins could not be listed: {exc}")
    return "\n".join(lines)


USAGE = """usage: rea [-v|-vv] [--log-file PATH] <command> [args]

commands:
  analyze TARGET            open a target and print its overview (the main job)
  providers list [--json]   plugins and providers, with availability
  plugins [--hook H] [--json]  loaded plugins, their versions and hooks
  doctor [--json]           host checks, provider readiness, MCP client registrations
  setup [--write]           register rea with the MCP clients found here (dry run unless --write)
  cache info|clear [--json] the analysis cache: where, how large, what kinds; or empty it
  serve                     run the MCP server over stdio
  catalog [--output PATH]   write the machine-readable tool catalog
  tools                     list every tool command
  completion bash|zsh       print a shell completion script (e.g. rea completion bash > /etc/bash_completion.d/rea)
  script FILE.py [TARGET]   run an analysis script against TARGET (docs/code-mode.md)
  <group> <command> ...     a tool of a command group, e.g. `rea corpus triage DIR --index corpus.db`
  <tool-command> ...        run one tool, e.g. `rea list-procedures /bin/ls --limit 5`
  --version                 version and registered plugins

options (before the command):
  -v, -vv                   log info (-v) or debug (-vv) to stderr; default: warnings and errors
  --log-file PATH           write the log to PATH instead (appended); `rea -v --log-file rea.log serve`

environment: NO_COLOR (no colours), REA_PROGRESS=auto|always|never (the progress bar on stderr)
"""


# A tool command's first second: imports (the tool's plugin, its engine) and the answer of a short call.
TOOL_COLLECTOR_AFTER_S = 1.0


def main(argv: list[str] | None = None) -> int:
    if argv is not None:
        return _main(argv)
    return _exit_without_teardown(_main(None))


def _exit_without_teardown(code: int) -> int:
    """End the ``rea`` command as the interpreter would, without tearing its modules down one by one.

    Finalizing the hundreds of modules a command imported costs a short command about a fifth of its time and
    does nothing a process's end does not. A non-daemon thread still running gets the normal shutdown (which
    waits for it)."""
    if any(t is not threading.main_thread() and not t.daemon for t in threading.enumerate()):
        return code
    _end_process(code)


def _end_process(code: int) -> NoReturn:
    """Run the exit handlers, flush the standard streams, and end the process: no thread is joined, no module
    torn down. A reader that left (a broken pipe) makes the status 1, as Python's own exit does."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            code = code or 1
        except (OSError, ValueError):  # a closed or failing stream: nothing is left to report it on
            pass
    os._exit(code)


def _main(argv: list[str] | None) -> int:
    if argv is None:
        # The ``rea`` command itself (not a caller passing argv): start-up creates tens of thousands of objects
        # that live as long as the process, and collecting them repeatedly costs more than the rest of a short
        # command. Commands that run a tool or a server turn the collector back on before their own work
        # (collector_on); the others are bounded and end with the process.
        pause_at_start()
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = "rea"
    try:
        argv = _global_options(argv)
    except ReaError as err:
        emit_error(err, "text")
        return 1
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        print(_version())
        return 0
    command, rest = argv[0], argv[1:]
    fmt = (
        "json"
        if "--json" in rest
        or any(a in ("--format", "--output-format") and b == "json" for a, b in itertools.pairwise(rest))
        else "text"
    )
    handlers = _builtin_handlers()
    try:
        if command == "tool" and rest:
            return _tool_command(rest[0], rest[1:], prog)
        handler = handlers.get(command)
        if handler is not None:
            return handler(rest, prog)
        return _tool_command(command, rest, prog)
    except ReaError as err:
        emit_error(err, fmt)
        return 1
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
    except BrokenPipeError:
        return 1


def _global_options(argv: list[str]) -> list[str]:
    """Take ``-v``/``-vv``/``--verbose`` and ``--log-file PATH`` from before the command; set the log up."""
    verbosity = 0
    log_file: str | None = None
    while argv:
        head = argv[0]
        if head in ("-v", "--verbose") or (head.startswith("-v") and set(head[1:]) == {"v"}):
            verbosity += 1 if head == "--verbose" else len(head) - 1
            argv = argv[1:]
        elif head == "--log-file" or head.startswith("--log-file="):
            if head == "--log-file":
                if len(argv) < 2:
                    raise ReaError(
                        "invalid_request",
                        "rea: --log-file needs a path",
                        details={"issues": [{"path": "--log-file", "reason": "missing_argument", "message": "a path"}]},
                    )
                log_file, argv = argv[1], argv[2:]
            else:
                log_file, argv = head.split("=", 1)[1], argv[1:]
        else:
            break
    if verbosity or log_file:
        from rea import logs

        try:
            logs.configure(verbosity, log_file)
        except OSError as exc:
            raise ReaError(
                "invalid_request",
                f"rea: cannot write the log file {log_file}: {exc.strerror}",
                details={"issues": [{"path": "--log-file", "reason": "invalid_value", "message": "not writable"}]},
            ) from None
    return argv


def _builtin_handlers() -> dict[str, Callable[[list[str], str], int]]:
    return {
        "providers": _providers,
        "plugins": _plugins,
        "doctor": _doctor,
        "serve": _serve,
        "catalog": _catalog,
        "analyze": _analyze,
        "tools": _tools,
        "cache": _cache,
        "script": _script,
        "setup": _setup,
        "completion": _completion,
    }


if __name__ == "__main__":
    sys.exit(main())
