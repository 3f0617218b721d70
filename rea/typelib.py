"""C types of a target: declarations parsed with pycparser, and their layout under the target's ABI.

The annotation store keeps a target's type library as one C declaration per type (``struct opts``,
``enum color``, ``opts_t``), normalized by pycparser's generator. This module parses what an analyst
declares (errors carry line and column), prototypes and type names against that library, orders the
library so typedef names come before their uses, and computes sizes, alignments and field offsets for
the target's data model: LP64 (x86-64, aarch64 ELF and Mach-O), ILP32 (i386, arm32), LLP64 (64-bit
Windows) and 32-bit Windows. pycparser is imported lazily (it is installed with angr).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import json
import re
import struct as _struct
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any
from typing import Final
from typing import Literal

import msgspec

from rea.annotations import MAX_TYPE_DECLARATION
from rea.annotations import TypeEntry
from rea.errors import ReaError
from rea.errors import invalid_request
from rea.errors import issue

TypeKind = Literal["struct", "union", "enum", "typedef"]
MAX_SOURCE: Final = 64 * 1024
# Bounds on what one declaration may ask of the parser and of layout, so hostile input is a typed refusal rather
# than a recursion error, an exponential walk or a library that no longer parses (issue 42 item 7):
# brackets ( [ { open inside one another,
MAX_NESTING: Final = 32
# pointer and array derivations of one declarator (int **x[2][3] has four),
MAX_DERIVATIONS: Final = 32
# named types laid out inside one another (a typedef of a typedef, a struct holding a struct, ...),
MAX_TYPE_DEPTH: Final = 64
# members of one struct or union, and enumerators of one enum.
MAX_MEMBERS: Final = 2048
MAX_ENUMERATORS: Final = 4096
_INTEGER_BASES: Final = frozenset({"char", "short", "int", "long", "long long", "_Bool"})
_BUILTIN_FILE: Final = "<builtin>"
_LIBRARY_FILE: Final = "<library>"
_INPUT_FILE: Final = "<input>"
_IDENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# -- ABIs --------------------------------------------------------------------------------------------------


class Abi(msgspec.Struct, frozen=True, kw_only=True):
    """A data model: (size, alignment inside a struct) of each base type, bit-field rules, byte order."""

    name: str
    base: dict[str, tuple[int, int]]
    ms_bitfields: bool = False
    char_signed: bool = True
    big_endian: bool = False
    # Builtin typedef names (stdint and friends) -> base type under this ABI.
    builtins: dict[str, str] = {}


def _model(
    pointer: int, long: int, ll_align: int, double_align: int, ldouble: tuple[int, int]
) -> dict[str, tuple[int, int]]:
    return {
        "char": (1, 1),
        "short": (2, 2),
        "int": (4, 4),
        "long": (long, long),
        "long long": (8, ll_align),
        "float": (4, 4),
        "double": (8, double_align),
        "long double": ldouble,
        "_Bool": (1, 1),
        "pointer": (pointer, pointer),
    }


def _builtins(int64: str, word: str, wchar: str) -> dict[str, str]:
    return {
        "int8_t": "signed char",
        "uint8_t": "unsigned char",
        "int16_t": "short",
        "uint16_t": "unsigned short",
        "int32_t": "int",
        "uint32_t": "unsigned int",
        "int64_t": int64,
        "uint64_t": "unsigned " + int64,
        "intptr_t": word,
        "uintptr_t": "unsigned " + word,
        "ssize_t": word,
        "ptrdiff_t": word,
        "size_t": "unsigned " + word,
        "wchar_t": wchar,
        "bool": "_Bool",
    }


ABIS: Final[dict[str, Abi]] = {
    "lp64": Abi(name="lp64", base=_model(8, 8, 8, 8, (16, 16)), builtins=_builtins("long", "long", "int")),
    "lp64-aarch64": Abi(
        name="lp64-aarch64",
        base=_model(8, 8, 8, 8, (16, 16)),
        char_signed=False,
        builtins=_builtins("long", "long", "unsigned int"),
    ),
    # Apple's arm64: long double is double, plain char signed.
    "lp64-apple-arm64": Abi(
        name="lp64-apple-arm64",
        base=_model(8, 8, 8, 8, (8, 8)),
        builtins=_builtins("long long", "long", "int"),
    ),
    "ilp32-i386": Abi(
        name="ilp32-i386", base=_model(4, 4, 4, 4, (12, 4)), builtins=_builtins("long long", "int", "int")
    ),
    "ilp32-arm": Abi(
        name="ilp32-arm",
        base=_model(4, 4, 8, 8, (8, 8)),
        char_signed=False,
        builtins=_builtins("long long", "int", "unsigned int"),
    ),
    "llp64": Abi(
        name="llp64",
        base=_model(8, 4, 8, 8, (16, 16)),
        ms_bitfields=True,
        builtins=_builtins("long long", "long long", "unsigned short"),
    ),
    "ilp32-win32": Abi(
        name="ilp32-win32",
        base=_model(4, 4, 8, 8, (12, 4)),
        ms_bitfields=True,
        builtins=_builtins("long long", "int", "unsigned short"),
    ),
}
BUILTIN_TYPEDEFS: Final = tuple(ABIS["lp64"].builtins)


def abi_for(fmt: str | None, architecture: str | None) -> Abi:
    """The data model of a target from its container format and architecture (LP64 when unknown)."""
    windows = fmt in ("pe", "dos-mz")
    if architecture in ("x86", "i386"):
        return ABIS["ilp32-win32" if windows else "ilp32-i386"]
    if architecture == "arm":
        return ABIS["ilp32-win32" if windows else "ilp32-arm"]
    if windows:
        return ABIS["llp64"]
    if architecture == "arm64":
        return ABIS["lp64-apple-arm64" if fmt in ("mach-o", "mach-o-universal") else "lp64-aarch64"]
    return ABIS["lp64"]


# -- parsing -----------------------------------------------------------------------------------------------


def _pycparser() -> Any:
    """pycparser's parser and generator modules (one namespace), imported on first use."""
    try:
        # Heavy and optional: imported only when types are parsed.
        parser = importlib.import_module("pycparser.c_parser")
        generator = importlib.import_module("pycparser.c_generator")
        ast = importlib.import_module("pycparser.c_ast")
    except ImportError:
        raise ReaError(
            "capability_unavailable",
            "C declarations are parsed with pycparser, which is not installed",
            remediation="pip install pycparser (it comes with rea-reverse[angr]).",
            details={"reason": "runtime_missing", "package": "pycparser"},
        ) from None
    return SimpleNamespace(c_parser=parser, c_generator=generator, c_ast=ast)


def _strip_comments(text: str) -> str:
    """Comments become spaces (newlines kept), so line and column numbers stay those of the input."""
    out: list[str] = []
    i, n = 0, len(text)
    quote = ""
    while i < n:
        ch = text[i]
        if quote:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
            out.append(ch)
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(c if c == "\n" else " " for c in text[i:j]))
            i = j
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


_COORD: Final = re.compile(r"^(?P<file><[a-z]+>|[^:]*):(?P<line>\d+)(?::(?P<col>\d+))?:\s*(?P<msg>.*)$", re.S)


def _bad_c(path: str, message: str, line: int | None, column: int | None) -> ReaError:
    where = f" at line {line}, column {column}" if line is not None else ""
    extra: dict[str, int | None] = {}
    if line is not None:
        extra = {"line": line, "column": column}
    err = invalid_request(f"{path}: {message}{where}", [issue(path, "invalid_value", message, **extra)])
    err.details.update(extra)
    return err


class _Parser:
    """pycparser's parser with a location for errors it reports without one (an unknown type name)."""

    def __init__(self) -> None:
        pyc = _pycparser()
        base = pyc.c_parser.CParser

        class Located(base):  # type: ignore[misc,valid-type]
            def _parse_error(self, msg: str, coord: Any) -> Any:
                if isinstance(coord, str) or coord is None:
                    peek = getattr(self, "_peek", None)
                    tok = peek() if callable(peek) else None
                    if tok is not None and hasattr(self, "_tok_coord"):
                        coord = self._tok_coord(tok)
                        if getattr(tok, "type", "") == "ID":
                            msg = f"unknown type name {tok.value!r}"
                return super()._parse_error(msg, coord)

        self.parser = Located()
        self.generator = pyc.c_generator.CGenerator()
        self.ast = pyc.c_ast
        self.ast_errors: tuple[type[BaseException], ...] = (pyc.c_parser.ParseError,)

    def parse(self, prelude: str, text: str, path: str) -> Any:
        source = f'# 1 "{_INPUT_FILE}"\n{_strip_comments(text)}\n'
        try:
            return self.parser.parse(prelude + source, _INPUT_FILE)
        except RecursionError:
            raise _bad_c(path, "the declarations nest too deeply to parse", None, None) from None
        except Exception as exc:  # pycparser raises ParseError, and a few plain errors on odd input
            words = str(exc)
            m = _COORD.match(words)
            if m is None:
                # A ParseError's own words; anything else is a parser failure, not a sentence for the caller.
                plain = isinstance(exc, self.ast_errors) and words
                raise _bad_c(path, words if plain else "does not parse as C", None, None) from None
            line = int(m["line"])
            column = int(m["col"]) if m["col"] else None
            msg = m["msg"].strip() or "does not parse as C"
            if m["file"] != _INPUT_FILE:
                raise _bad_c(path, f"the type library does not parse with it: {msg}", None, None) from None
            if msg.startswith("before:"):
                msg = f"syntax error {msg}"
            raise _bad_c(path, msg, line, column) from None

    def text(self, node: Any) -> str:
        return str(self.generator.visit(node))


def _builtin_prelude() -> str:
    return f'# 1 "{_BUILTIN_FILE}"\n' + "".join(f"typedef int {n};\n" for n in BUILTIN_TYPEDEFS)


def ordered(types: dict[str, TypeEntry]) -> list[str]:
    """Type names with every typedef name after the typedefs its declaration uses (then by name).

    Iterative: a library's typedef chains may be as long as the library (a recursion would fail on them)."""
    typedefs = {n for n, e in types.items() if e.kind == "typedef"}
    deps = {n: sorted({t for t in _IDENT.findall(e.c) if t in typedefs and t != n}) for n, e in types.items()}
    done: set[str] = set()
    out: list[str] = []
    for root in sorted(types, key=lambda n: (types[n].kind == "typedef", n)):
        if root in done:
            continue
        # (name, index of the next dependency to visit); names on the stack are "in progress" (a cycle is cut).
        stack: list[tuple[str, int]] = [(root, 0)]
        active = {root}
        while stack:
            name, i = stack[-1]
            if i < len(deps[name]):
                stack[-1] = (name, i + 1)
                d = deps[name][i]
                if d not in done and d not in active:
                    stack.append((d, 0))
                    active.add(d)
                continue
            stack.pop()
            active.discard(name)
            done.add(name)
            out.append(name)
    return out


def library_source(types: dict[str, TypeEntry]) -> str:
    """The whole library as C, in dependency order (what engines parse)."""
    return "\n".join(types[n].c for n in ordered(types))


def _prelude(types: dict[str, TypeEntry]) -> str:
    return _builtin_prelude() + f'# 1 "{_LIBRARY_FILE}"\n' + library_source(types) + "\n"


def _kind_name(node: Any, ast: Any) -> tuple[TypeKind, str] | None:
    tags: tuple[tuple[Any, TypeKind], ...] = ((ast.Struct, "struct"), (ast.Union, "union"), (ast.Enum, "enum"))
    for cls, kind in tags:
        if isinstance(node, cls):
            return kind, f"{kind} {node.name}" if node.name else ""
    return None


def _hoist(node: Any, ast: Any, out: list[Any]) -> Any:
    """Named struct, union and enum definitions inside ``node`` moved to ``out``; references stay."""
    if isinstance(node, ast.Struct | ast.Union):
        if node.decls is not None:
            for d in node.decls:
                d.type = _hoist(d.type, ast, out)
            if node.name:
                out.append(node)
                return type(node)(node.name, None, node.coord)
        return node
    if isinstance(node, ast.Enum):
        if node.name and node.values is not None:
            out.append(node)
            return ast.Enum(node.name, None, node.coord)
        return node
    if isinstance(node, ast.TypeDecl | ast.PtrDecl | ast.ArrayDecl):
        node.type = _hoist(node.type, ast, out)
        return node
    if isinstance(node, ast.FuncDecl):
        node.type = _hoist(node.type, ast, out)
        if node.args is not None:
            for p in node.args.params:
                if hasattr(p, "type"):
                    p.type = _hoist(p.type, ast, out)
        return node
    return node


def declare(
    source: str, types: dict[str, TypeEntry], path: str = "declarations", abi: Abi | None = None
) -> dict[str, TypeEntry]:
    """The types ``source`` declares (name -> entry), parsed against the library ``types``.

    A forward declaration (``struct opts;``) of a type the library defines keeps the definition.
    Variables, functions and function definitions are refused: they are not types. So is a declaration past
    the bounds (size, nesting, derivations, members, layout depth) or with a bit-field width its type cannot
    hold, checked by laying the new types out under ``abi`` (default LP64, whose ``long`` is widest). ``types``
    is never changed: a refused declaration leaves the library as it was.
    """
    if len(source) > MAX_SOURCE or len(source.encode("utf-8", "surrogatepass")) > MAX_SOURCE:
        raise _too_large(path, f"at most {MAX_SOURCE} bytes of declarations in one call", "size", MAX_SOURCE)
    try:
        return _declare(source, types, path, abi)
    except RecursionError:  # a bound below was not enough: still the caller's input, still typed
        raise _too_large(path, "the declarations nest too deeply", "depth", MAX_TYPE_DEPTH) from None


def _too_large(path: str, message: str, limit: str, value: int) -> ReaError:
    """A declaration past one of the bounds: ``invalid_request`` naming the bound, with how to stay within it."""
    return ReaError(
        "invalid_request",
        f"{path}: {message} (the limit is {value})",
        remediation="Declare the types in smaller, flatter pieces: name nested types, split long lists.",
        details={"issues": [issue(path, "out_of_range", message, limit=limit, maximum=value)], "limit": limit},
    )


def _prescan(source: str, path: str) -> None:
    """Refuse bracket nesting past ``MAX_NESTING`` and declarators past ``MAX_DERIVATIONS`` before parsing: the
    parser's and the generator's work grows with both (20,000 ``[2]`` took 18 s, then exhausted the stack)."""
    text = _strip_comments(source)
    opened: list[str] = []
    derivations = 0
    i, n = 0, len(text)
    line = 1
    while i < n:
        ch = text[i]
        if ch in "\"'":  # a literal's characters are not brackets
            j = i + 1
            while j < n and text[j] != ch:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if ch == "\n":
            line += 1
        elif ch in "([{":
            opened.append(ch)
            if len(opened) > MAX_NESTING:
                raise _too_large(path, f"brackets nest too deeply at line {line}", "nesting", MAX_NESTING)
            if ch == "{":
                derivations = 0
            elif ch == "[":
                derivations += 1
        elif ch in ")]}":
            if opened:
                opened.pop()
            if ch == "}":
                derivations = 0
        elif ch in ";,":
            derivations = 0
        elif ch == "*" and (not opened or opened[-1] != "["):
            derivations += 1
        if derivations > MAX_DERIVATIONS:
            raise _too_large(
                path, f"a declarator derives too many pointers or arrays at line {line}", "derivations", MAX_DERIVATIONS
            )
        i += 1


def _count_members(node: Any, ast: Any, path: str) -> None:
    """Refuse a struct or union with more than ``MAX_MEMBERS`` members, an enum with more than ``MAX_ENUMERATORS``."""
    if isinstance(node, ast.Struct | ast.Union):
        decls = node.decls or []
        if len(decls) > MAX_MEMBERS:
            what = f"{type(node).__name__.lower()} {node.name or '(anonymous)'}"
            raise _too_large(path, f"{what} has {len(decls)} members", "members", MAX_MEMBERS)
        for d in decls:
            _count_members(d.type, ast, path)
        return
    if isinstance(node, ast.Enum):
        values = node.values.enumerators if node.values is not None else []
        if len(values) > MAX_ENUMERATORS:
            what = f"enum {node.name or '(anonymous)'}"
            raise _too_large(path, f"{what} has {len(values)} enumerators", "enumerators", MAX_ENUMERATORS)
        return
    inner = getattr(node, "type", None)
    if inner is not None:
        _count_members(inner, ast, path)
    args = getattr(node, "args", None)
    for param in getattr(args, "params", None) or []:
        _count_members(getattr(param, "type", None), ast, path)


def _declare(source: str, types: dict[str, TypeEntry], path: str, abi: Abi | None) -> dict[str, TypeEntry]:
    _prescan(source, path)
    for lineno, line in enumerate(source.splitlines(), 1):
        stripped = line.lstrip()
        if stripped.startswith("#"):
            raise _bad_c(
                path,
                "preprocessor directives are not supported (declare plain C)",
                lineno,
                len(line) - len(stripped) + 1,
            )
    p = _Parser()
    ast = p.ast
    tree = p.parse(_prelude(types), source, path)
    found: dict[str, TypeEntry] = {}
    for ext in tree.ext:
        coord = getattr(ext, "coord", None)
        if coord is None or coord.file != _INPUT_FILE:
            continue
        where = (coord.line, coord.column)
        if isinstance(ext, ast.FuncDef):
            raise _bad_c(path, "a function definition is not a type", *where)
        if isinstance(ext, ast.Pragma):
            raise _bad_c(path, "#pragma is not supported", *where)
        _count_members(getattr(ext, "type", None), ast, path)
        hoisted: list[Any] = []
        if isinstance(ext, ast.Typedef):
            ext.type = _hoist(ext.type, ast, hoisted)
            main: tuple[str, TypeEntry] | None = (ext.name, TypeEntry(kind="typedef", c=p.text(ext) + ";"))
        elif isinstance(ext, ast.Decl) and ext.name is None:
            ext.type = _hoist(ext.type, ast, hoisted)
            main = None
            kn = _kind_name(ext.type, ast)
            if kn is None or not kn[1]:
                raise _bad_c(path, "an anonymous type declares nothing; give it a tag or a typedef", *where)
            if kn[1] in types or kn[1] in found or any(_kind_name(h, ast) == kn for h in hoisted):
                # A forward declaration of a type already known: nothing to add.
                if all(_kind_name(h, ast) != kn for h in hoisted):
                    continue
            else:
                main = (kn[1], TypeEntry(kind=kn[0], c=p.text(ext.type) + ";"))
        elif isinstance(ext, ast.Decl):
            what = "function" if isinstance(ext.type, ast.FuncDecl) else "variable"
            hint = "; use set_function_prototype" if what == "function" else "; use set_data_type for a datum"
            raise _bad_c(path, f"{ext.name!r} declares a {what}, not a type{hint}", *where)
        else:
            raise _bad_c(path, "not a type declaration", *where)
        for h in hoisted:
            kn = _kind_name(h, ast)
            assert kn is not None
            found[kn[1]] = TypeEntry(kind=kn[0], c=p.text(h) + ";")
        if main is not None:
            found[main[0]] = main[1]
    if not found:
        raise invalid_request(f"{path}: declares no type", [issue(path, "invalid_value", "declares no type")])
    for name, entry in found.items():
        if len(entry.c) > MAX_TYPE_DECLARATION:
            raise invalid_request(
                f"{path}: the declaration of {name} is longer than {MAX_TYPE_DECLARATION} characters",
                [issue(path, "out_of_range", f"at most {MAX_TYPE_DECLARATION} characters per type")],
            )
    merged = {**types, **found}
    cycle = _typedef_cycle(merged)
    if cycle:
        raise invalid_request(
            f"{path}: typedef {cycle} would depend on itself",
            [issue(path, "invalid_value", f"typedef {cycle} depends on itself")],
        )
    _check_layouts(merged, found, abi or ABIS["lp64"], path)
    return found


# What laying a new type out may refuse it for at declaration; other layout errors (a member of a type not declared
# yet) are left for inspect_type to report, since a later declaration may complete the type.
_REFUSED_AT_DECLARATION: Final = frozenset({"bit_field", "depth"})
_REMEDIATION: Final = {
    "bit_field": "Give the bit-field an integer type and a width from 1 to that type's bits (0 only unnamed).",
    "depth": f"Nest named types at most {MAX_TYPE_DEPTH} deep: lay out the inner types flat, or refer by pointer.",
}


def _check_layouts(merged: dict[str, TypeEntry], found: dict[str, TypeEntry], abi: Abi, path: str) -> None:
    layout = Layout(merged, abi)
    for name in sorted(found):
        try:
            layout.of_name(name)
        except ReaError as err:
            reason = err.details.get("layout_reason")
            if reason in _REFUSED_AT_DECLARATION:
                refused = invalid_request(
                    f"{path}: {name}: {err.message}", [issue(path, "invalid_value", f"{name}: {err.message}")]
                )
                refused.remediation = _REMEDIATION[reason]
                raise refused from None
        except Exception:
            continue


def _typedef_cycle(types: dict[str, TypeEntry]) -> str | None:
    """The first typedef (by name) on a cycle of typedef references, or None. Iterative, as ``ordered``."""
    typedefs = {n for n, e in types.items() if e.kind == "typedef"}
    deps = {n: sorted({t for t in _IDENT.findall(types[n].c) if t in typedefs and t != n}) for n in typedefs}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in sorted(typedefs):
        if root in state:
            continue
        state[root] = 1
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            name, i = stack[-1]
            if i < len(deps[name]):
                stack[-1] = (name, i + 1)
                d = deps[name][i]
                if state.get(d) == 1:
                    return root
                if d not in state:
                    state[d] = 1
                    stack.append((d, 0))
                continue
            stack.pop()
            state[name] = 2
    return None


class Parameter(msgspec.Struct, frozen=True, kw_only=True):
    name: str | None
    type: str


class Prototype(msgspec.Struct, frozen=True, kw_only=True):
    """A function prototype as the store keeps it (``text``) and as tools show it."""

    text: str
    name: str
    return_type: str
    parameters: list[Parameter]
    variadic: bool = False


def _decl_text(p: _Parser, type_node: Any, name: str | None) -> str:
    """``type_node`` as a C type name (abstract declarator), e.g. ``struct opts *``."""
    ast = p.ast
    node = _rename(type_node, None, ast)
    return " ".join(p.text(ast.Typename(name=None, quals=[], align=None, type=node)).split())


def _rename(node: Any, name: str | None, ast: Any) -> Any:
    """A copy of a declarator chain with its innermost declared name set to ``name``."""
    import copy

    node = copy.deepcopy(node)
    cur = node
    while not isinstance(cur, ast.TypeDecl):
        if not hasattr(cur, "type"):  # a bare struct/union/enum (a member declaring only a nested tag) names nothing
            return node
        cur = cur.type
    cur.declname = name
    return node


def prototype(text: str, types: dict[str, TypeEntry], path: str = "prototype") -> Prototype:
    """A C prototype (``int f(struct opts *o)``, ``;`` optional) parsed against the library."""
    library = tuple((n, e.kind, e.c) for n, e in sorted(types.items()))
    return _prototype(library, text, path)


@functools.lru_cache(maxsize=256)
def _prototype(library: tuple[tuple[str, str, str], ...], text: str, path: str) -> Prototype:
    """``prototype`` once per library and text (procedure_info shows it on every call)."""
    types = {n: TypeEntry(kind=k, c=c) for n, k, c in library}  # type: ignore[arg-type]
    src = text.strip()
    if not src.endswith(";"):
        src += ";"
    p = _Parser()
    ast = p.ast
    tree = p.parse(_prelude(types), src, path)
    decls = [e for e in tree.ext if getattr(e, "coord", None) is not None and e.coord.file == _INPUT_FILE]
    if len(decls) != 1 or not isinstance(decls[0], ast.Decl) or not isinstance(decls[0].type, ast.FuncDecl):
        raise invalid_request(
            f"{path}: expected one function prototype, e.g. int parse(struct opts *opts)",
            [issue(path, "invalid_value", "expected one function prototype")],
        )
    decl = decls[0]
    hoisted: list[Any] = []
    _hoist(decl.type, ast, hoisted)
    if hoisted:
        raise invalid_request(
            f"{path}: declare struct, union and enum types with declare_c_types first",
            [issue(path, "invalid_value", "a prototype must not define types")],
        )
    func = decl.type
    params: list[Parameter] = []
    variadic = False
    for par in func.args.params if func.args is not None else []:
        if isinstance(par, ast.EllipsisParam):
            variadic = True
            continue
        ptype = _decl_text(p, par.type, None)
        if ptype == "void" and not par.name:
            continue
        params.append(Parameter(name=par.name, type=ptype))
    normalized = p.text(decl).strip()
    return Prototype(
        text=normalized,
        name=str(decl.name),
        return_type=_decl_text(p, func.type, None),
        parameters=params,
        variadic=variadic,
    )


def _typename(p: _Parser, types: dict[str, TypeEntry], text: str, path: str) -> Any:
    """The pycparser Typename node of a C type name (``sizeof`` of anything else is refused)."""
    if ";" in text or "{" in text:
        raise invalid_request(
            f"{path}: {text[:80]!r} is not a type name", [issue(path, "invalid_value", "a type name")]
        )
    tree = p.parse(_prelude(types), f"int __rea_probe[sizeof({text})];", path)
    decl = tree.ext[-1] if tree.ext else None
    expr = getattr(getattr(getattr(decl, "type", None), "dim", None), "expr", None)
    if not isinstance(expr, p.ast.Typename):
        raise invalid_request(
            f"{path}: {text[:80]!r} is not a known type name", [issue(path, "invalid_value", "unknown type name")]
        )
    return expr


def type_name(text: str, types: dict[str, TypeEntry], path: str = "type") -> str:
    """A C type name (``struct opts``, ``uint32_t``, ``char [16]``) normalized, checked against the library."""
    p = _Parser()
    typename = _typename(p, types, text.strip(), path)
    out = p.text(typename).strip()
    Layout(types, ABIS["lp64"]).of_name(out, path)  # every name used is known, and complete
    return out


# -- layout --------------------------------------------------------------------------------------------------


class Field(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A member of a struct or union at its offset (bit-fields add their bit position and width)."""

    name: str | None
    type: str
    offset: int
    size: int
    bit_offset: int | None = None
    bit_size: int | None = None


class Enumerator(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    value: int


class TypeLayout(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A type's size, alignment and members under one ABI (size null for a function type)."""

    name: str
    kind: Literal["struct", "union", "enum", "typedef", "base", "pointer", "array", "function"]
    abi: str
    size: int | None
    alignment: int | None
    c: str | None = None
    # A typedef's, a pointer's or an array's underlying type, and an array's length.
    target: str | None = None
    count: int | None = None
    fields: list[Field] = []
    enumerators: list[Enumerator] = []
    incomplete: bool = False


class _Info:
    """The computed layout of one C type node (internal)."""

    def __init__(
        self,
        kind: str,
        size: int | None,
        align: int | None,
        *,
        fields: list[Field] | None = None,
        target: Any = None,
        count: int | None = None,
        base: str | None = None,
        node: Any = None,
        enumerators: list[Enumerator] | None = None,
        signed: bool = True,
    ) -> None:
        self.kind, self.size, self.align = kind, size, align
        self.fields = fields or []
        self.target, self.count, self.base, self.node = target, count, base, node
        self.enumerators = enumerators or []
        self.signed = signed
        # Member infos (for typed views), parallel to fields.
        self.members: list[_Info] = []


_SIGNS: Final = {"signed", "unsigned"}


def _canonical(names: list[str], abi: Abi) -> tuple[str, bool] | None:
    """``unsigned long int`` -> ("long", unsigned); None when the names are not a base type."""
    words = list(names)
    signed = "unsigned" not in words
    core = [w for w in words if w not in _SIGNS and w != "int"] or (["int"] if words else [])
    key = " ".join(core)
    if key == "char":
        return "char", ("signed" in words) or ("unsigned" not in words and abi.char_signed)
    if key in ("short", "long", "long long", "int"):
        return key, signed
    if key in ("float", "double", "long double", "_Bool", "void"):
        return key, True
    if key == "" and words:
        return "int", signed
    return None


class Layout:
    """Sizes and member offsets of a library's types under one ABI."""

    def __init__(self, types: dict[str, TypeEntry], abi: Abi) -> None:
        self.types = types
        self.abi = abi
        self._p = _Parser()
        self._ast = self._p.ast
        tree = self._p.parse(_prelude(types), "", "types")
        # pycparser's AST nodes by name: the library is untyped, so its nodes are Any to the type checker.
        self._typedefs: dict[str, Any] = {}
        self._tags: dict[str, Any] = {}
        self._enum_values: dict[str, int] = {}
        # Named types being laid out (a cycle is an error; more than MAX_TYPE_DEPTH is too deep), and the layouts
        # of those done: a struct of two members of a type of two members of ... is laid out once per name, not
        # 2**depth times.
        self._active: set[str] = set()
        self._done: dict[str, tuple[_Info, int]] = {}
        self._heights: list[int] = []
        for ext in tree.ext:
            if getattr(ext, "coord", None) is None or ext.coord.file != _LIBRARY_FILE:
                continue
            if isinstance(ext, self._ast.Typedef):
                self._typedefs[ext.name] = ext.type
                self._collect_tags(ext.type)
            elif isinstance(ext, self._ast.Decl):
                self._collect_tags(ext.type)

    def _collect_tags(self, node: Any) -> None:
        ast = self._ast
        kn = _kind_name(node, ast)
        if kn is not None:
            complete = node.values is not None if isinstance(node, ast.Enum) else node.decls is not None
            if complete and kn[1]:
                self._tags[kn[1]] = node
            if complete and isinstance(node, ast.Enum):
                # Enumerators are file-scope constants (array lengths may use them), tagged or not.
                with contextlib.suppress(ValueError, KeyError, ZeroDivisionError, ReaError):
                    self._enum(node)
        for child in getattr(node, "decls", None) or []:
            self._collect_tags(child.type)
        inner = getattr(node, "type", None)
        if inner is not None and not isinstance(node, ast.Struct | ast.Union | ast.Enum):
            self._collect_tags(inner)

    # -- constant expressions ----------------------------------------------------------------------------

    def const(self, node: Any) -> int:
        ast = self._ast
        if isinstance(node, ast.Constant):
            v = node.value
            if node.type == "char":
                body = v[1:-1]
                return ord(body.encode().decode("unicode_escape")) if body else 0
            if node.type not in ("int", "unsigned int", "long int", "long long int") and not re.match(r"^[0-9]", v):
                raise ValueError("not an integer constant")
            digits = v.rstrip("uUlL")
            base = 16 if digits.lower().startswith("0x") else 2 if digits.lower().startswith("0b") else 10
            if base == 10 and len(digits) > 1 and digits.startswith("0"):
                base = 8
            try:
                return _bounded(int(digits, base))
            except ValueError:
                raise ValueError(f"{v} is not an integer constant") from None
        if isinstance(node, ast.ID):
            if node.name in self._enum_values:
                return self._enum_values[node.name]
            raise ValueError(f"{node.name} is not a known constant")
        if isinstance(node, ast.UnaryOp):
            if node.op == "sizeof":
                info = self.info(node.expr.type) if isinstance(node.expr, ast.Typename) else None
                if info is None or info.size is None:
                    raise ValueError("sizeof of an unknown type")
                return info.size
            v = self.const(node.expr)
            unary = {"-": lambda: -v, "+": lambda: v, "~": lambda: ~v, "!": lambda: int(not v)}
            if node.op not in unary:
                raise ValueError(f"operator {node.op} is not allowed in a constant")
            return _bounded(unary[node.op]())
        if isinstance(node, ast.BinaryOp):
            a, b = self.const(node.left), self.const(node.right)
            if node.op in ("/", "%") and b == 0:
                raise ValueError("division by zero in a constant")
            if node.op in ("<<", ">>") and not 0 <= b < 64:
                raise ValueError(f"a shift by {b} in a constant")
            ops = {
                "+": lambda: a + b,
                "-": lambda: a - b,
                "*": lambda: a * b,
                # C truncates toward zero (Python's // floors); integers only, however large.
                "/": lambda: (abs(a) // abs(b)) * (1 if (a < 0) == (b < 0) else -1),
                "%": lambda: a - b * ((abs(a) // abs(b)) * (1 if (a < 0) == (b < 0) else -1)),
                "<<": lambda: a << b,
                ">>": lambda: a >> b,
                "&": lambda: a & b,
                "|": lambda: a | b,
                "^": lambda: a ^ b,
            }
            if node.op not in ops:
                raise ValueError(f"operator {node.op} is not allowed in a constant")
            return _bounded(ops[node.op]())
        if isinstance(node, ast.TernaryOp):
            return self.const(node.iftrue) if self.const(node.cond) else self.const(node.iffalse)
        if isinstance(node, ast.Cast):
            return self.const(node.expr)
        raise ValueError("not a constant expression")

    def _enum(self, node: Any) -> list[Enumerator]:
        out: list[Enumerator] = []
        nxt = 0
        for item in node.values.enumerators if node.values is not None else []:
            value = self.const(item.value) if item.value is not None else nxt
            self._enum_values[item.name] = value
            out.append(Enumerator(name=item.name, value=value))
            nxt = value + 1
        return out

    # -- sizes -----------------------------------------------------------------------------------------------

    def _base(self, name: str, signed: bool = True) -> _Info:
        if name == "void":
            return _Info("base", None, None, base="void")
        size, align = self.abi.base[name]
        return _Info("base", size, align, base=name, signed=signed)

    def info(self, node: Any) -> _Info:
        ast = self._ast
        if isinstance(node, ast.Typename | ast.Decl):
            return self.info(node.type)
        if isinstance(node, ast.TypeDecl):
            return self.info(node.type)
        if isinstance(node, ast.PtrDecl):
            size, align = self.abi.base["pointer"]
            return _Info("pointer", size, align, target=node.type)
        if isinstance(node, ast.ArrayDecl):
            elem = self.info(node.type)
            if node.dim is None:
                return _Info("array", 0, elem.align, target=node.type, count=0, node=elem)
            try:
                count = self.const(node.dim)
            except (ValueError, KeyError, ZeroDivisionError) as exc:
                raise _layout_error(f"an array length is not a constant: {_why(exc)}") from None
            if count < 0 or elem.size is None:
                raise _layout_error("an array of a type without a size, or of negative length")
            return _Info("array", elem.size * count, elem.align, target=node.type, count=count, node=elem)
        if isinstance(node, ast.FuncDecl):
            return _Info("function", None, None, node=node)
        if isinstance(node, ast.IdentifierType):
            canon = _canonical(node.names, self.abi)
            if canon is not None:
                return self._base(*canon)
            name = node.names[-1]
            if name in self._typedefs:
                if name in self._active:
                    raise _layout_error(f"typedef {name} depends on itself")
                return self._named(name, lambda: self.info(self._typedefs[name]))
            if name in self.abi.builtins:
                canon = _canonical(self.abi.builtins[name].split(), self.abi)
                assert canon is not None
                return self._base(*canon)
            raise _layout_error(f"unknown type name {name!r}")
        if isinstance(node, ast.Enum):
            full = self._tags.get(f"enum {node.name}") if node.values is None and node.name else node
            if full is None:
                return _Info("enum", None, None)
            values = self._enum(full)
            lo = min((e.value for e in values), default=0)
            hi = max((e.value for e in values), default=0)
            size = 4 if self.abi.ms_bitfields or (lo >= -(1 << 31) and hi < (1 << 32)) else 8
            return _Info("enum", size, size, enumerators=values, signed=lo < 0 or hi < (1 << 31))
        if isinstance(node, ast.Struct | ast.Union):
            kind = "struct" if isinstance(node, ast.Struct) else "union"
            tag = f"{kind} {node.name}" if node.name else ""
            full = node if node.decls is not None else self._tags.get(tag)
            if full is None:
                return _Info(kind, None, None)
            if not tag:
                return self._record(kind, full)
            if tag in self._active:
                raise _layout_error(f"{tag} contains itself")
            return self._named(tag, lambda: self._record(kind, full))
        raise _layout_error(f"unsupported type construct {type(node).__name__}")

    def _named(self, name: str, compute: Callable[[], _Info]) -> _Info:
        """The layout of a named type (a typedef or a tag), computed once, at most ``MAX_TYPE_DEPTH`` deep.

        A name laid out before is not walked again, so its height (how many named types deep it reaches) is kept
        with it: the depth bound holds whichever name was laid out first."""
        found = self._done.get(name)
        if found is None:
            if len(self._active) >= MAX_TYPE_DEPTH:
                raise _too_deep(name)
            self._active.add(name)
            self._heights.append(0)
            try:
                info = compute()
            finally:
                self._active.discard(name)
                inner = self._heights.pop()
            found = self._done[name] = (info, inner + 1)
        info, height = found
        if len(self._active) + height > MAX_TYPE_DEPTH:
            raise _too_deep(name)
        if self._heights:
            self._heights[-1] = max(self._heights[-1], height)
        return info

    def _record(self, kind: str, node: Any) -> _Info:
        ast = self._ast
        ms = self.abi.ms_bitfields
        fields: list[Field] = []
        members: list[_Info] = []
        bits = 0  # next free bit
        align = 1
        size_bits = 0
        unit: tuple[int, int] | None = None  # MS: (start bit, unit size in bits) of the open bit-field run
        decls = list(node.decls or [])
        for i, d in enumerate(decls):
            info = self.info(d.type)
            ftype = self._type_text(d.type)
            if d.bitsize is not None:
                width = self.const(d.bitsize)
                if info.size is None or info.align is None:
                    raise _layout_error(f"bit-field {d.name} of a type without a size")
                _check_width(d.name, width, info, ftype)
                usize, ualign = info.size * 8, info.align * 8
                if kind == "union":
                    start = 0
                    if d.name:
                        align = max(align, info.align)
                    size_bits = max(size_bits, width)
                elif ms:
                    if width == 0:
                        if unit is not None:
                            bits = unit[0] + unit[1]
                        unit = None
                        continue
                    if unit is None or unit[1] != usize or bits + width > unit[0] + unit[1]:
                        base = unit[0] + unit[1] if unit is not None else bits
                        base = _round(base, ualign)
                        unit = (base, usize)
                        bits = base
                    start = bits
                    bits += width
                    align = max(align, info.align)
                else:
                    if width == 0:
                        bits = _round(bits, ualign)
                        continue
                    if bits // usize != (bits + width - 1) // usize:
                        bits = _round(bits, ualign)
                    start = bits
                    bits += width
                    if d.name:
                        align = max(align, info.align)
                if d.name is None:
                    continue
                fields.append(
                    Field(
                        name=d.name,
                        type=ftype,
                        offset=start // 8,
                        size=info.size,
                        bit_offset=start % 8,
                        bit_size=width,
                    )
                )
                members.append(info)
                continue
            if ms and unit is not None:
                bits = unit[0] + unit[1]
                unit = None
            if info.size is None or info.align is None:
                last = i == len(decls) - 1 and isinstance(d.type, ast.ArrayDecl) and d.type.dim is None
                if not last:
                    raise _layout_error(f"member {d.name} has an incomplete type ({ftype})")
            fsize = info.size or 0
            falign = info.align or 1
            start = 0 if kind == "union" else _round(bits, falign * 8)
            fields.append(Field(name=d.name, type=ftype, offset=start // 8, size=fsize))
            members.append(info)
            align = max(align, falign)
            if kind == "union":
                size_bits = max(size_bits, fsize * 8)
            else:
                bits = start + fsize * 8
        if ms and unit is not None:
            bits = unit[0] + unit[1]
        used = size_bits if kind == "union" else bits
        size = _round((used + 7) // 8, align)
        out = _Info(kind, size, align, fields=fields, node=node)
        out.members = members
        return out

    def _type_text(self, node: Any) -> str:
        return _decl_text(self._p, node, None)

    # -- public --------------------------------------------------------------------------------------------

    def of_name(self, name: str, path: str = "type") -> TypeLayout:
        """The layout of a library type (``struct opts``, ``opts_t``) or any C type name."""
        entry = self.types.get(name)
        p = self._p
        try:
            if entry is not None and entry.kind == "typedef":
                node = self._typedefs[name]
                info = self.info(node)
                return self._out(name, "typedef", info, entry.c, target=self._type_text(node))
            info = self.info(_typename(p, self.types, name, path).type)
        except ReaError:
            raise
        except (ValueError, KeyError, RecursionError, ZeroDivisionError) as exc:
            raise _layout_error(_why(exc)) from None
        kind = info.kind
        target = self._type_text(info.target) if info.target is not None else None
        return self._out(name, kind, info, entry.c if entry else None, target=target)

    def _out(self, name: str, kind: str, info: _Info, c: str | None, target: str | None) -> TypeLayout:
        return TypeLayout(
            name=name,
            kind=kind,  # type: ignore[arg-type]
            abi=self.abi.name,
            size=info.size,
            alignment=info.align,
            c=c,
            target=target,
            count=info.count,
            fields=info.fields,
            enumerators=info.enumerators,
            incomplete=info.size is None and info.kind in ("struct", "union", "enum"),
        )

    def info_of(self, name: str) -> _Info:
        try:
            return self.info(_typename(self._p, self.types, name, "type").type)
        except ReaError:
            raise
        except (ValueError, KeyError, RecursionError, ZeroDivisionError) as exc:
            raise _layout_error(_why(exc)) from None


def _too_deep(name: str) -> ReaError:
    return _layout_error(
        f"named types (typedefs, structs, unions) nest more than {MAX_TYPE_DEPTH} deep, at {name}", "depth"
    )


def _check_width(name: str | None, width: int, info: _Info, ftype: str) -> None:
    """A bit-field's width: 0 < width <= the bits of its integer type; a zero width only for an unnamed one."""
    if not (info.kind == "enum" or (info.kind == "base" and info.base in _INTEGER_BASES)):
        raise _layout_error(f"bit-field {name or '(unnamed)'} has type {ftype}, not an integer type", "bit_field")
    bits = 1 if info.base == "_Bool" else (info.size or 0) * 8
    shown = name or "(unnamed)"
    if width < 0 or width > bits:
        most = f"{bits} bits" if bits > 1 else "1 bit"
        raise _layout_error(f"bit-field {shown} has width {width}; {ftype} holds at most {most}", "bit_field")
    if width == 0 and name:
        raise _layout_error(f"bit-field {shown} has width 0; only an unnamed bit-field may", "bit_field")


_CONSTANT_BOUND = 1 << 64


def _bounded(value: int) -> int:
    """A constant expression's value, refused beyond 64 bits (what no C type holds, and what would grow)."""
    if not -_CONSTANT_BOUND <= value < _CONSTANT_BOUND:
        raise ValueError("a constant beyond 64 bits")
    return value


def _why(exc: BaseException) -> str:
    """What a layout error says: rea's own reason, never a Python exception's text."""
    if isinstance(exc, RecursionError):
        return "the type nests too deeply to lay out"
    if isinstance(exc, KeyError) and exc.args:
        return f"unknown type or name {exc.args[0]!s}"
    if isinstance(exc, ZeroDivisionError):
        return "division by zero in a constant"
    return str(exc) or "the type has no layout"


def _round(value: int, to: int) -> int:
    return value if to <= 1 else -(-value // to) * to


def _layout_error(message: str, reason: str = "") -> ReaError:
    err = invalid_request(message, [issue("type", "invalid_value", message)])
    if reason:  # what declare() refuses a new type for (_REFUSED_AT_DECLARATION)
        err.details["layout_reason"] = reason
    return err


# -- typed views of bytes ------------------------------------------------------------------------------------


class TypedValue(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One member (or the whole datum) read from the bytes: its path, type, offset, size and value."""

    name: str
    type: str
    offset: int
    size: int
    value: int | float | str | None = None
    bit_offset: int | None = None
    bit_size: int | None = None


MAX_ROWS: Final = 256
MAX_ARRAY: Final = 64


def typed_view(layout: Layout, name: str, data: bytes, address: int) -> tuple[list[TypedValue], bool]:
    """The members of type ``name`` read from ``data`` (at least its size), flattened with dotted paths.

    Returns the rows (at most ``MAX_ROWS``) and whether rows were left out.
    """
    info = layout.info_of(name)
    rows: list[TypedValue] = []
    truncated = False
    little = not layout.abi.big_endian

    def scalar(info: _Info, off: int, bit_off: int | None = None, bit_size: int | None = None) -> Any:
        size = info.size or 0
        raw = data[off : off + size]
        if len(raw) < size:
            return None
        if info.kind == "pointer":
            return hex(int.from_bytes(raw, "little" if little else "big"))
        if info.kind == "base" and info.base in ("float", "double") and size in (4, 8):
            fmt = ("<" if little else ">") + ("f" if size == 4 else "d")
            value = float(_struct.unpack(fmt, raw)[0])
            return value if value == value and abs(value) != float("inf") else str(value)
        if info.kind in ("base", "enum"):
            v = int.from_bytes(raw, "little" if little else "big", signed=False)
            if bit_size is not None and bit_off is not None:
                v = (v >> bit_off) & ((1 << bit_size) - 1) if little else v
                if info.signed and bit_size and v >> (bit_size - 1):
                    v -= 1 << bit_size
                return v
            if info.signed and size and v >> (size * 8 - 1):
                v -= 1 << (size * 8)
            if info.kind == "enum":
                named = next((e.name for e in info.enumerators if e.value == v), None)
                return named or v
            return v
        return None

    def walk(info: _Info, path: str, ctype: str, off: int) -> None:
        nonlocal truncated
        if len(rows) >= MAX_ROWS:
            truncated = True
            return
        if info.kind in ("struct", "union"):
            for f, member in zip(info.fields, info.members, strict=False):
                sub = f"{path}.{f.name}" if path else str(f.name or "")
                if f.bit_size is not None:
                    bit_base = f.offset
                    # The bit-field's bits lie in the storage bytes from its byte offset.
                    span = max(1, (f.bit_offset or 0) + f.bit_size + 7) // 8
                    raw = data[off + bit_base : off + bit_base + span]
                    v = int.from_bytes(raw, "little") >> (f.bit_offset or 0) & ((1 << f.bit_size) - 1)
                    if member.signed and member.kind == "base" and v >> (f.bit_size - 1):
                        v -= 1 << f.bit_size
                    if len(rows) < MAX_ROWS:
                        rows.append(
                            TypedValue(
                                name=sub,
                                type=f.type,
                                offset=off + f.offset,
                                size=f.size,
                                value=v if len(raw) == span else None,
                                bit_offset=f.bit_offset,
                                bit_size=f.bit_size,
                            )
                        )
                    else:
                        truncated = True
                    continue
                walk(member, sub, f.type, off + f.offset)
            return
        if info.kind == "array" and isinstance(info.node, _Info):
            elem: _Info = info.node
            if elem.kind == "base" and elem.base == "char" and info.size:
                raw = data[off : off + info.size]
                text = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
                rows.append(TypedValue(name=path or name, type=ctype, offset=off, size=info.size, value=text))
                return
            count = info.count or 0
            for i in range(min(count, MAX_ARRAY)):
                walk(elem, f"{path}[{i}]", layout._type_text(info.target), off + i * (elem.size or 0))
            if count > MAX_ARRAY:
                truncated = True
            return
        rows.append(TypedValue(name=path or name, type=ctype, offset=off, size=info.size or 0, value=scalar(info, off)))

    walk(info, "", name, 0)
    return rows, truncated


def types_key(types: Any) -> str:
    """A digest of the types a request carries to an engine ("" without any): what a worker's cached pseudo code
    and applied state are keyed by."""
    if not types:
        return ""
    return hashlib.sha256(json.dumps(types, sort_keys=True).encode()).hexdigest()
