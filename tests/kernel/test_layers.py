"""The house's import rules, read from the code (docs/architecture.md draws them): the kernel's layers only
import downwards, no import circle at run time, and a plugin imports the kernel only through rea.plugin."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# From the top floor down; a module belongs to the layer of its longest matching prefix.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("front doors", ("rea.cli", "rea.mcp", "rea.__main__", "rea.doctor", "rea.testing")),
    ("plugin API", ("rea.plugin",)),
    ("catalog", ("rea.catalog",)),
    (
        "services",
        (
            "rea.catalog.manifest",
            "rea.presentation",
            "rea.views",
            "rea.bundle",
            "rea.registry",
            "rea.hookspecs",
            "rea.session",
            "rea.selection",
            "rea.ledger",
            "rea.cache",
            "rea.process",
            "rea.annotations",
            "rea.typelib",
            "rea.unknowns",
            "rea.budget",
            "rea.dependencies",
            "rea.distributions",
            "rea.paths",
            "rea.devtools",
            "rea.render",
            "rea.scenarios",
            "rea.unpackers",
        ),
    ),
    (
        "declarations",
        (
            "rea.catalog.tool",
            "rea.catalog.prompt",
            "rea.catalog.resource",
            "rea.catalog.projection",
            "rea.catalog.schemas",
            "rea.catalog.refusals",
        ),
    ),
    ("records", ("rea",)),
]


def _modules(folder: str) -> dict[str, Path]:
    """Module name to file of one source folder (a folder is imported by its name)."""
    out = {}
    for path in (ROOT / folder).rglob("*.py"):
        parts = path.relative_to(ROOT / folder).with_suffix("").parts
        name = ".".join((folder, *parts))
        out[name.removesuffix(".__init__")] = path
    return out


def _runtime_imports(path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """The modules of ``known`` that ``path`` imports when it runs (imports under TYPE_CHECKING are not run)."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(node)
        for guard in ast.walk(tree)
        if isinstance(guard, ast.If) and "TYPE_CHECKING" in ast.unparse(guard.test)
        for node in ast.walk(guard)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                name = sub if sub in known else node.module
                if name in known:
                    yield name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield alias.name, node.lineno


def _layer(module: str) -> int:
    best = (-1, -1)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best[1]:
                best = (index, len(prefix))
    return best[0]


def test_the_kernel_imports_only_downwards() -> None:
    kernel = _modules("rea")
    upward = []
    for module, path in sorted(kernel.items()):
        for target, line in _runtime_imports(path, kernel):
            if _layer(target) < _layer(module):
                upward.append(
                    f"{path.relative_to(ROOT)}:{line}: {LAYERS[_layer(module)][0]} imports "
                    f"{target} ({LAYERS[_layer(target)][0]})"
                )
    assert upward == []


def test_no_import_circle_at_run_time() -> None:
    modules = {**_modules("rea"), **_modules("rea_plugins")}
    edges = {m: sorted({t for t, _ in _runtime_imports(p, modules) if t != m}) for m, p in modules.items()}
    # Tarjan's strongly connected components, iteratively (the graph is a few hundred modules).
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    circles.append(sorted(members))
    assert circles == []


def test_a_plugin_imports_the_kernel_only_through_the_plugin_api() -> None:
    kernel = _modules("rea")
    reaching = []
    for folder in ("rea_plugins", "contrib"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for target, line in _runtime_imports(path, kernel):
                if target != "rea.plugin":
                    reaching.append(f"{path.relative_to(ROOT)}:{line}: {target}")
    assert reaching == []
