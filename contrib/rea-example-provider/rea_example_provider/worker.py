"""The toy provider's worker: ``python -m rea_example_provider.worker``, a routes table and its engine."""

from __future__ import annotations

import sys

from rea.plugin import Arguments
from rea.plugin import Reporter
from rea.plugin import arg_str
from rea.plugin import serve
from rea_example_provider import Parsed
from rea_example_provider import parse


def parse_route(params: Arguments, reporter: Reporter) -> Parsed:
    reporter.progress("parsing")
    return parse(arg_str(params, "path", ""))


if __name__ == "__main__":
    sys.exit(serve({"parse": parse_route}))
