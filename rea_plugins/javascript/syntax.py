"""tree-sitter access: grammars by file type, node text, JavaScript string values and static shapes."""

from __future__ import annotations

import functools
import re
import sys
import threading
from importlib import metadata
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal

from rea.plugin import JSONValue

if TYPE_CHECKING:
    from tree_sitter import Node
    from tree_sitter import Parser

Language = Literal["javascript", "typescript", "tsx"]

JS_EXTENSIONS = (".js", ".mjs", ".cjs", ".jsx")
TS_EXTENSIONS = (".ts", ".mts", ".cts")
TSX_EXTENSIONS = (".tsx",)
SOURCE_EXTENSIONS = JS_EXTENSIONS + TS_EXTENSIONS + TSX_EXTENSIONS

MAX_TEXT = 160
SHAPE_DEPTH = 3
SHAPE_KEYS = 64

FUNCTION_TYPES = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "function_expression",
        "function",
        "generator_function",
        "arrow_function",
        "method_definition",
    }
)


def is_node_script(head: bytes) -> bool:
    """A file whose first line is a ``#!`` line running node (``#!/usr/bin/env node``): JavaScript, whatever its
    name (mocha's ``bin/_mocha``)."""
    first = head.split(b"\n", 1)[0]
    return first.startswith(b"#!") and b"node" in first


def language_of(path: str) -> Language | None:
    lower = path.lower()
    if lower.endswith(".d.ts"):
        return None
    if lower.endswith(TSX_EXTENSIONS):
        return "tsx"
    if lower.endswith(TS_EXTENSIONS):
        return "typescript"
    if lower.endswith(JS_EXTENSIONS):
        return "javascript"
    return None


@functools.cache
def grammar(language: Language) -> Any:
    """The tree-sitter ``Language`` of a grammar (loaded once)."""
    import tree_sitter

    if language == "javascript":
        import tree_sitter_javascript

        return tree_sitter.Language(tree_sitter_javascript.language())
    import tree_sitter_typescript

    raw = (
        tree_sitter_typescript.language_typescript()
        if language == "typescript"
        else tree_sitter_typescript.language_tsx()
    )
    return tree_sitter.Language(raw)


_PARSERS = threading.local()


def parser_for(language: Language) -> Parser:
    """A parser for ``language`` owned by this thread (parsers are not thread-safe; grammars are shared).

    Grammars load on first use, so importing the plugin stays cheap.
    """
    import tree_sitter

    cache: dict[str, Parser] = _PARSERS.__dict__.setdefault("parsers", {})
    parser = cache.get(language)
    if parser is None:
        parser = cache[language] = tree_sitter.Parser(grammar(language))
    return parser


def grammar_versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for dist in ("tree-sitter", "tree-sitter-javascript", "tree-sitter-typescript"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "unknown"
    return out


def text(node: Node | None, limit: int = MAX_TEXT) -> str:
    """A node's source text, at most ``limit`` characters (then ``…``); interned, as every name read from a tree is:
    the same callee, parameter or target recurs thousands of times in an application's records."""
    if node is None:
        return ""
    data = node.text  # a copy of the node's bytes: read once
    if data is None:
        return ""
    raw = data.decode("utf-8", "replace")
    if len(raw) > limit:
        raw = raw[:limit] + "…"
    return sys.intern(raw)


# Line numbers are shared: a graph holds about 260,000 of them past CPython's small ints, most repeating (7.4 MiB of
# int objects on the npm tree). The table holds each number up to the highest asked for, within this bound;
# ``release_lines`` empties it once a graph is built (its records keep the numbers they hold).
MAX_SHARED_LINE = 1 << 17
_LINES: list[int] = []


def shared_line(number: int) -> int:
    """``number`` (at least 1) as the one int object every record of this line holds (while the table holds it)."""
    lines = _LINES
    try:
        shared = lines[number]
    except IndexError:
        if number >= MAX_SHARED_LINE:
            return number
        lines.extend(range(len(lines), number + 1))
        try:
            shared = lines[number]
        except IndexError:
            return number
    # Analyses in other threads fill and empty the same table: an entry another one misplaced is never used.
    return shared if shared == number else number


def release_lines() -> None:
    _LINES.clear()


def line(node: Node) -> int:
    return shared_line(node.start_point[0] + 1)


def end_line(node: Node) -> int:
    return shared_line(node.end_point[0] + 1)


_ESCAPE = re.compile(r"\\(u\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|\r\n|[\s\S])")
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0", "\n": "", "\r\n": ""}


def _unescape(match: re.Match[str]) -> str:
    body = match.group(1)
    if body.startswith("u{"):
        code = int(body[2:-1], 16)
        return chr(code) if code <= 0x10FFFF else ""
    if body[0] in "ux" and len(body) > 1:
        return chr(int(body[1:], 16))
    return _SIMPLE.get(body, body)


def string_value(node: Node) -> str | None:
    """The value of a string literal or a substitution-free template; ``None`` for anything else."""
    kind = node.type
    if kind == "template_string":
        if any(c.type == "template_substitution" for c in node.children):
            return None
    elif kind != "string":
        return None
    # Not interned whole: only what a record keeps of it is.
    return _unescaped((node.text or b"").decode("utf-8", "replace")[1:-1])


def _unescaped(raw: str) -> str:
    """A literal's text with its escapes resolved; as written when that leaves a lone surrogate (from a
    ``\\uD800``-style escape), which cannot be encoded."""
    if "\\" not in raw:
        return raw
    value = _ESCAPE.sub(_unescape, raw)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return raw
    return value


def template_text(node: Node) -> str | None:
    """A template literal with substitutions as its static text, each substitution written ``${…}``; ``None`` when
    it has no static text (only substitutions) or is not a template."""
    if node.type != "template_string":
        return None
    parts: list[str] = []
    data = node.text or b""
    start = int(node.start_byte)
    cursor = int(node.start_byte) + 1
    for child in node.children:
        if child.type == "template_substitution":
            parts.append(data[cursor - start : int(child.start_byte) - start].decode("utf-8", "replace"))
            parts.append("${…}")
            cursor = int(child.end_byte)
    parts.append(data[cursor - start : len(data) - 1].decode("utf-8", "replace"))
    raw = "".join(parts)
    static = any(p and p != "${…}" for p in parts)
    return _unescaped(raw) if static else None


def _first_named(node: Node) -> Node | None:
    """A node's first named child that is not a comment (without building the list of all of them)."""
    if not node.named_child_count:
        return None
    first = node.named_child(0)
    if first is None or first.type != "comment":
        return first
    return next((c for c in node.named_children if c.type != "comment"), None)


def first_string_argument(call: Node) -> tuple[str | None, Node | None]:
    """The literal first argument of a call, and that argument node (literal or not)."""
    args = call.child_by_field_name("arguments")
    first = _first_named(args) if args is not None else None
    if first is None:
        return None, None
    return string_value(first), first


def property_name(node: Node | None) -> str | None:
    if node is None:
        return None
    if node.type in (
        "property_identifier",
        "identifier",
        "private_property_identifier",
        "shorthand_property_identifier",
        "number",
    ):
        return text(node)
    if node.type in ("string", "template_string"):
        return string_value(node)
    if node.type == "computed_property_name":
        return "[" + text(node)[1:-1] + "]"
    return None


def param_names(params: Node | None) -> list[str]:
    """Parameter names as written (patterns keep their source text)."""
    if params is None:
        return []
    if params.type == "identifier":
        return [text(params)]
    out: list[str] = []
    for child in params.named_children:
        if child.type == "comment":
            continue
        if child.type in ("required_parameter", "optional_parameter"):
            pattern = child.child_by_field_name("pattern")
            out.append(text(pattern or child, 60))
        else:
            out.append(text(child, 60))
    return out


def function_params(fn: Node) -> list[str]:
    params = fn.child_by_field_name("parameters") or fn.child_by_field_name("parameter")
    return param_names(params)


def is_async(fn: Node) -> bool:
    return any(c.type == "async" for c in fn.children)


# Shapes that say only their type, and those of an operator or an unknown node kind, are shared: shapes are values,
# never changed once built (only a function's and an object's shape are completed, and those are made fresh), and a
# graph holds tens of thousands of each (about 12 MiB on the npm tree, references and calls below included).
# A value's shape as the analysis reads it ({"type": "object", "keys": {...}}, shapes inside shapes to any depth):
# JSON of its own making, but recursive and open-ended, so typed as JSON rather than as one Struct.
Shape = dict[str, JSONValue]

UNDEFINED: Shape = {"type": "undefined"}
UNKNOWN: Shape = {"type": "unknown"}
_LEAVES: dict[str, Shape] = {
    "undefined": UNDEFINED,
    "unknown": UNKNOWN,
    **{t: {"type": t} for t in ("string", "number", "boolean", "null", "regexp")},
}
_OPERATORS: dict[str, Shape] = {}
_UNKNOWN_KINDS: dict[str, Shape] = {}
# A reference's and a call's shape name what the source names (`require`, `exports`, `Object.keys`...): shared too,
# while the cache holds at most this many names (it starts again past it).
_NAMED_MAX = 1 << 14
_REFERENCES: dict[str, Shape] = {}
_CALLS: dict[str, Shape] = {}


def _shared(cache: dict[str, Shape], key: str, make: Shape) -> Shape:
    found = cache.get(key)
    if found is None:
        if len(cache) >= _NAMED_MAX:
            cache.clear()
        found = cache[key] = make
    return found


def shape_of(node: Node | None, depth: int = 0) -> Shape:
    """The static shape of an expression: its type and, bounded, its keys, params and members."""
    if node is None:
        return UNDEFINED
    kind = node.type
    while kind in ("parenthesized_expression", "as_expression", "satisfies_expression", "non_null_expression"):
        inner = node.named_children[0] if node.named_children else None
        if inner is None:
            break
        node, kind = inner, inner.type
    if kind in ("string", "template_string"):
        return _LEAVES["string"]
    if kind == "number":
        return _LEAVES["number"]
    if kind in ("true", "false"):
        return _LEAVES["boolean"]
    if kind == "null":
        return _LEAVES["null"]
    if kind == "undefined" or (kind == "identifier" and text(node) == "undefined"):
        return UNDEFINED
    if kind == "regex":
        return _LEAVES["regexp"]
    if kind == "array":
        return {"type": "array", "length": len([c for c in node.named_children if c.type != "comment"])}
    if kind == "object":
        return _object_shape(node, depth)
    if kind in FUNCTION_TYPES:
        return {"type": "function", "params": list[JSONValue](function_params(node)), "async": is_async(node)}
    if kind in ("class", "class_declaration"):
        return class_shape(node)
    if kind == "identifier" or kind == "member_expression":
        name = text(node) if kind == "identifier" else text(node, 80)
        return _shared(_REFERENCES, name, {"type": "reference", "name": name})
    if kind == "call_expression":
        callee = text(node.child_by_field_name("function"), 80)
        return _shared(_CALLS, callee, {"type": "call", "callee": callee})
    if kind == "new_expression":
        return {"type": "instance", "class": text(node.child_by_field_name("constructor"), 80)}
    if kind == "await_expression":
        inner = node.named_children[0] if node.named_children else None
        return {"type": "await", "value": shape_of(inner, depth + 1) if depth < SHAPE_DEPTH else UNKNOWN}
    if kind in ("binary_expression", "unary_expression", "update_expression"):
        operator = text(node.child_by_field_name("operator"), 8)
        return _shared(_OPERATORS, operator, {"type": "expression", "operator": operator})
    if kind == "ternary_expression":
        # Both arms: `run = parallel ? A : B` may be either.
        arms = [node.child_by_field_name("consequence"), node.child_by_field_name("alternative")]
        return {
            "type": "conditional",
            "candidates": [shape_of(a, depth + 1) if depth < SHAPE_DEPTH and a is not None else UNKNOWN for a in arms],
        }
    return _shared(_UNKNOWN_KINDS, kind, {"type": "unknown", "node": kind})


# An identifier, or a chain of properties each within the 40 characters a link is read to (ASCII names only).
_PLAIN_CHAIN = re.compile(rb"[\w$]+(?:\.(?:#[\w$]{1,39}|[\w$]{1,40}))*")


def callee_name(callee: Node) -> str:
    """A call's callee as read: ``a.b.c``, or for a chain ``yargs.command().command().option``, at most 120
    characters, the middle elided (each link of a chain is a call of its own, named up to its method)."""
    raw = callee.text or b""
    if len(raw) <= 80 and _PLAIN_CHAIN.fullmatch(raw):
        # `a.b.c` as written, no call, space or comment in it: the text is the name the walk below would build.
        return sys.intern(raw.decode())
    links: list[str] = []
    node: Node | None = callee
    while node is not None and node.type == "member_expression" and len(links) < 32:
        links.append(text(node.child_by_field_name("property"), 40))
        inner = node.child_by_field_name("object")
        if inner is not None and inner.type == "call_expression":
            links[-1] = "()." + links[-1]
            node = inner.child_by_field_name("function")
        else:
            links[-1] = "." + links[-1]
            node = inner
    root = text(node, 80) if node is not None else ""
    name = root + "".join(reversed(links))
    # A long chain keeps its start and, above all, its end: the method this call is.
    return sys.intern(name if len(name) <= 120 else name[:20] + "…" + name[-99:])


def first_argument(call: Node) -> str | None:
    """A call's first argument: a string's value, else its source text, at most 80 characters."""
    args = call.child_by_field_name("arguments")
    first = _first_named(args) if args is not None else None
    if first is None:
        return None
    value = string_value(first) if first.type in ("string", "template_string") else None
    return sys.intern((value if value is not None else text(first, 80))[:80])


def _object_shape(node: Node, depth: int) -> Shape:
    keys: dict[str, Shape] = {}
    spread = False
    for child in node.named_children:
        if child.type == "spread_element":
            spread = True
            continue
        if child.type == "pair":
            name = property_name(child.child_by_field_name("key"))
            value = child.child_by_field_name("value")
        elif child.type == "method_definition":
            name = property_name(child.child_by_field_name("name"))
            value = child
        elif child.type == "shorthand_property_identifier":
            name = text(child)
            value = None
        else:
            continue
        if name is None or len(keys) >= SHAPE_KEYS:
            continue
        if value is None:
            keys[name] = {"type": "reference", "name": name}
        elif depth < SHAPE_DEPTH:
            keys[name] = shape_of(value, depth + 1)
        else:
            keys[name] = UNKNOWN
    return {"type": "object", "properties": dict(sorted(keys.items())), "spread": spread}


def class_shape(node: Node) -> Shape:
    methods: list[str] = []
    fields: list[str] = []
    heritage = ""
    for child in node.named_children:
        if child.type == "class_heritage":
            heritage = text(child, 80)
        if child.type == "class_body":
            for member in child.named_children:
                name = property_name(member.child_by_field_name("name") or member.child_by_field_name("property"))
                if name is None:
                    continue
                (methods if member.type == "method_definition" else fields).append(name)
    return {
        "type": "class",
        "extends": heritage,
        "methods": list[JSONValue](sorted(set(methods))),
        "fields": list[JSONValue](sorted(set(fields))),
    }
