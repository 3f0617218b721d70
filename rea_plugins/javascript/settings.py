"""The plugin's settings (read from the environment; registered without importing the analysis)."""

from __future__ import annotations

import os

from rea.plugin import SettingSpec
from rea.plugin import integer_setting

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


def _absolute_path(raw: str) -> str:
    if not os.path.isabs(raw):
        raise ValueError(raw)
    return raw


WAKARU_PATH = SettingSpec(
    name="REA_WAKARU_PATH",
    constraint="an absolute path to the wakaru executable (npm @wakaru/cli)",
    parse=_absolute_path,
    description="The unbundler recover_javascript_sources runs (default: wakaru on PATH).",
)
WAKARU_MEMORY_MB = integer_setting(
    "REA_WAKARU_MEMORY_LIMIT_MB",
    256,
    1_048_576,
    4096,
    "MiB",
    "Address-space bound of the unbundler recover_javascript_sources runs.",
)
