"""docs/investigations.md's worked example, step by step: an unknown recorded while reading a stripped binary,
a probe (a bounded process capture), the unknown resolved with that Evidence, the bundle exported, and
verify_unknown_resolution passing in a fresh session (with a fresh store) after import."""

from __future__ import annotations

from pathlib import Path

from rea.annotations import AnnotationStore
from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of


def test_the_worked_example(rea_registry: Registry, stripped: str, tmp_path: Path) -> None:
    # The fixture, as an executable file of its own.
    program = tmp_path / "app"
    program.write_bytes(Path(stripped).read_bytes())
    program.chmod(0o755)
    stripped = str(program)
    # 1. Reading the stripped binary: no symbols say what it prints, so that becomes an unknown.
    first = Session(rea_registry, annotations=AnnotationStore(str(tmp_path / "store-a")))
    result_of(first, "open_binary", {"path": stripped, "provider_id": "native"})
    result_of(first, "binary_overview", {})
    unknown = result_of(
        first,
        "record_unknown",
        {
            "domain": "behaviour",
            "question": "What does the program write to stdout when run without arguments?",
            "severity": "medium",
            "required_authority": "shipped-artifact",
            "required_confidence": "observed",
            "recommended_probes": ["capture_process_scenario"],
        },
    )["unknown"]
    uid = unknown["unknown_id"]

    # 2. The probe: run it, bounded, in a scratch directory.
    work = tmp_path / "work"
    work.mkdir()
    capture = call_tool(
        first,
        "capture_process_scenario",
        {"executable": stripped, "working_directory": str(work), "sandbox": "preferred", "timeout_ms": 10_000},
    ).evidence
    assert capture is not None and capture.subject is not None
    assert capture.subject.digest.sha256 == first.require_target().sha256

    # 3. Resolved with that Evidence (compare-and-swap on the head revision read in step 1).
    resolved = result_of(
        first,
        "update_unknown",
        {
            "unknown_id": uid,
            "expected_revision": unknown["revision"],
            "status": "resolved",
            "resolution": {
                "kind": "answered",
                "summary": "The capture records its stdout.",
                "evidence_ids": [capture.evidence_id],
            },
        },
    )["unknown"]
    assert resolved["revision"] == 2
    assert result_of(first, "verify_unknown_resolution", {"unknown_id": uid})["verdict"] == "verified"

    # 4. Exported: the records, with the target's unknowns.
    bundle = tmp_path / "investigation.json"
    exported = result_of(first, "export_evidence_bundle", {"path": str(bundle)})
    assert exported["unknowns_targets"] == [first.require_target().sha256]
    first.close()

    # 5. A fresh session on another machine's store: import, then verify without opening anything.
    fresh = Session(rea_registry, annotations=AnnotationStore(str(tmp_path / "store-b")))
    imported = result_of(fresh, "import_evidence_bundle", {"path": str(bundle)})
    assert imported["unknowns"][0]["updated"] == [uid]
    verdict = call_tool(fresh, "verify_unknown_resolution", {"unknown_id": uid}).evidence
    assert verdict is not None
    assert verdict.normalized_result["verdict"] == "verified"
    assert verdict.evidence_links == [capture.evidence_id]
    assert result_of(fresh, "list_unknowns", {"status": "resolved"})["heads"]["items"][0]["revision"] == 2
    fresh.close()
