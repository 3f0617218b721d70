"""The code-signature reader (rea_plugins/apple/codesign.py): blobs built from the documented layout, and a fuzz test
that any bytes are a signature or SignatureError, never another exception."""

from __future__ import annotations

import hashlib
import plistlib
import struct

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from rea_plugins.apple import codesign

IMAGE = bytes(range(256)) * 40  # 10240 bytes: three 4 KiB pages
ENTITLEMENTS = plistlib.dumps(
    {"com.apple.security.app-sandbox": True, "com.apple.developer.team-identifier": "ABCDE12345"}
)


def _signature(image: bytes = IMAGE, flags: int = 0x10000, entitlements: bytes = ENTITLEMENTS) -> bytes:
    ent = codesign.blob(codesign.ENTITLEMENTS, entitlements)
    req = codesign.blob(codesign.REQUIREMENTS, struct.pack(">I", 0))
    cd = codesign.build_code_directory(
        image, "com.example.demo", flags=flags, team_id="ABCDE12345", specials={2: req, 5: ent}
    )
    return codesign.build_superblob([(0, cd), (2, req), (5, ent), (0x10000, codesign.blob(codesign.CMS, b""))])


def test_a_built_signature_reads_back_and_verifies() -> None:
    sig = codesign.parse(_signature())
    (cd,) = sig.code_directories
    assert cd.identifier == "com.example.demo" and cd.team_id == "ABCDE12345"
    assert cd.page_size == 4096 and cd.code_slots == 3 and cd.code_limit == len(IMAGE)
    assert "runtime" in codesign.flag_names(cd.flags)
    assert codesign.verify_pages(cd, IMAGE) == ("valid", [])
    assert codesign.verify_special(cd, sig.blobs) == {"requirements": "valid", "entitlements": "valid"}
    ent = next(b for b in sig.blobs if b.magic == codesign.ENTITLEMENTS)
    assert plistlib.loads(ent.payload)["com.apple.security.app-sandbox"] is True
    assert cd.cd_hash == hashlib.sha256(cd.raw).hexdigest()[:40]


def test_a_tampered_page_and_swapped_entitlements_are_mismatches() -> None:
    sig = codesign.parse(_signature())
    (cd,) = sig.code_directories
    tampered = bytearray(IMAGE)
    tampered[5000] ^= 1
    assert codesign.verify_pages(cd, bytes(tampered)) == ("mismatch", [1])
    other = codesign.parse(_signature(entitlements=plistlib.dumps({"get-task-allow": True})))
    swapped = [b if b.slot != 5 else next(x for x in other.blobs if x.slot == 5) for b in sig.blobs]
    assert codesign.verify_special(cd, swapped)["entitlements"] == "mismatch"
    assert codesign.verify_pages(cd, IMAGE[:5000])[0] == "mismatch"  # the file is shorter than what was signed


def test_bad_lengths_are_signature_errors() -> None:
    good = bytearray(_signature())
    for at, value in ((4, len(good) + 1), (8, 1000), (16, 0xFFFFFFF0), (4, 4)):
        bad = bytearray(good)
        struct.pack_into(">I", bad, at, value)
        try:
            codesign.parse(bytes(bad))
        except codesign.SignatureError:
            continue
        raise AssertionError(f"field at {at} = {value:#x} was accepted")
    # A blob whose own length runs past the SuperBlob.
    first = struct.unpack_from(">I", good, 16)[0]
    bad = bytearray(good)
    struct.pack_into(">I", bad, first + 4, 0x7FFFFFFF)
    try:
        codesign.parse(bytes(bad))
    except codesign.SignatureError as exc:
        assert "past the SuperBlob" in str(exc)
    else:
        raise AssertionError("an overlong blob was accepted")


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=600), st.integers(min_value=0, max_value=400), st.binary(min_size=1, max_size=8))
def test_fuzz_any_bytes_parse_or_raise_signature_error(noise: bytes, at: int, patch: bytes) -> None:
    for data in (noise, _patched(_signature(image=IMAGE[:3000]), at, patch)):
        try:
            sig = codesign.parse(data)
        except codesign.SignatureError:
            continue
        for cd in sig.code_directories:
            codesign.verify_pages(cd, IMAGE)
            codesign.verify_special(cd, sig.blobs)


def _patched(data: bytes, at: int, patch: bytes) -> bytes:
    at %= len(data)
    return data[:at] + patch + data[at + len(patch) :]


def test_der_entitlements_decode_and_any_bytes_are_unreadable_not_an_exception() -> None:
    from rea_plugins.apple.signature import der_entitlements
    from tests.apple import applefixtures as fx

    assert der_entitlements(fx.der_entitlements(fx.ENTITLEMENTS)) == fx.ENTITLEMENTS
    assert der_entitlements(b"\x70\x03\x02\x01") == {"$unreadable": 4}


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(min_value=0, max_value=200), st.binary(min_size=1, max_size=4))
def test_fuzz_der_entitlements(noise: bytes, at: int, patch: bytes) -> None:
    from rea_plugins.apple.signature import der_entitlements
    from tests.apple import applefixtures as fx

    good = fx.der_entitlements(fx.ENTITLEMENTS)
    for data in (noise, _patched(good, at, patch)):
        out = der_entitlements(data)
        assert isinstance(out, dict)
