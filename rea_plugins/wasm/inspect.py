"""inspect_wasm_artifact: a WebAssembly module decoded by wasm-tools, shaped into rea's bounded, paged answer.

wasm-tools decodes the binary format (every section, function bodies as instructions, the name and producers
custom sections, data-segment strings, direct calls) in pure Python and never runs the module; a section it
cannot decode is listed in its errors, which become notes here.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any
from typing import TypeVar

import msgspec

from rea.plugin import Arguments
from rea.plugin import Evidence
from rea.plugin import JSONObject
from rea.plugin import JSONValue
from rea.plugin import OperationResult
from rea.plugin import PageOf
from rea.plugin import ProviderIdentity
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import __version__
from rea.plugin import arg_int
from rea.plugin import arg_str
from rea.plugin import evidence as ev_mod
from rea.plugin import identify
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import page_of
from rea.plugin import read_hashed
from rea_plugins.wasm.limits import MAGIC as MAGIC
from rea_plugins.wasm.limits import MAX_FILE_BYTES as MAX_FILE_BYTES
from rea_plugins.wasm.model import Disassembly
from rea_plugins.wasm.model import Export
from rea_plugins.wasm.model import Function
from rea_plugins.wasm.model import Import
from rea_plugins.wasm.model import Instruction
from rea_plugins.wasm.model import Memory
from rea_plugins.wasm.model import Producer
from rea_plugins.wasm.model import Producers
from rea_plugins.wasm.model import Section
from rea_plugins.wasm.model import WasmModule
from rea_plugins.wasm.model import WasmString

PROVIDER = ProviderIdentity(id="wasm", name="rea WebAssembly reader (wasm-tools)", version=__version__)
OPERATION = "inspect_wasm_artifact"
MAX_PAGE = 5000
MAX_EDGES_LISTED = 20
SAFE_INTEGER = 1 << 53
T = TypeVar("T")


def _page(items: list[T], args: Arguments, prefix: str, default: int) -> PageOf[T]:
    offset = arg_int(args, f"{prefix}offset", 0)
    limit = min(arg_int(args, f"{prefix}limit", default), MAX_PAGE)
    return page_of(items, offset, limit)


# wasm-tools' report is an untyped library's JSON (Report): read through these four, a type check where a read
# assumes a shape (a member of another shape is skipped; a number that is none is a malformed module).
Report = JSONObject


def json_object(value: JSONValue) -> JSONObject:
    return value if isinstance(value, dict) else {}


def json_objects(value: JSONValue) -> list[JSONObject]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def json_list(value: JSONValue) -> list[JSONValue]:
    return list(value) if isinstance(value, list) else []


def json_int(value: JSONValue) -> int:
    if isinstance(value, int | float | str):
        return int(value)
    raise ReaError(
        "unsupported_target",
        "wasm-tools reported a number that is none (a damaged or hostile module)",
        remediation="Nothing more is read from this module.",
        details={"reason": "malformed"},
    )


def _engine() -> Any:
    try:
        from wasm_tools import api  # type: ignore[import-untyped]
    except ImportError:
        raise ReaError(
            "provider_unavailable",
            "the WebAssembly reader (wasm-tools) is not installed",
            remediation="pip install 'rea-reverse[wasm]' (or wasm-tools).",
            details={"reason": "runtime_missing", "package": "wasm-tools"},
        ) from None
    return api


def read_module(call: ToolCall) -> tuple[Target, bytes]:
    path = arg_str(call.args, "path")
    target = identify(path, call.ctx) if path else call.session.require_target()
    max_bytes = arg_int(call.args, "max_file_bytes", MAX_FILE_BYTES)
    data = read_hashed(target, max_bytes, field="path")
    if not data.startswith(MAGIC):
        raise ReaError(
            "unsupported_target",
            f"{target.name} is not a WebAssembly binary (no \\0asm magic)",
            remediation="Pass a .wasm module; a .wat text module must be assembled first (wat2wasm).",
            details={"path": target.path, "format": target.format},
        )
    return target, data


def _count(value: JSONValue) -> int:
    """An index or size the module states: a hostile LEB128 can exceed what JSON carries exactly."""
    number = json_int(value)
    if not 0 <= number < SAFE_INTEGER:
        raise ReaError(
            "unsupported_target",
            "the module states an index or size beyond 2**53 (a damaged or hostile module)",
            remediation="Nothing more is read from this module.",
            details={"reason": "malformed"},
        )
    return number


def _signature(types: list[JSONValue], index: JSONValue) -> str:
    if not isinstance(index, int) or not 0 <= index < len(types):
        return "?"
    t = json_object(types[index])
    params, results = t.get("params", []), t.get("results", [])
    shown = (
        ", ".join(map(str, params if isinstance(params, list) else [])),
        ", ".join(map(str, results if isinstance(results, list) else [])),
    )
    return f"({shown[0]}) -> ({shown[1]})"


def _producers(toolchain: JSONObject) -> Producers | None:
    def rows(key: str) -> list[Producer]:
        return [
            Producer(name=str(p.get("name", "")), version=str(p.get("version", "")))
            for p in json_objects(toolchain.get(key, []))
        ]

    out = Producers(languages=rows("languages"), processed_by=rows("processed_by"), sdks=rows("sdks"))
    return out if out.languages or out.processed_by or out.sdks else None


class Model:
    """The report's functions, names, edges and constants, indexed once."""

    def __init__(self, report: Report) -> None:
        self.report = report
        types = json_list(report.get("types"))
        exports = json_objects(report.get("exports"))
        self.exported = {json_int(e["ref_index"]): str(e["name"]) for e in exports if e.get("kind") == "func"}
        graph = json_object(report.get("call_graph"))
        self.names: dict[int, str] = {}
        self.functions: list[Function] = []
        func_imports = [i for i in json_objects(report.get("imports")) if i.get("kind") == "func"]
        for n, imp in enumerate(func_imports):
            self.names[n] = f"{imp.get('module', '')}.{imp.get('name', '')}"
        self.bodies: dict[int, JSONObject] = {json_int(f["index"]): f for f in json_objects(report.get("functions"))}
        for index, body in self.bodies.items():
            self.names[index] = str(body.get("name") or self.exported.get(index) or f"func{index}")
        self.calls: dict[int, list[int]] = defaultdict(list)
        self.callers: dict[int, list[int]] = defaultdict(list)
        for edge in json_objects(graph.get("edges")):
            a, b = json_int(edge["from"]), json_int(edge["to"])
            if b not in self.calls[a]:
                self.calls[a].append(b)
            if a not in self.callers[b]:
                self.callers[b].append(a)
        for n, imp in enumerate(func_imports):
            self.functions.append(self._function(n, _signature(types, imp.get("type_index")), imported=True))
        for index in sorted(self.bodies):
            body = self.bodies[index]
            f = self._function(index, _signature(types, body.get("signature_index")))
            self.functions.append(
                msgspec.structs.replace(
                    f,
                    body_size=json_int(body.get("body_size", 0)),
                    instruction_count=json_int(body.get("instruction_count", 0)),
                )
            )

    def name(self, index: int) -> str:
        return self.names.get(index, f"func{index}")

    def _function(self, index: int, signature: str, imported: bool = False) -> Function:
        return Function(
            index=index,
            name=self.name(index),
            signature=signature,
            imported=imported,
            exported=index in self.exported,
            calls=[self.name(i) for i in self.calls.get(index, [])[:MAX_EDGES_LISTED]],
            called_by=[self.name(i) for i in self.callers.get(index, [])[:MAX_EDGES_LISTED]],
        )

    def find(self, ref: JSONValue) -> Function:
        for f in self.functions:
            if f.name == ref or str(f.index) == str(ref) or self.exported.get(f.index) == ref:
                return f
        raise invalid_request(
            f"no function {ref!r} in the module", [issue("function", "invalid_value", "a function name or index")]
        )

    def text(self, instruction: JSONObject) -> str:
        opcode = str(instruction.get("opcode", "?"))
        immediates = json_list(instruction.get("immediates"))
        if opcode in ("call", "return_call") and immediates and isinstance(immediates[0], int):
            return f"{opcode} {self.name(immediates[0])}"
        return " ".join([opcode, *(str(i) for i in immediates)])

    def strings(self) -> list[WasmString]:
        found = sorted(
            (json_int(s.get("memory_offset") or 0), json_int(s.get("length") or 0), str(s.get("value", "")))
            for s in json_objects(self.report.get("strings"))
            if s.get("memory_offset") is not None
        )
        starts = [s[0] for s in found]
        used: dict[int, set[str]] = defaultdict(set)
        # A function that loads a constant inside a string's bytes is taken to use it (clang addresses data so).
        for index, body in self.bodies.items():
            for insn in json_objects(body.get("instructions")):
                if insn.get("opcode") not in ("i32.const", "i64.const"):
                    continue
                values = json_list(insn.get("immediates"))
                if not values or not isinstance(values[0], int):
                    continue
                at = bisect.bisect_right(starts, values[0]) - 1
                if at >= 0 and values[0] < found[at][0] + max(found[at][1], 1):
                    used[at].add(self.name(index))
        return [
            WasmString(address=address, value=value, used_by=sorted(used.get(n, set()))[:MAX_EDGES_LISTED])
            for n, (address, _, value) in enumerate(found)
        ]


def build(report: Report, args: Arguments) -> WasmModule:
    model = Model(report)
    pattern = arg_str(args, "pattern")
    functions = [f for f in model.functions if pattern is None or pattern in f.name]
    memories = [
        Memory(
            index=json_int(m["index"]),
            min_pages=_count(limits.get("min") or 0),
            max_pages=None if limits.get("max") is None else _count(limits["max"]),
            shared=bool(limits.get("shared")),
            memory64=bool(limits.get("is_64")),
        )
        for m in json_objects(report.get("memories"))
        for limits in [json_object(m["limits"])]
    ]
    sections = [
        Section(id=json_int(s["id"]), name=str(s["name"]), size=json_int(s["size"]), offset=json_int(s["offset"]))
        for s in json_objects(report.get("sections"))
    ]
    types = json_list(report.get("types"))
    imports = [
        Import(
            module=str(i.get("module", "")),
            name=str(i.get("name", "")),
            kind=str(i.get("kind", "")),
            signature=_signature(types, i.get("type_index")) if i.get("kind") == "func" else None,
        )
        for i in json_objects(report.get("imports"))
    ]
    exports = [
        Export(name=str(e["name"]), kind=str(e["kind"]), index=_count(e["ref_index"]))
        for e in json_objects(report.get("exports"))
    ]
    disassembly = None
    if (wanted := args.get("function")) is not None:
        chosen = model.find(wanted)
        body = model.bodies.get(chosen.index, {})
        rows = [
            Instruction(offset=json_int(i.get("offset", 0)), text=model.text(i))
            for i in json_objects(body.get("instructions"))
        ]
        disassembly = Disassembly(function=chosen, instructions=_page(rows, args, "instruction_", 200))
    start = report.get("start_function")
    notes = [f"wasm-tools: {e}" for e in json_list(report.get("errors"))[:20]]
    if report.get("strings_truncated"):
        notes.append("wasm-tools stopped extracting strings at its bound; the list is incomplete.")
    return WasmModule(
        kind="component" if report.get("is_component") else "module",
        version=version if isinstance(version := report.get("module_version"), int) else None,
        sections=sections,
        custom_sections=[s.name for s in sections if s.id == 0],
        producers=_producers(json_object(report.get("toolchain"))),
        imports=_page(imports, args, "import_", 100),
        exports=_page(exports, args, "export_", 100),
        functions=_page(functions, args, "", 50),
        memories=memories,
        tables=len(json_list(report.get("tables"))),
        globals=len(json_list(report.get("globals"))),
        start_function=model.name(int(start)) if isinstance(start, int) else None,
        strings=_page(model.strings(), args, "string_", 20),
        disassembly=disassembly,
        notes=notes,
    )


def parse(data: bytes, name: str) -> Report:
    api = _engine()
    try:
        report: Report = api.parse_wasm_bytes(data, filename=name)
    except (RecursionError, MemoryError):
        raise ReaError(
            "unsupported_target",
            f"{name}: the module nests or repeats beyond what can be read",
            remediation="The module is hostile or damaged; nothing more is read from it.",
            details={"reason": "malformed"},
        ) from None
    except Exception:
        raise ReaError(
            "unsupported_target",
            f"{name} does not decode as WebAssembly",
            remediation="The module is damaged or not WebAssembly.",
            details={"reason": "malformed"},
        ) from None
    if report.get("module_version") is None and not report.get("is_component"):
        raise ReaError(
            "unsupported_target",
            f"{name} has no readable WebAssembly header",
            remediation="The module is damaged or not WebAssembly.",
            details={"reason": "malformed", "errors": [str(e)[:200] for e in json_list(report.get("errors"))[:5]]},
        )
    return report


def handle(call: ToolCall) -> Evidence:
    target, data = read_module(call)
    call.ctx.progress("inspect_wasm_artifact: decoding", done=0, total=2)
    report = parse(data, target.name)
    call.ctx.check("inspect_wasm_artifact")
    call.ctx.progress("inspect_wasm_artifact: shaping", done=1, total=2)
    result = build(report, call.args)
    call.ctx.progress("inspect_wasm_artifact: done", done=2, total=2)
    from importlib.metadata import version

    profile = ev_mod.make_profile(PROVIDER, {"wasm-tools": version("wasm-tools")})
    params = {k: v for k, v in sorted(call.args.items()) if k != "path"}
    return call.session.evidence(
        OPERATION,
        params,
        OperationResult(normalized=result, limitations=["Static reading only: the module was not instantiated."]),
        bound=False,
        target=target,
        provider=PROVIDER,
        analysis_profile=profile,
    )
