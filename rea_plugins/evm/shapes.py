"""Result shapes of inspect_evm_interface."""

from __future__ import annotations

from typing import Literal

from rea.plugin import Paged
from rea.plugin import Record


class EvmFunction(Record):
    # 0x and 8 hex digits: the first four bytes of keccak-256 of the function's signature.
    selector: str
    # Argument types in canonical ABI form ("address,uint256"), as inferred from how the code reads calldata.
    arguments: str | None
    state_mutability: Literal["pure", "view", "payable", "nonpayable"] | None
    bytecode_offset: int


class StorageSlot(Record):
    # 0x hex slot number.
    slot: str
    # Byte offset within the 32-byte slot.
    offset: int
    type: str
    # Selectors of the functions that read and write it.
    reads: list[str]
    writes: list[str]


class MetadataEntry(Record):
    key: str
    type: Literal["string", "integer", "bytes", "bool", "undecoded"]
    # Bytes as hex; the compiler version ("solc", three bytes) also as text in ``text``.
    value: str | int | bool
    text: str | None = None


class CborMetadata(Record):
    bytecode_offset: int
    cbor_length: int
    entries: list[MetadataEntry]


class Bytecode(Record):
    size: int
    sha256: str
    # How the input held it: hex text (0x optional) or raw bytes.
    encoding: Literal["hex", "binary"]
    # "creation" when the code looks like a constructor that returns other code (the interface is then the
    # constructor's, not the deployed contract's); "runtime" otherwise.
    kind: Literal["runtime", "creation"]


class StoragePage(Paged):
    slots: list[StorageSlot]


class EvmInterface(Paged):
    bytecode: Bytecode
    functions: list[EvmFunction]
    storage: StoragePage
    transient_storage: StoragePage
    metadata: CborMetadata | None
