"""``run_analysis_script``, declared as a ToolDef."""

from __future__ import annotations

import hashlib

from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import OperationResult
from rea.plugin import ProviderIdentity
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import arg_object
from rea.plugin import arg_str
from rea_plugins.scripting.runner import TOOL_NAME
from rea_plugins.scripting.runner import ScriptRunner
from rea_plugins.scripting.shapes import ScriptRun

VERSION = "1"
MAX_SOURCE_CHARS = 64 * 1024
PROVIDER = ProviderIdentity(id="scripting", name="Analysis scripts", version=VERSION)

EXAMPLE = (
    "hits = rea.search_strings(pattern=args['needle'])['strings'][:3]\n"
    "result = [rea.xrefs(address=h['address']) for h in hits]\n"
)

# Input-schema fragments are JSON Schema documents (JSONObject: JSON Schema's vocabulary, not rea records).
INPUT_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "source": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_SOURCE_CHARS,
            "description": "Python source; rea.<tool>(**args) calls a read-only tool.",
            "examples": [EXAMPLE],
        },
        "filename": {
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "pattern": "^[^\\x00-\\x1f]+$",
            "description": "Name shown in the script's traceback (default <script>).",
            "examples": ["strings_to_c.py"],
        },
        "arguments": {
            "type": "object",
            "description": "JSON values the script reads as its global args.",
            "examples": [{"needle": "password"}],
        },
    },
    "required": ["source"],
    "additionalProperties": False,
}


def _run(call: ToolCall) -> Evidence:
    source = arg_str(call.args, "source", "")  # required by the schema
    filename = arg_str(call.args, "filename", "<script>")
    arguments = arg_object(call.args, "arguments")
    if arguments is None:
        arguments = {}
    run = ScriptRunner(call, source, filename, arguments).run()
    parameters: JSONObject = {
        # The record commits to the script by its digest; the text stays with the caller.
        "source_sha256": hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest(),
        "source_chars": len(source),
        "filename": filename,
        "arguments": arguments,
    }
    limitations = ["The script's own logic is not checked: its result is what it computed from the linked Evidence."]
    if run.printed_truncated:
        limitations.append(f"printed was cut at its bound ({run.printed_bytes} bytes were printed).")
    call.ctx.finish(f"{TOOL_NAME}: {run.calls} tool calls, {run.elapsed_ms} ms")
    return call.session.evidence(
        TOOL_NAME,
        parameters,
        OperationResult(normalized=run, confidence="derived", limitations=limitations),
        bound=False,
        target=call.session.target,
        provider=PROVIDER,
        analysis_profile=None,
        links=run.call_evidence_ids,
    )


RUN_ANALYSIS_SCRIPT = ToolDef(
    name=TOOL_NAME,
    task_support="optional",
    family="scripting",
    title="Run Analysis Script",
    description=(
        "Run a Python script against the open session in a sandboxed worker, where rea.<tool>(**args) calls any "
        "read-only tool and returns its result as JSON data. It answers with what the script printed, its result "
        "(rea.answer(value) or a variable named result) and the Evidence ids of every inner call, each recorded "
        "as a direct call would be."
    ),
    input_schema=INPUT_SCHEMA,
    result_type=ScriptRun,
    handler=_run,
    # It starts a process (the sandboxed worker) and runs the caller's code: never read-only.
    effects=ToolEffects(records_evidence=True, launches_process=True, executes_foreign_code=True, idempotent=False),
    client_features_optional=("progress", "cancellation"),
    examples=({"source": EXAMPLE, "arguments": {"needle": "password"}},),
)


def tools() -> list[ToolDef]:
    """The tools this module declares, in the order they are registered (the plugin's ``TOOL_MODULES`` reads it)."""
    return [RUN_ANALYSIS_SCRIPT]
