"""The toy provider's worker: ``python -m rea_example_provider.worker``, a routes table and its engine."""

from __future__ import annotations

import sys
from typing import Any

from rea.plugin import Reporter, serve
from rea_example_provider import parse


def parse_route(params: dict[str, Any], reporter: Reporter) -> Any:
    reporter.progress("parsing")
    return list(parse(str(params["path"])))


if __name__ == "__main__":
    sys.exit(serve({"parse": parse_route}))
