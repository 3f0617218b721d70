"""The toy provider's worker: ``python -m rea_example_provider.worker``, a routes table and its engine."""

from __future__ import annotations

import sys

from rea.plugin import Arguments, Reporter, arg_str, serve
from rea_example_provider import Parsed, parse


def parse_route(params: Arguments, reporter: Reporter) -> Parsed:
    reporter.progress("parsing")
    return parse(arg_str(params, "path", ""))


if __name__ == "__main__":
    sys.exit(serve({"parse": parse_route}))
