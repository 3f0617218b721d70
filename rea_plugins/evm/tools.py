"""inspect_evm_interface: function selectors, argument types, mutability, storage layout and CBOR metadata."""

from __future__ import annotations

import hashlib
import re
from typing import Any
from typing import Literal

import msgspec

from rea.plugin import Evidence
from rea.plugin import OperationResult
from rea.plugin import ProviderIdentity
from rea.plugin import ReaError
from rea.plugin import Target
from rea.plugin import ToolCall
from rea.plugin import ToolDef
from rea.plugin import ToolEffects
from rea.plugin import arg_str
from rea.plugin import identify
from rea.plugin import int_param
from rea.plugin import invalid_request
from rea.plugin import issue
from rea.plugin import next_offset
from rea.plugin import read_error
from rea.plugin import read_regular
from rea_plugins.evm.shapes import Bytecode
from rea_plugins.evm.shapes import CborMetadata
from rea_plugins.evm.shapes import EvmFunction
from rea_plugins.evm.shapes import EvmInterface
from rea_plugins.evm.shapes import MetadataEntry
from rea_plugins.evm.shapes import StoragePage
from rea_plugins.evm.shapes import StorageSlot

VERSION = "0.1.0"
# EIP-170 caps deployed code at 24 KiB and EIP-3860 creation code at 48 KiB; a larger input is not a contract.
MAX_CODE_BYTES = 256 << 10
# Hex text of that code, with room for a 0x prefix and line breaks.
MAX_FILE_BYTES = 2 * MAX_CODE_BYTES + 4096
FUNCTIONS_DEFAULT = 100
STORAGE_MAX = 200
_HEX = re.compile(rb"\s*(?:0x)?([0-9a-fA-F\s]*)\s*")
# PUSH1 0x80 PUSH1 0x40 MSTORE: solc's free-memory-pointer set-up, at the start of creation and runtime code alike.
_PROLOGUE = b"\x60\x80\x60\x40\x52"


def _provider() -> ProviderIdentity:
    from importlib.metadata import version

    return ProviderIdentity(id="evmole", name="evmole (EVM bytecode analysis)", version=version("evmole"))


Encoding = Literal["hex", "binary"]
Kind = Literal["runtime", "creation"]


def _decode(data: bytes) -> tuple[bytes, Encoding]:
    """The code and how the input held it: hex text (a 0x prefix and whitespace allowed) or raw bytes."""
    match = _HEX.fullmatch(data)
    if match is not None and data.strip():
        digits = re.sub(rb"\s+", b"", match.group(1))
        if len(digits) % 2:
            raise ReaError(
                "unsupported_target",
                "the hex text has an odd number of digits, so it is not bytecode",
                remediation="Pass the contract's runtime bytecode as hex (0x optional) or as raw bytes.",
                details={"reason": "odd_hex_length", "digits": len(digits)},
            )
        return bytes.fromhex(digits.decode("ascii")), "hex"
    return data, "binary"


def _kind(code: bytes) -> Kind:
    """ "creation" when a constructor copies and returns other code (CODECOPY and RETURN before a second solc
    prologue); a heuristic, said as one in the description."""
    second = code.find(_PROLOGUE, 1)
    return "creation" if second > 0 and b"\x39" in code[:second] and b"\xf3" in code[:second] else "runtime"


def _input(call: ToolCall) -> tuple[bytes, Encoding, Target | None]:
    path, text = arg_str(call.args, "path"), arg_str(call.args, "bytecode")
    if (path is None) == (text is None):
        raise invalid_request(
            "pass exactly one of path and bytecode",
            [issue("path", "missing_argument" if path is None else "invalid_value", "one of path, bytecode")],
        )
    if text is not None:
        if len(text) > MAX_FILE_BYTES:
            raise ReaError(
                "resource_constraint",
                f"bytecode is longer than {MAX_FILE_BYTES} characters",
                details={"resource": "bytecode_bytes", "limit": MAX_FILE_BYTES},
            )
        code, encoding = _decode(text.encode("ascii", "replace"))
        if encoding != "hex":
            raise invalid_request("bytecode must be hex text", [issue("bytecode", "invalid_format", "hex digits")])
        return code, encoding, None
    assert isinstance(path, str)
    target = identify(path, call.ctx)
    try:
        data = read_regular(target.resolved_path, MAX_FILE_BYTES, code="unsupported_target", what="bytecode file")
    except OSError as exc:
        raise read_error(path, exc) from None
    code, encoding = _decode(data)
    return code, encoding, target


def _handle(call: ToolCall) -> Evidence:
    offset = int_param(call.args, "offset", 0, 0)
    limit = int_param(call.args, "limit", FUNCTIONS_DEFAULT, 1, 1000)
    code, encoding, target = _input(call)
    if not code:
        raise ReaError(
            "unsupported_target",
            "the input holds no bytecode",
            remediation="Pass the contract's runtime bytecode as hex (0x optional) or as raw bytes.",
            details={"reason": "empty"},
        )
    if len(code) > MAX_CODE_BYTES:
        raise ReaError(
            "resource_constraint",
            f"{len(code)} bytes of code is more than any contract holds ({MAX_CODE_BYTES})",
            remediation="Pass one contract's runtime bytecode.",
            details={"resource": "code_bytes", "limit": MAX_CODE_BYTES, "observed": len(code)},
        )
    import evmole

    call.ctx.check("inspect_evm_interface")
    try:
        info = evmole.contract_info(
            code, selectors=True, arguments=True, state_mutability=True, storage=True, metadata=True
        )
    except BaseException as exc:  # a Rust panic surfaces as pyo3's PanicException, a BaseException
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise ReaError(
            "unsupported_target",
            "evmole could not analyse this bytecode",
            remediation="Check that the input is EVM runtime bytecode.",
            details={"reason": "analysis_failed", "engine": "evmole"},
        ) from None
    functions = sorted(
        (
            EvmFunction(
                selector="0x" + f.selector,
                arguments=f.arguments,
                state_mutability=f.state_mutability,  # type: ignore[arg-type]  # evmole: one of the four, or None
                bytecode_offset=f.bytecode_offset,
            )
            for f in info.functions or []
        ),
        key=lambda f: f.selector,
    )
    window = functions[offset : offset + limit]
    result = EvmInterface(
        bytecode=Bytecode(
            size=len(code),
            sha256=hashlib.sha256(code).hexdigest(),
            encoding=encoding,
            kind=_kind(code),
        ),
        functions=window,
        offset=offset,
        limit=limit,
        total=len(functions),
        next_offset=next_offset(offset, len(window), len(functions)),
        storage=_storage(info.storage or []),
        transient_storage=_storage(info.transient_storage or []),
        metadata=_metadata(info.metadata),
    )
    limitations = [
        "Argument types and mutability are inferred from the code, not read from an ABI: a pure function may "
        "show as view, and a type the code only passes on may be less precise."
    ]
    if result.bytecode.kind == "creation":
        limitations.append(
            "This looks like creation code: the functions are those its constructor dispatches, not the deployed "
            "contract's; pass the runtime (deployed) bytecode for the contract's interface."
        )
    call.ctx.finish(f"evm: {len(functions)} functions")
    return call.session.evidence(
        "inspect_evm_interface",
        {"offset": offset, "limit": limit, "code_sha256": result.bytecode.sha256},
        OperationResult(normalized=msgspec.to_builtins(result), limitations=limitations),
        bound=False,
        target=target,
        provider=_provider(),
        analysis_profile=None,
    )


def _storage(records: list[Any]) -> StoragePage:
    slots = [
        StorageSlot(
            slot="0x" + (r.slot.lstrip("0") or "0"),
            offset=r.offset,
            type=r.type,
            reads=["0x" + s for s in r.reads],
            writes=["0x" + s for s in r.writes],
        )
        for r in records
    ]
    shown = slots[:STORAGE_MAX]
    return StoragePage(
        slots=shown, offset=0, limit=STORAGE_MAX, total=len(slots), next_offset=next_offset(0, len(shown), len(slots))
    )


def _metadata(meta: Any) -> CborMetadata | None:
    if meta is None:
        return None
    entries = []
    for e in meta.entries:
        value = e.value.value
        text = None
        if isinstance(value, bytes):
            if e.key == "solc" and len(value) == 3:
                text = ".".join(str(b) for b in value)
            value = value.hex()
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= (1 << 53):
            value = str(value)
        entries.append(MetadataEntry(key=e.key, type=e.value.type, value=value, text=text))
    return CborMetadata(bytecode_offset=meta.bytecode_offset, cbor_length=meta.cbor_length, entries=entries)


INSPECT_EVM_INTERFACE = ToolDef(
    name="inspect_evm_interface",
    result_type=EvmInterface,
    family="evm",
    title="Inspect EVM Interface",
    description=(
        "An Ethereum (EVM) contract's public interface from its bytecode, with evmole: function selectors, "
        "argument types, state mutability, the storage layout (slots, types, which functions read and write them) "
        "and the compiler's CBOR metadata. Takes a file (hex text or raw bytes) or inline hex."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "Local path of a file holding runtime bytecode, as hex text or raw bytes.",
                "examples": ["/tmp/contract.bin-runtime"],
            },
            "bytecode": {
                "type": "string",
                "minLength": 2,
                "maxLength": MAX_FILE_BYTES,
                "description": "Runtime bytecode as hex (0x optional), instead of path.",
                "examples": ["0x6080604052348015600e575f80fd5b50"],
            },
            "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Functions to skip."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1000,
                "default": FUNCTIONS_DEFAULT,
                "description": "Most functions to list (by selector).",
            },
        },
        "additionalProperties": False,
    },
    handler=_handle,
    effects=ToolEffects(records_evidence=True),
    examples=({"path": "/tmp/contract.bin-runtime"},),
    cli_subject="path",
)

TOOLS = (INSPECT_EVM_INTERFACE,)
__all__ = ["TOOLS", "tools"]


def tools() -> list[ToolDef]:
    """The family's tools, for the kernel (the plugin lists this module in ``TOOL_MODULES``)."""
    return list(TOOLS)
