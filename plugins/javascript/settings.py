"""The plugin's settings (read from the environment; registered without importing the analysis)."""

from __future__ import annotations

import re

from rea.config import SettingSpec

MAX_WORKERS = 8


def _workers(raw: str) -> int:
    if not re.fullmatch(r"0|[1-9][0-9]*", raw) or int(raw) > MAX_WORKERS:
        raise ValueError(raw)
    return int(raw)


# Off by default: on the npm tree one worker takes the analysis from about 4.2 to 2.7 times the parse floor, but the
# peaks of the server and the worker sum to 365 MiB (7.4 times the input) against the server's 249 alone
# (benchmarks/javascript.py): the memory goal is missed by more.
WORKERS = SettingSpec(
    name="REA_JAVASCRIPT_PARSE_WORKERS",
    constraint=f"a decimal integer from 0 to {MAX_WORKERS}",
    parse=_workers,
    description="Worker processes that parse a JavaScript input of 4 MiB or more beside the server's own parsing "
    "(default 0: the server parses alone); each costs about 80 MiB and saves time only on a free processor.",
    default=0,
)
