"""The runtime bytecode of a small ERC-20-style contract, written by the test (Debian packages no solc).

Compiled with solc 0.8.26 (solc-js 0.8.26+commit.8a97fa7a, optimizer on, 200 runs) from this source:

# // SPDX-License-Identifier: MIT
# pragma solidity ^0.8.26;
#
# contract Token {
#     mapping(address => uint256) public balanceOf;
#     mapping(address => mapping(address => uint256)) public allowance;
#     uint256 public totalSupply;
#     address public owner;
#
#     event Transfer(address indexed from, address indexed to, uint256 value);
#     event Approval(address indexed owner, address indexed spender, uint256 value);
#
#     constructor() { owner = msg.sender; }
#
#     function transfer(address to, uint256 value) external returns (bool) {
#         balanceOf[msg.sender] -= value;
#         balanceOf[to] += value;
#         emit Transfer(msg.sender, to, value);
#         return true;
#     }
#
#     function approve(address spender, uint256 value) external returns (bool) {
#         allowance[msg.sender][spender] = value;
#         emit Approval(msg.sender, spender, value);
#         return true;
#     }
#
#     function transferFrom(address from, address to, uint256 value) external returns (bool) {
#         allowance[from][msg.sender] -= value;
#         balanceOf[from] -= value;
#         balanceOf[to] += value;
#         emit Transfer(from, to, value);
#         return true;
#     }
#
#     function mint() external payable {
#         balanceOf[msg.sender] += msg.value;
#         totalSupply += msg.value;
#     }
#
#     function version() external pure returns (uint256) {
#         return 3;
#     }
# }
"""

from __future__ import annotations

from pathlib import Path

import pytest

# evm.deployedBytecode.object of contract Token.
RUNTIME_HEX = (
    "608060405260043610610084575f3560e01c806354fd4d501161005757806354fd4d501461010857806370a082311461011b"
    "5780638da5cb5b14610146578063a9059cbb1461017d578063dd62ed3e1461019c575f80fd5b8063095ea7b3146100885780"
    "631249c58b146100bc57806318160ddd146100c657806323b872dd146100e9575b5f80fd5b348015610093575f80fd5b5061"
    "00a76100a236600461040e565b6101d2565b60405190151581526020015b60405180910390f35b6100c461023e565b005b34"
    "80156100d1575f80fd5b506100db60025481565b6040519081526020016100b3565b3480156100f4575f80fd5b506100a761"
    "0103366004610436565b61027b565b348015610113575f80fd5b5060036100db565b348015610126575f80fd5b506100db61"
    "0135366004610470565b5f6020819052908152604090205481565b348015610151575f80fd5b506003546101659060016001"
    "60a01b031681565b6040516001600160a01b0390911681526020016100b3565b348015610188575f80fd5b506100a7610197"
    "36600461040e565b610365565b3480156101a7575f80fd5b506100db6101b6366004610490565b600160209081525f928352"
    "604080842090915290825290205481565b335f8181526001602090815260408083206001600160a01b038716808552925280"
    "832085905551919290917f8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b9259061022c908681"
    "5260200190565b60405180910390a35060015b92915050565b335f908152602081905260408120805434929061025c908490"
    "6104d5565b925050819055503460025f82825461027491906104d5565b9091555050565b6001600160a01b0383165f908152"
    "6001602090815260408083203384529091528120805483919083906102af9084906104e8565b90915550506001600160a01b"
    "0384165f90815260208190526040812080548492906102db9084906104e8565b90915550506001600160a01b0383165f9081"
    "5260208190526040812080548492906103079084906104d5565b92505081905550826001600160a01b0316846001600160a0"
    "1b03167fddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef8460405161035391815260200190"
    "565b60405180910390a35060019392505050565b335f908152602081905260408120805483919083906103859084906104e8"
    "565b90915550506001600160a01b0383165f90815260208190526040812080548492906103b19084906104d5565b90915550"
    "506040518281526001600160a01b0384169033907fddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df5"
    "23b3ef9060200161022c565b80356001600160a01b0381168114610409575f80fd5b919050565b5f80604083850312156104"
    "1f575f80fd5b610428836103f3565b946020939093013593505050565b5f805f60608486031215610448575f80fd5b610451"
    "846103f3565b925061045f602085016103f3565b929592945050506040919091013590565b5f60208284031215610480575f"
    "80fd5b610489826103f3565b9392505050565b5f80604083850312156104a1575f80fd5b6104aa836103f3565b91506104b8"
    "602084016103f3565b90509250929050565b634e487b7160e01b5f52601160045260245ffd5b808201808211156102385761"
    "02386104c1565b81810381811115610238576102386104c156fea2646970667358221220bed10294f03f1ac8d4e6611c9120"
    "2a52f5194530f910b32b412ce1400e65c53164736f6c634300081a0033"
)
# The contract's external functions: signature -> selector, the first four bytes of keccak-256 of the signature
# (the well-known ERC-20 ones among them: transfer a9059cbb, approve 095ea7b3, transferFrom 23b872dd, ...).
SELECTORS = {
    "allowance(address,address)": "0xdd62ed3e",
    "approve(address,uint256)": "0x095ea7b3",
    "balanceOf(address)": "0x70a08231",
    "mint()": "0x1249c58b",
    "owner()": "0x8da5cb5b",
    "totalSupply()": "0x18160ddd",
    "transfer(address,uint256)": "0xa9059cbb",
    "transferFrom(address,address,uint256)": "0x23b872dd",
    "version()": "0x54fd4d50",
}


@pytest.fixture(scope="session")
def token_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("evm")
    (out / "Token.bin-runtime").write_text("0x" + RUNTIME_HEX + "\n")
    (out / "Token.raw").write_bytes(bytes.fromhex(RUNTIME_HEX))
    return {"hex": out / "Token.bin-runtime", "raw": out / "Token.raw"}
