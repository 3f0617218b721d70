"""README's counts of tools and toolsets, from the catalog: check them (the test) or write them (``--write``).

    python scripts/readme_counts.py           # print what README states and what the catalog has; exit 1 on a mismatch
    python scripts/readme_counts.py --write   # rewrite README's counts from the catalog

Every "N tools" README states is one of the statements below (tests/test_readme.py fails on an unknown one, so a
new count cannot go unchecked): the whole catalog, the default tools/list, the read-only tools, and the toolsets a
connection enables on demand.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


class Counts(NamedTuple):
    total: int  # every registered tool (REA_MCP_TOOLSETS=all lists them all)
    default: int  # the default tools/list
    read_only: int  # tools advertised with readOnlyHint
    on_demand: tuple[str, ...]  # toolsets outside the default list


# (pattern, which count each group is): group values are Counts field names.
STATEMENTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"\((\d+) tools, each an MCP tool and a CLI command\)", ("total",)),
    (r"`tools/list` shows (\d+) tools by default", ("default",)),
    (r"lists all (\d+) tools from the start", ("total",)),
    (r"Read-only tools \((\d+) of (\d+)\)", ("read_only", "total")),
    (r"for (\d+) tools, down from", ("default",)),
    (r"every toolset: (\d+) tools", ("total",)),
)
# "N tools" phrases that are not rea's own counts (a host's limit).
NOT_COUNTS = (r"about \d+\)",)
ON_DEMAND = re.compile(r"every toolset but ((?:`[a-z-]+`(?:\s\([^)]*\))?(?:,\s+|\s+and\s+)?)+)")


def catalog_counts() -> Counts:
    """The counts of this installation's catalog (the same registry `rea serve` builds), without REA_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    from rea.mcp.server import ReaServer
    from rea.registry import ON_DEMAND_TOOLSETS
    from rea.registry import default_registry

    registry = default_registry()
    default = ReaServer(registry, registry.server_settings(env)).tools
    everything = ReaServer(registry, registry.server_settings({**env, "REA_MCP_TOOLSETS": "all"})).tools
    read_only = sum(1 for t in everything if t.annotations is not None and t.annotations.read_only_hint)
    on_demand = tuple(t for t in ON_DEMAND_TOOLSETS if t in registry.toolsets())
    return Counts(len(registry.tools), len(default), read_only, on_demand)


def stated(text: str) -> list[tuple[str, str, int]]:
    """(statement, Counts field, number) for every count README states."""
    out: list[tuple[str, str, int]] = []
    for pattern, fields in STATEMENTS:
        for match in re.finditer(pattern, text):
            out.extend((match.group(0), field, int(match.group(i + 1))) for i, field in enumerate(fields))
    return out


def unknown_counts(text: str) -> list[str]:
    """Phrases "N tools" that no statement covers (so nothing checks them)."""
    covered = [m.span() for pattern, _ in STATEMENTS for m in re.finditer(pattern, text)]
    covered += [m.span() for pattern in NOT_COUNTS for m in re.finditer(pattern, text)]
    found = []
    for m in re.finditer(r"\b\d+ (?:tools|toolsets)\b", text):
        if not any(a <= m.start() and m.end() <= b for a, b in covered):
            found.append(text[max(0, m.start() - 30) : m.end() + 10])
    return found


def stated_on_demand(text: str) -> list[tuple[str, ...]]:
    return [tuple(re.findall(r"`([a-z-]+)`", m.group(1))) for m in ON_DEMAND.finditer(text)]


def mismatches(text: str, counts: Counts) -> list[str]:
    problems = [
        f"README states {number} in {phrase!r}; the catalog has {getattr(counts, field)} ({field})"
        for phrase, field, number in stated(text)
        if getattr(counts, field) != number
    ]
    for names in stated_on_demand(text):
        if set(names) != set(counts.on_demand):
            problems.append(f"README's on-demand toolsets {sorted(names)}; the catalog's {sorted(counts.on_demand)}")
    problems += [f"a count no statement checks: {p!r}" for p in unknown_counts(text)]
    return problems


def rewrite(text: str, counts: Counts) -> str:
    for pattern, fields in STATEMENTS:

        def one(match: re.Match[str], fields: tuple[str, ...] = fields) -> str:
            out = match.group(0)
            # Replace the groups from the last, so earlier spans stay valid.
            for i in reversed(range(len(fields))):
                start, end = match.span(i + 1)
                start -= match.start()
                end -= match.start()
                out = out[:start] + str(getattr(counts, fields[i])) + out[end:]
            return out

        text = re.sub(pattern, one, text)

    def toolsets(match: re.Match[str]) -> str:
        names = [f"`{n}`" + (" (the cursor tools)" if n == "navigation" else "") for n in counts.on_demand]
        return "every toolset but " + (", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0])

    return ON_DEMAND.sub(toolsets, text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite README.md's counts from the catalog")
    ns = parser.parse_args()
    counts = catalog_counts()
    text = README.read_text()
    print(
        f"catalog: {counts.total} tools, {counts.default} by default, {counts.read_only} read-only; on demand: "
        f"{', '.join(counts.on_demand)}"
    )
    if ns.write:
        README.write_text(rewrite(text, counts))
        text = README.read_text()
    problems = mismatches(text, counts)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
