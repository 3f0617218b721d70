"""One pass over a tree-sitter tree: imports, exports, strings, functions and bundled-module regions."""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any

from rea.plugin import CallContext
from rea.plugin import JSONValue
from rea_plugins.javascript import patterns
from rea_plugins.javascript import syntax
from rea_plugins.javascript.model import EMPTY
from rea_plugins.javascript.model import Assignment
from rea_plugins.javascript.model import CallSite
from rea_plugins.javascript.model import Diagnostic
from rea_plugins.javascript.model import ExportRecord
from rea_plugins.javascript.model import FunctionRecord
from rea_plugins.javascript.model import IpcRecord
from rea_plugins.javascript.model import ReturnSite
from rea_plugins.javascript.model import Span
from rea_plugins.javascript.model import StringLiteral
from rea_plugins.javascript.model import StringSet
from rea_plugins.javascript.patterns import PathHint
from rea_plugins.javascript.syntax import Shape

if TYPE_CHECKING:
    from tree_sitter import Node
    from tree_sitter import Tree

# Unique strings listed per module; past it the module says how many it holds (a diagnostic, coverage 'string_bounds').
MAX_STRINGS = 10_000
MAX_STRING_CHARS = 512
MAX_FUNCTIONS = 2000
MAX_PER_FUNCTION = 200
MAX_RETURNS = 32
MAX_CAPTURES = 64
MAX_DIAGNOSTICS = 20
MAX_IMPORTS = 2000
CHECK_EVERY = 4096

# esbuild heads every module's code with a `// <path>` comment at top level.
_PATH_COMMENT = re.compile(r"^// ((?:[\w@.+~-]+/)*[\w@.+~-]+\.(?:[cm]?[jt]sx?|json|css|node|vue|svelte))$")
_WRAPPERS = frozenset({"__commonJS", "__esm"})
_ESBUILD_RUNTIME = frozenset({"__commonJS", "__esm", "__export", "__toESM", "__toCommonJS", "__copyProps"})
_INTERESTING = (
    frozenset(
        {
            "identifier",
            "string",
            "template_string",
            "call_expression",
            "new_expression",
            "import_statement",
            "export_statement",
            "assignment_expression",
            "return_statement",
            "variable_declarator",
            "class_declaration",
            "pair",
            "object",
            "statement_block",
            "shorthand_property_identifier",
        }
    )
    | syntax.FUNCTION_TYPES
)
# Leaves that hold no fact: never pushed on the walk's stack.
_LEAVES = frozenset(
    {
        "property_identifier",
        "number",
        "comment",
        "regex",
        "true",
        "false",
        "null",
        "undefined",
        "this",
        "super",
        "string_fragment",
        "escape_sequence",
        "private_property_identifier",
        "statement_identifier",
        "empty_statement",
        "hash_bang_line",
        "predefined_type",
        "type_identifier",
    }
)
# Electron's IPC surface: channels the main process serves and the preload/renderer side calls.
_IPC_OBJECTS = frozenset({"ipcMain", "ipcRenderer", "contextBridge", "webContents"})
_IPC_METHODS = frozenset(
    {
        "handle",
        "handleOnce",
        "on",
        "once",
        "invoke",
        "send",
        "sendSync",
        "sendTo",
        "postMessage",
        "exposeInMainWorld",
        "removeHandler",
    }
)
MAX_IPC = 256
# A node with more named children than this (a 2-million-element array literal on one line) is walked a chunk at
# a time through a cursor: never every child as a Python object at once.
CHUNK = 1024


class _Chunk:
    """The children of one large node still to walk, from a tree cursor, pushed ``CHUNK`` at a time."""

    type = "#chunk"
    kind_id = -1  # no grammar's: the walk's kind dispatch tells a chunk from a node by it
    __slots__ = ("cursor", "more")

    def __init__(self, node: Node) -> None:
        self.cursor = node.walk()
        self.more = self.cursor.goto_first_child()

    def push(self, stack: list[Any], fn: int, unit: int) -> None:
        batch: list[Node] = []
        cursor = self.cursor
        while self.more and len(batch) < CHUNK:
            child = cursor.node
            if child is not None and child.is_named and child.type not in _LEAVES:
                batch.append(child)
            self.more = cursor.goto_next_sibling()
        if self.more:
            stack.append((self, fn, unit))
        stack.extend((child, fn, unit) for child in reversed(batch))


def _detached(node: Node) -> Node:
    """``node`` as an object of its own, which caches no children: one the walk descends holds its whole subtree."""
    return node.walk().node or node


_WEBPACK_MARKERS = (b"__webpack_require__", b"webpackChunk", b"__webpack_modules__")


@functools.cache
def _kind_ids(language: syntax.Language) -> tuple[frozenset[int], frozenset[int], frozenset[int], frozenset[int]]:
    """The grammar's symbol ids of identifiers, of the kinds ``_visit`` reads, of ``_LEAVES`` and of objects: the walk's
    hot loop compares small integers, not the type names tree-sitter builds a string for on every access."""
    grammar = syntax.grammar(language)
    names = {i: grammar.node_kind_for_id(i) for i in range(grammar.node_kind_count)}

    def ids(kinds: frozenset[str]) -> frozenset[int]:
        return frozenset(i for i, name in names.items() if name in kinds)

    # A shorthand property (`{a}`) references its name as an identifier does.
    return (
        ids(frozenset({"identifier", "shorthand_property_identifier"})),
        ids(_INTERESTING),
        ids(_LEAVES),
        ids(frozenset({"object"})),
    )


@dataclass
class PendingImport:
    kind: str
    specifier: str | None
    line: int
    names: list[str] = field(default_factory=list)
    expression: str = ""


@dataclass
class PendingExport:
    name: str
    kind: str
    line: int
    value: Node | None = None
    local: str | None = None
    source: str | None = None


@dataclass
class FunctionBuilder:
    node_id: str
    name: str
    kind: str
    line: int
    end_line: int
    params: list[str]
    is_async: bool
    parent: int | None
    unit: int
    start_byte: int
    end_column: int = 0
    calls: list[CallSite] = field(default_factory=list)
    returns: list[tuple[int, Node | None]] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)
    declared: set[str] = field(default_factory=set)
    referenced: set[bytes] = field(default_factory=set)
    truncated: bool = False


@dataclass
class Unit:
    """The file itself (index 0) or one bundled module region inside it."""

    path: str
    ranges: list[list[int]] = field(default_factory=list)
    imports: list[PendingImport] = field(default_factory=list)
    exports: list[PendingExport] = field(default_factory=list)
    strings: dict[str, StringLiteral] = field(default_factory=dict)
    functions: list[int] = field(default_factory=list)
    hints: list[PathHint] = field(default_factory=list)
    ipc: list[IpcRecord] = field(default_factory=list)
    uses_electron: bool = False
    require_name: str | None = None
    # Bundlers rename CommonJS's `exports` / `module` parameters (esbuild: exports2, module2).
    exports_aliases: set[str] = field(default_factory=lambda: {"exports", "module.exports"})


@dataclass
class FileFacts:
    units: list[Unit]
    functions: list[FunctionRecord]
    function_unit: list[int]
    exports: list[list[ExportRecord]]
    strings: list[StringSet]
    diagnostics: list[Diagnostic]
    bundle_format: str | None
    unit_edges: list[tuple[int, int, str, str, int]]  # (from unit, to unit, kind, name, line)
    source_mapping_url: str | None
    truncated: bool


class _Walker:
    def __init__(
        self, path: str, data: bytes, ctx: CallContext | None, language: syntax.Language = "javascript"
    ) -> None:
        self.path = path
        self.language = language
        self.data = data
        self.ctx = ctx
        self.units: list[Unit] = [Unit(path=path)]
        self.unit_index: dict[str, int] = {}
        self.fns: list[FunctionBuilder] = []
        # Each function's referenced names, None for a module body (which captures nothing): the hot loop's view.
        self.refs: list[set[bytes] | None] = []
        self.fn_by_start: dict[int, int] = {}
        self.diagnostics: list[Diagnostic] = []
        self.toplevel: dict[str, tuple[int, Node]] = {}
        # Declarations at each unit's module level (bundled modules declare inside their wrapper).
        self.unit_decls: list[dict[str, Node]] = [{}]
        self.wrapper_names: dict[str, int] = {}
        self.wrapper_bodies: set[int] = set()
        self.bare_calls: list[tuple[int, str, int]] = []
        self.webpack_calls: list[tuple[int, str, int]] = []
        self.bundle_format: str | None = None
        self.webpack = any(m in data for m in _WEBPACK_MARKERS)
        self.truncated = False

    # -- units --------------------------------------------------------------------------

    def unit_for(self, bundled_path: str, node: Node, *, extend: bool = False) -> int:
        """The unit of a bundled path; ``extend`` grows its last line range instead of opening one."""
        idx = self.unit_index.get(bundled_path)
        if idx is None:
            idx = len(self.units)
            self.units.append(Unit(path=bundled_path))
            self.unit_decls.append({})
            self.unit_index[bundled_path] = idx
        ranges = self.units[idx].ranges
        start, end = syntax.line(node), syntax.end_line(node)
        if extend and ranges:
            ranges[-1][1] = max(ranges[-1][1], end)
        else:
            ranges.append([start, end])
        return idx

    def new_function(self, node: Node, parent: int | None, unit: int, kind: str | None = None) -> int:
        name = "<module>" if kind == "module-body" else patterns.fn_name(node)
        index = len(self.fns)
        owner = self.units[unit].path if unit else self.path
        module_path = self.path if unit == 0 else f"{self.path}!{owner}"
        body = kind == "module-body"
        row, column = node.start_point
        params = None if body else node.child_by_field_name("parameters") or node.child_by_field_name("parameter")
        builder = FunctionBuilder(
            node_id=f"fn:{module_path}#{name}@{row + 1}:{column + 1}",
            name=name,
            kind=kind or patterns.fn_kind(node),
            line=syntax.shared_line(row + 1),
            end_line=syntax.end_line(node),
            params=syntax.param_names(params),
            is_async=not body and syntax.is_async(node),
            parent=parent,
            unit=unit,
            start_byte=int(node.start_byte),
            end_column=0 if body else int(node.end_point[1]) + 1,
        )
        if not body:
            patterns.declared_in(params, builder.declared)
        self.fns.append(builder)
        self.refs.append(None if builder.kind == "module-body" else builder.referenced)
        self.fn_by_start.setdefault(int(node.start_byte), index)
        self.units[unit].functions.append(index)
        return index

    # -- the walk -----------------------------------------------------------------------

    def run(self, tree: Tree) -> None:
        root = tree.root_node
        self.module_fns: dict[int, int] = {0: self.new_function(root, None, 0, "module-body")}
        container = patterns.region_container(root)
        self.regions = self._esbuild_regions(container)
        self.container_key = (int(container.start_byte), int(container.end_byte), container.type)
        stack: list[tuple[Any, int, int]] = []
        if container is root:
            self._push_regions(root, self.module_fns[0], stack)
        else:
            stack.extend((child, self.module_fns[0], 0) for child in reversed(root.children))
        # A node caches the children it was asked for, so one held here would hold every node the walk reaches
        # under it (all of a file's nodes, 25 MiB for a 450 KiB script) until the walk ends: each walked node goes
        # once its children are on the stack, and what is kept for later is a node of its own (``_detached``).
        del root, container
        # The hot loop: identifiers and fact-free nodes (most of a tree) are handled inline, by symbol id, and an
        # identifier is read as its parent's children are pushed: it never takes a trip through the stack.
        identifier, interesting, leaves, objects = _kind_ids(self.language)
        skip = identifier | leaves
        if not self.webpack:
            # Object literals are read only as webpack's module map.
            interesting = interesting - objects
        # A statement block holds no fact of its own: only the bundle's container (an IIFE's body) is visited.
        block = syntax.grammar(self.language).id_for_node_kind("statement_block", True)
        container_start = self.container_key[0]
        pop, append, extend, refs, visit = stack.pop, stack.append, stack.extend, self.refs, self._visit
        # A chunk of a large node's children (kind -1) is unpacked where the kinds that hold facts are.
        interesting = interesting | {-1}
        ctx = self.ctx
        visited = 0
        while stack:
            node, fn, unit = pop()
            kind = node.kind_id
            if kind in interesting:
                if kind in identifier:
                    # Only nested functions can capture; module bodies need no reference set.
                    referenced = refs[fn]
                    if referenced is not None:
                        referenced.add(node.text or b"")
                    continue
                if kind != block or node.start_byte == container_start:
                    visited += 1
                    if ctx is not None and not visited % CHECK_EVERY:
                        ctx.check("parsing JavaScript")
                    if kind == -1:
                        node.push(stack, fn, unit)
                        continue
                    inner = visit(node, fn, unit, stack)
                    if inner is None:
                        continue
                    fn, unit = inner
            # Descend through named children only (tokens hold no fact).
            if node.named_child_count > CHUNK:
                append((_Chunk(node), fn, unit))
                continue
            children = node.named_children
            if not children:
                continue
            referenced = refs[fn]
            if referenced is None:
                extend([(child, fn, unit) for child in reversed(children) if child.kind_id not in skip])
                continue
            for child in reversed(children):
                child_kind = child.kind_id
                if child_kind in identifier:
                    referenced.add(child.text or b"")
                elif child_kind not in leaves:
                    append((child, fn, unit))

    def _push_regions(self, container: Node, fn: int, stack: list[tuple[Node, int, int]]) -> None:
        """Push the statements of the bundle's top level, each with the bundled module it belongs to."""
        pending: list[tuple[Node, int, int]] = []
        current = 0
        for child in container.children:
            if child.type == "comment" and self.regions:
                match = _PATH_COMMENT.match(syntax.text(child, 400))
                if match:
                    current = self.unit_for(match.group(1), child)
                    continue
            if current and current not in self.module_fns:
                self.module_fns[current] = self.new_function(child, None, current, "module-body")
            if current:
                self.unit_for(self.units[current].path, child, extend=True)
            self._note_toplevel(child, current)
            pending.append((child, self.module_fns[current] if current else fn, current))
        stack.extend(reversed(pending))

    def _esbuild_regions(self, root: Node) -> bool:
        paths: set[str] = set()
        runtime = False
        for child in root.children:
            if child.type == "comment":
                match = _PATH_COMMENT.match(syntax.text(child, 400))
                if match:
                    paths.add(match.group(1))
            elif child.type in ("variable_declaration", "lexical_declaration"):
                for decl in child.named_children:
                    name = decl.child_by_field_name("name")
                    if decl.type == "variable_declarator" and syntax.text(name) in _ESBUILD_RUNTIME:
                        runtime = True
        found = len(paths) >= 2 or (bool(paths) and runtime)
        if found:
            self.bundle_format = "esbuild"
        return found

    def _note_toplevel(self, node: Node, unit: int) -> None:
        target = node.child_by_field_name("declaration") if node.type == "export_statement" else node
        if target is None:
            return
        if target.type in ("function_declaration", "generator_function_declaration", "class_declaration"):
            name = target.child_by_field_name("name")
            if name is not None:
                key = syntax.text(name, 200)
                if key not in self.toplevel:
                    self.toplevel[key] = (unit, _detached(target))
        elif target.type in ("variable_declaration", "lexical_declaration"):
            for decl in target.named_children:
                if decl.type == "variable_declarator":
                    name = decl.child_by_field_name("name")
                    value = decl.child_by_field_name("value")
                    if name is not None and name.type == "identifier" and value is not None:
                        self.toplevel.setdefault(syntax.text(name, 200), (unit, value))

    def _visit(self, node: Node, fn: int, unit: int, stack: list[tuple[Node, int, int]]) -> tuple[int, int] | None:
        """Read a node's facts; the function and unit its children belong to, or None when they are pushed here
        (or hold none)."""
        kind = node.type
        if kind == "string":
            self._string(node, unit)
            return None
        if kind == self.container_key[2] and (int(node.start_byte), int(node.end_byte), kind) == self.container_key:
            self._push_regions(node, fn, stack)
            return None
        child_fn = fn
        child_unit = unit
        if kind == "template_string":
            self._string(node, unit)
        elif kind in syntax.FUNCTION_TYPES:
            if kind in ("function_declaration", "generator_function_declaration"):
                # A module body's own declarations serve shapes; a function's serve captures (module bodies have none).
                if self.refs[fn] is None:
                    decls = self.unit_decls[unit]
                    declared = patterns.fn_name(node)
                    if declared not in decls:
                        decls[declared] = _detached(node)
                else:
                    self.fns[fn].declared.add(patterns.fn_name(node))
            if len(self.fns) < MAX_FUNCTIONS:
                if int(node.start_byte) in self.wrapper_bodies:
                    child_fn = self.new_function(node, None, unit, "module-body")
                else:
                    child_fn = self.new_function(node, fn, unit)
                if kind == "arrow_function":
                    body = node.child_by_field_name("body")
                    if body is not None and body.type != "statement_block":
                        self.fns[child_fn].returns.append((syntax.line(body), body))
            else:
                self.truncated = True
        elif kind == "call_expression":
            child_unit = self._call(node, fn, unit)
        elif kind == "new_expression":
            self._add_call(
                fn,
                sys.intern("new " + syntax.text(node.child_by_field_name("constructor"), 80)),
                node,
                syntax.line(node),
            )
        elif kind == "import_statement":
            self._import(node, unit)
        elif kind == "export_statement":
            self._export(node, unit)
        elif kind == "assignment_expression":
            self._assignment(node, fn, unit)
        elif kind == "return_statement":
            builder = self.fns[fn]
            if len(builder.returns) < MAX_RETURNS:
                value = node.named_child(0) if node.named_child_count else None
                builder.returns.append((syntax.line(node), value))
        elif kind == "variable_declarator":
            name_node = node.child_by_field_name("name")
            if self.refs[fn] is not None:
                patterns.declared_in(name_node, self.fns[fn].declared)
            elif name_node is not None and name_node.type == "identifier":
                value = node.child_by_field_name("value")
                if value is not None:
                    self.unit_decls[unit].setdefault(syntax.text(name_node, 200), value)
        elif kind == "class_declaration":
            name = node.child_by_field_name("name")
            if name is not None and self.refs[fn] is not None:
                self.fns[fn].declared.add(syntax.text(name, 200))
        elif kind == "pair":
            key = syntax.property_name(node.child_by_field_name("key"))
            if key == "preload":
                hint = patterns.path_hint("preload", node.child_by_field_name("value"), syntax.line(node))
                if hint is not None:
                    self.units[unit].hints.append(hint)
        elif kind == "object" and self.webpack:
            self._webpack_map(node, fn, unit, stack)
            return None
        return child_fn, child_unit

    def diagnose(self, root: Node) -> None:
        """Syntax errors and missing tokens, searching only subtrees that contain one."""
        stack = [root]
        while stack and len(self.diagnostics) < MAX_DIAGNOSTICS:
            node = stack.pop()
            if node.is_missing or node.type == "ERROR":
                missing = bool(node.is_missing)
                self.diagnostics.append(
                    Diagnostic(
                        kind="missing-node" if missing else "parse-error",
                        message=f"missing {node.type}" if missing else f"syntax error near {syntax.text(node, 40)!r}",
                        line=syntax.line(node),
                        column=int(node.start_point[1]) + 1,
                    )
                )
                continue
            stack.extend(c for c in reversed(node.children) if c.has_error or c.is_missing)

    def _string(self, node: Node, unit: int) -> None:
        value = syntax.string_value(node)
        template = False
        if value is None:
            # A template with substitutions is indexed by its static text (`Hello, ${…}!`).
            value = syntax.template_text(node)
            template = True
            if value is None:
                return
        strings = self.units[unit].strings
        if value in strings:
            return
        truncated = len(value) > MAX_STRING_CHARS
        # Interned: "use strict", "function", "object" recur in thousands of modules.
        kept = sys.intern(value[:MAX_STRING_CHARS])
        strings[value] = StringLiteral(
            value=kept,
            line=syntax.line(node),
            truncated=truncated,
            template=template,
            column=int(node.start_point[1]) + 1,
        )

    def _add_call(self, fn: int, callee: str, node: Node, ln: int) -> None:
        builder = self.fns[fn]
        if len(builder.calls) < MAX_PER_FUNCTION:
            handler = None
            if callee.rsplit(".", 1)[-1] in patterns.EVENT_METHODS and "." in callee:
                handler = patterns.handler_reference(node)
            builder.calls.append(
                CallSite(callee=callee, line=ln, argument=syntax.first_argument(node), handler=handler)
            )
        else:
            builder.truncated = True

    def _call(self, node: Node, fn: int, unit: int) -> int:
        callee = node.child_by_field_name("function")
        ln = syntax.line(node)
        target = self.units[unit]
        if callee is None:
            return unit
        callee_type = callee.type
        if callee_type == "import":
            spec, arg = syntax.first_string_argument(node)
            target.imports.append(PendingImport("dynamic-import", spec, ln, expression=syntax.text(arg, 120)))
            self._add_call(fn, "import", node, ln)
            return unit
        name = syntax.callee_name(callee)
        self._add_call(fn, name, node, ln)
        if callee_type == "identifier":
            self.bare_calls.append((unit, name, ln))
            if name == "require":
                spec, arg = syntax.first_string_argument(node)
                target.imports.append(
                    PendingImport("require", spec, ln, patterns.binding_names(node), expression=syntax.text(arg, 120))
                )
                if spec == "electron":
                    target.uses_electron = True
            elif name in _WRAPPERS:
                return self._wrapper(node, unit)
            req = target.require_name
            if req is not None and name == req:
                spec, arg = syntax.first_string_argument(node)
                numeric = arg is not None and arg.type == "number"
                key = spec if spec is not None else (syntax.text(arg, 80) if numeric else None)
                if key is not None:
                    self.webpack_calls.append((unit, key, ln))
        elif callee_type == "member_expression":
            # The callee's name ends with its property, as read (at most 40 characters): not read a second time.
            prop = name.rsplit(".", 1)[-1]
            if prop in ("loadFile", "loadURL"):
                _, arg = syntax.first_string_argument(node)
                hint = patterns.path_hint(prop, arg, ln)
                if hint is not None:
                    target.hints.append(hint)
            elif prop in _IPC_METHODS and any(o in name for o in _IPC_OBJECTS):
                # The owner's text ends with an IPC object's name only if the callee's name holds it.
                owner = syntax.text(callee.child_by_field_name("object"), 80).rsplit(".", 1)[-1]
                if owner in _IPC_OBJECTS and len(target.ipc) < MAX_IPC:
                    channel, arg = syntax.first_string_argument(node)
                    target.ipc.append(
                        IpcRecord(
                            api=f"{owner}.{prop}",
                            channel=channel,
                            expression=None if channel is not None else syntax.text(arg, 80),
                            line=ln,
                        )
                    )
        return unit

    def _wrapper(self, node: Node, unit: int) -> int:
        """esbuild's ``__commonJS({"path"(exports, module) {...}})`` and ``__esm({...})`` name their module."""
        args = node.child_by_field_name("arguments")
        objs = [c for c in (args.named_children if args is not None else []) if c.type == "object"]
        if len(objs) != 1:
            return unit
        members = [c for c in objs[0].named_children if c.type in ("pair", "method_definition")]
        if len(members) != 1:
            return unit
        key_node = members[0].child_by_field_name("key") or members[0].child_by_field_name("name")
        key = syntax.property_name(key_node)
        if not key:
            return unit
        idx = self.unit_index.get(key)
        if idx is None or idx != unit:
            idx = self.unit_for(key, node)
            if self.bundle_format is None:
                self.bundle_format = "wrapper"
        decl = node.parent
        if decl is not None and decl.type == "variable_declarator":
            self.wrapper_names[syntax.text(decl.child_by_field_name("name"), 200)] = idx
        body = members[0] if members[0].type == "method_definition" else members[0].child_by_field_name("value")
        if body is not None:
            self.wrapper_bodies.add(int(body.start_byte))
        params = syntax.function_params(members[0].child_by_field_name("value") or members[0])
        self._alias(idx, params[0] if params else None, params[1] if len(params) > 1 else None)
        return idx

    def _alias(self, unit: int, exports: str | None, module: str | None) -> None:
        aliases = self.units[unit].exports_aliases
        if exports:
            aliases.add(exports)
        if module:
            aliases.add(f"{module}.exports")

    def _webpack_map(self, node: Node, fn: int, unit: int, stack: list[tuple[Node, int, int]]) -> None:
        """webpack's module map: ``{"./src/a.js": (module, exports, require) => {...}, 123: ...}``."""
        pairs = [c for c in node.named_children if c.type != "comment"]
        modules: list[tuple[str, Node, Node]] = []
        for pair in pairs:
            key = pair.child_by_field_name("key") if pair.type == "pair" else None
            value = patterns.unparenthesized(pair.child_by_field_name("value")) if pair.type == "pair" else None
            name = syntax.property_name(key) if key is not None else None
            # Module ids are numbers or paths; other function-valued objects (export getters) are not maps.
            if (
                key is None
                or name is None
                or not (key.type == "number" or "/" in name)
                or value is None
                or value.type not in ("arrow_function", "function_expression", "function")
            ):
                break
            modules.append((name, pair, value))
        if not pairs or len(modules) != len(pairs):
            for child in reversed(node.children):
                stack.append((child, fn, unit))
            return
        self.bundle_format = "webpack"
        for module_id, pair, value in reversed(modules):
            idx = self.unit_for(module_id, pair)
            params = syntax.function_params(value)
            self.units[idx].require_name = params[2] if len(params) >= 3 else "__webpack_require__"
            self._alias(idx, params[1] if len(params) > 1 else None, params[0] if params else None)
            body_fn = self.new_function(value, None, idx, "module-body")
            patterns.declared_in(value.child_by_field_name("parameters"), self.fns[body_fn].declared)
            body = value.child_by_field_name("body")
            if body is not None:
                stack.append((body, body_fn, idx))

    def _import(self, node: Node, unit: int) -> None:
        source = node.child_by_field_name("source")
        spec = syntax.string_value(source) if source is not None else None
        names: list[str] = []
        for clause in node.named_children:
            if clause.type != "import_clause":
                continue
            for part in clause.named_children:
                if part.type == "identifier":
                    names.append(f"default as {syntax.text(part, 80)}")
                elif part.type == "namespace_import":
                    alias = next((c for c in part.named_children if c.type == "identifier"), None)
                    names.append(f"* as {syntax.text(alias, 80)}")
                elif part.type == "named_imports":
                    for specifier in part.named_children:
                        if specifier.type == "import_specifier":
                            imported = syntax.text(specifier.child_by_field_name("name"), 80)
                            alias = specifier.child_by_field_name("alias")
                            names.append(f"{imported} as {syntax.text(alias, 80)}" if alias else imported)
        if spec == "electron":
            self.units[unit].uses_electron = True
        self.units[unit].imports.append(PendingImport("import", spec, syntax.line(node), names))

    def _export(self, node: Node, unit: int) -> None:
        target = self.units[unit]
        ln = syntax.line(node)
        source_node = node.child_by_field_name("source")
        source = syntax.string_value(source_node) if source_node is not None else None
        is_default = any(c.type == "default" for c in node.children)
        decl = node.child_by_field_name("declaration")
        value = node.child_by_field_name("value")
        clause = next((c for c in node.named_children if c.type == "export_clause"), None)
        if source is not None:
            names: list[str] = []
            if clause is None:
                names.append("*")
                target.exports.append(PendingExport("*", "re-export", ln, source=source))
            else:
                for spec in clause.named_children:
                    if spec.type == "export_specifier":
                        local = syntax.text(spec.child_by_field_name("name"), 80)
                        alias = spec.child_by_field_name("alias")
                        names.append(local)
                        target.exports.append(
                            PendingExport(
                                syntax.text(alias, 80) if alias else local, "re-export", ln, local=local, source=source
                            )
                        )
            target.imports.append(PendingImport("re-export", source, ln, names))
            return
        if is_default:
            target.exports.append(PendingExport("default", "esm", ln, value=decl or value))
            return
        if clause is not None:
            for spec in clause.named_children:
                if spec.type == "export_specifier":
                    local = syntax.text(spec.child_by_field_name("name"), 80)
                    alias = spec.child_by_field_name("alias")
                    target.exports.append(
                        PendingExport(syntax.text(alias, 80) if alias else local, "esm", ln, local=local)
                    )
            return
        if decl is None:
            return
        if decl.type in ("variable_declaration", "lexical_declaration"):
            for d in decl.named_children:
                if d.type == "variable_declarator":
                    target.exports.append(
                        PendingExport(
                            syntax.text(d.child_by_field_name("name"), 80),
                            "esm",
                            ln,
                            value=d.child_by_field_name("value"),
                        )
                    )
            return
        name = decl.child_by_field_name("name")
        if name is not None:
            target.exports.append(PendingExport(syntax.text(name, 80), "esm", ln, value=decl))

    def _assignment(self, node: Node, fn: int, unit: int) -> None:
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        lhs = syntax.text(left, 120)
        ln = syntax.line(node)
        builder = self.fns[fn]
        if len(builder.assignments) < MAX_PER_FUNCTION:
            value = patterns.unparenthesized(right) if right is not None else None
            candidates = None
            if value is not None and value.type == "ternary_expression":
                # `run = parallel ? parallelRun : singleRun`: the value is one of both arms.
                candidates = [syntax.text(value.child_by_field_name(arm), 80) for arm in ("consequence", "alternative")]
            builder.assignments.append(Assignment(target=lhs, line=ln, candidates=candidates))
        target = self.units[unit]
        aliases = target.exports_aliases
        if lhs in aliases and "." in lhs:
            target.exports.append(PendingExport("module.exports", "commonjs", ln, value=right))
            if right is not None and right.type == "object":
                for member in right.named_children:
                    if member.type == "pair":
                        key = syntax.property_name(member.child_by_field_name("key"))
                        if key is not None:
                            target.exports.append(
                                PendingExport(key, "commonjs", ln, value=member.child_by_field_name("value"))
                            )
                    elif member.type == "shorthand_property_identifier":
                        target.exports.append(
                            PendingExport(syntax.text(member), "commonjs", ln, local=syntax.text(member))
                        )
                    elif member.type == "method_definition":
                        key = syntax.property_name(member.child_by_field_name("name"))
                        if key is not None:
                            target.exports.append(PendingExport(key, "commonjs", ln, value=member))
        elif left is not None and any(lhs.startswith(a) for a in aliases) and left.type == "member_expression":
            # A member's text starts with its object's: `this.x = ...` is not read a second time.
            obj = syntax.text(left.child_by_field_name("object"), 40)
            if obj in aliases:
                prop = syntax.text(left.child_by_field_name("property"), 80)
                target.exports.append(PendingExport(prop, "commonjs", ln, value=right))

    # -- results ------------------------------------------------------------------------

    def function_shape(self, node: Node, unit: int, depth: int = 0) -> Shape:
        shape = syntax.shape_of(node)
        index = self.fn_by_start.get(int(node.start_byte))
        if shape.get("type") == "function" and index is not None:
            shape["returns"] = list[JSONValue](self.return_shapes(index, unit, depth))
        return shape

    def return_shapes(self, index: int, unit: int, depth: int = 0) -> list[Shape]:
        import msgspec

        seen: dict[bytes, Shape] = {}
        for _, value in self.fns[index].returns:
            shape = self.resolve_shape(value, unit, depth + 1) if value is not None else syntax.UNDEFINED
            seen.setdefault(msgspec.json.encode(shape, order="sorted"), shape)
        return [seen[k] for k in sorted(seen)]

    def declaration(self, name: str, unit: int) -> Node | None:
        found = self.unit_decls[unit].get(name)
        if found is None and name in self.toplevel:
            found = self.toplevel[name][1]
        return found

    def resolve_shape(self, node: Node | None, unit: int, depth: int = 0) -> Shape:
        """A shape with identifiers replaced by what they name in this unit (two levels deep)."""
        if node is None:
            return syntax.UNKNOWN
        if depth > 2:
            return syntax.shape_of(node)
        if node.type == "identifier":
            found = self.declaration(syntax.text(node, 200), unit)
            if found is not None and found is not node:
                return self.resolve_shape(found, unit, depth + 1)
        if node.type in syntax.FUNCTION_TYPES:
            return self.function_shape(node, unit, depth)
        shape = syntax.shape_of(node)
        properties = shape.get("properties")
        if shape.get("type") == "object" and depth < 2 and isinstance(properties, dict):
            for key, value in list(properties.items()):
                name = value.get("name", ".") if isinstance(value, dict) else "."
                if (
                    isinstance(value, dict)
                    and value.get("type") == "reference"
                    and isinstance(name, str)
                    and "." not in name
                ):
                    found = self.declaration(name, unit)
                    if found is not None:
                        properties[key] = self.resolve_shape(found, unit, depth + 1)
        return shape

    def export_record(self, pending: PendingExport, unit: int) -> ExportRecord:
        if pending.value is not None:
            shape = self.resolve_shape(pending.value, unit)
        elif pending.local is not None and pending.source is None:
            found = self.declaration(pending.local, unit)
            shape = (
                self.resolve_shape(found, unit) if found is not None else {"type": "reference", "name": pending.local}
            )
        else:
            shape = {"type": "re-export", "source": pending.source or ""}
        return ExportRecord(
            name=pending.name,
            kind=pending.kind,  # type: ignore[arg-type]
            line=pending.line,
            local=pending.local,
            source=pending.source,
            shape=shape,
        )


def _captures(fns: list[FunctionBuilder]) -> tuple[list[list[str]], list[list[str]]]:
    captures: list[list[str]] = [[] for _ in fns]
    closures: list[set[str]] = [set() for _ in fns]
    decoded: dict[bytes, str] = {}
    for index, builder in enumerate(fns):
        parent = builder.parent
        if builder.kind == "module-body" or parent is None or fns[parent].kind == "module-body":
            continue  # only names a function declares are captured: a top-level function captures none
        names: set[str] = set()
        # One string per name in the file: the same name captured by many functions is held once.
        referenced = {decoded.get(r) or decoded.setdefault(r, r.decode("utf-8", "replace")) for r in builder.referenced}
        for name in referenced - builder.declared:
            parent = builder.parent
            while parent is not None and fns[parent].kind != "module-body":
                if name in fns[parent].declared:
                    names.add(name)
                    closures[parent].add(builder.node_id)
                    break
                parent = fns[parent].parent
        # Interned: the same captured name recurs across files (0.9 MiB of copies on the npm tree).
        captures[index] = [sys.intern(name) for name in sorted(names)[:MAX_CAPTURES]]
    return captures, [sorted(c)[:MAX_CAPTURES] for c in closures]


# An escape the grammar refuses that ES2018 allows in tagged templates (String.raw`\uc1`): \u or \x without hex.
_BAD_ESCAPE = re.compile(rb"\\(?:u(?![0-9a-fA-F]{4}|\{[0-9a-fA-F]{1,6}\})|x(?![0-9a-fA-F]{2}))")
# String literals in text that does not parse: quoted runs on one line, escapes kept as written.
_RAW_STRING = re.compile(rb"'((?:[^'\\\n]|\\.){1,2000})'|\"((?:[^\"\\\n]|\\.){1,2000})\"|`([^`\\$]{1,2000})`")
MAX_RAW_SCAN_BYTES = 16 << 20
# Punctuation marks (a proxy for syntax nodes) past which a file is not parsed: about 5 times swagger-ui's bundle,
# and a parse of this many costs the server about 400 MiB.
MAX_PARSE_TOKENS = 1_000_000


def _errors(node: Node) -> int:
    """ERROR and missing nodes under ``node`` (searching only subtrees that have one), at most 10,000."""
    count, stack = 0, [node]
    while stack and count < 10_000:
        n = stack.pop()
        if n.type == "ERROR" or n.is_missing:
            count += 1
            continue
        stack.extend(c for c in n.children if c.has_error or c.is_missing)
    return count


def _parse(language: syntax.Language, data: bytes) -> tuple[Any, bool]:
    """The tree, and whether it was read with escapes the grammar refuses neutralized (same offsets)."""
    parser = syntax.parser_for(language)
    tree = parser.parse(data)
    if tree.root_node.has_error and _BAD_ESCAPE.search(data):
        # The backslash becomes a space: offsets and lines stay, the literal reads as text.
        repaired = parser.parse(_BAD_ESCAPE.sub(lambda m: b" " + m.group(0)[1:], data))
        if _errors(repaired.root_node) < _errors(tree.root_node):
            return repaired, True
    return tree, False


def _scan_strings(walker: _Walker, data: bytes, lo: int, hi: int) -> int:
    """String literals of ``data[lo:hi]`` by a scan of its raw text, into the first unit's strings; how many."""
    found = 0
    strings = walker.units[0].strings
    line, at = 1, 0
    for m in _RAW_STRING.finditer(data, lo, min(hi, lo + MAX_RAW_SCAN_BYTES)):
        raw = next(g for g in m.groups() if g is not None)
        value = raw.decode("utf-8", "replace")
        if value and value not in strings:
            line += data.count(b"\n", at, m.start())
            at = m.start()
            strings[value] = StringLiteral(
                value=value[:MAX_STRING_CHARS], line=line, truncated=len(value) > MAX_STRING_CHARS
            )
            found += 1
    return found


def _raw_strings(walker: _Walker, root: Node, data: bytes) -> int:
    """Strings of what does not parse, by a scan of the raw text of each error region."""
    found = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR":
            found += _scan_strings(walker, data, node.start_byte, node.end_byte)
            continue
        stack.extend(c for c in node.children if c.has_error)
    return found


def _exact(items: list[Any]) -> list[Any]:
    """A record's list without the spare room appending left (3.5 MiB on the npm tree), or the shared ``EMPTY``."""
    return items[:] if items else EMPTY


def extract(path: str, language: syntax.Language, data: bytes, ctx: CallContext | None = None) -> FileFacts:
    """Parse ``data`` with tree-sitter and collect facts per unit; syntax errors become diagnostics, and the
    strings of what still does not parse come from a raw scan of its text."""
    tokens = len(data) - len(data.translate(None, b",;(){}[]"))  # one pass, not one per mark
    too_big = tokens > MAX_PARSE_TOKENS
    # A syntax tree that large costs gigabytes (tree-sitter's nodes, then the walk): its strings only.
    tree, repaired = (syntax.parser_for(language).parse(b""), False) if too_big else _parse(language, data)
    walker = _Walker(path, data, ctx, language)
    walker.run(tree)
    if too_big:
        scanned = _scan_strings(walker, data, 0, len(data))
        walker.diagnostics.append(
            Diagnostic(
                kind="limit",
                message=f"about {tokens} tokens, more than the {MAX_PARSE_TOKENS} rea parses: not "
                f"parsed; {scanned} strings kept from a scan of its text",
                line=1,
                column=1,
            )
        )
    if repaired:
        walker.diagnostics.append(
            Diagnostic(
                kind="parse-error",
                message="escapes the grammar refuses (\\u or \\x without hex digits, valid in "
                "tagged templates) were read as text",
                line=1,
                column=1,
            )
        )
    if tree.root_node.has_error:
        walker.diagnose(tree.root_node)
        scanned = _raw_strings(walker, tree.root_node, data)
        if scanned:
            walker.diagnostics.append(
                Diagnostic(
                    kind="parse-error",
                    message=f"{scanned} strings of code that does not parse were kept from a scan "
                    "of its text (coverage partial)",
                    line=1,
                    column=1,
                )
            )
    if tree.root_node.has_error and not walker.diagnostics:
        walker.diagnostics.append(
            Diagnostic(kind="parse-error", message="the grammar reported a syntax error", line=1, column=1)
        )
    captures, closures = _captures(walker.fns)
    functions: list[FunctionRecord] = []
    for index, b in enumerate(walker.fns):
        functions.append(
            FunctionRecord(
                node_id=b.node_id,
                name=b.name,
                kind=b.kind,  # type: ignore[arg-type]
                line=b.line,
                end_line=b.end_line,
                params=_exact(b.params),
                is_async=b.is_async,
                parent=walker.fns[b.parent].node_id if b.parent is not None else None,
                calls=_exact(b.calls),
                returns=_exact(
                    [
                        ReturnSite(
                            line=ln, shape=walker.resolve_shape(v, b.unit, 1) if v is not None else syntax.UNDEFINED
                        )
                        for ln, v in b.returns
                    ]
                ),
                assignments=_exact(b.assignments),
                captures=captures[index] or EMPTY,
                closures=closures[index] or EMPTY,
                truncated=b.truncated,
                end_column=b.end_column,
            )
        )
    exports = [[walker.export_record(p, i) for p in unit.exports] for i, unit in enumerate(walker.units)]
    strings: list[StringSet] = []
    for unit in walker.units:
        items = list(unit.strings.values())
        if len(items) > MAX_STRINGS:
            walker.diagnostics.append(
                Diagnostic(
                    kind="limit",
                    message=f"{len(items)} unique strings in {unit.path}: the first {MAX_STRINGS} are listed",
                    line=items[MAX_STRINGS].line,
                )
            )
        strings.append(StringSet(items=items[:MAX_STRINGS], total=len(items), truncated=len(items) > MAX_STRINGS))
    edges: list[tuple[int, int, str, str, int]] = []
    for unit_idx, name, ln in walker.bare_calls:
        wrapped = walker.wrapper_names.get(name)
        if wrapped is not None and wrapped != unit_idx:
            edges.append((unit_idx, wrapped, "bundle-require", name, ln))
            continue
        declared = walker.toplevel.get(name)
        if walker.bundle_format == "esbuild" and declared is not None and declared[0] not in (0, unit_idx):
            edges.append((unit_idx, declared[0], "bundle-reference", name, ln))
    for unit_idx, key, ln in walker.webpack_calls:
        target_idx = walker.unit_index.get(key)
        if target_idx is not None:
            edges.append((unit_idx, target_idx, "webpack-require", key, ln))
    return FileFacts(
        units=walker.units,
        functions=functions,
        function_unit=[b.unit for b in walker.fns],
        exports=exports,
        strings=strings,
        diagnostics=walker.diagnostics,
        bundle_format=walker.bundle_format,
        unit_edges=sorted(set(edges)),
        source_mapping_url=patterns.source_mapping_url(data),
        truncated=walker.truncated,
    )


def unit_ranges(unit: Unit) -> list[Span]:
    return [Span(start_line=a, end_line=b) for a, b in sorted(unit.ranges)]
