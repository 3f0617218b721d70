"""``rea script FILE.py [TARGET]``: run an analysis script (``run_analysis_script``) from the command line.

Thin on purpose: it opens TARGET when given, then runs the same tool, handler and output as
``rea run-analysis-script``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Protocol

from rea.cli.args import ArgumentParser
from rea.errors import ReaError

if TYPE_CHECKING:
    from rea.context import CallContext
    from rea.session import Session

TOOL = "run_analysis_script"


class ToolCommand(Protocol):
    """The CLI's runner of one tool as a command (rea.cli.main passes its own)."""

    def __call__(
        self, name: str, argv: list[str], prog: str, prepare: Callable[[Session, CallContext], None] | None = None
    ) -> int: ...


def run(argv: list[str], prog: str, run_tool: ToolCommand) -> int:
    """``rea script``: the command runs the script tool through ``run_tool`` (the CLI's one tool runner)."""
    parser = ArgumentParser(
        prog=f"{prog} script",
        description="Run a Python analysis script against TARGET (opened first, when given); inside it "
        "rea.<tool>(**args) calls a read-only tool. See docs/code-mode.md.",
    )
    parser.add_argument("file", metavar="FILE.py", help="the script")
    parser.add_argument("target", metavar="TARGET", nargs="?", help="a binary to open before the script runs")
    parser.add_argument("--provider", help="provider id or 'auto' for TARGET (default: REA_ANALYSIS_PROVIDER)")
    parser.add_argument("--args", metavar="JSON|@FILE", help="a JSON object the script reads as args")
    parser.add_argument("--format", "--output-format", dest="format", choices=["json", "text"], default="text")
    parser.add_argument("--json", dest="format", action="store_const", const="json", help="same as --format json")
    ns = parser.parse_args(argv)
    from rea.cli import tools

    source = tools._read_text("@" + ns.file)
    arguments = tools.parse_json_text(ns.args, "--args") if ns.args is not None else {}
    if not isinstance(arguments, dict):
        raise ReaError(
            "invalid_request",
            "--args must be a JSON object",
            details={"issues": [{"path": "--args", "reason": "invalid_type", "message": "expected object"}]},
        )
    request = {"source": source, "filename": os.path.basename(ns.file) or "<script>", "arguments": arguments}

    def open_target(session: Session, ctx: CallContext) -> None:
        from rea import paths
        from rea.selection import parse_provider_choice

        if ns.provider is not None:
            parse_provider_choice(ns.provider, setting="--provider")
        session.open(paths.resolve(ns.target, "TARGET"), ns.provider, ctx)

    return run_tool(
        TOOL,
        [json.dumps(request), "--output-format", ns.format],
        prog,
        prepare=open_target if ns.target is not None else None,
    )
