"""Constants and tables that name a cryptographic primitive, built from the definitions in the standards.

Each value is computed from the rule its standard states, or copied where the standard lists it outright:

- AES S-box, inverse S-box and the encryption/decryption T-tables: FIPS 197 §5.1.1 (the S-box is the
  multiplicative inverse in GF(2^8) followed by the affine transform), §5.1.3 and §5.3.3 (MixColumns,
  InvMixColumns coefficients); the T-tables are the usual 32-bit merge of SubBytes and MixColumns.
- SHA-1 initial values and round constants: FIPS 180-4 §5.3.1, §4.2.1.
- SHA-224/256 and SHA-384/512 initial values and round constants: FIPS 180-4 §5.3.2-5.3.5 and §4.2.2-4.2.3
  (fractional parts of the square and cube roots of the first primes, computed exactly with integer roots).
- MD5 sine table and initial values: RFC 1321 §3.3-3.4 (``T[i] = floor(2^32 * abs(sin(i)))``).
- BLAKE2b/BLAKE2s initial values (those of SHA-512/SHA-256) and the message schedule SIGMA: RFC 7693 §2.6-2.7.
- ChaCha20 (and Salsa20) constants "expand 32-byte k" / "expand 16-byte k": RFC 7539 §2.3.
- CRC-32 (ISO-HDLC, reflected polynomial 0xEDB88320) and CRC-32C (Castagnoli, 0x82F63B78) lookup tables:
  the byte-at-a-time table of the reflected polynomial (RFC 1952 §8 gives the CRC-32 one).
- Curve25519: the field prime 2^255 - 19 and Ed25519's d = -121665/121666 (RFC 7748 §4.1, RFC 8032 §5.1).
- P-256 (secp256r1): p, b, the base point and the order, FIPS 186-4 §D.1.2.3.

Tests check the tables against Python's ``hashlib``/``zlib`` (the hash and CRC tables drive a reference
implementation whose digests must match) and against the standards' worked examples.
"""

from __future__ import annotations

import functools
import math
from typing import Literal

import msgspec

Kind = Literal["table", "initial-values", "round-constants", "parameter", "constant-string", "polynomial"]


# The values of a signature found as operands in one procedure that name it there, unless it says otherwise.
MIN_IMMEDIATES = 3


class Signature(msgspec.Struct, frozen=True, kw_only=True):
    """A known constant: its primitive, what it is in that primitive, its values, and where it comes from.

    ``width`` is the bytes of one value (1 for a byte table or a string, 4 or 8 for a word table, 32 for a
    256-bit parameter); a word table is searched in data in both byte orders. ``immediates``: the values
    also show up as instruction operands (an unrolled round, an init function storing its state), and
    ``min_immediates`` of them in one procedure name it there.
    """

    name: str
    primitive: str
    kind: Kind
    values: tuple[int, ...]
    width: int
    standard: str
    immediates: bool = False
    min_immediates: int = MIN_IMMEDIATES
    # Bytes of the table matched in data (its head): enough to be unique, short enough to survive a table
    # an implementation cut (a T-table with only its first half, a K array in two parts).
    head_bytes: int = 64


def _xtime(a: int) -> int:
    a <<= 1
    return (a ^ 0x11B) if a & 0x100 else a


def _gmul(a: int, b: int) -> int:
    out = 0
    while b:
        if b & 1:
            out ^= a
        a = _xtime(a)
        b >>= 1
    return out


def aes_sbox() -> tuple[int, ...]:
    """FIPS 197 §5.1.1: b' = affine(b^-1) over GF(2^8) mod x^8+x^4+x^3+x+1, with 0 mapped to 0x63."""
    inverse = [0] * 256
    for a in range(1, 256):
        for b in range(1, 256):
            if _gmul(a, b) == 1:
                inverse[a] = b
                break
    out = []
    for x in inverse:
        s = x
        for shift in range(1, 5):
            s ^= ((x << shift) | (x >> (8 - shift))) & 0xFF
        out.append(s ^ 0x63)
    return tuple(out)


def _t_table(box: tuple[int, ...], coeffs: tuple[int, int, int, int]) -> tuple[int, ...]:
    """Te0/Td0: each byte's column of the (Inv)MixColumns matrix times its (inverse) S-box value, as one
    big-endian word (OpenSSL's ``Te0[x] = S[x].[02, 01, 01, 03]``)."""
    return tuple(
        (_gmul(s, coeffs[0]) << 24) | (_gmul(s, coeffs[1]) << 16) | (_gmul(s, coeffs[2]) << 8) | _gmul(s, coeffs[3])
        for s in box
    )


def _primes(n: int) -> list[int]:
    found: list[int] = []
    candidate = 2
    while len(found) < n:
        if all(candidate % p for p in found if p * p <= candidate):
            found.append(candidate)
        candidate += 1
    return found


def _iroot(value: int, k: int) -> int:
    """The integer k-th root (floor) of ``value``, exactly."""
    x = 1 << ((value.bit_length() + k - 1) // k)
    while True:
        y = ((k - 1) * x + value // x ** (k - 1)) // k
        if y >= x:
            return x
        x = y


def _fraction_bits(prime: int, root: int, bits: int) -> int:
    """The first ``bits`` bits of the fractional part of prime^(1/root) (FIPS 180-4 §4.2.2, §5.3.3)."""
    return _iroot(prime << (root * bits), root) & ((1 << bits) - 1)


def sha256_k() -> tuple[int, ...]:
    return tuple(_fraction_bits(p, 3, 32) for p in _primes(64))


def sha256_iv() -> tuple[int, ...]:
    return tuple(_fraction_bits(p, 2, 32) for p in _primes(8))


def sha224_iv() -> tuple[int, ...]:
    # FIPS 180-4 §5.3.2: the second 32 bits of the fractional parts of the square roots of the 9th-16th primes.
    return tuple(_fraction_bits(p, 2, 64) & 0xFFFFFFFF for p in _primes(16)[8:])


def sha512_k() -> tuple[int, ...]:
    return tuple(_fraction_bits(p, 3, 64) for p in _primes(80))


def sha512_iv() -> tuple[int, ...]:
    return tuple(_fraction_bits(p, 2, 64) for p in _primes(8))


def sha384_iv() -> tuple[int, ...]:
    return tuple(_fraction_bits(p, 2, 64) for p in _primes(16)[8:])


def md5_t() -> tuple[int, ...]:
    """RFC 1321 §3.4: T[i] = floor(4294967296 * abs(sin(i))), i = 1..64 (a double holds these exactly enough)."""
    return tuple(int(abs(math.sin(i)) * 4294967296) & 0xFFFFFFFF for i in range(1, 65))


def crc32_table(reflected_poly: int) -> tuple[int, ...]:
    out = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ reflected_poly if c & 1 else c >> 1
        out.append(c)
    return tuple(out)


SHA1_IV = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0)  # FIPS 180-4 §5.3.1
SHA1_K = (0x5A827999, 0x6ED9EBA1, 0x8F1BBCDC, 0xCA62C1D6)  # FIPS 180-4 §4.2.1
MD5_IV = SHA1_IV[:4]  # RFC 1321 §3.3 (words A, B, C, D, stored little-endian)
# RFC 7693 §2.7: SIGMA, the message word permutation of each round (BLAKE2b repeats rows 0 and 1).
BLAKE2_SIGMA = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
    (14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3),
    (11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4),
    (7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8),
    (9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13),
    (2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9),
    (12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11),
    (13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10),
    (6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5),
    (10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0),
)
CHACHA_SIGMA = b"expand 32-byte k"  # RFC 7539 §2.3 (Salsa20's too)
CHACHA_TAU = b"expand 16-byte k"  # the 128-bit key variant
CURVE25519_P = (1 << 255) - 19  # RFC 7748 §4.1
ED25519_D = (-121665 * pow(121666, -1, CURVE25519_P)) % CURVE25519_P  # RFC 8032 §5.1
# FIPS 186-4 §D.1.2.3 (curve P-256).
P256_P = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF
P256_B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B
P256_GX = 0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296
P256_GY = 0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5
P256_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
CRC32_POLY = 0xEDB88320
CRC32C_POLY = 0x82F63B78


def _words(text: bytes) -> tuple[int, ...]:
    return tuple(int.from_bytes(text[i : i + 4], "little") for i in range(0, len(text), 4))


def _signature(
    name: str, primitive: str, kind: Kind, values: tuple[int, ...], width: int, standard: str, immediates: int = 0
) -> Signature:
    """A row of the table: ``immediates`` is how many of the values in one procedure name it there (0: the values
    are searched in data only)."""
    return Signature(
        name=name,
        primitive=primitive,
        kind=kind,
        values=values,
        width=width,
        standard=standard,
        immediates=immediates > 0,
        min_immediates=immediates or MIN_IMMEDIATES,
    )


@functools.cache
def signatures() -> tuple[Signature, ...]:
    """Every known constant, the most specific first (a finding names the first signature it matches)."""
    sbox = aes_sbox()
    inv = tuple(sbox.index(i) for i in range(256))
    fips197, fips180, rfc7693 = "FIPS 197", "FIPS 180-4", "RFC 7693"
    crc32, crc32c, fips186 = "ISO 3309; RFC 1952", "RFC 3720", "FIPS 186-4"
    chacha, rfc7539, sha2_iv = "ChaCha/Salsa20 constant", "RFC 7539", f"{fips180}; {rfc7693}"
    sigma = tuple(v for row in BLAKE2_SIGMA for v in row)
    return (
        # name, primitive, kind, values, width (bytes of one value), standard, immediates (0: data only)
        _signature("AES S-box", "AES", "table", sbox, 1, fips197),
        _signature("AES inverse S-box", "AES", "table", inv, 1, fips197),
        _signature("AES encryption T-table (Te0)", "AES", "table", _t_table(sbox, (2, 1, 1, 3)), 4, fips197),
        _signature("AES decryption T-table (Td0)", "AES", "table", _t_table(inv, (14, 9, 13, 11)), 4, fips197),
        _signature("SHA-256 round constants", "SHA-256", "round-constants", sha256_k(), 4, fips180, 4),
        _signature("SHA-256 / BLAKE2s initial values", "SHA-256", "initial-values", sha256_iv(), 4, sha2_iv, 4),
        _signature("SHA-224 initial values", "SHA-224", "initial-values", sha224_iv(), 4, fips180, 4),
        _signature("SHA-512 round constants", "SHA-512", "round-constants", sha512_k(), 8, fips180, 4),
        _signature("SHA-512 / BLAKE2b initial values", "SHA-512", "initial-values", sha512_iv(), 8, sha2_iv, 4),
        _signature("SHA-384 initial values", "SHA-384", "initial-values", sha384_iv(), 8, fips180, 4),
        _signature("SHA-1 initial values", "SHA-1", "initial-values", SHA1_IV, 4, fips180, 5),
        _signature("SHA-1 round constants", "SHA-1", "round-constants", SHA1_K, 4, fips180, 3),
        _signature("MD5 sine table", "MD5", "round-constants", md5_t(), 4, "RFC 1321", 4),
        _signature("MD5 / SHA-1 initial values", "MD5", "initial-values", MD5_IV, 4, "RFC 1321", 4),
        _signature("BLAKE2 message schedule (SIGMA)", "BLAKE2", "table", sigma, 1, rfc7693),
        _signature(f'{chacha} "expand 32-byte k"', "ChaCha20", "constant-string", _words(CHACHA_SIGMA), 4, rfc7539, 3),
        _signature(f'{chacha} "expand 16-byte k"', "ChaCha20", "constant-string", _words(CHACHA_TAU), 4, rfc7539, 3),
        _signature("CRC-32 table", "CRC-32", "table", crc32_table(CRC32_POLY), 4, crc32),
        _signature("CRC-32C table", "CRC-32C", "table", crc32_table(CRC32C_POLY), 4, crc32c),
        _signature("CRC-32 polynomial", "CRC-32", "polynomial", (CRC32_POLY,), 4, crc32, 1),
        _signature("CRC-32C polynomial", "CRC-32C", "polynomial", (CRC32C_POLY,), 4, crc32c, 1),
        _signature("Curve25519 field prime", "Curve25519", "parameter", (CURVE25519_P,), 32, "RFC 7748"),
        _signature("Ed25519 curve constant d", "Ed25519", "parameter", (ED25519_D,), 32, "RFC 8032"),
        _signature("P-256 prime", "P-256", "parameter", (P256_P,), 32, fips186),
        _signature("P-256 coefficient b", "P-256", "parameter", (P256_B,), 32, fips186),
        _signature("P-256 base point x", "P-256", "parameter", (P256_GX,), 32, fips186),
        _signature("P-256 group order", "P-256", "parameter", (P256_N,), 32, fips186),
    )


def encodings(sig: Signature) -> list[tuple[str, bytes]]:
    """The byte strings a signature is found by in data: its head in each byte order (one for byte tables)."""
    if sig.width == 1:
        return [("bytes", bytes(sig.values)[: sig.head_bytes])]
    out = []
    for order in ("little", "big"):
        raw = b"".join(v.to_bytes(sig.width, order) for v in sig.values)  # type: ignore[arg-type]
        out.append((f"{order}-endian", raw[: max(sig.head_bytes, sig.width)]))
    return out
