"""The result of inspect_wasm_artifact, defined once: its output schema is generated from these Structs."""

from __future__ import annotations

from rea.plugin import PageOf
from rea.plugin import Record

SCHEMA_VERSION = 1


class Section(Record):
    """A section in file order: its id, name (a custom section's own name), size and file offset."""

    id: int
    name: str
    size: int
    offset: int


class Import(Record):
    """An import: module, name, kind, and a function's signature."""

    module: str
    name: str
    kind: str
    signature: str | None = None


class Export(Record):
    """An export: name, kind and the index it names (in that kind's index space)."""

    name: str
    kind: str
    index: int


class Function(Record):
    """A function (imports first, as the index space counts them): its name (the name section's, else its export),
    signature, body size, and the functions it calls and that call it (direct calls)."""

    index: int
    name: str
    signature: str
    imported: bool = False
    exported: bool = False
    body_size: int = 0
    instruction_count: int = 0
    calls: list[str] = []
    called_by: list[str] = []


class Memory(Record):
    """A linear memory: its limits in pages (64 KiB unless the module says otherwise), shared, 64-bit."""

    index: int
    min_pages: int
    max_pages: int | None = None
    shared: bool = False
    memory64: bool = False


class WasmString(Record):
    """A string in a data segment, at its linear-memory address, with the functions whose constants point at it."""

    address: int
    value: str
    used_by: list[str] = []


class Producer(Record):
    name: str
    version: str = ""


class Producers(Record):
    """The producers custom section: languages, tools that processed the module, SDKs."""

    languages: list[Producer] = []
    processed_by: list[Producer] = []
    sdks: list[Producer] = []


class Instruction(Record):
    offset: int
    text: str


class Disassembly(Record):
    """One function's instructions as text (a call names its callee), paged."""

    function: Function
    instructions: PageOf[Instruction]


class WasmModule(Record):
    """A WebAssembly module: its sections, imports, exports, functions, memories, strings and producers."""

    schema_version: int = SCHEMA_VERSION
    kind: str
    version: int | None = None
    sections: list[Section]
    custom_sections: list[str] = []
    producers: Producers | None = None
    imports: PageOf[Import]
    exports: PageOf[Export]
    functions: PageOf[Function]
    memories: list[Memory] = []
    tables: int = 0
    globals: int = 0
    start_function: str | None = None
    strings: PageOf[WasmString]
    disassembly: Disassembly | None = None
    notes: list[str] = []
