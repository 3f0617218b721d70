"""The plugin's settings (read from the environment; registered without importing the analysis)."""

from __future__ import annotations

from rea.config import integer_setting

MAX_WORKERS = 8

# Off by default: on the npm tree one worker takes the analysis from about 3.5 to 2.4 times the parse floor, but the
# peaks of the server and the worker sum to 310 MiB (6.3 times the input) against 189 MiB serial
# (benchmarks/javascript.py): the memory goal would be missed.
WORKERS = integer_setting(
    "REA_JAVASCRIPT_PARSE_WORKERS",
    0,
    MAX_WORKERS,
    0,
    "worker processes",
    "Worker processes that parse a JavaScript input of 4 MiB or more beside the server's own parsing "
    "(default 0: the server parses alone); each costs about 80 MiB and saves time only on a free processor.",
)
