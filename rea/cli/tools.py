"""Every registered tool as a CLI command over the same handler: ``rea <tool-name> ...``."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import msgspec

from rea.catalog.invoke import ToolResult, invoke
from rea.catalog.schemas import flatten_root_union
from rea.catalog.tool import ToolDef
from rea.context import CallContext
from rea.errors import ReaError
from rea.session import Session

# Options every command owns; a tool property with one of these names becomes --input-<name>.
RESERVED = frozenset({"format", "provider", "help", "target", "input"})


def _flag(name: str) -> str:
    flag = name.replace("_", "-")
    return "--input-" + flag if name in RESERVED else "--" + flag


def _json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None


def build_parser(tool: ToolDef, prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"{prog} {tool.cli_name}", description=tool.description)
    if tool.requires_target:
        parser.add_argument("target", help="path of the binary to open for this call")
    for name in tool.cli_positionals:
        parser.add_argument(name, help=f"the {name} argument")
    if not tool.cli_positionals:
        parser.add_argument("input", nargs="?", help="the arguments as a JSON object (or @file.json)")
    schema = flatten_root_union(tool.input_schema)
    for name, sub in schema.get("properties", {}).items():
        if name in tool.cli_positionals or (name == "input" and not tool.cli_positionals):
            continue
        sub = sub if isinstance(sub, dict) else {}
        kind = sub.get("type")
        help_text = sub.get("description", "")
        dest = "opt_" + name
        if kind == "boolean":
            parser.add_argument(_flag(name), dest=dest, action=argparse.BooleanOptionalAction, default=None,
                                help=help_text)
        elif kind == "integer":
            parser.add_argument(_flag(name), dest=dest, type=int, help=help_text)
        elif kind == "number":
            parser.add_argument(_flag(name), dest=dest, type=float, help=help_text)
        elif kind == "string":
            parser.add_argument(_flag(name), dest=dest, choices=sub.get("enum"), help=help_text)
        elif kind == "array" and isinstance(sub.get("items"), dict) and sub["items"].get("type") == "string":
            parser.add_argument(_flag(name), dest=dest, nargs="+", help=help_text)
        else:
            parser.add_argument(_flag(name), dest=dest, type=_json_value, metavar="JSON", help=help_text + " (JSON)")
    if tool.requires_target:
        parser.add_argument("--provider", help="provider id or 'auto' (default: REA_ANALYSIS_PROVIDER, then auto)")
    parser.add_argument("--format", choices=["json", "text"], default="text")
    return parser


def _read_input(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    if text.startswith("@"):
        path = text[1:]
        try:
            with open(path, "rb") as fh:
                text = fh.read().decode()
        except OSError as exc:
            code = "access_denied" if isinstance(exc, PermissionError) else "target_unavailable"
            raise ReaError(code, f"cannot read input file {path}: {exc.strerror}",
                           details={"path": path, "reason": "unreadable"}) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReaError("invalid_request", f"input is not JSON: {exc}", details={"issues": [
            {"path": "(root)", "reason": "invalid_format", "message": str(exc)}]}) from None
    if not isinstance(value, dict):
        raise ReaError("invalid_request", "input must be a JSON object",
                       details={"issues": [{"path": "(root)", "reason": "invalid_type", "message": "expected object"}]})
    return value


def collect_arguments(tool: ToolDef, ns: argparse.Namespace) -> dict[str, Any]:
    args = _read_input(getattr(ns, "input", None))
    for name in tool.cli_positionals:
        value = getattr(ns, name)
        if name.endswith("path") or name == "path":
            value = os.path.abspath(value) if value else value
        args[name] = value
    for key, value in vars(ns).items():
        if key.startswith("opt_") and value is not None:
            args[key[4:]] = value
    return args


def run_tool(session: Session, tool: ToolDef, ns: argparse.Namespace, ctx: CallContext) -> ToolResult:
    args = collect_arguments(tool, ns)
    if tool.requires_target:
        session.open(ns.target, ns.provider, ctx)
    return invoke(session, tool, args, ctx)


def result_document(result: ToolResult) -> Any:
    if result.evidence is not None:
        return msgspec.to_builtins(result.evidence)
    return result.structured
