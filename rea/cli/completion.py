"""``rea completion bash|zsh|tcsh``: a shell completion script generated (by shtab) from the real parsers.

Every command's parser is the one the command itself builds: built-in commands are run in collecting mode
(``rea.cli.args.collecting``: the parser hands itself over instead of parsing), tool commands come from the
same ``build_parser`` that runs them. So a new flag or tool completes without an edit here.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

from rea.cli.args import ArgumentParser
from rea.cli.args import Collected
from rea.cli.args import collecting

SHELLS = ("bash", "zsh", "tcsh")
# shtab's file completion (shtab.FILE), spelled out so building the parsers needs no import of it.
FILE = {"bash": "_shtab_compgen_files", "zsh": "_files", "tcsh": "f"}
# Arguments that name a file or folder on this machine.
PATH_DESTS = frozenset({"target", "file", "output", "path", "paths", "input_path", "index", "render", "subject"})

Handler = Callable[[list[str], str], int]


def builtin_parser(name: str, handler: Handler, prog: str = "rea") -> argparse.ArgumentParser:
    """The parser built-in command ``name`` builds, without running it."""
    with collecting():
        try:
            handler([], prog)
        except Collected as got:
            return got.parser
    raise RuntimeError(f"rea {name} parsed no arguments")  # every built-in command parses its argv first


def tool_parsers(registry: Any, prog: str = "rea") -> Iterator[tuple[str | None, str, argparse.ArgumentParser]]:
    """(group or None, command, parser) of every tool command, as ``rea <tool>`` and ``rea <group> <cmd>`` run."""
    from rea.cli.tools import build_parser

    for spec in sorted(registry.tool_info().values(), key=lambda t: t.name):
        tool = registry.tools[spec.name]
        if spec.cli_group:
            command = spec.cli_command or spec.cli_name
            yield spec.cli_group, command, build_parser(tool, prog, f"{spec.cli_group} {command}")
        else:
            yield None, spec.cli_name, build_parser(tool, prog, spec.cli_name)


def _attach(sub: Any, name: str, parser: argparse.ArgumentParser, help_text: str) -> None:
    sub.add_parser(name, help=help_text)
    sub.choices[name] = parser  # the command's own parser, not a copy
    for action in parser._actions:
        if action.dest in PATH_DESTS or (action.dest.startswith("opt_") and action.dest[4:] in PATH_DESTS):
            action.complete = FILE  # type: ignore[attr-defined]


def command_tree(registry: Any, handlers: dict[str, Handler], prog: str = "rea") -> argparse.ArgumentParser:
    """One parser for the whole ``rea`` command: global options, built-ins, tool commands and groups."""
    root = argparse.ArgumentParser(prog=prog, description="Reverse engineering for coding agents.")
    root.add_argument("-v", "--verbose", action="count", help="log info (-v) or debug (-vv)")
    log = root.add_argument("--log-file", help="write the log to this file")
    log.complete = FILE  # type: ignore[attr-defined]
    root.add_argument("-V", "--version", action="store_true", help="version and registered plugins")
    sub = root.add_subparsers(dest="command", metavar="COMMAND")
    for name, handler in sorted(handlers.items()):
        parser = builtin_parser(name, handler, prog)
        _attach(sub, name, parser, (parser.description or "").split(". ")[0])
    groups: dict[str, argparse._SubParsersAction[ArgumentParser]] = {}
    for group, command, parser in tool_parsers(registry, prog):
        first = (parser.description or "").split(". ")[0][:100]
        if group is None:
            _attach(sub, command, parser, first)
            continue
        if group not in groups:
            holder = ArgumentParser(prog=f"{prog} {group}", description=f"The {group} commands.")
            groups[group] = holder.add_subparsers(dest="group_command", metavar="COMMAND")
            _attach(sub, group, holder, f"the {group} commands")
        _attach(groups[group], command, parser, first)
    return root


def run(argv: list[str], prog: str, handlers: dict[str, Handler]) -> int:
    parser = ArgumentParser(
        prog=f"{prog} completion",
        description="Print a shell completion script for rea, generated from its argument parsers. Install: "
        "rea completion bash > ~/.local/share/bash-completion/completions/rea; for zsh, write it as _rea in a "
        "folder of your fpath.",
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    ns = parser.parse_args(argv)
    import shtab

    from rea.registry import default_registry

    # Every tool's parser is built here, so every plugin's tools are read (a second or two, once per install).
    tree = command_tree(default_registry(cached=True), handlers, prog)
    print(shtab.complete(tree, shell=ns.shell))
    return 0
