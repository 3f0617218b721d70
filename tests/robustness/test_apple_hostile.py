"""Hostile Mach-O, universal headers, code signatures, Objective-C metadata, plists and keyed archives through one
``rea serve``: every reply is a result or a canonical typed error (tests/apple/hostile.py makes the cases)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.apple import applefixtures
from tests.apple import hostile
from tests.robustness import runner
from tests.robustness.server import Server

DEADLINE_S = 60
TOOLS = (
    "inspect_macho",
    "list_architectures",
    "inspect_signature",
    "get_objc_classes",
    "get_objc_protocols",
    "inspect_native_dispatch_metadata",
    "inspect_plist",
    "inspect_keyed_archive",
    "decode_interface_builder",
    "trace_native_ui_action",
    "analyze_swift_types",
    "project_apple_application_graph",
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = applefixtures.build(tmp_path_factory.mktemp("apple-build"))
    root = tmp_path_factory.mktemp("apple-hostile")
    for name, (data, _) in hostile.cases(built).items():
        (root / name).write_bytes(data)
    # A bundle whose executable is damaged, for the bundle walk.
    app = root / "Broken.app"
    app.mkdir()
    (app / "Broken").write_bytes(hostile.cases(built)["fat-overlap.macho"][0])
    return root


def test_hostile_apple_inputs_through_one_server(corpus: Path, tmp_path: Path) -> None:
    server = Server.under(tmp_path)
    outcomes: Counter[str] = Counter()
    problems: list[str] = []
    try:
        calls = [(tool, {"path": str(p)}) for p in sorted(corpus.iterdir()) if p.is_file() for tool in TOOLS]
        calls.append(("trace_dylib_resolution", {"path": str(corpus / "Broken.app")}))
        for tool, args in calls:
            name = Path(args["path"]).name
            outcome = runner.judge(server.call(tool, args, DEADLINE_S), f"{name} {tool}", problems)
            if outcome is not None:
                outcomes[outcome] += 1
        assert len(server.children()) <= runner.MAX_CHILDREN, server.children()
        runner.REPORT.append(
            f"apple hostile: {sum(outcomes.values())} calls over {len(calls) // len(TOOLS)} files: "
            f"{dict(sorted(outcomes.items()))}; peak RSS {server.peak_rss_kib() // 1024} MiB"
        )
    finally:
        server.close()
    assert not problems, "\n".join(problems[:30])
    assert set(outcomes) <= {
        "ok",
        "unsupported_target",
        "resource_constraint",
        "invalid_request",
        "artifact_operation_failed",
    }, outcomes
    assert outcomes["unsupported_target"] > 0 and outcomes["ok"] > 0
