"""Syntactic patterns tree-sitter shows directly: names, bindings, Electron path hints, bundle wrappers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rea_plugins.javascript import syntax

if TYPE_CHECKING:
    from tree_sitter import Node


@dataclass
class PathHint:
    """A file path an Electron API receives, as far as its expression is static."""

    api: str
    base: str  # "dirname" (relative to this file), "app" (relative to the app root) or "unknown"
    value: str
    line: int


_EXPORTS_MEMBER = re.compile(r"^(?:[\w$]+\.)?exports\.([\w$]+)$")


_HOLDERS = ("object", "class", "class_declaration")


def _holder_name(node: Node | None) -> str | None:
    """The name a reader gives the value ``node``: the variable it initializes, the target it is assigned to, the
    class field or object key it is the value of (qualified by its own holder), or a class's own name."""
    if node is None:
        return None
    if node.type in ("class_declaration", "class"):
        name = node.child_by_field_name("name")
        if name is not None:
            return syntax.text(name, 60)
    parent = node.parent
    if parent is None:
        return None
    if parent.type == "parenthesized_expression":
        return _holder_name(parent)
    if parent.type == "variable_declarator":
        name = parent.child_by_field_name("name")
        return syntax.text(name, 80) if name is not None and name.type == "identifier" else None
    if parent.type == "assignment_expression":
        left = syntax.text(parent.child_by_field_name("left"), 80)
        # `module.exports.store = function () {}` is what a reader calls `store`.
        match = _EXPORTS_MEMBER.match(left)
        return match.group(1) if match else left
    if parent.type == "arguments":
        return _handler_name(parent)
    if parent.type in ("pair", "field_definition"):
        key = parent.child_by_field_name("key") or parent.child_by_field_name("property")
        base = syntax.property_name(key)
        if base is None:
            return None
        owner = parent.parent
        if owner is not None and owner.type == "class_body":
            owner = owner.parent
        holder = _holder_name(owner) if owner is not None and owner.type in _HOLDERS else None
        return f"{holder}.{base}" if holder else base
    return None


# Calls that register a handler for a named event or channel: `x.on("data", fn)`, `ipcMain.handle("search", fn)`.
EVENT_METHODS = frozenset(
    {
        "addEventListener",
        "on",
        "once",
        "handle",
        "handleOnce",
        "addListener",
        "prependListener",
        "prependOnceListener",
    }
)


def _handler_name(arguments: Node) -> str | None:
    """``addEventListener('click')`` for a function passed to ``el.addEventListener('click', ...)``: a handler is
    named by what it handles (with its owner when the owner's name is not a minifier's one or two letters)."""
    call = arguments.parent
    callee = call.child_by_field_name("function") if call is not None else None
    if callee is None or callee.type != "member_expression":
        return None
    method = syntax.text(callee.child_by_field_name("property"), 40)
    if method not in EVENT_METHODS:
        return None
    first = next((c for c in arguments.named_children if c.type != "comment"), None)
    event = syntax.string_value(first) if first is not None else None
    if event is None:
        return None
    owner = syntax.text(callee.child_by_field_name("object"), 80).rsplit(".", 1)[-1]
    head = f"{owner}.{method}" if len(owner) > 2 and owner.isidentifier() else method
    return f"{head}('{event[:60]}')"


def handler_reference(call: Node) -> str | None:
    """The handler a registration call passes by name as its second argument (``panel.onClick``, ``onClick``)."""
    arguments = call.child_by_field_name("arguments")
    if arguments is None:
        return None
    args = [c for c in arguments.named_children if c.type != "comment"]
    if len(args) < 2 or args[1].type not in ("identifier", "member_expression"):
        return None
    return syntax.text(args[1], 80)


def fn_name(node: Node) -> str:
    """The name a reader gives a function: its own, else its holder's (``Class.method``, ``Class.field``,
    ``object.key``, an assignment's target, the export name of ``module.exports.x = ...``)."""
    name = node.child_by_field_name("name")
    if name is not None and node.type != "method_definition":
        return syntax.property_name(name) or syntax.text(name, 80)
    if name is not None:
        base = syntax.property_name(name) or syntax.text(name, 80)
        owner = node.parent
        if owner is not None and owner.type == "class_body":
            owner = owner.parent
        holder = _holder_name(owner) if owner is not None and owner.type in _HOLDERS else None
        return f"{holder}.{base}" if holder else base
    return _holder_name(node) or "<anonymous>"


def fn_kind(node: Node) -> str:
    if node.type == "arrow_function":
        return "arrow"
    if node.type == "method_definition":
        return "method"
    if "generator" in node.type:
        return "generator"
    if node.type == "function_declaration":
        return "declaration"
    return "expression"


def declared_in(pattern: Node | None, out: set[str]) -> None:
    """Names bound by a parameter list or binding pattern."""
    if pattern is None:
        return
    stack = [pattern]
    while stack:
        node = stack.pop()
        if node.type in ("identifier", "shorthand_property_identifier_pattern"):
            out.add(syntax.text(node, 200))
            continue
        if node.type in ("pair_pattern",):
            value = node.child_by_field_name("value")
            if value is not None:
                stack.append(value)
            continue
        if node.type == "assignment_pattern":
            left = node.child_by_field_name("left")
            if left is not None:
                stack.append(left)
            continue
        stack.extend(node.named_children)


def binding_names(call: Node) -> list[str]:
    """What ``const {a, b: c} = require(x)`` or ``const m = require(x)`` binds, in import-name form."""
    parent = call.parent
    if parent is None or parent.type != "variable_declarator":
        return []
    pattern = parent.child_by_field_name("name")
    if pattern is None:
        return []
    if pattern.type == "identifier":
        return [f"* as {syntax.text(pattern, 80)}"]
    names: list[str] = []
    if pattern.type == "object_pattern":
        for child in pattern.named_children:
            if child.type == "shorthand_property_identifier_pattern":
                names.append(syntax.text(child, 80))
            elif child.type == "pair_pattern":
                key = syntax.property_name(child.child_by_field_name("key"))
                value = child.child_by_field_name("value")
                if key is not None and value is not None and value.type == "identifier":
                    names.append(f"{key} as {syntax.text(value, 80)}")
    return names


def unparenthesized(node: Node | None) -> Node | None:
    while node is not None and node.type == "parenthesized_expression" and node.named_children:
        node = next((c for c in node.named_children if c.type != "comment"), None)
    return node


def region_container(root: Node) -> Node:
    """Where a bundle's modules sit: the program, or the body of one top-level IIFE (esbuild's iife)."""
    statements = [
        c
        for c in root.named_children
        if c.type != "comment"
        and not (c.type == "expression_statement" and c.named_children and c.named_children[0].type == "string")
    ]
    if len(statements) != 1 or statements[0].type != "expression_statement" or not statements[0].named_children:
        return root
    call = statements[0].named_children[0]
    if call.type == "unary_expression" and call.named_children:
        call = call.named_children[-1]
    if call.type != "call_expression":
        return root
    callee = call.child_by_field_name("function")
    while callee is not None and callee.type == "parenthesized_expression" and callee.named_children:
        callee = callee.named_children[0]
    if callee is None or callee.type not in ("arrow_function", "function_expression", "function"):
        return root
    body = callee.child_by_field_name("body")
    return body if body is not None and body.type == "statement_block" else root


def path_hint(api: str, expr: Node | None, ln: int) -> PathHint | None:
    if expr is None:
        return None
    value = syntax.string_value(expr)
    if value is not None:
        return PathHint(api, "app", value, ln)
    if expr.type == "call_expression":
        callee = syntax.text(expr.child_by_field_name("function"), 40)
        args = expr.child_by_field_name("arguments")
        parts = [c for c in (args.named_children if args is not None else []) if c.type != "comment"]
        if callee.endswith(("join", "resolve")) and parts:
            base = "app"
            if syntax.text(parts[0]) == "__dirname":
                base, parts = "dirname", parts[1:]
            literal = [syntax.string_value(p) for p in parts]
            if all(v is not None for v in literal):
                return PathHint(api, base, "/".join(v for v in literal if v), ln)
    if expr.type == "binary_expression":
        left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
        tail = syntax.string_value(right) if right is not None else None
        if left is not None and syntax.text(left) == "__dirname" and tail is not None:
            return PathHint(api, "dirname", tail.lstrip("/"), ln)
    if expr.type == "template_string":
        raw = syntax.text(expr, 1000)[1:-1]
        match = re.fullmatch(r"(?:file://)?\$\{__dirname\}/?([^$`]*)", raw)
        if match:
            return PathHint(api, "dirname", match.group(1), ln)
    return PathHint(api, "unknown", syntax.text(expr, 120), ln)


_SMU = re.compile(rb"[#@][ \t]*sourceMappingURL=([^\s'\"`]+)[ \t]*(?:\*/)?[ \t]*$")


def source_mapping_url(data: bytes) -> str | None:
    """The last ``//# sourceMappingURL=`` comment of a file (only trailing lines count)."""
    pos = data.rfind(b"sourceMappingURL=")
    if pos < 0:
        return None
    start = data.rfind(b"\n", 0, pos) + 1
    end = data.find(b"\n", pos)
    line_bytes = data[start:] if end < 0 else data[start:end]
    if data[end + 1 :].strip() if end >= 0 else False:
        return None
    match = _SMU.search(line_bytes.rstrip(b"\r"))
    if match is None:
        return None
    return match.group(1).decode("utf-8", "replace")
