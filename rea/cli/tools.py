"""Every registered tool as a CLI command over the same handler: ``rea <tool-name> ...``.

One rule, generated from each tool's input schema (a test walks every tool):

- every input property is a flag named after it, kebab-cased (``max_depth`` -> ``--max-depth``);
  JSON-valued flags take JSON text or ``@file.json``; a flag that takes Evidence also takes a bare
  ``ev_...`` id (its retained reference, resolved from this call's ledger or the analysis cache);
- target-bound commands take the binary to open first (``TARGET``);
- a command whose tool declares a subject (its main argument, e.g. ``procedure``) also takes it as the
  next positional (``SUBJECT``), the same as its flag; any other command takes all of its arguments
  as one JSON object (``JSON``, or ``@file.json``) in that place;
- the CLI's own options: ``--json`` or ``--format json|text`` (output), ``--provider`` (target-bound
  commands). A tool property of the same name keeps the name; output is then ``--json`` or
  ``--output-format``.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import msgspec

from rea import paths
from rea.arguments import Arguments
from rea.catalog.invoke import ToolResult
from rea.catalog.invoke import invoke
from rea.catalog.schemas import RETAINED_EVIDENCE
from rea.catalog.schemas import flatten_root_union
from rea.catalog.schemas import members
from rea.catalog.schemas import subschema
from rea.catalog.tool import ToolDef
from rea.cli.args import ArgumentParser
from rea.context import CallContext
from rea.errors import ReaError
from rea.evidence import EVIDENCE_ID
from rea.evidence import retained_reference
from rea.presentation import present
from rea.records import JSONObject
from rea.records import JSONValue
from rea.selection import parse_provider_choice
from rea.session import Session

CONVENTION = """\
arguments:
  every input property is a flag of its own name (--max-depth for max_depth); JSON-valued flags take
  JSON text or @file.json, and a flag that takes Evidence also takes a bare evidence_id (ev_...) from an
  earlier call (kept in the analysis cache). TARGET (target-bound commands) is the binary to open. SUBJECT, where a
  command has one, is the same as its flag; other commands take every argument as one JSON object
  (or @file.json) in that place. Output: text by default, --json or --format json for JSON. A tool that draws
  (format mermaid or dot) also takes --render OUT.svg: Graphviz's dot draws the picture into that file."""


def flag_name(name: str) -> str:
    """The CLI flag of input property ``name``."""
    return "--" + name.replace("_", "-")


def _read_text(text: str) -> str:
    """``@path`` reads a file; anything else is the text itself."""
    if not text.startswith("@"):
        return text
    path = text[1:]
    try:
        with open(os.path.expanduser(path), "rb") as fh:
            return fh.read().decode("utf-8")
    except OSError as exc:
        code = "access_denied" if isinstance(exc, PermissionError) else "target_unavailable"
        raise ReaError(
            code,
            f"cannot read input file {path}: {exc.strerror or 'unreadable'}",
            details={"path": path, "reason": "unreadable"},
        ) from None
    except UnicodeDecodeError:
        raise ReaError(
            "invalid_request",
            f"input file {path} is not UTF-8 text",
            details={"issues": [{"path": path, "reason": "invalid_format", "message": "not UTF-8"}]},
        ) from None


def parse_json_text(text: str, where: str) -> JSONValue:
    """JSON from ``text`` or ``@file``; ``invalid_request`` naming ``where`` otherwise."""
    body = _read_text(text)
    try:
        value: JSONValue = json.loads(body)
    except json.JSONDecodeError as exc:
        # Where it went wrong, not the decoder's wording.
        raise ReaError(
            "invalid_request",
            f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno})",
            details={
                "issues": [
                    {
                        "path": where,
                        "reason": "invalid_format",
                        "message": f"not valid JSON at line {exc.lineno}, column {exc.colno}",
                    }
                ]
            },
            remediation="Give a JSON value, or @FILE to read one from a file.",
        ) from None
    return value


class _JsonValue:
    """An argparse ``type`` that defers JSON parsing, so errors become canonical ones."""

    def __init__(self, text: str) -> None:
        self.text = text


class _EvidenceValue(_JsonValue):
    """A JSON-valued flag that takes Evidence: a bare ``ev_...`` id is its retained reference."""


class _TextOrJsonValue(_JsonValue):
    """A flag whose schema also takes a string (a number or text): text that is not JSON is that string, so
    ``--value 0x428a2f98`` works as well as ``--value 42``."""


# A property's schema is JSON Schema's vocabulary (a JSONObject), read as rea.catalog.schemas reads it.


def _branches(schema: JSONObject) -> list[JSONValue]:
    """The forms of a property that takes one of several (its ``anyOf``, else its ``oneOf``)."""
    return members(schema["anyOf"] if "anyOf" in schema else schema.get("oneOf"))


def takes_text(schema: JSONObject) -> bool:
    """Whether a property without one plain type accepts a string among its forms."""
    kinds = schema.get("type")
    if isinstance(kinds, list):
        return "string" in kinds
    return any(isinstance(b, dict) and b.get("type") == "string" for b in _branches(schema))


def takes_evidence(schema: JSONObject) -> bool:
    """Whether a property accepts a retained-evidence reference (and so a bare evidence_id on the CLI)."""
    return any(
        isinstance(b, dict) and str(b.get("$ref", "")).endswith("/" + RETAINED_EVIDENCE) for b in _branches(schema)
    )


def _json_flag(schema: JSONObject) -> tuple[type[_JsonValue], str, str]:
    """How a JSON-valued flag is read, its metavar and the forms its help adds."""
    if takes_text(schema):
        return _TextOrJsonValue, "TEXT|JSON", " (text, a number, JSON or @file.json)"
    if takes_evidence(schema):
        return _EvidenceValue, "EV|JSON|@FILE", " (an evidence_id, JSON or @file.json)"
    return _JsonValue, "JSON|@FILE", " (JSON or @file.json)"


def parse_flag_value(value: _JsonValue, where: str) -> JSONValue:
    if isinstance(value, _EvidenceValue) and EVIDENCE_ID.match(value.text):
        return retained_reference(value.text)
    if isinstance(value, _TextOrJsonValue) and not value.text.startswith("@"):
        try:
            parsed: JSONValue = json.loads(value.text)
        except json.JSONDecodeError:
            return value.text
        return parsed
    return parse_json_text(value.text, where)


def _output_flags(tool: ToolDef) -> list[str]:
    names = set(subschema(flatten_root_union(tool.input_schema).get("properties")))
    flags = ["--output-format"]
    if "format" not in names:
        flags.insert(0, "--format")
    return flags


def build_parser(tool: ToolDef, prog: str, command: str = "") -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog=f"{prog} {command or tool.cli_name}",
        description=tool.description,
        epilog=CONVENTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    schema = flatten_root_union(tool.input_schema)
    properties = subschema(schema.get("properties"))
    if tool.requires_target:
        parser.add_argument("target", metavar="TARGET", help="path of the binary to open for this call")
    if tool.cli_subject:
        sub = subschema(properties.get(tool.cli_subject))
        parser.add_argument(
            "subject",
            metavar="SUBJECT",
            # An array subject (e.g. paths) takes every positional: ``rea corpus triage A B C``.
            nargs="*" if sub.get("type") == "array" else "?",
            help=f"{tool.cli_subject}: {sub.get('description', '')} (same as {flag_name(tool.cli_subject)})",
        )
    else:
        parser.add_argument(
            "json_input", metavar="JSON", nargs="?", help="every argument as one JSON object, or @file.json"
        )
    for name, prop in properties.items():
        sub = subschema(prop)
        kind = sub.get("type")
        help_text = str(sub.get("description", ""))
        dest = "opt_" + name
        if kind == "boolean":
            parser.add_argument(
                flag_name(name), dest=dest, action=argparse.BooleanOptionalAction, default=None, help=help_text
            )
        elif kind == "integer":
            parser.add_argument(flag_name(name), dest=dest, type=int, metavar=name.upper(), help=help_text)
        elif kind == "number":
            parser.add_argument(flag_name(name), dest=dest, type=float, metavar=name.upper(), help=help_text)
        elif kind == "string":
            enum = sub.get("enum")
            parser.add_argument(
                flag_name(name),
                dest=dest,
                choices=enum if isinstance(enum, list) else None,
                metavar=None if enum else name.upper(),
                help=help_text,
            )
        elif kind == "array" and subschema(sub.get("items")).get("type") == "string":
            parser.add_argument(flag_name(name), dest=dest, nargs="+", metavar=name.upper(), help=help_text)
        else:
            value_type, metavar, forms = _json_flag(sub)
            parser.add_argument(
                flag_name(name), dest=dest, type=value_type, metavar=metavar, help=(help_text + forms).strip()
            )
    if tool.requires_target:
        parser.add_argument("--provider", help="provider id or 'auto' (default: REA_ANALYSIS_PROVIDER, then auto)")
    if draws(tool):
        parser.add_argument(
            "--render",
            metavar="OUT.svg",
            help="draw the result's picture with Graphviz's dot into this file (.svg, .png or .pdf); sets --format dot",
        )
    parser.add_argument(
        *_output_flags(tool),
        dest="format",
        choices=["json", "text"],
        default="text",
        help="output format (default: text)",
    )
    parser.add_argument("--json", dest="format", action="store_const", const="json", help="same as --format json")
    return parser


def collect_arguments(tool: ToolDef, ns: argparse.Namespace) -> Arguments:
    args: Arguments = {}
    raw = getattr(ns, "json_input", None)
    if raw is not None:
        value = parse_json_text(raw, "the JSON argument")
        if not isinstance(value, dict):
            raise ReaError(
                "invalid_request",
                "the JSON argument must be an object",
                details={"issues": [{"path": "(root)", "reason": "invalid_type", "message": "expected object"}]},
            )
        args.update(value)
    for key, value in vars(ns).items():
        if key.startswith("opt_") and value is not None:
            name = key[4:]
            args[name] = parse_flag_value(value, flag_name(name)) if isinstance(value, _JsonValue) else value
    subject = getattr(ns, "subject", None)
    if subject == []:
        subject = None
    if subject is not None:
        flagged = args.get(tool.cli_subject)
        if flagged is not None and flagged != subject:
            raise ReaError(
                "invalid_request",
                f"{tool.cli_subject} given twice, as SUBJECT and as "
                f"{flag_name(tool.cli_subject)}, with different values",
                details={
                    "issues": [
                        {
                            "path": tool.cli_subject,
                            "reason": "invalid_value",
                            "message": "given twice with different values",
                        }
                    ]
                },
            )
        args[tool.cli_subject] = subject
    return args


def draws(tool: ToolDef) -> bool:
    """Whether the tool can draw its result as DOT (its ``format`` argument, rea.render)."""
    prop = subschema(flatten_root_union(tool.input_schema).get("properties")).get("format")
    return isinstance(prop, dict) and "dot" in members(prop.get("enum"))


RENDER_FORMATS = ("svg", "png", "pdf")


def render_target(path: str) -> str:
    """The Graphviz output format of ``--render PATH`` (from its extension), before any work is done."""
    kind = os.path.splitext(path)[1].lower().lstrip(".")
    if kind not in RENDER_FORMATS:
        raise ReaError(
            "invalid_request",
            f"--render {path}: the file name must end in {', '.join('.' + k for k in RENDER_FORMATS)}",
            details={"issues": [{"path": "--render", "reason": "invalid_value", "message": "unknown extension"}]},
        )
    return kind


def picture_of(result: ToolResult) -> JSONObject:
    """The result's ``picture`` field as a dict (empty when it has none); a result kept as its Struct too."""
    body: Any = result.evidence.normalized_result if result.evidence is not None else result.structured
    picture = body.get("picture") if isinstance(body, dict) else getattr(body, "picture", None)
    if picture is not None and not isinstance(picture, dict):
        picture = msgspec.to_builtins(picture)
    return picture if isinstance(picture, dict) else {}


def render_picture(result: ToolResult, path: str) -> None:
    """Run the result's DOT picture through Graphviz (``dot``) into ``path``; typed errors when it cannot."""
    import shutil
    import subprocess

    kind = render_target(path)
    picture = picture_of(result)
    if picture.get("format") != "dot":
        raise ReaError("execution_failure", "the result holds no DOT picture to render", details={"path": path})
    dot = shutil.which("dot")
    if dot is None:
        raise ReaError(
            "capability_unavailable",
            "--render needs Graphviz's dot, which is not installed",
            remediation="Install Graphviz (Debian: apt-get install graphviz), or print the text with --format dot "
            "... and render it elsewhere (Mermaid: --format mermaid).",
            details={"executable": "dot"},
        )
    try:
        done = subprocess.run(
            [dot, f"-T{kind}", "-o", path], input=str(picture["text"]).encode(), capture_output=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        raise ReaError(
            "provider_timeout", "Graphviz's dot did not finish within 120 s", details={"path": path}
        ) from None
    if done.returncode != 0:
        raise ReaError(
            "execution_failure",
            f"Graphviz's dot failed (exit {done.returncode}): {done.stderr.decode(errors='replace').strip()[:300]}",
            details={"path": path},
        )


def run_tool(session: Session, tool: ToolDef, ns: argparse.Namespace, ctx: CallContext) -> ToolResult:
    args = collect_arguments(tool, ns)
    if getattr(ns, "render", None):
        render_target(ns.render)
        if args.get("format", "dot") != "dot":
            raise ReaError(
                "invalid_request",
                "--render draws the DOT picture: leave --format out or give --format dot",
                details={"issues": [{"path": "format", "reason": "invalid_value", "message": "--render needs dot"}]},
            )
        args["format"] = "dot"
    if tool.requires_target:
        if ns.provider is not None:
            parse_provider_choice(ns.provider, setting="--provider")
        session.open(paths.resolve(ns.target, "TARGET"), ns.provider, ctx)
    return invoke(session, tool, args, ctx)


def result_document(result: ToolResult, presentation: str = "complete") -> JSONValue:
    """The result as printed: a record in the CLI's presentation (``rea.presentation.cli_presentation``)."""
    if result.evidence is not None:
        document: JSONValue = msgspec.to_builtins(present(result.evidence, presentation))
        return document
    return result.structured
