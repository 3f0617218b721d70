"""An agent's questions about a minified page bundle (issue 47), each a plan of MCP calls and a check of the answer.

Shared by ``test_js_agent_questions.py`` (each answered right, no result over 64 KB) and
``benchmarks/agent_cost_javascript.py`` (the bytes and calls each costs). A plan's arguments name an analysis as
``$v1``, ``$v2`` or ``$v2n`` (the page's versions: names kept with a map, mangled with a map, mangled without one);
the plan analyzes each version it names first, so the calls counted are all an agent makes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from minified import FACTS

Result = dict[str, Any]
MAX_RESULT_BYTES = 64 * 1024


def _retained(name: str) -> dict[str, str]:
    return {"kind": "retained-evidence", "evidence_id": name}


def _functions(result: Result) -> list[Result]:
    return [n for n in result.get("nodes", []) if n.get("type") == "function"]


def _original_is(node: Result, name: str, source: str, line: int) -> bool:
    original = node.get("original") or {}
    return original.get("name") == name and original.get("source") == source and original.get("line") == line


def _click_handler(r: Result) -> bool:
    name, source, line = FACTS["click_handler"]
    return any(_original_is(n, name, source, line) for n in _functions(r))


def _template(r: Result) -> bool:
    name, source, line = FACTS["greeting"]
    values = {m["value"] for m in r["matches"]}
    return FACTS["template"] in values and any(_original_is(n, name, source, line) for n in _functions(r))


def _greeting_origin(r: Result) -> bool:
    name, source, line = FACTS["greeting"]
    return _original_is(r["functions"][0], name, source, line)


def _summary(r: Result) -> bool:
    maps = r["source_maps"]
    return (
        r["total"] == 1
        and r["counts"]["functions"] > 0
        and len(maps) == 1
        and maps[0]["mappings_decoded"]
        and maps[0]["functions_mapped"] > 0
    )


def _sources(r: Result) -> bool:
    return r["summary"]["mapped"] == 3 and {s["path"] for s in r["sources"]} == FACTS["sources"]


def _differences(r: Result) -> Result:
    (module,) = r["modules"]
    differences: Result = module["differences"]
    return differences


def _changes(r: Result) -> bool:
    d = _differences(r)
    added_text = any("Good to see you" in s for s in d["strings"]["added"])
    return d["functions"]["added"] == [FACTS["added_in_v2"]] and d["functions"]["removed"] == [] and added_text


def _renames(r: Result) -> bool:
    d = _differences(r)
    renamed = {x["left"] for x in d["functions_renamed"]}
    return {"formatGreeting", "Panel.handleClick", "handlers.save"} <= renamed and d["functions"]["removed"] == []


def _stack_frame(r: Result) -> bool:
    name, source, _ = FACTS["click_handler"]
    original = r["original"]
    return (
        (original["source"], original["line"]) == (source, FACTS["clicked_line"])
        and "clicked" in original["text"]
        and r["function"]["original"]["name"] == name
    )


def _click_registration(r: Result) -> bool:
    name, _, _ = FACTS["click_handler"]
    functions = {f["node_id"]: f for f in r["functions"]}
    start = r["functions"][0]
    click = next(c for c in start["calls"] if c.get("argument") == "click")
    handler = functions.get(click.get("handler_resolved", ""), {})
    return (handler.get("original") or {}).get("name") == name


def _save_handler(r: Result) -> bool:
    fn = r["functions"][0]
    return fn["name"] == "handlers.save" and any(c["callee"].endswith(".store") for c in fn["calls"])


@dataclass
class Question:
    text: str
    tool: str  # the tool that answers it (the plan's last call)
    uses: tuple[str, ...]  # the page versions it analyzes first
    args: Result
    check: Callable[[Result], bool]
    # A text of the bundle whose 1-based column a plan's "$column" stands for (a stack frame's position).
    at: str | None = None
    # Calls an agent makes before the answering one (what tells it the name the last call takes).
    before: tuple[tuple[str, Result], ...] = ()
    sizes: list[int] = field(default_factory=list)
    right: bool = False

    @property
    def calls(self) -> int:
        return len(self.uses) + len(self.before) + (self.tool != "analyze_javascript_application")


def questions() -> list[Question]:
    return [
        Question("What does the shipped page hold?", "analyze_javascript_application", ("v2",), {}, _summary),
        Question(
            "Which function builds the 'clicked … times' message?",
            "trace_application_feature",
            ("v2",),
            {
                "application": _retained("$v2"),
                "seed": {"kind": "string", "value": "clicked", "match": "substring"},
                "max_depth": 0,
            },
            _click_handler,
        ),
        Question(
            "Where is the session-expiry text (a template literal) built?",
            "trace_application_feature",
            ("v2",),
            {
                "application": _retained("$v2"),
                "seed": {"kind": "string", "value": "session expires", "match": "substring"},
                "max_depth": 0,
            },
            _template,
        ),
        Question(
            "Which original file and line does the minified formatGreeting come from?",
            "trace_javascript_semantics",
            ("v2",),
            {
                "application": _retained("$v2"),
                "target": {"kind": "function", "value": "formatGreeting"},
                "max_nodes": 1,
            },
            _greeting_origin,
        ),
        Question(
            "Which original sources does the bundle hold?",
            "compare_source_to_bundle",
            ("v2",),
            {"application": _retained("$v2")},
            _sources,
        ),
        Question(
            "What changed between the two versions?",
            "compare_application_versions",
            ("v1", "v2"),
            {"left": _retained("$v1"), "right": _retained("$v2")},
            _changes,
        ),
        Question(
            "Are the mangled names of a map-less build renames?",
            "compare_application_versions",
            ("v1", "v2n"),
            {"left": _retained("$v1"), "right": _retained("$v2n")},
            _renames,
        ),
        Question(
            "Which original line is the minified bundle's stack frame at the 'clicked' template?",
            "map_javascript_location",
            ("v2",),
            {"application": _retained("$v2"), "module": "app.js", "line": 1, "column": "$column"},
            _stack_frame,
            at="`clicked",
        ),
        Question(
            "Which function handles the click event?",
            "trace_javascript_semantics",
            ("v2",),
            {"application": _retained("$v2"), "target": {"kind": "function", "value": "start"}, "max_depth": 1},
            _click_registration,
            # The search for the event's name finds the function that registers its handler (start).
            before=(
                (
                    "trace_application_feature",
                    {
                        "application": _retained("$v2"),
                        "seed": {"kind": "string", "value": "click"},
                        "max_depth": 0,
                    },
                ),
            ),
        ),
        Question(
            "What does the object-literal save handler call?",
            "trace_javascript_semantics",
            ("v1",),
            {"application": _retained("$v1"), "target": {"kind": "function", "value": "handlers.save"}, "max_nodes": 1},
            _save_handler,
        ),
    ]


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def answer(client: Any, question: Question, pages: dict[str, Path]) -> Result:
    """Run a question's plan over an MCP client session; the answer's normalized result (``question`` keeps the
    bytes of each result and whether the answer is right)."""
    ids: dict[str, str] = {}
    for version in question.uses:
        args = {"input_path": str(pages[version])}
        if question.tool == "analyze_javascript_application":
            args.update(question.args)
        out = await client.call_tool("analyze_javascript_application", args)
        text = text_of(out)
        assert not out.is_error, text[:2000]
        question.sizes.append(len(text.encode()))
        doc = json.loads(text)
        ids[f"${version}"] = doc["evidence_id"]
    for tool, args in question.before:
        wire = json.dumps(args)
        for name, evidence_id in ids.items():
            wire = wire.replace(f'"{name}"', json.dumps(evidence_id))
        out = await client.call_tool(tool, json.loads(wire))
        assert not out.is_error, text_of(out)[:2000]
        question.sizes.append(len(text_of(out).encode()))
    if question.tool == "analyze_javascript_application":
        result: Result = doc["normalized_result"]
    else:
        wire = json.dumps(question.args)
        for name, evidence_id in ids.items():
            wire = wire.replace(f'"{name}"', json.dumps(evidence_id))
        if question.at is not None:
            bundle = (pages[question.uses[0]] / "app.js").read_text()
            wire = wire.replace('"$column"', str(bundle.index(question.at) + 1))
        out = await client.call_tool(question.tool, json.loads(wire))
        text = text_of(out)
        assert not out.is_error, text[:2000]
        question.sizes.append(len(text.encode()))
        result = json.loads(text)["normalized_result"]
    question.right = question.check(result)
    return result
