"""The questions an agent asks about an Android application (issue 47), each with the one call that answers it.

Shared by tests/android/test_android_questions.py (each answer right and within 64 KB over the MCP client) and
benchmarks/agent_cost_android.py (the bytes and calls of each answer).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import androidfixtures as fx

LOCATION_CALLER = "Lcom/example/rea/LocationTracker;->start(Landroid/content/Context;)V"
GREET_INT = "Lcom/example/rea/Greeter;->greet(I)Ljava/lang/String;"


@dataclass(frozen=True)
class Question:
    question: str
    tool: str
    args: Callable[[Path, Path], dict[str, Any]]
    # Whether the normalized result answers the question right.
    right: Callable[[dict[str, Any]], bool]


def _callers(r: dict[str, Any]) -> bool:
    return r["subject_external"] and [x["source"] for x in r["references"]] == [LOCATION_CALLER]


def _urls(r: dict[str, Any]) -> bool:
    return {x["target"] for x in r["references"]} == {fx.URL} and r["strings_matched"] == 1


def _regex(r: dict[str, Any]) -> bool:
    return {x["target"] for x in r["references"]} == {"gps", "location"}


def _changes(r: dict[str, Any], category: str) -> set[tuple[str, str]]:
    return {(c["change"], c["name"]) for c in r.get("changes", []) if c["category"] == category}


def _compare(r: dict[str, Any]) -> bool:
    s = r["summary"]
    return (
        s["class"] == {"added": 1, "changed": 1}
        and s["method"] == {"changed": 1}
        and s["permission"] == {"added": 2}
        and s["component"] == {"changed": 1}
        and s["signing"] == {"added": 1, "removed": 1}
        and ("added", "com.example.rea.Telemetry") in _changes(r, "class")
        and ("changed", GREET_INT) in _changes(r, "method")
        and ("changed", "debuggable") in _changes(r, "manifest")
    )


def _changed_methods(r: dict[str, Any]) -> bool:
    (only,) = r["changes"]
    return only["name"] == GREET_INT and "42 -> const/16 v0, 43" in only["detail"]


def _graph(r: dict[str, Any]) -> bool:
    return (
        r["detail"] == "summary"
        and r["counts"]["classes"] == len(fx.SMALI)
        and r["edge_kinds"]["loads-library"] == 1
        and len(r["entry_points"]) == 3
        and "edges" not in r
    )


def _graph_calls(r: dict[str, Any]) -> bool:
    return r["pages"]["edges"]["total"] == len(r["edges"]) == 2 and {e["kind"] for e in r["edges"]} == {"calls"}


def _manifest(r: dict[str, Any]) -> bool:
    return (
        r["debuggable"] is True
        and r["max_sdk"] == "34"
        and r["permission_max_sdk"] == {fx.V2_STORAGE: "28"}
        and r["declared_permissions"][0]["protection"] == ["signature"]
    )


def _catch(r: dict[str, Any]) -> bool:
    return r["source"]["status"] == "decompiled" and "catch (NumberFormatException" in r["source"]["text"]


QUESTIONS = (
    Question(
        "Which app methods call LocationManager.requestLocationUpdates?",
        "trace_android_references",
        lambda a, b: {
            "path": str(a),
            "class_name": "android.location.LocationManager",
            "member": "requestLocationUpdates",
        },
        _callers,
    ),
    Question(
        "Which methods load a string containing api.example.test?",
        "trace_android_references",
        lambda a, b: {"path": str(a), "string": "api.example.test", "string_match": "substring"},
        _urls,
    ),
    Question(
        "Which methods load a string matching ^(gps|location)$?",
        "trace_android_references",
        lambda a, b: {"path": str(a), "string": "^(gps|location)$", "string_match": "regex"},
        _regex,
    ),
    Question(
        "What changed between version 1 and version 2?",
        "compare_android_packages",
        lambda a, b: {"left_path": str(a), "right_path": str(b)},
        _compare,
    ),
    Question(
        "Which methods changed their code between the versions, and how?",
        "compare_android_packages",
        lambda a, b: {"left_path": str(a), "right_path": str(b), "category": "method", "change": "changed"},
        _changed_methods,
    ),
    Question(
        "What is the application's shape (entry points, classes, edges)?",
        "project_android_application_graph",
        lambda a, b: {"path": str(a)},
        _graph,
    ),
    Question(
        "Which application classes call each other?",
        "project_android_application_graph",
        lambda a, b: {"path": str(a), "detail": "full", "package": fx.PACKAGE, "edge_kind": "calls"},
        _graph_calls,
    ),
    Question(
        "Is version 2 debuggable, up to which SDK, and how are its permissions protected?",
        "inspect_android_package",
        lambda a, b: {"path": str(b)},
        _manifest,
    ),
    Question(
        "What does Checksum.parse do when the text is not a number?",
        "inspect_android_method",
        lambda a, b: {"path": str(a), "class_name": "com.example.rea.Checksum", "method": "parse"},
        _catch,
    ),
)


async def ask(client: Any, q: Question, v1: Path, v2: Path) -> tuple[dict[str, Any], int]:
    """(normalized result, bytes the agent read) of one question over an MCP client session."""
    res = await client.call_tool(q.tool, q.args(v1, v2))
    text = "".join(getattr(c, "text", "") for c in res.content)
    if res.is_error:
        raise AssertionError(f"{q.tool} failed: {text[:2000]}")
    structured = res.structured_content or {}
    return structured["normalized_result"], len(text.encode())
