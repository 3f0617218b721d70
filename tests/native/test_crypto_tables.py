"""The constants table of identify_crypto, checked against Python's hashlib and zlib (each hash and CRC table drives a
small reference implementation whose results must match) and the standards' own check values."""

from __future__ import annotations

import hashlib
import struct
import zlib

from rea_plugins.binary.search import cryptotables as ct

MESSAGES = (b"", b"abc", b"The quick brown fox jumps over the lazy dog" * 5)


def _pad(message: bytes, block: int, length_bytes: int, order: str) -> bytes:
    bits = (len(message) * 8).to_bytes(length_bytes, order)  # type: ignore[arg-type]
    padded = message + b"\x80"
    padded += b"\0" * ((block - length_bytes - len(padded)) % block)
    return padded + bits


def _rotr(x: int, n: int, bits: int) -> int:
    mask = (1 << bits) - 1
    return ((x >> n) | (x << (bits - n))) & mask


def _sha2(message: bytes, iv: tuple[int, ...], k: tuple[int, ...], wide: bool, out_words: int) -> bytes:
    bits, block = (64, 128) if wide else (32, 64)
    mask = (1 << bits) - 1
    s0r, s1r, S0r, S1r = (
        ((1, 8, 7), (19, 61, 6), (28, 34, 39), (14, 18, 41))
        if wide
        else (
            (7, 18, 3),
            (17, 19, 10),
            (2, 13, 22),
            (6, 11, 25),
        )
    )
    h = list(iv)
    data = _pad(message, block, 16 if wide else 8, "big")
    fmt = ">16Q" if wide else ">16I"
    for at in range(0, len(data), block):
        w = list(struct.unpack(fmt, data[at : at + block]))
        for i in range(16, len(k)):
            a, b = w[i - 15], w[i - 2]
            s0 = _rotr(a, s0r[0], bits) ^ _rotr(a, s0r[1], bits) ^ (a >> s0r[2])
            s1 = _rotr(b, s1r[0], bits) ^ _rotr(b, s1r[1], bits) ^ (b >> s1r[2])
            w.append((w[i - 16] + s0 + w[i - 7] + s1) & mask)
        a, b, c, d, e, f, g, hh = h
        for i in range(len(k)):
            t1 = hh + (_rotr(e, S1r[0], bits) ^ _rotr(e, S1r[1], bits) ^ _rotr(e, S1r[2], bits))
            t1 = (t1 + ((e & f) ^ (~e & g)) + k[i] + w[i]) & mask
            t2 = (_rotr(a, S0r[0], bits) ^ _rotr(a, S0r[1], bits) ^ _rotr(a, S0r[2], bits)) + (
                (a & b) ^ (a & c) ^ (b & c)
            )
            a, b, c, d, e, f, g, hh = (t1 + t2) & mask, a, b, c, (d + t1) & mask, e, f, g
        h = [(x + y) & mask for x, y in zip(h, (a, b, c, d, e, f, g, hh), strict=True)]
    return b"".join(x.to_bytes(bits // 8, "big") for x in h[:out_words])


def test_sha2_tables_reproduce_hashlib() -> None:
    for m in MESSAGES:
        assert _sha2(m, ct.sha256_iv(), ct.sha256_k(), False, 8) == hashlib.sha256(m).digest()
        assert _sha2(m, ct.sha224_iv(), ct.sha256_k(), False, 7) == hashlib.sha224(m).digest()
        assert _sha2(m, ct.sha512_iv(), ct.sha512_k(), True, 8) == hashlib.sha512(m).digest()
        assert _sha2(m, ct.sha384_iv(), ct.sha512_k(), True, 6) == hashlib.sha384(m).digest()


def _sha1(message: bytes) -> bytes:
    h = list(ct.SHA1_IV)
    data = _pad(message, 64, 8, "big")
    for at in range(0, len(data), 64):
        w = list(struct.unpack(">16I", data[at : at + 64]))
        for i in range(16, 80):
            w.append(_rotr(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 31, 32))
        a, b, c, d, e = h
        for i in range(80):
            f = (b & c) | (~b & d) if i < 20 else b ^ c ^ d if i < 40 or i >= 60 else (b & c) | (b & d) | (c & d)
            t = (_rotr(a, 27, 32) + f + e + ct.SHA1_K[i // 20] + w[i]) & 0xFFFFFFFF
            a, b, c, d, e = t, a, _rotr(b, 2, 32), c, d
        h = [(x + y) & 0xFFFFFFFF for x, y in zip(h, (a, b, c, d, e), strict=True)]
    return b"".join(x.to_bytes(4, "big") for x in h)


def _md5(message: bytes) -> bytes:
    t = ct.md5_t()
    shifts = ((7, 12, 17, 22), (5, 9, 14, 20), (4, 11, 16, 23), (6, 10, 15, 21))
    h = list(ct.MD5_IV)
    data = _pad(message, 64, 8, "little")
    for at in range(0, len(data), 64):
        x = struct.unpack("<16I", data[at : at + 64])
        a, b, c, d = h
        for i in range(64):
            r = i // 16
            if r == 0:
                f, g = (b & c) | (~b & d), i
            elif r == 1:
                f, g = (d & b) | (~d & c), (5 * i + 1) % 16
            elif r == 2:
                f, g = b ^ c ^ d, (3 * i + 5) % 16
            else:
                f, g = c ^ (b | (~d & 0xFFFFFFFF)), (7 * i) % 16
            rotated = _rotr((a + f + t[i] + x[g]) & 0xFFFFFFFF, 32 - shifts[r][i % 4], 32)
            a, b, c, d = d, (b + rotated) & 0xFFFFFFFF, b, c
        h = [(u + v) & 0xFFFFFFFF for u, v in zip(h, (a, b, c, d), strict=True)]
    return b"".join(v.to_bytes(4, "little") for v in h)


def test_sha1_and_md5_tables_reproduce_hashlib() -> None:
    for m in MESSAGES:
        assert _sha1(m) == hashlib.sha1(m).digest()
        assert _md5(m) == hashlib.md5(m).digest()


def _blake2b(message: bytes, out_len: int = 64) -> bytes:
    """RFC 7693 §3 with the table's IV and SIGMA (unkeyed)."""
    mask = (1 << 64) - 1
    iv = ct.sha512_iv()
    h = list(iv)
    h[0] ^= 0x01010000 ^ out_len
    blocks = [message[i : i + 128] for i in range(0, max(len(message), 1), 128)] or [b""]
    counter = 0
    for n, chunk in enumerate(blocks):
        counter += len(chunk)
        m = struct.unpack("<16Q", chunk.ljust(128, b"\0"))
        v = [*h, *iv]
        v[12] ^= counter & mask
        v[13] ^= counter >> 64
        if n == len(blocks) - 1:
            v[14] ^= mask
        for r in range(12):
            s = ct.BLAKE2_SIGMA[r % 10]
            for i, (a, b, c, d) in enumerate(
                (
                    (0, 4, 8, 12),
                    (1, 5, 9, 13),
                    (2, 6, 10, 14),
                    (3, 7, 11, 15),
                    (0, 5, 10, 15),
                    (1, 6, 11, 12),
                    (2, 7, 8, 13),
                    (3, 4, 9, 14),
                )
            ):
                x, y = m[s[2 * i]], m[s[2 * i + 1]]
                v[a] = (v[a] + v[b] + x) & mask
                v[d] = _rotr(v[d] ^ v[a], 32, 64)
                v[c] = (v[c] + v[d]) & mask
                v[b] = _rotr(v[b] ^ v[c], 24, 64)
                v[a] = (v[a] + v[b] + y) & mask
                v[d] = _rotr(v[d] ^ v[a], 16, 64)
                v[c] = (v[c] + v[d]) & mask
                v[b] = _rotr(v[b] ^ v[c], 63, 64)
        h = [h[i] ^ v[i] ^ v[i + 8] for i in range(8)]
    return b"".join(x.to_bytes(8, "little") for x in h)[:out_len]


def test_blake2_iv_and_sigma_reproduce_hashlib() -> None:
    for m in MESSAGES:
        assert _blake2b(m) == hashlib.blake2b(m).digest()
    assert sorted(ct.BLAKE2_SIGMA[3]) == list(range(16))


def _crc(table: tuple[int, ...], data: bytes) -> int:
    c = 0xFFFFFFFF
    for byte in data:
        c = table[(c ^ byte) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def test_crc_tables_reproduce_zlib_and_the_check_values() -> None:
    for m in (*MESSAGES, b"123456789"):
        assert _crc(ct.crc32_table(ct.CRC32_POLY), m) == zlib.crc32(m)
    # The catalogued check value of CRC-32C over "123456789" (RFC 3720 B.4 uses the same polynomial).
    assert _crc(ct.crc32_table(ct.CRC32C_POLY), b"123456789") == 0xE3069283


def _chacha20_block(key: bytes, counter: int, nonce: bytes) -> bytes:
    mask = 0xFFFFFFFF
    state = [*ct._words(ct.CHACHA_SIGMA), *struct.unpack("<8I", key), counter, *struct.unpack("<3I", nonce)]
    x = list(state)

    def qr(a: int, b: int, c: int, d: int) -> None:
        for s1, s2 in ((16, 12), (8, 7)):
            x[a] = (x[a] + x[b]) & mask
            x[d] = _rotr(x[d] ^ x[a], 32 - s1, 32)
            x[c] = (x[c] + x[d]) & mask
            x[b] = _rotr(x[b] ^ x[c], 32 - s2, 32)

    for _ in range(10):
        for q in ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15)):
            qr(*q)
        for q in ((0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14)):
            qr(*q)
    return struct.pack("<16I", *((a + b) & mask for a, b in zip(x, state, strict=True)))


def test_chacha20_constant_gives_the_rfc_7539_block() -> None:
    # RFC 7539 §2.3.2: key 00..1f, nonce 00000009 0000004a 00000000, block counter 1.
    out = _chacha20_block(bytes(range(32)), 1, bytes.fromhex("000000090000004a00000000"))
    assert out[:16].hex() == "10f1e7e4d13b5915500fdd1fa32071c4"


def test_aes_tables_match_fips_197() -> None:
    sbox = ct.aes_sbox()
    # FIPS 197 §5.1.1's worked example and Figure 7's first row.
    assert sbox[0x53] == 0xED
    assert sbox[:8] == (0x63, 0x7C, 0x77, 0x7B, 0xF2, 0x6B, 0x6F, 0xC5)
    assert sorted(sbox) == list(range(256))
    by_name = {s.name: s for s in ct.signatures()}
    inverse = by_name["AES inverse S-box"].values
    assert all(inverse[sbox[i]] == i for i in range(256))
    assert by_name["AES encryption T-table (Te0)"].values[:2] == (0xC66363A5, 0xF87C7C84)
    assert by_name["AES decryption T-table (Td0)"].values[:2] == (0x51F4A750, 0x7E416553)


def test_curve_parameters_are_the_standards() -> None:
    p, b, gx, gy = ct.P256_P, ct.P256_B, ct.P256_GX, ct.P256_GY
    assert p == 2**256 - 2**224 + 2**192 + 2**96 - 1
    assert (gy * gy - (gx**3 - 3 * gx + b)) % p == 0  # the base point is on the curve
    assert ct.CURVE25519_P == 2**255 - 19
    # RFC 8032 §5.1 gives d in decimal.
    assert ct.ED25519_D == 37095705934669439343138083508754565189542113879843219016388785533085940283555


def test_every_signature_is_searchable_and_cited() -> None:
    sigs = ct.signatures()
    assert len({s.name for s in sigs}) == len(sigs)
    for s in sigs:
        assert s.standard and s.values
        assert all(0 <= v < 1 << (8 * s.width) for v in s.values), s.name
        for _, raw in ct.encodings(s):
            assert len(raw) >= min(16, s.width * len(s.values)), s.name
