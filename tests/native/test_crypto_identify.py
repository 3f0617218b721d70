"""identify_crypto on programs compiled in the session from reference SHA-256, ChaCha20 and AES-128 code
(tests/fixtures/native/crypto.c): each primitive is named with the procedures that hold or read its constants,
on gcc and clang builds, in data tables and in instruction operands (displacements included)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import msgspec
import pytest

from rea.registry import Registry
from rea.session import Session
from rea.testing import call_tool
from rea.testing import result_of
from rea_plugins.binary.search.crypto import CryptoIdentification
from rea_plugins.binary.search.crypto import numbers
from tests.fixtures.native import issue48_fixtures as fx
from tests.mcp.harness import connect


def _open(registry: Registry, fixture_id: str, provider: str = "native") -> Session:
    session = Session(registry)
    result_of(session, "open_binary", {"path": fx.build(fixture_id), "provider_id": provider})
    return session


@pytest.fixture(params=["crypto-gcc", "crypto-clang"])
def crypto(request: pytest.FixtureRequest, rea_registry: Registry) -> Iterator[Session]:
    session = _open(rea_registry, request.param)
    try:
        yield session
    finally:
        session.close()


def _named(body: dict[str, Any]) -> dict[str, set[str]]:
    return {p["primitive"]: {q["name"] for q in p["procedures"]} for p in body["primitives"]}


def test_each_primitive_is_named_with_its_procedures(crypto: Session) -> None:
    body = result_of(crypto, "identify_crypto", {})
    named = _named(body)
    for primitive, procs in fx.CRYPTO_PROCEDURES.items():
        assert named.get(primitive) == procs, (primitive, named)
    # Only what the program holds: no hash it does not implement.
    assert set(named) == set(fx.CRYPTO_PROCEDURES)
    by_constant = {f["constant"]: f for f in body["findings"] if f["where"] == "data"}
    sbox = by_constant["AES S-box"]
    assert (sbox["matched"], sbox["total"], sbox["section"]) == (256, 256, ".rodata")
    k = by_constant["SHA-256 round constants"]
    assert (k["matched"], k["encoding"]) == (64, "little-endian")
    assert {u["procedure"]["name"] for u in k["users"]} == {"sha256_block"}
    # Each site is an instruction of the procedure it is listed under.
    for f in body["findings"]:
        for user in f["users"]:
            for site in user["sites"]:
                owner = result_of(crypto, "resolve_containing_procedure", {"address": site})["procedure"]
                assert owner["address"] == user["procedure"]["address"]


def test_constants_folded_into_displacements_are_found(rea_registry: Registry) -> None:
    session = _open(rea_registry, "crypto-unrolled")
    try:
        body = result_of(session, "identify_crypto", {"where": "code"})
        found = [f for f in body["findings"] if f["constant"] == "SHA-256 round constants"]
        assert [u["procedure"]["name"] for f in found for u in f["users"]] == ["sha256_rounds16"]
        assert found[0]["matched"] == 8  # the eight constants written into the unrolled rounds
        sites = set(found[0]["users"][0]["sites"])
        rows = result_of(session, "read_function_instructions", {"procedure": "sha256_rounds16", "limit": 1000})
        texts = [r["text"] for r in rows["instructions"] if r["address"] in sites]
        assert any(t.startswith("lea") and "[" in t for t in texts), texts
        # The state words of ChaCha20 are stored as immediates too.
        chacha = [f for f in body["findings"] if f["primitive"] == "ChaCha20"]
        assert chacha and chacha[0]["users"][0]["procedure"]["name"] == "chacha20_block"
    finally:
        session.close()


def test_arm64_builds_name_the_same_procedures(rea_registry: Registry) -> None:
    session = _open(rea_registry, "crypto-arm64")
    try:
        body = result_of(session, "identify_crypto", {})
        named = _named(body)
        # The unrolled rounds hold SHA-256's constants as mov/movk pairs; the tables sit side by side in .rodata,
        # reached through one base register, and each is attributed only to the procedures that read it.
        assert named == {**fx.CRYPTO_PROCEDURES, "SHA-256": {*fx.CRYPTO_PROCEDURES["SHA-256"], "sha256_rounds16"}}
        data = {
            f["constant"]: {u["procedure"]["name"] for u in f["users"]}
            for f in body["findings"]
            if f["where"] == "data"
        }
        assert data["AES S-box"] == fx.CRYPTO_PROCEDURES["AES"]
        assert data["SHA-256 round constants"] == {"sha256_block"}
        code = [f for f in body["findings"] if f["where"] == "code" and f["primitive"] == "SHA-256"]
        assert [(f["matched"], f["users"][0]["procedure"]["name"]) for f in code] == [(8, "sha256_rounds16")]
    finally:
        session.close()


def test_operand_numbers_include_negative_displacements() -> None:
    # 0xb5c0fbcf folded into an address computation reads as a negative displacement.
    assert 0xB5C0FBCF in numbers("lea edx, [rbx + rdx - 0x4a3f0431]")
    assert 0x428A2F98 in numbers("lea edx, [rbx + rdx + 0x428a2f98]")
    assert numbers("call 0x428a2f98") == set()
    assert 0x6A09E667F3BCC908 in numbers("movabs rax, 0x6a09e667f3bcc908")


def test_a_program_without_crypto_has_none(rea_registry: Registry) -> None:
    session = _open(rea_registry, "calls-gcc")
    try:
        body = result_of(session, "identify_crypto", {})
        assert (body["primitives"], body["findings"], body["total"]) == ([], [], 0)
        assert any("flare-capa" in note for note in call_tool(session, "identify_crypto", {}).evidence.limitations)
    finally:
        session.close()


def test_findings_are_paged(rea_registry: Registry) -> None:
    session = _open(rea_registry, "crypto-gcc")
    try:
        whole = result_of(session, "identify_crypto", {})
        first = result_of(session, "identify_crypto", {"limit": 2})
        rest = result_of(session, "identify_crypto", {"offset": 2, "limit": 1000})
        assert first["total"] == whole["total"] > 2 and first["next_offset"] == 2
        assert first["findings"] + rest["findings"] == whole["findings"]
        assert first["primitives"] == whole["primitives"]  # the summary is whole on every page
    finally:
        session.close()


def test_radare2_names_the_same_primitives(rea_registry: Registry) -> None:
    from rea_plugins.radare2.options import library_dir

    if library_dir() is None:
        pytest.skip("radare2 is not installed (pip install 'rea-reverse[radare2]')")
    session = _open(rea_registry, "crypto-gcc", "radare2")
    try:
        named = _named(result_of(session, "identify_crypto", {}))
        assert named == fx.CRYPTO_PROCEDURES
    finally:
        session.close()


def test_the_mcp_result_is_the_advertised_shape() -> None:
    path = fx.build("crypto-gcc")

    async def main() -> dict[str, Any]:
        async with connect() as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert "identify_crypto" in tools
            await client.call_tool("open_binary", {"path": path, "provider_id": "native"})
            out = await client.call_tool("identify_crypto", {"limit": 3})
            assert not out.is_error, out.content
            structured: dict[str, Any] = out.structured_content or json.loads(out.content[0].text)  # type: ignore[union-attr]
            return structured

    structured = anyio.run(main)
    result = structured.get("normalized_result", structured)
    body = msgspec.convert(result, CryptoIdentification)
    assert {p.primitive for p in body.primitives} == set(fx.CRYPTO_PROCEDURES)
    assert len(body.findings) == 3 and body.next_offset == 3
