"""The questions an agent asks about a .NET assembly (issue 47), each with the one call that answers it.

Shared by tests/managed/test_managed_questions.py (each answer right and within 64 KB over the MCP client) and
benchmarks/agent_cost_managed.py (the bytes and calls of each answer). The fixtures are csfixtures' two versions
of Lib.dll and App.exe, compiled with mcs in the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BUDGET = 64 * 1024


@dataclass(frozen=True)
class Question:
    question: str
    tool: str
    args: Callable[[dict[str, Path]], dict[str, Any]]
    # Whether the normalized result answers the question right.
    right: Callable[[dict[str, Any]], bool]


def _string_sites(r: dict[str, Any]) -> bool:
    (hit,) = r["strings"]["items"]
    return (
        r["strings"]["total"] == 1
        and hit["value"] == "https://api.example.invalid/v1/"
        and [s["method"] for s in hit["sites"]] == ["Demo.Lib.Endpoints::Api(string)"]
    )


def _regex_strings(r: dict[str, Any]) -> bool:
    found = {s["value"]: [x["method"] for x in s["sites"]] for s in r["strings"]["items"]}
    return found == {"status": ["Demo.Lib.Endpoints::Status()"], "login?user=demo": ["Demo.Lib.Endpoints::Login()"]}


def _callers(r: dict[str, Any]) -> bool:
    callers = {x["method"] for x in r["references"]["items"]}
    return callers == {"Demo.Lib.Calculator::Combined(int)"} and r["counts"] == {"call": 1}


def _writers(r: dict[str, Any]) -> bool:
    sites = {(x["method"], x["kind"]) for x in r["references"]["items"]}
    return sites == {("Demo.Lib.Calculator::Add(int, int)", "write"), ("Demo.Lib.Calculator::Reset()", "write")}


def _constructs(r: dict[str, Any]) -> bool:
    sites = r["references"]["items"]
    return [(x["method"], x["kind"], x["target"]) for x in sites] == [
        ("Demo.App.Program::Main(string[])", "construct", "Demo.Lib.Calculator::.ctor()")
    ]


def _generic_uses(r: dict[str, Any]) -> bool:
    return r["counts"] == {"call": 2, "construct": 1} and r["methods"] == 1 and r["matched"]["total"] == 3


def _namespace_listing(r: dict[str, Any]) -> bool:
    keys = {m["key"] for m in r["methods"]["items"]}
    return r["methods"]["total"] == len(keys) == 3 and keys == {
        "Demo.Lib.Endpoints::Api(string)",
        "Demo.Lib.Endpoints::Status()",
        "Demo.Lib.Endpoints::Login()",
    }


def _regex_listing(r: dict[str, Any]) -> bool:
    keys = [m["key"] for m in r["methods"]["items"]]
    return keys == ["Demo.Lib.Calculator::Add(int, int)"] and r["fields"]["total"] == 0


def _summary(r: dict[str, Any]) -> bool:
    changed = {c["member"] for c in r["changed"]["items"]}
    return (
        r["counts"]
        == {
            "added": 1,
            "removed": 0,
            "changed": 4,
            "unchanged_methods": r["counts"]["unchanged_methods"],
            "tokens_only": 4,
        }
        and r["added"]["items"] == ["method Demo.Lib.Calculator::Sub(int, int)"]
        and changed
        == {
            "field Demo.Lib.Calculator::Limit",
            "method Demo.Lib.Calculator::Clamp(int)",
            "method Demo.Lib.Calculator::Reset()",
            "method Demo.Lib.Calculator::Twice(int)",
        }
        and "Demo.Lib.Calculator::Combined(int)" in r["tokens_only"]["items"]
    )


def _how_changed(r: dict[str, Any]) -> bool:
    by = {c["member"]: c for c in r["changed"]["items"]}
    twice = by.get("method Demo.Lib.Calculator::Twice(int)", {})
    limit = by.get("field Demo.Lib.Calculator::Limit", {})
    return (
        "-IL_0002: mul" in twice.get("detail", [])
        and "+IL_0002: add" in twice.get("detail", [])
        and limit.get("detail") == ["constant: 10 -> 20"]
    )


def _method_view(r: dict[str, Any]) -> bool:
    text = r["text"]
    return (
        r["language"] == "il"
        and r["method"] == "Demo.Lib.Calculator::Reset()"
        and 'ldstr "total over the limit"' in text
        and "newobj void System.InvalidOperationException::.ctor(string)" in text
        and "stfld int Demo.Lib.Calculator::Total" in text
    )


def _enum_attribute(r: dict[str, Any]) -> bool:
    tag = next(a for a in r["attributes"]["items"] if a["type"] == "Demo.Lib.TagAttribute")
    return tag["arguments"] == [{"enum": "Demo.Lib.Level", "value": 2, "name": "High"}]


QUESTIONS = (
    Question(
        "Which methods load a string containing example.invalid?",
        "search_managed_strings",
        lambda f: {"path": str(f["lib_v1"]), "pattern": "example.invalid"},
        _string_sites,
    ),
    Question(
        "Which methods load a string matching ^(status|login)?",
        "search_managed_strings",
        lambda f: {"path": str(f["lib_v1"]), "pattern": "^(status|login)", "mode": "regex"},
        _regex_strings,
    ),
    Question(
        "Who calls Calculator.Add in the library?",
        "managed_references_to",
        lambda f: {"path": str(f["lib_v1"]), "name": "Demo.Lib.Calculator::Add(int, int)"},
        _callers,
    ),
    Question(
        "Which methods write the field Calculator.Total?",
        "managed_references_to",
        lambda f: {"path": str(f["lib_v1"]), "name": "Calculator::Total", "kinds": ["write"]},
        _writers,
    ),
    Question(
        "Where does the application construct a Calculator?",
        "managed_references_to",
        lambda f: {"path": str(f["app_exe"]), "name": "Demo.Lib.Calculator", "kinds": ["construct"]},
        _constructs,
    ),
    Question(
        "How does the application use the generic Box<T>?",
        "managed_references_to",
        lambda f: {"path": str(f["app_exe"]), "name": "Demo.Lib.Box`1"},
        _generic_uses,
    ),
    Question(
        "Which methods does the Endpoints class declare?",
        "inspect_managed_members",
        lambda f: {"path": str(f["lib_v1"]), "pattern": "Endpoints::", "type_limit": 0, "member_ref_limit": 0},
        _namespace_listing,
    ),
    Question(
        "Is there a method named exactly Add, and what is its signature?",
        "inspect_managed_members",
        lambda f: {"path": str(f["lib_v1"]), "pattern": "::Add\\(", "mode": "regex", "namespace": "Demo.Lib"},
        _regex_listing,
    ),
    Question(
        "What changed between version 1 and version 2?",
        "compare_managed_members",
        lambda f: {"left_path": str(f["lib_v1"]), "right_path": str(f["lib_v2"]), "max_diff_lines": 0},
        _summary,
    ),
    Question(
        "How did Twice and the constant Limit change?",
        "compare_managed_members",
        lambda f: {"left_path": str(f["lib_v1"]), "right_path": str(f["lib_v2"])},
        _how_changed,
    ),
    Question(
        "What does Calculator.Reset do?",
        "inspect_managed_method",
        lambda f: {"path": str(f["lib_v1"]), "method": "Calculator::Reset"},
        _method_view,
    ),
    Question(
        "Which Level does the Tag attribute on Calculator carry?",
        "inspect_managed_artifact",
        lambda f: {"path": str(f["lib_v1"]), "reference_limit": 0, "resource_limit": 0},
        _enum_attribute,
    ),
)


async def ask(client: Any, q: Question, fixtures: dict[str, Path]) -> tuple[dict[str, Any], int]:
    """(normalized result, bytes the agent read) of one question over an MCP client session."""
    res = await client.call_tool(q.tool, q.args(fixtures))
    text = "".join(getattr(c, "text", "") for c in res.content)
    if res.is_error:
        raise AssertionError(f"{q.tool} failed: {text[:2000]}")
    structured = res.structured_content or {}
    return structured["normalized_result"], len(text.encode())
