"""The ``wasm`` analysis provider: a WebAssembly module's functions behind the native operations (list_procedures,
callers, callees, instructions, strings), so the binary tools work on it after ``open_binary``.

wasm-tools decodes the module once at open; the records (``rea.operations.records``) are built from its report and
answered by the kernel's engine-neutral layer (``rea.operations.answers``), as the Ghidra and Hopper providers are.
Addresses: a function or instruction is at its file offset (the code section's, as wasm-objdump shows them); an
imported function, which has no code, at its index in the function index space (smaller than any code offset); a
string at its linear-memory address (the data segment's), which a constant in code names.
"""

from __future__ import annotations

import os

from rea.plugin import CORE_OPERATIONS
from rea.plugin import AnalysisClient
from rea.plugin import AnalysisProvider
from rea.plugin import Availability
from rea.plugin import CallContext
from rea.plugin import JSONObject
from rea.plugin import ProviderDescriptor
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import TargetSupport
from rea.plugin import __version__
from rea.plugin import distribution_version
from rea.plugin import open_regular
from rea_plugins.wasm.limits import MAGIC

# xrefs is left out: data and code addresses share numbers here, and the conformance rows hold xrefs to native's.
OPERATIONS = tuple(op for op in CORE_OPERATIONS if op not in ("xrefs", "procedure_references"))
DESCRIPTOR = ProviderDescriptor(
    id="wasm",
    name="WebAssembly (wasm-tools)",
    version=__version__,
    kind="static",
    formats=("file",),
    architectures=(),
    operations=OPERATIONS,
    auto_priority=10,
    description="A WebAssembly module's functions, calls and strings, decoded by wasm-tools; nothing is run.",
)


class WasmProvider(AnalysisProvider):
    descriptor = DESCRIPTOR

    def availability(self) -> Availability:
        import importlib.util

        if importlib.util.find_spec("wasm_tools") is None:
            return Availability.missing(
                "runtime_missing", "wasm-tools is not installed", "pip install 'rea-reverse[wasm]'"
            )
        return Availability.ok()

    def target_support(self, target: Target) -> TargetSupport:
        """A file is read only when it starts with the WebAssembly magic (its first 4 bytes, never blocking)."""
        if target.format != "file" or target.is_directory:
            return TargetSupport(status="unsupported", code="target_format_unsupported", reason="not WebAssembly")
        try:
            fd = open_regular(target.resolved_path, code="unsupported_target", what="target")
            try:
                head = os.pread(fd, 4, 0)
            finally:
                os.close(fd)
        except (OSError, ReaError):
            return TargetSupport(status="unknown", reason="the file's first bytes could not be read")
        if head != MAGIC:
            return TargetSupport(status="unsupported", code="target_format_unsupported", reason="no \\0asm magic")
        return TargetSupport(status="supported", reason="a WebAssembly binary module")

    def analysis_profile(self, target: Target) -> JSONObject:
        return {"wasm-tools": distribution_version("wasm-tools") or "not-installed"}

    def open(self, target: Target, run_id: str, ctx: CallContext) -> AnalysisClient:
        # The client (wasm-tools' report and the kernel's answers) is imported when a module is opened, not when
        # every process builds the descriptor to choose a provider.
        from rea_plugins.wasm.client import open_client

        return open_client(target, ctx)
