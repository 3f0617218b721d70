"""Entry point of the ``rea`` command (work in progress)."""

import sys


def main(argv: list[str] | None = None) -> int:
    print("rea: work in progress", file=sys.stderr)
    return 1
