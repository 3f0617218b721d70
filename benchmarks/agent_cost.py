"""What an answer costs an agent: calls and result bytes per question, and the bytes of tools/list.

A fixed set of reverser questions over programs built in this run (a C command-line tool with an option
parser, an XXH64-style checksum, a plugin callback table and a thread started several calls deep, and a
small JavaScript command-line application), each answered by a scripted plan of MCP calls through the
official SDK's stdio client against ``rea serve``. Every answer is checked against the source; the bytes
counted are those of each result's text content (what a host hands the model). Goals: median at most 8 KB
per answer, none over 64 KB; tools/list input schemas and descriptions at most 60 KB (full profile) and
30 KB (compact profile).

    python benchmarks/agent_cost.py [--presentation lean|compact|complete] [--provider native]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters
from mcp.client.stdio import stdio_client

from rea.registry import TOOLSET_ORDER

MEDIAN_GOAL = 8 * 1024
MAX_GOAL = 64 * 1024
FULL_GOAL = 60 * 1024
COMPACT_GOAL = 30 * 1024
TOOLSETS = TOOLSET_ORDER

MINITOOL_C = r"""
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRIME64_1 0x9E3779B185EBCA87ULL
#define PRIME64_2 0xC2B2AE3D27D4EB4FULL

typedef struct extension { const char *name; int (*run)(const char *); } extension;
static extension *registered[8];
static int registered_count;

__attribute__((noinline)) void register_plugin(extension *(*create)(void)) {
    if (registered_count < 8) registered[registered_count++] = create();
}

static int table_run(const char *text) { return (int)strlen(text) * 3; }

__attribute__((noinline)) extension *create_table_extension(void) {
    static extension ext = {"table", table_run};
    return &ext;
}

__attribute__((noinline)) uint64_t xxh64_round(uint64_t acc, uint64_t input) {
    acc += input * PRIME64_2;
    acc = (acc << 31) | (acc >> 33);
    return acc * PRIME64_1;
}

__attribute__((noinline)) uint64_t checksum(const unsigned char *p, size_t n) {
    uint64_t acc = 0x27D4EB2F165667C5ULL;
    for (size_t i = 0; i < n; i++) acc = xxh64_round(acc, p[i]);
    return acc;
}

static void *worker_main(void *arg) { return (void *)(uintptr_t)checksum(arg, strlen(arg)); }

__attribute__((noinline)) int start_worker(const char *text) {
    pthread_t t;
    if (pthread_create(&t, NULL, worker_main, (void *)text) != 0) return -1;
    return pthread_join(t, NULL);
}
__attribute__((noinline)) int schedule(const char *text) { return start_worker(text) + 1; }
__attribute__((noinline)) int pipeline(const char *text) { return schedule(text) * 2; }
__attribute__((noinline)) int run_jobs(const char *text) { return pipeline(text) - 3; }

__attribute__((noinline)) int parse_options(int argc, char **argv, int *width) {
    int mode = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "man") == 0) mode = 1;
        else if (strcmp(argv[i], "xml") == 0) mode = 2;
        else if (strcmp(argv[i], "-t") == 0) mode = 3;
        else if (strcmp(argv[i], "--width") == 0 && i + 1 < argc) *width = atoi(argv[++i]);
        else { fprintf(stderr, "minitool: unknown option %s\n", argv[i]); exit(2); }
    }
    return mode;
}

int main(int argc, char **argv) {
    int width = 80;
    int mode = parse_options(argc, argv, &width);
    register_plugin(create_table_extension);
    const char *home = getenv("MINITOOL_HOME");
    printf("mode %d width %d sum %llx jobs %d\n", mode, width,
           (unsigned long long)checksum((const unsigned char *)(home ? home : "x"), 1), run_jobs("jobs"));
    return registered[0]->run("abc") == 9 ? 0 : 1;
}
"""

JS_APP = {
    "package.json": '{"name": "minicli", "version": "1.0.0", "bin": {"minicli": "src/cli.js"}, "main": "src/cli.js"}\n',
    "src/cli.js": (
        "#!/usr/bin/env node\n"
        "const { Command } = require('./command.js');\n"
        "const { serve } = require('./serve.js');\n"
        "const { build } = require('./build.js');\n"
        "const program = new Command('minicli');\n"
        "program.command('serve').description('start the dev server').action(serve);\n"
        "program.command('build').description('write the bundle').action(build);\n"
        "program.parse(process.argv);\n"
    ),
    "src/command.js": (
        "class Command {\n"
        "  constructor(name) { this.name = name; this.commands = new Map(); }\n"
        "  command(name) { const c = { name, description(d) { this.text = d; return this; },\n"
        "    action(fn) { this.fn = fn; return this; } }; this.commands.set(name, c); return c; }\n"
        "  parse(argv) { const c = this.commands.get(argv[2]); if (c) c.fn(argv.slice(3)); }\n"
        "}\n"
        "module.exports = { Command };\n"
    ),
    "src/serve.js": "exports.serve = (args) => console.log('serving on port', args[0] || 8080);\n",
    "src/build.js": "exports.build = (args) => console.log('building into', args[0] || 'dist');\n",
}


@dataclass
class Question:
    """A question, the calls a reverser would make to answer it, and what the answer must contain."""

    name: str
    plan: Callable[[Path, Path], list[tuple[str, dict[str, Any]]]]
    expect: tuple[str, ...]
    calls: int = 0
    sizes: list[int] = field(default_factory=list)
    right: bool = False


def questions(provider: str) -> list[Question]:
    def opened(binary: Path) -> list[tuple[str, dict[str, Any]]]:
        return [("open_binary", {"path": str(binary), "provider_id": provider})]

    return [
        Question(
            "orientation: what is this binary, what can rea do",
            lambda b, _: [("binary_session", {}), *opened(b), ("binary_overview", {})],
            ("minitool", "x86"),
        ),
        Question(
            "which options does the parser accept",
            lambda b, _: [
                *opened(b),
                ("search_strings", {"pattern": "^(-{1,2}[a-z-]+|[a-z]{3})$", "mode": "regex", "min_length": 2}),
            ],
            # gcc -O2 compares "-t" inline (no string is left of it); the other words stay strcmp literals.
            ('"man"', '"xml"', '"--width"'),
        ),
        Question(
            "where is the XXH64 checksum computed",
            lambda b, _: [*opened(b), ("search_immediates", {"value": "0x9e3779b185ebca87"})],
            ("xxh64_round",),
        ),
        Question(
            "which callback does main register",
            lambda b, _: [*opened(b), ("trace_call_path", {"start": "main", "goal": "create_table_extension"})],
            ('"reached":true', "create_table_extension"),
        ),
        Question(
            "how does main reach pthread_create",
            lambda b, _: [
                *opened(b),
                ("trace_call_path", {"start": "main", "goal": "pthread_create"}),
                ("trace_call_path", {"start": "main", "goal": "pthread_create", "max_depth": 8}),
            ],
            ('"reached":true', "start_worker", "pthread_create"),
        ),
        Question(
            "which code prints the unknown-option message",
            lambda b, _: [*opened(b), ("trace_feature", {"query": "unknown option"})],
            ("parse_options",),
        ),
        Question(
            "who calls strcmp, and what does the caller look like",
            lambda b, _: [
                *opened(b),
                ("search_instructions", {"pattern": "^call .*strcmp", "mode": "regex"}),
                ("procedure_info", {"procedure": "parse_options"}),
                ("procedure_assembly", {"procedure": "parse_options"}),
            ],
            ("parse_options", "strcmp"),
        ),
        Question(
            "which commands does the JS CLI register",
            lambda _, app: [
                ("analyze_javascript_application", {"input_path": str(app), "detail": "summary"}),
                (
                    "trace_application_feature",
                    {
                        "application": {"kind": "retained-evidence", "evidence_id": "$complete"},
                        "seed": {"kind": "string", "value": "serve"},
                    },
                ),
            ],
            ("src/cli.js", "serve"),
        ),
    ]


def build_fixtures(root: Path) -> tuple[Path, Path]:
    gcc = shutil.which("gcc")
    if gcc is None:
        raise SystemExit("gcc is needed to build the fixture (scripts/system-deps installs it)")
    src = root / "minitool.c"
    src.write_text(MINITOOL_C)
    binary = root / "minitool"
    subprocess.run([gcc, "-O2", "-o", str(binary), str(src), "-lpthread"], check=True, capture_output=True)
    app = root / "minicli"
    for rel, text in JS_APP.items():
        (app / rel).parent.mkdir(parents=True, exist_ok=True)
        (app / rel).write_text(text)
    return binary, app


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REA_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


async def connect_and(env: dict[str, str], work: Callable[[ClientSession], Any]) -> Any:
    params = StdioServerParameters(command=sys.executable, args=["-m", "rea", "serve"], env=env)
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            return await work(session)


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def answer(env: dict[str, str], question: Question, binary: Path, app: Path, verbose: bool) -> None:
    async def work(session: ClientSession) -> None:
        texts = []
        complete_id = None
        for tool, args in question.plan(binary, app):
            args = json.loads(json.dumps(args).replace('"$complete"', json.dumps(complete_id)))
            result = await session.call_tool(tool, args)
            text = text_of(result)
            question.calls += 1
            question.sizes.append(len(text.encode()))
            if verbose:
                print(f"    {tool} {json.dumps(args)[:120]} -> {text[:1500]}")
            if not result.is_error:
                texts.append(text)
                # A summary view names the complete record it summarizes: later calls take that one.
                doc = json.loads(text)
                view = doc.get("normalized_result") or {}
                complete_id = view.get("parent_evidence_id") or doc.get("evidence_id", complete_id)
        joined = "\n".join(texts)
        question.right = all(token in joined for token in question.expect)

    await connect_and(env, work)


def tool_definition_bytes(env: dict[str, str]) -> tuple[int, int, int]:
    """Tools advertised, input schemas + descriptions, and the whole tools/list result, in bytes."""

    async def work(session: ClientSession) -> tuple[int, int, int]:
        listed = (await session.list_tools()).tools
        inputs = sum(len(json.dumps(t.input_schema).encode()) + len((t.description or "").encode()) for t in listed)
        # As the server sends it: compact JSON.
        whole = len(
            json.dumps(
                [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed], separators=(",", ":")
            ).encode()
        )
        return len(listed), inputs, whole

    result: tuple[int, int, int] = anyio.run(connect_and, env, work)
    return result


def kb(n: float) -> str:
    return f"{n / 1024:7.1f} KB"


def verdict(value: float, goal: int) -> str:
    return f"(goal <= {kb(goal).strip()}: {'met' if value <= goal else 'MISSED'})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # lean is what rea serve answers by default; compact and complete are the settings' other presentations.
    parser.add_argument("--presentation", default="lean", choices=("lean", "compact", "complete"))
    parser.add_argument("--provider", default="native")
    parser.add_argument("--verbose", action="store_true", help="print each call and the start of its result")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rea-agent-cost-") as tmp:
        root = Path(tmp)
        binary, app = build_fixtures(root)
        cache = root / "cache"
        env = server_env(REA_RESULT_PRESENTATION=opts.presentation, REA_CACHE_DIR=str(cache))
        asked = questions(opts.provider)
        print(f"questions answered through rea serve ({opts.provider}, presentation {opts.presentation}):")
        for q in asked:
            anyio.run(answer, env, q, binary, app, opts.verbose)
            print(
                f"  {'right' if q.right else 'WRONG'}  {q.calls} calls {kb(sum(q.sizes))}  "
                f"(largest {kb(max(q.sizes))})  {q.name}"
            )
        totals = [sum(q.sizes) for q in asked]
        median, largest = statistics.median(totals), max(totals)
        print(
            f"answers: {sum(q.right for q in asked)} of {len(asked)} right, {sum(q.calls for q in asked)} calls, "
            f"{kb(sum(totals))} in all"
        )
        print(f"  median per answer {kb(median)} {verdict(median, MEDIAN_GOAL)}")
        print(f"  largest answer    {kb(largest)} {verdict(largest, MAX_GOAL)}")
        print("tools/list (input schemas + descriptions; the whole result with output schemas):")
        for profile, goal in (("full", FULL_GOAL), ("compact", COMPACT_GOAL)):
            count, inputs, whole = tool_definition_bytes(server_env(REA_MCP_INPUT_SCHEMA_PROFILE=profile))
            print(f"  {profile:8} {count:3} tools {kb(inputs)} {verdict(inputs, goal)}; whole tools/list {kb(whole)}")
        print("  per toolset (full profile):")
        for toolset in TOOLSETS:
            try:
                count, inputs, _ = tool_definition_bytes(server_env(REA_MCP_TOOLSETS=toolset))
            except Exception as exc:  # a server that refuses the setting: say so, keep measuring
                print(f"    {toolset:10} unavailable ({type(exc).__name__})")
                continue
            print(f"    {toolset:10} {count:3} tools {kb(inputs)}")


if __name__ == "__main__":
    main()
