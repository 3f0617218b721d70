"""The corpus tools, declared as ToolDef values (handlers import Dask and SQLite work lazily).

Descriptions stay short: hosts send them with every request; docs/corpus.md says the rest.
"""

from __future__ import annotations

from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import lazy_handler
from rea_plugins.corpus.model import CorpusComparison
from rea_plugins.corpus.model import CorpusTriage
from rea_plugins.corpus.model import QueryPage

FAMILY = "corpus"
# Input-schema fragments are JSON Schema documents (JSONObject: JSON Schema's vocabulary, not rea records).
INDEX: JSONObject = {"type": "string", "minLength": 1, "description": "SQLite index file."}
CORPUS: JSONObject = {"type": "string", "minLength": 1, "description": "Corpus label in the index."}
OFFSET: JSONObject = {"type": "integer", "minimum": 0, "default": 0, "description": "Page start."}
LIMIT: JSONObject = {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50, "description": "Page size."}


def obj(properties: JSONObject, required: list[str]) -> JSONObject:
    return {
        "type": "object",
        "properties": properties,
        "required": list[JSONValue](required),
        "additionalProperties": False,
    }


def count(description: str, maximum: int, default: int | None = None, minimum: int = 0) -> JSONObject:
    out: JSONObject = {"type": "integer", "minimum": minimum, "maximum": maximum, "description": description}
    if default is not None:
        out["default"] = default
    return out


TRIAGE_SCHEMA = obj(
    {
        "paths": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "minItems": 1,
            "description": "Files, folders, archives.",
        },
        "index": INDEX,
        "corpus": {**CORPUS, "default": "default"},
        "scheduler": {"type": "string", "default": "local", "description": "local, synchronous or tcp://HOST:PORT."},
        "workers": count("Local processes.", 512, minimum=1),
        "memory_limit": {"type": "string", "description": "Per worker, e.g. 2GB."},
        "max_attempts": count("Runs per item.", 10, 3, minimum=1),
        "analysis_provider": {"type": "string", "default": "native", "description": "Provider id or auto."},
        "yara_rules": {"type": "string", "minLength": 1, "description": "YARA rules file."},
        "integrity_policy": {"type": "string", "enum": ["fail", "record-and-continue"], "description": "Archives."},
        "max_strings": count("Kept per binary.", 100_000, 2000),
        "max_procedures": count("Hashed per binary.", 100_000, 5000),
    },
    ["paths", "index"],
)

QUERIES = ["imports", "strings", "lacks_mitigation", "procedure_hash", "shared_procedures", "libraries", "binaries"]
QUERY_SCHEMA = obj(
    {
        "query": {"type": "string", "enum": [*QUERIES, "failed"], "description": "What to find (docs/corpus.md)."},
        "index": INDEX,
        "value": {"type": "string", "description": "Import name, RE2 pattern, mitigation or hash."},
        "regex": {"type": "boolean", "default": False, "description": "value is an RE2 import-name pattern."},
        "corpus": CORPUS,
        "min_binaries": count("shared_procedures: at least.", 1_000_000, 2, minimum=1),
        "offset": OFFSET,
        "limit": LIMIT,
    },
    ["query", "index"],
)

COMPARE_SCHEMA = obj(
    {"index": INDEX, "left": CORPUS, "right": CORPUS, "offset": OFFSET, "limit": LIMIT},
    ["index", "left", "right"],
)


TRIAGE = ToolDef(
    name="triage_corpus",
    task_support="optional",
    family=FAMILY,
    description="Analyse every binary under files, folders and archives into a SQLite index (resumable, Dask).",
    input_schema=TRIAGE_SCHEMA,
    result_type=CorpusTriage,
    handler=lazy_handler("rea_plugins.corpus.triage", "handle"),
    effects=ToolEffects(writes_filesystem=True, launches_process=True, idempotent=True),
    path_arguments=("paths", "index", "yara_rules"),
    cli_subject="paths",
    cli_group="corpus",
    cli_command="triage",
    client_features_optional=("progress", "cancellation"),
    examples=({"paths": ["/opt/firmware/rootfs"], "index": "/tmp/corpus.db"},),
)

QUERY = ToolDef(
    name="query_corpus",
    family=FAMILY,
    description="Query a corpus index: imports, strings (RE2), missing mitigations, shared procedures, libraries.",
    input_schema=QUERY_SCHEMA,
    result_type=QueryPage,
    handler=lazy_handler("rea_plugins.corpus.query", "handle_query"),
    path_arguments=("index",),
    cli_subject="query",
    cli_group="corpus",
    cli_command="query",
    examples=({"query": "imports", "value": "strcpy", "index": "/tmp/corpus.db"},),
)

COMPARE = ToolDef(
    name="compare_corpora",
    task_support="optional",
    family=FAMILY,
    description="Binaries and procedures added, removed and changed between two corpora of an index.",
    input_schema=COMPARE_SCHEMA,
    result_type=CorpusComparison,
    handler=lazy_handler("rea_plugins.corpus.query", "handle_compare"),
    path_arguments=("index",),
    cli_group="corpus",
    cli_command="compare",
    examples=({"index": "/tmp/corpus.db", "left": "v1", "right": "v2"},),
)

TOOLS = (TRIAGE, QUERY, COMPARE)


def tools() -> list[ToolDef]:
    """The family's tools, for the kernel (the plugin lists this module in ``TOOL_MODULES``)."""
    return list(TOOLS)
