"""inspect_evm_interface on a contract's runtime bytecode: selectors, arguments, mutability, storage, metadata."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from evmfixtures import RUNTIME_HEX
from evmfixtures import SELECTORS

from rea.errors import ReaError
from rea.session import Session
from rea.testing import result_of
from tests.mcp.harness import connect

# What the source declares: argument types and mutability (evmole infers `pure` as `view`: both are accepted).
DECLARED = {
    "allowance(address,address)": {"view"},
    "approve(address,uint256)": {"nonpayable"},
    "balanceOf(address)": {"view"},
    "mint()": {"payable"},
    "owner()": {"view"},
    "totalSupply()": {"view"},
    "transfer(address,uint256)": {"nonpayable"},
    "transferFrom(address,address,uint256)": {"nonpayable"},
    "version()": {"pure", "view"},
}


def test_selectors_are_keccak_of_the_signatures() -> None:
    keccak = pytest.importorskip("Crypto.Hash.keccak", reason="pycryptodome (angr's dependency) computes keccak")
    for signature, selector in SELECTORS.items():
        assert "0x" + keccak.new(digest_bits=256, data=signature.encode()).hexdigest()[:8] == selector


def _check_interface(out: dict[str, Any]) -> None:
    by_selector = {f["selector"]: f for f in out["functions"]}
    assert set(by_selector) == set(SELECTORS.values())
    assert out["total"] == len(SELECTORS) and out["next_offset"] is None
    for signature, selector in SELECTORS.items():
        found = by_selector[selector]
        assert found["arguments"] == signature[signature.index("(") + 1 : -1], signature
        assert found["state_mutability"] in DECLARED[signature], (signature, found)
    slots = {s["slot"]: s for s in out["storage"]["slots"]}
    # Declaration order: balanceOf, allowance, totalSupply, owner.
    assert slots["0x0"]["type"] == "mapping(address => uint256)"
    assert slots["0x1"]["type"] == "mapping(address => mapping(address => uint256))"
    assert slots["0x2"]["type"] == "uint256" and slots["0x3"]["type"] == "address"
    assert SELECTORS["transfer(address,uint256)"] in slots["0x0"]["writes"]
    assert slots["0x3"]["reads"] == [SELECTORS["owner()"]]
    meta = {e["key"]: e for e in out["metadata"]["entries"]}
    assert meta["solc"]["text"] == "0.8.26"
    assert meta["ipfs"]["type"] == "bytes" and meta["ipfs"]["value"].startswith("1220")
    assert out["bytecode"]["size"] == len(RUNTIME_HEX) // 2 and out["bytecode"]["kind"] == "runtime"


def test_hex_file_raw_file_and_inline_hex_agree(rea_session: Session, token_files: dict[str, Path]) -> None:
    from_hex = result_of(rea_session, "inspect_evm_interface", {"path": str(token_files["hex"])})
    _check_interface(from_hex)
    assert from_hex["bytecode"]["encoding"] == "hex"
    from_raw = result_of(rea_session, "inspect_evm_interface", {"path": str(token_files["raw"])})
    assert from_raw["bytecode"]["encoding"] == "binary"
    inline = result_of(rea_session, "inspect_evm_interface", {"bytecode": "0x" + RUNTIME_HEX})
    for other in (from_raw, inline):
        assert other["functions"] == from_hex["functions"] and other["storage"] == from_hex["storage"]


def test_functions_are_paged(rea_session: Session) -> None:
    page = result_of(rea_session, "inspect_evm_interface", {"bytecode": RUNTIME_HEX, "offset": 2, "limit": 3})
    assert [f["selector"] for f in page["functions"]] == sorted(SELECTORS.values())[2:5]
    assert (page["total"], page["next_offset"]) == (9, 5)


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (b"", "unsupported_target"),
        (b"0x123", "unsupported_target"),
        (b"\xfe" * 300_000, "resource_constraint"),
    ],
)
def test_hostile_inputs(rea_session: Session, tmp_path: Path, content: bytes, code: str) -> None:
    path = tmp_path / "x.bin"
    path.write_bytes(content)
    with pytest.raises(ReaError) as info:
        result_of(rea_session, "inspect_evm_interface", {"path": str(path)})
    assert info.value.code == code


def test_garbage_bytes_answer_without_functions(rea_session: Session) -> None:
    out = result_of(rea_session, "inspect_evm_interface", {"bytecode": "5b56" * 500 + "fe" * 100})
    assert out["functions"] == [] and out["metadata"] is None


def test_through_the_sdk_client(token_files: dict[str, Path]) -> None:
    async def main() -> None:
        async with connect() as client:
            result = await client.call_tool("inspect_evm_interface", {"path": str(token_files["hex"])})
            assert not result.is_error, result.content
            assert result.structured_content is not None
            _check_interface(result.structured_content["normalized_result"])

    anyio.run(main)
